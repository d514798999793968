package org.foldcp.spark.shuffle;

import java.util.Collections;
import org.apache.spark.HashPartitioner;
import org.apache.spark.Partitioner;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.route.TileRoute;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;

/**
 * The shuffle CP route (docs/design.md section 3): the two reshards of every layer as two Spark
 * shuffles, token -> channel -> token, keyed by (complex, rank). No barrier stage and no
 * executor-to-executor connection, so it runs on any cluster and with dynamic allocation; the
 * price is that the reshards go through shuffle files instead of fused epilogue stores.
 *
 * <p>Per layer, for every complex (each with its own layout, {@code ShardLayout(grid, N, D)}):
 * <ol>
 *   <li>each layout tile is projected and sends [a | b] to every channel owner ({@link ProjectStep});
 *   <li>shuffle 1; each owner checks it got one payload from every tile, multiplies, and sends z
 *       to every tile ({@link TriangleStep});
 *   <li>shuffle 2; each tile checks it got one payload from every owner and computes its
 *       output ({@link OutputStep}), which the next layer's projection reads in the same task.
 * </ol>
 * The input is first brought into layout tiles (one more shuffle, {@link LayoutTiles}), and the
 * output is cropped to N. The layout tile travels through both shuffles with the payloads
 * addressed to its rank, rather than being cached and joined back: the lineage is then a single
 * chain, no step is ever computed twice, and there is nothing to persist or unpersist, so no
 * cached block keeps dynamic allocation from releasing an executor. Shuffle files stand in for
 * a cache: a second action on the result reruns only the last output step, and a lost executor
 * costs only the map outputs it held. The price is 2 bytes per pair value per shuffle on top of
 * the payloads (8 bytes per value in shuffle 1, 4 in shuffle 2).
 *
 * <p>Metrics: tiles and bytesOut per output tile, bytesIn per input tile (pair data, bf16),
 * computeNanos once per step (project, triangle, output) per rank tile per layer. The reshards
 * themselves run inside Spark's shuffles. reshardNanos is the receiving end as the tasks see it
 * ({@link LayerStep}): the time the triangle and output steps spend waiting for their next
 * group of RankMessages (shuffle fetch, deserialization, grouping) and putting its payloads in
 * source-rank order. The sending end (serializing and writing the messages) runs inside
 * Spark's shuffle writer and shows in the Spark UI as the shuffle write time of this class's
 * stages (whose RDDs the DAG view names "foldcp shuffle layer l ..."); the layout shuffle before
 * the first layer is not counted.
 *
 * <p>Dynamic allocation needs what any shuffle needs to release executors safely: the external
 * shuffle service or spark.dynamicAllocation.shuffleTracking.enabled.
 *
 * <p>The returned RDD is lazy, like any transformation; nothing runs until an action.
 */
public final class ShuffleRoute implements TileRoute {
  private final int partitions;

  /** Shuffles into spark.sql.shuffle.partitions partitions if set, else the default parallelism. */
  public ShuffleRoute() {
    this.partitions = 0;
  }

  /** Shuffles into {@code partitions} partitions; (complex, rank) keys are hashed over them. */
  public ShuffleRoute(int partitions) {
    InvalidInputException.require(partitions >= 1, "shuffle partitions", partitions, "must be >= 1");
    this.partitions = partitions;
  }

  /** A plan for this route. */
  public static RoutePlan plan(CpGrid grid, int threadsPerTask, String reason) {
    return RoutePlan.of(RoutePlan.Kind.SHUFFLE, grid, threadsPerTask, FoldCpConf.defaults(), reason);
  }

  @Override
  public JavaRDD<TileRecord> run(JavaRDD<TileRecord> tiles, LayerStack stack, RoutePlan plan, RouteMetrics metrics) {
    InvalidInputException.require(plan.kind == RoutePlan.Kind.SHUFFLE, "route plan kind", plan.kind,
        "ShuffleRoute runs only SHUFFLE plans");
    InvalidInputException.require(plan.threadsPerTask >= 1, "threads per task", plan.threadsPerTask,
        "must be >= 1 (resolve 0 to spark.task.cpus before planning)");
    // The layout's own rule, checked here on the driver before any task starts: the stack's
    // hidden width H must divide by cp. It does not depend on N, which only the tiles know.
    new ShardLayout(plan.grid, 1, stack.dim(), stack.hidden());

    Partitioner byRank = new HashPartitioner(partitions > 0 ? partitions : defaultPartitions(tiles.context()));
    JavaPairRDD<TileKey, TileRecord> layoutTiles = LayoutTiles.of(tiles, plan.grid, stack.dim(), byRank, plan.allowNonFinite,
        metrics);
    layoutTiles.setName("foldcp shuffle: layout tiles " + plan.grid);
    SharedStack shared = SharedStack.of(tiles.context(), stack);
    for (int l = 0; l < stack.size(); l++) {
      layoutTiles = layer(layoutTiles, shared, stack.get(l), l, plan, byRank, metrics);
    }
    return layoutTiles.values().flatMap(t -> {
      TileRecord cropped = Retiling.crop(t);
      if (cropped == null) {
        return Collections.emptyIterator(); // a rank wholly in the padding
      }
      metrics.tiles(1);
      metrics.bytesOut(cropped.pairBytes());
      return Collections.singletonList(cropped).iterator();
    });
  }

  private static JavaPairRDD<TileKey, TileRecord> layer(JavaPairRDD<TileKey, TileRecord> tiles, SharedStack shared,
                                                        TriMulLayer layer, int index, RoutePlan plan, Partitioner byRank,
                                                        RouteMetrics metrics) {
    String name = "foldcp shuffle layer " + index + " (" + layer.direction().name().toLowerCase(java.util.Locale.ROOT)
        + "): ";
    JavaPairRDD<TileKey, RankMessage> toOwners = tiles
        .mapPartitionsToPair(new ProjectStep(shared, index, plan.grid, plan.threadsPerTask, metrics));
    toOwners.setName(name + "a/b to channel owners");
    JavaPairRDD<TileKey, RankMessage> toTiles = toOwners.groupByKey(byRank)
        .mapPartitionsToPair(new TriangleStep(shared, index, plan.grid, plan.threadsPerTask, metrics));
    toTiles.setName(name + "z to tiles");
    JavaPairRDD<TileKey, TileRecord> out = toTiles.groupByKey(byRank)
        .mapPartitionsToPair(new OutputStep(shared, index, plan.grid, plan.threadsPerTask, metrics));
    out.setName(name + "output tiles");
    return out;
  }

  private static int defaultPartitions(SparkContext sc) {
    SparkConf conf = sc.getConf();
    return conf.contains("spark.sql.shuffle.partitions")
        ? conf.getInt("spark.sql.shuffle.partitions", 200) : sc.defaultParallelism();
  }
}
