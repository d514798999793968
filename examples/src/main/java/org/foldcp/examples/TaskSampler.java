package org.foldcp.examples;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Where the Spark task threads spend a job pass: a stack sample of every thread running a task
 * each {@code periodMillis} while {@link #resume resumed}, counted by thread state and by frame (a profile, not a guess, for the
 * benchmark's report). In-process and portable: the GPU machines have no perf, and JFR's sampler
 * depends on signals the sandboxes do not all deliver. Samples are taken at safepoints, so a frame
 * between two safepoint polls is credited to the next poll; the bulk copies poll every 4 MiB slice
 * ({@code HostCopy}), fine enough at these sizes.
 */
final class TaskSampler implements AutoCloseable {
  private static final String TASK_THREAD = "Executor task launch worker";

  private final Thread thread;
  private final Map<String, Integer> byState = new HashMap<>();
  private final Map<String, Integer> byFrame = new HashMap<>();
  private final Map<String, Integer> byOurs = new HashMap<>();
  private int samples;
  private volatile boolean running = true;
  private volatile boolean active;

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
        if (!e.getKey().getName().startsWith(TASK_THREAD)) {
          continue;
        }
        StackTraceElement[] st = e.getValue();
        if (!inTask(st)) {
          continue; // an idle thread of the executor's pool
        }
        samples++;
        String state = e.getKey().getState().toString();
        byState.merge(state, 1, Integer::sum);
        byFrame.merge(state + " " + frame(st[0]), 1, Integer::sum);
        String ours = "(no org.foldcp frame)";
        for (StackTraceElement f : st) {
          if (f.getClassName().startsWith("org.foldcp.")) {
            ours = frame(f);
            break;
          }
        }
        byOurs.merge(state + " " + ours, 1, Integer::sum);
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

  /** Stops sampling and returns the report lines (each prefixed "profile: "). */
  List<String> report(int top) {
    close();
    synchronized (this) {
      return lines(top);
    }
  }

  private List<String> lines(int top) {
    List<String> out = new ArrayList<>();
    if (samples == 0) {
      out.add("profile: no task thread sampled");
      return out;
    }
    StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "profile: %d samples of the task threads:", samples));
    byState.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
        .forEach(e -> b.append(String.format(Locale.ROOT, " %s %.1f%%", e.getKey(), 100.0 * e.getValue() / samples)));
    out.add(b.toString());
    add(out, "by the sampled frame", byFrame, top);
    add(out, "by the innermost org.foldcp frame", byOurs, top);
    return out;
  }

  private void add(List<String> out, String title, Map<String, Integer> counts, int top) {
    out.add("profile: top " + top + " " + title + " (% of the samples):");
    counts.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed()).limit(top)
        .forEach(e -> out.add(String.format(Locale.ROOT, "profile:   %5.1f%%  %s", 100.0 * e.getValue() / samples,
            e.getKey())));
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
