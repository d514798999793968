package org.foldcp.spark.route;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.gpu.BorrowedGpu;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.TileRecord;

/**
 * The cp = 1 route: no barrier, every complex whole in one row, complexes in parallel, one per
 * task at a time, on the task's GPU or the CPU ({@link TaskBackends}). Each task applies the whole layer stack with the pair tensor resident in its
 * memory, so rows are decoded and encoded once per stack, not per layer.
 */
public final class SingleRankRoute implements TileRoute {
  @Override
  public JavaRDD<TileRecord> run(JavaRDD<TileRecord> tiles, LayerStack stack, RoutePlan plan, RouteMetrics metrics) {
    int threads = plan.threadsPerTask;
    RoutePlan.Backend where = plan.backend;
    boolean allowNonFinite = plan.allowNonFinite;
    SharedStack shared = SharedStack.of(tiles.context(), stack);
    return tiles.mapPartitions(it -> {
      List<TileRecord> out = new ArrayList<>();
      if (!it.hasNext()) {
        return out.iterator(); // an empty partition opens no backend (and no GPU context)
      }
      try (TriMulBackend backend = TaskBackends.open(where, threads)) {
        while (it.hasNext()) {
          TileRecord r = it.next();
          PairTiles.requireWholeComplex(r);
          metrics.bytesIn(r.pairBytes());
          long t0 = System.nanoTime();
          PairTensor y;
          try {
            // The backend checks for NaN and Inf (on the GPU, within its upload's copy loop).
            y = backend.forward(r.tile, shared.get(), allowNonFinite);
          } catch (NonFiniteInputException e) {
            throw NonFiniteInput.about(e, r);
          }
          metrics.computeNanos(System.nanoTime() - t0);
          TileRecord o = new TileRecord(r.complexId, r.nTokens, 0, 0, y);
          metrics.tiles(1);
          if (backend instanceof BorrowedGpu) {
            metrics.gpuTiles(1);
          }
          metrics.bytesOut(o.pairBytes());
          out.add(o);
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
