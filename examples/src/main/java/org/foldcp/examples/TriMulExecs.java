package org.foldcp.examples;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.foldcp.spark.sql.TriMulExec;
import scala.collection.Iterator;

/** The fold-cp operators ({@link TriMulExec}) of a {@link TriMulJob} run's plans: their routes and SQL metrics. */
final class TriMulExecs {
  private TriMulExecs() {}

  /** The fold-cp operators of an executed plan (under AQE too; several with cp auto), added to {@code found}. */
  static List<TriMulExec> findTriMuls(SparkPlan plan, List<TriMulExec> found) {
    if (plan instanceof TriMulExec) {
      found.add((TriMulExec) plan);
      return found;
    }
    if (plan instanceof AdaptiveSparkPlanExec) {
      return findTriMuls(((AdaptiveSparkPlanExec) plan).executedPlan(), found);
    }
    Iterator<SparkPlan> it = plan.children().iterator();
    while (it.hasNext()) {
      findTriMuls(it.next(), found);
    }
    return found;
  }

  /** The route the planner picked for {@code applied}, as ", route ...", or "" when it cannot tell yet. */
  static String routeOf(Dataset<Row> applied) {
    try {
      List<TriMulExec> found = findTriMuls(applied.queryExecution().executedPlan(), new ArrayList<>());
      if (found.isEmpty()) {
        return "";
      }
      String route = found.get(0).plan().toString();
      int why = route.indexOf(" (");
      return ", route " + (why > 0 ? route.substring(0, why) : route)
          + (found.size() > 1 ? " and " + (found.size() - 1) + " more (cp auto)" : "");
    } catch (RuntimeException ex) {
      return "";
    }
  }

  /** Metric {@code name} summed over {@code execs} (0 where one has no such metric). */
  static long sum(List<TriMulExec> execs, String name) {
    long s = 0;
    for (TriMulExec e : execs) {
      s += value(e.metrics(), name);
    }
    return s;
  }

  /** Metric {@code name} of one operator, 0 where it has none. */
  static long value(scala.collection.Map<String, SQLMetric> m, String name) {
    return m.contains(name) ? m.apply(name).value() : 0L;
  }
}
