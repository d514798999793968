package org.foldcp.ops.gpu;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.StageTimes;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;

/**
 * The single-GPU backend: our sm_90a kernels (through {@link NativeTriMul}) on one Hopper GPU.
 *
 * <p>What it holds, all freed by {@link #close()} in this order: the native layers (a
 * {@link LayerCache}, shared with the executor's feed), the resident device buffers of the current
 * (B, N, D) and H ({@link ResidentBuffers}), the non-finite scan's result buffers, the host transfers
 * when it opened them itself, the stream, and last the device's primary-context retain. The host
 * transfers ({@link PinnedTransfers}: a fixed pinned pool and copy threads) are the executor's
 * when it passes them in, so that one pool serves every path to the device.
 *
 * <p>A forward moves the bf16 values up through the pinned pool in blocks (bulk copies, several
 * threads), checks them for NaN and Inf on the device, runs the layer(s) in place (the kernels
 * allow out == x), and downloads once; a {@link LayerStack} stays resident across all its layers.
 * The mask goes up as uint8, or not at all when every position is valid. The output carries the
 * input's mask. Methods are synchronized: one forward at a time per instance; any thread may call
 * (the context is made current on the calling thread).
 *
 * <p>Errors: a shape or weight the kernels do not support fails before any upload with
 * {@link InvalidInputException} naming the value and the rule; device failures throw
 * {@link GpuException} naming the call. A device-side fault (illegal address and the like)
 * leaves the CUDA context unusable for the rest of the process, as CUDA defines it.
 */
public final class GpuTriMul implements TriMulBackend {
  private static final System.Logger LOG = System.getLogger(GpuTriMul.class.getName());

  public static final int DEFAULT_LAYER_CACHE_ENTRIES = 32;
  /** The pinned pool a backend opens for itself when none is passed in: 4 blocks of 8 MiB, 2 copy threads. */
  static final int OWN_BLOCKS = 4;
  static final long OWN_BLOCK_BYTES = 8L << 20;
  static final int OWN_COPY_THREADS = 2;

  private final GpuDevice device;
  private final GpuStream stream;
  private final PinnedTransfers transfers;
  private final boolean ownsTransfers;
  private final DeviceBuffer scanResult;
  private final PinnedHostBuffer scanHost;
  private final long memoryBudget;
  private final LayerCache layers;
  private ResidentBuffers resident;
  private boolean closed;

  private long forwards;
  private long layerRuns;
  private long profiledLayerRuns;
  private long uploads;
  private long downloads;
  private long bytesToDevice;
  private long bytesFromDevice;
  private long residentAllocations;

  /** The GPU backend on device 0. */
  public GpuTriMul() {
    this(0);
  }

  /** The GPU backend on device {@code deviceOrdinal}; throws {@link GpuException} saying why it cannot run there. */
  public GpuTriMul(int deviceOrdinal) {
    this(deviceOrdinal, DEFAULT_LAYER_CACHE_ENTRIES);
  }

  public GpuTriMul(int deviceOrdinal, int maxCachedLayers) {
    this(deviceOrdinal, maxCachedLayers, 0L);
  }

  /**
   * As {@link #GpuTriMul(int, int)}, with at most {@code memoryBudgetBytes} of device memory for
   * the resident buffers (pair tensor, mask, workspace; 0 = whatever is free). A shape whose
   * whole workspace does not fit runs stages 1-2 in channel groups (same result, bit for bit),
   * chosen once per shape and logged.
   */
  public GpuTriMul(int deviceOrdinal, int maxCachedLayers, long memoryBudgetBytes) {
    this(deviceOrdinal, maxCachedLayers, memoryBudgetBytes, null);
  }

  /**
   * As above, moving host bytes through {@code hostTransfers}, which the caller owns and closes
   * after this backend (the executor's pool); null: the backend opens and owns a small pool.
   */
  public GpuTriMul(int deviceOrdinal, int maxCachedLayers, long memoryBudgetBytes, PinnedTransfers hostTransfers) {
    InvalidInputException.require(maxCachedLayers >= 1, "maxCachedLayers", maxCachedLayers,
        "the layer cache must hold at least one layer");
    InvalidInputException.require(memoryBudgetBytes >= 0, "memoryBudgetBytes", memoryBudgetBytes,
        "the device memory budget must be >= 0 (0: whatever is free)");
    if (hostTransfers != null) {
      InvalidInputException.require(hostTransfers.device().ordinal() == deviceOrdinal, "host transfers' device",
          hostTransfers.device().ordinal(), "must be the backend's device " + deviceOrdinal);
    }
    this.memoryBudget = memoryBudgetBytes;
    String why = GpuAvailability.availability(deviceOrdinal);
    if (why != null) {
      throw new GpuException(why);
    }
    GpuDevice dev = GpuDevice.open(deviceOrdinal);
    GpuStream s = null;
    PinnedTransfers t = null;
    DeviceBuffer sr = null;
    PinnedHostBuffer sh = null;
    try {
      s = GpuStream.create(dev);
      t = hostTransfers != null ? hostTransfers : new PinnedTransfers(dev, OWN_BLOCKS, OWN_BLOCK_BYTES, OWN_COPY_THREADS);
      sr = DeviceBuffer.allocate(dev, ScanResult.BYTES, "non-finite scan result");
      sh = PinnedHostBuffer.allocate(dev, ScanResult.BYTES, "non-finite scan result (host)");
    } catch (RuntimeException e) {
      Closeables.closeAll(e, sh, sr, hostTransfers != null ? null : t, s, dev);
      throw e;
    }
    this.device = dev;
    this.stream = s;
    this.transfers = t;
    this.ownsTransfers = hostTransfers == null;
    this.scanResult = sr;
    this.scanHost = sh;
    this.layers = new LayerCache(dev, maxCachedLayers);
    LOG.log(System.Logger.Level.INFO, () -> "fold-cp GPU backend on device " + dev.ordinal() + " (" + dev.name()
        + ", sm_" + dev.major() + dev.minor() + "), " + NativeLibrary.LIBRARY_FILE + " from "
        + NativeLibrary.loadedFrom() + " (sm_" + NativeTriMul.targetSm() + ", CUDA runtime "
        + NativeTriMul.cudaRuntimeVersion() + ", static), host transfers: "
        + (ownsTransfers ? "its own pool of " : "the executor's pool of ") + transfers.pool().blocks() + " pinned blocks");
  }

  // ------------------------------------------------------------------------------------------
  // TriMulBackend

  @Override
  public String name() {
    return "gpu";
  }

  public GpuDevice device() {
    return device;
  }

  @Override
  public synchronized PairTensor forward(PairTensor x, TriMulLayer layer, boolean allowNonFinite) {
    Objects.requireNonNull(layer, "layer");
    return run(x, List.of(layer), null, allowNonFinite, null);
  }

  /**
   * All layers of the stack with the tensor resident on the GPU: one upload, one download. NaN
   * and Inf are found by a scan on the device after the upload; it fails then, before any
   * kernel of the layers runs.
   */
  @Override
  public synchronized PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite) {
    Objects.requireNonNull(stack, "stack");
    return run(x, stack.layers(), null, allowNonFinite, null);
  }

  /**
   * The resident stack, each layer through the native profiled forward (CUDA events around the
   * stages, then a wait for them), the stage times summed over the layers and reported once the
   * output is downloaded. Same output, bit for bit, as the plain forward; a shape that runs in
   * channel groups ({@link #channelGroup()} below H) reports its stages summed over the groups.
   */
  @Override
  public synchronized PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite,
                                         StageTimes.Sink sink) {
    Objects.requireNonNull(stack, "stack");
    Objects.requireNonNull(sink, "sink");
    return run(x, stack.layers(), null, allowNonFinite, sink);
  }

  /**
   * Test hook: one layer from the resident copy of x into the caller's device buffer {@code out}
   * (which a test poisons first), downloaded from there. {@code out} must hold B*N*N*D bf16
   * values; bytes beyond them are left untouched.
   */
  synchronized PairTensor forwardInto(PairTensor x, TriMulLayer layer, DeviceBuffer out) {
    Objects.requireNonNull(layer, "layer");
    Objects.requireNonNull(out, "out");
    return run(x, List.of(layer), out, false, null);
  }

  /** {@code sink}: null for the plain forward, else where the stage times go (see the profiled forward). */
  private PairTensor run(PairTensor x, List<TriMulLayer> stack, DeviceBuffer out, boolean allowNonFinite,
                         StageTimes.Sink sink) {
    ensureOpen();
    Objects.requireNonNull(x, "x");
    for (TriMulLayer l : stack) {
      CpuTriMul.validate(x, l);
      NativeTriMul.requireKernelsFor(l);
    }
    final int b = x.batch();
    final int n = x.n();
    final int d = x.dim();
    final int h = stack.get(0).hidden(); // the layers of a stack share H: the workspace's channels
    NativeTriMul.checkShape(b, n, d);
    if (out != null) {
      long tensorBytes = TensorBytes.valueBytes(x);
      InvalidInputException.require(out.device() == device, "output buffer device", out.device().ordinal(),
          "must be this backend's device " + device.ordinal());
      InvalidInputException.require(out.bytes() >= tensorBytes, "output buffer size", out.bytes(),
          "must hold the (B, N, N, D) = " + x.shapeString() + " bf16 output, " + tensorBytes + " bytes");
    }
    device.makeCurrent();
    // the layers first, pinned while this forward runs: a layer that cannot be made fails before
    // any upload, and the resident buffers are sized with the weights already on the device
    long[] handles = layers.acquire(stack);
    try {
      boolean masked = x.anyMasked();
      ResidentBuffers r = resident(b, n, d, h, masked);
      boolean ok = false;
      try {
        upload(r.x(), TensorBytes.valueBytes(x), (off, dst, len) -> TensorBytes.copyValues(x, off, dst, len));
        long mask = 0L;
        if (masked) {
          DeviceBuffer m = r.ensureMask();
          upload(m, TensorBytes.maskBytes(x), (off, dst, len) -> TensorBytes.copyMask(x, off, dst, len));
          mask = m.address();
        }
        if (!allowNonFinite) {
          throwIfNonFinite(r, TensorBytes.valueBytes(x) / 2);
        }
        DeviceBuffer result = out == null ? r.x() : out;
        StageTimes measured = runLayers(handles, r, mask, result, sink != null);
        PairTensor y = PairTensor.zeros(b, n, n, d);
        long bytes = TensorBytes.valueBytes(y);
        transfers.download(result, bytes, stream, (off, src, len) -> TensorBytes.takeValues(y, off, src, len));
        downloads++;
        bytesFromDevice += bytes;
        y.setMask(x.maskCopy());
        forwards++;
        ok = true;
        if (measured != null) {
          sink.accept(measured);
        }
        return y;
      } finally {
        if (!ok) {
          drainAfterFailure();
        }
      }
    } finally {
      layers.release(stack); // and evicts beyond the cache's size, after the device has run what it was given
    }
  }

  /**
   * Queues every layer on the stream, in place on the resident copy (or, for the test hook, into
   * the caller's buffer); with {@code profiled}, each layer waits for its kernels and the stage
   * times summed over the layers are returned (else null). The layers are pinned by the caller.
   */
  private StageTimes runLayers(long[] handles, ResidentBuffers r, long mask, DeviceBuffer result, boolean profiled) {
    StageTimes measured = StageTimes.ZERO;
    float[] stageMs = profiled ? new float[3] : null;
    for (long h : handles) {
      NativeTriMul.forward(h, r.x().address(), mask, result.address(), r.b, r.n, r.workspace().address(),
          r.workspace().bytes(), r.group, stream.handle(), stageMs);
      if (profiled) {
        measured = measured.plus(StageTimes.ofMillis(stageMs));
        profiledLayerRuns++;
      }
      layerRuns++;
    }
    return profiled ? measured : null;
  }

  /** Copies {@code bytes} from {@code src} into {@code dst} through the pinned pool, queued on the stream. */
  private void upload(DeviceBuffer dst, long bytes, PinnedTransfers.Source src) {
    transfers.upload(src, bytes, dst, stream);
    uploads++;
    bytesToDevice += bytes;
  }

  /**
   * The device's NaN / Inf scan over the uploaded values; waits for it and throws naming the count
   * and the first (b, i, j, c), before any kernel is queued.
   */
  private void throwIfNonFinite(ResidentBuffers r, long count) {
    NativeTriMul.nonFiniteScan(r.x().address(), count, scanResult.address(), stream.handle());
    scanResult.copyToHostAsync(0, scanHost, 0, ScanResult.BYTES, stream);
    stream.synchronize();
    ScanResult.throwIfFound(scanHost.buffer(), r.n, r.n, r.d, "the pair tensor");
  }

  /** After a failure: wait for what is still queued so that no buffer is freed under a copy. */
  private void drainAfterFailure() {
    try {
      stream.synchronize();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "fold-cp GPU backend: stream failed after an error: " + e.getMessage());
    }
  }

  /** The resident buffers of (b, n, d) and hidden width h, reallocated only when one of them changes. */
  private ResidentBuffers resident(int b, int n, int d, int h, boolean masked) {
    if (resident != null && resident.matches(b, n, d, h)) {
      return resident;
    }
    if (resident != null) {
      stream.synchronize();
      ResidentBuffers old = resident;
      resident = null;
      old.close();
    }
    resident = ResidentBuffers.allocate(device, b, n, d, h, masked, memoryBudget);
    residentAllocations++;
    return resident;
  }

  /** Channels per group of stages 1-2 for the resident shape (its H: not grouped); 0 before the first forward. */
  public synchronized long channelGroup() {
    return resident == null ? 0 : resident.group;
  }

  /** Native layers currently cached. */
  public synchronized int cachedLayers() {
    return layers.size();
  }

  /**
   * The native layers of this device, shared with whoever else computes on it (the executor's
   * {@code org.foldcp.ops.gpu.feed.StackFeed}), so that a layer is uploaded once per device.
   */
  public LayerCache layerCache() {
    return layers;
  }

  /** The host transfers this backend moves bytes through (its own, or the executor's). */
  public PinnedTransfers transfers() {
    return transfers;
  }

  /** The device memory budget given at construction (0: whatever is free). */
  public long memoryBudget() {
    return memoryBudget;
  }

  /** Counters since construction (a snapshot). */
  public synchronized GpuStats stats() {
    return new GpuStats(forwards, layerRuns, profiledLayerRuns, uploads, downloads, bytesToDevice, bytesFromDevice,
        layers.created(), residentAllocations);
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("GpuTriMul is closed");
    }
  }

  /**
   * Frees everything, in order: waits for the stream, destroys the native layers, frees the
   * resident buffers, the scan buffers, the host transfers if they are its own, the stream, and
   * releases the primary context. Idempotent. Every step runs even if an earlier one fails; the
   * first failure is thrown at the end with the others suppressed.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<AutoCloseable> steps = new ArrayList<>();
    steps.add(stream::synchronize);
    steps.add(layers);
    steps.add(resident);
    resident = null;
    steps.add(scanHost);
    steps.add(scanResult);
    if (ownsTransfers) {
      steps.add(transfers);
    }
    steps.add(stream);
    steps.add(device);
    RuntimeException first = Closeables.closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (first != null) {
      throw first;
    }
  }

  @Override
  public String toString() {
    return "GpuTriMul(" + (device == null ? "?" : device.toString()) + (closed ? ", closed" : "") + ")";
  }
}
