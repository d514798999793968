package org.foldcp.spark.shuffle;

import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.StreamSupport;
import org.apache.spark.api.java.function.PairFlatMapFunction;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.RankStages;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileKey;
import scala.Tuple2;

/**
 * One of the three per-rank steps of a layer as the function of a Spark partition: it prepares
 * the layer once per task and maps each element (a layout tile or a received group) to the
 * records it sends on. Elements are processed one at a time as the downstream shuffle writer
 * pulls them, so a task holds one element's payloads at a time, not its partition's.
 *
 * <p>The steps that read a shuffle (triangle and output: their elements are groups of
 * RankMessages) report as reshard time what the task spends receiving a reshard: waiting for its
 * next group (Spark's shuffle fetch, the deserialization of the RankMessages and their grouping
 * by key) and putting the group's payloads in source-rank order ({@link RankInbox}). The shuffle
 * write side (serializing the messages a step sends) runs inside Spark's writer and shows as the
 * stage's shuffle write time in the Spark UI.
 */
abstract class LayerStep<I, V> implements PairFlatMapFunction<Iterator<I>, TileKey, V> {
  private static final long serialVersionUID = 1L;

  /** The stack and the index of this step's layer: the weights come by broadcast, not in the closure. */
  protected final SharedStack stack;
  protected final int layerIndex;
  protected final CpGrid grid;
  protected final int threads;
  protected final RouteMetrics metrics;

  LayerStep(SharedStack stack, int layerIndex, CpGrid grid, int threads, RouteMetrics metrics) {
    this.stack = stack;
    this.layerIndex = layerIndex;
    this.grid = grid;
    this.threads = threads;
    this.metrics = metrics;
  }

  @Override
  public final Iterator<Tuple2<TileKey, V>> call(Iterator<I> elements) {
    Iterator<I> in = readsShuffle() ? timed(elements) : elements; // the first hasNext does most of a shuffle read
    if (!in.hasNext()) {
      return Collections.emptyIterator(); // hash partitioning leaves partitions empty; they prepare nothing
    }
    PreparedLayer prepared = new PreparedLayer(stack.layer(layerIndex));
    return StreamSupport.stream(Spliterators.spliteratorUnknownSize(in, Spliterator.ORDERED), false)
        .flatMap(e -> apply(e, prepared).stream())
        .iterator();
  }

  /** Whether this step's elements come straight from a shuffle read (a reshard's receiving end). */
  boolean readsShuffle() {
    return false;
  }

  /** {@code elements} with the time spent getting each one reported as reshard time. */
  private Iterator<I> timed(Iterator<I> elements) {
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return reshard(elements::hasNext);
      }

      @Override
      public I next() {
        return reshard(elements::next);
      }
    };
  }

  /** {@code work}'s result, its time reported as reshard time. */
  private <T> T reshard(java.util.function.Supplier<T> work) {
    long t0 = System.nanoTime();
    try {
      return work.get();
    } finally {
      metrics.reshardNanos(System.nanoTime() - t0);
    }
  }

  /** The payloads of a received group in source-rank order, the time it takes reported as reshard time. */
  RankInbox inbox(TileKey key, Iterable<RankMessage> messages, RankInbox.Reshard reshard) {
    return reshard(() -> RankInbox.of(key, messages, grid, reshard));
  }

  /** The records one element sends on. */
  abstract List<Tuple2<TileKey, V>> apply(I element, PreparedLayer prepared);

  /** The stages of {@code rank} of {@code layout}; closed by the caller (they own a worker pool). */
  RankStages stages(ShardLayout layout, int rank) {
    return new RankStages(layout, rank, threads);
  }

  /** Reports the nanoseconds since {@code startNanos} as compute time. */
  void computed(long startNanos) {
    metrics.computeNanos(System.nanoTime() - startNanos);
  }
}
