package org.foldcp.ops.gpu.feed;

/**
 * The shape half of a {@link ComplexIn} held as bytes: batch, N and D fixed when it is made, and
 * the uint8 mask as a Java array, or null when every position is valid. Subclasses say where the
 * pair values lie and how the bytes are copied.
 */
public abstract class ComplexBytes implements ComplexIn {
  private final int batch;
  private final int n;
  private final int dim;
  private final byte[] mask;

  protected ComplexBytes(int batch, int n, int dim, byte[] mask) {
    this.batch = batch;
    this.n = n;
    this.dim = dim;
    this.mask = mask;
  }

  @Override
  public final int batch() {
    return batch;
  }

  @Override
  public final int n() {
    return n;
  }

  @Override
  public final int dim() {
    return dim;
  }

  @Override
  public final boolean hasMask() {
    return mask != null;
  }

  /** The uint8 mask (the array itself), or null when every position is valid. */
  public final byte[] mask() {
    return mask;
  }
}
