package org.foldcp.examples.plots;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.foldcp.ops.InvalidInputException;
import org.jfree.data.category.DefaultCategoryDataset;

/**
 * Turns a benchmark results CSV (the format of docs/benchmarks.md, "Results files":
 * {@code date,commit,gpu,cp,grid,direction,B,N,D,arm,median_ms,peak_gib,status}, with {@code #}
 * comment lines) into ratio charts: for each peer arm, ours / peer median ms per shape and
 * direction, one PNG per peer ({@code ratio-vs-PEER.png}). It also prints the ratios as a table.
 * Rows whose status is not {@code ok} have no ratio; they are listed, not plotted.
 *
 * <pre>java -cp ... org.foldcp.examples.plots.BenchCharts bench/results/FILE.csv [--out DIR] [--ours ARM]</pre>
 */
public final class BenchCharts {
  static final List<String> COLUMNS = List.of(
      "date", "commit", "gpu", "cp", "grid", "direction", "B", "N", "D", "arm", "median_ms", "peak_gib", "status");

  private BenchCharts() {}

  /** One result row. */
  record Result(String gpu, int cp, String grid, String direction, int b, int n, int d, String arm,
      double medianMs, String status, int line) {
    /** The shape and parallelism this row was measured at; rows with equal keys are compared. */
    String shapeKey() {
      return cp == 1 ? "(" + b + ", " + n + ", " + d + ")" : "(" + b + ", " + n + ", " + d + ") cp=" + cp + " " + grid;
    }
  }

  /** One ratio: ours / peer at one shape and direction. */
  record Ratio(String peer, String shape, String direction, double ours, double peerMs, double ratio) {}

  public static void main(String[] args) {
    try {
      List<Path> written = run(args);
      if (written.isEmpty()) {
        System.exit(1);
      }
    } catch (InvalidInputException | UncheckedIOException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(2);
    }
  }

  static final String USAGE = String.join("\n",
      "BenchCharts: ratio charts (ours / peer median ms per shape and direction) from a bench results CSV.",
      "Usage: BenchCharts RESULTS.csv [--out DIR] [--ours ARM]",
      "  --out DIR    where the PNGs go (default: next to the CSV, in <csv name>-charts/)",
      "  --ours ARM   the arm that is ours (default ours)");

  /** Runs the command; returns the PNGs written (none when the file has no pair of arms to compare). */
  public static List<Path> run(String... args) {
    Path csv = null;
    Path out = null;
    String ours = "ours";
    for (int q = 0; q < args.length; q++) {
      String a = args[q];
      if (a.equals("--help") || a.equals("-h")) {
        System.out.println(USAGE);
        return List.of();
      } else if (a.equals("--out") || a.equals("--ours")) {
        InvalidInputException.require(q + 1 < args.length, "option " + a, "(no value)", "needs a value; see --help");
        if (a.equals("--out")) {
          out = Path.of(args[++q]);
        } else {
          ours = args[++q];
        }
      } else if (a.startsWith("--")) {
        throw InvalidInputException.of("option", a, "is not known; see --help");
      } else {
        InvalidInputException.require(csv == null, "argument", a, "only one results CSV is taken");
        csv = Path.of(a);
      }
    }
    InvalidInputException.require(csv != null, "results CSV", "(none)", "name a file, e.g. bench/results/2026-11-29-trimul-1gpu.csv");
    if (out == null) {
      String name = csv.getFileName().toString().replaceFirst("\\.csv$", "");
      Path parent = csv.toAbsolutePath().getParent();
      out = parent.resolve(name + "-charts");
    }
    List<Result> rows = read(csv);
    List<Ratio> ratios = ratios(rows, ours);
    System.out.println(table(ratios));
    for (Result r : rows) {
      if (!r.status().equals("ok")) {
        System.out.printf(Locale.ROOT, "not plotted: %s %s %s at %s (status %s, line %d)%n", r.arm(), r.direction(),
            r.gpu(), r.shapeKey(), r.status(), r.line());
      }
    }
    if (ratios.isEmpty()) {
      System.err.println("no ratio: the file has no shape where '" + ours + "' and another arm both ran ok");
      return List.of();
    }
    Set<String> gpus = new LinkedHashSet<>();
    for (Result r : rows) {
      gpus.add(r.gpu());
    }
    List<Path> written = new ArrayList<>();
    for (Map.Entry<String, DefaultCategoryDataset> e : datasets(ratios).entrySet()) {
      String peer = e.getKey();
      Path png = out.resolve("ratio-vs-" + peer.replaceAll("[^A-Za-z0-9_.-]", "_") + ".png");
      Charts.writePng(Charts.ratios(
          ours + " / " + peer + ": median time ratio per shape and direction",
          String.join(", ", gpus) + ", " + csv.getFileName() + "; below 1 = " + ours + " faster",
          ours + " ms / " + peer + " ms", e.getValue()), png);
      written.add(png);
      System.out.println("wrote " + png);
    }
    return written;
  }

  /** The rows of a results CSV; '#' lines are comments; the header must name the columns of docs/benchmarks.md. */
  static List<Result> read(Path csv) {
    List<String> lines;
    try {
      lines = Files.readAllLines(csv, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + csv + ": " + e.getMessage(), e);
    }
    Map<String, Integer> col = null;
    List<Result> out = new ArrayList<>();
    for (int ln = 0; ln < lines.size(); ln++) {
      String line = lines.get(ln).strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] f = line.split(",", -1);
      if (col == null) {
        col = new LinkedHashMap<>();
        for (int q = 0; q < f.length; q++) {
          col.put(f[q].strip(), q);
        }
        for (String need : COLUMNS) {
          InvalidInputException.require(col.containsKey(need), csv + ": header", line,
              "lacks column '" + need + "': a results file has the columns " + String.join(",", COLUMNS)
                  + " (BENCHMARKS.md)");
        }
        continue;
      }
      InvalidInputException.require(f.length >= col.size(), csv + " line " + (ln + 1), line,
          "has " + f.length + " fields; the header has " + col.size());
      try {
        String ms = f[col.get("median_ms")].strip();
        out.add(new Result(f[col.get("gpu")].strip(), Integer.parseInt(f[col.get("cp")].strip()),
            f[col.get("grid")].strip(), f[col.get("direction")].strip(), Integer.parseInt(f[col.get("B")].strip()),
            Integer.parseInt(f[col.get("N")].strip()), Integer.parseInt(f[col.get("D")].strip()),
            f[col.get("arm")].strip(), ms.isEmpty() ? Double.NaN : Double.parseDouble(ms),
            f[col.get("status")].strip(), ln + 1));
      } catch (NumberFormatException e) {
        throw InvalidInputException.of(csv + " line " + (ln + 1), line, "cp, B, N, D must be integers and median_ms a number");
      }
    }
    InvalidInputException.require(col != null, csv.toString(), "(no header)", "is empty: a results file starts with its header");
    return out;
  }

  /** ours / peer for every shape, direction and peer arm where both ran ok; a later row replaces an earlier one. */
  static List<Ratio> ratios(List<Result> rows, String ours) {
    Map<String, Result> best = new LinkedHashMap<>();
    for (Result r : rows) {
      if (r.status().equals("ok") && Double.isFinite(r.medianMs()) && r.medianMs() > 0) {
        best.put(r.gpu() + "|" + r.shapeKey() + "|" + r.direction() + "|" + r.arm(), r);
      }
    }
    List<Ratio> out = new ArrayList<>();
    for (Result r : best.values()) {
      if (r.arm().equals(ours)) {
        continue;
      }
      Result mine = best.get(r.gpu() + "|" + r.shapeKey() + "|" + r.direction() + "|" + ours);
      if (mine != null) {
        out.add(new Ratio(r.arm(), r.shapeKey(), r.direction(), mine.medianMs(), r.medianMs(),
            mine.medianMs() / r.medianMs()));
      }
    }
    return out;
  }

  /** One dataset per peer: series = direction, category = shape. */
  static Map<String, DefaultCategoryDataset> datasets(List<Ratio> ratios) {
    Map<String, DefaultCategoryDataset> out = new LinkedHashMap<>();
    // categories in first-seen order for every peer, so charts line up
    for (Ratio r : ratios) {
      out.computeIfAbsent(r.peer(), p -> new DefaultCategoryDataset()).addValue(r.ratio(), r.direction(), r.shape());
    }
    return out;
  }

  static String table(List<Ratio> ratios) {
    StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%-16s %-26s %-9s %10s %10s %8s%n",
        "peer", "shape (B, N, D)", "direction", "ours ms", "peer ms", "ratio"));
    for (Ratio r : ratios) {
      sb.append(String.format(Locale.ROOT, "%-16s %-26s %-9s %10.3f %10.3f %8.3f%n", r.peer(), r.shape(),
          r.direction(), r.ours(), r.peerMs(), r.ratio()));
    }
    return sb.toString().stripTrailing();
  }
}
