package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.columnar.InMemoryRelation$;
import org.apache.spark.storage.StorageLevel;
import org.foldcp.ops.gpu.HostCopy;
import org.foldcp.ops.gpu.feed.PinnedCache;
import org.foldcp.ops.layer.LayerStack;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Rows cached in pinned memory, as an executor with a GPU keeps them ({@link RowCachedBatchSerializer}
 * over a {@link PinnedCache}; here the cache is over plain memory, which is all the bookkeeping
 * needs): the cached rows lie outside the heap, read back and fold exactly as heap rows do, a
 * cache too small keeps the rest on the heap, and dropping the cache frees its memory.
 */
class PinnedRowCacheTest {
  /** The cache the serializer below puts rows in (one per test JVM; plain memory). */
  static volatile PinnedCache cache;

  /** The row cache over {@link #cache}, as Spark makes a serializer: by class name, no arguments. */
  public static final class OverPlainMemory extends RowCachedBatchSerializer {
    private static final long serialVersionUID = 1L;

    public OverPlainMemory() {
      super(OverPlainMemory::current);
    }

    private static Optional<PinnedCache> current() {
      return Optional.ofNullable(cache);
    }
  }

  private static SparkSession spark;

  @BeforeAll
  static void start() {
    // Spark reads spark.sql.cache.serializer once per JVM (InMemoryRelation keeps the instance in
    // a static field): a test class that cached anything earlier in this JVM fixed the default
    // one. Forget it so this session's serializer is read, and forget it again after.
    InMemoryRelation$.MODULE$.clearSerializer();
    // a session left by another test class (active or default) would be handed back by
    // getOrCreate with its own static settings, so both are stopped first
    SparkSession.getActiveSession().foreach(s -> {
      s.stop();
      return null;
    });
    SparkSession.getDefaultSession().foreach(s -> {
      s.stop();
      return null;
    });
    SparkSession.clearActiveSession();
    SparkSession.clearDefaultSession();
    spark = SparkSession.builder()
        .master("local[2]")
        .appName("fold-cp pinned row cache test")
        .config("spark.sql.extensions", FoldCpExtensions.class.getName())
        .config("spark.ui.enabled", "false")
        .config("spark.sql.cache.serializer", OverPlainMemory.class.getName())
        .config("spark.foldcp.route", "cpu")
        .getOrCreate();
    assertEquals(OverPlainMemory.class.getName(), spark.conf().get("spark.sql.cache.serializer"),
        "this test's session, with its own cache serializer");
  }

  @AfterAll
  static void stop() {
    spark.stop();
    InMemoryRelation$.MODULE$.clearSerializer(); // later test classes get the default serializer
    if (cache != null) {
      cache.close();
      cache = null;
    }
  }

  private static PinnedCache plainMemory(long capacity) {
    return new PinnedCache((bytes, purpose) -> {
      long a = HostCopy.allocateRaw(bytes);
      return new PinnedCache.Allocation(a, () -> HostCopy.freeRaw(a));
    }, capacity, "test");
  }

  /** Whether each row of {@code df}'s cached plan lies outside the heap (no base object). */
  private static List<Boolean> offHeap(Dataset<Row> df) {
    RDD<InternalRow> rows = ((org.apache.spark.sql.classic.Dataset<Row>) df).queryExecution().toRdd();
    return rows.toJavaRDD().map(r -> r instanceof UnsafeRow u && u.getBaseObject() == null).collect();
  }

  @Test
  void cachedRowsLieInPinnedMemoryAndFoldAsHeapRowsDo() throws InterruptedException {
    LayerStack stack = SparkTestSession.stack();
    cache = plainMemory(1 << 20);
    Dataset<Row> cached = SparkTestSession.wholeComplexes(spark).persist(StorageLevel.MEMORY_ONLY());
    assertEquals(2, cached.count());
    assertEquals(List.of(true, true), offHeap(cached), "both rows in the cache's memory");
    assertEquals(2, cache.openSpans());
    assertTrue(cache.heldBytes() > 2L * (13 * 13 + 20 * 20) * SparkTestSession.D, "their bytes: " + cache.heldBytes());

    List<Row> out = FoldCp.apply(cached, stack).collectAsList();
    for (int c = 0; c < SparkTestSession.IDS.length; c++) {
      String id = SparkTestSession.IDS[c];
      assertTrue(FoldCp.assemble(out, id).sameAs(SparkTestSession.reference(c, stack)),
          "complex " + id + " folded from its pinned row equals CpuTriMul");
    }
    List<Row> back = cached.collectAsList();
    List<Row> heap = SparkTestSession.wholeComplexes(spark).collectAsList();
    for (int c = 0; c < back.size(); c++) {
      assertTrue(FoldCp.assemble(back, SparkTestSession.IDS[c]).sameAs(FoldCp.assemble(heap, SparkTestSession.IDS[c])),
          "the cached values read back");
    }

    cached.unpersist(true);
    PinnedCache c = cache;
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (c.heldBytes() > 0 && System.nanoTime() < deadline) {
      System.gc();
      Thread.sleep(50);
    }
    assertEquals(0, c.heldBytes(), "a dropped cache's rows are freed (at the next collection)");
    c.close();
    cache = null;
  }

  @Test
  void aCacheTooSmallKeepsTheRowsOnTheHeap() {
    cache = plainMemory(64); // smaller than either row
    Dataset<Row> cached = SparkTestSession.wholeComplexes(spark).persist(StorageLevel.MEMORY_ONLY());
    assertEquals(List.of(false, false), offHeap(cached), "on the heap");
    assertEquals(0, cache.openSpans());
    assertTrue(cache.stats().refused() >= 2, "both refused: " + cache.stats());
    List<Row> out = FoldCp.apply(cached, SparkTestSession.stack()).collectAsList();
    assertTrue(FoldCp.assemble(out, "c20").sameAs(SparkTestSession.reference(1, SparkTestSession.stack())));
    cached.unpersist(true);
    cache.close();
    cache = null;
  }
}
