package org.foldcp.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import com.esotericsoftware.kryo.io.UnsafeInput;
import com.esotericsoftware.kryo.io.UnsafeOutput;
import java.util.SplittableRandom;
import org.apache.spark.SparkConf;
import org.apache.spark.serializer.KryoSerializer;
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
import org.foldcp.ops.testing.Fuzz;
import org.foldcp.spark.shuffle.RankMessage;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzzes fold-cp's Kryo serializers with Spark's Kryo and fold-cp's registrations, through safe
 * and unsafe streams: serialized values with byte-level mutations. One target per serializer
 * file: pair tiles ({@link PairTensorSerializer}, mutations in the shape varints above all),
 * layers ({@link LayerSerializers}), CP index values ({@link CpSerializers}) and route messages
 * ({@link RouteSerializers}). Kryo reports a corrupt stream with KryoException, which is
 * accepted here beside InvalidInputException; the rest of {@link Fuzz}'s contract holds: no
 * other exception, no hang, and no allocation beyond the stream's size (a count claiming 2^31
 * elements is refused, or read as far as the stream goes, before it is allocated).
 *
 * <p>Reference tracking is off, so that the bytes are the serializers' own: with it on, Kryo
 * reads a reference id before every object and fails on a corrupt one inside its own resolver
 * (IndexOutOfBoundsException), as it does for every class Spark serializes.
 */
@Timeout(300)
class KryoFuzzTest {
  static final int RANDOM_INPUTS = Fuzz.iterations(10_000);

  /** Spark's Kryo with fold-cp's registrations, as executors configure it. */
  private static Kryo kryo() {
    SparkConf conf = new SparkConf(false)
        .set("spark.kryo.registrator", FoldCpKryoRegistrator.class.getName())
        .set("spark.kryo.registrationRequired", "true");
    Kryo kryo = new KryoSerializer(conf).newKryo();
    kryo.setReferences(false);
    return kryo;
  }

  /** The serializer's bytes for {@code value}, without a class id (the fuzz is about the serializer). */
  private static byte[] write(Kryo kryo, Object value, boolean unsafe) {
    Output out = unsafe ? new UnsafeOutput(1 << 12, -1) : new Output(1 << 12, -1);
    kryo.writeObject(out, value);
    return out.toBytes();
  }

  private static Object read(Kryo kryo, byte[] bytes, Class<?> type, boolean unsafe) {
    Input in = unsafe ? new UnsafeInput(bytes) : new Input(bytes);
    return kryo.readObject(in, type);
  }

  @Test
  void pairTiles() {
    PairTensor masked = PairTensor.random(2, 5, 3, 7L, 0.3);
    PairTensor plain = PairTensor.random(1, 4, 2, 8L, 0);
    PairTensor window = PairTensor.random(1, 9, 2, 9L, 0.2).window(2, 3, 4, 5);
    Kryo kryo = kryo();
    assertTrue(masked.sameAs((PairTensor) read(kryo, write(kryo, masked, false), PairTensor.class, false)));
    // the header (the shape varints) is in the first 16 bytes
    fuzz(kryo, "kryo pair tiles", "kryo", 16, masked, plain, window);
  }

  @Test
  void layers() {
    LayerWeights biased = LayerWeights.random(2, 11L, true);
    LayerWeights plain = LayerWeights.random(3, 12L, false);
    TriMulLayer out = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), biased);
    TriMulLayer in = new TriMulLayer(TriMulSpec.of(Direction.INCOMING), plain);
    LayerStack stack = new LayerStack(java.util.List.of(out, new TriMulLayer(TriMulSpec.of(Direction.INCOMING), biased)));
    WeightTensor tensor = new WeightTensor("p_in.weight", new long[] {2, 3}, new float[] {1, 2, 3, 4, 5, 6});
    Kryo kryo = kryo();
    assertEquals(biased.digest(), ((LayerWeights) read(kryo, write(kryo, biased, true), LayerWeights.class, true)).digest());
    fuzz(kryo, "kryo layers", "kryo-layers", Integer.MAX_VALUE, tensor, biased, plain, out.spec(), in, stack);
  }

  @Test
  void cpValues() {
    Kryo kryo = kryo();
    fuzz(kryo, "kryo cp values", "kryo-cp", Integer.MAX_VALUE, CpGrid.of(2, 3), new TileBounds(0, 8, 16, 8),
        new ReshardSegment(1, 3, new TileBounds(8, 0, 8, 16), 4, 2), new ShardLayout(CpGrid.of(2, 2), 30, 8));
  }

  @Test
  void routeMessages() {
    TileRecord tile = new TileRecord("complex-7", 9, 0, 4, PairTensor.random(1, 9, 2, 3L, 0.2).window(0, 4, 5, 5));
    Kryo kryo = kryo();
    fuzz(kryo, "kryo route messages", "kryo-routes", 48, tile, new TileKey("complex-7", 3),
        RankMessage.payload(2, new float[] {0.5f, -1f, 3f}), RankMessage.tile(1, tile));
  }

  /**
   * {@link #RANDOM_INPUTS} mutants of the serialized {@code values}, each through a safe or an
   * unsafe stream; input q of target {@code rngKey} is replayable alone.
   */
  private static void fuzz(Kryo kryo, String name, String rngKey, int hot, Object... values) {
    byte[][][] seeds = new byte[2][values.length][];
    for (int u = 0; u < 2; u++) {
      for (int k = 0; k < values.length; k++) {
        seeds[u][k] = write(kryo, values[k], u == 1);
        Object back = read(kryo, seeds[u][k], values[k].getClass(), u == 1);
        assertEquals(values[k].getClass(), back.getClass(), "the seed deserializes");
      }
    }
    try (Fuzz fuzz = new Fuzz(name, 10_000, 16L << 20, 64).alsoAccept(KryoException.class)) {
      for (int q = 0; q < RANDOM_INPUTS; q++) {
        SplittableRandom rng = Fuzz.rng(rngKey, q);
        boolean unsafe = rng.nextBoolean();
        int kind = rng.nextInt(values.length);
        Class<?> type = values[kind].getClass();
        byte[] seed = seeds[unsafe ? 1 : 0][kind];
        StringBuilder how = new StringBuilder((unsafe ? "unsafe " : "safe ") + type.getSimpleName() + ":");
        byte[] input = Fuzz.mutateBytes(seed, Math.min(seed.length, hot), rng, how);
        fuzz.check(q, how.toString(), input, () -> read(kryo, input, type, unsafe));
      }
      fuzz.assertClean();
      assertTrue(fuzz.accepted() > 0, fuzz.summary());
    }
  }
}
