package org.foldcp.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpExtensions;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The job's throughput beside its backend's (a benchmark, not a test): the same complexes
 * through the same layer stack, once as a Spark job in local mode (the forward stage alone: the
 * input is generated and cached in Spark first, the output goes to Spark's no-op sink) and once
 * as a bare loop over the backend in this JVM (on the CPU: CpuTriMul; on a GPU: GpuTriMul, our
 * JNI forward through pinned host staging: upload, kernels, download). Each arm runs one warm-up
 * complex, then {@code --repeats} timed passes over all complexes; the CSV gets the median pass
 * of each arm as complexes/s, and the job's share of the bare loop's.
 *
 * <p>Usage: {@code JobBenchmark [--complexes 64] [--n 512] [--dim 128] [--layers 4]
 * [--backend cpu|gpu] [--slots 1] [--threads all cores] [--repeats 3] [--csv FILE]
 * [--commit SHA]}. The bare loop uses {@code --threads} CPU threads; the job runs
 * {@code --slots} tasks at once, each with {@code threads / slots} CPU threads, so both use the
 * same cores. On a GPU both arms use the one GPU: the job's {@code --slots} tasks all borrow the
 * executor's GPU ({@code spark.foldcp.gpu.concurrentTasks} = slots), so one task's row decoding
 * and encoding on the CPU overlap another's forward on the GPU (the forwards themselves take
 * turns); the bare loop is one thread.
 */
public final class JobBenchmark {
  /** The CSV columns, after the bench/results convention of a leading '#' line naming the command. */
  static final String HEADER = "date,commit,device,backend,complexes,N,D,layers,slots,threads,arm,median_s,"
      + "complexes_per_s,job_over_bare,status";

  private JobBenchmark() {}

  /** The settings of one run, parsed from the command line. */
  record Settings(int complexes, int n, int dim, int layers, String backend, int slots, int threads, int repeats,
                  Path csv, String commit) {
    static Settings parse(String[] args) {
      int complexes = 64;
      int n = 512;
      int dim = 128;
      int layers = 4;
      String backend = "cpu";
      int slots = 1;
      int threads = Runtime.getRuntime().availableProcessors();
      int repeats = 3;
      Path csv = null;
      String commit = System.getenv().getOrDefault("FOLDCP_COMMIT", "unknown");
      for (int i = 0; i < args.length; i++) {
        String key = args[i];
        InvalidInputException.require(i + 1 < args.length, key, "(no value)", "every option takes a value");
        String v = args[++i];
        switch (key) {
          case "--complexes" -> complexes = atLeast1(key, v);
          case "--n" -> n = atLeast1(key, v);
          case "--dim" -> dim = atLeast1(key, v);
          case "--layers" -> layers = atLeast1(key, v);
          case "--backend" -> backend = v.toLowerCase(Locale.ROOT);
          case "--slots" -> slots = atLeast1(key, v);
          case "--threads" -> threads = atLeast1(key, v);
          case "--repeats" -> repeats = atLeast1(key, v);
          case "--csv" -> csv = Path.of(v);
          case "--commit" -> commit = v;
          default -> throw InvalidInputException.of("option", key, "must be one of --complexes, --n, --dim, --layers,"
              + " --backend, --slots, --threads, --repeats, --csv, --commit");
        }
      }
      InvalidInputException.require(backend.equals("cpu") || backend.equals("gpu"), "--backend", backend,
          "must be cpu or gpu");
      InvalidInputException.require(threads >= slots, "--threads", threads,
          "must be >= --slots = " + slots + " (each task gets threads / slots CPU threads)");
      return new Settings(complexes, n, dim, layers, backend, slots, threads, repeats, csv, commit);
    }

    private static int atLeast1(String key, String v) {
      try {
        int x = Integer.parseInt(v.trim());
        InvalidInputException.require(x >= 1, key, x, "must be an integer >= 1");
        return x;
      } catch (NumberFormatException e) {
        throw InvalidInputException.of(key, "'" + v + "'", "must be an integer >= 1");
      }
    }

    boolean gpu() {
      return backend.equals("gpu");
    }
  }

  /**
   * Complex {@code c} of the run: the same values in the job and in the bare loop. Values uniform
   * in [-1.7, 1.7) (about unit variance), 10% of the pairs masked, one SplittableRandom per row,
   * rows filled in parallel. The Gaussians of PairTensor.random (log, sqrt and cos per value) took
   * about a second per (1, 512, 128) complex, so making the inputs, not folding them, was most of
   * this benchmark's time on the H200 (its first run there timed out); the forward does not care
   * which distribution its inputs come from.
   */
  static PairTensor complex(int c, int n, int dim) {
    short[][] rows = new short[n][];
    byte[][] mask = new byte[n][];
    IntStream.range(0, n).parallel().forEach(i -> {
      SplittableRandom rng = new SplittableRandom(1_000_003L * (1000L + c) + i);
      short[] row = new short[n * dim];
      for (int q = 0; q < row.length; q++) {
        row[q] = Bf16.fromFloat((float) (rng.nextDouble() * 3.4 - 1.7));
      }
      byte[] m = new byte[n];
      for (int j = 0; j < n; j++) {
        m[j] = rng.nextDouble() < 0.1 ? (byte) 0 : (byte) 1;
      }
      rows[i] = row;
      mask[i] = m;
    });
    return PairTensor.wrap(1, n, n, dim, rows, mask);
  }

  public static void main(String[] args) {
    Settings s = Settings.parse(args);
    LayerStack stack = LayerStack.randomAlternating(s.layers(), s.dim(), 7, true);
    String device = s.gpu() ? "gpu" : "cpu " + Runtime.getRuntime().availableProcessors() + " cores";
    System.out.printf(Locale.ROOT, "fold-cp job benchmark: %d complexes (1, %d, %d), %d layers, backend %s, %d slots,"
        + " %d threads, %d repeats%n", s.complexes(), s.n(), s.dim(), s.layers(), s.backend(), s.slots(), s.threads(),
        s.repeats());
    double bare = median(bareLoop(s, stack));
    double job;
    SparkSession spark = session(s);
    try {
      job = median(sparkJob(spark, s, stack));
      if (s.gpu()) {
        device = "gpu " + spark.sparkContext().resources().get("gpu").map(r -> String.join("+", r.addresses()))
            .getOrElse(() -> "?");
      }
    } finally {
      spark.stop();
    }
    double bareRate = s.complexes() / bare;
    double jobRate = s.complexes() / job;
    System.out.printf(Locale.ROOT, "bare %s loop  %8.3f s  %8.2f complexes/s%n", s.backend(), bare, bareRate);
    System.out.printf(Locale.ROOT, "spark job      %8.3f s  %8.2f complexes/s  (%.1f%% of the bare loop)%n", job,
        jobRate, 100 * jobRate / bareRate);
    if (s.csv() != null) {
      writeCsv(s, device, args, bare, job);
    }
  }

  /** Seconds of each timed pass of the bare backend over all complexes (inputs made outside the timing). */
  private static double[] bareLoop(Settings s, LayerStack stack) {
    try (TriMulBackend backend = s.gpu() ? new GpuTriMul(0) : new CpuTriMul(s.threads())) {
      backend.forward(complex(0, s.n(), s.dim()), stack); // warm-up: JIT, and on a GPU the layers' upload
      double[] passes = new double[s.repeats()];
      for (int r = 0; r < s.repeats(); r++) {
        long nanos = 0;
        for (int c = 0; c < s.complexes(); c++) {
          PairTensor x = complex(c, s.n(), s.dim());
          long t0 = System.nanoTime();
          backend.forward(x, stack);
          nanos += System.nanoTime() - t0;
        }
        passes[r] = nanos / 1e9;
      }
      return passes;
    }
  }

  private static SparkSession session(Settings s) {
    SparkConf conf = new SparkConf()
        .setMaster("local[" + s.slots() + "]")
        .setAppName("fold-cp job benchmark")
        .set("spark.sql.extensions", FoldCpExtensions.class.getName())
        .set("spark.ui.enabled", "false")
        .set("spark.foldcp.route", s.backend())
        .set("spark.foldcp.cpu.threads", Integer.toString(Math.max(1, s.threads() / s.slots())));
    if (s.gpu()) {
      TriMulJob.localGpu(conf);
      conf.set(FoldCpConf.GPU_CONCURRENT_TASKS.name(), Integer.toString(s.slots()));
    }
    return SparkSession.builder().config(conf).getOrCreate();
  }

  /**
   * Seconds of each timed pass of the Spark job's forward stage: the complexes, generated in
   * Spark and cached there beforehand (slots partitions), through FoldCp.apply into the no-op sink.
   */
  private static double[] sparkJob(SparkSession spark, Settings s, LayerStack stack) {
    Dataset<Row> warm = tiles(spark, 1, s);
    FoldCp.apply(warm, stack, FoldCpOptions.fromConf()).write().format("noop").mode("overwrite").save();
    Dataset<Row> in = tiles(spark, s.complexes(), s).persist(StorageLevel.MEMORY_ONLY());
    long cached = in.count();
    InvalidInputException.require(cached == s.complexes(), "cached complexes", cached, "must be " + s.complexes());
    double[] passes = new double[s.repeats()];
    for (int r = 0; r < s.repeats(); r++) {
      long t0 = System.nanoTime();
      FoldCp.apply(in, stack, FoldCpOptions.fromConf()).write().format("noop").mode("overwrite").save();
      passes[r] = (System.nanoTime() - t0) / 1e9;
    }
    in.unpersist(true);
    return passes;
  }

  private static Dataset<Row> tiles(SparkSession spark, int count, Settings s) {
    int n = s.n();
    int dim = s.dim();
    return spark.range(0, count, 1, Math.min(count, s.slots()))
        .map((MapFunction<Long, Row>) c -> PairTiles.toRow("c" + c, n, 0, 0, complex(c.intValue(), n, dim), 0),
            Encoders.row(PairTiles.SCHEMA));
  }

  private static double median(double[] xs) {
    double[] sorted = xs.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static void writeCsv(Settings s, String device, String[] args, double bare, double job) {
    String common = String.join(",", LocalDate.now().toString(), s.commit(), device.replace(',', ' '), s.backend(),
        Integer.toString(s.complexes()), Integer.toString(s.n()), Integer.toString(s.dim()),
        Integer.toString(s.layers()), Integer.toString(s.slots()), Integer.toString(s.threads()));
    double ratio = bare / job;
    List<String> lines = new ArrayList<>();
    lines.add("# JobBenchmark " + String.join(" ", args) + " (median of " + s.repeats() + " passes per arm;"
        + " job = the forward stage over input cached in Spark, to the noop sink; bare = the backend's forward"
        + " loop in one JVM)");
    lines.add(HEADER);
    lines.add(common + String.format(Locale.ROOT, ",bare,%.4f,%.3f,,ok", bare, s.complexes() / bare));
    lines.add(common + String.format(Locale.ROOT, ",job,%.4f,%.3f,%.3f,ok", job, s.complexes() / job, ratio));
    try {
      if (s.csv().getParent() != null) {
        Files.createDirectories(s.csv().getParent());
      }
      Files.write(s.csv(), lines, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + s.csv(), e);
    }
    System.out.println("wrote " + s.csv());
  }
}
