package org.foldcp.spark.udf;

import org.apache.spark.sql.api.java.UDF6;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.NonFiniteInputException;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.plugin.ExecutorConf;
import org.foldcp.spark.route.NonFiniteInput;
import org.foldcp.spark.route.RoutePlan;
import scala.runtime.AbstractFunction6;

/**
 * {@code foldcp_trimul(pair, n, dim, mask, weights, layers)}: a TriMul layer stack applied to a
 * whole pair tensor held in one row (cp = 1), on the CPU backend of the executor that runs the
 * row. See {@link FoldCpFunctions} for the arguments.
 *
 * <p>A null pair gives null (the SQL convention for a missing value); every other bad argument
 * fails the row with an {@link InvalidInputException} that names the argument and the rule,
 * since a wrong shape or weights reference is a bug in the query, not missing data.
 *
 * <p>n and dim are taken as {@link Number} so that INT, BIGINT, SMALLINT and TINYINT columns
 * all work: Java UDFs get no implicit casts from Spark, and a BIGINT n would otherwise fail
 * with a ClassCastException instead of a message.
 *
 * <p>It is also the Scala function of the ScalaUDF expression that the injected built-in builds
 * ({@link TriMulExpression}), so Spark's error messages name this class on either path.
 */
public final class TriMulUdf extends AbstractFunction6<byte[], Number, Number, byte[], String, String, byte[]>
    implements UDF6<byte[], Number, Number, byte[], String, String, byte[]> {
  private static final long serialVersionUID = 1L;

  @Override
  public byte[] apply(byte[] pair, Number n, Number dim, byte[] mask, String weights, String layers) {
    return call(pair, n, dim, mask, weights, layers);
  }

  @Override
  public byte[] call(byte[] pair, Number n, Number dim, byte[] mask, String weights, String layers) {
    if (pair == null) {
      return null;
    }
    int tokens = positiveInt("n", n, "the number of tokens N");
    int d = positiveInt("dim", dim, "the pair channel count D");
    PairTensor x = PairBytes.decode(pair, mask, tokens, d);
    WeightsKey key = WeightsKey.of(weights, layers);
    FoldCpConf conf = ExecutorConf.current();
    WeightsCache cache = WeightsCache.shared();
    cache.setCapacity(conf.get(FoldCpConf.WEIGHTS_CACHE_ENTRIES));
    LayerStack stack = cache.get(key);
    InvalidInputException.require(stack.dim() == d, "dim", d,
        "must equal D = " + stack.dim() + " of the layers " + key.layers() + " in " + key.location()
            + " (their norm_in.weight has " + stack.dim() + " values)");
    boolean allowNonFinite = conf.get(FoldCpConf.INPUT_ALLOW_NON_FINITE);
    try {
      return RowBackends.with(RoutePlan.Backend.of(conf).forStack(stack), ExecutorConf.cpuThreadsPerTask(),
          backend -> PairBytes.encode(backend.forward(x, stack, allowNonFinite)));
    } catch (NonFiniteInputException e) {
      // A row carries no complex id: the message names the argument and the shape.
      throw NonFiniteInput.about(e, "the pair argument of " + FoldCpFunctions.NAME + " (n = " + tokens + ", dim = "
          + d + ")");
    }
  }

  /** An integral value in [1, 2^31): Spark hands INT as Integer, BIGINT as Long, and so on. */
  static int positiveInt(String what, Number v, String meaning) {
    InvalidInputException.require(v != null, what, "null", "must be given: " + meaning + ", an integer >= 1");
    long whole = v.longValue();
    InvalidInputException.require(v.doubleValue() == whole, what, v, meaning + " must be a whole number");
    InvalidInputException.require(whole >= 1 && whole <= Integer.MAX_VALUE, what, v,
        meaning + " must be an integer >= 1 (and below 2^31)");
    return (int) whole;
  }
}
