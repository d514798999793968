package org.foldcp.ops.cpu;

import java.util.Arrays;
import java.util.Locale;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Measures the CPU backend's throughput (a benchmark, not a test): median wall time of one
 * layer forward after warm-up, and GFLOP/s by the BENCHMARKS.md count
 * 2 B N^3 D (triangle) + 12 B N^2 D^2 (projections).
 *
 * <p>Usage: {@code java --add-modules jdk.incubator.vector -cp operators/target/classes
 * org.foldcp.ops.cpu.CpuBenchmark [B N D] [iterations] [threads]}; defaults 1 256 128, 7, all cores.
 * Without the module the GEMM runs its scalar kernel (same results, slower); the first line says
 * which kernel ran.
 */
public final class CpuBenchmark {
  private CpuBenchmark() {}

  public static double flops(int b, int n, int d) {
    return 2.0 * b * n * (double) n * n * d + 2.0 * b * n * (double) n * d * 6 * d;
  }

  public static void main(String[] args) {
    int b = args.length >= 3 ? Integer.parseInt(args[0]) : 1;
    int n = args.length >= 3 ? Integer.parseInt(args[1]) : 256;
    int d = args.length >= 3 ? Integer.parseInt(args[2]) : 128;
    int iters = args.length >= 4 ? Integer.parseInt(args[3]) : 7;
    int threads = args.length >= 5 ? Integer.parseInt(args[4]) : Runtime.getRuntime().availableProcessors();
    PairTensor x = PairTensor.random(b, n, d, 42, 0.1);
    System.out.printf(Locale.ROOT, "CPU TriMul benchmark: (B, N, D) = (%d, %d, %d), %d threads, %s %s%n",
        b, n, d, threads, System.getProperty("java.vm.name"), System.getProperty("java.version"));
    System.out.println("GEMM kernel: " + Gemm.kernelName());
    try (CpuTriMul cpu = new CpuTriMul(threads)) {
      for (Direction dir : Direction.values()) {
        TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir, true), LayerWeights.random(d, 43, true));
        for (int w = 0; w < 2; w++) {
          cpu.forward(x, layer);
        }
        double[] ms = new double[iters];
        for (int it = 0; it < iters; it++) {
          long t0 = System.nanoTime();
          cpu.forward(x, layer);
          ms[it] = (System.nanoTime() - t0) / 1e6;
        }
        Arrays.sort(ms);
        double med = ms[iters / 2];
        System.out.printf(Locale.ROOT, "%-8s median %8.1f ms  (min %.1f, max %.1f, %d runs)  %6.1f GFLOP/s%n",
            dir.label(), med, ms[0], ms[iters - 1], iters, flops(b, n, d) / med / 1e6);
      }
    }
  }
}
