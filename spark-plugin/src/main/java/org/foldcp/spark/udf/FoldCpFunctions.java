package org.foldcp.spark.udf;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import scala.Tuple3;

/**
 * fold-cp's SQL functions and their DataFrame counterparts. One function for now:
 *
 * <pre>{@code
 * foldcp_trimul(pair BINARY, n INT, dim INT, mask BINARY, weights STRING, layers STRING) -> BINARY
 * }</pre>
 *
 * applies a TriMul layer stack to a whole pair tensor held in one row (cp = 1), as pair-tile rows
 * hold a complex ({@link org.foldcp.spark.tiles.PairTiles}):
 * <ul>
 *   <li>{@code pair}: bf16 little-endian [n][n][dim]; NULL gives NULL;
 *   <li>{@code n}, {@code dim}: N and D, integers >= 1 (any integer type);
 *   <li>{@code mask}: uint8 [n][n], 1 = valid, or NULL for all valid;
 *   <li>{@code weights}: a .safetensors file as the executors see it: any Hadoop file system URI
 *       (file:, hdfs:, s3a: with its connector on the class path), a local path, or the bare name
 *       of a file shipped with spark-submit --files;
 *   <li>{@code layers}: key prefixes of the layers in the file, comma-separated, applied in order
 *       (see {@link LayerRef}): "tri_mul_in" in a prefix makes a layer incoming, else outgoing,
 *       residual on; {@code prefix:in}, {@code prefix:out} and {@code prefix:noresidual}
 *       override that, e.g. {@code 'trunk.0.tri_mul_out., trunk.0.tri_mul_in.'}.
 * </ul>
 * The result is the output tensor, bf16 little-endian [n][n][dim]. Each executor reads the layers
 * once and keeps them ({@link WeightsCache}, spark.foldcp.weights.cacheEntries stacks); each row
 * runs on the CPU backend with spark.foldcp.cpu.threads threads (0: spark.task.cpus).
 */
public final class FoldCpFunctions {
  /** The SQL name of the TriMul function. */
  public static final String NAME = "foldcp_trimul";

  private FoldCpFunctions() {}

  /** Registers {@code foldcp_trimul} as a temporary function of {@code spark}'s session. */
  public static void register(SparkSession spark) {
    spark.udf().register(NAME, new TriMulUdf(), DataTypes.BinaryType);
  }

  /**
   * Adds {@code foldcp_trimul} to the built-in functions of every session built with these
   * extensions (SparkSession.Builder.withExtensions, or an extensions class named in
   * spark.sql.extensions), so SQL can use it without a register call.
   */
  public static void inject(SparkSessionExtensions ext) {
    ext.injectFunction(new Tuple3<>(TriMulExpression.identifier(), TriMulExpression.info(), TriMulExpression.builder()));
  }

  /** {@code foldcp_trimul} as a Column expression; needs no registration. */
  public static Column trimul(Column pair, Column n, Column dim, Column mask, String weights, String layers) {
    return functions.udf(new TriMulUdf(), DataTypes.BinaryType).withName(NAME)
        .apply(pair, n, dim, mask, functions.lit(weights), functions.lit(layers));
  }

  /** {@link #trimul(Column, Column, Column, Column, String, String)} with every position valid. */
  public static Column trimul(Column pair, Column n, Column dim, String weights, String layers) {
    return trimul(pair, n, dim, functions.lit(null).cast(DataTypes.BinaryType), weights, layers);
  }
}
