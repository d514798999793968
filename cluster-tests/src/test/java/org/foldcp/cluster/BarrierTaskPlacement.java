package org.foldcp.cluster;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.storage.RDDInfo;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Records, on the driver, which executors ran the tasks of barrier stages: proof that a barrier
 * route's ranks really were spread over executors, whatever stage its output comes from.
 */
final class BarrierTaskPlacement extends SparkListener {
  private final Set<Integer> barrierStages = ConcurrentHashMap.newKeySet();
  private final Map<Integer, Set<String>> executorsByStage = new ConcurrentHashMap<>();

  @Override
  public void onStageSubmitted(SparkListenerStageSubmitted event) {
    // A stage is a barrier stage when an RDD in it comes from RDD.barrier() (Spark marks the
    // narrow descendants of such an RDD as barrier RDDs too).
    for (RDDInfo rdd : CollectionConverters.asJava(event.stageInfo().rddInfos())) {
      if (rdd.isBarrier()) {
        barrierStages.add(event.stageInfo().stageId());
        return;
      }
    }
  }

  @Override
  public void onTaskEnd(SparkListenerTaskEnd event) {
    if (event.taskInfo().successful()) {
      executorsByStage.computeIfAbsent(event.stageId(), s -> ConcurrentHashMap.newKeySet())
          .add(event.taskInfo().executorId());
    }
  }

  /**
   * Waits until the listener has seen every event of the jobs run so far: listeners get events
   * asynchronously, after the action that caused them has returned.
   */
  void awaitEvents(JavaSparkContext context) throws TimeoutException {
    // listenerBus() is private[spark] in Scala, public in bytecode; Spark's own tests call it
    // for the same reason.
    context.sc().listenerBus().waitUntilEmpty();
  }

  int barrierStageCount() {
    return barrierStages.size();
  }

  /** The executors that completed tasks of barrier stages. */
  Set<String> barrierExecutors() {
    Set<String> out = new TreeSet<>();
    for (int stage : barrierStages) {
      out.addAll(executorsByStage.getOrDefault(stage, Set.of()));
    }
    return out;
  }
}
