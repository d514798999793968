package org.foldcp.ops.io;

import org.foldcp.ops.tensor.Bf16;

/**
 * IEEE 754 binary16 ("half", safetensors F16) conversion. Java 17 has no
 * {@code Float.floatToFloat16} (that arrived in Java 20), so the rounding is spelled out here.
 */
final class Half {
  /** Largest finite half, 65504. */
  static final float MAX = 65504f;

  private Half() {}

  static float toFloat(short h) {
    return Bf16.halfToFloat(h);
  }

  /** Float to half bits, rounding to nearest even; overflow gives infinity, NaN stays a quiet NaN. */
  static short fromFloat(float f) {
    int bits = Float.floatToRawIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    int abs = bits & 0x7fffffff;
    if (abs > 0x7f800000) {
      return (short) (sign | 0x7e00 | ((abs >>> 13) & 0x3ff)); // NaN: quiet bit set, top payload kept
    }
    if (abs >= 0x477ff000) {
      // 65520 is halfway between 65504 and 2^16 and ties to the even 2^16, i.e. infinity.
      return (short) (sign | 0x7c00);
    }
    if (abs >= 0x38800000) {
      // Normal half (>= 2^-14): rebias the exponent from 127 to 15 and drop 13 mantissa bits.
      int h = (abs - ((127 - 15) << 23)) >>> 13;
      return (short) (sign | roundNearestEven(h, abs & 0x1fff, 0x1000));
    }
    if (abs <= 0x33000000) {
      // At most 2^-25, half the smallest subnormal: rounds (ties to even) to zero.
      return (short) sign;
    }
    // Subnormal half: the value in units of 2^-24 is mant * 2^(exp - 126), exp in [102, 112].
    int exp = abs >>> 23;
    int mant = (abs & 0x7fffff) | 0x800000;
    int shift = 126 - exp;
    int h = mant >>> shift;
    // A carry out of the largest subnormal yields 0x400, the smallest normal: still correct.
    return (short) (sign | roundNearestEven(h, mant & ((1 << shift) - 1), 1 << (shift - 1)));
  }

  private static int roundNearestEven(int truncated, int rest, int half) {
    return rest > half || (rest == half && (truncated & 1) != 0) ? truncated + 1 : truncated;
  }
}
