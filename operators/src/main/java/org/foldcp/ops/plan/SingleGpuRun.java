package org.foldcp.ops.plan;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Our arm's rows of one single-GPU benchmark run (bench/torch_peers.py's CSV: date, commit, gpu, cp,
 * grid, direction, B, N, D, arm, median_ms, peak_gib, status): per shape, the mean of the outgoing
 * and incoming medians and the measured peak device memory. The cost model is calibrated on such
 * a run and checked against the rest of it.
 */
public final class SingleGpuRun {
  /** One shape of the run. */
  public record Row(int batch, int n, int dim, double seconds, double peakGib) {}

  private SingleGpuRun() {}

  /** The rows of arm "ours" with status ok, by shape, in the file's order. */
  public static Map<String, Row> read(Path csv) throws IOException {
    Map<String, double[]> sums = new LinkedHashMap<>();
    for (String line : Files.readAllLines(csv)) {
      String[] f = line.split(",");
      if (f.length < 13 || !f[9].equals("ours") || !f[12].trim().equals("ok")) {
        continue;
      }
      double[] s = sums.computeIfAbsent(f[6] + "," + f[7] + "," + f[8], k -> new double[3]);
      s[0] += Double.parseDouble(f[10]) / 1e3;
      s[1] = Double.parseDouble(f[11]);
      s[2] += 1;
    }
    Map<String, Row> rows = new LinkedHashMap<>();
    sums.forEach((k, s) -> {
      String[] p = k.split(",");
      rows.put(k, new Row(Integer.parseInt(p[0]), Integer.parseInt(p[1]), Integer.parseInt(p[2]), s[0] / s[2], s[1]));
    });
    return rows;
  }

  /** Row {@code (b, n, d)} of the run as a measurement naming the file. */
  public static Measurement measurement(Map<String, Row> run, Path csv, int b, int n, int d) {
    Row r = run.get(b + "," + n + "," + d);
    if (r == null) {
      throw new IllegalArgumentException("no row (" + b + ", " + n + ", " + d + ") of arm ours in " + csv);
    }
    return new Measurement(b, n, d, r.seconds(), csv.getFileName() + " (" + b + ", " + n + ", " + d + ")");
  }
}
