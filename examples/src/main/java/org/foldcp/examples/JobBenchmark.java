package org.foldcp.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.gpu.feed.HeapComplex;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpExtensions;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.sql.RowCachedBatchSerializer;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The job's throughput against what the device allows (a benchmark, not a test;
 * docs/benchmarks.md, "The job against the device's floor"). The same complexes, made once as
 * bytes, go through the same layer stack in every arm:
 * <ul>
 *   <li>job: the Spark job in local mode, the forward stage alone (the complexes cached in Spark
 *       first, as rows of PairTiles.SCHEMA, with fold-cp's row cache: {@link RowCachedBatchSerializer},
 *       which on a GPU keeps them in the executor's pinned cache, sized here to hold them all unless
 *       {@code --conf spark.foldcp.gpu.pinnedCacheBytes=...} says otherwise; the output to Spark's
 *       no-op sink);</li>
 *   <li>bare: the backend's tensor forward in a loop in this JVM (GpuTriMul or CpuTriMul over
 *       PairTensors);</li>
 *   <li>on a GPU, the device's floors ({@link DeviceFloors}): compute_floor, copy_floor and
 *       overlapped_floor.</li>
 * </ul>
 * Each arm runs a warm-up, then {@code --repeats} timed passes over all complexes; the arms take
 * turns pass by pass, in an order that rotates, so that drift favours none. The CSV gets each arm's
 * median pass as complexes/s and its share of the overlapped floor. The plain PyTorch loops a
 * user would write (bench/job_peers.py) append their rows to the same CSV.
 *
 * <p>Usage: {@code JobBenchmark [--complexes 64] [--n 512] [--dim 128] [--layers 4]
 * [--backend cpu|gpu] [--slots 1] [--threads all cores] [--repeats 3] [--csv FILE] [--append]
 * [--commit SHA] [--conf spark.foldcp.KEY=VALUE ...]}. The job runs {@code --slots} tasks at once (on
 * a GPU they all borrow the executor's GPU and feed it together); the CPU bare loop uses
 * {@code --threads} threads. {@code --conf} (repeatable) sets a fold-cp key of the job's session
 * over the benchmark's own choice (e.g. spark.foldcp.gpu.copyThreads=4), to compare settings in
 * one call; the CSV's '#' line records it with the other arguments.
 */
public final class JobBenchmark {
  /** The CSV columns, after the bench/results convention of a leading '#' line naming the command. */
  static final String HEADER = "date,commit,device,backend,complexes,N,D,layers,slots,threads,arm,median_s,"
      + "complexes_per_s,share_of_overlapped_floor,status";

  /** The task threads' stack sampling period during the job's passes, and the frames reported. */
  private static final long SAMPLE_MILLIS = 10;
  private static final int PROFILE_TOP = 12;

  private JobBenchmark() {}

  /** The settings of one run, parsed from the command line. */
  record Settings(int complexes, int n, int dim, int layers, String backend, int slots, int threads, int repeats,
                  Path csv, boolean append, String commit, Map<String, String> conf) {
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
      boolean append = false;
      String commit = System.getenv().getOrDefault("FOLDCP_COMMIT", "unknown");
      Map<String, String> conf = new LinkedHashMap<>();
      for (int i = 0; i < args.length; i++) {
        String key = args[i];
        if (key.equals("--append")) {
          append = true;
          continue;
        }
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
          case "--conf" -> {
            int eq = v.indexOf('=');
            InvalidInputException.require(eq > 0 && v.startsWith(FoldCpConf.PREFIX), "--conf", v,
                "must be " + FoldCpConf.PREFIX + "KEY=VALUE");
            conf.put(v.substring(0, eq), v.substring(eq + 1));
          }
          default -> throw InvalidInputException.of("option", key, "must be one of --complexes, --n, --dim, --layers,"
              + " --backend, --slots, --threads, --repeats, --csv, --append, --commit, --conf");
        }
      }
      InvalidInputException.require(backend.equals("cpu") || backend.equals("gpu"), "--backend", backend,
          "must be cpu or gpu");
      InvalidInputException.require(threads >= slots, "--threads", threads,
          "must be >= --slots = " + slots + " (each task gets threads / slots CPU threads)");
      return new Settings(complexes, n, dim, layers, backend, slots, threads, repeats, csv, append, commit,
          Map.copyOf(conf));
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
   * Complex {@code c} of the run as bytes: values uniform in [-1.7, 1.7) (about unit variance),
   * 10% of the pairs masked, one SplittableRandom per row, rows made in parallel. The forward does
   * not care which distribution its inputs come from, and making Gaussians per value took longer
   * than folding them.
   */
  static HeapComplex complex(int c, int n, int dim) {
    byte[] pair = new byte[Math.toIntExact(2L * n * n * dim)];
    byte[] mask = new byte[n * n];
    IntStream.range(0, n).parallel().forEach(i -> {
      SplittableRandom rng = new SplittableRandom(1_000_003L * (1000L + c) + i);
      ByteBuffer row = ByteBuffer.wrap(pair, i * n * dim * 2, n * dim * 2).order(ByteOrder.LITTLE_ENDIAN);
      for (int q = 0; q < n * dim; q++) {
        row.putShort(Bf16.fromFloat((float) (rng.nextDouble() * 3.4 - 1.7)));
      }
      for (int j = 0; j < n; j++) {
        mask[i * n + j] = rng.nextDouble() < 0.1 ? (byte) 0 : (byte) 1;
      }
    });
    return new HeapComplex(1, n, dim, pair, mask);
  }

  /** One arm: a warm-up, then a timed pass over all complexes per call of {@link #pass}. */
  private interface Arm {
    String name();

    double pass(); // seconds for all complexes
  }

  public static void main(String[] args) {
    Settings s = Settings.parse(args);
    LayerStack stack = LayerStack.randomAlternating(s.layers(), s.dim(), 7, true);
    System.out.printf(Locale.ROOT, "fold-cp job benchmark: %d complexes (1, %d, %d, %d), %d layers, backend %s,"
        + " %d slots, %d threads, %d repeats%n", s.complexes(), s.n(), s.n(), s.dim(), s.layers(), s.backend(),
        s.slots(), s.threads(), s.repeats());
    List<HeapComplex> complexes = new ArrayList<>();
    for (int c = 0; c < s.complexes(); c++) {
      complexes.add(complex(c, s.n(), s.dim()));
    }
    String device = s.gpu() ? "gpu" : "cpu " + Runtime.getRuntime().availableProcessors() + " cores";
    Map<String, double[]> passes = new LinkedHashMap<>();
    SparkSession spark = session(s);
    try (TriMulBackend backend = s.gpu() ? new GpuTriMul(0) : new CpuTriMul(s.threads());
         DeviceFloors floors = s.gpu() ? new DeviceFloors((GpuTriMul) backend, stack, complexes) : null) {
      List<Arm> arms = new ArrayList<>();
      Dataset<Row> cached = cachedInput(spark, s);
      double cacheSeconds = timed(cached::count); // builds the cache (every column), untimed by the arms
      System.out.printf(Locale.ROOT, "input: %d complexes cached in %.2f s (made and copied into the cache)%n",
          s.complexes(), cacheSeconds);
      arms.add(jobArm(cached, stack));
      arms.add(arm("spark_scan", () -> timed(() -> cached.write().format("noop").mode("overwrite").save())));
      arms.add(bareArm(backend, stack, complexes));
      if (floors != null) {
        int count = s.complexes();
        arms.add(arm("compute_floor", () -> floors.compute(count)));
        arms.add(arm("copy_floor", () -> floors.copies(count)));
        arms.add(arm("overlapped_floor", () -> floors.overlapped(count)));
        device = "gpu " + spark.sparkContext().resources().get("gpu").map(r -> String.join("+", r.addresses()))
            .getOrElse(() -> "0");
      }
      for (Arm a : arms) {
        a.pass(); // warm-up: JIT, layer uploads, the Spark cache, the executor's GPU feed
        passes.put(a.name(), new double[s.repeats()]);
      }
      JobMetrics metrics = JobMetrics.listenTo(spark);
      double lastJobPass = 0;
      try (TaskSampler sampler = new TaskSampler(SAMPLE_MILLIS)) {
        for (int r = 0; r < s.repeats(); r++) {
          for (int k = 0; k < arms.size(); k++) {
            Arm a = arms.get((k + r) % arms.size()); // rotated order per pass
            boolean job = a.name().equals("job");
            if (job) {
              metrics.reset();
              sampler.resume();
            }
            passes.get(a.name())[r] = a.pass();
            if (job) {
              sampler.pause();
              lastJobPass = passes.get(a.name())[r];
            }
          }
        }
        printJobMetrics(metrics.last(), lastJobPass, s.slots());
        sampler.report(PROFILE_TOP).forEach(System.out::println);
      }
    } finally {
      spark.stop();
    }
    report(s, device, args, passes);
  }

  /**
   * Where the job's last pass went, from the operator's SQL metrics (summed over its tasks) beside
   * the pass's wall time times its task slots: the tasks' time in the operator (opTime), the GPU
   * time of the complexes' kernels (gpuBusyTime: the GPU's share of the wall time), and the tasks'
   * waits for pinned blocks, device slots and copies (copyWaitTime).
   */
  private static void printJobMetrics(Map<String, Long> m, double wallSeconds, int slots) {
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

  private static Arm arm(String name, java.util.function.DoubleSupplier pass) {
    return new Arm() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public double pass() {
        return pass.getAsDouble();
      }
    };
  }

  /**
   * The backend's tensor forward per complex, the forwards alone timed (each tensor is made from
   * the complex's bytes just before its forward, outside the timing, so that the arm holds one
   * tensor at a time).
   */
  private static Arm bareArm(TriMulBackend backend, LayerStack stack, List<HeapComplex> complexes) {
    return arm("bare", () -> {
      long nanos = 0;
      for (HeapComplex c : complexes) {
        PairTensor x = c.tensorOf(c.pair());
        long t0 = System.nanoTime();
        backend.forward(x, stack);
        nanos += System.nanoTime() - t0;
      }
      return nanos / 1e9;
    });
  }

  private static SparkSession session(Settings s) {
    SparkConf conf = new SparkConf()
        .setMaster("local[" + s.slots() + "]")
        .setAppName("fold-cp job benchmark")
        .set("spark.sql.extensions", FoldCpExtensions.class.getName())
        .set("spark.ui.enabled", "false")
        // the input cached as rows (RowCachedBatchSerializer), not in Spark's columnar cache,
        // which copies every binary value twice and allocates it anew on each read
        .set("spark.sql.cache.serializer", RowCachedBatchSerializer.class.getName())
        .set("spark.foldcp.route", s.backend())
        .set(FoldCpConf.METRICS_LEVEL.name(), "moderate") // gpuBusyTime, copyWaitTime: no wait added
        .set("spark.foldcp.cpu.threads", Integer.toString(Math.max(1, s.threads() / s.slots())));
    if (s.gpu()) {
      TriMulJob.localGpu(conf);
      conf.set(FoldCpConf.GPU_CONCURRENT_TASKS.name(), Integer.toString(s.slots()));
      // three device slots per task: each task keeps one complex uploading, one computing and one
      // downloading (SingleRankRows.FEED_DEPTH); fewer, and the tasks take turns in lockstep waves
      conf.set(FoldCpConf.GPU_DEVICE_SLOTS.name(), Integer.toString(3 * s.slots()));
      // a span of the pinned pool per task for its output row (the download lands there, no host
      // copy) plus blocks to stream its uploads through: the setting's own advice
      long row = 2L * s.n() * s.n() * s.dim() + (long) s.n() * s.n() + (1L << 20);
      long block = 16L << 20;
      long perTask = ((row + block - 1) / block + 4) * block;
      conf.set(FoldCpConf.GPU_PINNED_POOL_BYTES.name(), Long.toString(s.slots() * perTask));
      // the cached input in pinned memory, all of it: every pass uploads it with no host copy
      conf.set(FoldCpConf.GPU_PINNED_CACHE_BYTES.name(), Long.toString(s.complexes() * row));
    }
    s.conf().forEach(conf::set); // the caller's settings win; FoldCpConf validates them with the rest
    return SparkSession.builder().config(conf).getOrCreate();
  }

  /**
   * The complexes as whole-complex pair-tile rows, cached in Spark (slots partitions); the cache is
   * built by the first arm's warm-up pass.
   */
  private static Dataset<Row> cachedInput(SparkSession spark, Settings s) {
    int n = s.n();
    int dim = s.dim();
    return spark.range(0, s.complexes(), 1, Math.min(s.complexes(), s.slots()))
        .map((MapFunction<Long, Row>) c -> {
          HeapComplex x = complex(c.intValue(), n, dim);
          return RowFactory.create("c" + c, n, 0, 0, n, n, dim, x.pair(), x.mask());
        }, Encoders.row(PairTiles.SCHEMA))
        .persist(StorageLevel.MEMORY_ONLY());
  }

  /**
   * The Spark job's forward stage: the cached complexes through FoldCp.apply into the no-op sink.
   * Its neighbour arm spark_scan sends the same cached rows to the same sink without fold-cp: what
   * a pass of Spark itself costs (the stage, its tasks, reading the cache), beside which the job's
   * own share can be read.
   */
  private static Arm jobArm(Dataset<Row> in, LayerStack stack) {
    return arm("job", () -> timed(() -> FoldCp.apply(in, stack, FoldCpOptions.fromConf()).write().format("noop")
        .mode("overwrite").save()));
  }

  private static double timed(Runnable body) {
    long t0 = System.nanoTime();
    body.run();
    return (System.nanoTime() - t0) / 1e9;
  }

  private static double median(double[] xs) {
    double[] sorted = xs.clone();
    Arrays.sort(sorted);
    return sorted[sorted.length / 2];
  }

  private static void report(Settings s, String device, String[] args, Map<String, double[]> passes) {
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
