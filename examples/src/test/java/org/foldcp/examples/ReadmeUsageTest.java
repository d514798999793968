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
 * README.md's usage program, compiled and run exactly as it is written there, so the README can
 * never show code that does not work. Its output file is checked against the operator library.
 */
class ReadmeUsageTest {
  private static final Pattern BLOCK = Pattern.compile(
      "<!-- usage:start -->\\s*```java\\n(.*?)```\\s*<!-- usage:end -->", Pattern.DOTALL);

  @TempDir
  Path tmp;

  @Test
  void usageProgramCompilesRunsAndMatchesTheOperatorLibrary() throws Exception {
    String readme = Files.readString(SqlExampleTest.repositoryRoot().resolve("README.md"), StandardCharsets.UTF_8);
    Matcher m = BLOCK.matcher(readme);
    assertTrue(m.find(), "README.md must hold a ```java block between <!-- usage:start --> and <!-- usage:end -->");
    String source = m.group(1);
    Matcher cls = Pattern.compile("public class (\\w+)").matcher(source);
    assertTrue(cls.find(), "the usage block must be a whole public class");
    Path src = tmp.resolve(cls.group(1) + ".java");
    Files.writeString(src, source, StandardCharsets.UTF_8);

    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
    int rc = javac.run(null, diagnostics, diagnostics, "-d", tmp.toString(), "-cp", classpath, src.toString());
    assertEquals(0, rc, "the README's usage program does not compile:\n" + diagnostics);

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
}
