package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageCompleted;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.storage.RDDInfo;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.barrier.BarrierRoute;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import scala.jdk.javaapi.CollectionConverters;

/**
 * An executor JVM killed (SIGKILL) in the middle of the barrier route's stage, on the real
 * multi-process cluster: the stage's attempt fails well within the barrier timeout (the surviving
 * rank sees its peer's connection close and fails at once), Spark retries the whole barrier stage
 * once the Worker has replaced the executor, and the job's output is complete and equal to the
 * cp = 1 reference: exactly one tile per (complex, rank), nothing of the failed attempt.
 *
 * <p>The stage ends in a shuffle, as the DataFrame API runs it ({@link BarrierRoute#leaveBarrierStage}):
 * Spark retries barrier stages that end in a shuffle only. A barrier result stage (the route's
 * output collected as is) fails the job instead, with Spark's "Could not recover from a failed
 * barrier ResultStage" and the lost executor's exit status.
 */
@ExtendWith(SharedCluster.class)
class ClusterFaultTest {
  /** The route's timeouts: far above what a failing attempt takes, so that only a hang reaches them. */
  private static final long BARRIER_TIMEOUT_MS = 45_000;
  /** How long after both ranks started the executor of rank 1 is killed: they are forming or computing by then. */
  private static final long KILL_AFTER_MS = 400;

  @Test
  void anExecutorKilledMidStageFailsTheAttemptBeforeTheTimeoutAndSparkRetriesTheStage(LocalCluster cluster)
      throws Exception {
    LayerStack stack = LayerStack.randomAlternating(4, Complexes.D, 91L, true);
    List<TileRecord> complexes = new ArrayList<>();
    for (int c = 0; c < 8; c++) {
      complexes.add(Complexes.whole("complex-" + c, 120 + 8 * c, 300L + c, 0.1));
    }
    RoutePlan plan = new RoutePlan(RoutePlan.Kind.BARRIER, CpGrid.of(2, 1), 1, BARRIER_TIMEOUT_MS, 30_000,
        "cluster fault test: rank 1's executor is killed mid-stage");
    JavaSparkContext context = cluster.context();
    KillRankOne killer = new KillRankOne();
    context.sc().addSparkListener(killer);
    List<TileRecord> out;
    try {
      // as the DataFrame API runs it: the barrier stage ends in a shuffle, which is what lets Spark retry it
      out = cluster.collect(BarrierRoute.leaveBarrierStage(
          new BarrierRoute().run(context.parallelize(complexes, 2), stack, plan, RouteMetrics.NONE)));
      context.sc().listenerBus().waitUntilEmpty();
    } finally {
      context.sc().removeSparkListener(killer);
    }

    long killedAt = killer.killedAt.getNow(-1L);
    assertTrue(killedAt > 0, "rank 1's executor was killed: " + killer.log);
    Attempt first = killer.attempts.get(0);
    assertNotNull(first, "attempt 0 of the barrier stage completed: " + killer.log);
    assertTrue(first.failure().isPresent(), "attempt 0 was still running when its executor was killed, and failed: "
        + killer.log);
    long failedAfterMs = TimeUnit.NANOSECONDS.toMillis(first.endedAt() - killedAt);
    System.out.println("[fault] barrier attempt 0 failed " + failedAfterMs + " ms after the kill (timeout "
        + BARRIER_TIMEOUT_MS + " ms): " + first.failure().get());
    assertTrue(failedAfterMs < BARRIER_TIMEOUT_MS, failedAfterMs + " ms: the attempt waited for the timeout");
    assertTrue(killer.attempts.keySet().stream().anyMatch(a -> a > 0 && killer.attempts.get(a).failure().isEmpty()),
        "a later attempt of the barrier stage succeeded: " + killer.log);

    Map<String, Long> tilesPerComplex = out.stream().collect(Collectors.groupingBy(t -> t.complexId,
        Collectors.counting()));
    assertEquals(complexes.size(), tilesPerComplex.size());
    assertTrue(tilesPerComplex.values().stream().allMatch(k -> k == 2), "one output tile per (complex, rank): "
        + tilesPerComplex);
    Complexes.assertBitForBit(Complexes.cp1Forward(complexes, stack), Complexes.reassemble(out),
        "barrier route, retried after a killed executor");
    // the Worker replaced the executor: the shared cluster is whole again for the tests after this one
    cluster.awaitExecutors();
  }

  /** How one attempt of the barrier stage ended. */
  record Attempt(long endedAt, Optional<String> failure) {}

  /**
   * Kills, {@link #KILL_AFTER_MS} after both tasks of the first barrier stage's first attempt
   * started, the executor JVM running rank 1 (partition 1), and records how each attempt ended.
   */
  private static final class KillRankOne extends SparkListener {
    final Map<Integer, Attempt> attempts = new ConcurrentHashMap<>();
    final CompletableFuture<Long> killedAt = new CompletableFuture<>();
    final List<String> log = java.util.Collections.synchronizedList(new ArrayList<>());
    private volatile int barrierStage = -1;
    private final Map<Integer, String> rankExecutors = new ConcurrentHashMap<>();

    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted event) {
      for (RDDInfo rdd : CollectionConverters.asJava(event.stageInfo().rddInfos())) {
        if (rdd.isBarrier() && barrierStage < 0) {
          barrierStage = event.stageInfo().stageId();
        }
      }
    }

    @Override
    public void onTaskStart(SparkListenerTaskStart event) {
      if (event.stageId() != barrierStage || event.stageAttemptId() != 0) {
        return;
      }
      rankExecutors.put(event.taskInfo().index(), event.taskInfo().executorId());
      log.add("attempt 0 rank " + event.taskInfo().index() + " started on executor " + event.taskInfo().executorId());
      if (rankExecutors.size() == 2 && !killedAt.isDone()) {
        String victim = rankExecutors.get(1);
        Thread t = new Thread(() -> kill(victim), "kill-executor-" + victim);
        t.setDaemon(true);
        t.start();
      }
    }

    private void kill(String executorId) {
      try {
        Thread.sleep(KILL_AFTER_MS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      Optional<ProcessHandle> jvm = ProcessHandle.current().descendants()
          .filter(p -> p.info().arguments().map(a -> isExecutor(a, executorId)).orElse(false)).findFirst();
      if (jvm.isEmpty()) {
        log.add("no executor JVM with id " + executorId + " among this JVM's child processes");
        return;
      }
      log.add("killing executor " + executorId + " (pid " + jvm.get().pid() + ")");
      jvm.get().destroyForcibly();
      killedAt.complete(System.nanoTime());
    }

    private static boolean isExecutor(String[] args, String executorId) {
      for (int q = 0; q + 1 < args.length; q++) {
        if (args[q].equals("--executor-id") && args[q + 1].equals(executorId)) {
          return true;
        }
      }
      return false;
    }

    @Override
    public void onStageCompleted(SparkListenerStageCompleted event) {
      if (event.stageInfo().stageId() == barrierStage) {
        Optional<String> failure = event.stageInfo().failureReason().isDefined()
            ? Optional.of(event.stageInfo().failureReason().get()) : Optional.empty();
        attempts.put(event.stageInfo().attemptNumber(), new Attempt(System.nanoTime(), failure));
        log.add("attempt " + event.stageInfo().attemptNumber() + " ended: " + failure.orElse("succeeded"));
      }
    }
  }
}
