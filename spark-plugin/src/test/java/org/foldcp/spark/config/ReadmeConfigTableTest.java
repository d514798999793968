package org.foldcp.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** README.md shows the configuration table exactly as FoldCpConf renders it. */
class ReadmeConfigTableTest {
  private static final String START = "<!-- config-table:start -->";
  private static final String END = "<!-- config-table:end -->";

  @Test
  void readmeTableMatchesFoldCpConf() throws IOException {
    // Surefire runs in the module directory; README.md is at the repository root above it.
    Path readme = Path.of(System.getProperty("basedir", ".")).resolve("../README.md").normalize();
    assertTrue(Files.isRegularFile(readme), "no README.md at " + readme.toAbsolutePath());
    String text = Files.readString(readme, StandardCharsets.UTF_8);
    int start = text.indexOf(START);
    int end = text.indexOf(END);
    assertTrue(start >= 0 && end > start, readme + " needs the markers " + START + " and " + END);
    assertEquals(-1, text.indexOf(START, start + 1), "only one config table in " + readme);
    String shown = text.substring(start + START.length(), end).strip();
    String expected = FoldCpConf.markdownTable().strip();
    assertEquals(expected, shown, "README.md's configuration table is out of date; replace the lines between"
        + " the markers with the output of org.foldcp.spark.config.FoldCpConf's main:\n" + expected + "\n");
  }
}
