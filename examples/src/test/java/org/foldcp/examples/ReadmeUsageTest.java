package org.foldcp.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * README.md's programs (the usage program, the directories program), compiled and run exactly as
 * they are written there, so the README can never show code that does not work. Their output
 * files are checked against the operator library.
 */
class ReadmeUsageTest {
  @TempDir
  Path tmp;

  @Test
  void usageProgramCompilesRunsAndMatchesTheOperatorLibrary() throws Exception {
    String out = compileAndRun("usage");
    assertTrue(out.contains("FoldCpTriMul route=barrier cp=2"), "explain() shows the route:\n" + out);
    assertTrue(out.contains("out_bytes"), "the SQL query ran:\n" + out);

    Matcher wrote = Pattern.compile("wrote (\\S+)").matcher(out);
    assertTrue(wrote.find(), out);
    Path outNpy = Path.of(wrote.group(1));
    Path dir = outNpy.getParent();
    Path model = dir.resolve("model.safetensors");
    LayerStack stack = new LayerStack(List.of(
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true),
            SafeTensors.readLayer(model, "pairformer.layers.0.tri_mul_out.", 32)),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true),
            SafeTensors.readLayer(model, "pairformer.layers.0.tri_mul_in.", 32))));
    PairTensor expected;
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      expected = cpu.forward(Npy.readPair(dir.resolve("pair.npy")), stack);
    }
    assertTrue(expected.sameAs(Npy.readPair(outNpy)), "the README program's output equals CpuTriMul's");
    for (File f : dir.toFile().listFiles()) {
      f.delete();
    }
    Files.delete(dir);
  }

  /**
   * The directories program: every complex it wrote equals the CPU backend's output on the pair
   * tensor it read, row for row.
   */
  @Test
  void directoriesProgramCompilesRunsAndWritesEveryComplex() throws Exception {
    String out = compileAndRun("data-usage");
    Matcher wrote = Pattern.compile("wrote (\\S+)").matcher(out);
    assertTrue(wrote.find(), out);
    Path outDir = Path.of(java.net.URI.create(wrote.group(1)));
    Path inDir = outDir.resolveSibling(outDir.getFileName().toString().replace("-folded", ""));
    LayerStack stack = LayerStack.randomAlternating(2, 32, 7, true);
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      for (int c = 0; c < 3; c++) {
        String id = "complex-" + c;
        PairTensor expected = cpu.forward(Npy.readPair(inDir.resolve(id + ".npy"), inDir.resolve(id + ".mask.npy")),
            stack);
        PairTensor written = Npy.readPair(outDir.resolve(id + ".npy"));
        assertEquals(expected.shapeString(), written.shapeString(), id);
        for (int i = 0; i < expected.rows(); i++) {
          assertTrue(java.util.Arrays.equals(expected.row(0, i), written.row(0, i)), id + " row " + i);
        }
      }
    }
    assertTrue(Files.exists(outDir.resolve("_SUCCESS")), "the job committed");
    for (Path d : List.of(outDir, inDir)) {
      for (File f : d.toFile().listFiles()) {
        f.delete();
      }
      Files.delete(d);
    }
  }

  /**
   * Compiles the ```java block of README.md between {@code <!-- marker:start -->} and
   * {@code <!-- marker:end -->} (a whole public class), runs its main and returns what it printed.
   */
  private String compileAndRun(String marker) throws Exception {
    String readme = Files.readString(SqlExampleTest.repositoryRoot().resolve("README.md"), StandardCharsets.UTF_8);
    Matcher m = Pattern.compile("<!-- " + marker + ":start -->\\s*```java\\n(.*?)```\\s*<!-- " + marker + ":end -->",
        Pattern.DOTALL).matcher(readme);
    assertTrue(m.find(), "README.md must hold a ```java block between <!-- " + marker + ":start --> and <!-- "
        + marker + ":end -->");
    String source = m.group(1);
    Matcher cls = Pattern.compile("public class (\\w+)").matcher(source);
    assertTrue(cls.find(), "the " + marker + " block must be a whole public class");
    Path src = tmp.resolve(cls.group(1) + ".java");
    Files.writeString(src, source, StandardCharsets.UTF_8);

    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
    int rc = javac.run(null, diagnostics, diagnostics, "-d", tmp.toString(), "-cp", classpath, src.toString());
    assertEquals(0, rc, "the README's " + marker + " program does not compile:\n" + diagnostics);

    PrintStream stdout = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    try (URLClassLoader loader = new URLClassLoader(new URL[] {tmp.toUri().toURL()}, getClass().getClassLoader())) {
      System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
      Method main = loader.loadClass(cls.group(1)).getMethod("main", String[].class);
      main.invoke(null, (Object) new String[0]);
    } finally {
      System.setOut(stdout);
    }
    String out = captured.toString(StandardCharsets.UTF_8);
    stdout.print(out);
    return out;
  }
}
