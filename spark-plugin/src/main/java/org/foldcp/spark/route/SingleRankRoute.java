package org.foldcp.spark.route;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.RowBands;
import org.foldcp.spark.tiles.TileRecord;

/**
 * The cp = 1 route: no barrier, every complex whole in one row (or, above a binary value's 2 GiB,
 * in consecutive row bands: {@link RowBands}), complexes in parallel, one per
 * task at a time, on the task's GPU or the CPU ({@link TaskBackends}). Each task applies the whole layer stack with the pair tensor resident in its
 * memory, so rows are decoded and encoded once per stack, not per layer.
 */
public final class SingleRankRoute implements TileRoute {
  private final RowBands bands;

  /** Complexes in and out as tile rows of Spark's binary values. */
  public SingleRankRoute() {
    this(RowBands.BINARY);
  }

  /**
   * Complexes in whole or as consecutive row bands ({@link RowBands#gather}); out whole, or as
   * row bands of at most {@code bands.maxTileBytes()} each when larger.
   */
  public SingleRankRoute(RowBands bands) {
    this.bands = bands;
  }

  @Override
  public JavaRDD<TileRecord> run(JavaRDD<TileRecord> tiles, LayerStack stack, RoutePlan plan, RouteMetrics metrics) {
    RowBands bands = this.bands; // the task closure captures the bands, not the route
    int threads = plan.threadsPerTask;
    RoutePlan.Backend where = plan.backend;
    boolean allowNonFinite = plan.allowNonFinite;
    return tiles.mapPartitions(in -> {
      Iterator<TileRecord> it = RowBands.gather(in);
      List<TileRecord> out = new ArrayList<>();
      if (!it.hasNext()) {
        return out.iterator(); // an empty partition opens no backend (and no GPU context)
      }
      try (TriMulBackend backend = TaskBackends.open(where, threads)) {
        while (it.hasNext()) {
          TileRecord r = it.next();
          metrics.bytesIn(r.pairBytes());
          long t0 = System.nanoTime();
          PairTensor y;
          try {
            // The backend checks for NaN and Inf (on the GPU, within its upload's copy loop).
            y = backend.forward(r.tile, stack, allowNonFinite);
          } catch (NonFiniteInputException e) {
            throw NonFiniteInput.about(e, r);
          }
          metrics.computeNanos(System.nanoTime() - t0);
          TileRecord o = new TileRecord(r.complexId, r.nTokens, 0, 0, y);
          metrics.tiles(1);
          if ("gpu".equals(backend.name())) {
            metrics.gpuTiles(1);
          }
          metrics.bytesOut(o.pairBytes());
          out.addAll(bands.cut(o));
        }
      }
      return out.iterator();
    });
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
