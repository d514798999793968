package org.foldcp.examples;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.util.QueryExecutionListener;
import org.foldcp.spark.sql.TriMulExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The TriMul operator's SQL metrics of the last query that ran one (opTime, gpuBusyTime,
 * copyWaitTime, ... summed over its tasks), caught by a query listener: where a job's time went,
 * beside its wall time, without a profiler.
 */
final class JobMetrics implements QueryExecutionListener {
  private final AtomicReference<Map<String, Long>> last = new AtomicReference<>();

  static JobMetrics listenTo(SparkSession spark) {
    JobMetrics m = new JobMetrics();
    spark.listenerManager().register(m);
    return m;
  }

  @Override
  public void onSuccess(String funcName, QueryExecution qe, long durationNs) {
    TriMulExec op = find(qe.executedPlan());
    if (op != null) {
      Map<String, Long> values = new LinkedHashMap<>();
      for (Map.Entry<String, SQLMetric> e : CollectionConverters.asJava(op.metrics()).entrySet()) {
        values.put(e.getKey(), e.getValue().value());
      }
      last.set(values);
    }
  }

  @Override
  public void onFailure(String funcName, QueryExecution qe, Exception exception) {}

  private static TriMulExec find(SparkPlan plan) {
    if (plan instanceof TriMulExec t) {
      return t;
    }
    if (plan instanceof AdaptiveSparkPlanExec a) {
      return find(a.executedPlan());
    }
    for (SparkPlan child : CollectionConverters.asJava(plan.children())) {
      TriMulExec t = find(child);
      if (t != null) {
        return t;
      }
    }
    return null;
  }

  /** The metrics of the last such query, waiting up to 5 s for the listener (it runs on Spark's listener bus); empty if none came. */
  Map<String, Long> last() {
    long until = System.nanoTime() + 5_000_000_000L;
    while (last.get() == null && System.nanoTime() < until) {
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    Map<String, Long> m = last.get();
    return m == null ? Map.of() : m;
  }

  /** Forgets the last query's metrics (before the pass whose metrics are wanted). */
  void reset() {
    last.set(null);
  }
}
