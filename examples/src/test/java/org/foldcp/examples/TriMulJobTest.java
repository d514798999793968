package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.gpu.GpuAvailability;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The example job on every route: same checksum, the route it was asked for, a correct output file. */
class TriMulJobTest {
  private static final Pattern CHECKSUM = Pattern.compile("checksum +(sum \\S+ +sum\\|\\.\\| \\S+)");
  private static final Pattern DIGEST = Pattern.compile("digest +([0-9a-f]{32}) ");

  @TempDir
  Path tmp;

  /** What one run of the job gave: its exit code, stdout and stderr (the job's own lines, not the log). */
  record Outcome(int code, String out, String err) {
    List<String> errLines() {
      return err.lines().toList();
    }
  }

  private static Outcome execute(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = TriMulJob.execute(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    Outcome r = new Outcome(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    System.out.print(r.out);
    System.out.print(r.err);
    return r;
  }

  private static String run(String... args) {
    Outcome r = execute(args);
    assertEquals(0, r.code, r.err);
    return r.out;
  }

  /** A failure the user can fix: exit code 2 and exactly one line on stderr, which contains every {@code expected}. */
  private static String oneLineError(Outcome r, String... expected) {
    assertEquals(2, r.code, r.out + r.err);
    assertEquals(1, r.errLines().size(), r.err);
    String line = r.errLines().get(0);
    assertTrue(line.startsWith("error: "), line);
    for (String e : expected) {
      assertTrue(line.contains(e), "'" + e + "' in: " + line);
    }
    return line;
  }

  private static String checksum(String out) {
    Matcher m = CHECKSUM.matcher(out);
    assertTrue(m.find(), out);
    return m.group(1);
  }

  private static String digest(String out) {
    Matcher m = DIGEST.matcher(out);
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
    // CP on the CPU equals cp = 1 bit for bit, every complex
    assertEquals(digest(single), digest(barrier));
    assertEquals(digest(single), digest(shuffle));
    String otherSeed = run(concat(common, "--seed", "8"));
    assertTrue(!digest(single).equals(digest(otherSeed)), "a different input must give a different digest");

    // the written output is synthetic complex 0 through the generated stack
    JobOptions o = JobOptions.parse(common);
    PairTensor x = PairTensor.random(1, 24, 16, o.seed, o.maskedFraction);
    LayerStack stack = TriMulInputs.loadStack(o, 16);
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      PairTensor expected = cpu.forward(x, stack);
      PairTensor written = Npy.readPair(outNpy);
      assertEquals(expected.shapeString(), written.shapeString());
      for (int i = 0; i < 24; i++) {
        assertTrue(java.util.Arrays.equals(expected.row(0, i), written.row(0, i)), "row " + i);
      }
    }
  }

  /**
   * Layers of their own hidden width (H = 8, D = 6: cp = 4 divides H, not D): every route, the CP
   * ones splitting H over the ranks, gives the bits of cp = 1, and the report names H.
   */
  @Test
  void aHiddenWidthOfItsOwnGivesTheSameBitsOnEveryRoute() {
    String[] common = {"--n", "20", "--dim", "6", "--hidden", "8", "--layers", "2", "--complexes", "2",
        "--master", "local[4]"};
    String single = run(common);
    assertTrue(single.contains("layers 2 of hidden width H=8"), single);
    String barrier = run(concat(common, "--cp", "4", "--grid", "2x2", "--route", "barrier", "--transport", "tcp"));
    String shuffle = run(concat(common, "--cp", "4", "--route", "shuffle"));
    assertEquals(digest(single), digest(barrier));
    assertEquals(digest(single), digest(shuffle));
    String square = run("--n", "20", "--dim", "6", "--layers", "2", "--complexes", "2", "--master", "local[4]");
    assertTrue(!digest(single).equals(digest(square)), "H = 8 is another stack than H = D");
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
    assertTrue(out.contains("auto | cpu | gpu | barrier | shuffle") && out.contains("--route gpu"), out);
    assertTrue(out.contains("--conf KEY=VALUE") && out.contains("--master URL") && out.contains("--verbose"), out);
  }

  @Test
  void badOptionsAreOneLineAndExitTwoAndVerboseAddsTheStackTrace() {
    oneLineError(execute("--bogus", "1"), "option = --bogus", "is not known");
    oneLineError(execute("--n", "0"), "--n = 0", "must be an integer >= 1");
    oneLineError(execute("--seed", "x"), "--seed = 'x'", "must be an integer");
    oneLineError(execute("--conf", "spark.foldcp.cp"), "--conf = 'spark.foldcp.cp'", "must be key=value");
    Outcome verbose = execute("--bogus", "1", "--verbose");
    assertEquals(2, verbose.code);
    assertTrue(verbose.errLines().size() > 1 && verbose.err.contains("\tat org.foldcp.examples.JobOptions"), verbose.err);
  }

  /**
   * An --output the job could not write fails before any work (no Spark starts: nothing is
   * printed on stdout), in one line naming the path and the rule: a missing folder, a folder.
   */
  @Test
  void anOutputItCannotWriteIsOneLineBeforeAnyWork(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    String missing = dir.resolve("no/such/out.npy").toString();
    Outcome r = execute("--n", "16", "--dim", "16", "--complexes", "1", "--output", missing);
    oneLineError(r, "--output = '" + missing + "'", "does not exist: create it first");
    assertEquals("", r.out, "no work started");
    r = execute("--n", "16", "--dim", "16", "--complexes", "1", "--output", dir.toString());
    oneLineError(r, "--output = '" + dir + "'", "is a folder: name a file to write");
    assertEquals("", r.out, "no work started");
  }

  @Test
  void badFoldCpSettingsAreOneLineAndExitTwo() {
    String[] small = {"--n", "16", "--dim", "16", "--complexes", "1", "--master", "local[2]"};
    // an unknown key, through --conf and through a system property (how spark-submit --conf reaches the job)
    oneLineError(execute(concat(small, "--conf", "spark.foldcp.rout=gpu")), "spark.foldcp.rout = 'gpu'",
        "did you mean spark.foldcp.route?");
    System.setProperty("spark.foldcp.rout", "gpu");
    try {
      oneLineError(execute(small), "spark.foldcp.rout = 'gpu'", "did you mean spark.foldcp.route?");
    } finally {
      System.clearProperty("spark.foldcp.rout");
    }
    oneLineError(execute(concat(small, "--cp", "4", "--grid", "3x2")), "spark.foldcp.grid");
    oneLineError(execute(concat(small, "--route", "sideways")), "spark.foldcp.route = 'sideways'");
    oneLineError(execute(concat(small, "--conf", "spark.foldcp.cp=zero")), "spark.foldcp.cp = 'zero'");
    if (GpuAvailability.availability() != null) { // no usable GPU here: route gpu must say so in one line
      oneLineError(execute(concat(small, "--route", "gpu")), "gpu");
    }
  }

  @Test
  void localModeKeepsTheSlotsItWasGivenAndTheBarrierPreflightSaysSo() {
    String line = oneLineError(execute("--n", "16", "--dim", "16", "--complexes", "1", "--master", "local[2]",
        "--cp", "4", "--route", "barrier", "--transport", "tcp"), "cp = 4", "only 2 task slots", "local[2]");
    assertTrue(!line.contains("\tat "), line);
    // --conf reaches the SparkConf, and --master wins over a spark.master given there
    JobOptions o = JobOptions.parse(new String[] {"--conf", "spark.foldcp.cpu.threads=3", "--conf", "spark.master=local[3]"});
    assertEquals("3", TriMulJob.conf(o).get("spark.foldcp.cpu.threads"));
    assertEquals("local[3]", TriMulJob.conf(o).get("spark.master"));
    o = JobOptions.parse(new String[] {"--conf", "spark.master=local[3]", "--master", "local[1]"});
    assertEquals("local[1]", TriMulJob.conf(o).get("spark.master"));
    assertEquals("local[*]", TriMulJob.conf(JobOptions.parse(new String[] {"--cp", "8"})).get("spark.master"));
  }

  private static String[] concat(String[] a, String... b) {
    String[] r = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, r, a.length, b.length);
    return r;
  }
}
