package org.foldcp.examples;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.apache.spark.SparkContext;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerJobEnd;
import org.apache.spark.scheduler.SparkListenerJobStart;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.TaskInfo;

/**
 * Where one pass of the job spent its wall time on Spark's side, from Spark's own listener events
 * (millisecond clocks of the driver, which in local mode is also the executor): from the pass's
 * start to its first job's start (the query planned and the job submitted), from there to the
 * first task's launch, the tasks' span (first launch to last finish), and from the last task's end
 * to the pass's end; with the tasks' own split (deserializing the task, running it, serializing its
 * result). Beside the GPU feed's timeline (when complexes were on the GPU) it says what of a pass
 * had no complex in the feed.
 */
final class JobPhases extends SparkListener {
  private final List<long[]> tasks = new ArrayList<>(); // launch, finish, deserialize, run, result; guarded by this
  private final Set<Integer> stages = new HashSet<>(); // of the pass's jobs; guarded by this
  private final Set<Integer> jobIds = new HashSet<>(); // the pass's jobs; guarded by this
  private long passStart;
  private long passEnd;
  private long firstJobStart;
  private long lastJobEnd;
  private int jobsRunning;
  private final SparkContext sc;

  private JobPhases(SparkContext sc) {
    this.sc = sc;
  }

  static JobPhases listenTo(SparkContext sc) {
    JobPhases p = new JobPhases(sc);
    sc.addSparkListener(p);
    return p;
  }

  /** A pass starts now: forget the last one. */
  synchronized void passStarts() {
    tasks.clear();
    stages.clear();
    jobIds.clear();
    passStart = System.currentTimeMillis();
    passEnd = 0;
    firstJobStart = 0;
    lastJobEnd = 0;
    jobsRunning = 0;
  }

  /** The pass ended now (its query returned). */
  synchronized void passEnds() {
    passEnd = System.currentTimeMillis();
  }

  // The listener bus delivers events late: those of a job that started before the pass (the arm
  // before it) may arrive after passStarts, and those of the next arm's before describe, so jobs
  // are the pass's by their start time, tasks by their stage.

  @Override
  public synchronized void onJobStart(SparkListenerJobStart e) {
    if (passStart == 0 || e.time() < passStart || (passEnd != 0 && e.time() >= passEnd)) {
      return; // the arm's before or after
    }
    if (firstJobStart == 0) {
      firstJobStart = e.time();
    }
    for (Object id : scala.jdk.javaapi.CollectionConverters.asJava(e.stageIds())) {
      stages.add((Integer) id);
    }
    jobIds.add(e.jobId());
    jobsRunning++;
  }

  @Override
  public synchronized void onJobEnd(SparkListenerJobEnd e) {
    if (!jobIds.contains(e.jobId())) {
      return;
    }
    lastJobEnd = Math.max(lastJobEnd, e.time());
    jobsRunning--;
  }

  @Override
  public synchronized void onTaskEnd(SparkListenerTaskEnd e) {
    if (!stages.contains(e.stageId())) {
      return;
    }
    TaskInfo i = e.taskInfo();
    TaskMetrics m = e.taskMetrics();
    // a task without metrics (failed early) counts in the span only: -1 leaves it out of the averages
    tasks.add(new long[] {i.launchTime(), i.finishTime(), m == null ? -1 : m.executorDeserializeTime(),
        m == null ? 0 : m.executorRunTime(), m == null ? 0 : m.resultSerializationTime()});
  }

  /**
   * The pass's phases in one line, once Spark's listener bus has delivered every event posted
   * before this call (it runs behind the driver; up to 5 s).
   */
  String describe() {
    try {
      // every event of the pass was posted before its query returned (a pass may run several jobs)
      sc.listenerBus().waitUntilEmpty(5000);
    } catch (java.util.concurrent.TimeoutException e) {
      return "spark phases: Spark's listener bus did not drain within 5 s";
    }
    synchronized (this) {
      return describeDelivered();
    }
  }

  private String describeDelivered() {
    if (jobIds.isEmpty() || tasks.isEmpty() || passEnd == 0) {
      return "spark phases: none caught";
    }
    if (jobsRunning > 0) {
      return "spark phases: incomplete (" + jobsRunning + " of the pass's " + jobIds.size()
          + " jobs had no end event)";
    }
    long firstLaunch = Long.MAX_VALUE;
    long lastFinish = 0;
    long deser = 0;
    long run = 0;
    long result = 0;
    int measured = 0;
    for (long[] t : tasks) {
      firstLaunch = Math.min(firstLaunch, t[0]);
      lastFinish = Math.max(lastFinish, t[1]);
      if (t[2] >= 0) {
        measured++;
        deser += t[2];
        run += t[3];
        result += t[4];
      }
    }
    int n = tasks.size();
    int m = Math.max(1, measured);
    return String.format(Locale.ROOT, "spark phases, last job pass (%d ms, %d job(s), %d tasks): %d ms to the first job's"
            + " start (planning and submitting), %d ms from there to the first task's launch, %d ms from the first"
            + " task's launch to the last one's end, %d ms from there to the last job's end, %d ms from there to the"
            + " pass's end; per task on average: deserializing %.1f ms, running %.1f ms, result %.1f ms",
        passEnd - passStart, jobIds.size(), n, firstJobStart - passStart, firstLaunch - firstJobStart,
        lastFinish - firstLaunch, lastJobEnd - lastFinish, passEnd - lastJobEnd,
        deser / (double) m, run / (double) m, result / (double) m);
  }
}
