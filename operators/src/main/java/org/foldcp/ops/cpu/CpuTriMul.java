package org.foldcp.ops.cpu;

import java.util.concurrent.atomic.AtomicReference;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.NonFinite;
import org.foldcp.ops.tensor.PairTensor;

/**
 * The CPU backend: the reference route and the fallback when there is no GPU.
 *
 * <p>Same dataflow as the GPU kernels (docs/design.md section 2 with cp = 1): the projection stage
 * stores gated a and b channel-major ([c][i][k]), the triangle product runs one GEMM per channel
 * (A B^T outgoing, A^T B incoming), z is gathered token-major for LN_out and the output projection.
 * Channels are processed in chunks so that a and b never need more than about 256 MiB; z is
 * kept whole in fp32 because LN_out needs every channel of a token. Any N >= 1 works directly:
 * the GEMM handles ragged edges, so no padding is needed here.
 */
public final class CpuTriMul implements TriMulBackend {
  private static final long AB_CHUNK_BYTES = 256L << 20;

  private final Parallel parallel;
  private final CpuKernels kernels;

  /** Uses every available core. */
  public CpuTriMul() {
    this(Runtime.getRuntime().availableProcessors());
  }

  /** With this JVM's kernels ({@link CpuKernels#selected()}). */
  public CpuTriMul(int threads) {
    this(threads, CpuKernels.selected());
  }

  /** With given kernels (tests and the benchmark compare them). */
  public CpuTriMul(int threads, CpuKernels kernels) {
    this.kernels = kernels;
    this.parallel = new Parallel(threads);
  }

  /** The kernels this backend runs. */
  public CpuKernels kernels() {
    return kernels;
  }

  @Override
  public String name() {
    return "cpu";
  }

  public int threads() {
    return parallel.threads();
  }

  /** Checks that x can go through {@code layer}; the message names the value and the rule. */
  public static void validate(PairTensor x, TriMulLayer layer) {
    validate(x, layer.dim());
  }

  /** Checks that x is a square pair tensor of the layers' D; shared by every backend and the CP routes. */
  public static void validate(PairTensor x, int layerDim) {
    InvalidInputException.require(x.isSquare(), "pair tensor shape", x.shapeString(),
        "a pair tensor must be (B, N, N, D) with equal row and column counts");
    InvalidInputException.require(x.dim() == layerDim, "D of the pair tensor", x.dim(),
        "must equal the layer's D = " + layerDim + " (norm_in.weight has " + layerDim + " values)");
  }

  @Override
  public PairTensor forward(PairTensor x, TriMulLayer layer, boolean allowNonFinite) {
    validate(x, layer);
    if (!allowNonFinite) {
      checkFinite(x);
    }
    PreparedLayer l = new PreparedLayer(layer);
    int n = x.n();
    int d = l.dim;
    int h = l.hidden;
    // The output rows are allocated by the threads that write them, just before (the JVM's
    // zeroing then runs in parallel and leaves the row in that core's cache).
    short[][] outRows = new short[x.batch() * n][];
    int chunk = channelChunk(n, h, parallel.threads());
    Buffers buf = takeBuffers(n, h, chunk);
    float[][] z = buf.z;
    float[][] a = buf.a;
    float[][] bm = buf.b;
    boolean outgoing = l.direction == Direction.OUTGOING;
    for (int b = 0; b < x.batch(); b++) {
      final int batch = b;
      for (int c0 = 0; c0 < h; c0 += chunk) {
        final int lo = c0;
        final int hi = Math.min(h, c0 + chunk);
        Stages.ProjectionSink sink = rowMajorSink(a, bm, hi - lo, n);
        parallel.forEach(n, i -> Stages.projectRow(x, batch, i, l, lo, hi,
            Stages.Scratch.local(n, d, h, hi - lo), kernels, sink));
        // Outgoing Z_c = A_c B_c^T; incoming Z_c = A_c^T B_c, read transposed in place.
        parallel.forEach(hi - lo, q -> kernels.gemm(!outgoing, outgoing, n, n, n, a[q], 0, n, bm[q], 0, n,
            z[lo + q], 0, n, false));
      }
      parallel.forEach(n, i -> {
        Stages.Scratch s = Stages.Scratch.local(n, d, h, Math.min(h, chunk));
        gatherRow(z, i, n, h, s.zt);
        short[] row = new short[n * d];
        Stages.outputRow(x, batch, i, l, s.zt, s, kernels, row);
        outRows[batch * n + i] = row;
      });
    }
    spare.set(buf);
    return PairTensor.wrap(x.batch(), n, n, d, outRows, x.maskCopy());
  }

  /**
   * {@link NonFinite#check} in parallel: each thread counts the NaN and Inf values of its rows;
   * only where there are any does the serial check run, for its exception (first position, count).
   */
  private void checkFinite(PairTensor x) {
    int rows = x.batch() * x.rows();
    int r0 = x.rows();
    java.util.concurrent.atomic.AtomicLong found = new java.util.concurrent.atomic.AtomicLong();
    parallel.forEach(rows, r -> {
      int c = countNonFinite(x.row(r / r0, r % r0));
      if (c != 0) {
        found.addAndGet(c);
      }
    });
    if (found.get() != 0) {
      NonFinite.check(x, "the pair tensor");
    }
  }

  /** How many values of a bf16 row are NaN or Inf ({@link NonFinite#is}), branch-free. */
  static int countNonFinite(short[] row) {
    int c = 0;
    for (short v : row) {
      c += (v & 0x7F80) == 0x7F80 ? 1 : 0;
    }
    return c;
  }

  /**
   * The per-channel matrices of one forward (z for all H channels, a and b for one chunk), kept
   * for the next forward of the same sizes: allocating them anew each time (hundreds of MiB at
   * N = 512) made every young collection copy them, pauses of 100 ms and more.
   */
  private static final class Buffers {
    final int n;
    final int d;
    final int chunk;
    final float[][] z;
    final float[][] a;
    final float[][] b;

    Buffers(int n, int d, int chunk) {
      this.n = n;
      this.d = d;
      this.chunk = chunk;
      z = new float[d][n * n];
      a = new float[chunk][n * n];
      b = new float[chunk][n * n];
    }
  }

  /** Every entry of a, b and z is written before it is read, so reused buffers need no clearing. */
  private final AtomicReference<Buffers> spare = new AtomicReference<>();

  /** The spare buffers if they fit (a concurrent forward finds none and allocates its own). */
  private Buffers takeBuffers(int n, int d, int chunk) {
    Buffers b = spare.getAndSet(null);
    return b != null && b.n == n && b.d == d && b.chunk == chunk ? b : new Buffers(n, d, chunk);
  }

  /**
   * Stores a row's projections as row i of per-channel N x N matrices, a[c][i * N + k] = a[i,k,c]:
   * the channel-major order of docs/design.md section 2. Outgoing then multiplies A_c B_c^T;
   * incoming multiplies A_c^T B_c directly (the GEMM reads A and B transposed) instead of storing
   * transposed, which would scatter every value into a different cache line.
   */
  static Stages.ProjectionSink rowMajorSink(float[][] a, float[][] b, int channels, int n) {
    return (i, c0, ar, br, cols) -> {
      for (int q = 0; q < channels; q++) {
        System.arraycopy(ar, q * cols, a[q], i * n, cols);
        System.arraycopy(br, q * cols, b[q], i * n, cols);
      }
    };
  }

  /** zt[j * d + c] = z[c][i * n + j]: row i of z, token-major, eight channels at a time. */
  static void gatherRow(float[][] z, int i, int n, int d, float[] zt) {
    int base = i * n;
    int c = 0;
    for (; c + 8 <= d; c += 8) {
      float[] z0 = z[c];
      float[] z1 = z[c + 1];
      float[] z2 = z[c + 2];
      float[] z3 = z[c + 3];
      float[] z4 = z[c + 4];
      float[] z5 = z[c + 5];
      float[] z6 = z[c + 6];
      float[] z7 = z[c + 7];
      for (int j = 0, o = c; j < n; j++, o += d) {
        int src = base + j;
        zt[o] = z0[src];
        zt[o + 1] = z1[src];
        zt[o + 2] = z2[src];
        zt[o + 3] = z3[src];
        zt[o + 4] = z4[src];
        zt[o + 5] = z5[src];
        zt[o + 6] = z6[src];
        zt[o + 7] = z7[src];
      }
    }
    for (; c < d; c++) {
      float[] zc = z[c];
      for (int j = 0; j < n; j++) {
        zt[j * d + c] = zc[base + j];
      }
    }
  }

  /** Channels per chunk: a and b within AB_CHUNK_BYTES, but at least one per thread. */
  static int channelChunk(int n, int d, int threads) {
    long perChannel = 2L * n * n * Float.BYTES;
    long fit = Math.max(1, AB_CHUNK_BYTES / perChannel);
    return (int) Math.min(d, Math.max(threads, fit));
  }

  @Override
  public void close() {
    spare.set(null);
    parallel.close();
  }
}
