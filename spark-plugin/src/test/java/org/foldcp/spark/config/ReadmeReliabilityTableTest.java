package org.foldcp.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every test README.md's reliability table names as proof exists, with the method it names: a
 * renamed or deleted test must not leave a row claiming a proof that no longer runs.
 */
class ReadmeReliabilityTableTest {
  /** `SomeTest`, `SomeTest.method` or `...method` (a method of the test named before it). */
  private static final Pattern CITED = Pattern.compile("`(\\.\\.\\.|[A-Z][A-Za-z0-9]*Test)(?:\\.([a-z][A-Za-z0-9]*))?`");

  @Test
  void everyCitedTestAndMethodExists() throws IOException {
    Path root = Path.of(System.getProperty("basedir", ".")).resolve("..").normalize();
    List<String> rows = new ArrayList<>();
    boolean inSection = false;
    for (String line : Files.readAllLines(root.resolve("README.md"))) {
      if (line.startsWith("## ")) {
        inSection = line.equals("## Reliability");
      } else if (inSection && line.startsWith("| ") && !line.startsWith("| ---") && !line.startsWith("| Fault")) {
        rows.add(line);
      }
    }
    assertTrue(rows.size() >= 10, "README.md's reliability table has " + rows.size() + " rows");
    List<String> missing = new ArrayList<>();
    int cited = 0;
    for (String row : rows) {
      String proof = row.substring(row.lastIndexOf("| ", row.length() - 3));
      Matcher m = CITED.matcher(proof);
      String lastClass = null;
      while (m.find()) {
        String cls = m.group(1).equals("...") ? lastClass : m.group(1);
        lastClass = cls;
        cited++;
        Path source = find(root, cls + ".java");
        if (source == null) {
          missing.add(cls + " (no such test class)");
        } else if (m.group(2) != null && !Files.readString(source).contains("void " + m.group(2) + "(")) {
          missing.add(cls + "." + m.group(2) + " (no such method)");
        }
      }
    }
    assertTrue(cited >= rows.size(), "every row names a test: " + cited + " names in " + rows.size() + " rows");
    assertEquals(List.of(), missing, "README.md's reliability table cites tests that do not exist");
  }

  private static Path find(Path root, String fileName) throws IOException {
    try (Stream<Path> files = Files.walk(root, 12)) {
      return files.filter(p -> p.getFileName().toString().equals(fileName) && p.toString().contains("src/test/java"))
          .findFirst().orElse(null);
    }
  }
}
