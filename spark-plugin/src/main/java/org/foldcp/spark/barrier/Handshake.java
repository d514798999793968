package org.foldcp.spark.barrier;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ProtocolException;
import java.util.function.IntPredicate;

/**
 * The first bytes on a new connection between two ranks. The connecting (lower) rank states who
 * it is and whom it wants, with a nonce; the accepting rank checks that, then challenges it with
 * its own nonce; the connecting rank proves it holds the {@link TeamKey}, and the accepting rank
 * proves it back. Anything else (a stale stage attempt, another application, a port scanner, a
 * stranger without the key) is refused instead of being taken for a peer, and nothing in the
 * exchange lets a recorded handshake be replayed.
 *
 * <pre>
 * connecting -> accepting: HELLO, version, team id, team size, from, to, nonce (16 bytes)
 * accepting -> connecting: REPLY, 1 and its nonce (16 bytes) | 0 and the refusal (UTF)
 * connecting -> accepting: proof of "connect" over the transcript (32 bytes)
 * accepting -> connecting: REPLY, 1 and proof of "accept" over the transcript | 0 and the refusal
 * </pre>
 */
final class Handshake {
  static final int HELLO = 0x464f4c44; // "FOLD"
  static final int REPLY = 0x464f4c52; // "FOLR"
  static final int VERSION = 2;
  static final int NONCE_BYTES = 16;
  static final String CONNECT = "fold-cp connect";
  static final String ACCEPT = "fold-cp accept";

  private Handshake() {}

  /** What a connecting rank says about itself. */
  record Hello(int version, String teamId, int teamSize, int fromRank, int toRank, byte[] nonce) {}

  /** The accepting rank refused the connection, and said why. */
  static final class Refused extends IOException {
    private static final long serialVersionUID = 1L;

    Refused(String reason) {
      super(reason);
    }
  }

  // ---------------------------------------------------------------- the connecting rank

  /** Runs the connecting side; returns normally once both sides proved the key. */
  static void connect(DataInputStream in, DataOutputStream out, Hello hello, TeamKey key) throws IOException {
    out.writeInt(HELLO);
    out.writeInt(hello.version());
    out.writeUTF(hello.teamId());
    out.writeInt(hello.teamSize());
    out.writeInt(hello.fromRank());
    out.writeInt(hello.toRank());
    out.write(hello.nonce());
    out.flush();
    byte[] theirNonce = readAnswer(in, NONCE_BYTES);
    byte[] transcript = transcript(hello, theirNonce);
    out.write(key.proof(CONNECT, transcript));
    out.flush();
    byte[] theirProof = readAnswer(in, TeamKey.PROOF_BYTES);
    if (!key.verifies(ACCEPT, transcript, theirProof)) {
      throw new ProtocolException("the accepting side did not prove it holds the team key: it is not a rank of this"
          + " team (something else listens at its address)");
    }
  }

  /** REPLY, then 1 and {@code n} bytes, or 0 and a refusal (thrown as {@link Refused}). */
  private static byte[] readAnswer(DataInputStream in, int n) throws IOException {
    int magic = in.readInt();
    if (magic != REPLY) {
      throw new ProtocolException("not a fold-cp rank: it answered with 0x" + Integer.toHexString(magic));
    }
    byte status = in.readByte();
    if (status == 0) {
      throw new Refused(in.readUTF());
    }
    if (status != 1) {
      throw new ProtocolException("not a fold-cp rank: it answered with status " + status);
    }
    byte[] b = new byte[n];
    in.readFully(b);
    return b;
  }

  // ---------------------------------------------------------------- the accepting rank

  /**
   * Runs the accepting side of rank {@code self} of team {@code teamId} (size {@code teamSize})
   * with this side's {@code nonce}. {@code claim} is asked, once the peer proved the key, to
   * take its rank (false: already taken). Returns the peer's rank; a refusal is answered and
   * then thrown as {@link Refused}, a malformed exchange as another IOException.
   */
  static int accept(DataInputStream in, DataOutputStream out, String teamId, int teamSize, int self, TeamKey key,
                    byte[] nonce, IntPredicate claim) throws IOException {
    Hello h = readHello(in);
    String refusal = refusal(h, teamId, teamSize, self);
    if (refusal != null) {
      throw refuse(out, refusal);
    }
    out.writeInt(REPLY);
    out.writeByte(1);
    out.write(nonce);
    out.flush();
    byte[] transcript = transcript(h, nonce);
    byte[] proof = new byte[TeamKey.PROOF_BYTES];
    in.readFully(proof);
    if (!key.verifies(CONNECT, transcript, proof)) {
      throw refuse(out, "rank " + h.fromRank() + " did not prove it holds the team key (a stranger, or a rank of"
          + " another stage attempt)");
    }
    if (!claim.test(h.fromRank())) {
      throw refuse(out, "rank " + h.fromRank() + " is already connected");
    }
    out.writeInt(REPLY);
    out.writeByte(1);
    out.write(key.proof(ACCEPT, transcript));
    out.flush();
    return h.fromRank();
  }

  static Hello readHello(DataInputStream in) throws IOException {
    int magic = in.readInt();
    if (magic != HELLO) {
      throw new ProtocolException("not a fold-cp rank: the connection opened with 0x" + Integer.toHexString(magic));
    }
    int version = in.readInt();
    if (version != VERSION) {
      // the rest may be laid out differently: nothing more is read
      return new Hello(version, "", 0, -1, -1, new byte[0]);
    }
    String teamId = in.readUTF();
    int size = in.readInt();
    int from = in.readInt();
    int to = in.readInt();
    byte[] nonce = new byte[NONCE_BYTES];
    in.readFully(nonce);
    return new Hello(version, teamId, size, from, to, nonce);
  }

  /** Why rank {@code self} of team {@code teamId} refuses {@code h} before any proof, or null. */
  static String refusal(Hello h, String teamId, int teamSize, int self) {
    if (h.version() != VERSION) {
      return "protocol version " + h.version() + " differs from this rank's " + VERSION;
    }
    if (!h.teamId().equals(teamId)) {
      return "team id '" + h.teamId() + "' differs from this team's '" + teamId + "'";
    }
    if (h.teamSize() != teamSize) {
      return "team size " + h.teamSize() + " differs from this team's " + teamSize;
    }
    if (h.toRank() != self) {
      return "the connection is meant for rank " + h.toRank() + ", this is rank " + self;
    }
    if (h.fromRank() < 0 || h.fromRank() >= self) {
      return "rank " + h.fromRank() + " may not connect to rank " + self + ": only lower ranks connect";
    }
    return null;
  }

  private static Refused refuse(DataOutputStream out, String reason) throws IOException {
    out.writeInt(REPLY);
    out.writeByte(0);
    out.writeUTF(reason);
    out.flush();
    return new Refused(reason);
  }

  /** What both proofs cover: every field of the hello and both nonces. */
  static byte[] transcript(Hello h, byte[] acceptorNonce) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream t = new DataOutputStream(bytes)) {
      t.writeInt(h.version());
      t.writeUTF(h.teamId());
      t.writeInt(h.teamSize());
      t.writeInt(h.fromRank());
      t.writeInt(h.toRank());
      t.write(h.nonce());
      t.write(acceptorNonce);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    return bytes.toByteArray();
  }
}
