package org.foldcp.ops.a2a;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.LocalExchange;
import org.foldcp.ops.cp.ReshardTransport;
import org.junit.jupiter.api.Test;

class HostHeadsAllToAllTest {
  /** bf16 and fp16 patterns that must survive: quiet and signalling NaNs with payloads, infinities, signed zero. */
  private static final short[] SPECIAL16 = {(short) 0x7FC1, (short) 0xFF81, (short) 0x7F81, (short) 0x7FFF,
      (short) 0xFFFF, (short) 0x7F80, (short) 0xFF80, (short) 0x8000, 0x0000, 0x0001, (short) 0x7C01, (short) 0xFE01};
  /** fp32 patterns: signalling and quiet NaNs with payloads of either sign, infinities, -0, a subnormal. */
  private static final int[] SPECIAL32 = {0x7F800001, 0x7FA12345, 0x7FC00001, 0x7FC12345, 0xFFFFFFFF, 0xFF800001,
      0x7F800000, 0xFF800000, 0x80000000, 0x00000001, 0x7FC00000};

  private interface RankBody<T> {
    T run(ReshardTransport transport) throws Exception;
  }

  /**
   * Runs {@code body} on every rank of a team over {@code transports}, one thread per rank;
   * returns each rank's result, or the exception it ended with.
   */
  private static List<Object> onRanks(int world, UnaryOperator<ReshardTransport> wrap, RankBody<?> body)
      throws InterruptedException, java.util.concurrent.TimeoutException {
    LocalExchange exchange = new LocalExchange(world, 20_000);
    ExecutorService pool = Executors.newFixedThreadPool(world);
    try {
      List<Future<Object>> futures = new ArrayList<>();
      for (int r = 0; r < world; r++) {
        ReshardTransport t = wrap.apply(exchange.endpoint(r));
        futures.add(pool.submit(() -> body.run(t)));
      }
      List<Object> results = new ArrayList<>();
      for (Future<Object> f : futures) {
        try {
          results.add(f.get(60, TimeUnit.SECONDS));
        } catch (ExecutionException e) {
          results.add(e.getCause());
        }
      }
      return results;
    } finally {
      pool.shutdownNow();
    }
  }

  private static Object ok(Object result) {
    if (result instanceof Throwable) {
      throw new AssertionError("a rank failed: " + result, (Throwable) result);
    }
    return result;
  }

  private static short[] random16(Random rnd, int n) {
    short[] a = new short[n];
    for (int i = 0; i < n; i++) {
      a[i] = rnd.nextInt(4) == 0 ? SPECIAL16[rnd.nextInt(SPECIAL16.length)] : (short) rnd.nextInt();
    }
    return a;
  }

  private static float[] random32(Random rnd, int n) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) {
      // a quarter special patterns, a quarter random NaN payloads, half random bits
      int bits = switch (rnd.nextInt(4)) {
        case 0 -> SPECIAL32[rnd.nextInt(SPECIAL32.length)];
        case 1 -> 0x7F800000 | (rnd.nextInt() & 0x807FFFFF) | 1;
        default -> rnd.nextInt();
      };
      a[i] = Float.intBitsToFloat(bits);
    }
    return a;
  }

  private static int[] bits(float[] a) {
    int[] b = new int[a.length];
    for (int i = 0; i < a.length; i++) {
      b[i] = Float.floatToRawIntBits(a[i]);
    }
    return b;
  }

  /** What every rank hands back from the exchanges of {@link #exchangesAreBitExact}. */
  private record Outcome(short[] scattered16, float[] scattered32, short[] back16, float[] back32,
                         short[] again16, float[] again32) {}

  @Test
  void exchangesAreBitExact() throws Exception {
    for (HeadsShape s : HeadsLayoutTest.shapes()) {
      for (HeadsWire wire : HeadsWire.values()) {
        Random rnd = new Random(31L * s.hashCode() + wire.ordinal());
        short[][] x16 = new short[s.world()][];
        float[][] x32 = new float[s.world()][];
        short[][] y16 = new short[s.world()][];
        for (int r = 0; r < s.world(); r++) {
          x16[r] = random16(rnd, s.elements());
          x32[r] = random32(rnd, s.elements());
          y16[r] = random16(rnd, s.elements());
        }
        // several calls of both widths in a row: the payload buffers are reused in turn
        List<Object> got = onRanks(s.world(), t -> t, t -> {
          try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, s, wire)) {
            int r = t.rank();
            short[] sc16 = a2a.scatterHeads(x16[r].clone());
            float[] sc32 = a2a.scatterHeads(x32[r].clone());
            short[] back16 = a2a.gatherHeads(sc16);
            float[] back32 = a2a.gatherHeads(sc32);
            short[] again16 = a2a.scatterHeads(y16[r].clone());
            float[] again32 = a2a.gatherHeads(a2a.scatterHeads(x32[r].clone()));
            return new Outcome(sc16, sc32, back16, back32, again16, again32);
          }
        });
        Object[] want16 = HeadsReference.scatter(s, x16);
        Object[] want32 = HeadsReference.scatter(s, x32);
        Object[] wantAgain16 = HeadsReference.scatter(s, y16);
        for (int r = 0; r < s.world(); r++) {
          Outcome o = (Outcome) ok(got.get(r));
          String where = "rank " + r + " of " + s + ", " + wire;
          assertArrayEquals((short[]) want16[r], o.scattered16(), "bf16 scatter on " + where);
          assertArrayEquals(bits((float[]) want32[r]), bits(o.scattered32()), "fp32 scatter on " + where);
          assertArrayEquals(x16[r], o.back16(), "bf16 gather(scatter(x)) on " + where);
          assertArrayEquals(bits(x32[r]), bits(o.back32()), "fp32 gather(scatter(x)) on " + where);
          assertArrayEquals((short[]) wantAgain16[r], o.again16(), "second bf16 scatter on " + where);
          assertArrayEquals(bits(x32[r]), bits(o.again32()), "second fp32 round trip on " + where);
        }
      }
    }
  }

  @Test
  void gatherMatchesTheReferenceOnAnyInput() throws Exception {
    HeadsShape s = new HeadsShape(3, 5, 24, 7, 8);
    Random rnd = new Random(7);
    short[][] y = new short[s.world()][];
    for (int r = 0; r < s.world(); r++) {
      y[r] = random16(rnd, s.elements());
    }
    List<Object> got = onRanks(s.world(), t -> t, t -> {
      try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, s)) {
        return a2a.gatherHeads(y[t.rank()]);
      }
    });
    Object[] want = HeadsReference.gather(s, y);
    for (int r = 0; r < s.world(); r++) {
      assertArrayEquals((short[]) want[r], (short[]) ok(got.get(r)), "rank " + r);
    }
  }

  /**
   * A transport that canonicalises NaN on the way, as one that serialises with
   * Float.floatToIntBits (DataOutputStream.writeFloat, Kryo's Output.writeFloats) would.
   */
  private static ReshardTransport canonicalising(ReshardTransport inner) {
    return new ReshardTransport() {
      @Override public int rank() { return inner.rank(); }
      @Override public int size() { return inner.size(); }
      @Override public long bytesSent() { return inner.bytesSent(); }
      @Override public void abort(Throwable cause) { inner.abort(cause); }
      @Override public void close() { inner.close(); }

      @Override
      public float[][] allToAll(float[][] outgoing) {
        float[][] copies = new float[outgoing.length][];
        for (int q = 0; q < outgoing.length; q++) {
          if (outgoing[q] != null) {
            copies[q] = new float[outgoing[q].length];
            for (int i = 0; i < copies[q].length; i++) {
              copies[q][i] = Float.intBitsToFloat(Float.floatToIntBits(outgoing[q][i]));
            }
          }
        }
        return inner.allToAll(copies);
      }
    };
  }

  @Test
  void exactIntegerWireSurvivesATransportThatCanonicalisesNaN() throws Exception {
    HeadsShape s = new HeadsShape(3, 5, 12, 7, 4);
    Random rnd = new Random(11);
    short[][] x16 = new short[s.world()][];
    float[][] x32 = new float[s.world()][];
    for (int r = 0; r < s.world(); r++) {
      x16[r] = random16(rnd, s.elements());
      x32[r] = random32(rnd, s.elements());
    }
    List<Object> exact = onRanks(s.world(), HostHeadsAllToAllTest::canonicalising, t -> {
      try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, s, HeadsWire.EXACT_INTEGERS)) {
        return new Object[] {a2a.scatterHeads(x16[t.rank()]), a2a.scatterHeads(x32[t.rank()])};
      }
    });
    List<Object> raw = onRanks(s.world(), HostHeadsAllToAllTest::canonicalising, t -> {
      try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, s, HeadsWire.RAW_BITS)) {
        return new Object[] {a2a.scatterHeads(x16[t.rank()]), a2a.scatterHeads(x32[t.rank()])};
      }
    });
    Object[] want16 = HeadsReference.scatter(s, x16);
    Object[] want32 = HeadsReference.scatter(s, x32);
    boolean rawCorrupted = false;
    for (int r = 0; r < s.world(); r++) {
      Object[] e = (Object[]) ok(exact.get(r));
      assertArrayEquals((short[]) want16[r], (short[]) e[0], "bf16 on rank " + r);
      assertArrayEquals(bits((float[]) want32[r]), bits((float[]) e[1]), "fp32 on rank " + r);
      Object[] w = (Object[]) ok(raw.get(r));
      rawCorrupted |= !java.util.Arrays.equals(bits((float[]) want32[r]), bits((float[]) w[1]));
    }
    // why the exact wire exists: raw float bits lose their NaN payloads on such a transport
    assertTrue(rawCorrupted, "the raw wire was expected to lose NaN payloads on a canonicalising transport");
  }

  /** A transport whose rank returns from each all-to-all late, as a rank that is descheduled would. */
  private static ReshardTransport slowToReturn(ReshardTransport inner) {
    return new ReshardTransport() {
      @Override public int rank() { return inner.rank(); }
      @Override public int size() { return inner.size(); }
      @Override public long bytesSent() { return inner.bytesSent(); }
      @Override public void abort(Throwable cause) { inner.abort(cause); }
      @Override public void close() { inner.close(); }

      @Override
      public float[][] allToAll(float[][] outgoing) {
        float[][] received = inner.allToAll(outgoing);
        if (inner.rank() == 1) {
          try {
            Thread.sleep(150);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
        return received;
      }
    };
  }

  @Test
  void aPeerThatUnpacksLateStillReadsThisCallsPayload() throws Exception {
    // LocalExchange hands payload arrays over as they are: while rank 1 still holds rank 0's
    // payload of one call, rank 0 is already packing the next; it must not refill that payload
    HeadsShape s = new HeadsShape(1, 5, 12, 7, 3);
    Random rnd = new Random(5);
    short[][][] x = new short[4][s.world()][];
    for (short[][] call : x) {
      for (int r = 0; r < s.world(); r++) {
        call[r] = random16(rnd, s.elements());
      }
    }
    List<Object> got = onRanks(s.world(), HostHeadsAllToAllTest::slowToReturn, t -> {
      try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, s)) {
        short[][] out = new short[x.length][];
        for (int k = 0; k < x.length; k++) {
          out[k] = a2a.scatterHeads(x[k][t.rank()]);
        }
        return out;
      }
    });
    for (int k = 0; k < x.length; k++) {
      Object[] want = HeadsReference.scatter(s, x[k]);
      for (int r = 0; r < s.world(); r++) {
        assertArrayEquals((short[]) want[r], ((short[][]) ok(got.get(r)))[k], "call " + k + " on rank " + r);
      }
    }
  }

  @Test
  void theWireSizesAreAsDocumented() {
    assertEquals(4, HeadsWire.RAW_BITS.floats(7, 16));
    assertEquals(7, HeadsWire.RAW_BITS.floats(7, 32));
    assertEquals(5, HeadsWire.EXACT_INTEGERS.floats(7, 16)); // 112 bits in chunks of 24
    assertEquals(10, HeadsWire.EXACT_INTEGERS.floats(7, 32)); // 224 bits
    assertEquals(2, HeadsWire.EXACT_INTEGERS.floats(3, 16));
    assertEquals(4, HeadsWire.EXACT_INTEGERS.floats(3, 32));
    // EXACT_INTEGERS puts only integers in [0, 2^24) on the wire, whatever the bits
    short[] all16 = new short[65536];
    for (int i = 0; i < all16.length; i++) {
      all16[i] = (short) i;
    }
    float[] wire = new float[HeadsWire.EXACT_INTEGERS.floats(all16.length, 16)];
    HeadsWire.EXACT_INTEGERS.encode(all16, 0, all16.length, wire);
    for (float f : wire) {
      assertTrue(f >= 0 && f < (1 << 24) && f == Math.rint(f), "wire float " + f);
    }
    short[] back = new short[all16.length];
    HeadsWire.EXACT_INTEGERS.decode(wire, back, 0, back.length);
    assertArrayEquals(all16, back);
  }

  @Test
  void aWrongInputLengthIsRefusedNamingBothLengthsAndNoPeerHangs() throws Exception {
    HeadsShape s = new HeadsShape(3, 5, 12, 7, 2);
    List<Object> got = onRanks(2, t -> t, t -> {
      try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, s)) {
        return a2a.scatterHeads(new short[t.rank() == 0 ? s.elements() - 1 : s.elements()]);
      }
    });
    InvalidInputException e = assertInstanceOf(InvalidInputException.class, got.get(0));
    assertTrue(e.getMessage().startsWith("length of the heads SCATTER input on rank 0 = 1259: must be 1260"), e.getMessage());
    assertTrue(e.getMessage().contains("[B, S_local, H, Dh] = [3, 5, 12, 7]"), e.getMessage());
    // rank 1 is released by rank 0's abort, naming it, instead of waiting for its timeout
    IllegalStateException peer = assertInstanceOf(IllegalStateException.class, got.get(1));
    assertTrue(peer.getMessage().contains("1259"), peer.getMessage());

    List<Object> gathered = onRanks(1, t -> t, t -> {
      try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, new HeadsShape(1, 5, 12, 7, 1))) {
        return a2a.gatherHeads(new float[421]);
      }
    });
    InvalidInputException g = assertInstanceOf(InvalidInputException.class, gathered.get(0));
    assertTrue(g.getMessage().startsWith("length of the heads GATHER input on rank 0 = 421: must be 420"), g.getMessage());
    assertTrue(g.getMessage().contains("[B, S, H/W, Dh] = [1, 5, 12, 7]"), g.getMessage());
  }

  @Test
  void ranksThatDisagreeOnTheShapeFailLoudly() throws Exception {
    List<Object> got = onRanks(2, t -> t, t -> {
      HeadsShape s = new HeadsShape(1, 5, 12, t.rank() == 0 ? 7 : 6, 2);
      try (HostHeadsAllToAll a2a = new HostHeadsAllToAll(t, s)) {
        return a2a.scatterHeads(new short[s.elements()]);
      }
    });
    // both ranks get their peer's payload, find its length wrong, and say so
    String[] expected = {"rank 0 received 90 floats from rank 1 in a heads SCATTER where 105 were expected",
        "rank 1 received 105 floats from rank 0 in a heads SCATTER where 90 were expected"};
    for (int r = 0; r < 2; r++) {
      IllegalStateException e = assertInstanceOf(IllegalStateException.class, got.get(r));
      assertTrue(e.getMessage().startsWith(expected[r]), e.getMessage());
      assertTrue(e.getMessage().contains("the ranks disagree on the shape"), e.getMessage());
    }
  }

  @Test
  void theTeamMustMatchTheWorldSize() {
    LocalExchange exchange = new LocalExchange(3, 1_000);
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new HostHeadsAllToAll(exchange.endpoint(0), new HeadsShape(1, 5, 12, 7, 4)));
    assertTrue(e.getMessage().startsWith("team size = 3: must equal the world size W = 4"), e.getMessage());
  }

  @Test
  void aClosedInstanceRefusesCalls() {
    LocalExchange exchange = new LocalExchange(1, 1_000);
    HostHeadsAllToAll a2a = new HostHeadsAllToAll(exchange.endpoint(0), new HeadsShape(1, 2, 4, 3, 1));
    short[] x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
    assertArrayEquals(x, a2a.scatterHeads(x)); // a team of one: the identity
    assertFalse(x == a2a.scatterHeads(x));     // in a new array
    a2a.close();
    assertThrows(IllegalStateException.class, () -> a2a.scatterHeads(x));
  }
}
