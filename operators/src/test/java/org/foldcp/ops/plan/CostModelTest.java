package org.foldcp.ops.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.junit.jupiter.api.Test;

/**
 * The cost model against the single-GPU benchmark run it is calibrated on: two of the run's five
 * shapes calibrate it, the other three are predicted (the model never sees them), and the memory
 * term is checked against the run's measured peaks.
 */
class CostModelTest {
  /** All five shapes of one benchmark run on the H200 (bin/gpu-run bench step, commit 0fc2a16). */
  static final Path RUN = Path.of("..", "bench", "results", "2026-12-01-trimul-1gpu-tma-stores.csv");
  static final double NVLINK_NOMINAL = 450e9;
  static final long H200_BYTES = 141L << 30;

  static Map<String, SingleGpuRun.Row> ours() throws IOException {
    return SingleGpuRun.read(RUN);
  }

  static CostModel calibrated(Map<String, SingleGpuRun.Row> run) {
    return new CostModel(DeviceRates.calibrate(SingleGpuRun.measurement(run, RUN, 1, 1024, 128),
        SingleGpuRun.measurement(run, RUN, 1, 4096, 256), NVLINK_NOMINAL, "NVLink 4 nominal, per direction",
        H200_BYTES, "H200 nominal"));
  }

  @Test
  void calibrationReproducesItsTwoShapes() throws IOException {
    Map<String, SingleGpuRun.Row> run = ours();
    CostModel m = calibrated(run);
    for (int[] s : new int[][] {{1, 1024, 128}, {1, 4096, 256}}) {
      double want = run.get(s[0] + "," + s[1] + "," + s[2]).seconds();
      assertEquals(want, m.layer(s[0], s[1], s[2], 1).fusedSeconds(), 1e-9 * want);
    }
  }

  @Test
  void predictsTheRunsOtherShapesWithin15Percent() throws IOException {
    Map<String, SingleGpuRun.Row> run = ours();
    assertEquals(5, run.size(), "the run holds the five benchmark shapes");
    CostModel m = calibrated(run);
    for (int[] s : new int[][] {{1, 2048, 128}, {1, 2048, 256}, {1, 4096, 128}}) {
      double want = run.get(s[0] + "," + s[1] + "," + s[2]).seconds();
      double got = m.layer(s[0], s[1], s[2], 1).fusedSeconds();
      assertTrue(Math.abs(got / want - 1) <= 0.15,
          "(" + s[1] + ", " + s[2] + "): predicted " + got * 1e3 + " ms, measured " + want * 1e3 + " ms");
    }
  }

  @Test
  void deviceBytesAtCp1MatchTheRunsMeasuredPeaks() throws IOException {
    for (SingleGpuRun.Row r : ours().values()) {
      double gib = CostModel.deviceBytesPerRank(r.batch(), r.n(), r.dim(), 1) / (double) (1L << 30);
      assertEquals(r.peakGib(), gib, 0.005 * r.peakGib(), "peak of (" + r.n() + ", " + r.dim() + ")");
    }
  }

  /** A hidden width of its own: the terms that carry a, b and z scale with H, the rest with D; H = D is the square model. */
  @Test
  void aHiddenWidthScalesTheTriangleAndTheReshardsAndOnlyHMustDivideByCp() {
    assertEquals(CostModel.flops(1, 512, 128), CostModel.flops(1, 512, 128, 128));
    // 2BN^3H + 10BN^2HD + 2BN^2D^2 at (1, 100, D = 384, H = 256)
    double n = 100;
    assertEquals(2 * n * n * n * 256 + 10 * n * n * 256 * 384 + 2 * n * n * 384 * 384, CostModel.flops(1, 100, 384, 256));
    assertEquals(CostModel.deviceBytesPerRank(1, 512, 128, 4), CostModel.deviceBytesPerRank(1, 512, 128, 128, 4));
    // a pair with D or H above 384 under CP also holds p (2BN^2D) between stage 3's two kernels; on
    // one GPU p sits in out or the workspace's a/b room; up to 384 stage 3 is one kernel
    assertEquals((long) Math.ceil((4.0 * 384 + 6.0 * 256) * 512 * 512 / 4), CostModel.deviceBytesPerRank(1, 512, 384, 256, 4));
    assertEquals((long) Math.ceil((6.0 * 448 + 6.0 * 256) * 512 * 512 / 4), CostModel.deviceBytesPerRank(1, 512, 448, 256, 4));
    assertEquals((long) Math.ceil((6.0 * 128 + 6.0 * 416) * 512 * 512 / 2), CostModel.deviceBytesPerRank(1, 512, 128, 416, 2));
    assertEquals((long) Math.ceil((4.0 * 512 + 6.0 * 512) * 512 * 512), CostModel.deviceBytesPerRank(1, 512, 512, 512, 1));
    assertEquals((long) Math.ceil((4.0 * 128 + 6.0 * 384) * 512 * 512 / 2), CostModel.deviceBytesPerRank(1, 512, 128, 384, 2));
    CostModel m = new CostModel(DeviceRates.h200());
    CostModel.Estimate e = m.layer(1, 2048, 24, 32, 8); // D = 24: 8 does not divide it, H = 32 it does
    assertEquals(CostModel.reshardBytesPerRank(1, 2048, 32, 8), e.reshardBytesPerRank());
    InvalidInputException bad = assertThrows(InvalidInputException.class, () -> m.layer(1, 2048, 32, 20, 8));
    assertTrue(bad.getMessage().contains("H = 20"), bad.getMessage());
    // no cp meets a target of 1 ns: the fastest that fits, among the cp that divide H = 12 (not 8)
    CpChooser c = new CpChooser(m, new int[] {1, 2, 4, 8}, Long.MAX_VALUE, 1e-9);
    assertEquals(4, c.choose("x", 1, 4096, 128, 12, 4).cp());
    assertEquals(8, c.choose("x", 1, 4096, 128, 4).cp(), "at H = D = 128, cp = 8 is the fastest");
  }

  @Test
  void reshardBytesAreTheCpPlansCount() {
    // per rank and layer: tokens/cp x (a and b) x D/cp channels x (cp - 1) peers x 2 bytes, and z half of it
    long n = 4096;
    long d = 256;
    int cp = 4;
    long tileTokens = n * n / cp;
    long toChannels = tileTokens * 2 * (d / cp) * (cp - 1) * 2;
    long toTokens = tileTokens * (d / cp) * (cp - 1) * 2;
    assertEquals(toChannels + toTokens, CostModel.reshardBytesPerRank(1, n, d, cp));
    assertEquals(0, CostModel.reshardBytesPerRank(1, n, d, 1));
  }

  @Test
  void fusedReshardsOverlapTheirStagesAndCpSplitsTheWork() throws IOException {
    CostModel m = calibrated(ours());
    CostModel.Estimate one = m.layer(1, 4096, 256, 1);
    assertEquals(one.computeSeconds(), one.fusedSeconds(), 1e-15);
    assertEquals(0, one.linkSeconds());
    CostModel.Estimate four = m.layer(1, 4096, 256, 4);
    assertEquals(one.computeSeconds() / 4, four.computeSeconds(), 1e-12);
    assertTrue(four.fusedSeconds() >= four.computeSeconds() && four.fusedSeconds() <= four.unfusedSeconds());
    assertEquals(four.computeSeconds() + four.linkSeconds(), four.unfusedSeconds(), 1e-12);
    assertEquals(one.deviceBytesPerRank() / 4, four.deviceBytesPerRank());
  }

  @Test
  void cpMustDivideD() throws IOException {
    CostModel m = calibrated(ours());
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> m.layer(1, 512, 96, 64));
    assertTrue(e.getMessage().contains("must divide D = 96"), e.getMessage());
  }

  @Test
  void calibrationRefusesShapesOfTheSameFlopsPerElement() {
    Measurement a = new Measurement(1, 1024, 128, 1e-3, "a");
    Measurement b = new Measurement(2, 1024, 128, 2e-3, "b");
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> DeviceRates.calibrate(a, b, 1e9, "l", 1L << 30, "m"));
    assertTrue(e.getMessage().contains("must differ in FLOPs per element"), e.getMessage());
  }
}
