package org.foldcp.examples;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.storage.StorageLevel;
import org.foldcp.ops.gpu.ScanResult;
import org.foldcp.ops.gpu.GpuAvailability;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.MemoryLeakCheck;
import org.foldcp.ops.gpu.NativeTriMul;
import org.foldcp.ops.gpu.feed.HeapComplex;
import org.foldcp.ops.gpu.feed.PinnedCache;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpExtensions;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.sql.RowCachedBatchSerializer;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The GPU feed through the Spark job, checked on a GPU (bin/gpu-spark-run runs it; it needs the
 * device and Spark, so it is a program, not a CI test): 200 complexes of mixed N (16 to 400, the
 * largest bigger than the whole pinned pool of 32 MiB) through three tasks that feed one GPU at
 * once; every output equals, byte for byte (SHA-256 of the pair bytes), the decoding path's output
 * of the same complex (metrics level debug runs it); a second pass leaves the pinned memory where
 * the first left it, and the device memory the feed takes stays within its slots' and workspace's
 * bound. The input is cached with {@link RowCachedBatchSerializer}, so its rows lie in the
 * executor's pinned cache (the passes upload them from there): the cache holds them all, and gives
 * its memory back once the input is unpersisted. Prints PASS or FAIL lines; exits 1 on any FAIL.
 */
final class FeedCheck {
  private static final int COMPLEXES = 200;
  private static final int DIM = 128;
  private static final int[] NS = {16, 40, 96, 150, 230};
  private static final int LARGE_N = 400; // 41 MB of bf16: larger than the 32 MiB pool

  private FeedCheck() {}

  static int nOf(int c) {
    return c % 25 == 24 ? LARGE_N : NS[c % NS.length];
  }

  public static void main(String[] args) throws InterruptedException {
    String why = GpuAvailability.availability();
    if (why != null) {
      System.out.println("FeedCheck: SKIP (" + why + ")");
      return;
    }
    SparkConf conf = new SparkConf().setMaster("local[3]").setAppName("fold-cp feed check")
        .set("spark.sql.extensions", FoldCpExtensions.class.getName())
        .set("spark.ui.enabled", "false")
        .set("spark.sql.cache.serializer", RowCachedBatchSerializer.class.getName())
        .set("spark.foldcp.route", "gpu")
        .set(FoldCpConf.GPU_CONCURRENT_TASKS.name(), "3")
        .set(FoldCpConf.GPU_PINNED_POOL_BYTES.name(), "32m");
    TriMulJob.localGpu(conf);
    SparkSession spark = SparkSession.builder().config(conf).getOrCreate();
    boolean ok = true;
    try {
      LayerStack stack = LayerStack.randomAlternating(2, DIM, 11, true);
      Dataset<Row> in = spark.range(0, COMPLEXES, 1, 6).map((MapFunction<Long, Row>) c -> {
        int n = nOf(c.intValue());
        HeapComplex x = JobBenchInput.complex(c.intValue(), n, DIM);
        return RowFactory.create("c" + c, n, 0, 0, n, n, DIM, x.pair(), c % 3 == 0 ? null : x.mask());
      }, Encoders.row(PairTiles.SCHEMA)).persist(StorageLevel.MEMORY_ONLY());
      // pinned memory apart from the row cache's spans: the pool, the slots' scan results and the GPU
      // backend's own scan result; the feed opens with the first cached row (the cache lives in it)
      // and the backend with the first forward, both during the decoding pass
      long pinnedBefore = feedPinned();
      spark.conf().set(FoldCpConf.METRICS_LEVEL.name(), "debug"); // the decoding path (profiled forward)
      Map<String, String> decoding = digests(FoldCp.apply(in, stack, FoldCpOptions.fromConf()));
      spark.conf().set(FoldCpConf.METRICS_LEVEL.name(), "moderate"); // the feed
      long cached = cachedPinned();
      long freeBefore = deviceFree(); // after the decoding path's own buffers, before the feed's slots grow
      Map<String, String> feed = digests(FoldCp.apply(in, stack, FoldCpOptions.fromConf()));
      long pinnedAfterFirst = feedPinned();
      long freeAfterFirst = deviceFree();
      Map<String, String> again = digests(FoldCp.apply(in, stack, FoldCpOptions.fromConf()));
      long pinnedAfterSecond = feedPinned();
      long freeAfterSecond = deviceFree();

      int same = 0;
      List<String> differ = new ArrayList<>();
      for (Map.Entry<String, String> e : decoding.entrySet()) {
        if (e.getValue().equals(feed.get(e.getKey())) && e.getValue().equals(again.get(e.getKey()))) {
          same++;
        } else if (differ.size() < 5) {
          differ.add(e.getKey());
        }
      }
      ok &= report(decoding.size() == COMPLEXES && feed.size() == COMPLEXES && same == COMPLEXES,
          String.format(Locale.ROOT, "%d of %d complexes (N 16..%d, %d of N = %d above the 32 MiB pool) equal the"
              + " decoding path's output byte for byte%s", same, COMPLEXES, LARGE_N, COMPLEXES / 25, LARGE_N,
              differ.isEmpty() ? "" : "; differ: " + differ));
      // the pool, the 16-byte scan result of each of the 4 device slots (the default) and the one of
      // the backend (GpuTriMul scans what it uploads itself for the complexes the slots leave to it)
      long feedPinned = (32L << 20) + 4 * ScanResult.BYTES + ScanResult.BYTES;
      ok &= report(pinnedAfterFirst - pinnedBefore == feedPinned, String.format(Locale.ROOT,
          "the feed and the backend opened their pinned memory once: +%d bytes (the 32 MiB pool, 4 slots' and the"
              + " backend's 16-byte scan results: %d)", pinnedAfterFirst - pinnedBefore, feedPinned));
      // device: 4 slots (the default), each grown at most to the largest complex, and one workspace;
      // which slot grows when depends on the tasks' timing, so the bound is checked, not equality
      long largest = 2L * LARGE_N * LARGE_N * DIM + (long) LARGE_N * LARGE_N;
      long bound = 4 * largest + NativeTriMul.workspaceSize(1, LARGE_N, stack.hidden())
          + (32L << 20); // + allocation granules
      ok &= report(pinnedAfterSecond == pinnedAfterFirst, String.format(Locale.ROOT,
          "a second pass of the 200 left pinned memory as the first did (%d -> %d bytes)", pinnedAfterFirst,
          pinnedAfterSecond));
      ok &= report(freeBefore - freeAfterSecond <= bound, String.format(Locale.ROOT,
          "device memory the feed took over both passes: %d MiB (after the first pass %d MiB), within its bound of"
              + " 4 slots of the largest complex and one workspace (%d MiB)", (freeBefore - freeAfterSecond) >> 20,
          (freeBefore - freeAfterFirst) >> 20, bound >> 20));
      // the input rows in the pinned cache (every pass after the first uploads them with no host
      // copy), and back once the cache is dropped
      long pairBytes = 0;
      for (int c = 0; c < COMPLEXES; c++) {
        pairBytes += 2L * nOf(c) * nOf(c) * DIM;
      }
      ok &= report(cached >= pairBytes && cachedPinned() == cached, String.format(Locale.ROOT,
          "the 200 cached rows lie in the pinned cache: %d MiB (their pair bytes: %d MiB), unchanged by the passes",
          cached >> 20, pairBytes >> 20));
      in.unpersist(true);
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (cachedPinned() > 0 && System.nanoTime() < deadline) {
        System.gc();
        Thread.sleep(50);
      }
      ok &= report(cachedPinned() == 0, String.format(Locale.ROOT,
          "unpersisted, the cache's pinned memory came back (%d bytes left)", cachedPinned()));
    } finally {
      spark.stop();
    }
    System.out.println("FeedCheck: " + (ok ? "PASS" : "FAIL"));
    if (!ok) {
      System.exit(1);
    }
  }

  private static boolean report(boolean pass, String what) {
    System.out.println((pass ? "PASS " : "FAIL ") + what);
    return pass;
  }

  /** SHA-256 of each output complex's pair bytes, by complex id. */
  private static Map<String, String> digests(Dataset<Row> out) {
    Map<String, String> m = new HashMap<>();
    for (Row r : out.select(functions.col("complex_id"), functions.sha2(functions.col("pair"), 256)).collectAsList()) {
      m.put(r.getString(0), r.getString(1));
    }
    return m;
  }

  /** Pinned bytes of the feed itself (pool, scan results): every pinned buffer but the row cache's spans. */
  private static long feedPinned() {
    return MemoryLeakCheck.openBytes("pinned host buffer") - cachedPinned();
  }

  private static long cachedPinned() {
    return MemoryLeakCheck.openBytes("pinned host buffer", PinnedCache.SPAN);
  }

  private static long deviceFree() {
    try (GpuDevice d = GpuDevice.open(0)) {
      return d.memInfo().free();
    }
  }
}
