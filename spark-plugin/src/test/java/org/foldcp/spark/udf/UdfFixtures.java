package org.foldcp.spark.udf;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Weights files, pair tensors in the documented byte layout, and the expected outputs computed
 * without the UDF (CpuTriMul on a stack read straight from the file), for the udf tests.
 */
final class UdfFixtures {
  static final String OUT = "a.tri_mul_out.";
  static final String IN = "a.tri_mul_in.";
  /** The two layers in file order: outgoing then incoming, as the UDF infers from the prefixes. */
  static final String LAYERS = OUT + "," + IN;

  private UdfFixtures() {}

  /** A .safetensors file with an outgoing layer (with biases) and an incoming one (without). */
  static Path writeWeights(Path dir, String name, int d, long seed) {
    Map<String, LayerWeights> layers = new LinkedHashMap<>();
    layers.put(OUT, LayerWeights.random(d, seed, true));
    layers.put(IN, LayerWeights.random(d, seed + 1, false));
    Path file = dir.resolve(name);
    SafeTensors.writeLayers(file, layers, "F32");
    return file;
  }

  /** The stack the UDF should build for {@link #LAYERS}, read independently of its cache. */
  static LayerStack referenceStack(Path file, int d) {
    return LayerStack.of(
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), SafeTensors.readLayer(file, OUT, d)),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), SafeTensors.readLayer(file, IN, d)));
  }

  /** The expected UDF output: the single-threaded CPU backend, encoded as the UDF documents. */
  static byte[] expected(PairTensor x, LayerStack stack) {
    try (CpuTriMul cpu = new CpuTriMul(1)) {
      return pairBytes(cpu.forward(x, stack));
    }
  }

  /** bf16 little-endian [n][n][dim] of batch element 0, written from the format's definition. */
  static byte[] pairBytes(PairTensor x) {
    int n = x.rows();
    int d = x.dim();
    ByteBuffer buf = ByteBuffer.allocate(2 * n * n * d).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        for (int c = 0; c < d; c++) {
          buf.putShort(x.getBits(0, i, j, c));
        }
      }
    }
    return buf.array();
  }

  /** uint8 [n][n] (1 = valid), or null when the tensor has no mask. */
  static byte[] maskBytes(PairTensor x) {
    if (!x.hasMask()) {
      return null;
    }
    int n = x.rows();
    byte[] m = new byte[n * n];
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        m[i * n + j] = x.valid(0, i, j) ? (byte) 1 : (byte) 0;
      }
    }
    return m;
  }

  /** Every message along a cause chain, for checking what reached the caller through Spark. */
  static String messages(Throwable t) {
    StringBuilder sb = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
      sb.append(c.getClass().getName()).append(": ").append(c.getMessage()).append('\n');
    }
    return sb.toString();
  }
}
