package org.foldcp.examples.plots;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.imageio.ImageIO;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Ratio charts from a results CSV in the format of docs/benchmarks.md. */
class BenchChartsTest {
  @TempDir
  Path tmp;

  static final String CSV = String.join("\n",
      "# command: bench ...",
      "date,commit,gpu,cp,grid,direction,B,N,D,arm,median_ms,peak_gib,status",
      "2026-11-29,abc,H200,1,1x1,outgoing,1,1024,128,ours,2.0,1.5,ok",
      "2026-11-29,abc,H200,1,1x1,outgoing,1,1024,128,torch_eager,8.0,3.5,ok",
      "2026-11-29,abc,H200,1,1x1,incoming,1,1024,128,ours,3.0,1.5,ok",
      "2026-11-29,abc,H200,1,1x1,incoming,1,1024,128,torch_eager,6.0,3.5,ok",
      "2026-11-29,abc,H200,1,1x1,outgoing,1,4096,128,ours,70,24,ok",
      "2026-11-29,abc,H200,1,1x1,outgoing,1,4096,128,torch_compile,,0,oom",
      "2026-11-29,abc,H200,2,2x1,outgoing,1,4096,128,ours,40,12,ok",
      "2026-11-29,abc,H200,2,2x1,outgoing,1,4096,128,torch_cp_nccl,80,20,ok",
      "");

  @Test
  void ratiosPerShapeDirectionAndPeer() throws Exception {
    Path csv = Files.writeString(tmp.resolve("r.csv"), CSV);
    List<BenchCharts.Ratio> r = BenchCharts.ratios(BenchCharts.read(csv), "ours");
    assertEquals(3, r.size(), r.toString());
    assertEquals(0.25, r.get(0).ratio(), 1e-12);
    assertEquals("outgoing", r.get(0).direction());
    assertEquals(0.5, r.get(1).ratio(), 1e-12);
    assertEquals("(1, 4096, 128) cp=2 2x1", r.get(2).shape());
    assertEquals("torch_cp_nccl", r.get(2).peer());

    List<Path> pngs = BenchCharts.run(csv.toString(), "--out", tmp.resolve("charts").toString());
    assertEquals(List.of(tmp.resolve("charts/ratio-vs-torch_eager.png"), tmp.resolve("charts/ratio-vs-torch_cp_nccl.png")), pngs);
    BufferedImage img = ImageIO.read(pngs.get(0).toFile());
    assertTrue(img.getWidth() >= 640 && img.getHeight() >= 400);
  }

  @Test
  void theCommittedResultsMakeCharts() {
    Path results = Path.of("").toAbsolutePath().getParent().resolve("bench/results/2026-11-29-trimul-1gpu.csv");
    List<Path> pngs = BenchCharts.run(results.toString(), "--out", tmp.toString());
    assertEquals(2, pngs.size(), "torch_eager and torch_compile");
  }

  @Test
  void badFilesSayWhy() throws Exception {
    Path stages = Files.writeString(tmp.resolve("s.csv"), "direction,B,N,D,median_ms\noutgoing,1,2,3,4\n");
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> BenchCharts.read(stages));
    assertTrue(e.getMessage().contains("lacks column 'date'"), e.getMessage());
    Path bad = Files.writeString(tmp.resolve("b.csv"), CSV.replace("1,1024,128,ours,2.0", "1,x,128,ours,2.0"));
    e = assertThrows(InvalidInputException.class, () -> BenchCharts.read(bad));
    assertTrue(e.getMessage().contains("line 3"), e.getMessage());
    Path onlyOurs = Files.writeString(tmp.resolve("o.csv"), String.join("\n", CSV.lines().limit(3).toList()));
    assertTrue(BenchCharts.run(onlyOurs.toString(), "--out", tmp.toString()).isEmpty());
  }
}
