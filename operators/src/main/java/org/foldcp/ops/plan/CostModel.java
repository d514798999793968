package org.foldcp.ops.plan;

import org.foldcp.ops.InvalidInputException;

/**
 * Time and device memory of one TriMul layer at a given cp, from {@link DeviceRates} (docs/cost-model.md
 * derives every term and checks it against the benchmark runs).
 *
 * <p>Written for a hidden width H (H = D in the forms without it): a, b and z have H channels.
 * <ul>
 *   <li>Work: stage 1 (LN_in, the p_in and g_in projections, D -> 2H each) 8BN^2HD FLOPs, stage 2
 *       (the triangle GEMM) 2BN^3H, stage 3 (LN_out, p_out H -> D and g_out D -> D) 2BN^2HD +
 *       2BN^2D^2; the element-wise
 *       term E * s is split evenly between stages 1 and 3 (each makes one pass over the pair tensor
 *       with its LayerNorm), scaled by (D + H) / 2D where H differs (a, b and z have H channels;
 *       an assumption, not a calibration). Each of cp ranks does 1/cp of every stage.</li>
 *   <li>Reshards, per rank and layer: stage 1 stores a and b of its tokens to the channels' owners,
 *       4BN^2H(cp - 1)/cp^2 bytes; stage 2 stores z back to the tokens' owners, 2BN^2H(cp - 1)/cp^2
 *       (bf16), as the CP plan counts them.</li>
 *   <li>Fused reshards (the stores of the GEMM epilogues go straight to the peers) overlap their stage:
 *       a stage takes the longer of its compute and its link time. Unfused ones follow it.</li>
 *   <li>Device memory per rank: x and the output (D channels), a, b and z (H), 2 bytes per value
 *       each, (4BN^2D + 6BN^2H)/cp bytes: 10BN^2D/cp at H = D (the single-GPU benchmark's measured
 *       peak at cp = 1 is this to within 0.2%); under CP 2BN^2D/cp more where D or H is above 384
 *       (stage 3's p between its two kernels).</li>
 * </ul>
 */
public final class CostModel {
  private final DeviceRates rates;

  public CostModel(DeviceRates rates) {
    this.rates = rates;
  }

  public DeviceRates rates() {
    return rates;
  }

  /** One layer's predicted cost at {@code cp}. */
  public record Estimate(int batch, int n, int dim, int cp, double computeSeconds, double linkSeconds,
                         double fusedSeconds, double unfusedSeconds, long deviceBytesPerRank,
                         long reshardBytesPerRank) {
    /** Whether a rank's share fits in {@code capBytes} of device memory. */
    public boolean fits(long capBytes) {
      return deviceBytesPerRank <= capBytes;
    }
  }

  /** 2BN^3D + 12BN^2D^2: the layer's FLOPs at H = D (multiply and add counted as two). */
  public static double flops(long b, long n, long d) {
    return flops(b, n, d, d);
  }

  /** 2BN^3H + 10BN^2HD + 2BN^2D^2: the layer's FLOPs at hidden width H. */
  public static double flops(long b, long n, long d, long h) {
    return 2.0 * b * n * n * n * h + 10.0 * b * n * n * h * d + 2.0 * b * n * n * d * d;
  }

  /** B * N^2 * D values of the pair tensor. */
  public static double elements(long b, long n, long d) {
    return (double) b * n * n * d;
  }

  /** Device bytes one rank holds for a layer at H = D: 10BN^2D / cp (12BN^2D / cp under CP above D = 384). */
  public static long deviceBytesPerRank(long b, long n, long d, int cp) {
    return deviceBytesPerRank(b, n, d, d, cp);
  }

  /**
   * Device bytes one rank holds for a layer of hidden width H: (4BN^2D + 6BN^2H) / cp, plus under
   * context parallelism 2BN^2D / cp for a pair with D or H above 384: its stage 3 runs as two
   * kernels with p between them, in a CP plan's section of its own (on one GPU in out or the
   * workspace's a/b room). The native library draws the same line (trimul_internal.h: kWideOutMax).
   */
  public static long deviceBytesPerRank(long b, long n, long d, long h, int cp) {
    final double perToken = 4.0 * d + 6.0 * h + (cp > 1 && splitsStage3(d, h) ? 2.0 * d : 0.0);
    return (long) Math.ceil(perToken * b * n * n / cp);
  }

  /** Whether stage 3 of a (D, H) layer runs as two kernels with p in device memory between them. */
  static boolean splitsStage3(long d, long h) {
    return d > 384 || h > 384;
  }

  /** Bytes one rank sends per layer over both reshards: 6BN^2H(cp - 1)/cp^2 (a, b and z carry H channels). */
  public static long reshardBytesPerRank(long b, long n, long h, int cp) {
    return (long) Math.ceil(6.0 * b * n * n * h * (cp - 1) / ((double) cp * cp));
  }

  /** The layer at {@code cp} ranks, H = D. */
  public Estimate layer(int b, int n, int d, int cp) {
    return layer(b, n, d, d, cp);
  }

  /** The layer of hidden width H at {@code cp} ranks; H must divide by cp (each rank owns H / cp channels). */
  public Estimate layer(int b, int n, int d, int h, int cp) {
    InvalidInputException.require(cp >= 1, "cp", cp, "must be >= 1");
    InvalidInputException.require(h % cp == 0, "cp", cp, "must divide " + (h == d ? "D" : "H") + " = " + h
        + " (each rank owns " + (h == d ? "D" : "H") + " / cp channels of the triangle product)");
    double perFlop = 1 / rates.flopsPerSecond();
    // the passes over x and the output (D channels) and over a, b and z (H), in the calibration's
    // proportion at H = D: one rate per element of the pair tensor, scaled by (D + H) / 2D
    double elementPass = elements(b, n, d) * rates.secondsPerElement() / 2 * (d + h) / (2.0 * d);
    double s1 = (8.0 * b * n * n * h * d * perFlop + elementPass) / cp;
    double s2 = 2.0 * b * n * n * n * h * perFlop / cp;
    double s3 = ((2.0 * h * d + 2.0 * d * d) * b * n * n * perFlop + elementPass) / cp;
    double share = (cp - 1) / ((double) cp * cp);
    double linkAb = 4.0 * b * n * n * h * share / rates.linkBytesPerSecond();
    double linkZ = 2.0 * b * n * n * h * share / rates.linkBytesPerSecond();
    double compute = s1 + s2 + s3;
    double fused = Math.max(s1, linkAb) + Math.max(s2, linkZ) + s3;
    double unfused = compute + linkAb + linkZ;
    return new Estimate(b, n, d, cp, compute, linkAb + linkZ, fused, unfused, deviceBytesPerRank(b, n, d, h, cp),
        reshardBytesPerRank(b, n, h, cp));
  }
}
