package org.foldcp.examples.plots;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.foldcp.examples.TriMulJob;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** TriMulJob --plots: one Spark job per layer, the same checksum as the fused stack, and its two PNGs. */
class JobPlotsTest {
  private static final Pattern CHECKSUM = Pattern.compile("checksum +(sum \\S+ +sum\\|\\.\\| \\S+)");

  @TempDir
  Path tmp;

  @Test
  void plotsAndPerLayerRunsKeepTheChecksum() throws Exception {
    String[] common = {"--n", "24", "--dim", "16", "--layers", "3", "--complexes", "2", "--master", "local[2]"};
    String fused = run(common);
    Path dir = tmp.resolve("plots");
    String plotted = run(concat(common, "--plots", dir.toString()));
    assertEquals(checksum(fused), checksum(plotted));
    assertTrue(plotted.matches("(?s).*layer ms +1 outgoing \\d+ \\| 2 incoming \\d+ \\| 3 outgoing \\d+ \\(one Spark job each\\).*"),
        plotted);
    assertTrue(plotted.contains("plots       " + dir.resolve("pair-heatmap.png")), plotted);
    BufferedImage heat = ImageIO.read(dir.resolve("pair-heatmap.png").toFile());
    assertEquals(4 * 330, heat.getWidth());
    BufferedImage times = ImageIO.read(dir.resolve("layer-times.png").toFile());
    assertTrue(times.getWidth() >= 640, "layer-times.png " + times.getWidth());

    // per layer on a CP route too: a layer's tiled output feeds the next layer
    String barrier = run(concat(common, "--per-layer", "--cp", "2", "--route", "barrier"));
    assertTrue(barrier.contains("route       barrier cp=2"), barrier);
    assertEquals(checksum(fused), checksum(barrier));
  }

  static String run(String... args) {
    PrintStream stdout = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    try {
      System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
      TriMulJob.main(args);
    } finally {
      System.setOut(stdout);
    }
    String out = captured.toString(StandardCharsets.UTF_8);
    stdout.print(out);
    return out;
  }

  static String checksum(String out) {
    Matcher m = CHECKSUM.matcher(out);
    assertTrue(m.find(), out);
    return m.group(1);
  }

  static String[] concat(String[] a, String... b) {
    String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }
}
