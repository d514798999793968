package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.GpuAvailability;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JobBenchmarkTest {
  @Test
  void badArgumentsNameTheOptionAndTheRule() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> JobBenchSettings.parse(new String[] {"--backend", "tpu"}));
    assertTrue(e.getMessage().startsWith("--backend = tpu: must be cpu or gpu"), e.getMessage());
    e = assertThrows(InvalidInputException.class,
        () -> JobBenchSettings.parse(new String[] {"--slots", "4", "--threads", "2"}));
    assertTrue(e.getMessage().contains("must be >= --slots = 4"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> JobBenchSettings.parse(new String[] {"--n", "0"}));
    assertTrue(e.getMessage().startsWith("--n = 0: must be an integer >= 1"), e.getMessage());
    JobBenchSettings s = JobBenchSettings.parse(new String[] {"--complexes", "3", "--backend", "GPU"});
    assertEquals(3, s.complexes());
    assertTrue(s.gpu());
    assertEquals(512, s.n(), "the issue's shape by default");
    assertEquals(Map.of(), s.conf());
    s = JobBenchSettings.parse(new String[] {"--conf", "spark.foldcp.gpu.copyThreads=4", "--conf",
        "spark.foldcp.gpu.deviceSlots=24"});
    assertEquals(Map.of("spark.foldcp.gpu.copyThreads", "4", "spark.foldcp.gpu.deviceSlots", "24"), s.conf());
    e = assertThrows(InvalidInputException.class,
        () -> JobBenchSettings.parse(new String[] {"--conf", "spark.sql.shuffle.partitions=4"}));
    assertTrue(e.getMessage().startsWith("--conf = spark.sql.shuffle.partitions=4: must be spark.foldcp.KEY=VALUE"),
        e.getMessage());
  }

  /**
   * On the CPU: the job, Spark's own pass over the same cached rows and the bare loop, one row
   * each, no floors (they are the device's).
   */
  @Test
  void onTheCpuTheJobAndTheBareLoopEachGetARow(@TempDir Path dir) throws IOException {
    Path csv = dir.resolve("job-bench-cpu.csv");
    java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
    java.io.PrintStream stdout = System.out;
    System.setOut(new java.io.PrintStream(printed, true, java.nio.charset.StandardCharsets.UTF_8));
    try {
      JobBenchmark.main(new String[] {"--backend", "cpu", "--complexes", "2", "--n", "12", "--dim", "32", "--layers",
          "1", "--repeats", "1", "--threads", "1", "--csv", csv.toString()});
    } finally {
      System.setOut(stdout);
    }
    String out = printed.toString(java.nio.charset.StandardCharsets.UTF_8);
    System.out.print(out);
    // Spark's phases of the job's pass, from its listener events: the pass's own job and tasks
    // (the arm before it ran jobs too), every phase a count of milliseconds
    assertTrue(out.matches("(?s).*spark phases, last job pass \\(\\d+ ms, [1-9]\\d* job\\(s\\), [1-9]\\d* tasks\\): \\d+ ms"
        + " to the first job's start.*"), out);
    assertTrue(!out.contains("spark phases: none caught"), out);
    List<String> lines = Files.readAllLines(csv);
    assertTrue(lines.get(0).startsWith("# JobBenchmark "), lines.get(0));
    assertEquals(JobBenchReport.HEADER, lines.get(1));
    assertEquals(5, lines.size(), String.join("\n", lines));
    assertTrue(lines.get(2).contains(",cpu,2,12,32,1,") && lines.get(2).contains(",job,"), lines.get(2));
    assertTrue(lines.get(3).contains(",spark_scan,") && lines.get(3).endsWith(",,ok"), lines.get(3));
    assertTrue(lines.get(4).contains(",bare,") && lines.get(4).endsWith(",,ok"), lines.get(4));
  }

  /**
   * On the GPU: the job, Spark's own pass, the bare loop, the feed and the device's three floors, one row each, every share of
   * the overlapped floor filled in; a second run with --append adds rows under the same header.
   */
  @Test
  @Tag("gpu")
  void onAGpuEveryArmAndFloorGetsARow(@TempDir Path dir) throws IOException {
    String why = GpuAvailability.availability();
    Assumptions.assumeTrue(why == null, () -> "no usable GPU: " + why);
    Path csv = dir.resolve("job-bench.csv");
    String[] args = {"--backend", "gpu", "--complexes", "3", "--n", "64", "--dim", "32", "--layers", "2",
        "--repeats", "1", "--slots", "2", "--threads", "2", "--csv", csv.toString()};
    JobBenchmark.main(args);
    List<String> lines = Files.readAllLines(csv);
    assertEquals(JobBenchReport.HEADER, lines.get(1));
    assertEquals(9, lines.size(), String.join("\n", lines));
    List<String> arms = List.of("job", "spark_scan", "bare", "feed", "compute_floor", "copy_floor", "overlapped_floor");
    for (int k = 0; k < arms.size(); k++) {
      String row = lines.get(2 + k);
      assertTrue(row.contains(",gpu,3,64,32,2,2,2," + arms.get(k) + ","), row);
      assertTrue(row.matches(".*,[0-9.]+,ok"), "a share of the overlapped floor: " + row);
    }
    String[] again = java.util.Arrays.copyOf(args, args.length + 1);
    again[args.length] = "--append";
    JobBenchmark.main(again);
    assertEquals(16, Files.readAllLines(csv).size(), "appended under the same header");
  }
}
