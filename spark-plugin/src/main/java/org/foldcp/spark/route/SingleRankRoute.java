package org.foldcp.spark.route;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The cp = 1 route: no barrier, every complex whole in one row, complexes in parallel, one per
 * task at a time. Each task applies the whole layer stack with the pair tensor resident in its
 * memory, so rows are decoded and encoded once per stack, not per layer.
 */
public final class SingleRankRoute {
  private SingleRankRoute() {}

  /**
   * @param complexes rows of {@link PairTiles#SCHEMA}, each a whole complex
   * @param threadsPerTask CPU threads a task uses (normally spark.task.cpus)
   */
  public static Dataset<Row> apply(Dataset<Row> complexes, LayerStack stack, int threadsPerTask) {
    MapPartitionsFunction<Row, Row> f = rows -> {
      List<Row> out = new ArrayList<>();
      try (TriMulBackend backend = new CpuTriMul(threadsPerTask)) {
        while (rows.hasNext()) {
          Row r = rows.next();
          PairTiles.requireWholeComplex(r);
          PairTensor x = PairTiles.fromRow(r);
          PairTensor y = backend.forward(x, stack);
          out.add(PairTiles.toRow(r.getString(0), r.getInt(1), 0, 0, y, 0));
        }
      }
      Iterator<Row> it = out.iterator();
      return it;
    };
    return complexes.mapPartitions(f, Encoders.row(PairTiles.SCHEMA));
  }
}
