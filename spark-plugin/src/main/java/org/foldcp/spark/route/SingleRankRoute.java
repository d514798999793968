package org.foldcp.spark.route;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.TileRecord;

/**
 * The cp = 1 route: no barrier, every complex whole in one row, complexes in parallel, one per
 * task at a time, on the task's GPU or the CPU ({@link TaskBackends}). Each task applies the whole layer stack with the pair tensor resident in its
 * memory, so rows are decoded and encoded once per stack, not per layer. Output streams out of the
 * task ({@link StreamedForward}).
 */
public final class SingleRankRoute implements TileRoute {
  @Override
  public JavaRDD<TileRecord> run(JavaRDD<TileRecord> tiles, LayerStack stack, RoutePlan plan, RouteMetrics metrics) {
    int threads = plan.threadsPerTask;
    RoutePlan.Backend where = plan.backend;
    boolean allowNonFinite = plan.allowNonFinite;
    SharedStack shared = SharedStack.of(tiles.context(), stack);
    return tiles.mapPartitions(it -> new StreamedForward(it, () -> TaskBackends.open(where, threads), shared::get,
        allowNonFinite, metrics));
  }

  /** Rows of {@link PairTiles#SCHEMA}, each a whole complex, through the stack. */
  public static Dataset<Row> apply(Dataset<Row> complexes, LayerStack stack, int threadsPerTask) {
    JavaRDD<TileRecord> in = complexes.javaRDD().map(TileRecord::fromRow);
    JavaRDD<Row> out = new SingleRankRoute()
        .run(in, stack, RoutePlan.single(threadsPerTask, "cp = 1"), RouteMetrics.NONE)
        .map(TileRecord::toRow);
    return complexes.sparkSession().createDataFrame(out, PairTiles.SCHEMA);
  }
}
