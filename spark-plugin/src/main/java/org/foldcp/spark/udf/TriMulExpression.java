package org.foldcp.spark.udf;

import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.ScalaUDF;
import org.apache.spark.sql.types.DataTypes;
import org.foldcp.ops.InvalidInputException;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.runtime.AbstractFunction1;

/**
 * {@code foldcp_trimul} as a function of the session's built-in registry (what
 * {@link FoldCpFunctions#inject} hands to SparkSessionExtensions): its name, its DESCRIBE
 * FUNCTION text and a builder that turns the call's argument expressions into a ScalaUDF over
 * {@link TriMulUdf}, the expression Spark itself builds for a registered Java UDF.
 */
final class TriMulExpression {
  private TriMulExpression() {}

  static FunctionIdentifier identifier() {
    return new FunctionIdentifier(FoldCpFunctions.NAME);
  }

  static ExpressionInfo info() {
    return new ExpressionInfo(TriMulUdf.class.getName(), null, FoldCpFunctions.NAME,
        "_FUNC_(pair, n, dim, mask, weights, layers) - Applies TriMul layers read from a .safetensors file"
            + " to a whole pair tensor (bf16 little-endian [n][n][dim]) and returns the output in the same layout.",
        "\n    Arguments:\n"
            + "      * pair - BINARY, bf16 little-endian [n][n][dim]; NULL gives NULL\n"
            + "      * n - the number of tokens N, an integer >= 1\n"
            + "      * dim - the pair channel count D, an integer >= 1\n"
            + "      * mask - BINARY, uint8 [n][n] with 1 = valid, or NULL for all valid\n"
            + "      * weights - a .safetensors file: a Hadoop file system URI (file:, hdfs:, s3a:), a local path"
            + " on the executors, or the name of a file shipped with --files\n"
            + "      * layers - comma-separated key prefixes applied in order, each optionally"
            + " followed by :in, :out, :noresidual\n  ",
        "", "", "misc_funcs", "", "", "java_udf");
  }

  /** The builder SparkSessionExtensions.injectFunction wants: argument expressions to an expression. */
  static AbstractFunction1<Seq<Expression>, Expression> builder() {
    return new Builder();
  }

  private static final class Builder extends AbstractFunction1<Seq<Expression>, Expression> {
    @Override
    public Expression apply(Seq<Expression> args) {
      InvalidInputException.require(args.size() == 6, "argument count of " + FoldCpFunctions.NAME, args.size(),
          "must be 6: " + FoldCpFunctions.NAME + "(pair, n, dim, mask, weights, layers); pass NULL for no mask");
      // No input encoders (as for spark.udf().register of a Java UDF): arguments arrive as their
      // external Java types, byte[], Integer or Long, String; the output byte[] maps to BINARY.
      return new ScalaUDF(new TriMulUdf(), DataTypes.BinaryType, args,
          ScalaUDF.$lessinit$greater$default$4() /* input encoders: none */, Option.empty() /* output encoder */,
          Option.apply(FoldCpFunctions.NAME), true /* nullable */, true /* deterministic */);
    }
  }
}
