package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs SqlExample's main as a user does: in a JVM of its own started with conf/spark-jvm.opts
 * (Spark needs those --add-opens flags on Java 17, and this module's test JVM does not have them).
 */
class SqlExampleTest {
  private static final Pattern CHECKSUM_LINE = Pattern.compile(
      "  complex-\\d +N=\\d+ +sum [+-]\\d\\.\\d{6}e[+-]\\d+  sum\\|\\.\\| \\d\\.\\d{6}e[+-]\\d+  crc32 [0-9a-f]{8}");

  @TempDir
  Path tmp;

  @Test
  void mainFoldsTheComplexesAndPrintsAChecksumPerComplex() throws Exception {
    Path root = repositoryRoot();
    Path log = tmp.resolve("sql-example.out");
    Process p = new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "@" + root.resolve("conf/spark-jvm.opts"),
            "-Xmx2g",
            "-Dlog4j2.configurationFile=" + root.resolve("conf/log4j2.properties"),
            "-Djava.io.tmpdir=" + tmp,
            "-cp", System.getProperty("java.class.path"),
            SqlExample.class.getName())
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .start();
    if (!p.waitFor(240, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("SqlExample did not finish in 240 s; output so far:\n" + read(log));
    }
    String output = read(log);
    assertEquals(0, p.exitValue(), output);

    List<String> checksums = output.lines().filter(l -> CHECKSUM_LINE.matcher(l).matches()).collect(Collectors.toList());
    assertEquals(3, checksums.size(), output);
    assertTrue(checksums.get(0).startsWith("  complex-0  N=16 "), output);
    assertTrue(checksums.get(2).startsWith("  complex-2  N=40 "), output);
    assertTrue(output.contains("same bytes as SQL for all 3 complexes"), output);
    try (var left = Files.list(tmp)) {
      assertEquals(List.of(log), left.filter(f -> f.getFileName().toString().startsWith("foldcp-sql-example-")
          || f.equals(log)).collect(Collectors.toList()), "the example removes its temporary folder");
    }
  }

  /** The checkout root: the nearest folder above the module that has conf/spark-jvm.opts. */
  static Path repositoryRoot() {
    for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
      if (Files.isRegularFile(d.resolve("conf/spark-jvm.opts"))) {
        return d;
      }
    }
    throw new IllegalStateException("no conf/spark-jvm.opts above " + Path.of("").toAbsolutePath());
  }

  private static String read(Path f) throws IOException {
    return Files.exists(f) ? Files.readString(f, StandardCharsets.UTF_8) : "";
  }
}
