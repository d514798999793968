package org.foldcp.ops.plan;

import org.foldcp.ops.InvalidInputException;

/**
 * Time and device memory of one TriMul layer at a given cp, from {@link DeviceRates} (docs/cost-model.md
 * derives every term and checks it against the benchmark runs).
 *
 * <ul>
 *   <li>Work: stage 1 (LN_in, the p_in and g_in projections, D -> 2D each) 8BN^2D^2 FLOPs, stage 2
 *       (the triangle GEMM) 2BN^3D, stage 3 (LN_out, p_out and g_out) 4BN^2D^2; the element-wise
 *       term E * s is split evenly between stages 1 and 3 (each makes one pass over the pair tensor
 *       with its LayerNorm). Each of cp ranks does 1/cp of every stage.</li>
 *   <li>Reshards, per rank and layer: stage 1 stores a and b of its tokens to the channels' owners,
 *       4BN^2D(cp - 1)/cp^2 bytes; stage 2 stores z back to the tokens' owners, 2BN^2D(cp - 1)/cp^2
 *       (bf16), as the CP plan counts them.</li>
 *   <li>Fused reshards (the stores of the GEMM epilogues go straight to the peers) overlap their stage:
 *       a stage takes the longer of its compute and its link time. Unfused ones follow it.</li>
 *   <li>Device memory per rank: x, the output, a, b and z, 2 bytes per value each, 10BN^2D/cp bytes
 *       (the single-GPU benchmark's measured peak at cp = 1 is this to within 0.2%).</li>
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

  /** 2BN^3D + 12BN^2D^2: the layer's FLOPs (multiply and add counted as two). */
  public static double flops(long b, long n, long d) {
    return 2.0 * b * n * n * n * d + 12.0 * b * n * n * d * d;
  }

  /** B * N^2 * D values of the pair tensor. */
  public static double elements(long b, long n, long d) {
    return (double) b * n * n * d;
  }

  /** Device bytes one rank holds for a layer: 10BN^2D / cp. */
  public static long deviceBytesPerRank(long b, long n, long d, int cp) {
    return (long) Math.ceil(10.0 * b * n * n * d / cp);
  }

  /** Bytes one rank sends per layer over both reshards: 6BN^2D(cp - 1)/cp^2. */
  public static long reshardBytesPerRank(long b, long n, long d, int cp) {
    return (long) Math.ceil(6.0 * b * n * n * d * (cp - 1) / ((double) cp * cp));
  }

  /** The layer at {@code cp} ranks; D must divide by cp (each rank owns D / cp channels). */
  public Estimate layer(int b, int n, int d, int cp) {
    InvalidInputException.require(cp >= 1, "cp", cp, "must be >= 1");
    InvalidInputException.require(d % cp == 0, "cp", cp,
        "must divide D = " + d + " (each rank owns D / cp channels of the triangle product)");
    double perFlop = 1 / rates.flopsPerSecond();
    double elementPass = elements(b, n, d) * rates.secondsPerElement() / 2;
    double s1 = (8.0 * b * n * n * d * d * perFlop + elementPass) / cp;
    double s2 = 2.0 * b * n * n * n * d * perFlop / cp;
    double s3 = (4.0 * b * n * n * d * d * perFlop + elementPass) / cp;
    double share = (cp - 1) / ((double) cp * cp);
    double linkAb = 4.0 * b * n * n * d * share / rates.linkBytesPerSecond();
    double linkZ = 2.0 * b * n * n * d * share / rates.linkBytesPerSecond();
    double compute = s1 + s2 + s3;
    double fused = Math.max(s1, linkAb) + Math.max(s2, linkZ) + s3;
    double unfused = compute + linkAb + linkZ;
    return new Estimate(b, n, d, cp, compute, linkAb + linkZ, fused, unfused, deviceBytesPerRank(b, n, d, cp),
        reshardBytesPerRank(b, n, d, cp));
  }
}
