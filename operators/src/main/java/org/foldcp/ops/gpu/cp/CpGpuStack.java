package org.foldcp.ops.gpu.cp;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.DeviceBuffer;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuStream;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.NonFinite;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A layer stack running context-parallel on the NVSHMEM team, this rank's part of it: the
 * A2A-fused CP TriMul of docs/design.md section 2 on one token tile of the {@link ShardLayout#forGpu}
 * layout. Made collectively (every rank constructs it with the same grid, N, batch and stack;
 * the weights are compared across ranks by digest, and weights that differ are an
 * {@link InvalidInputException} on every rank, naming the ranks). The store route is decided
 * here, once, identically on every rank ({@link #route()}), and never in {@link #forward}.
 *
 * <p>Holds, freed by {@link #close()} in this order: the native plan (its symmetric buffers:
 * collective), the native layers, the tile buffers on the device, the stream, the device retain.
 * The pair tensor stays on the GPU across all layers of the stack: one upload, one download.
 */
public final class CpGpuStack implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(CpGpuStack.class.getName());

  private final NvshmemTeam team;
  private final ShardLayout layout;
  private final int batch;
  private final GpuDevice device;
  private final GpuStream stream;
  private final long[] layers;
  private final DeviceBuffer tileBuf;
  private final DeviceBuffer maskBuf;
  private final long plan;
  private final StoreRoute route;
  private final Reshard reshard;
  private final long bytesToChannels;
  private final long bytesToTokens;
  private boolean closed;

  /**
   * The stack on {@code grid} (cp0 * cp1 must equal the team size) for complexes of N tokens and
   * {@code batch} batch elements; {@code requested} route AUTO, PEER or PUT; reshards fused.
   */
  public CpGpuStack(NvshmemTeam team, CpGrid grid, int n, int batch, LayerStack stack, StoreRoute requested) {
    this(team, grid, n, batch, stack, requested, Reshard.FUSED);
  }

  /** As above, with the reshards {@code reshard} (fused into the epilogues, or a separate all-to-all). */
  public CpGpuStack(NvshmemTeam team, CpGrid grid, int n, int batch, LayerStack stack, StoreRoute requested,
      Reshard reshard) {
    this.layout = ShardLayout.forGpu(grid, n, stack.dim());  // first: D % cp is named before anything else
    InvalidInputException.require(grid.size() == team.size(), "cp grid", grid,
        "must have as many ranks as the NVSHMEM team (" + team.size() + ")");
    InvalidInputException.require(batch >= 1, "batch", batch, "must be >= 1");
    this.team = team;
    this.batch = batch;
    TileBounds t = layout.tile(team.rank());
    GpuDevice dev = GpuDevice.open(team.spec().device());
    GpuStream s = null;
    List<Long> made = new ArrayList<>();
    DeviceBuffer tb = null;
    DeviceBuffer mb = null;
    long p = 0;
    try {
      dev.makeCurrent();
      s = GpuStream.create(dev);
      for (TriMulLayer layer : stack.layers()) {
        made.add(NativeCp.createLayer(layer));
      }
      long[] handles = made.stream().mapToLong(Long::longValue).toArray();
      // The plan first: it checks the ranks agree and the heap holds it before the tile buffers exist.
      p = NativeCp.createPlan(batch, n, stack.dim(), grid.rowGroups(), grid.colGroups(), t.rows, t.cols,
          requested.code, reshard.code, digest(stack), handles);
      long tokens = (long) batch * t.rows * t.cols;
      tb = DeviceBuffer.allocate(dev, tokens * stack.dim() * 2, "CP tile (x / out)");
      mb = DeviceBuffer.allocate(dev, tokens, "CP tile mask");
    } catch (RuntimeException e) {
      closeQuietly(e, p, made, tb, mb, s, dev);
      throw e;
    }
    this.device = dev;
    this.stream = s;
    this.layers = made.stream().mapToLong(Long::longValue).toArray();
    this.tileBuf = tb;
    this.maskBuf = mb;
    this.plan = p;
    this.route = StoreRoute.ofCode(NativeCp.planRoute(p));
    this.reshard = Reshard.ofCode(NativeCp.planReshard(p));
    long[] bytes = NativeCp.planReshardBytes(p);
    this.bytesToChannels = bytes[0];
    this.bytesToTokens = bytes[1];
    team.stackOpened();
    LOG.log(System.Logger.Level.INFO, () -> "fold-cp CP stack on rank " + team.rank() + ": " + layout + ", "
        + stack.size() + " layer(s), batch " + batch + ", store route " + route.label() + " (asked "
        + requested.label() + "), reshards " + reshard.label() + ", per forward " + bytesToChannels
        + " B token->channel and " + bytesToTokens + " B channel->token leave this rank");
  }

  /** SHA-256 over every layer's weights digest and what the kernels bake in (direction, residual, eps). */
  static byte[] digest(LayerStack stack) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      for (TriMulLayer l : stack.layers()) {
        md.update((l.weights().digest() + "|" + l.direction() + "|" + l.spec().residual() + "|"
            + Float.floatToIntBits(l.spec().eps()) + ";").getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
      return md.digest();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  public ShardLayout layout() { return layout; }

  /** The token window of this rank. */
  public TileBounds tile() { return layout.tile(team.rank()); }

  /** The store route both fused reshards use (decided at construction, the same on every rank). */
  public StoreRoute route() { return route; }

  /** Whether the reshards are fused into the epilogues or a separate all-to-all (decided at construction). */
  public Reshard reshard() { return reshard; }

  /** Bytes leaving this rank per forward in the token -> channel reshard (all layers). */
  public long bytesToChannels() { return bytesToChannels; }

  /** Bytes leaving this rank per forward in the channel -> token reshard (all layers). */
  public long bytesToTokens() { return bytesToTokens; }

  /**
   * Runs the stack on this rank's tile (collective: every rank calls it once per complex):
   * {@code tile} is (B, tileRows, tileCols, D) as {@link #tile()} says, positions past N are
   * ignored (treated as masked). Returns the output tile, carrying the input's mask. A peer that
   * does not arrive within the team's timeout ends in {@link TeamException} naming it. A tile
   * holding NaN or Inf fails (see {@link #forward(PairTensor, boolean)}).
   */
  public synchronized PairTensor forward(PairTensor tile) {
    return forward(tile, false);
  }

  /**
   * As {@link #forward(PairTensor)}; with {@code allowNonFinite} false, a tile holding NaN or Inf
   * fails with {@link org.foldcp.ops.NonFiniteInputException} after its rows are copied to the
   * device (the check rides that copy) and before the collective kernels start. The peers do not
   * learn of it and wait for this rank until their timeout: callers that can should check the
   * tiles before the team meets (the Spark barrier route does, before its stage).
   */
  public synchronized PairTensor forward(PairTensor tile, boolean allowNonFinite) {
    if (closed) {
      throw new IllegalStateException("CpGpuStack is closed");
    }
    TileBounds t = tile();
    InvalidInputException.require(tile.batch() == batch && tile.rows() == t.rows && tile.cols() == t.cols
        && tile.dim() == layout.dim(), "tile shape", tile.shapeString(), "must be (" + batch + ", " + t.rows + ", "
        + t.cols + ", " + layout.dim() + ") for rank " + team.rank() + " of " + layout);
    device.makeCurrent();
    int d = layout.dim();
    int rowBytes = t.cols * d * 2;
    byte[] row = new byte[rowBytes];
    ByteBuffer bb = ByteBuffer.wrap(row).order(ByteOrder.LITTLE_ENDIAN);
    byte[] maskRow = new byte[t.cols];
    NonFinite.Scan scan = allowNonFinite ? null : new NonFinite.Scan(d);
    for (int b = 0; b < batch; b++) {
      for (int i = 0; i < t.rows; i++) {
        bb.clear();
        short[] values = tile.row(b, i);
        if (scan != null) {
          scan.row(b, i, values);
        }
        bb.asShortBuffer().put(values);
        long r = (long) b * t.rows + i;
        tileBuf.copyFromHost(r * rowBytes, row, 0, rowBytes);
        byte[] m = tile.maskRow(b, i);
        if (m == null) {
          java.util.Arrays.fill(maskRow, (byte) 1);
        } else {
          for (int j = 0; j < t.cols; j++) {
            maskRow[j] = m[j] != 0 ? (byte) 1 : (byte) 0;
          }
        }
        maskBuf.copyFromHost(r * t.cols, maskRow, 0, t.cols);
      }
    }
    if (scan != null) {
      scan.throwIfFound("the pair tile of rank " + team.rank());
    }
    NativeCp.forward(plan, tileBuf.address(), maskBuf.address(), tileBuf.address(), stream.handle());
    PairTensor out = PairTensor.zeros(batch, t.rows, t.cols, d);
    for (int b = 0; b < batch; b++) {
      for (int i = 0; i < t.rows; i++) {
        long r = (long) b * t.rows + i;
        tileBuf.copyToHost(r * rowBytes, row, 0, rowBytes);
        bb.clear();
        bb.asShortBuffer().get(out.row(b, i));
      }
    }
    out.setMask(tile.maskCopy());
    return out;
  }

  /** Frees the plan (collective: every rank closes its stack), the layers and the buffers. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    team.stackClosed();
    RuntimeException first = null;
    try {
      device.makeCurrent();
      NativeCp.destroyPlan(plan);
    } catch (RuntimeException e) {
      first = e;
    }
    first = closeQuietly(first, 0, toList(layers), tileBuf, maskBuf, stream, device);
    if (first != null) {
      throw first;
    }
  }

  private static List<Long> toList(long[] a) {
    List<Long> l = new ArrayList<>();
    for (long v : a) {
      l.add(v);
    }
    return l;
  }

  private static RuntimeException closeQuietly(RuntimeException first, long plan, List<Long> layers,
      DeviceBuffer tb, DeviceBuffer mb, GpuStream s, GpuDevice dev) {
    List<AutoCloseable> steps = new ArrayList<>();
    if (plan != 0) {
      steps.add(() -> NativeCp.destroyPlan(plan));
    }
    for (long l : layers) {
      steps.add(() -> NativeCp.destroyLayer(l));
    }
    steps.addAll(java.util.Arrays.asList(tb, mb, s, dev));
    RuntimeException err = Closeables.closeAll(first, steps.toArray(new AutoCloseable[0]));
    return first != null ? first : err;  // closeAll adds later failures to a pending one
  }
}
