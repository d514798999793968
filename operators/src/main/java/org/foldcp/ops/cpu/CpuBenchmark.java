package org.foldcp.ops.cpu;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Measures the CPU backend's throughput (a benchmark, not a test): median wall time of one
 * layer forward after warm-up (at least 3 forwards and 2 s per direction), and GFLOP/s by the
 * docs/benchmarks.md count 2 B N^3 D (triangle) + 12 B N^2 D^2 (projections). In the same run it
 * measures the machine's
 * fp32 FMA peak (12 independent vector FMA chains per thread on every thread at once, native
 * kernels only) and, where python3 with numpy is found, the numpy TriMul peer
 * (numpy_trimul.py: the same layer in float32 on numpy's BLAS) with the same thread count.
 *
 * <p>Usage: {@code java -cp operators/target/classes org.foldcp.ops.cpu.CpuBenchmark
 * [B N D] [iterations] [threads]}; defaults 1 256 128, 7, all cores. {@code -Dfoldcp.cpu.kernels}
 * chooses the kernels ({@link CpuKernels}); the first lines say which ran.
 */
public final class CpuBenchmark {
  private CpuBenchmark() {}

  public static double flops(int b, int n, int d) {
    return 2.0 * b * n * (double) n * n * d + 2.0 * b * n * (double) n * d * 6 * d;
  }

  public static void main(String[] args) throws InterruptedException {
    int b = args.length >= 3 ? Integer.parseInt(args[0]) : 1;
    int n = args.length >= 3 ? Integer.parseInt(args[1]) : 256;
    int d = args.length >= 3 ? Integer.parseInt(args[2]) : 128;
    int iters = args.length >= 4 ? Integer.parseInt(args[3]) : 7;
    int threads = args.length >= 5 ? Integer.parseInt(args[4]) : Runtime.getRuntime().availableProcessors();
    double flops = flops(b, n, d);
    PairTensor x = PairTensor.random(b, n, d, 42, 0.1);
    CpuKernels kernels = CpuKernels.selected();
    System.out.printf(Locale.ROOT, "CPU TriMul benchmark: (B, N, D) = (%d, %d, %d), %d threads, %s %s%n",
        b, n, d, threads, System.getProperty("java.vm.name"), System.getProperty("java.version"));
    System.out.println("kernels: " + kernels.describe());
    double peak = fmaPeak(kernels, threads);
    if (peak > 0) {
      System.out.printf(Locale.ROOT, "FMA peak: %.1f GFLOP/s on %d threads (12 independent vector FMA chains per"
          + " thread, %s)%n", peak, threads, kernels.describe());
    } else {
      System.out.println("FMA peak: not measured (it needs the native kernels: "
          + (NativeKernels.unavailableReason() != null ? NativeKernels.unavailableReason() : "not selected") + ")");
    }
    Map<String, Double> ours = new HashMap<>();
    try (CpuTriMul cpu = new CpuTriMul(threads, kernels)) {
      for (Direction dir : Direction.values()) {
        TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir, true), LayerWeights.random(d, 43, true));
        // Warm-up: at least 3 forwards and 2 s, so that the JIT and the heap's growth (G1 sizes
        // the heap over the first few forwards, with pauses of 100-200 ms at N = 512) are done.
        long warm0 = System.nanoTime();
        for (int w = 0; w < 3 || System.nanoTime() - warm0 < 2_000_000_000L; w++) {
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
        double rate = flops / med / 1e6;
        ours.put(dir.label(), med);
        System.out.printf(Locale.ROOT, "%-8s median %8.1f ms  (min %.1f, max %.1f, %d runs)  %6.1f GFLOP/s%s%n",
            dir.label(), med, ms[0], ms[iters - 1], iters, rate,
            peak > 0 ? String.format(Locale.ROOT, "  (%.0f%% of the FMA peak %.1f)", 100 * rate / peak, peak) : "");
      }
    }
    numpyPeer(b, n, d, iters, threads, flops, ours);
  }

  /**
   * GFLOP/s of {@code threads} threads each running the native FMA-chain loop for about a second
   * at the same time (their sum), or 0 without native kernels.
   */
  static double fmaPeak(CpuKernels kernels, int threads) throws InterruptedException {
    if (!(kernels instanceof NativeKernels)) {
      return 0;
    }
    NativeKernels k = (NativeKernels) kernels;
    k.fmaRate(0.2); // warm the clocks up
    double[] rate = new double[threads];
    Thread[] ts = new Thread[threads];
    for (int t = 0; t < threads; t++) {
      final int q = t;
      ts[t] = new Thread(() -> rate[q] = k.fmaRate(1.0), "fma-peak-" + t);
      ts[t].start();
    }
    double sum = 0;
    for (int t = 0; t < threads; t++) {
      ts[t].join();
      sum += rate[t];
    }
    return sum;
  }

  /** Runs numpy_trimul.py with python3 where present and prints its lines beside ours. */
  static void numpyPeer(int b, int n, int d, int iters, int threads, double flops, Map<String, Double> ours) {
    Path script;
    try (InputStream in = CpuBenchmark.class.getResourceAsStream("numpy_trimul.py")) {
      if (in == null) {
        System.out.println("numpy peer: skipped (numpy_trimul.py is not on the class path)");
        return;
      }
      script = Files.createTempFile("numpy_trimul", ".py");
      Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      System.out.println("numpy peer: skipped (could not write the script: " + e + ")");
      return;
    }
    try {
      ProcessBuilder pb = new ProcessBuilder("python3", script.toString(), String.valueOf(b), String.valueOf(n),
          String.valueOf(d), String.valueOf(iters));
      pb.redirectErrorStream(true);
      String t = String.valueOf(threads);
      pb.environment().put("OPENBLAS_NUM_THREADS", t);
      pb.environment().put("OMP_NUM_THREADS", t);
      Process p;
      try {
        p = pb.start();
      } catch (IOException e) {
        System.out.println("numpy peer: skipped (no python3: " + e.getMessage() + ")");
        return;
      }
      List<String> lines = new ArrayList<>();
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          lines.add(line);
        }
      }
      if (!p.waitFor(30, TimeUnit.MINUTES) || p.exitValue() != 0) {
        String why = lines.isEmpty() ? "no output" : lines.get(lines.size() - 1);
        System.out.println("numpy peer: skipped (python3 failed: " + why + ")");
        return;
      }
      for (String line : lines) {
        String[] f = line.trim().split("\\s+");
        if (f.length < 4 || !f[0].equals("numpy")) {
          continue;
        }
        double med = Double.parseDouble(f[3]);
        Double mine = ours.get(f[1]);
        System.out.printf(Locale.ROOT, "numpy peer %-8s median %8.1f ms  (min %s, max %s)  %6.1f GFLOP/s%s%n",
            f[1], med, f[5], f[7], flops / med / 1e6,
            mine != null ? String.format(Locale.ROOT, "  (fold-cp is %.2fx faster)", med / mine) : "");
      }
    } catch (IOException | InterruptedException e) {
      System.out.println("numpy peer: skipped (" + e + ")");
    } finally {
      try {
        Files.deleteIfExists(script);
      } catch (IOException e) {
        script.toFile().deleteOnExit();
      }
    }
  }
}
