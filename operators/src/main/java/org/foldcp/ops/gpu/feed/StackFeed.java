package org.foldcp.ops.gpu.feed;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.DeviceBuffer;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuStream;
import org.foldcp.ops.gpu.LayerCache;
import org.foldcp.ops.gpu.NativeTriMul;
import org.foldcp.ops.gpu.PinnedHostBuffer;
import org.foldcp.ops.gpu.PinnedPool;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * Whole complexes through a layer stack on one GPU with the host side doing bulk copies only, and
 * the copies of one complex overlapping the kernels of another: the executor's data path to its
 * GPU (one per executor and device, shared by its tasks).
 *
 * <p>A complex goes {@link #submit submitted} (its bytes copied block by block into the pinned
 * pool by the feed's copy threads, in submission order, each block uploaded to a device slot as
 * soon as it is full), then
 * computed (the non-finite scan and every layer, in place, on the one compute stream, after the
 * slot's upload), then {@link FeedTicket#drain drained} (downloaded block by block on the slot's
 * stream, each block handed to the caller as soon as it has arrived). A caller that submits the
 * next complex before draining the last one, or several callers at once, keep the upload, the
 * kernels and the download busy at the same time.
 *
 * <p>Bounded: pinned memory is the pool's (fixed), device memory the slots' (each grown to the
 * largest complex it held) plus one workspace (grown to the largest shape). A complex whose slots
 * and workspace would not fit in device memory is not taken ({@link #fits}): the caller runs it
 * through {@link org.foldcp.ops.gpu.GpuTriMul}, which can split it into channel groups.
 *
 * <p>Deadlock-free by construction: {@link #trySubmit} never waits for a slot, and a drain that
 * holds a block only ever tries for more, so a thread that holds pool or slot resources always
 * makes progress with what it holds.
 */
public final class StackFeed implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(StackFeed.class.getName());
  private static final long WAIT_CHECK_MILLIS = 200;

  private final GpuDevice device;
  private final LayerCache layers;
  private final long memoryBudget;
  private final PinnedTransfers transfers; // the executor's, borrowed
  private final PinnedCache cache;
  private final GpuStream compute;
  private final List<DeviceSlot> slots = new ArrayList<>();
  private final ArrayBlockingQueue<DeviceSlot> freeSlots;
  private final Object computeLock = new Object();
  private DeviceBuffer workspace; // guarded by computeLock
  private volatile boolean closed;
  private final FeedTimeline timeline;
  private final CopyChain uploads;
  private final CopyChain downloads;

  private final AtomicLong complexes = new AtomicLong();
  private final AtomicLong bytesIn = new AtomicLong();
  private final AtomicLong bytesInPlace = new AtomicLong();
  private final AtomicLong bytesOut = new AtomicLong();
  private final AtomicLong gpuNanos = new AtomicLong();
  private final AtomicLong waitNanos = new AtomicLong();
  private final AtomicLong copyNanos = new AtomicLong();

  /**
   * Opens the feed on {@code device}: the compute stream and the slots' streams and events (the
   * slots' tensors come with the first complexes). Host bytes move through {@code transfers}, the
   * executor's pinned pool and copy threads, which the feed borrows and does not close.
   *
   * @param layers the device's native layers, shared with its backend
   * @param memoryBudget device bytes the feed may hold (0: whatever is free)
   */
  public StackFeed(GpuDevice device, LayerCache layers, PinnedTransfers transfers, FeedSettings settings,
                   long memoryBudget) {
    this.device = Objects.requireNonNull(device, "device");
    this.layers = Objects.requireNonNull(layers, "layers");
    this.transfers = Objects.requireNonNull(transfers, "transfers");
    this.memoryBudget = memoryBudget;
    this.freeSlots = new ArrayBlockingQueue<>(settings.slots(), true);
    this.uploads = new CopyChain();
    this.downloads = new CopyChain();
    GpuStream s = null;
    FeedTimeline tl = null;
    try {
      s = GpuStream.create(device);
      tl = new FeedTimeline(device);
      for (int k = 0; k < settings.slots(); k++) {
        DeviceSlot slot = new DeviceSlot(device, k);
        slots.add(slot);
        freeSlots.add(slot);
      }
    } catch (RuntimeException e) {
      List<AutoCloseable> undo = new ArrayList<>(slots);
      undo.add(tl);
      undo.add(s);
      Closeables.closeAll(e, undo.toArray(new AutoCloseable[0]));
      throw e;
    }
    this.compute = s;
    this.timeline = tl;
    this.cache = new PinnedCache((bytes, purpose) -> {
      PinnedHostBuffer b = PinnedHostBuffer.allocate(device, bytes, PinnedCache.SPAN + ": " + purpose);
      return new PinnedCache.Allocation(b.address(), b);
    }, settings.cacheBytes(), "GPU " + device.ordinal());
    PinnedPool pool = transfers.pool();
    LOG.log(System.Logger.Level.INFO, () -> "fold-cp GPU feed on device " + device.ordinal() + ": pinned pool "
        + mib(pool.totalBytes()) + " (" + pool.blocks() + " blocks of " + mib(pool.blockBytes()) + "), "
        + settings.slots() + " device slots, " + transfers.copyThreads() + " copy threads, one compute stream and an"
        + " upload and a download stream per slot, whole-complex copies queued one at a time per direction; cached"
        + " rows in pinned memory up to " + mib(cache.capacity()) + " (uploaded where they lie, no host copy)");
  }

  // ------------------------------------------------------------------------------------------
  // Submitting

  /**
   * Whether a complex of (B, N, D) goes through the feed under layers of hidden width H: its slots
   * (each may grow to it) and its workspace (a, b and z of H channels) fit in device memory beside
   * what the feed holds already.
   */
  public boolean fits(int batch, int n, int dim, int hidden) {
    long x = 2L * batch * n * n * dim;
    long mask = (long) batch * n * n;
    long need = slots.size() * (x + mask) + NativeTriMul.workspaceSize(batch, n, hidden);
    long held = heldDeviceBytes();
    long free = device.memInfo().free() + held;
    long budget = memoryBudget > 0 ? Math.min(memoryBudget, free) : free;
    return need <= budget;
  }

  private long heldDeviceBytes() {
    long held = 0;
    for (DeviceSlot s : slots) {
      held += s.deviceBytes();
    }
    synchronized (computeLock) {
      held += workspace == null ? 0 : workspace.bytes();
    }
    return held;
  }

  /**
   * Uploads {@code in} and queues the stack on it, waiting for a free device slot if need be.
   * Returns once every byte of {@code in} is in pinned memory or on the device (the source may be
   * reused then); the kernels and the download come later ({@link FeedTicket#drain}).
   *
   * @param what names the complex in errors (e.g. "complex 'c7'")
   * @throws InvalidInputException when a layer's D differs from the complex's or the shape is not supported
   */
  public FeedTicket submit(ComplexIn in, List<TriMulLayer> stack, boolean allowNonFinite, String what) {
    check(in, stack);
    long t0 = System.nanoTime();
    DeviceSlot slot = acquireSlot();
    return start(slot, in, stack, allowNonFinite, what, System.nanoTime() - t0);
  }

  /** As {@link #submit}, but returns null at once, reading nothing, when no slot is free. */
  public FeedTicket trySubmit(ComplexIn in, List<TriMulLayer> stack, boolean allowNonFinite, String what) {
    check(in, stack);
    DeviceSlot slot = freeSlots.poll();
    return slot == null ? null : start(slot, in, stack, allowNonFinite, what, 0);
  }

  private static void check(ComplexIn in, List<TriMulLayer> stack) {
    InvalidInputException.require(!stack.isEmpty(), "layer stack", "empty", "must hold at least one layer");
    for (TriMulLayer l : stack) {
      InvalidInputException.require(l.dim() == in.dim(), "layer D", l.dim(),
          "must equal the pair tensor's D = " + in.dim());
      NativeTriMul.requireKernelsFor(l);
    }
    NativeTriMul.checkShape(in.batch(), in.n(), in.dim());
  }

  private DeviceSlot acquireSlot() {
    try {
      DeviceSlot s;
      while ((s = freeSlots.poll(WAIT_CHECK_MILLIS, TimeUnit.MILLISECONDS)) == null) {
        requireOpen();
      }
      return s;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for a device slot of the GPU feed", e);
    }
  }

  /** {@code waited}: nanoseconds the caller already waited for the slot. */
  private FeedTicket start(DeviceSlot slot, ComplexIn in, List<TriMulLayer> stack, boolean allowNonFinite, String what,
                           long waited) {
    boolean queued = false;
    boolean begun = false;
    try {
      requireOpen();
      timeline.begin(compute);
      begun = true; // from here settle, in every case below, ends it in the timeline
      device.makeCurrent();
      long xBytes = in.pairBytes();
      long maskBytes = in.hasMask() ? in.maskBytes() : 0;
      slot.ensure(xBytes, maskBytes);
      PinnedCache.Span cached = cache.find(in.pairAddress(), xBytes);
      PinnedTransfers.Copied copied;
      if (cached != null) {
        // the values lie in the pinned cache: the DMA engine reads them there, nothing is copied on the host
        slot.holdSource(cached);
        uploads.queue(slot.up, slot.upStart, slot.uploaded,
            () -> slot.x().copyFromPinnedAsync(0, in.pairAddress(), xBytes, slot.up));
        bytesInPlace.addAndGet(xBytes);
        copied = PinnedTransfers.Copied.NONE;
      } else {
        // block by block as the copy threads fill them: not chained (the host copies set the pace)
        slot.upStart.record(slot.up);
        copied = transfers.upload(in::copyPair, xBytes, slot.x(), slot.up);
      }
      if (maskBytes > 0) {
        copied = copied.plus(transfers.upload(in::copyMask, maskBytes, slot.mask(), slot.up));
      }
      waited += copied.waitNanos();
      slot.uploaded.record(slot.up);
      enqueueStack(slot, in, stack, allowNonFinite, maskBytes > 0);
      queued = true;
      bytesIn.addAndGet(xBytes + maskBytes);
      copyNanos.addAndGet(copied.copyNanos());
      return new FeedTicket(this, slot, in.n(), in.dim(), xBytes, allowNonFinite, what, waited, copied.copyNanos(),
          cached != null);
    } finally {
      if (!queued && begun) {
        settle(slot);
      } else if (!queued) {
        freeSlots.add(slot); // nothing was queued on its streams (a closed feed's are gone)
      }
    }
  }

  /** The scan and the layers on the compute stream, after the slot's upload. */
  private void enqueueStack(DeviceSlot slot, ComplexIn in, List<TriMulLayer> stack, boolean allowNonFinite,
                            boolean masked) {
    int b = in.batch();
    int n = in.n();
    int d = in.dim();
    int h = stack.get(0).hidden(); // the layers of a stack share H: the workspace's channels
    long x = slot.x().address();
    long mask = masked ? slot.mask().address() : 0L;
    // pinned while their kernels are queued, as every user of the cache does; an eviction after
    // the release waits for the device first, so the kernels still read live layers
    long[] handles = layers.acquire(stack);
    try {
      synchronized (computeLock) {
        DeviceBuffer ws = workspace(b, n, h);
        slot.uploaded.makeWait(compute);
        slot.computeStart.record(compute);
        if (!allowNonFinite) {
          NativeTriMul.nonFiniteScan(x, (long) b * n * n * d, slot.result.address(), compute.handle());
        }
        for (long layer : handles) {
          NativeTriMul.forward(layer, x, mask, x, b, n, ws.address(), ws.bytes(), h, compute.handle(), null);
        }
        slot.computed.record(compute);
      }
    } finally {
      layers.release(stack);
    }
  }

  /** The workspace for (B, N, H), grown when a shape needs more (after the kernels that use it). */
  private DeviceBuffer workspace(int b, int n, int h) {
    long need = NativeTriMul.workspaceSize(b, n, h);
    if (workspace == null || workspace.bytes() < need) {
      compute.synchronize();
      DeviceBuffer old = workspace;
      workspace = null;
      Closeables.closeAll(null, old);
      workspace = DeviceBuffer.allocate(device, need, "feed workspace for (B, N, H) = (" + b + ", " + n + ", " + h
          + ")");
    }
    return workspace;
  }

  // ------------------------------------------------------------------------------------------
  // Draining

  /** Counts a drained complex (called by its ticket). */
  void drained(long gpu, long waited, long bytes) {
    gpuNanos.addAndGet(gpu);
    waitNanos.addAndGet(waited);
    bytesOut.addAndGet(bytes);
    complexes.incrementAndGet();
  }

  GpuDevice device() {
    return device;
  }

  /** The order of whole-complex downloads into pinned spans. */
  CopyChain downloads() {
    return downloads;
  }

  /**
   * Returns a slot to the free list once everything queued on its streams has run; its complex
   * leaves the timeline.
   */
  void settle(DeviceSlot slot) {
    try {
      slot.up.synchronize();
      slot.down.synchronize();
      slot.computed.synchronize();
      slot.holdSource(null); // its upload has run
    } finally {
      freeSlots.add(slot);
      timeline.end();
    }
  }

  /**
   * Adds the drained complex in {@code slot} (every event of it has run) to the burst's timeline.
   * Diagnostics only: a failure here is logged and never fails the drain, whose output is out.
   */
  void recordSpan(DeviceSlot slot) {
    try {
      timeline.record(slot);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, () -> "fold-cp GPU feed: the timeline lost a complex: " + e);
    }
  }

  /** The timeline summary of the last burst that ended (null before the first). */
  FeedTimeline.Summary lastBurst() {
    return timeline.lastBurst();
  }

  // ------------------------------------------------------------------------------------------
  // Counters and closing

  /**
   * What the feed has done since it opened (a snapshot). {@code bytesInPlace}: the part of
   * {@code bytesIn} uploaded straight from the pinned cache; {@code pinnedBytes}: the pool's,
   * {@code cachedBytes}: the cache's now.
   */
  public record Stats(long complexes, long bytesIn, long bytesInPlace, long bytesOut, long gpuNanos, long waitNanos,
                      long copyNanos, long pinnedBytes, long cachedBytes, long deviceBytes) {}

  public Stats stats() {
    return new Stats(complexes.get(), bytesIn.get(), bytesInPlace.get(), bytesOut.get(), gpuNanos.get(),
        waitNanos.get(), copyNanos.get(), transfers.pool().totalBytes(), cache.heldBytes(), heldDeviceBytes());
  }

  /** The pinned memory that cached rows may live in (bounded; spans made as rows are cached). */
  public PinnedCache cache() {
    return cache;
  }

  /** The executor's host <-> device path the feed moves its bytes through. */
  public PinnedTransfers transfers() {
    return transfers;
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("the GPU feed of device " + device.ordinal() + " is closed: its executor shut"
          + " down");
    }
  }

  /**
   * Waits for everything queued, then frees the slots, the workspace, the compute stream and the
   * pinned cache, in that order (the transfers are the executor's, closed after the feed). Callers have drained or abandoned their tickets. Idempotent.
   */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    List<AutoCloseable> steps = new ArrayList<>();
    steps.add(compute::synchronize);
    steps.addAll(slots);
    steps.add(timeline);
    synchronized (computeLock) {
      steps.add(workspace);
      workspace = null;
    }
    steps.add(compute);
    steps.add(cache); // cached rows die with the executor's GPU (their memory is its context's)
    RuntimeException e = Closeables.closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (e != null) {
      throw e;
    }
  }

  private static String mib(long bytes) {
    return String.format(java.util.Locale.ROOT, "%.0f MiB", bytes / 1048576.0);
  }
}
