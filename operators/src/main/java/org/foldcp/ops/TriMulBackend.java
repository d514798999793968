package org.foldcp.ops;

import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.NonFinite;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Something that applies TriMul layers to a whole pair tensor (B, N, N, D). Implementations:
 * the CPU backend here, the GPU backend through JNI. Inputs are never modified; the output
 * carries the input's mask.
 *
 * <p>Input holding NaN or Inf fails with {@link NonFiniteInputException} before any layer runs
 * (one such value spreads into almost every output), unless the caller passes
 * {@code allowNonFinite = true}. Only the input is checked, never the output of a layer.
 */
public interface TriMulBackend extends AutoCloseable {
  /** A short name for logs and metrics, e.g. "cpu" or "gpu". */
  String name();

  /** One layer; with {@code allowNonFinite} false, x must hold no NaN or Inf. */
  PairTensor forward(PairTensor x, TriMulLayer layer, boolean allowNonFinite);

  /** One layer; x must hold no NaN or Inf. */
  default PairTensor forward(PairTensor x, TriMulLayer layer) {
    return forward(x, layer, false);
  }

  /** Applies the layers in order; the default checks x once (unless allowed) and runs them one by one. */
  default PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite) {
    if (!allowNonFinite) {
      NonFinite.check(x, "the pair tensor");
    }
    PairTensor cur = x;
    for (TriMulLayer layer : stack.layers()) {
      cur = forward(cur, layer, true);
    }
    return cur;
  }

  /**
   * As {@link #forward(PairTensor, LayerStack, boolean)}, and reports the device time of each
   * TriMul stage, summed over the layers, to {@code sink}: at most once, after the output is
   * complete. Measuring costs a wait for the kernels after every layer, so callers ask for it only
   * when they publish the times. A backend that cannot time its stages never calls the sink: the
   * default (the CPU backend: its stages are not device kernels, and its time is the caller's
   * compute time already) runs the plain forward.
   */
  default PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite, StageTimes.Sink sink) {
    return forward(x, stack, allowNonFinite);
  }

  /** Applies the layers in order; x must hold no NaN or Inf. */
  default PairTensor forward(PairTensor x, LayerStack stack) {
    return forward(x, stack, false);
  }

  @Override
  void close();
}
