package org.foldcp.examples;

import java.io.Console;
import java.io.PrintWriter;
import java.util.Locale;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkStageInfo;
import org.apache.spark.sql.SparkSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Progress of {@link TriMulJob}, step by step (prepare, inputs, each layer, checksum, plots):
 * <ul>
 *   <li>in the logs: one INFO line when a step starts and one when it ends, with its time;</li>
 *   <li>in the Spark UI: the job group {@value #GROUP} with the job's summary, and each step's
 *       Spark jobs (and SQL queries) described as {@code fold-cp [k/T] step: detail};</li>
 *   <li>on a terminal ({@code System.console() != null}): a progress bar redrawn in place a few
 *       times a second, with the steps done and the running stage's tasks; elsewhere (CI, a
 *       file, a pipe) only the plain log lines.</li>
 * </ul>
 */
final class JobProgress implements AutoCloseable {
  static final String GROUP = "fold-cp-trimul";
  private static final Logger LOG = LoggerFactory.getLogger(JobProgress.class);
  private static final int BAR = 28;

  private final SparkContext sc;
  private final int total;
  private final PrintWriter terminal; // null: no progress bar
  private final long started = System.nanoTime();
  private final Thread ticker;
  private int done;
  private volatile String step = "starting";
  private volatile int stepIndex;
  private long stepStarted = System.nanoTime();
  private int drawnWidth;
  private boolean stopped;

  private JobProgress(SparkContext sc, int total, PrintWriter terminal) {
    this.sc = sc;
    this.total = total;
    this.terminal = terminal;
    if (terminal != null) {
      ticker = new Thread(this::tick, "fold-cp-progress-bar");
      ticker.setDaemon(true);
      ticker.start();
    } else {
      ticker = null;
    }
  }

  /** Starts reporting a job of {@code totalSteps} steps; the bar only where there is a console. */
  static JobProgress start(SparkSession spark, String summary, int totalSteps) {
    Console console = System.console();
    return start(spark, summary, totalSteps, console == null ? null : console.writer());
  }

  static JobProgress start(SparkSession spark, String summary, int totalSteps, PrintWriter terminal) {
    SparkContext sc = spark.sparkContext();
    sc.setJobGroup(GROUP, "fold-cp TriMul job: " + summary, false);
    LOG.info("fold-cp job: {} ({} steps)", summary, totalSteps);
    return new JobProgress(sc, totalSteps, terminal);
  }

  /** Step {@code k = steps done + 1} starts: logged, shown in the Spark UI and on the bar. */
  synchronized void begin(String name, String detail) {
    stepIndex = done + 1;
    step = name;
    stepStarted = System.nanoTime();
    String label = "fold-cp [" + stepIndex + "/" + total + "] " + name + (detail == null || detail.isEmpty() ? "" : ": " + detail);
    sc.setJobDescription(label);
    log(label + " ...");
  }

  /** The running step ends; returns its time in ms. */
  synchronized double end() {
    double ms = (System.nanoTime() - stepStarted) / 1e6;
    done++;
    log(String.format(Locale.ROOT, "fold-cp [%d/%d] %s done in %.0f ms", stepIndex, total, step, ms));
    return ms;
  }

  /** Stops and clears the bar (before the job prints its report); the log lines go on. */
  synchronized void finish() {
    if (ticker != null && !stopped) {
      stopped = true;
      ticker.interrupt();
      clearBar();
      terminal.flush();
    }
  }

  @Override
  public synchronized void close() {
    finish();
    sc.setJobDescription(null);
    sc.clearJobGroup();
    LOG.info(String.format(Locale.ROOT, "fold-cp job: %d/%d steps in %.1f s", done, total,
        (System.nanoTime() - started) / 1e9));
  }

  private void log(String line) {
    if (terminal != null) {
      clearBar();
      terminal.flush();
    }
    LOG.info(line);
    if (terminal != null && !stopped) {
      draw();
    }
  }

  private void tick() {
    try {
      while (!Thread.currentThread().isInterrupted()) {
        Thread.sleep(250);
        synchronized (this) {
          if (!stopped) {
            draw();
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void draw() {
    int[] tasks = runningTasks();
    String s = bar(done, total, stepIndex == 0 ? "" : "[" + stepIndex + "/" + total + "] " + step,
        tasks[0], tasks[1], (System.nanoTime() - started) / 1e9);
    terminal.print("\r" + s + (s.length() < drawnWidth ? " ".repeat(drawnWidth - s.length()) : ""));
    terminal.flush();
    drawnWidth = s.length();
  }

  private void clearBar() {
    if (drawnWidth > 0) {
      terminal.print("\r" + " ".repeat(drawnWidth) + "\r");
      drawnWidth = 0;
    }
  }

  /** Completed and total tasks of the stages running now, summed. */
  private int[] runningTasks() {
    int completed = 0;
    int all = 0;
    try {
      for (int id : sc.statusTracker().getActiveStageIds()) {
        scala.Option<SparkStageInfo> info = sc.statusTracker().getStageInfo(id);
        if (info.isDefined()) {
          completed += info.get().numCompletedTasks();
          all += info.get().numTasks();
        }
      }
    } catch (RuntimeException e) {
      // the context is stopping: no stage to show
    }
    return new int[] {completed, all};
  }

  /**
   * The bar: {@code fold-cp [#########>.........] 3/6 [4/6] layer 2/3 incoming | tasks 1/2 | 12.3 s};
   * the running step counts for the fraction of its stages' tasks that are done.
   */
  static String bar(int stepsDone, int steps, String running, int tasksDone, int tasks, double seconds) {
    double frac = steps <= 0 ? 0 : (stepsDone + (tasks > 0 ? (double) tasksDone / tasks : 0)) / steps;
    frac = Math.max(0, Math.min(1, frac));
    int fill = (int) Math.floor(frac * BAR);
    StringBuilder sb = new StringBuilder("fold-cp [");
    for (int q = 0; q < BAR; q++) {
      sb.append(q < fill ? '#' : q == fill && stepsDone < steps ? '>' : '.');
    }
    sb.append("] ").append(stepsDone).append('/').append(steps);
    if (!running.isEmpty() && stepsDone < steps) {
      sb.append(' ').append(running);
    }
    if (tasks > 0) {
      sb.append(" | tasks ").append(tasksDone).append('/').append(tasks);
    }
    sb.append(String.format(Locale.ROOT, " | %.1f s", seconds));
    return sb.toString();
  }
}
