package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.util.Arrays;
import org.foldcp.ops.tensor.PairTensor;

/**
 * Kryo form of a pair tensor: the shape, then the bf16 rows as raw shorts (2 bytes a value, no
 * per-row object headers, bulk copies under spark.kryo.unsafe), then the mask rows if there is a
 * mask. Pair tensors are the bulk of what fold-cp moves, so this stays within a few bytes of the
 * raw size, where Kryo's field serializer would need reflection into final fields and a class
 * tag for every row array.
 */
final class PairTensorSerializer extends Serializer<PairTensor> {
  @Override
  public void write(Kryo kryo, Output output, PairTensor t) {
    output.writeVarInt(t.batch(), true);
    output.writeVarInt(t.rows(), true);
    output.writeVarInt(t.cols(), true);
    output.writeVarInt(t.dim(), true);
    for (int b = 0; b < t.batch(); b++) {
      for (int i = 0; i < t.rows(); i++) {
        output.writeShorts(t.row(b, i));
      }
    }
    output.writeBoolean(t.hasMask());
    if (t.hasMask()) {
      for (int b = 0; b < t.batch(); b++) {
        for (int i = 0; i < t.rows(); i++) {
          output.writeBytes(t.maskRow(b, i));
        }
      }
    }
  }

  @Override
  public PairTensor read(Kryo kryo, Input input, Class<PairTensor> type) {
    int batch = input.readVarInt(true);
    int rows = input.readVarInt(true);
    int cols = input.readVarInt(true);
    int dim = input.readVarInt(true);
    // Check the header before allocating from it: a corrupt stream must not ask for 2^62 bytes.
    long rowCount = (long) batch * rows;
    long rowLength = (long) cols * dim;
    if (batch < 1 || rows < 1 || cols < 1 || dim < 1 || rowCount > Integer.MAX_VALUE - 8
        || rowLength > Integer.MAX_VALUE - 8) {
      throw new KryoException("corrupt PairTensor header: shape (" + batch + ", " + rows + ", " + cols + ", " + dim + ")");
    }
    // Nor may a header that passes ask for more than the stream holds: Kryo's readShorts(n)
    // allocates n shorts before it finds the stream short, so rows (and long rows) are read in
    // bounded pieces into arrays that grow only as data actually arrives.
    short[][] data = new short[(int) Math.min(rowCount, ROWS_AHEAD)][];
    for (int r = 0; r < rowCount; r++) {
      if (r == data.length) {
        data = Arrays.copyOf(data, (int) Math.min(rowCount, 2L * data.length));
      }
      data[r] = KryoReads.shorts(input, (int) rowLength);
    }
    byte[][] mask = null;
    if (input.readBoolean()) {
      mask = new byte[(int) rowCount][];
      for (int r = 0; r < mask.length; r++) {
        mask[r] = input.readBytes(cols);
      }
    }
    // wrap re-checks row lengths and that mask values are 0 or 1.
    return PairTensor.wrap(batch, rows, cols, dim, data, mask);
  }

  /** Rows allocated ahead of the data; more are added (doubling) as rows arrive. */
  private static final int ROWS_AHEAD = 1024;
}
