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
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.tiles.TileKey;
import scala.Tuple2;

/**
 * One of the three per-rank steps of a layer as the function of a Spark partition: it prepares
 * the layer once per task and maps each element (a layout tile or a received group) to the
 * records it sends on. Elements are processed one at a time as the downstream shuffle writer
 * pulls them, so a task holds one element's payloads at a time, not its partition's.
 */
abstract class LayerStep<I, V> implements PairFlatMapFunction<Iterator<I>, TileKey, V> {
  private static final long serialVersionUID = 1L;

  protected final TriMulLayer layer;
  protected final CpGrid grid;
  protected final int threads;
  protected final RouteMetrics metrics;

  LayerStep(TriMulLayer layer, CpGrid grid, int threads, RouteMetrics metrics) {
    this.layer = layer;
    this.grid = grid;
    this.threads = threads;
    this.metrics = metrics;
  }

  @Override
  public final Iterator<Tuple2<TileKey, V>> call(Iterator<I> elements) {
    if (!elements.hasNext()) {
      return Collections.emptyIterator(); // hash partitioning leaves partitions empty; they prepare nothing
    }
    PreparedLayer prepared = new PreparedLayer(layer);
    return StreamSupport.stream(Spliterators.spliteratorUnknownSize(elements, Spliterator.ORDERED), false)
        .flatMap(e -> apply(e, prepared).stream())
        .iterator();
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
