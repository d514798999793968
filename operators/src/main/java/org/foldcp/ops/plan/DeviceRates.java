package org.foldcp.ops.plan;

import org.foldcp.ops.InvalidInputException;

/**
 * What one GPU does per second, as the cost model sees it: a layer at cp = 1 takes
 * {@code flops / flopsPerSecond + elements * secondsPerElement} (the GEMMs at one rate, the
 * element-wise passes over the pair tensor at another), and a CP rank sends its reshards at
 * {@code linkBytesPerSecond}. {@link #calibrate} solves the two compute terms from two measured
 * shapes; the link rate and the device memory are given, each with where it comes from.
 */
public record DeviceRates(double flopsPerSecond, double secondsPerElement, double linkBytesPerSecond,
                          long memoryBytes, String source) {
  public DeviceRates {
    InvalidInputException.require(flopsPerSecond > 0 && Double.isFinite(flopsPerSecond), "FLOP rate", flopsPerSecond,
        "must be positive (the two calibration shapes must differ in their FLOPs per element)");
    InvalidInputException.require(secondsPerElement >= 0 && Double.isFinite(secondsPerElement), "seconds per element",
        secondsPerElement, "must be >= 0 (the calibration shapes gave a negative element-wise term: choose shapes"
            + " further apart, e.g. the smallest and the largest)");
    InvalidInputException.require(linkBytesPerSecond > 0, "link rate", linkBytesPerSecond, "must be positive");
    InvalidInputException.require(memoryBytes > 0, "device memory", memoryBytes, "must be positive");
  }

  /**
   * One H200 as docs/cost-model.md calibrates it: 715 TFLOP/s for the GEMMs and 4.19 ps per pair
   * value for the element-wise passes, solved from (1, 1024, 128) 1.23 ms and (1, 4096, 256) 85.62
   * ms of bench/results/2026-12-01-trimul-1gpu-tma-stores.csv; NVLink 4's nominal 450 GB/s per
   * direction (not measured); 141 GB of device memory.
   */
  public static DeviceRates h200() {
    return new DeviceRates(715e12, 4.19e-12, 450e9, 141L * 1000 * 1000 * 1000,
        "H200 calibration of docs/cost-model.md (bench/results/2026-12-01-trimul-1gpu-tma-stores.csv; link: NVLink 4"
            + " nominal 450 GB/s, not measured)");
  }

  /**
   * The compute terms that reproduce both measurements exactly: t = F / R + E * s solved for R and
   * s from two shapes whose FLOPs per element differ (N or D differ).
   */
  public static DeviceRates calibrate(Measurement first, Measurement second, double linkBytesPerSecond,
                                      String linkSource, long memoryBytes, String memorySource) {
    double f1 = first.flops();
    double e1 = first.elements();
    double f2 = second.flops();
    double e2 = second.elements();
    double det = f1 * e2 - f2 * e1;
    InvalidInputException.require(Math.abs(det) > 1e-9 * Math.abs(f1 * e2), "calibration shapes",
        "(" + first.n() + ", " + first.dim() + ") and (" + second.n() + ", " + second.dim() + ")",
        "must differ in FLOPs per element (N or D must differ)");
    double perFlop = (first.seconds() * e2 - second.seconds() * e1) / det;
    double perElement = (f1 * second.seconds() - f2 * first.seconds()) / det;
    String source = "compute from " + first.source() + " and " + second.source() + "; link: " + linkSource
        + "; memory: " + memorySource;
    return new DeviceRates(1 / perFlop, perElement, linkBytesPerSecond, memoryBytes, source);
  }
}
