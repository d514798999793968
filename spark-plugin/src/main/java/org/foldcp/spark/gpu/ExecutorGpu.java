package org.foldcp.spark.gpu;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.Closeables;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuTriMul;
import org.foldcp.ops.gpu.LayerCache;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.gpu.feed.FeedSettings;
import org.foldcp.ops.gpu.feed.PinnedCache;
import org.foldcp.ops.gpu.feed.StackFeed;
import org.foldcp.spark.config.FoldCpConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The GPU of one executor process on one device: a single backend ({@link GpuTriMul}: the
 * context retain, stream and the layer cache keyed by weights digest) over the executor's host
 * transfers (the pinned pool and copy threads every path to the device shares), opened at
 * the first borrow and kept until the executor shuts down, lent to its tasks a bounded number at
 * a time, as spark-rapids' GpuSemaphore lends an executor's GPU.
 *
 * <p>Why per executor: opened per task, every task paid a context retain, a stream, pinned
 * allocations and the upload of every layer again. Why a semaphore when GpuTriMul's methods are
 * synchronized anyway: the lock keeps forwards correct, but every task queued on it holds its
 * decoded input in host memory; the permits ({@link FoldCpConf#GPU_CONCURRENT_TASKS}) bound
 * how many tasks do, and the rest wait holding nothing. The semaphore is fair, so tasks get the
 * GPU in the order they asked.
 *
 * <p>A permit belongs to a task attempt, not to a view: a task that borrows again (a SQL
 * function feeding the cp = 1 route in one task) shares its permit instead of waiting for
 * itself, and the permit goes back when the task's last view closes or when the task ends.
 */
public final class ExecutorGpu implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorGpu.class);
  /** How often a task waiting for a permit checks whether it was killed or the GPU closed. */
  private static final long WAIT_CHECK_MILLIS = 500;

  private final int deviceOrdinal;
  private final int permits;
  private final IntFunction<TriMulBackend> factory; // null: GpuTriMul over transfers()
  private final FeedSettings feedSettings;
  private final Semaphore semaphore;
  private final Map<Long, TaskLease> leases = new HashMap<>(); // by task attempt; guarded by itself
  private final Object lock = new Object();
  private TriMulBackend backend; // opened at the first borrow; guarded by lock
  private StackFeed feed; // opened at the first feed(); guarded by lock
  private GpuDevice transferDevice; // the context retain the transfers' pinned memory lives in; guarded by lock
  private PinnedTransfers transfers; // opened at the first transfers(); guarded by lock
  private GpuDevice cpLayersDevice; // the context retain of cpLayers; guarded by lock
  private LayerCache cpLayers; // the CP ranks' layers beside a backend that is not ours (a test's fake), else null; guarded by lock
  private volatile boolean closed; // written under lock

  /** The GPU backend on {@code deviceOrdinal}, lent to {@code permits} tasks at a time. */
  public ExecutorGpu(int deviceOrdinal, int permits) {
    this(deviceOrdinal, permits, FeedSettings.DEFAULT, null);
  }

  /** With the backend made by {@code factory} from the device ordinal: tests pass a fake one (null: ours). */
  ExecutorGpu(int deviceOrdinal, int permits, IntFunction<TriMulBackend> factory) {
    this(deviceOrdinal, permits, FeedSettings.DEFAULT, factory);
  }

  /**
   * With the sizes of the GPU feed (pinned pool, device slots) that the executor opens for its
   * tasks; a null {@code factory} opens our {@link GpuTriMul} over the executor's host transfers.
   */
  ExecutorGpu(int deviceOrdinal, int permits, FeedSettings feedSettings, IntFunction<TriMulBackend> factory) {
    InvalidInputException.require(deviceOrdinal >= 0, "GPU device ordinal", deviceOrdinal,
        "must be a CUDA device ordinal >= 0");
    InvalidInputException.require(permits >= 1, FoldCpConf.GPU_CONCURRENT_TASKS.name(), permits,
        "must be an integer >= 1");
    this.deviceOrdinal = deviceOrdinal;
    this.permits = permits;
    this.factory = factory;
    this.feedSettings = Objects.requireNonNull(feedSettings, "feedSettings");
    this.semaphore = new Semaphore(permits, true);
  }

  public int deviceOrdinal() {
    return deviceOrdinal;
  }

  /** How many tasks may hold the GPU at once. */
  public int permits() {
    return permits;
  }

  /**
   * The GPU for the running task (or, outside tasks, for the caller, who must close the view):
   * waits for a permit unless the task holds one already, opens the backend on the first borrow,
   * and gives the permit back when the task ends even if the view is never closed.
   *
   * @throws IllegalStateException when the executor has closed its GPU
   */
  public BorrowedGpu borrow() {
    return borrow(Borrower.current());
  }

  BorrowedGpu borrow(Borrower who) {
    requireOpen();
    TaskLease lease = joinLease(who.attemptId());
    long waited = 0;
    if (lease == null) {
      long t0 = System.nanoTime();
      acquire(who);
      waited = System.nanoTime() - t0;
      lease = newLease(who);
    }
    try {
      return new BorrowedGpu(this, backend(), lease, waited);
    } catch (RuntimeException | Error e) {
      lease.leave();
      throw e;
    }
  }

  /** The lease this task attempt already holds, joined, or null. */
  private TaskLease joinLease(long attemptId) {
    if (attemptId == Borrower.NO_TASK) {
      return null;
    }
    synchronized (leases) {
      TaskLease held = leases.get(attemptId);
      return held != null && held.join() ? held : null;
    }
  }

  private void acquire(Borrower who) {
    try {
      while (!semaphore.tryAcquire(WAIT_CHECK_MILLIS, TimeUnit.MILLISECONDS)) {
        who.checkKilled(); // a task killed while queued leaves the queue instead of waiting for the GPU
        requireOpen();     // the executor shut down while the task waited
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      who.checkKilled();
      throw new IllegalStateException("interrupted while waiting for " + this, e);
    }
  }

  /** A lease on the permit just acquired, given back at the task's end at the latest. */
  private TaskLease newLease(Borrower who) {
    TaskLease lease = new TaskLease(who.attemptId(), this::giveBack);
    lease.join();
    if (who.attemptId() != Borrower.NO_TASK) {
      synchronized (leases) {
        leases.put(who.attemptId(), lease);
      }
    }
    try {
      who.atEnd(lease::end);
    } catch (RuntimeException | Error e) {
      lease.end();
      throw e;
    }
    return lease;
  }

  private void giveBack(TaskLease lease) {
    synchronized (leases) {
      leases.remove(lease.attemptId(), lease);
    }
    semaphore.release();
  }

  private TriMulBackend backend() {
    synchronized (lock) {
      requireOpen();
      if (backend == null) {
        backend = factory != null ? factory.apply(deviceOrdinal) : openGpuTriMul();
        LOG.info("fold-cp: this executor owns GPU {} ({}) until it shuts down, {} ({} = {})", deviceOrdinal, backend,
            lending(permits), FoldCpConf.GPU_CONCURRENT_TASKS.name(), permits);
      }
      return backend;
    }
  }

  /**
   * Our backend over the executor's host transfers; where the pinned pool cannot be had (a host
   * that cannot page-lock that much), over a small pool of the backend's own, saying so.
   */
  private GpuTriMul openGpuTriMul() {
    PinnedTransfers t;
    try {
      t = transfers();
    } catch (RuntimeException e) {
      LOG.warn("fold-cp: GPU {}: the executor's pinned pool ({} = {} bytes) could not be opened ({}); the GPU"
          + " backend moves its tensors through a small pool of its own", deviceOrdinal,
          FoldCpConf.GPU_PINNED_POOL_BYTES.name(), feedSettings.poolBytes(), e.getMessage());
      t = null;
    }
    return new GpuTriMul(deviceOrdinal, GpuTriMul.DEFAULT_LAYER_CACHE_ENTRIES, 0L, t);
  }

  /**
   * The executor's GPU feed ({@link StackFeed}: the pinned pool, the copy and compute streams and
   * the device slots through which tasks move whole complexes with bulk copies only), opened at
   * the first call on the executor's backend and its layers; empty when the backend is not our
   * GPU backend (a test's fake). Shared by every task that borrows the GPU.
   */
  Optional<StackFeed> feed() {
    synchronized (lock) {
      requireOpen();
      TriMulBackend b = backend();
      if (feed == null && b instanceof GpuTriMul g) {
        feed = new StackFeed(g.device(), g.layerCache(), transfers(), feedSettings, g.memoryBudget());
      }
      return Optional.ofNullable(feed);
    }
  }

  /**
   * The executor's one path between host memory and this GPU ({@link PinnedTransfers}: the pinned
   * pool of {@link FoldCpConf#GPU_PINNED_POOL_BYTES} and {@link FoldCpConf#GPU_COPY_THREADS} copy
   * threads), opened at the first call and kept until the executor shuts down: the cp = 1 feed
   * moves its complexes through it, the CP ranks their tiles. Opening it needs no backend and no
   * permit (it allocates pinned memory on the device's primary context and computes nothing).
   */
  public PinnedTransfers transfers() {
    synchronized (lock) {
      requireOpen();
      if (transfers == null) {
        GpuDevice d = GpuDevice.open(deviceOrdinal);
        try {
          transfers = feedSettings.openTransfers(d);
        } catch (RuntimeException e) {
          Closeables.closeAll(e, d);
          throw e;
        }
        transferDevice = d;
        LOG.info("fold-cp: GPU {} host transfers: pinned pool of {} blocks of {} MiB, {} copy threads", deviceOrdinal,
            feedSettings.blocks(), feedSettings.blockBytes() >> 20, feedSettings.copyThreads());
      }
      return transfers;
    }
  }

  /**
   * The native layers the NVSHMEM ranks' plans pin on this GPU: the backend's own
   * {@link GpuTriMul#layerCache()} (the CP library links against the single-GPU library and its
   * plans take that library's layers), so that a layer uploaded for cp = 1 serves CP and the
   * other way round, once per executor, and the ranks of later tasks and shapes reuse them. Opens
   * the backend if no task has yet (no permit: opening computes nothing). With a backend that is
   * not ours (a test's fake), a cache of its own on this GPU ({@link LayerCache#SINGLE_GPU}),
   * opened at the first call. Either is closed after every rank's stack ({@link #close}).
   */
  public LayerCache cpLayers() {
    synchronized (lock) {
      requireOpen();
      if (backend() instanceof GpuTriMul g) {
        return g.layerCache();
      }
      if (cpLayers == null) {
        GpuDevice d = GpuDevice.open(deviceOrdinal);
        cpLayers = new LayerCache(d, GpuTriMul.DEFAULT_LAYER_CACHE_ENTRIES, LayerCache.SINGLE_GPU);
        cpLayersDevice = d;
      }
      return cpLayers;
    }
  }

  /**
   * The pinned memory in which this executor's cached rows may live ({@link StackFeed#cache}):
   * opens the GPU (not a permit: caching computes nothing) at the first call; empty for a fake
   * backend.
   */
  public Optional<PinnedCache> pinnedCache() {
    return feed().map(StackFeed::cache);
  }

  void requireOpen() {
    if (closed) {
      throw new IllegalStateException("GPU " + deviceOrdinal + " of this executor is closed: the executor is"
          + " shutting down, and no task can borrow its GPU any more");
    }
  }

  /** Permits free now (for tests). */
  int availablePermits() {
    return semaphore.availablePermits();
  }

  /**
   * Closes the feed (its slots and streams), then the backend (GpuTriMul frees its layers, the
   * CP ranks' included, buffers, stream and context in that order, after any forward in flight),
   * then a fake backend's CP layers and their context retain, then the transfers (copy threads,
   * then the pinned pool) and theirs, once. Later borrows fail; a
   * second close does nothing.
   */
  @Override
  public void close() {
    List<AutoCloseable> steps = new ArrayList<>();
    TriMulBackend open;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      open = backend;
      // the feed first (it uses the backend's device and layers), then the backend, then the CP
      // layers, then the transfers the backend and the feed borrowed, each retain after its user
      steps.add(feed);
      steps.add(open);
      steps.add(cpLayers);
      steps.add(cpLayersDevice);
      steps.add(transfers);
      steps.add(transferDevice);
      backend = null;
      feed = null;
      cpLayers = null;
      cpLayersDevice = null;
      transfers = null;
      transferDevice = null;
    }
    if (open != null) {
      LOG.info("fold-cp: closing GPU {} of this executor ({}; {} of {} permits lent)", deviceOrdinal, open,
          permits - semaphore.availablePermits(), permits);
    }
    RuntimeException e = Closeables.closeAll(null, steps.toArray(new AutoCloseable[0]));
    if (e != null) {
      throw e;
    }
  }

  /** "lent to 2 tasks at a time": how logs name a permit count. */
  public static String lending(int permits) {
    return "lent to " + permits + (permits == 1 ? " task" : " tasks") + " at a time";
  }

  @Override
  public String toString() {
    return "GPU " + deviceOrdinal + " (" + lending(permits) + (closed ? ", closed" : "") + ")";
  }
}
