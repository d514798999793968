package org.foldcp.examples;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where the Spark task threads, and the GPU feed's copy threads, spend a job pass: a stack sample
 * of every such thread each {@code periodMillis} while {@link #resume resumed}, counted by thread state and by frame (a profile, not a guess, for the
 * benchmark's report). In-process and portable: the GPU machines have no perf, and JFR's sampler
 * depends on signals the sandboxes do not all deliver. Samples are taken at safepoints, so a frame
 * between two safepoint polls is credited to the next poll; the bulk copies poll every 4 MiB slice
 * ({@code HostCopy}), fine enough at these sizes.
 */
final class TaskSampler implements AutoCloseable {
  private static final String TASK_THREAD = "Executor task launch worker";
  /** The copy threads of the executor's host transfers (PinnedTransfers names them so). */
  private static final String COPY_THREAD = "fold-cp feed copy";

  private final Thread thread;
  private final Tally tasks = new Tally("the task threads");
  private final Tally copiers = new Tally("the feed's copy threads");
  private volatile boolean running = true;
  private volatile boolean active;

  /** Samples of one population of threads, by state, by top frame and by innermost fold-cp frame. */
  private static final class Tally {
    final String who;
    final Map<String, Integer> byState = new HashMap<>();
    final Map<String, Integer> byFrame = new HashMap<>();
    final Map<String, Integer> byOurs = new HashMap<>();
    int samples;

    Tally(String who) {
      this.who = who;
    }

    void add(Thread t, StackTraceElement[] st) {
      samples++;
      String state = t.getState().toString();
      byState.merge(state, 1, Integer::sum);
      byFrame.merge(state + " " + (st.length == 0 ? "(no frame)" : frame(st[0])), 1, Integer::sum);
      String ours = "(no org.foldcp frame)";
      for (StackTraceElement f : st) {
        if (f.getClassName().startsWith("org.foldcp.")) {
          ours = frame(f);
          break;
        }
      }
      byOurs.merge(state + " " + ours, 1, Integer::sum);
    }

    void lines(List<String> out, int top) {
      if (samples == 0) {
        out.add("profile: none of " + who + " sampled");
        return;
      }
      StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "profile: %d samples of %s:", samples, who));
      byState.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
          .forEach(e -> b.append(String.format(Locale.ROOT, " %s %.1f%%", e.getKey(), 100.0 * e.getValue() / samples)));
      out.add(b.toString());
      add(out, "by the sampled frame", byFrame, top);
      add(out, "by the innermost org.foldcp frame", byOurs, top);
    }

    private void add(List<String> out, String title, Map<String, Integer> counts, int top) {
      out.add("profile: top " + top + " " + title + " (% of the samples of " + who + "):");
      counts.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed()).limit(top)
          .forEach(e -> out.add(String.format(Locale.ROOT, "profile:   %5.1f%%  %s", 100.0 * e.getValue() / samples,
              e.getKey())));
    }
  }

  TaskSampler(long periodMillis) {
    thread = new Thread(() -> {
      while (running) {
        if (active) {
          sample();
        }
        try {
          Thread.sleep(periodMillis);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "fold-cp task sampler");
    thread.setDaemon(true);
    thread.start();
  }

  private void sample() {
    Map<Thread, StackTraceElement[]> all = Thread.getAllStackTraces();
    synchronized (this) {
      for (Map.Entry<Thread, StackTraceElement[]> e : all.entrySet()) {
        String name = e.getKey().getName();
        if (name.startsWith(TASK_THREAD)) {
          if (inTask(e.getValue())) { // else an idle thread of the executor's pool
            tasks.add(e.getKey(), e.getValue());
          }
        } else if (name.startsWith(COPY_THREAD)) {
          copiers.add(e.getKey(), e.getValue()); // idle ones too: parked in the pool's queue
        }
      }
    }
  }

  private static boolean inTask(StackTraceElement[] st) {
    for (int k = st.length - 1; k >= 0; k--) {
      if (st[k].getClassName().equals("org.apache.spark.scheduler.Task") && st[k].getMethodName().equals("run")) {
        return true;
      }
    }
    return false;
  }

  /** Samples from now on (between {@link #pause}s: the passes being profiled). */
  void resume() {
    active = true;
  }

  void pause() {
    active = false;
  }

  private static String frame(StackTraceElement f) {
    String cls = f.getClassName();
    return cls.substring(cls.lastIndexOf('.') + 1) + "." + f.getMethodName();
  }

  /** Stops sampling and returns the report lines (each prefixed "profile: "): tasks, then copy threads. */
  List<String> report(int top) {
    close();
    List<String> out = new ArrayList<>();
    synchronized (this) {
      tasks.lines(out, top);
      copiers.lines(out, top);
    }
    return out;
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      thread.join(1000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
