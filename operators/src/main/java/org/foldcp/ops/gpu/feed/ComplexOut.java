package org.foldcp.ops.gpu.feed;

/**
 * Where a complex's output values go (a Spark row's buffer, a file, a heap array): the feed hands
 * them over block by block, in order, each block once, as bulk copies from raw host memory.
 */
@FunctionalInterface
public interface ComplexOut {
  /** Takes bytes [offset, offset + len) of the bf16 output values from the raw address {@code src}. */
  void copyPair(long offset, long src, long len);
}
