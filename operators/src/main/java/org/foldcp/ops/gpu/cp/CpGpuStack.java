package org.foldcp.ops.gpu.cp;

import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.DeviceBuffer;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuEvent;
import org.foldcp.ops.gpu.GpuStream;
import org.foldcp.ops.gpu.LayerCache;
import org.foldcp.ops.gpu.NativeTriMul;
import org.foldcp.ops.gpu.PinnedHostBuffer;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.gpu.ScanResult;
import org.foldcp.ops.gpu.TensorBytes;
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
 * <p>A forward is {@link #load} (upload), {@link #compute} (the collective kernels; returns when
 * they have run) and {@link #collect} (download). Made with {@code stageAhead}, the stack holds a
 * second pair of tile buffers and an upload stream: a caller that {@link #stage stages} the next
 * complex's tile before {@link #compute} has its bytes copied by the copy threads and uploaded
 * while the kernels run; {@link #collect} then makes it the loaded tile, so the next compute
 * only waits for what is left of its upload.
 *
 * <p>Holds, freed by {@link #close()} in this order: the native plan (its symmetric buffers:
 * collective), its pins on the native layers (the executor's {@link LayerCache}, shared with the
 * cp = 1 backend, or its own), the tile buffers, the scan result's pinned word, the stream, the device.
 */
public final class CpGpuStack implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(CpGpuStack.class.getName());
  /** Device memory left free beside a second tile buffer pair (the kernels' own needs, other users). */
  private static final long STAGING_HEADROOM = 512L << 20;

  private final NvshmemTeam team;
  private final ShardLayout layout;
  private final int batch;
  private final GpuDevice device;
  private final GpuStream stream;
  private final AutoCloseable layersRelease; // unpins the plan's native layers (and frees its own cache)
  private final DeviceBuffer[] tileBufs; // the pair tile (x / out) of each buffer pair: one, or two when staging ahead
  private final DeviceBuffer[] maskBufs;
  private final GpuStream upStream; // the staged uploads; null unless staging ahead
  private final GpuEvent stagedUpload; // after the staged upload; null unless staging ahead
  private final DeviceBuffer scanBuf;
  private final PinnedTransfers transfers;
  private final PinnedHostBuffer scanHost;
  private final long plan;
  private final StoreRoute route;
  private final Reshard reshard;
  private final long bytesToChannels;
  private final long bytesToTokens;
  private int current; // the buffer pair of the loaded (or computed) tile
  private PairTensor loaded; // uploaded into the current pair, not yet computed, or null
  private PairTensor staged; // being copied into the other pair, or null
  private PinnedTransfers.Pending[] stagedCopies; // the staged tile's value and mask uploads
  private PairTensor launched; // computed, its output not yet collected, or null
  private boolean closed;

  /**
   * The stack on {@code grid} (cp0 * cp1 must equal the team size) for complexes of N tokens and
   * {@code batch} batch elements; {@code requested} route AUTO, PEER or PUT; the reshards
   * {@code reshard} (fused into the epilogues, or a separate all-to-all); tiles moving through
   * {@code transfers}, which must be on the team's device; with {@code stageAhead}, a second pair
   * of tile buffers and an upload stream for {@link #stage}, where the device has room for them
   * ({@link #stagesAhead} says; decided here, once); the native layers pinned in {@code cpLayers}
   * ({@link LayerCache#SINGLE_GPU} layers on the team's GPU, shared across stacks, tasks and the
   * cp = 1 backend, since the CP library links against the single-GPU one; null: its own).
   */
  public CpGpuStack(NvshmemTeam team, CpGrid grid, int n, int batch, LayerStack stack, StoreRoute requested,
      Reshard reshard, PinnedTransfers transfers, boolean stageAhead, LayerCache cpLayers) {
    this.layout = ShardLayout.forGpu(grid, n, stack.dim(), stack.hidden()); // first: H % cp is named before anything else
    NativeTriMul.requireKernelsFor(stack.get(0)); // every layer of a stack has the same H and D
    InvalidInputException.require(grid.size() == team.size(), "cp grid", grid,
        "must have as many ranks as the NVSHMEM team (" + team.size() + ")");
    InvalidInputException.require(batch >= 1, "batch", batch, "must be >= 1");
    InvalidInputException.require(transfers.device().ordinal() == team.spec().device(), "pinned transfers' GPU",
        transfers.device().ordinal(), "must be the team's GPU " + team.spec().device());
    InvalidInputException.require(cpLayers == null || cpLayers.device().ordinal() == team.spec().device()
        && cpLayers.api() == LayerCache.SINGLE_GPU, "CP layer cache", cpLayers,
        "must hold the single-GPU library's layers on the team's GPU " + team.spec().device());
    this.team = team;
    this.batch = batch;
    this.transfers = transfers;
    TileBounds t = layout.tile(team.rank());
    GpuDevice dev = GpuDevice.open(team.spec().device());
    GpuStream s = null;
    GpuStream up = null;
    GpuEvent ev = null;
    LayerCache lc = null;
    boolean pinned = false;
    StoreRoute rt;
    Reshard rs;
    long[] bytes;
    DeviceBuffer[] tb = new DeviceBuffer[2];
    DeviceBuffer[] mb = new DeviceBuffer[2];
    DeviceBuffer sb = null;
    int pairs = 1;
    PinnedHostBuffer sh = null;
    long p = 0;
    long tokens = (long) batch * t.rows * t.cols;
    long tileBytes = tokens * stack.dim() * 2;
    try {
      dev.makeCurrent();
      s = GpuStream.create(dev);
      lc = cpLayers != null ? cpLayers : new LayerCache(dev, Math.max(1, stack.size()), LayerCache.SINGLE_GPU);
      long[] handles = lc.acquire(stack.layers());
      pinned = true;
      // The plan first: it checks the ranks agree and the heap holds it before the tile buffers exist.
      p = NativeCp.createPlan(batch, n, stack.dim(), stack.hidden(), grid.rowGroups(), grid.colGroups(), t.rows,
          t.cols, requested.code, reshard.code, stack.digest(), handles);
      rt = StoreRoute.ofCode(NativeCp.planRoute(p));
      rs = Reshard.ofCode(NativeCp.planReshard(p));
      bytes = NativeCp.planReshardBytes(p);
      // the second pair only where the device keeps room beside it: staging ahead saves time, it
      // must never be what makes a tile that fits one pair run out of memory
      pairs = stageAhead && dev.memInfo().free() >= 2 * (tileBytes + tokens) + STAGING_HEADROOM ? 2 : 1;
      for (int k = 0; k < pairs; k++) {
        tb[k] = DeviceBuffer.allocate(dev, tileBytes, "CP tile (x / out), buffer pair " + k);
        mb[k] = DeviceBuffer.allocate(dev, tokens, "CP tile mask, buffer pair " + k);
      }
      if (pairs == 2) {
        up = GpuStream.create(dev);
        ev = GpuEvent.create(dev, false, "CP staged tile uploaded");
      }
      sb = DeviceBuffer.allocate(dev, ScanResult.BYTES, "CP tile non-finite scan result");
      sh = PinnedHostBuffer.allocate(dev, ScanResult.BYTES, "CP tile non-finite scan result (host)");
    } catch (RuntimeException e) {
      closeQuietly(e, p, layerRelease(lc, cpLayers == null, pinned, stack.layers()), buffers(tb, mb, sb, sh, ev, up),
          s, dev);
      throw e;
    }
    this.device = dev;
    this.stream = s;
    this.layersRelease = layerRelease(lc, cpLayers == null, true, stack.layers());
    this.tileBufs = java.util.Arrays.copyOf(tb, pairs);
    this.maskBufs = java.util.Arrays.copyOf(mb, pairs);
    this.upStream = up;
    this.stagedUpload = ev;
    this.scanBuf = sb;
    this.scanHost = sh;
    this.plan = p;
    this.route = rt;
    this.reshard = rs;
    this.bytesToChannels = bytes[0];
    this.bytesToTokens = bytes[1];
    team.stackOpened();
    String tiles = pairs == 2 ? "the next tile staged while one computes"
        : stageAhead ? "one tile at a time (no device memory for a second tile)" : "one tile at a time";
    LOG.log(System.Logger.Level.INFO, () -> "fold-cp CP stack on rank " + team.rank() + ": " + layout + ", "
        + stack.size() + " layer(s), batch " + batch + ", store route " + route.label() + " (asked "
        + requested.label() + "), reshards " + reshard.label() + ", " + tiles + ", per forward " + bytesToChannels
        + " B token->channel and " + bytesToTokens + " B channel->token leave this rank");
  }

  public ShardLayout layout() { return layout; }

  public TileBounds tile() { return layout.tile(team.rank()); } // this rank's token window

  /** The store route both fused reshards use (decided at construction, the same on every rank). */
  public StoreRoute route() { return route; }

  /** Whether the reshards are fused into the epilogues or a separate all-to-all (decided at construction). */
  public Reshard reshard() { return reshard; }

  /** Whether {@link #stage} can run: the stack holds a second tile buffer pair (decided at construction). */
  public boolean stagesAhead() { return upStream != null; }

  /** Bytes leaving this rank per forward in the token -> channel / channel -> token reshard (all layers). */
  public long bytesToChannels() { return bytesToChannels; }

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
   * it) and before the collective kernels start. The peers do not learn of it and wait for this
   * rank until their timeout: callers that can should check the tiles before the team meets (the
   * Spark barrier route does, before its stage).
   */
  public synchronized PairTensor forward(PairTensor tile, boolean allowNonFinite) {
    load(tile);
    compute(allowNonFinite);
    return collect();
  }

  /** Uploads {@code tile} into the current buffer pair (returns once its blocks are queued); the next {@link #compute} runs on it. */
  public synchronized void load(PairTensor tile) {
    requireOpen();
    if (loaded != null || launched != null || staged != null) {
      throw new IllegalStateException("rank " + team.rank() + ": a tile is loaded, staged or not yet collected");
    }
    checkTile(tile);
    device.makeCurrent();
    upload(tile, current, stream);
    loaded = tile;
  }

  /**
   * Starts copying {@code tile} into the other buffer pair, on the copy threads and the upload
   * stream, and returns at once: called before {@link #compute}, its copies and upload overlap the
   * kernels, and the {@link #collect} after them makes it the loaded tile. Only a stack made with
   * {@code stageAhead} ({@link #stagesAhead}), one tile at a time. The other pair is free: the
   * complex that used it last was collected, its download waited for.
   */
  public synchronized void stage(PairTensor tile) {
    requireOpen();
    if (upStream == null) {
      throw new IllegalStateException("this CP stack was made without a second tile buffer pair");
    }
    if (staged != null) {
      throw new IllegalStateException("a tile is staged already on rank " + team.rank());
    }
    checkTile(tile);
    int other = 1 - current;
    PinnedTransfers.Pending values = transfers.uploadAsync(
        (off, dst, len) -> TensorBytes.copyValues(tile, off, dst, len), TensorBytes.valueBytes(tile), tileBufs[other],
        upStream);
    PinnedTransfers.Pending mask = transfers.uploadAsync(
        (off, dst, len) -> TensorBytes.copyMask(tile, off, dst, len), TensorBytes.maskBytes(tile), maskBufs[other],
        upStream);
    stagedCopies = new PinnedTransfers.Pending[] {values, mask};
    staged = tile;
  }

  /**
   * Runs the stack (collective) on the loaded tile: the non-finite scan unless allowed, then every
   * layer; returns when the kernels have run. {@link #collect} gives the output.
   */
  public synchronized void compute(boolean allowNonFinite) {
    requireOpen();
    if (loaded == null || launched != null) {
      throw new IllegalStateException("rank " + team.rank() + ": no tile is loaded, or the last output was not"
          + " collected");
    }
    PairTensor tile = loaded;
    loaded = null;
    TileBounds t = tile();
    int d = layout.dim();
    DeviceBuffer x = tileBufs[current];
    device.makeCurrent();
    if (!allowNonFinite) {
      NativeCp.nonFiniteScan(x.address(), TensorBytes.valueBytes(tile) / 2, scanBuf.address(), stream.handle());
      scanBuf.copyToHostAsync(0, scanHost, 0, ScanResult.BYTES, stream);
      stream.synchronize();
      ScanResult.throwIfFound(scanHost.buffer(), t.rows, t.cols, d, "the pair tile of rank " + team.rank());
    }
    NativeCp.forward(plan, x.address(), maskBufs[current].address(), x.address(), stream.handle());
    launched = tile;
  }

  /**
   * The computed tile's output (downloaded block by block), carrying its mask; a staged tile then
   * becomes the loaded one (once its blocks are all queued, the compute stream waiting for them).
   */
  public synchronized PairTensor collect() {
    requireOpen();
    if (launched == null) {
      throw new IllegalStateException("nothing was computed on rank " + team.rank());
    }
    PairTensor tile = launched;
    launched = null;
    TileBounds t = tile();
    device.makeCurrent();
    PairTensor out = PairTensor.zeros(batch, t.rows, t.cols, layout.dim());
    transfers.download(tileBufs[current], TensorBytes.valueBytes(out), stream,
        (off, src, len) -> TensorBytes.takeValues(out, off, src, len));
    out.setMask(tile.maskCopy());
    if (staged != null) {
      PairTensor next = staged;
      staged = null;
      awaitStagedCopies();
      stagedUpload.record(upStream);
      stagedUpload.makeWait(stream); // before the switch: the next compute on that pair follows its upload
      current = 1 - current;
      loaded = next;
    }
    return out;
  }

  /** Waits until every block of the staged uploads is queued; throws the first failure after all have ended. */
  private void awaitStagedCopies() {
    PinnedTransfers.Pending[] copies = stagedCopies;
    stagedCopies = null;
    if (copies != null) {
      RuntimeException e = Closeables.closeAll(null, copies[0]::await, copies[1]::await); // both, whatever the first does
      if (e != null) {
        throw e;
      }
    }
  }

  private void upload(PairTensor tile, int pair, GpuStream on) {
    transfers.upload((off, dst, len) -> TensorBytes.copyValues(tile, off, dst, len), TensorBytes.valueBytes(tile),
        tileBufs[pair], on);
    transfers.upload((off, dst, len) -> TensorBytes.copyMask(tile, off, dst, len), TensorBytes.maskBytes(tile),
        maskBufs[pair], on);
  }

  private void checkTile(PairTensor tile) {
    TileBounds t = tile();
    InvalidInputException.require(tile.batch() == batch && tile.rows() == t.rows && tile.cols() == t.cols
        && tile.dim() == layout.dim(), "tile shape", tile.shapeString(), "must be (" + batch + ", " + t.rows + ", "
        + t.cols + ", " + layout.dim() + ") for rank " + team.rank() + " of " + layout);
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("CpGpuStack is closed");
    }
  }

  /** Frees the plan (collective: every rank closes its stack), the layers and the buffers. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    team.stackClosed();
    // nothing may still read or write a buffer once it is freed: a staged tile's copies and
    // uploads, a computed tile never collected
    AutoCloseable upDone = upStream == null ? null : upStream::synchronize;
    RuntimeException first = Closeables.closeAll(null, this::awaitStagedCopies, device::makeCurrent, upDone,
        stream::synchronize);
    first = closeQuietly(first, plan, layersRelease,
        buffers(tileBufs, maskBufs, scanBuf, scanHost, stagedUpload, upStream), stream, device);
    if (first != null) {
      throw first;
    }
  }

  /** After the plan: unpins the stack's layers, and frees the cache when it is the stack's own; null when there is none. */
  private static AutoCloseable layerRelease(LayerCache lc, boolean own, boolean pinned, List<TriMulLayer> layers) {
    if (lc == null) {
      return null;
    }
    return () -> {
      RuntimeException e = Closeables.closeAll(null, pinned ? () -> lc.release(layers) : null, own ? lc : null);
      if (e != null) {
        throw e;
      }
    };
  }

  /** What close frees after the plan and the layers, in order; any of it null (not made yet). */
  private static List<AutoCloseable> buffers(DeviceBuffer[] tiles, DeviceBuffer[] masks, DeviceBuffer scan,
      PinnedHostBuffer scanHost, GpuEvent staged, GpuStream up) {
    List<AutoCloseable> l = new ArrayList<>(java.util.Arrays.asList(tiles));
    l.addAll(java.util.Arrays.asList(masks));
    l.addAll(java.util.Arrays.asList(scan, scanHost, staged, up));
    return l;
  }

  /** {@code buffers}: the device buffers and the scan result's pinned word, any of them null (not made yet). */
  private static RuntimeException closeQuietly(RuntimeException first, long plan, AutoCloseable layers,
      List<AutoCloseable> buffers, GpuStream s, GpuDevice dev) {
    List<AutoCloseable> steps = new ArrayList<>();
    if (plan != 0) {
      steps.add(() -> NativeCp.destroyPlan(plan));
    }
    steps.add(layers);
    steps.addAll(buffers);
    steps.add(s);
    steps.add(dev);
    RuntimeException err = Closeables.closeAll(first, steps.toArray(new AutoCloseable[0]));
    return first != null ? first : err;  // closeAll adds later failures to a pending one
  }
}
