package org.foldcp.spark.plugin;

import com.esotericsoftware.kryo.KryoException;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.function.IntFunction;

/**
 * Reads of counts, arrays and strings for fold-cp's Kryo serializers that never allocate from an
 * unchecked count. Kryo's own {@code readFloats(n)}, {@code readShorts(n)} and {@code readString()}
 * allocate n elements first and only then find the stream short, so a corrupt or hostile varint
 * claiming 2^31 elements costs gigabytes (or an OutOfMemoryError) before any error. Here a count
 * is checked against its rule first, and arrays grow only as their data actually arrives (at most
 * twice what the stream held). Refusals are KryoExceptions naming the value and the rule.
 */
final class KryoReads {
  /** Longest string (UTF-8 bytes) fold-cp writes: weight names, digests, complex ids. */
  static final int MAX_STRING_BYTES = 1 << 16;
  /** Largest Java array a serializer may be asked for. */
  static final int MAX_ARRAY = Integer.MAX_VALUE - 8;
  /** Elements read at a time once an array is longer than this. */
  private static final int CHUNK = 1 << 16;

  private KryoReads() {}

  /** A varint count in [min, max], checked before anything is allocated from it. */
  static int count(Input input, int min, int max, String what) {
    int n = input.readVarInt(true);
    if (n < min || n > max) {
      throw corrupt(what, Integer.toUnsignedString(n), "must be in [" + min + ", " + max + "]");
    }
    return n;
  }

  static KryoException corrupt(String what, Object value, String rule) {
    return new KryoException("corrupt stream: " + what + " = " + value + ": " + rule);
  }

  static float[] floats(Input input, int n) {
    return inPieces(input, n, float[]::new, (in, k) -> in.readFloats(k));
  }

  static short[] shorts(Input input, int n) {
    return inPieces(input, n, short[]::new, (in, k) -> in.readShorts(k));
  }

  /** Writes a non-null string as its UTF-8 byte count and bytes (what {@link #string} reads). */
  static void writeString(Output output, String s) {
    byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
    if (bytes.length > MAX_STRING_BYTES) {
      throw new KryoException("string of " + bytes.length + " UTF-8 bytes ('" + s.substring(0, 40)
          + "...'): fold-cp's serializers carry at most " + MAX_STRING_BYTES);
    }
    output.writeVarInt(bytes.length, true);
    output.writeBytes(bytes);
  }

  /** A string written by {@link #writeString}: never null, at most MAX_STRING_BYTES, valid UTF-8. */
  static String string(Input input, String what) {
    byte[] bytes = input.readBytes(count(input, 0, MAX_STRING_BYTES, "UTF-8 length of " + what));
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw corrupt(what, "(" + bytes.length + " bytes)", "must be UTF-8");
    }
  }

  /** Reads k elements of an array type from the stream. */
  @FunctionalInterface
  private interface PieceReader<A> {
    A read(Input input, int k);
  }

  /** {@code n} elements, read in pieces into an array that doubles only as data arrives. */
  private static <A> A inPieces(Input input, int n, IntFunction<A> alloc, PieceReader<A> read) {
    if (n < 0 || n > MAX_ARRAY) {
      throw corrupt("array length", n, "must be in [0, " + MAX_ARRAY + "]");
    }
    if (n <= CHUNK) {
      return read.read(input, n);
    }
    A out = alloc.apply(CHUNK);
    int capacity = CHUNK;
    int filled = 0;
    while (filled < n) {
      int k = Math.min(CHUNK, n - filled);
      if (filled + k > capacity) {
        capacity = (int) Math.min(n, 2L * capacity);
        A bigger = alloc.apply(capacity);
        System.arraycopy(out, 0, bigger, 0, filled);
        out = bigger;
      }
      System.arraycopy(read.read(input, k), 0, out, filled, k);
      filled += k;
    }
    return out;
  }
}
