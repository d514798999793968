package org.foldcp.ops.gpu.cp;

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
import org.foldcp.ops.gpu.PinnedHostBuffer;
import org.foldcp.ops.gpu.ScanResult;
import org.foldcp.ops.gpu.feed.PinnedTransfers;
import org.foldcp.ops.gpu.feed.TensorBytes;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * A layer stack running context-parallel on the NVSHMEM team, this rank's part of it: the
 * A2A-fused CP TriMul of docs/design.md section 2 on one token tile of the {@link ShardLayout#forGpu}
 * layout. Made collectively (every rank constructs it with the same grid, N, batch and stack;
 * the weights are compared across ranks by digest, and weights that differ are an
 * {@link InvalidInputException} on every rank, naming the ranks). The store route is decided
 * here, once, identically on every rank ({@link #route()}), and never in {@link #forward}.
 *
 * <p>The tile moves between host and device through the executor's {@link PinnedTransfers}
 * (borrowed: its pinned pool and copy threads), block by block: bulk copies on several threads,
 * each block's upload queued as soon as it is full, the download handed over block by block while
 * the next blocks arrive; the non-finite check runs on the device. Pinned memory is the pool's,
 * whatever the tile's size. The pair tensor stays on the GPU across all layers of the stack: one
 * upload, one download.
 *
 * <p>Holds, freed by {@link #close()} in this order: the native plan (its symmetric buffers:
 * collective), the native layers, the tile buffers on the device and the scan result's pinned
 * word, the stream, the device retain.
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
  private final DeviceBuffer scanBuf;
  private final PinnedTransfers transfers;
  private final PinnedHostBuffer scanHost;
  private final long plan;
  private final StoreRoute route;
  private final Reshard reshard;
  private final long bytesToChannels;
  private final long bytesToTokens;
  private boolean closed;

  /**
   * The stack on {@code grid} (cp0 * cp1 must equal the team size) for complexes of N tokens and
   * {@code batch} batch elements; {@code requested} route AUTO, PEER or PUT; the reshards
   * {@code reshard} (fused into the epilogues, or a separate all-to-all); tiles moving through
   * {@code transfers}, which must be on the team's device.
   */
  public CpGpuStack(NvshmemTeam team, CpGrid grid, int n, int batch, LayerStack stack, StoreRoute requested,
      Reshard reshard, PinnedTransfers transfers) {
    this.layout = ShardLayout.forGpu(grid, n, stack.dim());  // first: D % cp is named before anything else
    InvalidInputException.require(grid.size() == team.size(), "cp grid", grid,
        "must have as many ranks as the NVSHMEM team (" + team.size() + ")");
    InvalidInputException.require(batch >= 1, "batch", batch, "must be >= 1");
    InvalidInputException.require(transfers.device().ordinal() == team.spec().device(), "pinned transfers' GPU",
        transfers.device().ordinal(), "must be the team's GPU " + team.spec().device());
    this.team = team;
    this.batch = batch;
    this.transfers = transfers;
    TileBounds t = layout.tile(team.rank());
    GpuDevice dev = GpuDevice.open(team.spec().device());
    GpuStream s = null;
    List<Long> made = new ArrayList<>();
    DeviceBuffer tb = null;
    DeviceBuffer mb = null;
    DeviceBuffer sb = null;
    PinnedHostBuffer sh = null;
    long p = 0;
    long tokens = (long) batch * t.rows * t.cols;
    long tileBytes = tokens * stack.dim() * 2;
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
      tb = DeviceBuffer.allocate(dev, tileBytes, "CP tile (x / out)");
      mb = DeviceBuffer.allocate(dev, tokens, "CP tile mask");
      sb = DeviceBuffer.allocate(dev, ScanResult.BYTES, "CP tile non-finite scan result");
      sh = PinnedHostBuffer.allocate(dev, ScanResult.BYTES, "CP tile non-finite scan result (host)");
    } catch (RuntimeException e) {
      closeQuietly(e, p, made, java.util.Arrays.asList(tb, mb, sb, sh), s, dev);
      throw e;
    }
    this.device = dev;
    this.stream = s;
    this.layers = made.stream().mapToLong(Long::longValue).toArray();
    this.tileBuf = tb;
    this.maskBuf = mb;
    this.scanBuf = sb;
    this.scanHost = sh;
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
   * fails with {@link org.foldcp.ops.NonFiniteInputException} after its upload (the device scans
   * it) and before the collective kernels start. The peers do not
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
    long tokens = (long) batch * t.rows * t.cols;
    long valueBytes = tokens * d * 2;
    transfers.upload((off, dst, len) -> TensorBytes.copyValues(tile, off, dst, len), valueBytes, tileBuf, stream);
    transfers.upload((off, dst, len) -> TensorBytes.copyMask(tile, off, dst, len), tokens, maskBuf, stream);
    if (!allowNonFinite) {
      NativeCp.nonFiniteScan(tileBuf.address(), tokens * d, scanBuf.address(), stream.handle());
      scanBuf.copyToHostAsync(0, scanHost, 0, ScanResult.BYTES, stream);
      stream.synchronize();
      ScanResult.throwIfFound(scanHost.buffer(), t.rows, t.cols, d, "the pair tile of rank " + team.rank());
    }
    NativeCp.forward(plan, tileBuf.address(), maskBuf.address(), tileBuf.address(), stream.handle());
    PairTensor out = PairTensor.zeros(batch, t.rows, t.cols, d);
    transfers.download(tileBuf, valueBytes, stream, (off, src, len) -> TensorBytes.takeValues(out, off, src, len));
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
    first = closeQuietly(first, 0, toList(layers), java.util.Arrays.asList(tileBuf, maskBuf, scanBuf, scanHost), stream, device);
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

  /** {@code buffers}: the device buffers and the scan result's pinned word, any of them null (not made yet). */
  private static RuntimeException closeQuietly(RuntimeException first, long plan, List<Long> layers,
      List<AutoCloseable> buffers, GpuStream s, GpuDevice dev) {
    List<AutoCloseable> steps = new ArrayList<>();
    if (plan != 0) {
      steps.add(() -> NativeCp.destroyPlan(plan));
    }
    for (long l : layers) {
      steps.add(() -> NativeCp.destroyLayer(l));
    }
    steps.addAll(buffers);
    steps.add(s);
    steps.add(dev);
    RuntimeException err = Closeables.closeAll(first, steps.toArray(new AutoCloseable[0]));
    return first != null ? first : err;  // closeAll adds later failures to a pending one
  }
}
