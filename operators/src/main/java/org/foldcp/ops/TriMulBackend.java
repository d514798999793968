package org.foldcp.ops;

import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Something that applies TriMul layers to a whole pair tensor (B, N, N, D). Implementations:
 * the CPU backend here, the GPU backend through JNI. Inputs are never modified; the output
 * carries the input's mask.
 */
public interface TriMulBackend extends AutoCloseable {
  /** A short name for logs and metrics, e.g. "cpu" or "gpu". */
  String name();

  PairTensor forward(PairTensor x, TriMulLayer layer);

  /** Applies the layers in order; the default runs them one by one. */
  default PairTensor forward(PairTensor x, LayerStack stack) {
    PairTensor cur = x;
    for (TriMulLayer layer : stack.layers()) {
      cur = forward(cur, layer);
    }
    return cur;
  }

  @Override
  void close();
}
