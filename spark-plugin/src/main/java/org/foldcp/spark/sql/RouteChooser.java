package org.foldcp.spark.sql;

import java.util.Locale;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides on the driver, before anything runs, how a TriMul stack runs (DESIGN.md section 3):
 * the route kind, the grid and the threads per task, with the reason, which is logged and shown
 * by explain().
 *
 * <p>{@code spark.foldcp.route = auto}: cp = 1 runs every complex whole in one task (single);
 * cp > 1 forms a barrier team, unless dynamic allocation is on, because a barrier stage needs all
 * of its cp tasks running at once and Spark refuses barrier stages under dynamic allocation; then
 * the reshards go through Spark shuffles. An explicit route forces its kind.
 */
public final class RouteChooser {
  /** Spark's own keys the choice depends on. */
  public static final String DYNAMIC_ALLOCATION = "spark.dynamicAllocation.enabled";
  public static final String TASK_CPUS = "spark.task.cpus";
  public static final String EXECUTOR_GPUS = "spark.executor.resource.gpu.amount";

  private static final Logger LOG = LoggerFactory.getLogger(RouteChooser.class);

  private RouteChooser() {}

  /**
   * The plan for a Spark configuration: its {@code spark.foldcp.*} keys (validated by
   * {@link FoldCpConf}) and the Spark keys above; other keys are ignored.
   */
  public static RoutePlan choose(Map<String, String> settings) {
    FoldCpConf conf = FoldCpConf.from(settings);
    boolean dynamicAllocation = Boolean.parseBoolean(settings.getOrDefault(DYNAMIC_ALLOCATION, "false").trim());
    int taskCpus = parseTaskCpus(settings.getOrDefault(TASK_CPUS, "1"));
    boolean executorGpus = parseAmount(settings.get(EXECUTOR_GPUS)) > 0;
    return choose(conf, dynamicAllocation, taskCpus, executorGpus);
  }

  /**
   * The plan for {@code conf} on a cluster with the given facts.
   *
   * @param executorGpus whether executors are given GPUs (only to warn that auto cannot use them yet)
   * @throws InvalidInputException when the configured route cannot run with these settings
   */
  public static RoutePlan choose(FoldCpConf conf, boolean dynamicAllocation, int taskCpus, boolean executorGpus) {
    int threads = conf.cpuThreadsPerTask(taskCpus);
    CpGrid grid = conf.grid();
    int cp = grid.size();
    String route = FoldCpConf.ROUTE.name() + " = " + conf.route().label();
    RoutePlan plan;
    switch (conf.route()) {
      case AUTO:
        if (cp > 1 && executorGpus && conf.gpuEnabled()) {
          LOG.warn("fold-cp: executors have GPUs ({} > 0) but context parallelism on GPUs needs the NVSHMEM team,"
              + " which is not built yet; cp = {} runs on the CPU backend", EXECUTOR_GPUS, cp);
        }
        if (cp == 1) {
          plan = plan(Kind.SINGLE, grid, threads, conf, route + " and " + FoldCpConf.CP.name() + " = 1: each"
              + " complex runs whole in one task" + (conf.gpuEnabled() ? ", on the task's GPU where it has one"
              + " (sm_90), else on the CPU" : ", on the CPU (" + FoldCpConf.GPU_ENABLED.name() + " = false)"))
              .withBackend(conf.gpuEnabled() ? RoutePlan.Backend.AUTO : RoutePlan.Backend.CPU);
        } else if (dynamicAllocation) {
          plan = plan(Kind.SHUFFLE, grid, threads, conf, route + ", cp = " + cp + " and " + DYNAMIC_ALLOCATION
              + " = true: a barrier stage needs all cp tasks at once, which dynamic allocation cannot promise,"
              + " so the reshards go through Spark shuffles");
        } else {
          plan = plan(Kind.BARRIER, grid, threads, conf, route + ", cp = " + cp + " and a fixed set of"
              + " executors: one barrier stage of cp tasks exchanges the reshards directly");
        }
        break;
      case CPU:
        if (cp != 1) {
          throw InvalidInputException.of(FoldCpConf.ROUTE.name(), "'cpu'", "the cpu route runs each complex whole"
              + " in one task and needs " + FoldCpConf.CP.name() + " = 1, but " + FoldCpConf.CP.name() + " = " + cp
              + (conf.isSet(FoldCpConf.GRID) ? " (" + FoldCpConf.GRID.name() + " = " + grid + ")" : "")
              + "; for cp > 1 use route auto, barrier or shuffle");
        }
        plan = plan(Kind.SINGLE, grid, threads, conf, route + ": forced, cp = 1");
        break;
      case GPU:
        if (cp != 1) {
          throw InvalidInputException.of(FoldCpConf.ROUTE.name(), "'gpu'", "the gpu route runs each complex whole"
              + " on one GPU and needs " + FoldCpConf.CP.name() + " = 1, but " + FoldCpConf.CP.name() + " = " + cp
              + "; context parallelism across GPUs (the NVSHMEM team) is not built yet: use route auto, barrier"
              + " or shuffle, which run cp > 1 on the CPU");
        }
        plan = plan(Kind.SINGLE, grid, threads, conf, route + ": forced, cp = 1, every task on its GPU")
            .withBackend(RoutePlan.Backend.GPU);
        break;
      case BARRIER:
        if (dynamicAllocation) {
          throw InvalidInputException.of(FoldCpConf.ROUTE.name(), "'barrier'", "a barrier stage needs all cp tasks"
              + " at once and Spark refuses barrier stages when " + DYNAMIC_ALLOCATION + " = true; use route"
              + " shuffle (or auto) with dynamic allocation");
        }
        plan = plan(Kind.BARRIER, grid, threads, conf, route + ": forced");
        break;
      case SHUFFLE:
        plan = plan(Kind.SHUFFLE, grid, threads, conf, route + ": forced");
        break;
      default:
        throw new IllegalStateException("unhandled route " + conf.route());
    }
    LOG.info("fold-cp route: {}", plan);
    return plan;
  }

  private static RoutePlan plan(Kind kind, CpGrid grid, int threads, FoldCpConf conf, String reason) {
    return new RoutePlan(kind, grid, threads, conf.barrierTimeoutSeconds() * 1000L, conf.connectTimeoutMs(), reason);
  }

  private static int parseTaskCpus(String raw) {
    try {
      return Integer.parseInt(raw.trim());
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(TASK_CPUS, "'" + raw + "'", "must be an integer >= 1");
    }
  }

  /** A Spark resource amount ("1", "0.5"); absent means none. */
  private static double parseAmount(String raw) {
    if (raw == null || raw.isBlank()) {
      return 0;
    }
    try {
      return Double.parseDouble(raw.trim().toLowerCase(Locale.ROOT));
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(EXECUTOR_GPUS, "'" + raw + "'", "must be a number");
    }
  }
}
