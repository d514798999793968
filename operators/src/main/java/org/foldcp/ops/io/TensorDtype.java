package org.foldcp.ops.io;

import java.nio.ByteBuffer;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.Bf16;

/** The safetensors dtypes weights can be stored in; all of them convert to and from float. */
enum TensorDtype {
  BF16(2), F16(2), F32(4), F64(8);

  /** For messages: the dtypes this package understands. */
  static final String SUPPORTED = "BF16, F16, F32, F64";

  final int itemSize;

  TensorDtype(int itemSize) {
    this.itemSize = itemSize;
  }

  /** The dtype of tensor {@code key}, refusing integer, bool and 8-bit float tensors. */
  static TensorDtype of(String dtype, String key, Object where) {
    for (TensorDtype t : values()) {
      if (t.name().equals(dtype)) {
        return t;
      }
    }
    throw InvalidInputException.of("dtype of '" + key + "' in " + where, FileReads.shown(dtype),
        "supported tensor dtypes are " + SUPPORTED);
  }

  /** Element {@code index} of a little-endian buffer, as float (F64 rounds to nearest). */
  float get(ByteBuffer buf, int index) {
    switch (this) {
      case BF16: return Bf16.toFloat(buf.getShort(2 * index));
      case F16: return Half.toFloat(buf.getShort(2 * index));
      case F32: return buf.getFloat(4 * index);
      default: return (float) buf.getDouble(8 * index);
    }
  }

  /** Appends {@code v} to a little-endian buffer, rounding to nearest even where narrower. */
  void put(ByteBuffer buf, float v) {
    switch (this) {
      case BF16: buf.putShort(Bf16.fromFloat(v)); break;
      case F16: buf.putShort(Half.fromFloat(v)); break;
      case F32: buf.putFloat(v); break;
      default: buf.putDouble(v);
    }
  }

  /** {@code v} after a round trip through this dtype. */
  float round(float v) {
    switch (this) {
      case BF16: return Bf16.round(v);
      case F16: return Half.toFloat(Half.fromFloat(v));
      default: return v;
    }
  }
}
