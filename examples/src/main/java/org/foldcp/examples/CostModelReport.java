package org.foldcp.examples;

import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import org.foldcp.ops.plan.CostModel;
import org.foldcp.ops.plan.DeviceRates;
import org.foldcp.ops.plan.SingleGpuRun;

/**
 * Prints the cost model's tables of docs/cost-model.md: calibrated on the smallest and the largest
 * shape of one single-GPU benchmark run, its cp = 1 predictions against the run's other shapes, and
 * its predictions per cp at a link rate the caller gives (GB/s per GPU and direction; cp = 16 is two
 * nodes of 8 GPUs, whose cross-node peers go at the second rate).
 *
 * <p>Usage: {@code CostModelReport RUN.csv LINK_GB_PER_S [CROSS_NODE_LINK_GB_PER_S]}, e.g.
 * {@code bench/results/2026-12-01-trimul-1gpu-tma-stores.csv 450 50}.
 */
public final class CostModelReport {
  private static final int[][] SHAPES = {{1, 1024, 128}, {1, 2048, 128}, {1, 2048, 256}, {1, 4096, 128}, {1, 4096, 256}};

  private CostModelReport() {}

  public static void main(String[] args) throws Exception {
    Path csv = Path.of(args[0]);
    double link = Double.parseDouble(args[1]) * 1e9;
    double crossNode = args.length > 2 ? Double.parseDouble(args[2]) * 1e9 : link;
    Map<String, SingleGpuRun.Row> run = SingleGpuRun.read(csv);
    DeviceRates rates = DeviceRates.calibrate(SingleGpuRun.measurement(run, csv, 1, 1024, 128),
        SingleGpuRun.measurement(run, csv, 1, 4096, 256), link, args[1] + " GB/s given", 141L << 30, "H200 141 GB");
    CostModel m = new CostModel(rates);
    System.out.printf(Locale.ROOT, "calibrated: %.1f TFLOP/s for the GEMMs, %.3f ns per pair value for the element-wise passes%n",
        rates.flopsPerSecond() / 1e12, rates.secondsPerElement() * 1e9);
    System.out.println("| (B, N, D) | measured ms | predicted ms | error | device GiB (model / measured) |");
    System.out.println("|---|---|---|---|---|");
    for (int[] s : SHAPES) {
      SingleGpuRun.Row r = run.get(s[0] + "," + s[1] + "," + s[2]);
      CostModel.Estimate e = m.layer(s[0], s[1], s[2], 1);
      System.out.printf(Locale.ROOT, "| (%d, %d, %d) | %.2f | %.2f | %+.1f %% | %.2f / %.2f |%n", s[0], s[1], s[2],
          r.seconds() * 1e3, e.fusedSeconds() * 1e3, 100 * (e.fusedSeconds() / r.seconds() - 1),
          e.deviceBytesPerRank() / (double) (1L << 30), r.peakGib());
    }
    System.out.println();
    System.out.println("| (B, N, D) | cp | link GB/s | compute ms | link ms | fused ms | unfused ms | speed-up (fused) | GiB per rank |");
    System.out.println("|---|---|---|---|---|---|---|---|---|");
    for (int[] s : SHAPES) {
      double one = m.layer(s[0], s[1], s[2], 1).fusedSeconds();
      for (int cp : new int[] {2, 4, 8, 16}) {
        // cp = 16 is two nodes of 8: 8 of a rank's 15 peers are on the other node, and its sends
        // to them (over the NIC) outlast those to the 7 local ones, so the whole reshard moves at
        // the NIC's rate scaled by 15 / 8
        double l = cp > 8 ? crossNode * (cp - 1) / (cp / 2.0) : link;
        CostModel mc = new CostModel(new DeviceRates(rates.flopsPerSecond(), rates.secondsPerElement(), l,
            rates.memoryBytes(), rates.source()));
        CostModel.Estimate e = mc.layer(s[0], s[1], s[2], cp);
        System.out.printf(Locale.ROOT, "| (%d, %d, %d) | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2f |%n",
            s[0], s[1], s[2], cp, l / 1e9, e.computeSeconds() * 1e3, e.linkSeconds() * 1e3, e.fusedSeconds() * 1e3,
            e.unfusedSeconds() * 1e3, one / e.fusedSeconds(), e.deviceBytesPerRank() / (double) (1L << 30));
      }
    }
  }
}
