package org.foldcp.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.io.Serializable;
import java.nio.ByteBuffer;
import org.apache.spark.SparkConf;
import org.apache.spark.serializer.KryoSerializer;
import org.apache.spark.serializer.SerializerInstance;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ReshardSegment;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.layer.WeightTensor;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/** Round trips through Spark's own KryoSerializer with registrationRequired, as executors run it. */
class FoldCpKryoRegistratorTest {

  private static SerializerInstance kryo(boolean unsafe) {
    SparkConf conf = new SparkConf(false)
        .set("spark.kryo.registrator", FoldCpKryoRegistrator.class.getName())
        .set("spark.kryo.registrationRequired", "true")
        .set("spark.kryo.unsafe", Boolean.toString(unsafe));
    return new KryoSerializer(conf).newInstance();
  }

  private static <T> ClassTag<T> tag(Class<T> type) {
    return ClassTag$.MODULE$.apply(type);
  }

  private static <T> T roundTrip(SerializerInstance ser, T value, Class<T> type) {
    ByteBuffer bytes = ser.serialize(value, tag(type));
    return ser.deserialize(bytes, tag(type));
  }

  @ParameterizedTest(name = "unsafe={0}")
  @ValueSource(booleans = {false, true})
  void maskedPairTensorRoundTripsBitForBit(boolean unsafe) {
    SerializerInstance ser = kryo(unsafe);
    PairTensor x = PairTensor.random(2, 23, 12, 42L, 0.3);
    ByteBuffer bytes = ser.serialize(x, tag(PairTensor.class));
    // 2 bytes a value and 1 a mask entry, plus a header: no per-row overhead to speak of.
    long raw = 2 * x.elementCount() + (long) x.batch() * x.rows() * x.cols();
    assertTrue(bytes.remaining() <= raw + 16, bytes.remaining() + " bytes for " + raw + " bytes of data");
    PairTensor y = ser.deserialize(bytes, tag(PairTensor.class));
    assertNotSame(x, y);
    assertEquals(x.shapeString(), y.shapeString());
    assertTrue(y.hasMask());
    for (int b = 0; b < x.batch(); b++) {
      for (int i = 0; i < x.rows(); i++) {
        assertArrayEquals(x.row(b, i), y.row(b, i), "values of row (" + b + ", " + i + ")");
        assertArrayEquals(x.maskRow(b, i), y.maskRow(b, i), "mask of row (" + b + ", " + i + ")");
      }
    }
  }

  @ParameterizedTest(name = "unsafe={0}")
  @ValueSource(booleans = {false, true})
  void unmaskedNonSquareTileRoundTrips(boolean unsafe) {
    PairTensor whole = PairTensor.random(1, 20, 6, 7L, 0);
    PairTensor tile = whole.window(5, 0, 7, 20);
    PairTensor y = roundTrip(kryo(unsafe), tile, PairTensor.class);
    assertEquals("(1, 7, 20, 6)", y.shapeString());
    assertTrue(!y.hasMask() && y.sameAs(tile));
  }

  @ParameterizedTest(name = "unsafe={0}")
  @ValueSource(booleans = {false, true})
  void layerStackRoundTripsWithEqualDigests(boolean unsafe) {
    checkStackRoundTrip(unsafe, LayerStack.randomAlternating(3, 16, 99L, true));
    LayerStack hidden = LayerStack.randomAlternating(2, 24, 40, 98L, true); // H of its own, wider than D
    checkStackRoundTrip(unsafe, hidden);
    assertEquals(40, roundTrip(kryo(unsafe), hidden, LayerStack.class).hidden());
  }

  private static void checkStackRoundTrip(boolean unsafe, LayerStack stack) {
    LayerStack y = roundTrip(kryo(unsafe), stack, LayerStack.class);
    assertEquals(stack.size(), y.size());
    for (int l = 0; l < stack.size(); l++) {
      TriMulLayer a = stack.get(l);
      TriMulLayer b = y.get(l);
      assertEquals(a.spec(), b.spec());
      assertEquals(a.weights().digest(), b.weights().digest(), "digest of layer " + l);
      assertEquals(a.weights().names(), b.weights().names());
      for (String name : a.weights().names()) {
        assertArrayEquals(a.weights().get(name), b.weights().get(name), "layer " + l + " " + name);
      }
    }
  }

  @Test
  void layersWithoutBiasesAndSharedWeightsRoundTrip() {
    LayerWeights w = LayerWeights.random(8, 5L, false);
    LayerStack stack = LayerStack.of(
        new TriMulLayer(new TriMulSpec(Direction.OUTGOING, true, 1e-6f), w),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING), w));
    LayerStack y = roundTrip(kryo(false), stack, LayerStack.class);
    assertEquals(1e-6f, y.get(0).spec().eps());
    assertEquals(Direction.INCOMING, y.get(1).direction());
    assertEquals(w.digest(), y.get(0).weights().digest());
    // Reference tracking (Spark's default) writes weights shared by two layers once.
    assertSame(y.get(0).weights(), y.get(1).weights());
  }

  @Test
  void routeRecordsRoundTrip() {
    SerializerInstance ser = kryo(false);
    PairTensor t = PairTensor.random(1, 4, 5, 5, 0.3).window(0, 0, 3, 4);
    org.foldcp.spark.tiles.TileRecord r = new org.foldcp.spark.tiles.TileRecord("cx", 9, 3, 6, t);
    org.foldcp.spark.tiles.TileRecord rb = roundTrip(ser, r, org.foldcp.spark.tiles.TileRecord.class);
    assertEquals("cx", rb.complexId);
    assertEquals(9, rb.nTokens);
    assertEquals(3, rb.row0);
    assertEquals(6, rb.col0);
    assertTrue(t.sameAs(rb.tile));
    org.foldcp.spark.tiles.TileKey k = new org.foldcp.spark.tiles.TileKey("cx", 3);
    assertEquals(k, roundTrip(ser, k, org.foldcp.spark.tiles.TileKey.class));
    org.foldcp.spark.shuffle.RankMessage p = org.foldcp.spark.shuffle.RankMessage.payload(2, new float[] {1.5f, -0f, Float.NaN});
    org.foldcp.spark.shuffle.RankMessage pb = roundTrip(ser, p, org.foldcp.spark.shuffle.RankMessage.class);
    assertEquals(2, pb.src);
    assertArrayEquals(p.payload, pb.payload);
    org.foldcp.spark.shuffle.RankMessage m = org.foldcp.spark.shuffle.RankMessage.tile(1, r);
    org.foldcp.spark.shuffle.RankMessage mb = roundTrip(ser, m, org.foldcp.spark.shuffle.RankMessage.class);
    assertTrue(mb.isTile() && mb.src == 1 && mb.tile.tile.sameAs(t));
  }

  @Test
  void weightTensorAndIndexClassesRoundTrip() {
    SerializerInstance ser = kryo(false);
    WeightTensor t = new WeightTensor("p_in.weight", new long[] {4, 2}, new float[] {1, -2, 3.5f, Float.MIN_VALUE, 0, -0f, 7, 8});
    WeightTensor tb = roundTrip(ser, t, WeightTensor.class);
    assertEquals("p_in.weight", tb.name());
    assertArrayEquals(t.shape(), tb.shape());
    assertArrayEquals(t.values(), tb.values());

    CpGrid grid = CpGrid.of(2, 3);
    assertEquals(grid, roundTrip(ser, grid, CpGrid.class));
    ShardLayout layout = new ShardLayout(grid, 50, 12);
    ShardLayout lb = roundTrip(ser, layout, ShardLayout.class);
    assertEquals(layout.toString(), lb.toString());
    assertEquals(layout.tile(4), lb.tile(4));
    ShardLayout withHidden = new ShardLayout(grid, 50, 20, 18);
    ShardLayout hb = roundTrip(ser, withHidden, ShardLayout.class);
    assertEquals(18, hb.hidden());
    assertEquals(3, hb.channelsPerRank());
    assertEquals(withHidden.toString(), hb.toString());
    TileBounds tile = new TileBounds(18, 36, 18, 18);
    assertEquals(tile, roundTrip(ser, tile, TileBounds.class));
    ReshardSegment seg = new ReshardSegment(3, 1, tile, 8, 2);
    ReshardSegment sb = roundTrip(ser, seg, ReshardSegment.class);
    assertEquals(seg.toString(), sb.toString());
    assertEquals(Direction.INCOMING, roundTrip(ser, Direction.INCOMING, Direction.class));
  }

  @Test
  void arraysOfRegisteredClassesRoundTrip() {
    SerializerInstance ser = kryo(false);
    PairTensor[] tensors = {PairTensor.random(1, 3, 2, 1L, 0.5), PairTensor.random(1, 4, 2, 2L, 0)};
    PairTensor[] back = roundTrip(ser, tensors, PairTensor[].class);
    assertEquals(2, back.length);
    assertTrue(back[0].sameAs(tensors[0]) && back[1].sameAs(tensors[1]));
    short[][] rows = {{1, 2}, {-3}};
    assertArrayEquals(rows, roundTrip(ser, rows, short[][].class));
  }

  /** The control: registrationRequired is really on, so the round trips above prove registration. */
  @Test
  void anUnregisteredClassIsRefused() {
    Exception e = assertThrows(Exception.class, () -> kryo(false).serialize(new Unregistered(), tag(Unregistered.class)));
    assertTrue(String.valueOf(e.getMessage()).contains("not registered"), String.valueOf(e.getMessage()));
  }

  static final class Unregistered implements Serializable {
    private static final long serialVersionUID = 1L;
    int value = 1;
  }

  @Test
  void aCorruptMaskIsRejectedOnRead() {
    SerializerInstance ser = kryo(false);
    ByteBuffer bytes = ser.serialize(PairTensor.random(1, 4, 2, 3L, 0.5), tag(PairTensor.class));
    byte[] b = new byte[bytes.remaining()];
    bytes.get(b);
    b[b.length - 1] = 2; // the last mask entry; masks hold only 0 and 1
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> ser.deserialize(ByteBuffer.wrap(b), tag(PairTensor.class)));
    assertTrue(e.getMessage().contains("mask values must be 0 (masked) or 1 (valid)"), e.getMessage());
  }

  @Test
  void aPairTensorShapeBeyondTheStreamIsRefusedBeforeAllocating() {
    // found by KryoFuzzTest.pairTiles: shape varints claiming 2^30 values (or 2^30 rows) in a stream of
    // a few bytes made the serializer allocate gigabytes (readShorts(n) allocates n first)
    Kryo kryo = new KryoSerializer(new SparkConf(false)
        .set("spark.kryo.registrator", FoldCpKryoRegistrator.class.getName())).newKryo();
    kryo.setReferences(false);
    com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory
        .getThreadMXBean();
    for (int[] shape : new int[][] {{1, 1, 1 << 15, 1 << 15}, {1 << 15, 1 << 15, 1, 1}}) {
      Output out = new Output(64);
      for (int s : shape) {
        out.writeVarInt(s, true);
      }
      out.writeShorts(new short[] {1, 2, 3});
      byte[] stream = out.toBytes();
      long before = mx.getCurrentThreadAllocatedBytes();
      KryoException e = assertThrows(KryoException.class,
          () -> kryo.readObject(new Input(stream), PairTensor.class));
      long allocated = mx.getCurrentThreadAllocatedBytes() - before;
      assertTrue(e.getMessage().contains("Buffer underflow"), e.getMessage());
      assertTrue(allocated < (16 << 20), java.util.Arrays.toString(shape) + " allocated " + allocated + " bytes");
    }
  }

  @Test
  void aTileRecordWhoseComplexIdClaimsTooManyBytesIsACorruptStream() {
    Kryo kryo = new KryoSerializer(new SparkConf(false)
        .set("spark.kryo.registrator", FoldCpKryoRegistrator.class.getName())).newKryo();
    kryo.setReferences(false);
    Output out = new Output(256);
    out.writeVarInt(70_000, true); // the id's UTF-8 length, above the 64 KiB any id may have
    out.writeVarInt(2, true);
    out.writeVarInt(0, true);
    out.writeVarInt(0, true);
    kryo.writeObject(out, PairTensor.random(1, 2, 1, 1L, 0));
    byte[] stream = out.toBytes();
    KryoException e = assertThrows(KryoException.class,
        () -> kryo.readObject(new Input(stream), TileRecord.class));
    assertTrue(e.getMessage().contains("UTF-8 length of TileRecord complex id = 70000: must be in [0, 65536]"),
        e.getMessage());
  }

  @Test
  void alteredWeightsFailTheDigestCheck() {
    SerializerInstance ser = kryo(false);
    LayerWeights w = LayerWeights.random(4, 8L, false);
    ByteBuffer bytes = ser.serialize(w, tag(LayerWeights.class));
    byte[] b = new byte[bytes.remaining()];
    bytes.get(b);
    // Kryo's safe Output writes floats big-endian; flip the lowest mantissa bit of p_out.weight[0].
    int bits = Float.floatToRawIntBits(w.get(LayerWeights.P_OUT_W)[0]);
    int at = indexOf(b, new byte[] {(byte) (bits >>> 24), (byte) (bits >>> 16), (byte) (bits >>> 8), (byte) bits});
    assertTrue(at >= 0, "the float is in the stream");
    b[at + 3] ^= 1;
    KryoException e = assertThrows(KryoException.class,
        () -> ser.deserialize(ByteBuffer.wrap(b), tag(LayerWeights.class)));
    assertTrue(e.getMessage().contains("digest mismatch"), e.getMessage());
  }

  private static int indexOf(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int k = 0; k < needle.length; k++) {
        if (haystack[i + k] != needle[k]) {
          continue outer;
        }
      }
      return i;
    }
    return -1;
  }
}
