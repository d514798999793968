package org.foldcp.ops.gpu.feed;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.GpuEvent;
import org.foldcp.ops.gpu.GpuStream;

/**
 * Where a burst of the feed's work spent the GPU's time, from the CUDA events around each
 * complex's upload, kernels and download (GPU clock, not host guesses): the union of the kernels'
 * intervals, of the uploads', of the downloads', the time copies ran while no kernel did, and the
 * time nothing ran at all. A burst is the work between two moments when the feed holds no
 * complex; its summary is logged when it ends (one line per pass of a job).
 *
 * <p>Owned by its {@link StackFeed} (closed with it); thread-safe; holds at most
 * {@link #MAX_SPANS} spans (a longer burst is summarised in parts, all from the burst's one
 * origin: CUDA gives elapsed times as float milliseconds, so after about an hour without a pause
 * the times are good to a quarter of a millisecond only; a job's pass is far shorter).
 */
final class FeedTimeline implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(FeedTimeline.class.getName());
  static final int MAX_SPANS = 1 << 14;

  /**
   * One complex's intervals in milliseconds from the burst's origin, on the GPU's clock: upload
   * (from when its stream could take its first copy, after the whole-complex upload queued before
   * it ({@link CopyChain}), to its last copy done: time spent queued behind other uploads falls
   * before it), kernels (scan and layers), download (from when its copy could start, after its
   * kernels and the download queued before it, to its last byte; a download into a pinned span is
   * queued only once the host has seen its kernels end, so the lag before it includes the host's
   * wake-up). Where the bytes pass through
   * pinned blocks with host copies (a complex not in the pinned cache, an output not drained into
   * a pinned span) the upload and download windows include those host copies; from the pinned
   * cache into a pinned span (the job's cached rows) they are the DMA alone.
   */
  record Span(double upStart, double upEnd, double kernelsStart, double kernelsEnd, double downStart,
              double downEnd) {}

  private final GpuDevice device;
  /** Recorded on the feed's compute stream when a burst starts: the zero of its times. */
  private final GpuEvent origin;
  private final List<Span> spans = new ArrayList<>(); // guarded by this
  private int inFlight; // complexes between the feed's start and settle; guarded by this
  private volatile Summary lastBurst;

  FeedTimeline(GpuDevice device) {
    this.device = device;
    this.origin = GpuEvent.create(device, true, "feed timeline origin");
  }

  /**
   * A complex enters the feed (before its first upload is queued); the first of a burst records
   * the zero on {@code compute}, idle between bursts (every complex before was settled).
   */
  synchronized void begin(GpuStream compute) {
    if (inFlight == 0) {
      device.makeCurrent(); // the caller's thread may not have touched the device yet
      origin.record(compute);
    }
    inFlight++; // only once the origin is recorded: a failed begin leaves nothing to end
  }

  /**
   * Adds the complex in {@code slot}, drained (every event of it has run), to the burst. The
   * origin is not recorded again while the complex is in flight, so its times are read outside
   * the lock.
   */
  void record(DeviceSlot slot) {
    Span s = slot.span(origin);
    synchronized (this) {
      spans.add(s);
      if (spans.size() >= MAX_SPANS) {
        summarize();
      }
    }
  }

  /** A complex leaves the feed (drained, abandoned or failed); the last of a burst has it summarised. */
  synchronized void end() {
    if (--inFlight == 0) {
      summarize();
    }
  }

  /** The summary of the last burst that ended (null before the first). */
  Summary lastBurst() {
    return lastBurst;
  }

  private void summarize() {
    if (spans.isEmpty()) {
      return;
    }
    Summary s = summarize(spans);
    spans.clear();
    lastBurst = s;
    // a pass of a job is one burst; a trickle of single complexes stays out of the executor's log
    LOG.log(s.complexes() >= 8 ? System.Logger.Level.INFO : System.Logger.Level.DEBUG,
        () -> "fold-cp GPU feed on device " + device.ordinal() + ", timeline of a burst: " + s.describe());
  }

  @Override
  public void close() {
    origin.close();
  }

  /**
   * What a burst's spans add up to. Times in milliseconds over {@code wallMs} (first upload queued
   * to last download done): {@code kernelsMs}, {@code uploadsMs}, {@code downloadsMs} are the
   * unions of each kind's intervals; {@code copiesAloneMs} the time some copy ran while no kernel
   * did; {@code idleMs} the time nothing ran. The means are per complex: its upload, the wait from
   * its upload's end to its kernels' start, its kernels, the wait from its kernels' end to its
   * download's start, its download.
   */
  record Summary(int complexes, double wallMs, double kernelsMs, double uploadsMs, double downloadsMs,
                 double copiesAloneMs, double idleMs, double meanUploadMs, double meanQueueMs, double meanKernelsMs,
                 double meanDrainLagMs, double meanDownloadMs) {

    String describe() {
      return String.format(Locale.ROOT, "%d complexes over %.1f ms of GPU time: kernels busy %.0f%%, uploads %.0f%%,"
              + " downloads %.0f%%, copies with no kernel running %.0f%%, nothing running %.0f%%; per complex: upload"
              + " %.2f ms, then %.2f ms until its kernels, kernels %.2f ms, then %.2f ms until its download, download"
              + " %.2f ms", complexes, wallMs, pct(kernelsMs), pct(uploadsMs), pct(downloadsMs), pct(copiesAloneMs),
          pct(idleMs), meanUploadMs, meanQueueMs, meanKernelsMs, meanDrainLagMs, meanDownloadMs);
    }

    private double pct(double ms) {
      return wallMs > 0 ? 100 * ms / wallMs : 0;
    }
  }

  private static final int UP = 0;
  private static final int KERNELS = 1;
  private static final int DOWN = 2;

  /** The summary of {@code spans} (non-empty). */
  static Summary summarize(List<Span> spans) {
    if (spans.isEmpty()) {
      throw new IllegalArgumentException("no spans to summarise");
    }
    // a sweep over every interval boundary: at each point the number of intervals of each kind
    // that are open, and the time to the next point credited to the kinds open over it
    int m = spans.size() * 6;
    double[] at = new double[m];
    int[] kind = new int[m];
    int[] delta = new int[m];
    int k = 0;
    double upSum = 0;
    double queueSum = 0;
    double kernelsSum = 0;
    double lagSum = 0;
    double downSum = 0;
    for (Span s : spans) {
      k = edge(at, kind, delta, k, UP, s.upStart(), s.upEnd());
      k = edge(at, kind, delta, k, KERNELS, s.kernelsStart(), s.kernelsEnd());
      k = edge(at, kind, delta, k, DOWN, s.downStart(), s.downEnd());
      upSum += s.upEnd() - s.upStart();
      queueSum += s.kernelsStart() - s.upEnd();
      kernelsSum += s.kernelsEnd() - s.kernelsStart();
      lagSum += s.downStart() - s.kernelsEnd();
      downSum += s.downEnd() - s.downStart();
    }
    Integer[] order = new Integer[m];
    for (int i = 0; i < m; i++) {
      order[i] = i;
    }
    // at equal times, ends before starts: touching intervals do not count as overlapping
    Arrays.sort(order, (a, b) -> at[a] != at[b] ? Double.compare(at[a], at[b]) : Integer.compare(delta[a], delta[b]));
    int[] open = new int[3];
    double[] busy = new double[3];
    double copiesAlone = 0;
    double idle = 0;
    for (int i = 0; i < m; i++) {
      int e = order[i];
      open[kind[e]] += delta[e];
      if (i + 1 < m) {
        double dt = at[order[i + 1]] - at[e];
        for (int c = 0; c < 3; c++) {
          if (open[c] > 0) {
            busy[c] += dt;
          }
        }
        boolean copies = open[UP] > 0 || open[DOWN] > 0;
        if (copies && open[KERNELS] == 0) {
          copiesAlone += dt;
        } else if (!copies && open[KERNELS] == 0) {
          idle += dt;
        }
      }
    }
    double wall = at[order[m - 1]] - at[order[0]];
    int n = spans.size();
    return new Summary(n, wall, busy[KERNELS], busy[UP], busy[DOWN], copiesAlone, idle, upSum / n, queueSum / n,
        kernelsSum / n, lagSum / n, downSum / n);
  }

  private static int edge(double[] at, int[] kind, int[] delta, int k, int what, double start, double end) {
    at[k] = start;
    kind[k] = what;
    delta[k] = 1;
    at[k + 1] = Math.max(start, end);
    kind[k + 1] = what;
    delta[k + 1] = -1;
    return k + 2;
  }
}
