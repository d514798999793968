package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Assumptions;

/** Shared pieces of the GPU tests: the skip, test tensors, the poison checks. */
public final class GpuTests {
  static final byte POISON = (byte) 0xFF;
  /** bf16 0xFFFF is a NaN: an output element still holding it was never written. */
  static final short POISON_BF16 = (short) 0xFFFF;

  private GpuTests() {}

  /** Skips the calling test, with the reason, unless the GPU backend can run on device 0. */
  static void assumeGpu() {
    String why = GpuAvailability.availability();
    Assumptions.assumeTrue(why == null, why);
  }

  /**
   * A process running {@code main} in a JVM of its own, like this one (same java) on the test class
   * path: {@code -Dfoldcp.test.classpath} where bin/gpu-run passes it (the console launcher's own
   * class path is not the tests'), else java.class.path (Surefire). Work that may wreck its
   * process (a sticky CUDA error, a rank that dies) runs there, never in the test JVM.
   *
   * @param prefix  a wrapper before java, e.g. compute-sanitizer and its options; may be empty
   * @param log  stdout and stderr, together
   */
  public static ProcessBuilder testJvm(List<String> prefix, List<String> jvmOptions, Class<?> main, List<String> args,
      Path log) {
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = System.getProperty("foldcp.test.classpath", System.getProperty("java.class.path"));
    List<String> cmd = new ArrayList<>(prefix);
    cmd.add(java);
    cmd.addAll(jvmOptions);
    cmd.addAll(List.of("-cp", cp, main.getName()));
    cmd.addAll(args);
    return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
  }

  /**
   * A random pair tensor; with {@code mask}, 12% masked positions plus one all-zero row and one
   * all-zero column in every batch element (the cases where a and b vanish along a whole line).
   */
  public static PairTensor input(int b, int n, int d, long seed, boolean mask) {
    PairTensor x = PairTensor.random(b, n, d, seed, mask ? 0.12 : 0.0);
    if (mask) {
      for (int bb = 0; bb < b; bb++) {
        int row = (int) ((seed + 3L * bb) % n);
        int col = (int) ((seed * 7 + 5L * bb + 1) % n);
        for (int k = 0; k < n; k++) {
          x.setValid(bb, row, k, false);
          x.setValid(bb, k, col, false);
        }
      }
    }
    return x;
  }

  /** Every element written (no poison left) and finite. */
  static void assertAllWrittenAndFinite(PairTensor out, String what) {
    for (int b = 0; b < out.batch(); b++) {
      for (int i = 0; i < out.rows(); i++) {
        short[] row = out.row(b, i);
        for (int q = 0; q < row.length; q++) {
          if (row[q] == POISON_BF16) {
            fail(what + ": element (" + b + ", " + i + ", " + q / out.dim() + ", " + q % out.dim()
                + ") still holds the 0xFFFF poison: never written");
          }
          if (!Float.isFinite(Bf16.toFloat(row[q]))) {
            fail(what + ": element (" + b + ", " + i + ", " + q / out.dim() + ", " + q % out.dim() + ") = "
                + Bf16.toFloat(row[q]) + " is not finite");
          }
        }
      }
    }
  }

  /** Bytes [from, from + len) of the device buffer all still 0xFF. */
  static void assertPoisonIntact(DeviceBuffer buf, long from, int len, String what) {
    byte[] tail = new byte[len];
    buf.copyToHost(from, tail, 0, len);
    byte[] want = new byte[len];
    Arrays.fill(want, POISON);
    assertTrue(Arrays.equals(want, tail), what + ": the forward wrote past the end of its output");
  }

  static void assertNoOpenHandlesSince(long mark, String what) {
    List<MemoryLeakCheck.OpenHandle> open = MemoryLeakCheck.openHandlesSince(mark);
    assertEquals(0, open.size(), what + ": open GPU handles left:\n" + open);
  }
}
