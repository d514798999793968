package org.foldcp.spark.route;

import java.util.Collections;
import java.util.Iterator;
import java.util.function.Supplier;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.RowBands;
import org.foldcp.spark.tiles.TileRecord;

/**
 * The cp = 1 route: no barrier, every complex whole in one row (or, above a binary value's 2 GiB,
 * in consecutive row bands: {@link RowBands}), complexes in parallel, one per
 * task at a time, on the task's GPU or the CPU ({@link TaskBackends}). Each task applies the whole layer stack with the pair tensor resident in its
 * memory, so rows are decoded and encoded once per stack, not per layer. Output streams out of the
 * task ({@link StreamedForward}).
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
    SharedStack shared = SharedStack.of(tiles.context(), stack);
    // Streamed: one complex computed per pull (bands of the input gathered first, the output cut
    // into bands again when it is larger than one binary value).
    return tiles.mapPartitions(in -> forward(in, () -> TaskBackends.open(where, threads), shared, plan, metrics, bands));
  }

  /**
   * One partition's complexes through the stack on the backend {@code opener} opens at the first
   * complex (and closes after the last): bands gathered into complexes first, outputs cut into
   * bands again where they are larger than one binary value.
   */
  public static Iterator<TileRecord> forward(Iterator<TileRecord> in, Supplier<TriMulBackend> opener,
                                             SharedStack shared, RoutePlan plan, RouteMetrics metrics,
                                             RowBands bands) {
    Iterator<TileRecord> whole = new StreamedForward(RowBands.gather(in), opener, shared::get, plan, metrics);
    return cutIntoBands(whole, bands);
  }

  /** Rows of {@link PairTiles#SCHEMA}, each a whole complex, through the stack. */
  public static Dataset<Row> apply(Dataset<Row> complexes, LayerStack stack, int threadsPerTask) {
    JavaRDD<TileRecord> in = complexes.javaRDD().map(TileRecord::fromRow);
    JavaRDD<Row> out = new SingleRankRoute()
        .run(in, stack, RoutePlan.single(threadsPerTask, "cp = 1"), RouteMetrics.NONE)
        .map(TileRecord::toRow);
    return complexes.sparkSession().createDataFrame(out, PairTiles.SCHEMA);
  }

  /** Each output complex as the row bands {@code bands} cuts it into, pulled one complex at a time (static: no route in the task closure). */
  private static Iterator<TileRecord> cutIntoBands(Iterator<TileRecord> whole, RowBands bands) {
    return new Iterator<TileRecord>() {
      private Iterator<TileRecord> cur = Collections.emptyIterator();

      @Override
      public boolean hasNext() {
        while (!cur.hasNext() && whole.hasNext()) {
          cur = bands.cut(whole.next()).iterator();
        }
        return cur.hasNext();
      }

      @Override
      public TileRecord next() {
        if (!hasNext()) {
          throw new java.util.NoSuchElementException();
        }
        return cur.next();
      }
    };
  }
}
