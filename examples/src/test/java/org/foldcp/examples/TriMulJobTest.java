package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The example job on every route: same checksum, the route it was asked for, a correct output file. */
class TriMulJobTest {
  private static final Pattern CHECKSUM = Pattern.compile("checksum +(sum \\S+ +sum\\|\\.\\| \\S+)");

  @TempDir
  Path tmp;

  private static String run(String... args) {
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

  private static String checksum(String out) {
    Matcher m = CHECKSUM.matcher(out);
    assertTrue(m.find(), out);
    return m.group(1);
  }

  @Test
  void everyRoutePrintsTheSameChecksumAndTheOutputIsRight() throws Exception {
    String[] common = {"--n", "24", "--dim", "16", "--layers", "2", "--complexes", "2", "--master", "local[4]"};
    Path outNpy = tmp.resolve("out.npy");
    String single = run(concat(common, "--output", outNpy.toString()));
    assertTrue(single.contains("route       single cp=1"), single);
    String barrier = run(concat(common, "--cp", "4", "--grid", "2x2", "--route", "barrier", "--transport", "tcp"));
    assertTrue(barrier.contains("route       barrier cp=4 grid=2x2 backend=cpu transport=tcp"), barrier);
    String shuffle = run(concat(common, "--cp", "2", "--route", "shuffle"));
    assertTrue(shuffle.contains("route       shuffle cp=2 grid=2x1"), shuffle);
    assertEquals(checksum(single), checksum(barrier));
    assertEquals(checksum(single), checksum(shuffle));

    // the written output is synthetic complex 0 through the generated stack
    JobOptions o = JobOptions.parse(common);
    PairTensor x = PairTensor.random(1, 24, 16, o.seed, o.maskedFraction);
    LayerStack stack = TriMulJob.loadStack(o, 16);
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      PairTensor expected = cpu.forward(x, stack);
      PairTensor written = Npy.readPair(outNpy);
      assertEquals(expected.shapeString(), written.shapeString());
      for (int i = 0; i < 24; i++) {
        assertTrue(java.util.Arrays.equals(expected.row(0, i), written.row(0, i)), "row " + i);
      }
    }
  }

  @Test
  void sqlFunctionOnTheSameRowsEqualsTheRoute() {
    String out = run("--n", "20", "--dim", "8", "--complexes", "2", "--master", "local[2]", "--cp", "2", "--sql");
    assertTrue(out.contains("foldcp_trimul on 2 complexes: 2 bit-identical to the route's output"), out);
  }

  @Test
  void helpPrintsUsage() {
    String out = run("--help");
    assertTrue(out.contains("--cp CP") && out.contains("--route R") && out.contains("--weights FILE"), out);
    assertTrue(out.contains("--transport T       auto | tcp | nvshmem"), out);
  }

  private static String[] concat(String[] a, String... b) {
    String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }
}
