package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.GpuTriMul;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JobBenchmarkTest {
  @Test
  void badArgumentsNameTheOptionAndTheRule() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> JobBenchmark.Settings.parse(new String[] {"--backend", "tpu"}));
    assertTrue(e.getMessage().startsWith("--backend = tpu: must be cpu or gpu"), e.getMessage());
    e = assertThrows(InvalidInputException.class,
        () -> JobBenchmark.Settings.parse(new String[] {"--slots", "4", "--threads", "2"}));
    assertTrue(e.getMessage().contains("must be >= --slots = 4"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> JobBenchmark.Settings.parse(new String[] {"--n", "0"}));
    assertTrue(e.getMessage().startsWith("--n = 0: must be an integer >= 1"), e.getMessage());
    JobBenchmark.Settings s = JobBenchmark.Settings.parse(new String[] {"--complexes", "3", "--backend", "GPU"});
    assertEquals(3, s.complexes());
    assertTrue(s.gpu());
    assertEquals(512, s.n(), "the issue's shape by default");
  }

  /** Both arms on the GPU (the Spark job in local mode on the driver's GPU, and GpuTriMul), one row each. */
  @Test
  @Tag("gpu")
  void onAGpuBothArmsRunAndTheCsvHasOneRowEach(@TempDir Path dir) throws IOException {
    String why = GpuTriMul.availability();
    Assumptions.assumeTrue(why == null, () -> "no usable GPU: " + why);
    Path csv = dir.resolve("job-bench.csv");
    JobBenchmark.main(new String[] {"--backend", "gpu", "--complexes", "2", "--n", "64", "--dim", "32", "--layers", "2",
        "--repeats", "1", "--csv", csv.toString()});
    List<String> lines = Files.readAllLines(csv);
    assertEquals(JobBenchmark.HEADER, lines.get(1));
    assertEquals(4, lines.size(), String.join("\n", lines));
    assertTrue(lines.get(2).contains(",gpu,2,64,32,2,") && lines.get(2).contains(",bare,"), lines.get(2));
    assertTrue(lines.get(3).contains(",job,"), lines.get(3));
  }
}
