package org.foldcp.spark.barrier;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ProtocolException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One connection between this rank and one peer, carrying framed payloads in both directions
 * at once (one thread writes while another reads). A frame is a header (magic, kind, reshard
 * round, float count; -1 for no payload) followed by the floats, little-endian, in chunks; or
 * an abort notice with the failed rank and its reason. The round number makes ranks that
 * disagree on the sequence of reshards fail loudly instead of mixing up payloads.
 */
final class PeerLink implements Closeable {
  static final int FRAME = 0x464f4c46; // "FOLF"
  static final byte DATA = 1;
  static final byte ABORT = 2;
  /** Floats per chunk: large enough for throughput, small enough to stay in cache. */
  static final int CHUNK_FLOATS = 64 * 1024;
  private static final int REASON_CHARS = 4000;
  /**
   * Floats of a payload allocated before they arrive (16 MiB): a reshard payload up to this size
   * is read into its final array without copies, a larger one grows as it arrives.
   */
  static final int UPFRONT_FLOATS = 1 << 22;

  private final int self;
  private final int peer;
  private final String address;
  private final Socket socket;
  private final DataInputStream in;
  private final DataOutputStream out;
  private final ReentrantLock writeLock = new ReentrantLock();
  private final ByteBuffer readChunk = ByteBuffer.allocate(CHUNK_FLOATS * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
  private final ByteBuffer writeChunk = ByteBuffer.allocate(CHUNK_FLOATS * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);

  PeerLink(int self, int peer, String address, Socket socket) throws IOException {
    this(self, peer, address, socket, socket.getInputStream(), socket.getOutputStream());
  }

  /** A link over {@code in} and {@code out}; {@code socket} null (the frame fuzzer): no timeouts, nothing to close. */
  PeerLink(int self, int peer, String address, Socket socket, InputStream in, OutputStream out) {
    this.self = self;
    this.peer = peer;
    this.address = address;
    this.socket = socket;
    this.in = new DataInputStream(new BufferedInputStream(in, 256 * 1024));
    this.out = new DataOutputStream(new BufferedOutputStream(out, 64 * 1024));
  }

  int peer() { return peer; }

  String address() { return address; }

  void readTimeoutMillis(long millis) throws IOException {
    if (socket == null) {
      return;
    }
    socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, millis)));
  }

  /** Sends the payload of reshard {@code round}; null sends "no payload". */
  void send(int round, float[] payload) throws IOException {
    writeLock.lock();
    try {
      out.writeInt(FRAME);
      out.writeByte(DATA);
      out.writeInt(round);
      out.writeInt(payload == null ? -1 : payload.length);
      if (payload != null) {
        FloatBuffer floats = writeChunk.asFloatBuffer();
        for (int off = 0; off < payload.length; off += CHUNK_FLOATS) {
          int n = Math.min(CHUNK_FLOATS, payload.length - off);
          floats.clear();
          floats.put(payload, off, n);
          out.write(writeChunk.array(), 0, n * Float.BYTES);
        }
      }
      out.flush();
    } finally {
      writeLock.unlock();
    }
  }

  /**
   * Receives the peer's payload of reshard {@code round}. Throws {@link RankFailedException}
   * when the peer sent an abort notice instead, and a {@link ProtocolException} naming both
   * rounds when the peer is in another round.
   */
  float[] receive(int round) throws IOException {
    int magic = in.readInt();
    if (magic != FRAME) {
      throw new ProtocolException("rank " + peer + " sent 0x" + Integer.toHexString(magic) + " where a frame starts");
    }
    byte kind = in.readByte();
    int theirRound = in.readInt();
    int length = in.readInt();
    if (kind == ABORT) {
      int failed = in.readInt();
      throw new RankFailedException(self, failed, in.readUTF());
    }
    if (kind != DATA) {
      throw new ProtocolException("rank " + peer + " sent a frame of unknown kind " + kind);
    }
    if (theirRound != round) {
      throw new ProtocolException("rank " + peer + " sent the payload of reshard round " + theirRound
          + " while rank " + self + " is in round " + round
          + ": the ranks disagree on the sequence of reshards (different complexes, layers or batch sizes)");
    }
    if (length < -1) {
      throw new ProtocolException("rank " + peer + " announced a payload of " + length + " floats");
    }
    if (length == -1) {
      return null;
    }
    // A length is a claim until its floats arrive: beyond UPFRONT_FLOATS the array grows
    // (doubling) as they do, so a corrupt header cannot make this rank allocate gigabytes.
    float[] payload = new float[Math.min(length, UPFRONT_FLOATS)];
    FloatBuffer floats = readChunk.asFloatBuffer();
    for (int off = 0; off < length; off += CHUNK_FLOATS) {
      int n = Math.min(CHUNK_FLOATS, length - off);
      in.readFully(readChunk.array(), 0, n * Float.BYTES);
      if (off + n > payload.length) {
        payload = Arrays.copyOf(payload, (int) Math.min(length, 2L * payload.length));
      }
      floats.clear();
      floats.get(payload, off, n);
    }
    return payload;
  }

  /**
   * Tells the peer that rank {@code failed} failed and why. Best effort: skipped when a payload
   * is being written on this link (the frame cannot be interleaved) or the write fails.
   */
  boolean sendAbort(int failed, String reason, long waitMillis) {
    try {
      if (!writeLock.tryLock(waitMillis, TimeUnit.MILLISECONDS)) {
        return false;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
    try {
      out.writeInt(FRAME);
      out.writeByte(ABORT);
      out.writeInt(0);
      out.writeInt(0);
      out.writeInt(failed);
      out.writeUTF(reason.length() > REASON_CHARS ? reason.substring(0, REASON_CHARS) + " ..." : reason);
      out.flush();
      return true;
    } catch (IOException e) {
      return false;
    } finally {
      writeLock.unlock();
    }
  }

  /** Closes the connection; a thread blocked reading or writing on it fails at once. */
  @Override
  public void close() {
    if (socket == null) {
      return;
    }
    try {
      if (!socket.isClosed() && !socket.isOutputShutdown()) {
        // FIN after whatever was written, so the peer reads an abort notice before the end
        socket.shutdownOutput();
      }
    } catch (IOException ignored) {
      // closing anyway
    }
    try {
      socket.close();
    } catch (IOException ignored) {
      // nothing left to release
    }
  }

  @Override
  public String toString() {
    return "link " + self + "<->" + peer + " (" + address + ")";
  }
}
