package org.foldcp.spark.shuffle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.stream.StreamSupport;
import org.apache.spark.api.java.function.PairFlatMapFunction;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.RankStages;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cpu.PreparedLayer;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
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

  /** Runs {@code work} on the stages of {@code rank} of {@code layout}, its time reported as compute time. */
  void compute(ShardLayout layout, int rank, Consumer<RankStages> work) {
    onStages(layout, rank, stages -> {
      work.accept(stages);
      return null;
    });
  }

  /**
   * The records of a step that sends payloads (projection: [a | b] to the channel owners; triangle:
   * z to the tiles): {@code tile} to its own key, where the same rank's next step runs, and payload
   * p from {@code work} to rank p's key of the complex. The work's time is reported as compute
   * time, the bytes its payloads send to other ranks as reshard bytes.
   */
  List<Tuple2<TileKey, RankMessage>> send(TileKey key, TileRecord tile, ShardLayout layout,
                                          Function<RankStages, float[][]> work) {
    float[][] payloads = onStages(layout, key.rank, work);
    List<Tuple2<TileKey, RankMessage>> out = new ArrayList<>(payloads.length + 1);
    out.add(new Tuple2<>(key, RankMessage.tile(key.rank, tile)));
    for (int dst = 0; dst < payloads.length; dst++) {
      out.add(new Tuple2<>(new TileKey(key.complexId, dst), RankMessage.payload(key.rank, payloads[dst])));
    }
    return out;
  }

  /**
   * The payloads {@code work} makes (null for none) on the stages of {@code rank} of {@code layout},
   * which are closed after it (they own a worker pool); reports the work's time and the payloads' bytes.
   */
  private float[][] onStages(ShardLayout layout, int rank, Function<RankStages, float[][]> work) {
    try (RankStages stages = new RankStages(layout, rank, threads)) {
      long t0 = System.nanoTime();
      float[][] payloads = work.apply(stages);
      metrics.computeNanos(System.nanoTime() - t0);
      if (payloads != null) {
        metrics.reshardBytes(stages.bytesLeaving(payloads));
      }
      return payloads;
    }
  }
}
