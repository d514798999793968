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
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Fuzz;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzzes the Kryo form of a pair tile's values ({@link PairTensorSerializer}) with Spark's Kryo
 * and fold-cp's registrations, through safe and unsafe streams: serialized tensors with
 * byte-level mutations, the shape varints above all. Kryo reports a corrupt stream with
 * KryoException, which is accepted here beside InvalidInputException; the rest of {@link Fuzz}'s
 * contract holds: no other exception, no hang, and no allocation beyond the stream's size.
 *
 * <p>Reference tracking is off, so that the bytes are the serializer's own: with it on, Kryo
 * reads a reference id before every object and fails on a corrupt one inside its own resolver
 * (IndexOutOfBoundsException), as it does for every class Spark serializes. TileRecord is not
 * fuzzed here for the same reason: its complex id goes through Kryo's readString, which
 * allocates from an unchecked length and fails with StringIndexOutOfBoundsException on its own.
 */
@Timeout(300)
class KryoTileFuzzTest {
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
  void fuzz() {
    Kryo kryo = kryo();
    PairTensor masked = PairTensor.random(2, 5, 3, 7L, 0.3);
    PairTensor plain = PairTensor.random(1, 4, 2, 8L, 0);
    PairTensor window = PairTensor.random(1, 9, 2, 9L, 0.2).window(2, 3, 4, 5);
    Object[] values = {masked, plain, window};
    byte[][][] seeds = new byte[2][values.length][];
    for (int u = 0; u < 2; u++) {
      for (int k = 0; k < values.length; k++) {
        seeds[u][k] = write(kryo, values[k], u == 1);
        Object back = read(kryo, seeds[u][k], values[k].getClass(), u == 1);
        assertEquals(values[k].getClass(), back.getClass(), "the seed deserializes");
      }
    }
    assertTrue(masked.sameAs((PairTensor) read(kryo, seeds[0][0], PairTensor.class, false)));
    try (Fuzz fuzz = new Fuzz("kryo pair tiles", 10_000, 16L << 20, 64).alsoAccept(KryoException.class)) {
      for (int q = 0; q < RANDOM_INPUTS; q++) {
        SplittableRandom rng = Fuzz.rng("kryo", q);
        boolean unsafe = rng.nextBoolean();
        int kind = rng.nextInt(values.length);
        Class<?> type = values[kind].getClass();
        byte[] seed = seeds[unsafe ? 1 : 0][kind];
        StringBuilder how = new StringBuilder((unsafe ? "unsafe " : "safe ") + type.getSimpleName() + ":");
        // the header (the shape varints) is in the first 16 bytes
        byte[] input = Fuzz.mutateBytes(seed, Math.min(seed.length, 16), rng, how);
        fuzz.check(q, how.toString(), input, () -> read(kryo, input, type, unsafe));
      }
      fuzz.assertClean();
      assertTrue(fuzz.accepted() > 0, fuzz.summary());
    }
  }
}
