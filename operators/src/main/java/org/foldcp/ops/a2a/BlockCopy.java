package org.foldcp.ops.a2a;

/**
 * A two-level strided copy, in elements: for o in [0, outerCount) and i in [0, innerCount),
 * {@code runLength} contiguous elements go from
 * {@code srcOffset + o*srcOuterStride + i*srcInnerStride} to
 * {@code dstOffset + o*dstOuterStride + i*dstInnerStride}. It describes one block of a heads
 * all-to-all ({@link HeadsLayout}) the same way for the host route and the GPU kernels.
 */
public record BlockCopy(int srcOffset, int dstOffset, int outerCount, int innerCount, int runLength,
                        int srcOuterStride, int srcInnerStride, int dstOuterStride, int dstInnerStride) {
  public BlockCopy {
    if (outerCount < 0 || innerCount < 0 || runLength < 0 || srcOffset < 0 || dstOffset < 0) {
      throw new IllegalArgumentException("block copy with a negative count or offset: " + describe(srcOffset,
          dstOffset, outerCount, innerCount, runLength, srcOuterStride, srcInnerStride, dstOuterStride, dstInnerStride));
    }
  }

  /** Elements copied. */
  public int elements() {
    return outerCount * innerCount * runLength;
  }

  /**
   * The same copy with fewer, longer runs: where both inner strides equal the run length the
   * inner rows touch on both sides, so they merge into one run per outer step.
   */
  public BlockCopy normalised() {
    if (innerCount == 1 || srcInnerStride != runLength || dstInnerStride != runLength) {
      return this;
    }
    int run = innerCount * runLength;
    return new BlockCopy(srcOffset, dstOffset, outerCount, 1, run, srcOuterStride, run, dstOuterStride, run);
  }

  /** The source side of this copy, written contiguously from {@code offset}: packs a block to send. */
  public BlockCopy toContiguous(int offset) {
    return new BlockCopy(srcOffset, offset, outerCount, innerCount, runLength, srcOuterStride, srcInnerStride,
        innerCount * runLength, runLength).normalised();
  }

  /** The destination side of this copy, read contiguously from {@code offset}: unpacks a received block. */
  public BlockCopy fromContiguous(int offset) {
    return new BlockCopy(offset, dstOffset, outerCount, innerCount, runLength, innerCount * runLength, runLength,
        dstOuterStride, dstInnerStride).normalised();
  }

  /**
   * Applies the copy between two arrays of the same primitive type (short[] for bf16/fp16 bits,
   * float[], int[], ...): System.arraycopy moves the bits as they are, NaN payloads included.
   */
  public void apply(Object src, Object dst) {
    for (int o = 0; o < outerCount; o++) {
      int s = srcOffset + o * srcOuterStride;
      int d = dstOffset + o * dstOuterStride;
      for (int i = 0; i < innerCount; i++) {
        System.arraycopy(src, s + i * srcInnerStride, dst, d + i * dstInnerStride, runLength);
      }
    }
  }

  @Override
  public String toString() {
    return describe(srcOffset, dstOffset, outerCount, innerCount, runLength, srcOuterStride, srcInnerStride,
        dstOuterStride, dstInnerStride);
  }

  private static String describe(int srcOffset, int dstOffset, int outerCount, int innerCount, int runLength,
                                 int srcOuterStride, int srcInnerStride, int dstOuterStride, int dstInnerStride) {
    return "copy " + outerCount + " x " + innerCount + " runs of " + runLength + " from " + srcOffset + " (strides "
        + srcOuterStride + ", " + srcInnerStride + ") to " + dstOffset + " (strides " + dstOuterStride + ", "
        + dstInnerStride + ")";
  }
}
