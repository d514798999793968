package org.foldcp.examples;

import static org.foldcp.examples.JobBenchArms.arm;
import static org.foldcp.examples.JobBenchArms.bareArm;
import static org.foldcp.examples.JobBenchArms.jobArm;
import static org.foldcp.examples.JobBenchArms.timed;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.examples.JobBenchArms.Arm;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.gpu.feed.FeedSettings;
import org.foldcp.ops.gpu.feed.HeapComplex;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.sql.FoldCpExtensions;
import org.foldcp.spark.sql.RowCachedBatchSerializer;

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
 *   <li>on a GPU, feed: the job's GPU data path without Spark ({@link JobBenchFeedArm}: a feed of
 *       the job's sizes driven by as many threads as the job has task slots);</li>
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
 *
 * <p>Its parts: {@link JobBenchSettings} (the options), {@link JobBenchInput} (the complexes and
 * their cached rows), {@link JobBenchArms} (the arms), {@link JobBenchReport} (the printed lines
 * and the CSV); this class makes the Spark session and takes the arms through their passes.
 */
public final class JobBenchmark {
  /** The task threads' stack sampling period during the job's passes, and the frames reported. */
  private static final long SAMPLE_MILLIS = 10;
  private static final int PROFILE_TOP = 12;

  private JobBenchmark() {}

  public static void main(String[] args) {
    JobBenchSettings s = JobBenchSettings.parse(args);
    LayerStack stack = LayerStack.randomAlternating(s.layers(), s.dim(), 7, true);
    System.out.printf(Locale.ROOT, "fold-cp job benchmark: %d complexes (1, %d, %d, %d), %d layers, backend %s,"
        + " %d slots, %d threads, %d repeats%n", s.complexes(), s.n(), s.n(), s.dim(), s.layers(), s.backend(),
        s.slots(), s.threads(), s.repeats());
    List<HeapComplex> complexes = new ArrayList<>();
    for (int c = 0; c < s.complexes(); c++) {
      complexes.add(JobBenchInput.complex(c, s.n(), s.dim()));
    }
    String device = s.gpu() ? "gpu" : "cpu " + Runtime.getRuntime().availableProcessors() + " cores";
    Map<String, double[]> passes = new LinkedHashMap<>();
    SparkSession spark = session(s);
    try (TriMulBackend backend = s.gpu() ? new GpuTriMul(0) : new CpuTriMul(s.threads());
         DeviceFloors floors = s.gpu() ? new DeviceFloors((GpuTriMul) backend, stack, complexes) : null;
         JobBenchFeedArm feedArm = s.gpu()
             ? new JobBenchFeedArm((GpuTriMul) backend, stack, complexes, s.slots(), feedSettings(s)) : null) {
      List<Arm> arms = new ArrayList<>();
      Dataset<Row> cached = JobBenchInput.cachedInput(spark, s);
      double cacheSeconds = timed(cached::count); // builds the cache (every column), untimed by the arms
      System.out.printf(Locale.ROOT, "input: %d complexes cached in %.2f s (made and copied into the cache)%n",
          s.complexes(), cacheSeconds);
      arms.add(jobArm(cached, stack));
      arms.add(arm("spark_scan", () -> timed(() -> cached.write().format("noop").mode("overwrite").save())));
      arms.add(bareArm(backend, stack, complexes));
      if (feedArm != null) {
        arms.add(arm("feed", feedArm::pass));
      }
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
      JobPhases phases = JobPhases.listenTo(spark.sparkContext());
      double lastJobPass = 0;
      try (TaskSampler sampler = new TaskSampler(SAMPLE_MILLIS)) {
        for (int r = 0; r < s.repeats(); r++) {
          for (int k = 0; k < arms.size(); k++) {
            Arm a = arms.get((k + r) % arms.size()); // rotated order per pass
            boolean job = a.name().equals("job");
            if (job) {
              metrics.reset();
              phases.passStarts();
              sampler.resume();
            }
            passes.get(a.name())[r] = a.pass();
            if (job) {
              phases.passEnds();
              sampler.pause();
              lastJobPass = passes.get(a.name())[r];
            }
          }
        }
        JobBenchReport.printJobMetrics(metrics.last(), lastJobPass, s.slots());
        System.out.println(phases.describe());
        sampler.report(PROFILE_TOP).forEach(System.out::println);
      }
    } finally {
      spark.stop();
    }
    JobBenchReport.report(s, device, args, passes);
  }

  /**
   * The sizes of the job's GPU feed (the executor's, and the feed arm's own; --conf may change the
   * executor's): three device slots per task, since each task keeps one complex uploading, one
   * computing and one downloading (SingleRankRows.FEED_DEPTH; fewer, and the tasks take turns in
   * lockstep waves); a span of the pinned pool per task for its output row (the download lands
   * there, no host copy) plus blocks to stream its uploads through, the setting's own advice; the
   * whole cached input in pinned memory, so that every pass uploads it with no host copy.
   */
  static FeedSettings feedSettings(JobBenchSettings s) {
    long row = 2L * s.n() * s.n() * s.dim() + (long) s.n() * s.n() + (1L << 20);
    long block = FeedSettings.DEFAULT_BLOCK_BYTES;
    long perTask = ((row + block - 1) / block + 4) * block;
    return new FeedSettings(s.slots() * perTask, block, 3 * s.slots(), FeedSettings.DEFAULT_COPY_THREADS,
        s.complexes() * row);
  }

  /**
   * The job's Spark session: local mode with --slots task slots, the input cached as rows; on a
   * GPU, the executor's GPU shared by the slots, pinned memory for each task's rows and for the
   * whole cached input. The --conf settings win over these.
   */
  private static SparkSession session(JobBenchSettings s) {
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
      FeedSettings f = feedSettings(s);
      conf.set(FoldCpConf.GPU_DEVICE_SLOTS.name(), Integer.toString(f.slots()));
      conf.set(FoldCpConf.GPU_PINNED_POOL_BYTES.name(), Long.toString(f.poolBytes()));
      conf.set(FoldCpConf.GPU_PINNED_CACHE_BYTES.name(), Long.toString(f.cacheBytes()));
    }
    s.conf().forEach(conf::set); // the caller's settings win; FoldCpConf validates them with the rest
    return SparkSession.builder().config(conf).getOrCreate();
  }
}
