package org.foldcp.spark.barrier;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ProtocolException;

/**
 * The first bytes on a new connection between two ranks. The connecting (lower) rank states who
 * it is and whom it wants; the accepting rank answers yes, or no with the reason. A connection
 * from another team (a stale stage attempt, another application, a port scanner) is refused
 * instead of being taken for a peer.
 */
final class Handshake {
  static final int HELLO = 0x464f4c44; // "FOLD"
  static final int REPLY = 0x464f4c52; // "FOLR"
  static final int VERSION = 1;

  private Handshake() {}

  /** What a connecting rank says about itself. */
  record Hello(int version, String teamId, int teamSize, int fromRank, int toRank) {}

  static void sendHello(DataOutputStream out, Hello h) throws IOException {
    out.writeInt(HELLO);
    out.writeInt(h.version());
    out.writeUTF(h.teamId());
    out.writeInt(h.teamSize());
    out.writeInt(h.fromRank());
    out.writeInt(h.toRank());
    out.flush();
  }

  static Hello readHello(DataInputStream in) throws IOException {
    int magic = in.readInt();
    if (magic != HELLO) {
      throw new ProtocolException("not a fold-cp rank: the connection opened with 0x" + Integer.toHexString(magic));
    }
    return new Hello(in.readInt(), in.readUTF(), in.readInt(), in.readInt(), in.readInt());
  }

  /**
   * Why the accepting rank {@code self} of team {@code teamId} (size {@code teamSize}) refuses
   * {@code h}, or null when it accepts. {@code expected} tells whether a rank may still connect.
   */
  static String refusal(Hello h, String teamId, int teamSize, int self, java.util.function.IntPredicate expected) {
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
    if (!expected.test(h.fromRank())) {
      return "rank " + h.fromRank() + " is already connected";
    }
    return null;
  }

  /** Answers a hello: {@code refusal} null accepts. */
  static void sendReply(DataOutputStream out, String refusal) throws IOException {
    out.writeInt(REPLY);
    out.writeBoolean(refusal == null);
    if (refusal != null) {
      out.writeUTF(refusal);
    }
    out.flush();
  }

  /** The peer's answer to our hello: null when accepted, else its reason. */
  static String readReply(DataInputStream in) throws IOException {
    int magic = in.readInt();
    if (magic != REPLY) {
      throw new ProtocolException("not a fold-cp rank: it answered with 0x" + Integer.toHexString(magic));
    }
    return in.readBoolean() ? null : in.readUTF();
  }
}
