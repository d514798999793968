package org.foldcp.ops.a2a;

/**
 * How {@link HostHeadsAllToAll} carries 16-bit and 32-bit values in the float[] payloads of a
 * {@link org.foldcp.ops.cp.ReshardTransport}. The values are a stream of bits cut into chunks,
 * one chunk per wire float, least significant bits first; the last float is zero-padded.
 */
public enum HeadsWire {
  /**
   * 32 bits per float, as raw float bits: two 16-bit values per float, fp32 values as they are.
   * The densest wire, and exact over a transport that keeps raw float bits, NaN payloads
   * included: LocalExchange hands the arrays over, TcpTransport writes them through a
   * little-endian FloatBuffer. A transport that canonicalises NaN (Float.floatToIntBits, as
   * DataOutputStream.writeFloat and Kryo's Output.writeFloats do) would corrupt it.
   */
  RAW_BITS(32),
  /**
   * 24 bits per float, as the exactly representable integer 0 .. 2^24-1: no NaN or infinity
   * is ever on the wire, so the values survive any transport that carries float values,
   * canonicalising ones included. 4/3 the bytes of {@link #RAW_BITS}.
   */
  EXACT_INTEGERS(24);

  private final int chunkBits;
  private final long chunkMask;

  HeadsWire(int chunkBits) {
    this.chunkBits = chunkBits;
    this.chunkMask = (1L << chunkBits) - 1;
  }

  /** Wire floats that carry {@code values} values of {@code valueBits} bits. */
  public int floats(int values, int valueBits) {
    return (int) (((long) values * valueBits + chunkBits - 1) / chunkBits);
  }

  /** Encodes {@code n} 16-bit values from {@code src[off..]} into {@code dst[0 .. floats(n, 16))}. */
  void encode(short[] src, int off, int n, float[] dst) {
    long acc = 0;
    int have = 0;
    int o = 0;
    for (int k = 0; k < n; k++) {
      acc |= (long) (src[off + k] & 0xFFFF) << have;
      have += 16;
      if (have >= chunkBits) { // a chunk holds at least 24 bits: at most one per 16-bit value
        dst[o++] = toFloat(acc & chunkMask);
        acc >>>= chunkBits;
        have -= chunkBits;
      }
    }
    if (have > 0) {
      dst[o] = toFloat(acc & chunkMask);
    }
  }

  /** Decodes {@code n} 16-bit values from {@code src} into {@code dst[off..]}. */
  void decode(float[] src, short[] dst, int off, int n) {
    long acc = 0;
    int have = 0;
    int i = 0;
    for (int k = 0; k < n; k++) {
      if (have < 16) {
        acc |= toChunk(src[i++]) << have;
        have += chunkBits;
      }
      dst[off + k] = (short) acc;
      acc >>>= 16;
      have -= 16;
    }
  }

  /** Encodes {@code n} fp32 values (their raw bits) from {@code src[off..]} into {@code dst[0 .. floats(n, 32))}. */
  void encode(float[] src, int off, int n, float[] dst) {
    if (this == RAW_BITS) {
      System.arraycopy(src, off, dst, 0, n);
      return;
    }
    long acc = 0;
    int have = 0;
    int o = 0;
    for (int k = 0; k < n; k++) {
      acc |= (Float.floatToRawIntBits(src[off + k]) & 0xFFFFFFFFL) << have;
      have += 32;
      while (have >= chunkBits) {
        dst[o++] = toFloat(acc & chunkMask);
        acc >>>= chunkBits;
        have -= chunkBits;
      }
    }
    if (have > 0) {
      dst[o] = toFloat(acc & chunkMask);
    }
  }

  /** Decodes {@code n} fp32 values from {@code src} into {@code dst[off..]}, bit for bit. */
  void decode(float[] src, float[] dst, int off, int n) {
    if (this == RAW_BITS) {
      System.arraycopy(src, 0, dst, off, n);
      return;
    }
    long acc = 0;
    int have = 0;
    int i = 0;
    for (int k = 0; k < n; k++) {
      while (have < 32) {
        acc |= toChunk(src[i++]) << have;
        have += chunkBits;
      }
      dst[off + k] = Float.intBitsToFloat((int) acc);
      acc >>>= 32;
      have -= 32;
    }
  }

  private float toFloat(long chunk) {
    // below 2^24 the int-to-float conversion is exact
    return this == RAW_BITS ? Float.intBitsToFloat((int) chunk) : (float) chunk;
  }

  private long toChunk(float f) {
    if (this == RAW_BITS) {
      return Float.floatToRawIntBits(f) & 0xFFFFFFFFL;
    }
    int c = (int) f;
    if (c != f || (c & ~(int) chunkMask) != 0) { // NaN lands here too: (int) NaN = 0 != NaN
      throw new IllegalStateException("a " + this + " payload holds " + f + " (bits 0x"
          + Integer.toHexString(Float.floatToRawIntBits(f)) + "), not an integer in [0, 2^24): the sender used another"
          + " wire format, or the transport altered the payload");
    }
    return c;
  }
}
