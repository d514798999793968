package org.foldcp.spark.sql;

import java.io.Serializable;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.columnar.CachedBatchSerializer;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.storage.StorageLevel;
import org.foldcp.ops.gpu.HostCopy;
import org.foldcp.ops.gpu.feed.PinnedCache;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.TaskBackends;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Function2;
import scala.collection.immutable.Seq;

/**
 * A cache for DataFrames of large binary values, such as pair tiles: each row is kept as the
 * UnsafeRow it was (one copy, when the cache is built) and handed back as it is when all its
 * columns are read, so reading a cached complex costs no copy at all. On an executor whose tasks
 * compute on a GPU the copy goes into the executor's pinned cache (page-locked memory, bounded by
 * spark.foldcp.gpu.pinnedCacheBytes; {@link PinnedCache}): the row then lies where the GPU's DMA
 * engines read it, and the GPU feed uploads a cached complex with no host copy at all. Rows that
 * do not fit stay on the heap. Spark's default columnar
 * cache stores a binary column as one buffer per batch and, on every read, copies each value out
 * into a new array and again into the row: two passes over every byte and an allocation per value,
 * which for 64 MiB to 1 GiB values is most of a GPU job's host time (docs/benchmarks.md).
 *
 * <p>Set it when the session starts (a static setting):
 * {@code spark.sql.cache.serializer=org.foldcp.spark.sql.RowCachedBatchSerializer}. It is
 * row-based in and out (no columnar input or output), keeps no statistics (so cached scans are not
 * pruned by filters), and reads a subset of the columns through a projection (a copy of those
 * columns). The same idea as spark-rapids' own cache serializer: the cache layout suits the
 * consumer.
 *
 * <p>A row in pinned memory is an UnsafeRow over that memory (no base object), valid as long as
 * its batch is reachable: Spark holds the batch while the block is cached and while a task reads
 * it; serialized (a block spilled or sent), it becomes a heap row.
 */
public class RowCachedBatchSerializer implements CachedBatchSerializer {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(RowCachedBatchSerializer.class);
  private static final AtomicBoolean LOGGED = new AtomicBoolean();

  /** Where a task finds the pinned cache its rows may go to (serializable: it travels in the tasks). */
  @FunctionalInterface
  public interface CacheSource extends Serializable {
    Optional<PinnedCache> cache();
  }

  private final CacheSource cacheSource;

  /** The serializer Spark makes: the executor's pinned cache where its tasks compute on a GPU. */
  public RowCachedBatchSerializer() {
    this(TaskBackends::pinnedCache);
  }

  /** With rows pinned in the cache {@code source} gives (tests pass one over plain memory). */
  protected RowCachedBatchSerializer(CacheSource source) {
    this.cacheSource = source;
  }

  /** One cached row, and the pinned span it lies in (null: on the heap). */
  static final class RowBatch implements CachedBatch, Serializable {
    private static final long serialVersionUID = 1L;
    final UnsafeRow row;
    /** Keeps the row's pinned memory alive as long as the batch is; not serialized (the copy is a heap row). */
    final transient PinnedCache.Span span;

    RowBatch(UnsafeRow row, PinnedCache.Span span) {
      this.row = row;
      this.span = span;
    }

    @Override
    public int numRows() {
      return 1;
    }

    @Override
    public long sizeInBytes() {
      return row.getSizeInBytes();
    }
  }

  @Override
  public boolean supportsColumnarInput(Seq<Attribute> schema) {
    return false;
  }

  @Override
  public RDD<CachedBatch> convertInternalRowToCachedBatch(RDD<InternalRow> input, Seq<Attribute> schema,
                                                         StorageLevel storageLevel, SQLConf conf) {
    StructType type = structOf(schema);
    CacheSource source = cacheSource;
    return input.toJavaRDD().mapPartitions(rows -> {
      UnsafeProjection toUnsafe = UnsafeProjection.create(type);
      Optional<PinnedCache> pinned = source.cache();
      logOnce(pinned);
      return new Iterator<CachedBatch>() {
        @Override
        public boolean hasNext() {
          return rows.hasNext();
        }

        @Override
        public CachedBatch next() {
          InternalRow r = rows.next();
          UnsafeRow u = r instanceof UnsafeRow ur ? ur : toUnsafe.apply(r);
          // a copy either way: the input's row buffer is reused by its iterator
          PinnedCache.Span span = pinned.map(c -> c.tryAllocate(u.getSizeInBytes(), "a cached row")).orElse(null);
          if (span == null) {
            return new RowBatch(u.copy(), null);
          }
          HostCopy.copy(u.getBaseObject(), u.getBaseOffset(), null, span.address(), u.getSizeInBytes());
          UnsafeRow there = new UnsafeRow(u.numFields());
          there.pointTo(null, span.address(), u.getSizeInBytes());
          return new RowBatch(there, span);
        }
      };
    }).rdd();
  }

  @Override
  public RDD<CachedBatch> convertColumnarBatchToCachedBatch(RDD<ColumnarBatch> input, Seq<Attribute> schema,
                                                           StorageLevel storageLevel, SQLConf conf) {
    throw new UnsupportedOperationException("RowCachedBatchSerializer caches rows only (supportsColumnarInput is"
        + " false)");
  }

  @Override
  public Function2<Object, scala.collection.Iterator<CachedBatch>, scala.collection.Iterator<CachedBatch>> buildFilter(
      Seq<Expression> predicates, Seq<Attribute> cachedAttributes) {
    // no statistics: every batch is read (serializable: the filter travels in the scan's tasks)
    return (Function2<Object, scala.collection.Iterator<CachedBatch>, scala.collection.Iterator<CachedBatch>>
        & Serializable) (partition, batches) -> batches;
  }

  @Override
  public boolean supportsColumnarOutput(StructType schema) {
    return false;
  }

  @Override
  public RDD<ColumnarBatch> convertCachedBatchToColumnarBatch(RDD<CachedBatch> input, Seq<Attribute> cacheAttributes,
                                                             Seq<Attribute> selectedAttributes, SQLConf conf) {
    throw new UnsupportedOperationException("RowCachedBatchSerializer reads rows only (supportsColumnarOutput is"
        + " false)");
  }

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public RDD<InternalRow> convertCachedBatchToInternalRow(RDD<CachedBatch> input, Seq<Attribute> cacheAttributes,
                                                         Seq<Attribute> selectedAttributes, SQLConf conf) {
    if (sameColumns(cacheAttributes, selectedAttributes)) {
      return input.toJavaRDD().map(b -> (InternalRow) ((RowBatch) b).row).rdd(); // the cached row itself
    }
    Seq<Expression> selected = (Seq) selectedAttributes;
    return input.toJavaRDD().mapPartitions(batches -> {
      UnsafeProjection project = UnsafeProjection.create(selected, cacheAttributes);
      return new Iterator<InternalRow>() {
        @Override
        public boolean hasNext() {
          return batches.hasNext();
        }

        @Override
        public InternalRow next() {
          return project.apply(((RowBatch) batches.next()).row);
        }
      };
    }).rdd();
  }

  private static void logOnce(Optional<PinnedCache> pinned) {
    if (LOGGED.compareAndSet(false, true)) {
      LOG.info("fold-cp row cache: {}", pinned.map(c -> "rows in the " + c + " where they fit (uploaded with no host"
          + " copy), the rest on the heap").orElse("rows on the heap (this executor's tasks do not compute on a GPU,"
          + " or " + FoldCpConf.GPU_PINNED_CACHE_BYTES.name() + " = 0)"));
    }
  }

  private static boolean sameColumns(Seq<Attribute> cached, Seq<Attribute> selected) {
    List<Attribute> a = Scala.list(cached);
    List<Attribute> b = Scala.list(selected);
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (!a.get(i).exprId().equals(b.get(i).exprId())) {
        return false;
      }
    }
    return true;
  }

  private static StructType structOf(Seq<Attribute> schema) {
    StructType t = new StructType();
    for (Attribute a : Scala.list(schema)) {
      t = t.add(a.name(), a.dataType(), a.nullable());
    }
    return t;
  }
}
