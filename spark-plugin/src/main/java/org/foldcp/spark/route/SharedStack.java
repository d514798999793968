package org.foldcp.spark.route;

import java.io.Serializable;
import java.util.Objects;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * A layer stack that travels to each executor once, as a Spark broadcast, instead of inside
 * every task's closure: task functions hold this handle (a few bytes), and the first task of an
 * executor that asks for {@link #get()} fetches the weights, which the executor's block manager
 * then keeps for its later tasks and stages. So a job's task binaries do not grow with the
 * weights, and an executor holds one decoded copy of them however many tasks it runs.
 *
 * <p>Made once per job on the driver; Spark's context cleaner drops the broadcast when no RDD
 * refers to it any more.
 */
public final class SharedStack implements Serializable {
  private static final long serialVersionUID = 1L;

  private final Broadcast<LayerStack> weights;
  private final int size;
  private final int dim;

  private SharedStack(Broadcast<LayerStack> weights, int size, int dim) {
    this.weights = weights;
    this.size = size;
    this.dim = dim;
  }

  /** Broadcasts {@code stack} from the driver of {@code sc}. */
  public static SharedStack of(SparkContext sc, LayerStack stack) {
    Objects.requireNonNull(stack, "stack");
    return new SharedStack(JavaSparkContext.fromSparkContext(sc).broadcast(stack), stack.size(), stack.dim());
  }

  /** The stack; on an executor, fetched at the first call and shared by its tasks. */
  public LayerStack get() {
    return weights.value();
  }

  /** Layer {@code index} of the stack. */
  public TriMulLayer layer(int index) {
    return get().get(index);
  }

  /** Layers in the stack, known without fetching it. */
  public int size() {
    return size;
  }

  /** D of the stack, known without fetching it. */
  public int dim() {
    return dim;
  }

  @Override
  public String toString() {
    return "SharedStack(" + size + " layers of D = " + dim + ", broadcast " + weights.id() + ")";
  }
}
