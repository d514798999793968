package org.foldcp.ops.a2a;

import java.util.Objects;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.ReshardTransport;

/**
 * The host-staged heads all-to-all of one rank (the CPU route of sequence-parallel attention):
 * per call it packs each peer's block ({@link HeadsLayout}) contiguously, encodes it into the
 * float[] payload of its {@link ReshardTransport} ({@link HeadsWire}), makes one
 * {@link ReshardTransport#allToAll}, and unpacks what it received. Values move bit for bit:
 * bf16 and fp16 as their raw 16 bits, fp32 as its raw 32 bits, NaN payloads included.
 *
 * <p>Collective: every rank of the team calls the same methods in the same order, with the same
 * shape and wire. A failure on this rank (a bad input, a peer that disagrees) aborts the
 * transport, so no peer waits for it. One thread per instance. The transport stays the
 * caller's: {@link #close} releases the buffers only.
 */
public final class HostHeadsAllToAll implements AutoCloseable {
  private final ReshardTransport transport;
  private final HeadsShape shape;
  private final HeadsWire wire;
  private final int rank;
  private final int world;
  private final int block;
  /** [direction][peer]: this rank's input to the contiguous slot peer*block of the stage. */
  private final BlockCopy[][] pack = new BlockCopy[2][];
  /** [direction][peer]: the stage slot peer*block to this rank's output. */
  private final BlockCopy[][] unpack = new BlockCopy[2][];
  /** [direction]: this rank's own block, input to output directly. */
  private final BlockCopy[] own = new BlockCopy[2];
  private short[] stage16;
  private float[] stage32;
  /**
   * The payloads, [call parity][peer], per element width. A transport may hand a payload to its
   * receiver as it is (LocalExchange does), so the sender must not refill it while the receiver
   * may still be unpacking it. Two sets in turn suffice: before refilling a set in call k+2, the
   * all-to-all of call k+1 returned here, which takes every peer's payload of call k+1, and a
   * peer sends that only after it has unpacked call k.
   */
  private final float[][][] wire16 = new float[2][][];
  private final float[][][] wire32 = new float[2][][];
  private long calls;
  private boolean closed;

  /** Over a transport that keeps raw float bits ({@link HeadsWire#RAW_BITS}): LocalExchange, TcpTransport. */
  public HostHeadsAllToAll(ReshardTransport transport, HeadsShape shape) {
    this(transport, shape, HeadsWire.RAW_BITS);
  }

  public HostHeadsAllToAll(ReshardTransport transport, HeadsShape shape, HeadsWire wire) {
    this.transport = Objects.requireNonNull(transport, "transport");
    this.shape = Objects.requireNonNull(shape, "shape");
    this.wire = Objects.requireNonNull(wire, "wire");
    InvalidInputException.require(transport.size() == shape.world(), "team size", transport.size(),
        "must equal the world size W = " + shape.world() + " of the " + shape);
    this.rank = transport.rank();
    this.world = shape.world();
    this.block = shape.blockElements();
    for (HeadsDirection d : HeadsDirection.values()) {
      int i = d.ordinal();
      pack[i] = new BlockCopy[world];
      unpack[i] = new BlockCopy[world];
      for (int peer = 0; peer < world; peer++) {
        pack[i][peer] = HeadsLayout.block(shape, d, rank, peer).toContiguous(peer * block);
        unpack[i][peer] = HeadsLayout.block(shape, d, peer, rank).fromContiguous(peer * block);
      }
      own[i] = HeadsLayout.block(shape, d, rank, rank).normalised();
    }
  }

  public HeadsShape shape() {
    return shape;
  }

  public HeadsWire wire() {
    return wire;
  }

  /** bf16 or fp16 bits, [B, S_local, H, Dh] to [B, S, H/W, Dh]. Returns a new array. */
  public short[] scatterHeads(short[] in) {
    return (short[]) exchange(HeadsDirection.SCATTER, in, false);
  }

  /** bf16 or fp16 bits, [B, S, H/W, Dh] to [B, S_local, H, Dh]. Returns a new array. */
  public short[] gatherHeads(short[] in) {
    return (short[]) exchange(HeadsDirection.GATHER, in, false);
  }

  /** fp32, [B, S_local, H, Dh] to [B, S, H/W, Dh]. Returns a new array. */
  public float[] scatterHeads(float[] in) {
    return (float[]) exchange(HeadsDirection.SCATTER, in, true);
  }

  /** fp32, [B, S, H/W, Dh] to [B, S_local, H, Dh]. Returns a new array. */
  public float[] gatherHeads(float[] in) {
    return (float[]) exchange(HeadsDirection.GATHER, in, true);
  }

  /** Releases the buffers; the transport stays open (it is the caller's). */
  @Override
  public void close() {
    closed = true;
    stage16 = null;
    stage32 = null;
    wire16[0] = wire16[1] = wire32[0] = wire32[1] = null;
  }

  private Object exchange(HeadsDirection direction, Object in, boolean fp32) {
    try {
      if (closed) {
        throw new IllegalStateException("rank " + rank + ": this heads all-to-all is closed");
      }
      Objects.requireNonNull(in, "input");
      checkLength(direction, fp32 ? ((float[]) in).length : ((short[]) in).length);
      int d = direction.ordinal();
      int bits = fp32 ? 32 : 16;
      int wireFloats = wire.floats(block, bits);
      Object stage = stage(fp32);
      float[][] payloads = payloads(fp32, (int) (calls & 1), wireFloats);
      float[][] outgoing = new float[world][]; // own slot null: this rank's block is copied directly
      for (int q = 0; q < world; q++) {
        if (q != rank) {
          pack[d][q].apply(in, stage);
          if (fp32) {
            wire.encode((float[]) stage, q * block, block, payloads[q]);
          } else {
            wire.encode((short[]) stage, q * block, block, payloads[q]);
          }
          outgoing[q] = payloads[q];
        }
      }
      Object out = fp32 ? new float[shape.elements()] : new short[shape.elements()];
      own[d].apply(in, out);
      float[][] received = transport.allToAll(outgoing);
      calls++;
      for (int src = 0; src < world; src++) {
        if (src != rank) {
          float[] payload = received[src];
          if (payload == null || payload.length != wireFloats) {
            throw new IllegalStateException("rank " + rank + " received " + (payload == null ? "no payload"
                : payload.length + " floats") + " from rank " + src + " in a heads " + direction + " where "
                + wireFloats + " were expected (" + (fp32 ? "fp32" : "16-bit") + ", " + wire + ", " + shape
                + "): the ranks disagree on the shape, the element type, the wire or the sequence of calls");
          }
          if (fp32) {
            wire.decode(payload, (float[]) stage, src * block, block);
          } else {
            wire.decode(payload, (short[]) stage, src * block, block);
          }
          unpack[d][src].apply(stage, out);
        }
      }
      return out;
    } catch (RuntimeException | Error e) {
      transport.abort(e);
      throw e;
    }
  }

  private void checkLength(HeadsDirection direction, int length) {
    int expected = shape.elements();
    if (length != expected) {
      String layout = direction == HeadsDirection.SCATTER
          ? "[B, S_local, H, Dh] = [" + shape.batch() + ", " + shape.seqLocal() + ", " + shape.heads() + ", "
              + shape.headDim() + "]"
          : "[B, S, H/W, Dh] = [" + shape.batch() + ", " + shape.seq() + ", " + shape.headsLocal() + ", "
              + shape.headDim() + "]";
      throw InvalidInputException.of("length of the heads " + direction + " input on rank " + rank, length,
          "must be " + expected + ", the elements of " + layout);
    }
  }

  private Object stage(boolean fp32) {
    if (fp32) {
      if (stage32 == null) {
        stage32 = new float[shape.elements()];
      }
      return stage32;
    }
    if (stage16 == null) {
      stage16 = new short[shape.elements()];
    }
    return stage16;
  }

  private float[][] payloads(boolean fp32, int parity, int floats) {
    float[][][] sets = fp32 ? wire32 : wire16;
    if (sets[parity] == null) {
      sets[parity] = new float[world][];
      for (int q = 0; q < world; q++) {
        if (q != rank) {
          sets[parity][q] = new float[floats];
        }
      }
    }
    return sets[parity];
  }
}
