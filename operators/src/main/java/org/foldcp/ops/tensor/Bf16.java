package org.foldcp.ops.tensor;

/**
 * bfloat16 stored in a Java {@code short}: the upper 16 bits of an IEEE float32.
 * Conversion from float rounds to nearest even, as PyTorch and the GPU kernels do, and keeps
 * NaN a (quiet) NaN so that a NaN never turns into a finite number on the way.
 */
public final class Bf16 {
  private Bf16() {}

  public static float toFloat(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }

  public static short fromFloat(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7fffffff) > 0x7f800000) {
      return (short) ((bits >>> 16) | 0x0040); // NaN: keep sign, force quiet bit
    }
    int lsb = (bits >>> 16) & 1;
    return (short) ((bits + 0x7fff + lsb) >>> 16);
  }

  /** Rounds a float to the nearest bf16 value and returns it as float. */
  public static float round(float f) {
    return toFloat(fromFloat(f));
  }

  /** IEEE half (float16) bits to float, for reading F16 files. */
  public static float halfToFloat(short h) {
    int bits = h & 0xffff;
    int sign = (bits & 0x8000) << 16;
    int exp = (bits >>> 10) & 0x1f;
    int mant = bits & 0x3ff;
    if (exp == 0x1f) {
      return Float.intBitsToFloat(sign | 0x7f800000 | (mant << 13));
    }
    if (exp == 0) {
      if (mant == 0) {
        return Float.intBitsToFloat(sign);
      }
      // subnormal half: value = mant * 2^-24
      float v = mant * 0x1.0p-24f;
      return sign != 0 ? -v : v;
    }
    return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  }
}
