package org.foldcp.spark.barrier;

import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.config.SparkKeys;
import org.foldcp.spark.route.RoutePlan;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Driver-side checks before the barrier stage is built, for the cases where Spark itself would
 * fail late or wait: dynamic allocation (refused by barrier stages), too few task slots for cp
 * tasks at once (Spark keeps retrying its own check for minutes), a plan the ranks could not
 * run (H not divisible by cp, no threads), and for a GPU team (transport nvshmem) settings under
 * which one executor could run two of its ranks, which NVSHMEM cannot (one PE per process).
 */
public final class BarrierPreflight {
  private static final Logger LOG = LoggerFactory.getLogger(BarrierPreflight.class);
  static final String DYNAMIC_ALLOCATION = SparkKeys.DYNAMIC_ALLOCATION;
  private static final String EXECUTOR_GPUS = SparkKeys.EXECUTOR_GPUS;
  private static final String TASK_GPUS = SparkKeys.TASK_GPUS;
  private static final String EXECUTOR_CORES = SparkKeys.EXECUTOR_CORES;
  private static final long SLOT_POLL_MILLIS = 500;

  private BarrierPreflight() {}

  public static void check(SparkContext sc, RoutePlan plan, LayerStack stack) {
    checkPlan(plan, stack);
    checkDynamicAllocation(sc.getConf(), plan);
    if (plan.transport == RoutePlan.Transport.TCP && sc.getConf().getBoolean(SparkKeys.NETWORK_CRYPTO, false)) {
      // RouteChooser already refuses such a plan; this holds for one built by hand as well.
      throw unencryptedTeam("barrier");
    }
    if (plan.transport == RoutePlan.Transport.NVSHMEM) {
      checkOneRankPerExecutor(sc.getConf(), sc.isLocal(), sc.master(), plan);
    }
    checkSlots(sc, plan);
  }

  /**
   * Why a TCP team may not run where Spark encrypts the traffic between executors: its frames are
   * authenticated (TeamKey) but not encrypted. {@code route}: the spark.foldcp.route value asked for.
   */
  public static InvalidInputException unencryptedTeam(String route) {
    return InvalidInputException.of(FoldCpConf.ROUTE.name(), "'" + route + "'", "its CPU ranks exchange the reshards"
        + " over their own TCP connections, which are authenticated but not encrypted, and " + SparkKeys.NETWORK_CRYPTO
        + " = true asks for encrypted traffic between executors; use route shuffle (or auto), whose reshards travel"
        + " through Spark's encrypted transport");
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
    // the layout's own rule and message for H and cp, before any task starts
    new ShardLayout(plan.grid, 1, stack.dim(), stack.hidden());
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
   * A GPU team needs each rank in its own executor process (an NVSHMEM PE per process, on the
   * executor's one GPU), so an executor must never run two tasks of the stage at once. That holds
   * when every task takes its executor's whole GPU (task GPU amount >= executor GPU amount >= 1),
   * or when an executor has one task slot (spark.executor.cores / spark.task.cpus = 1, with a GPU
   * per executor). Local mode runs every task in the driver's JVM and never can.
   */
  static void checkOneRankPerExecutor(SparkConf conf, boolean localMode, String master, RoutePlan plan) {
    double executorGpus = SparkKeys.resourceAmount(EXECUTOR_GPUS, conf.get(EXECUTOR_GPUS, null));
    double taskGpus = SparkKeys.resourceAmount(TASK_GPUS, conf.get(TASK_GPUS, null));
    int taskCpus = conf.getInt("spark.task.cpus", 1);
    boolean wholeGpuPerTask = executorGpus >= 1 && taskGpus >= executorGpus;
    boolean oneSlotPerExecutor = executorGpus >= 1 && conf.contains(EXECUTOR_CORES)
        && conf.getInt(EXECUTOR_CORES, 1) / Math.max(1, taskCpus) <= 1;
    if (!localMode && (wholeGpuPerTask || oneSlotPerExecutor)) {
      return;
    }
    String have = localMode ? "master " + master + " runs every task in the driver's JVM"
        : EXECUTOR_GPUS + " = " + conf.get(EXECUTOR_GPUS, "(unset)") + ", " + TASK_GPUS + " = "
            + conf.get(TASK_GPUS, "(unset)") + ", " + EXECUTOR_CORES + " = " + conf.get(EXECUTOR_CORES, "(unset)")
            + ", spark.task.cpus = " + taskCpus;
    throw InvalidInputException.of(FoldCpConf.CP_TRANSPORT.name(), "nvshmem (" + plan.describe() + ")",
        "the GPU team runs each of its cp = " + plan.grid.size() + " ranks as an NVSHMEM PE, one per executor process"
            + " and GPU, so no executor may run two tasks of the barrier stage at once, which these settings allow ("
            + have + ")."
            + " Give every executor one GPU and every task the whole of it (" + EXECUTOR_GPUS + "=1, " + TASK_GPUS
            + "=1 and a discovery script), or one task slot per executor with its GPU (" + EXECUTOR_CORES
            + " = spark.task.cpus); local mode cannot run a GPU team (use local-cluster[...] or a cluster); or set "
            + FoldCpConf.CP_TRANSPORT.name() + "=tcp to run the ranks on the CPU");
  }

  /**
   * In local mode the slots are fixed: a shortfall fails at once. On a cluster, executors may
   * still be registering: wait for them up to the barrier timeout, then fail.
   */
  static void checkSlots(SparkContext sc, RoutePlan plan) {
    int tasks = plan.stageTasks(); // every rank of every team at once
    int slots = slots(sc);
    if (slots >= tasks) {
      return;
    }
    if (!sc.isLocal()) {
      LOG.info("barrier route: {} task slots for {} tasks (cp = {}, {} team(s)); waiting up to {} ms for executors"
          + " to register", slots, tasks, plan.grid.size(), plan.teams, plan.barrierTimeoutMillis);
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(plan.barrierTimeoutMillis);
      while (slots < tasks && System.nanoTime() < deadline) {
        try {
          Thread.sleep(SLOT_POLL_MILLIS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
        slots = slots(sc);
      }
      if (slots >= tasks) {
        return;
      }
    }
    // executors registered, without the driver
    int executors = sc.isLocal() ? 0 : Math.max(0, sc.statusTracker().getExecutorInfos().length - 1);
    throw slotShortage(plan, slots, sc.getConf(), sc.isLocal() ? sc.master() : null, executors);
  }

  /**
   * The error for too few task slots, naming the cause where the settings show it: executors
   * that ask for resources (GPUs) no worker offered, so none registered; and the fix, which is
   * fewer ranks only when there is at least one slot.
   *
   * @param localMaster the master in local mode, null on a cluster
   * @param executors executors registered (on a cluster)
   */
  static InvalidInputException slotShortage(RoutePlan plan, int slots, SparkConf conf, String localMaster,
      int executors) {
    int cp = plan.grid.size();
    String taskCpus = "spark.task.cpus = " + conf.get("spark.task.cpus", "1");
    String have = localMaster != null ? "master " + localMaster + ", " + taskCpus
        : executors + " executors registered, " + taskCpus;
    String fix;
    if (localMaster == null && executors == 0) {
      String waited = "no executor registered within " + plan.barrierTimeoutMillis / 1000 + " s ("
          + FoldCpConf.BARRIER_TIMEOUT_SECONDS.name() + ")";
      String requests = resourceRequests(conf);
      fix = requests.isEmpty()
          ? waited + ": check that the workers are up and offer the cores and memory each executor asks for ("
              + EXECUTOR_CORES + ", spark.executor.memory)"
          : waited + ", and executors ask for resources (" + requests + ") that only workers offering them"
              + " (found by a discovery script) can give: on workers without GPUs drop these settings"
              + " (conf/spark-defaults.cpu.conf.template has none), or give the workers GPUs";
    } else {
      fix = (slots >= 1 ? "use fewer ranks (" + FoldCpConf.CP.name() + " <= " + slots + "), " : "")
          + "more cores or executors, or " + FoldCpConf.ROUTE.name() + "=shuffle";
    }
    if (plan.teams > 1) {
      return InvalidInputException.of("cp x " + FoldCpConf.CP_TEAMS.name(), cp + " x " + plan.teams + " = "
          + plan.stageTasks(), "the barrier route runs every rank of every team at once, one task slot each, but only "
          + slots + " task slots are available (" + have + "); fewer teams, fewer ranks or more slots");
    }
    return InvalidInputException.of("cp", cp + " (grid " + plan.grid + ")",
        "the barrier route runs all cp ranks at once, one task slot each, but only " + slots
            + " task slots are available (" + have + "), so Spark would wait for slots that never come; " + fix);
  }

  /** The executor and task resource amounts set (spark.executor.resource.gpu.amount = 1, ...), or "". */
  private static String resourceRequests(SparkConf conf) {
    StringBuilder sb = new StringBuilder();
    for (scala.Tuple2<String, String> kv : conf.getAll()) {
      String key = kv._1();
      if ((key.startsWith("spark.executor.resource.") || key.startsWith("spark.task.resource."))
          && key.endsWith(".amount") && SparkKeys.resourceAmount(key, kv._2()) > 0) {
        sb.append(sb.length() == 0 ? "" : ", ").append(key).append(" = ").append(kv._2().trim());
      }
    }
    return sb.toString();
  }

  /**
   * Tasks that can run at once: the number Spark's own barrier check uses, which accounts for
   * spark.task.cpus and for task resources such as GPUs (one task per GPU).
   */
  static int slots(SparkContext sc) {
    return sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
  }
}
