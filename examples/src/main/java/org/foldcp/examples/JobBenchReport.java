package org.foldcp.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@link JobBenchmark} prints and writes: the operator's metrics of the job's last pass, and
 * per arm its median pass as a printed line and a CSV row.
 */
final class JobBenchReport {
  /** The CSV columns, after the bench/results convention of a leading '#' line naming the command. */
  static final String HEADER = "date,commit,device,backend,complexes,N,D,layers,slots,threads,arm,median_s,"
      + "complexes_per_s,share_of_overlapped_floor,status";

  private JobBenchReport() {}

  /**
   * Where the job's last pass went, from the operator's SQL metrics (summed over its tasks) beside
   * the pass's wall time times its task slots: the tasks' time in the operator (opTime), the GPU
   * time of the complexes' kernels (gpuBusyTime: the GPU's share of the wall time), and the tasks'
   * waits for pinned blocks, device slots and copies (copyWaitTime).
   */
  static void printJobMetrics(Map<String, Long> m, double wallSeconds, int slots) {
    if (m.isEmpty()) {
      System.out.println("job metrics: none caught");
      return;
    }
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT,
        "job metrics, last pass (wall %.3f s, %d task slots = %.3f task-s):", wallSeconds, slots, wallSeconds * slots));
    for (String k : List.of("opTime", "gpuBusyTime", "copyWaitTime", "hostCopyTime")) {
      Long nanos = m.get(k);
      if (nanos != null) {
        b.append(String.format(Locale.ROOT, " %s %.3f s", k, nanos / 1e9));
      }
    }
    if (m.get("gpuBusyTime") != null && wallSeconds > 0) {
      b.append(String.format(Locale.ROOT, "; GPU busy %.0f%% of the wall time", 100 * m.get("gpuBusyTime") / 1e9 / wallSeconds));
    }
    Long copy = m.get("hostCopyTime");
    Long in = m.get("bytesIn");
    Long inPlace = m.get("bytesInPlace");
    if (in != null && inPlace != null) {
      b.append(String.format(Locale.ROOT, "; input %.2f GB, %.2f GB of it uploaded from the pinned row cache (no host"
          + " copy)", in / 1e9, inPlace / 1e9));
    }
    if (copy != null && in != null && copy > 0) {
      // the rate of one copying thread, and how many threads' worth were copying on average
      long copied = in - (inPlace == null ? 0 : inPlace);
      b.append(String.format(Locale.ROOT, "; host copies %.2f GB in, %.1f GB/s per copying thread, %.1f threads"
          + " copying on average", copied / 1e9, copied / (double) copy, copy / 1e9 / wallSeconds));
    }
    System.out.println(b);
  }

  private static double median(double[] xs) {
    double[] sorted = xs.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  /**
   * Per arm, its median pass as complexes/s (and as a share of the overlapped floor where there is
   * one): a printed line, and a CSV row for --csv, under the '#' line and HEADER unless --append
   * adds to an existing file.
   */
  static void report(JobBenchSettings s, String device, String[] args, Map<String, double[]> passes) {
    Double floor = passes.containsKey("overlapped_floor") ? s.complexes() / median(passes.get("overlapped_floor")) : null;
    String common = String.join(",", LocalDate.now().toString(), s.commit(), device.replace(',', ' '), s.backend(),
        Integer.toString(s.complexes()), Integer.toString(s.n()), Integer.toString(s.dim()),
        Integer.toString(s.layers()), Integer.toString(s.slots()), Integer.toString(s.threads()));
    List<String> lines = new ArrayList<>();
    if (!s.append() || s.csv() == null || !Files.exists(s.csv())) {
      lines.add("# JobBenchmark " + String.join(" ", args) + " (median of " + s.repeats() + " passes per arm, arms"
          + " rotated per pass; job = the forward stage over input cached in Spark (RowCachedBatchSerializer; on a"
          + " GPU in the executor's pinned cache unless --conf says otherwise), to the noop sink; bare = the"
          + " backend's tensor forward in one JVM; floors = DeviceFloors on the same complexes)");
      lines.add(HEADER);
    }
    for (Map.Entry<String, double[]> e : passes.entrySet()) {
      double med = median(e.getValue());
      double rate = s.complexes() / med;
      String share = floor == null ? "" : String.format(Locale.ROOT, "%.3f", rate / floor);
      lines.add(common + String.format(Locale.ROOT, ",%s,%.4f,%.3f,%s,ok", e.getKey(), med, rate, share));
      System.out.printf(Locale.ROOT, "%-17s N=%-5d %8.3f s  %9.2f complexes/s%s%n", e.getKey(), s.n(), med, rate,
          floor == null ? "" : String.format(Locale.ROOT, "  (%.1f%% of the overlapped floor)", 100 * rate / floor));
    }
    if (s.csv() != null) {
      try {
        if (s.csv().getParent() != null) {
          Files.createDirectories(s.csv().getParent());
        }
        Files.write(s.csv(), lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
            s.append() ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING);
      } catch (IOException e) {
        throw new UncheckedIOException("writing " + s.csv(), e);
      }
      System.out.println("wrote " + s.csv());
    }
  }
}
