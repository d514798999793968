package org.foldcp.ops.gpu.cp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.a2a.HeadsDirection;
import org.foldcp.ops.a2a.HeadsShape;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.DeviceBuffer;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuStream;

/**
 * The sequence-parallel all-to-all of attention heads (Ulysses) on the NVSHMEM team, this rank's
 * end of it (native/include/foldcp_a2a.h): {@link #scatterHeads} takes [B, S_local, H, Dh] on
 * every rank to [B, S, H/W, Dh], {@link #gatherHeads} back. Made collectively (every rank, the
 * same shape and dtype; a rank that differs is an {@link InvalidInputException} on every rank,
 * naming it). The route is decided here, once, identically on every rank, and logged
 * ({@link #route()}): PEER stores each element straight into its place in the receiver's output
 * through a peer pointer; PUT packs per peer and sends with device-initiated puts that signal on
 * arrival, each receiver unpacking a source's block as soon as it lands.
 *
 * <p>Two ways in: device addresses ({@link #scatterHeads(long, long)}; passing
 * {@link #outputAddress()} as the output skips the last copy: zero copy, valid until the next
 * call), or Java arrays (copied to the device and back; for tests and small data). Calls are
 * collective and return when this rank's output is complete; a peer that does not arrive within
 * the team's timeout ends in {@link TeamException} naming it.
 *
 * <p>Holds, freed by {@link #close()} in this order: the native plan (its symmetric buffers:
 * collective), the input and output buffers of the array calls, the stream, the device retain.
 */
public final class HeadsAllToAll implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(HeadsAllToAll.class.getName());

  private final NvshmemTeam team;
  private final HeadsShape shape;
  private final HeadsDtype dtype;
  private final GpuDevice device;
  private final GpuStream stream;
  private final DeviceBuffer input;
  private final DeviceBuffer output;
  private final long plan;
  private final StoreRoute route;
  private final long outputAddress;
  private final long tensorBytes;
  private final long bytesSent;
  private boolean closed;

  /** This rank's end of an all-to-all of {@code shape} (its world must be the team size). */
  public HeadsAllToAll(NvshmemTeam team, HeadsShape shape, HeadsDtype dtype, StoreRoute requested) {
    InvalidInputException.require(shape.world() == team.size(), "W", shape.world(),
        "must equal the NVSHMEM team size (" + team.size() + ")");
    this.team = team;
    this.shape = shape;
    this.dtype = dtype;
    this.tensorBytes = (long) shape.elements() * dtype.bytes();
    GpuDevice dev = GpuDevice.open(team.spec().device());
    GpuStream s = null;
    DeviceBuffer in = null;
    DeviceBuffer out = null;
    long p = 0;
    try {
      dev.makeCurrent();
      s = GpuStream.create(dev);
      p = NativeCp.a2aCreate(shape.batch(), shape.seqLocal(), shape.heads(), shape.headDim(), dtype.code,
          requested.code);
      in = DeviceBuffer.allocate(dev, tensorBytes, "all-to-all input (array calls)");
      out = DeviceBuffer.allocate(dev, tensorBytes, "all-to-all output (array calls)");
    } catch (RuntimeException e) {
      final long made = p;
      Closeables.closeAll(e, made == 0 ? null : dev::makeCurrent, made == 0 ? null : () -> NativeCp.a2aDestroy(made),
          in, out, s, dev);
      throw e;
    }
    this.device = dev;
    this.stream = s;
    this.input = in;
    this.output = out;
    this.plan = p;
    this.route = StoreRoute.ofCode(NativeCp.a2aRoute(p));
    long[] b = NativeCp.a2aBuffers(p);
    this.outputAddress = b[0];
    this.bytesSent = b[2];
    team.stackOpened();
    LOG.log(System.Logger.Level.INFO, () -> "fold-cp heads all-to-all on rank " + team.rank() + ": " + shape + " "
        + dtype.label() + ", route " + route.label() + " (asked " + requested.label() + "), " + bytesSent
        + " B leave this rank per call");
  }

  public HeadsShape shape() { return shape; }

  public HeadsDtype dtype() { return dtype; }

  /** The route (decided at construction, the same on every rank). */
  public StoreRoute route() { return route; }

  /** Bytes that leave this rank per call (every block but its own). */
  public long bytesSentPerCall() { return bytesSent; }

  /** The plan's output buffer on the device: pass it as the output to skip the final copy. */
  public long outputAddress() { return outputAddress; }

  /** Bytes of the tensor on this rank, before or after (the same). */
  public long tensorBytes() { return tensorBytes; }

  /** [B, S_local, H, Dh] at device address {@code in} to [B, S, H/W, Dh] at {@code out} (collective). */
  public synchronized void scatterHeads(long in, long out) {
    call(HeadsDirection.SCATTER, in, out);
  }

  /** [B, S, H/W, Dh] at device address {@code in} to [B, S_local, H, Dh] at {@code out} (collective). */
  public synchronized void gatherHeads(long in, long out) {
    call(HeadsDirection.GATHER, in, out);
  }

  /** The scatter of 16-bit values (bf16 or fp16 bits), through the device; returns a new array. */
  public synchronized short[] scatterHeads(short[] in) {
    return fromBytes16(arrayCall(HeadsDirection.SCATTER, toBytes(in)));
  }

  public synchronized short[] gatherHeads(short[] in) {
    return fromBytes16(arrayCall(HeadsDirection.GATHER, toBytes(in)));
  }

  /** The scatter of fp32 values (raw bits kept), through the device; returns a new array. */
  public synchronized float[] scatterHeads(float[] in) {
    return fromBytes32(arrayCall(HeadsDirection.SCATTER, toBytes(in)));
  }

  public synchronized float[] gatherHeads(float[] in) {
    return fromBytes32(arrayCall(HeadsDirection.GATHER, toBytes(in)));
  }

  private void call(HeadsDirection dir, long in, long out) {
    if (closed) {
      throw new IllegalStateException("HeadsAllToAll is closed");
    }
    InvalidInputException.require(in != 0 && out != 0, "device address", in == 0 ? "in = 0" : "out = 0",
        "must not be 0");
    device.makeCurrent();
    if (dir == HeadsDirection.SCATTER) {
      NativeCp.a2aScatterHeads(plan, in, out, stream.handle());
    } else {
      NativeCp.a2aGatherHeads(plan, in, out, stream.handle());
    }
  }

  private byte[] arrayCall(HeadsDirection dir, byte[] in) {
    if (closed) {
      throw new IllegalStateException("HeadsAllToAll is closed");
    }
    InvalidInputException.require(in.length == tensorBytes, "input bytes", in.length, "must be " + tensorBytes
        + " (" + shape.elements() + " " + dtype.label() + " elements of " + shape + ")");
    device.makeCurrent();
    input.copyFromHost(0, in, 0, in.length);
    call(dir, input.address(), output.address());
    byte[] out = new byte[in.length];
    output.copyToHost(0, out, 0, out.length);
    return out;
  }

  private byte[] toBytes(short[] v) {
    InvalidInputException.require(dtype.bytes() == 2, "array type", "short[]", "needs a 16-bit dtype, this plan is "
        + dtype.label());
    ByteBuffer b = ByteBuffer.allocate(v.length * 2).order(ByteOrder.LITTLE_ENDIAN);
    b.asShortBuffer().put(v);
    return b.array();
  }

  private byte[] toBytes(float[] v) {
    InvalidInputException.require(dtype == HeadsDtype.F32, "array type", "float[]", "needs dtype fp32, this plan is "
        + dtype.label());
    ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    for (float f : v) {
      b.putInt(Float.floatToRawIntBits(f));  // raw bits: NaN payloads travel unchanged
    }
    return b.array();
  }

  private static short[] fromBytes16(byte[] b) {
    short[] v = new short[b.length / 2];
    ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(v);
    return v;
  }

  private static float[] fromBytes32(byte[] b) {
    float[] v = new float[b.length / 4];
    ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    for (int i = 0; i < v.length; i++) {
      v[i] = Float.intBitsToFloat(bb.getInt());
    }
    return v;
  }

  /** Frees the plan (collective: every rank closes its end), then the buffers. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    team.stackClosed();
    RuntimeException err = Closeables.closeAll(null, device::makeCurrent, () -> NativeCp.a2aDestroy(plan), input, output,
        stream, device);
    if (err != null) {
      throw err;
    }
  }
}
