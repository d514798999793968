package org.foldcp.ops.cpu;

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

  /** Uses every available core. */
  public CpuTriMul() {
    this(Runtime.getRuntime().availableProcessors());
  }

  public CpuTriMul(int threads) {
    this.parallel = new Parallel(threads);
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
      NonFinite.check(x, "the pair tensor");
    }
    PreparedLayer l = new PreparedLayer(layer);
    int n = x.n();
    int d = l.dim;
    PairTensor out = PairTensor.zeros(x.batch(), n, n, d);
    out.setMask(x.maskCopy());
    int chunk = channelChunk(n, d, parallel.threads());
    float[][][] z = new float[d][n][n];
    float[][][] a = new float[chunk][n][n];
    float[][][] bm = new float[chunk][n][n];
    for (int b = 0; b < x.batch(); b++) {
      final int batch = b;
      for (int c0 = 0; c0 < d; c0 += chunk) {
        final int lo = c0;
        final int hi = Math.min(d, c0 + chunk);
        Stages.ProjectionSink sink = rowMajorSink(a, bm, hi - lo);
        parallel.forEach(n, i -> Stages.projectRow(x, batch, i, l, lo, hi,
            Stages.Scratch.local(n, d, hi - lo), Gemm.local(), sink));
        if (l.direction == Direction.OUTGOING) {
          parallel.forEach(hi - lo, q -> Gemm.local().nt(n, n, n, a[q], 0, 0, bm[q], 0, 0, z[lo + q], 0, 0, false));
        } else {
          parallel.forEach(hi - lo, q -> Gemm.local().tn(n, n, n, a[q], 0, 0, bm[q], 0, 0, z[lo + q], 0, 0, false));
        }
      }
      parallel.forEach(n, i -> {
        Stages.Scratch s = Stages.Scratch.local(n, d, Math.min(d, chunk));
        float[][] zi = s.zRows;
        for (int c = 0; c < d; c++) {
          zi[c] = z[c][i];
        }
        for (int j = 0; j < n; j++) {
          float[] zr = s.zt[j];
          for (int c = 0; c < d; c++) {
            zr[c] = zi[c][j];
          }
        }
        Stages.outputRow(x, batch, i, l, s.zt, s, Gemm.local(), out);
      });
    }
    return out;
  }

  /**
   * Stores a row's projections as row i of per-channel N x N matrices, a[c][i][k] = a[i,k,c]:
   * the channel-major order of docs/design.md section 2. Outgoing then multiplies A_c B_c^T;
   * incoming multiplies A_c^T B_c directly ({@link Gemm#tn}) instead of storing transposed,
   * which would scatter every value into a different cache line.
   */
  static Stages.ProjectionSink rowMajorSink(float[][][] a, float[][][] b, int channels) {
    return (i, c0, ar, br) -> {
      for (int q = 0; q < channels; q++) {
        System.arraycopy(ar[q], 0, a[q][i], 0, a[q][i].length);
        System.arraycopy(br[q], 0, b[q][i], 0, b[q][i].length);
      }
    };
  }

  /** Channels per chunk: a and b within AB_CHUNK_BYTES, but at least one per thread. */
  static int channelChunk(int n, int d, int threads) {
    long perChannel = 2L * n * n * Float.BYTES;
    long fit = Math.max(1, AB_CHUNK_BYTES / perChannel);
    return (int) Math.min(d, Math.max(threads, fit));
  }

  @Override
  public void close() {
    parallel.close();
  }
}
