package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.SplittableRandom;
import org.foldcp.ops.testing.Fuzz;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Fuzzes what a TCP team reads off the wire from whoever connects: the accepting side of the
 * handshake (a connecting rank's hello and proof), the connecting side (an accepting rank's
 * challenge and proof), and the reshard frames of a formed link (data, no payload, abort). Each
 * target takes {@link #RANDOM_INPUTS} seeded byte-level mutants of valid exchanges. Besides
 * {@link Fuzz}'s contract: a refusal is an IOException (a corrupt or refused exchange) or, for a
 * frame, the RankFailedException of an abort notice; nothing else is thrown, no input hangs, and
 * a frame claiming 2^31 floats allocates at most {@link PeerLink#UPFRONT_FLOATS} before its data.
 */
@Timeout(300)
class TcpWireFuzzTest {
  static final int RANDOM_INPUTS = Fuzz.iterations(10_000);
  private static final String TEAM = "app-1/stage-3.0";
  private static final TeamKey KEY = TeamKey.of(List.of(new byte[32], filled(7), filled(9)), TEAM, null);
  private static final byte[] CONNECTOR_NONCE = filled(1, Handshake.NONCE_BYTES);
  private static final byte[] ACCEPTOR_NONCE = filled(2, Handshake.NONCE_BYTES);
  private static final Handshake.Hello HELLO = new Handshake.Hello(Handshake.VERSION, TEAM, 3, 0, 2, CONNECTOR_NONCE);

  private static byte[] filled(int v) {
    return filled(v, TeamKey.SHARE_BYTES);
  }

  private static byte[] filled(int v, int n) {
    byte[] b = new byte[n];
    java.util.Arrays.fill(b, (byte) v);
    return b;
  }

  private static DataInputStream in(byte[] bytes) {
    return new DataInputStream(new ByteArrayInputStream(bytes));
  }

  /** Runs the accepting side (rank 2 of 3) on {@code input}; returns what it wrote back. */
  private static byte[] accept(byte[] input) throws IOException {
    ByteArrayOutputStream written = new ByteArrayOutputStream();
    int from = Handshake.accept(in(input), new DataOutputStream(written), TEAM, 3, 2, KEY, ACCEPTOR_NONCE, p -> true);
    assertEquals(0, from, "only rank 0's hello can pass the proof");
    return written.toByteArray();
  }

  /** Runs the connecting side (rank 0 to rank 2) on {@code input}; returns what it wrote. */
  private static byte[] connect(byte[] input) throws IOException {
    ByteArrayOutputStream written = new ByteArrayOutputStream();
    Handshake.connect(in(input), new DataOutputStream(written), HELLO, KEY);
    return written.toByteArray();
  }

  /** The two sides of one valid handshake, each side's bytes captured by running the other. */
  private static byte[][] validExchange() throws IOException {
    ByteArrayOutputStream acceptorSays = new ByteArrayOutputStream();
    DataOutputStream a = new DataOutputStream(acceptorSays);
    a.writeInt(Handshake.REPLY);
    a.writeByte(1);
    a.write(ACCEPTOR_NONCE);
    a.writeInt(Handshake.REPLY);
    a.writeByte(1);
    a.write(KEY.proof(Handshake.ACCEPT, Handshake.transcript(HELLO, ACCEPTOR_NONCE)));
    byte[] connectorSays = connect(acceptorSays.toByteArray());
    assertArrayEquals(acceptorSays.toByteArray(), accept(connectorSays), "the acceptor answers the connector as captured");
    return new byte[][] {connectorSays, acceptorSays.toByteArray()};
  }

  @Test
  void handshakeAcceptingSide() throws IOException {
    byte[] seed = validExchange()[0];
    run("tcp handshake accept", List.of(seed), 1 << 20, TcpWireFuzzTest::accept);
  }

  @Test
  void handshakeConnectingSide() throws IOException {
    byte[] seed = validExchange()[1];
    run("tcp handshake connect", List.of(seed), 1 << 20, TcpWireFuzzTest::connect);
  }

  @Test
  void frames() throws IOException {
    ByteArrayOutputStream data = new ByteArrayOutputStream();
    PeerLink sender = new PeerLink(0, 1, "fuzz", null, new ByteArrayInputStream(new byte[0]), data);
    sender.send(3, new float[] {1.5f, -2f, Float.NaN, 0f, 7f});
    byte[] payload = data.toByteArray();
    data.reset();
    sender.send(3, null);
    byte[] none = data.toByteArray();
    data.reset();
    assertTrue(sender.sendAbort(2, "rank 2 ran out of memory", 1000));
    byte[] abort = data.toByteArray();
    assertArrayEquals(new float[] {1.5f, -2f, Float.NaN, 0f, 7f}, receive(payload));
    // claims of up to UPFRONT_FLOATS floats may be allocated before their data arrives
    run("tcp frames", List.of(payload, none, abort), 20L << 20, this::receive);
  }

  private float[] receive(byte[] input) throws IOException {
    PeerLink link = new PeerLink(1, 0, "fuzz", null, new ByteArrayInputStream(input), OutputStream.nullOutputStream());
    return link.receive(3);
  }

  /** One call on one input. */
  @FunctionalInterface
  private interface Reader {
    Object read(byte[] input) throws IOException;
  }

  private static void run(String name, List<byte[]> seeds, long allocBase, Reader reader) {
    try (Fuzz fuzz = new Fuzz(name, 10_000, allocBase, 64).alsoAccept(IOException.class)
        .alsoAccept(RankFailedException.class)) {
      for (int q = 0; q < RANDOM_INPUTS; q++) {
        SplittableRandom rng = Fuzz.rng(name, q);
        int k = rng.nextInt(seeds.size());
        byte[] seed = seeds.get(k);
        StringBuilder how = new StringBuilder("seed " + k + ":");
        byte[] input = Fuzz.mutateBytes(seed, Math.min(seed.length, 48), rng, how);
        fuzz.check(q, how.toString(), input, () -> reader.read(input));
      }
      fuzz.assertClean();
      assertTrue(fuzz.accepted() > 0, fuzz.summary());
    }
  }
}
