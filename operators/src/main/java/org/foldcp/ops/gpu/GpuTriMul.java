package org.foldcp.ops.gpu;

import java.nio.ByteBuffer;
import java.nio.ShortBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.StageTimes;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.NonFinite;
import org.foldcp.ops.tensor.PairTensor;

/**
 * The single-GPU backend: our sm_90a kernels (through {@link NativeTriMul}) on one Hopper GPU.
 *
 * <p>What it holds, all freed by {@link #close()} in this order: the native layers (cached per
 * weights digest and spec, at most {@code maxCachedLayers}, least recently used evicted), the
 * resident device buffers for the current (B, N, D) (pair tensor, mask, workspace; reallocated
 * only when the shape changes), two pinned staging buffers with their events, the stream, and
 * last the device's primary-context retain.
 *
 * <p>A forward uploads the bf16 rows through the pinned staging buffers (double-buffered: Java
 * fills one while the DMA engine copies the other), runs the layer(s) in place on the device
 * (the kernels allow out == x), and downloads once; a {@link LayerStack} stays resident on the
 * GPU across all its layers. The mask goes up as uint8, or not at all when every position is
 * valid. The output carries the input's mask. Methods are synchronized: one forward at a time
 * per instance; any thread may call (the context is made current on the calling thread).
 *
 * <p>Errors: a shape or weight the kernels do not support fails before any upload with
 * {@link InvalidInputException} naming the value and the rule; device failures throw
 * {@link GpuException} naming the call. A device-side fault (illegal address and the like)
 * leaves the CUDA context unusable for the rest of the process, as CUDA defines it.
 */
public final class GpuTriMul implements TriMulBackend {
  private static final System.Logger LOG = System.getLogger(GpuTriMul.class.getName());

  /** The only architecture the kernels are built for: compute capability 9.0 (sm_90a). */
  public static final int REQUIRED_MAJOR = 9;
  public static final int REQUIRED_MINOR = 0;
  public static final int DEFAULT_LAYER_CACHE_ENTRIES = 32;
  /** Bytes of each of the two pinned staging buffers (grown to one row when a row is larger). */
  static final long DEFAULT_STAGING_BYTES = 16L << 20;

  private final GpuDevice device;
  private final GpuStream stream;
  private final Staging staging;
  private final int maxCachedLayers;
  private final long memoryBudget;
  private final LayerCache layers;
  private Resident resident;
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
    InvalidInputException.require(maxCachedLayers >= 1, "maxCachedLayers", maxCachedLayers,
        "the layer cache must hold at least one layer");
    InvalidInputException.require(memoryBudgetBytes >= 0, "memoryBudgetBytes", memoryBudgetBytes,
        "the device memory budget must be >= 0 (0: whatever is free)");
    this.memoryBudget = memoryBudgetBytes;
    String why = availability(deviceOrdinal);
    if (why != null) {
      throw new GpuException(why);
    }
    this.maxCachedLayers = maxCachedLayers;
    GpuDevice dev = GpuDevice.open(deviceOrdinal);
    GpuStream s = null;
    Staging st = null;
    try {
      s = GpuStream.create(dev);
      st = new Staging(dev);
    } catch (RuntimeException e) {
      closeAll(e, st, s, dev);
      throw e;
    }
    this.device = dev;
    this.stream = s;
    this.staging = st;
    this.layers = new LayerCache(dev, maxCachedLayers);
    LOG.log(System.Logger.Level.INFO, () -> "fold-cp GPU backend on device " + dev.ordinal() + " (" + dev.name()
        + ", sm_" + dev.major() + dev.minor() + "), " + NativeLibrary.LIBRARY_FILE + " from "
        + NativeLibrary.loadedFrom() + " (sm_" + NativeTriMul.targetSm() + ", CUDA runtime "
        + NativeTriMul.cudaRuntimeVersion() + ", static)");
  }

  // ------------------------------------------------------------------------------------------
  // Availability

  /** Null when the GPU backend can run on device 0, else the reason (for logs and test skips). */
  public static String availability() {
    return availability(0);
  }

  /**
   * Null when the GPU backend can run on device {@code deviceOrdinal}, else why not: no CUDA
   * driver, no GPU, no such device, the wrong architecture, or no native library in this build.
   * Creates no context and allocates nothing.
   */
  public static String availability(int deviceOrdinal) {
    String why = CudaDriver.unavailableReason();
    if (why != null) {
      return unavailable(why);
    }
    try {
      int count = GpuDevice.deviceCount();
      if (count == 0) {
        return unavailable("no GPU: the CUDA driver sees 0 devices" + GpuDevice.visibleDevicesNote());
      }
      if (deviceOrdinal < 0 || deviceOrdinal >= count) {
        return unavailable("device ordinal " + deviceOrdinal + " does not exist: the CUDA driver sees " + count
            + " device(s)" + GpuDevice.visibleDevicesNote());
      }
      GpuDevice.Info info = GpuDevice.info(deviceOrdinal);
      if (!isSupported(info.major(), info.minor())) {
        return unavailable(archMessage(info.major(), info.minor(), info.name()));
      }
    } catch (GpuException | InvalidInputException e) {
      return unavailable(e.getMessage());
    }
    String lib = NativeLibrary.unavailableReason();
    if (lib != null) {
      return unavailable(lib);
    }
    int sm = NativeTriMul.targetSm();
    if (sm != REQUIRED_MAJOR * 10 + REQUIRED_MINOR) {
      return unavailable(NativeLibrary.LIBRARY_FILE + " was built for sm_" + sm + ", not sm_"
          + REQUIRED_MAJOR + REQUIRED_MINOR);
    }
    return null;
  }

  /** Whether compute capability major.minor can run the kernels (exactly 9.0: sm_90a code). */
  public static boolean isSupported(int major, int minor) {
    return major == REQUIRED_MAJOR && minor == REQUIRED_MINOR;
  }

  /**
   * The message for a GPU of the wrong architecture, e.g. "compute capability 8.0 (NVIDIA
   * A100-SXM4-80GB): the GPU route needs sm_90 (Hopper: H100, H200)".
   */
  public static String archMessage(int major, int minor, String deviceName) {
    return "compute capability " + major + "." + minor + " (" + deviceName + "): the GPU route needs sm_"
        + REQUIRED_MAJOR + REQUIRED_MINOR + " (Hopper: H100, H200); the kernels are compiled for sm_90a only,"
        + " so run the CPU backend on this machine";
  }

  static String unavailable(String why) {
    return "GPU backend unavailable: " + why;
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
   * All layers of the stack with the tensor resident on the GPU: one upload, one download. The
   * check for NaN and Inf rides the upload's copy into the staging buffers (no second pass); it
   * fails after the upload, before any kernel runs.
   */
  @Override
  public synchronized PairTensor forward(PairTensor x, LayerStack stack, boolean allowNonFinite) {
    Objects.requireNonNull(stack, "stack");
    return run(x, stack.layers(), null, allowNonFinite, null);
  }

  /**
   * The resident stack, each layer through the native profiled forward (CUDA events around the
   * stages, then a wait for them), the stage times summed over the layers and reported once the
   * output is downloaded. Same output, bit for bit, as the plain forward. A shape that runs in
   * channel groups ({@link #channelGroup()} below D) runs the plain grouped forward and reports
   * nothing: the native library has no profiled grouped entry, and its profiled forward needs the
   * whole workspace, which such a shape does not have (logged once per shape).
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
    }
    final int b = x.batch();
    final int n = x.n();
    final int d = x.dim();
    NativeTriMul.checkShape(b, n, d);
    final long tensorBytes = (long) b * n * n * d * 2;
    if (out != null) {
      InvalidInputException.require(out.device() == device, "output buffer device", out.device().ordinal(),
          "must be this backend's device " + device.ordinal());
      InvalidInputException.require(out.bytes() >= tensorBytes, "output buffer size", out.bytes(),
          "must hold the (B, N, N, D) = " + x.shapeString() + " bf16 output, " + tensorBytes + " bytes");
    }
    device.makeCurrent();
    long[] handles = layers.handles(stack);
    boolean masked = anyMasked(x);
    Resident r = resident(b, n, d, masked);
    boolean ok = false;
    try {
      NonFinite.Scan scan = allowNonFinite ? null : new NonFinite.Scan(d);
      upload(x, r.x, false, scan);
      if (scan != null) {
        scan.throwIfFound("the pair tensor");
      }
      if (masked) {
        upload(x, r.mask, true, null);
      }
      long mask = masked ? r.mask.address() : 0L;
      DeviceBuffer result = out == null ? r.x : out;
      boolean profiled = sink != null && r.profilable();
      StageTimes measured = StageTimes.ZERO;
      float[] stageMs = new float[3];
      for (long h : handles) {
        // In place on the resident copy (the kernels allow out == x); into the caller's buffer
        // for the test hook (one layer only).
        if (profiled) {
          NativeTriMul.forwardProfiled(h, r.x.address(), mask, result.address(), b, n, r.ws.address(),
              r.ws.bytes(), stream.handle(), stageMs);
          measured = measured.plus(StageTimes.ofMillis(stageMs));
          profiledLayerRuns++;
        } else {
          NativeTriMul.forward(h, r.x.address(), mask, result.address(), b, n, r.ws.address(), r.ws.bytes(),
              r.group, stream.handle());
        }
        layerRuns++;
      }
      PairTensor y = PairTensor.zeros(b, n, n, d);
      download(result, y);
      y.setMask(x.maskCopy());
      forwards++;
      ok = true;
      if (profiled) {
        sink.accept(measured);
      }
      return y;
    } finally {
      if (ok) {
        layers.trim();
      } else {
        drainAfterFailure();
      }
    }
  }

  private static boolean anyMasked(PairTensor x) {
    if (!x.hasMask()) {
      return false;
    }
    for (int bb = 0; bb < x.batch(); bb++) {
      for (int i = 0; i < x.rows(); i++) {
        for (byte v : x.maskRow(bb, i)) {
          if (v == 0) {
            return true;
          }
        }
      }
    }
    return false;
  }

  // ------------------------------------------------------------------------------------------
  // Transfers through the pinned staging buffers

  /**
   * Uploads the bf16 rows (or, with {@code mask}, the uint8 mask rows) of x into dst, in order;
   * {@code scan}, when not null, sees every bf16 row as it is copied.
   */
  private void upload(PairTensor x, DeviceBuffer dst, boolean mask, NonFinite.Scan scan) {
    final int rows = x.batch() * x.rows();
    final long rowBytes = mask ? x.cols() : (long) x.cols() * x.dim() * 2;
    staging.ensure(rowBytes);
    final int perChunk = staging.rowsPerChunk(rowBytes);
    long devOff = 0;
    int k = 0;
    for (int r0 = 0; r0 < rows; r0 += perChunk, k ^= 1) {
      int nr = Math.min(perChunk, rows - r0);
      PinnedHostBuffer buf = staging.acquire(k);
      ByteBuffer bb = buf.buffer();
      if (mask) {
        for (int r = r0; r < r0 + nr; r++) {
          bb.put(x.maskRow(r / x.rows(), r % x.rows()));
        }
      } else {
        ShortBuffer sb = bb.asShortBuffer();
        for (int r = r0; r < r0 + nr; r++) {
          short[] row = x.row(r / x.rows(), r % x.rows());
          if (scan != null) {
            scan.row(r / x.rows(), r % x.rows(), row);
          }
          sb.put(row);
        }
      }
      long bytes = nr * rowBytes;
      dst.copyFromHostAsync(devOff, buf, 0, bytes, stream);
      staging.recordUse(k, stream);
      devOff += bytes;
    }
    uploads++;
    bytesToDevice += devOff;
  }

  /** Downloads the bf16 tensor in src into y's rows; returns when every byte has arrived. */
  private void download(DeviceBuffer src, PairTensor y) {
    final int rows = y.batch() * y.rows();
    final long rowBytes = (long) y.cols() * y.dim() * 2;
    staging.ensure(rowBytes);
    final int perChunk = staging.rowsPerChunk(rowBytes);
    final int chunks = (rows + perChunk - 1) / perChunk;
    issueDownload(src, 0, perChunk, rows, rowBytes);
    if (chunks > 1) {
      issueDownload(src, 1, perChunk, rows, rowBytes);
    }
    for (int c = 0; c < chunks; c++) {
      int k = c & 1;
      PinnedHostBuffer buf = staging.acquire(k); // waits for chunk c's copy
      ShortBuffer sb = buf.buffer().asShortBuffer();
      int r0 = c * perChunk;
      int nr = Math.min(perChunk, rows - r0);
      for (int r = r0; r < r0 + nr; r++) {
        sb.get(y.row(r / y.rows(), r % y.rows()));
      }
      if (c + 2 < chunks) {
        issueDownload(src, c + 2, perChunk, rows, rowBytes);
      }
    }
    downloads++;
    bytesFromDevice += rows * rowBytes;
  }

  private void issueDownload(DeviceBuffer src, int chunk, int perChunk, int rows, long rowBytes) {
    int k = chunk & 1;
    PinnedHostBuffer buf = staging.acquire(k);
    int r0 = chunk * perChunk;
    int nr = Math.min(perChunk, rows - r0);
    src.copyToHostAsync(r0 * rowBytes, buf, 0, nr * rowBytes, stream);
    staging.recordUse(k, stream);
  }

  /** After a failure: wait for what is still queued so that no buffer is freed under a copy. */
  private void drainAfterFailure() {
    try {
      stream.synchronize();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "fold-cp GPU backend: stream failed after an error: " + e.getMessage());
    }
  }

  // ------------------------------------------------------------------------------------------
  // Resident buffers and native layers

  private Resident resident(int b, int n, int d, boolean masked) {
    if (resident != null && resident.matches(b, n, d)) {
      if (masked && resident.mask == null) {
        resident.mask = DeviceBuffer.allocate(device, (long) b * n * n, "mask (B, N, N) uint8");
      }
      return resident;
    }
    if (resident != null) {
      stream.synchronize();
      Resident old = resident;
      resident = null;
      old.close();
    }
    long xBytes = (long) b * n * n * d * 2;
    long maskBytes = masked ? (long) b * n * n : 0;
    long wsBytes = NativeTriMul.workspaceSize(b, n, d);
    GpuDevice.MemInfo mem = device.memInfo();
    long budget = memoryBudget > 0 ? Math.min(memoryBudget, mem.free()) : mem.free();
    long group = d;
    if (xBytes + maskBytes + wsBytes > budget) {
      // The intermediates of all channels do not fit: stages 1 and 2 run in channel groups (the
      // workspace holds a and b for one group, z for all channels); same result, bit for bit.
      long left = budget - xBytes - maskBytes;
      try {
        group = NativeTriMul.channelGroup(b, n, d, Math.max(0, left));
      } catch (GpuException e) {
        throw new GpuException("(B, N, D) = (" + b + ", " + n + ", " + d + ") does not fit on device "
            + device.ordinal() + " (" + device.name() + "): pair tensor " + mib(xBytes) + ", mask " + mib(maskBytes)
            + ", and a workspace of at least " + mib(NativeTriMul.workspaceSizeGroup(b, n, d, 32))
            + " (channel groups of 32), with " + mib(budget) + " available (" + mib(mem.free()) + " free of "
            + mib(mem.total()) + (memoryBudget > 0 ? ", budget " + mib(memoryBudget) : "") + ")");
      }
      long full = wsBytes;
      wsBytes = NativeTriMul.workspaceSizeGroup(b, n, d, group);
      long g = group;
      long grouped = wsBytes;
      LOG.log(System.Logger.Level.INFO, () -> "(B, N, D) = (" + b + ", " + n + ", " + d + "): the whole workspace ("
          + mib(full) + ") does not fit in " + mib(budget) + " with the pair tensor; stages 1-2 run in channel groups of "
          + g + " (workspace " + mib(grouped) + ")");
    }
    Resident r = new Resident(b, n, d, group);
    try {
      r.x = DeviceBuffer.allocate(device, xBytes, "pair tensor (B, N, N, D) bf16 for (" + b + ", " + n + ", " + d + ")");
      r.ws = DeviceBuffer.allocate(device, wsBytes, "workspace for (B, N, D) = (" + b + ", " + n + ", " + d + ")");
      if (masked) {
        r.mask = DeviceBuffer.allocate(device, maskBytes, "mask (B, N, N) uint8");
      }
    } catch (RuntimeException e) {
      closeAll(e, r);
      throw e;
    }
    resident = r;
    residentAllocations++;
    return r;
  }

  /** Channels per group of stages 1-2 for the resident shape (its D: not grouped); 0 before the first forward. */
  public synchronized long channelGroup() {
    return resident == null ? 0 : resident.group;
  }

  private static String mib(long bytes) {
    return String.format(java.util.Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
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

  /** The device memory budget given at construction (0: whatever is free). */
  public long memoryBudget() {
    return memoryBudget;
  }

  // ------------------------------------------------------------------------------------------
  // Statistics

  /** Counters since construction (a snapshot). */
  public synchronized Stats stats() {
    return new Stats(forwards, layerRuns, profiledLayerRuns, uploads, downloads, bytesToDevice, bytesFromDevice,
        layers.created(), residentAllocations);
  }

  /** What the backend has done: calls, layer launches, transfers, allocations. */
  public static final class Stats {
    private final long forwards;
    private final long layerRuns;
    private final long profiledLayerRuns;
    private final long uploads;
    private final long downloads;
    private final long bytesToDevice;
    private final long bytesFromDevice;
    private final long layersCreated;
    private final long residentAllocations;

    Stats(long forwards, long layerRuns, long profiledLayerRuns, long uploads, long downloads, long bytesToDevice,
          long bytesFromDevice, long layersCreated, long residentAllocations) {
      this.forwards = forwards;
      this.layerRuns = layerRuns;
      this.profiledLayerRuns = profiledLayerRuns;
      this.uploads = uploads;
      this.downloads = downloads;
      this.bytesToDevice = bytesToDevice;
      this.bytesFromDevice = bytesFromDevice;
      this.layersCreated = layersCreated;
      this.residentAllocations = residentAllocations;
    }

    /** forward() calls that completed. */
    public long forwards() { return forwards; }

    /** Layer launches (a stack of 3 counts 3). */
    public long layerRuns() { return layerRuns; }

    /** Of those, launches through the profiled forward (stage times measured). */
    public long profiledLayerRuns() { return profiledLayerRuns; }

    /** Host-to-device transfers of a tensor's values or mask (each in several staged chunks). */
    public long uploads() { return uploads; }

    /** Device-to-host transfers of an output tensor. */
    public long downloads() { return downloads; }

    public long bytesToDevice() { return bytesToDevice; }

    public long bytesFromDevice() { return bytesFromDevice; }

    /** Native layers created (cache misses). */
    public long layersCreated() { return layersCreated; }

    /** Times the resident buffers (tensor, workspace) were allocated for a new (B, N, D). */
    public long residentAllocations() { return residentAllocations; }

    @Override
    public String toString() {
      return "Stats(forwards=" + forwards + ", layerRuns=" + layerRuns + ", profiledLayerRuns=" + profiledLayerRuns
          + ", uploads=" + uploads + ", downloads=" + downloads + ", bytesToDevice=" + bytesToDevice
          + ", bytesFromDevice=" + bytesFromDevice + ", layersCreated=" + layersCreated + ", residentAllocations="
          + residentAllocations + ")";
    }
  }

  // ------------------------------------------------------------------------------------------
  // Closing

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("GpuTriMul is closed");
    }
  }

  /**
   * Frees everything, in order: waits for the stream, destroys the native layers, frees the
   * resident buffers, the staging buffers and events, the stream, and releases the primary
   * context. Idempotent. Every step runs even if an earlier one fails; the first failure is
   * thrown at the end with the others suppressed.
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
    if (resident != null) {
      steps.add(resident);
    }
    resident = null;
    steps.add(staging);
    steps.add(stream);
    steps.add(device);
    RuntimeException first = closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (first != null) {
      throw first;
    }
  }

  static RuntimeException closeAll(RuntimeException pending, AutoCloseable... items) {
    return Closeables.closeAll(pending, items);
  }

  @Override
  public String toString() {
    return "GpuTriMul(" + (device == null ? "?" : device.toString()) + (closed ? ", closed" : "") + ")";
  }

  // ------------------------------------------------------------------------------------------
  // Owned pieces

  /** The device buffers of one (B, N, D). */
  private static final class Resident implements AutoCloseable {
    final int b;
    final int n;
    final int d;
    /** Channels per group of stages 1-2 (d: one group). */
    final long group;
    private boolean profileRefusalLogged;
    DeviceBuffer x;
    DeviceBuffer mask;
    DeviceBuffer ws;

    Resident(int b, int n, int d, long group) {
      this.b = b;
      this.n = n;
      this.d = d;
      this.group = group;
    }

    boolean matches(int b2, int n2, int d2) {
      return b == b2 && n == n2 && d == d2;
    }

    /**
     * Whether stage times can be measured for this shape: only ungrouped, since the native
     * profiled forward (foldcp_trimul_forward_profiled) has no channel-group variant and needs the
     * whole workspace. Says why not once per shape.
     */
    boolean profilable() {
      boolean whole = group == d;
      if (!whole && !profileRefusalLogged) {
        profileRefusalLogged = true;
        LOG.log(System.Logger.Level.INFO, () -> "(B, N, D) = (" + b + ", " + n + ", " + d + ") runs in channel groups"
            + " of " + group + ", and the native library has no profiled forward in channel groups: its forwards run"
            + " unprofiled and report no GPU stage times");
      }
      return whole;
    }

    @Override
    public void close() {
      RuntimeException e = closeAll(null, ws, mask, x);
      ws = null;
      mask = null;
      x = null;
      if (e != null) {
        throw e;
      }
    }
  }

  /**
   * Two pinned buffers used alternately, each with an event recorded after the copy that uses it:
   * before Java touches buffer k again it waits for event k, so that filling one buffer overlaps
   * the copy of the other.
   */
  private static final class Staging implements AutoCloseable {
    private final GpuDevice device;
    private final GpuEvent[] events = new GpuEvent[2];
    private final PinnedHostBuffer[] bufs = new PinnedHostBuffer[2];
    private long capacity;

    Staging(GpuDevice device) {
      this.device = device;
      try {
        for (int k = 0; k < 2; k++) {
          events[k] = GpuEvent.create(device, false, "staging event " + k);
        }
      } catch (RuntimeException e) {
        closeAll(e, this);
        throw e;
      }
    }

    /** Makes sure each buffer holds at least one row of {@code rowBytes}. */
    void ensure(long rowBytes) {
      if (bufs[0] != null && capacity >= rowBytes) {
        return;
      }
      awaitAll();
      closeAll(null, bufs[0], bufs[1]);
      bufs[0] = null;
      bufs[1] = null;
      long cap = Math.max(DEFAULT_STAGING_BYTES, rowBytes);
      capacity = 0;
      bufs[0] = PinnedHostBuffer.allocate(device, cap, "staging buffer 0");
      bufs[1] = PinnedHostBuffer.allocate(device, cap, "staging buffer 1");
      capacity = cap;
    }

    int rowsPerChunk(long rowBytes) {
      return (int) Math.max(1, Math.min(Integer.MAX_VALUE, capacity / rowBytes));
    }

    /** Buffer k, once the last copy that used it has finished. */
    PinnedHostBuffer acquire(int k) {
      events[k].synchronize();
      return bufs[k];
    }

    /** Marks buffer k as used by the copy just queued on {@code stream}. */
    void recordUse(int k, GpuStream stream) {
      events[k].record(stream);
    }

    private void awaitAll() {
      for (GpuEvent e : events) {
        if (e != null) {
          e.synchronize();
        }
      }
    }

    @Override
    public void close() {
      List<AutoCloseable> steps = new ArrayList<>();
      steps.add(() -> {
        device.setCurrent();
        awaitAll();
      });
      steps.add(bufs[0]);
      steps.add(bufs[1]);
      steps.add(events[0]);
      steps.add(events[1]);
      bufs[0] = null;
      bufs[1] = null;
      RuntimeException e = closeAll(null, steps.toArray(new AutoCloseable[0]));
      if (e != null) {
        throw e;
      }
    }
  }
}
