package org.foldcp.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.io.SafeTensors;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.udf.FoldCpFunctions;

/**
 * {@code TriMulJob --sql}: the same stack through the SQL function foldcp_trimul, on the same
 * input rows, compared with the route's output complex by complex. The weights go through a
 * float32 .safetensors file (exact), as the function reads weights by path.
 */
final class SqlCheck {
  private SqlCheck() {}

  static String compare(SparkSession spark, Dataset<Row> tiles, LayerStack stack, List<Row> routeOut) {
    Path dir;
    try {
      dir = Files.createTempDirectory("foldcp-sqlcheck");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Path weights = dir.resolve("stack.safetensors");
    Map<String, org.foldcp.ops.layer.LayerWeights> layers = new LinkedHashMap<>();
    StringBuilder prefixes = new StringBuilder();
    for (int l = 0; l < stack.size(); l++) {
      String prefix = "layers." + l + (stack.get(l).direction() == Direction.INCOMING ? ".tri_mul_in." : ".tri_mul_out.");
      layers.put(prefix, stack.get(l).weights());
      prefixes.append(l == 0 ? "" : ",").append(prefix).append(stack.get(l).spec().residual() ? "" : ":noresidual");
    }
    SafeTensors.writeLayers(weights, layers, "F32");
    FoldCpFunctions.register(spark);
    tiles.createOrReplaceTempView("foldcp_sqlcheck_pairs");
    List<Row> sqlRows = spark.sql("SELECT complex_id, n_tokens, 0 AS row0, 0 AS col0, n_tokens AS rows,"
        + " n_tokens AS cols, dim, foldcp_trimul(pair, n_tokens, dim, mask, '" + weights + "', '" + prefixes
        + "') AS pair, mask FROM foldcp_sqlcheck_pairs").collectAsList();
    int identical = 0;
    double worst = 0;
    for (Row r : sqlRows) {
      PairTensor viaSql = PairTiles.fromRow(r);
      PairTensor viaRoute = FoldCp.assemble(routeOut, r.getString(0));
      float[] a = viaSql.toFloats();
      float[] b = viaRoute.toFloats();
      double num = 0;
      double den = 0;
      boolean same = true;
      for (int q = 0; q < a.length; q++) {
        num += (a[q] - (double) b[q]) * (a[q] - (double) b[q]);
        den += (double) b[q] * b[q];
        same &= Float.floatToRawIntBits(a[q]) == Float.floatToRawIntBits(b[q]);
      }
      identical += same ? 1 : 0;
      worst = Math.max(worst, Math.sqrt(num / Math.max(den, 1e-300)));
    }
    try {
      Files.deleteIfExists(weights);
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // a temporary file left behind is harmless
    }
    return String.format(Locale.ROOT, "foldcp_trimul on %d complexes: %d bit-identical to the route's output,"
        + " worst ||sql - route|| / ||route|| = %.3e", sqlRows.size(), identical, worst);
  }
}
