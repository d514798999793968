package org.foldcp.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.lang.management.ManagementFactory;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** Counts claiming more than the stream holds are refused before they size an allocation. */
class KryoReadsTest {
  /** What one call may allocate here: far below the 2^31 elements the streams claim. */
  private static final long SMALL = 4L << 20;

  /** Bytes this thread allocated while {@code body} ran on {@code bytes}, after it threw. */
  private static long allocatedRefusing(byte[] bytes, Consumer<Input> body, String... expected) {
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long tid = Thread.currentThread().getId();
    long before = mx.getThreadAllocatedBytes(tid);
    KryoException e = assertThrows(KryoException.class, () -> body.accept(new Input(bytes)));
    long used = mx.getThreadAllocatedBytes(tid) - before;
    for (String part : expected) {
      assertTrue(e.getMessage().contains(part), e.getMessage());
    }
    return used;
  }

  private static byte[] varint(int n, int trailingBytes) {
    Output out = new Output(16 + trailingBytes);
    out.writeVarInt(n, true);
    out.writeBytes(new byte[trailingBytes]);
    return out.toBytes();
  }

  @Test
  void arraysClaimingTwoToTheThirtyOneElementsAllocateOnlyWhatArrives() {
    int huge = KryoReads.MAX_ARRAY;
    byte[] few = new byte[1000];
    assertTrue(allocatedRefusing(few, in -> KryoReads.floats(in, huge)) < SMALL);
    assertTrue(allocatedRefusing(few, in -> KryoReads.shorts(in, huge)) < SMALL);
    // a count past the largest array is refused by its rule, before any read
    allocatedRefusing(few, in -> KryoReads.floats(in, -1), "array length = -1: must be in [0, " + huge + "]");
  }

  @Test
  void countsAndStringsNameTheValueAndTheRule() {
    allocatedRefusing(varint(70_000, 4), in -> KryoReads.string(in, "TileKey complex id"),
        "UTF-8 length of TileKey complex id = 70000: must be in [0, 65536]");
    allocatedRefusing(varint(-1, 0), in -> KryoReads.count(in, 0, 12, "tensor count"),
        "tensor count = 4294967295: must be in [0, 12]");
    allocatedRefusing(new byte[] {2, (byte) 0xc3, 0x28}, in -> KryoReads.string(in, "name"),
        "name = (2 bytes): must be UTF-8");
  }

  @Test
  void longArraysRoundTripAcrossPieces() {
    float[] values = new float[200_003];
    for (int q = 0; q < values.length; q++) {
      values[q] = q * 0.5f - 7;
    }
    Output out = new Output(1 << 20, -1);
    out.writeFloats(values);
    KryoReads.writeString(out, "pairformer.layers.3.p_in.weight \u00e9");
    Input in = new Input(out.toBytes());
    assertArrayEquals(values, KryoReads.floats(in, values.length));
    assertEquals("pairformer.layers.3.p_in.weight \u00e9", KryoReads.string(in, "name"));
  }

  @Test
  void aWeightTensorClaimingTwoToTheThirtyOneValuesIsRefusedCheaply() {
    LayerSerializers.WeightTensorSerializer ser = new LayerSerializers.WeightTensorSerializer();
    Output out = new Output(64);
    KryoReads.writeString(out, "w");
    out.writeVarInt(1, true);
    out.writeLongs(new long[] {KryoReads.MAX_ARRAY});
    out.writeVarInt(KryoReads.MAX_ARRAY, true);
    out.writeFloats(new float[] {1, 2, 3});
    assertTrue(allocatedRefusing(out.toBytes(), in -> ser.read(null, in, null)) < SMALL);
    Output deep = new Output(64);
    KryoReads.writeString(deep, "w");
    deep.writeVarInt(1 << 30, true);
    allocatedRefusing(deep.toBytes(), in -> ser.read(null, in, null),
        "rank of WeightTensor 'w' = 1073741824: must be in [0, 64]");
  }
}
