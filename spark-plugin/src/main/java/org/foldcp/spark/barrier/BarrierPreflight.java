package org.foldcp.spark.barrier;

import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RoutePlan;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver-side checks before the barrier stage is built, for the cases where Spark itself would
 * fail late or wait: dynamic allocation (refused by barrier stages), too few task slots for cp
 * tasks at once (Spark keeps retrying its own check for minutes), and a plan the ranks could
 * not run (D not divisible by cp, no threads).
 */
public final class BarrierPreflight {
  private static final Logger LOG = LoggerFactory.getLogger(BarrierPreflight.class);
  static final String DYNAMIC_ALLOCATION = "spark.dynamicAllocation.enabled";
  private static final long SLOT_POLL_MILLIS = 500;

  private BarrierPreflight() {}

  public static void check(SparkContext sc, RoutePlan plan, LayerStack stack) {
    checkPlan(plan, stack);
    checkDynamicAllocation(sc.getConf(), plan);
    checkSlots(sc, plan);
  }

  static void checkPlan(RoutePlan plan, LayerStack stack) {
    InvalidInputException.require(plan.kind == RoutePlan.Kind.BARRIER, "route plan kind", plan.kind,
        "the barrier route runs barrier plans only (" + plan + ")");
    InvalidInputException.require(plan.threadsPerTask >= 1, "CPU threads per task", plan.threadsPerTask,
        "must be >= 1 (" + FoldCpConf.CPU_THREADS.name() + " = 0 must be resolved to spark.task.cpus when planning)");
    InvalidInputException.require(plan.barrierTimeoutMillis >= 1, "barrier timeout", plan.barrierTimeoutMillis + " ms",
        "must be >= 1 ms");
    InvalidInputException.require(plan.connectTimeoutMillis >= 1, "connect timeout", plan.connectTimeoutMillis + " ms",
        "must be >= 1 ms");
    // the layout's own rule and message for D and cp, before any task starts
    new ShardLayout(plan.grid, 1, stack.dim());
  }

  static void checkDynamicAllocation(SparkConf conf, RoutePlan plan) {
    if (conf.getBoolean(DYNAMIC_ALLOCATION, false)) {
      throw InvalidInputException.of(DYNAMIC_ALLOCATION, "true",
          "the barrier route cannot run with dynamic allocation: its cp = " + plan.grid.size() + " ranks run as one"
              + " barrier stage on executors that must stay for the whole stage; set " + DYNAMIC_ALLOCATION
              + "=false, or use " + FoldCpConf.ROUTE.name() + "=shuffle, which runs on any executors");
    }
  }

  /**
   * In local mode the slots are fixed: a shortfall fails at once. On a cluster, executors may
   * still be registering: wait for them up to the barrier timeout, then fail.
   */
  static void checkSlots(SparkContext sc, RoutePlan plan) {
    int cp = plan.grid.size();
    int slots = slots(sc);
    if (slots >= cp) {
      return;
    }
    if (!sc.isLocal()) {
      LOG.info("barrier route: {} task slots for cp = {}; waiting up to {} ms for executors to register", slots, cp,
          plan.barrierTimeoutMillis);
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(plan.barrierTimeoutMillis);
      while (slots < cp && System.nanoTime() < deadline) {
        try {
          Thread.sleep(SLOT_POLL_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
        slots = slots(sc);
      }
      if (slots >= cp) {
        return;
      }
    }
    throw InvalidInputException.of("cp", cp + " (grid " + plan.grid + ")",
        "the barrier route runs all cp ranks at once, one task slot each, but only " + slots + " task slots are available ("
            + describeSlots(sc) + "), so Spark would wait for slots that never come; use fewer ranks ("
            + FoldCpConf.CP.name() + " <= " + slots + "), more cores or executors, or " + FoldCpConf.ROUTE.name()
            + "=shuffle");
  }

  /**
   * Tasks that can run at once: the number Spark's own barrier check uses, which accounts for
   * spark.task.cpus and for task resources such as GPUs (one task per GPU).
   */
  static int slots(SparkContext sc) {
    return sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
  }

  private static String describeSlots(SparkContext sc) {
    String taskCpus = "spark.task.cpus = " + sc.getConf().get("spark.task.cpus", "1");
    if (sc.isLocal()) {
      return "master " + sc.master() + ", " + taskCpus;
    }
    int executors = Math.max(0, sc.statusTracker().getExecutorInfos().length - 1); // without the driver
    return executors + " executors registered, " + taskCpus;
  }
}
