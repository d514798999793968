package org.foldcp.spark.sql;

import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.gpu.cp.NativeCp;
import org.foldcp.spark.barrier.BarrierPreflight;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.config.SparkKeys;
import org.foldcp.spark.gpu.BackendChoice;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.route.TaskBackends;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides on the driver, before anything runs, how a TriMul stack runs (docs/design.md section 3):
 * the route kind, the backend, the transport of a barrier team, the grid and the threads per
 * task, with the reason, which is logged and shown by explain().
 *
 * <p>{@code spark.foldcp.route = auto}: cp = 1 runs every complex whole in one task (single);
 * cp > 1 forms a barrier team, unless dynamic allocation is on, because a barrier stage needs all
 * of its cp tasks running at once and Spark refuses barrier stages under dynamic allocation; then
 * the reshards go through Spark shuffles. An explicit route forces its kind; route gpu with
 * cp > 1 is a barrier team of GPU ranks.
 *
 * <p>The transport of a barrier team ({@code spark.foldcp.cp.transport}): auto picks nvshmem
 * (GPU ranks in an NVSHMEM team) when the ranks have GPUs: route gpu, or executors given a GPU
 * resource, outside local mode (whose tasks all share the driver's JVM, while an NVSHMEM team
 * needs one process per rank), and where the executors run on this machine, only if the CP GPU
 * library loads here; otherwise tcp (CPU ranks). A forced nvshmem that cannot run here fails
 * with the reason. On a cluster the driver cannot see the executors' libraries: there the ranks
 * check when the stage starts and fail with the reason.
 *
 * <p>Backend auto of a cp = 1 plan is decided where the tasks run, once per executor
 * ({@code GpuOwners.choice}, logged there with the reason for a CPU fallback). In local mode the
 * tasks run in this JVM, so the plan takes that same decision now and explain() shows it, with
 * the reason.
 */
public final class RouteChooser {
  private static final Logger LOG = LoggerFactory.getLogger(RouteChooser.class);

  private RouteChooser() {}

  /**
   * What the choice depends on besides the {@code spark.foldcp.*} keys: Spark's settings
   * ({@code master} may be empty when unknown) and, for the transport, whether the CP GPU
   * library loads in this JVM ({@code cpLibraryReason}: NVSHMEM home, possibly null, to null
   * when it loads, else why not; asked only when the executors run on this machine), and, for
   * backend auto in local mode, where this JVM's tasks compute ({@code localTasks}).
   */
  public record SparkFacts(boolean dynamicAllocation, int taskCpus, boolean executorGpus, String master,
                           boolean networkCrypto, Function<String, String> cpLibraryReason,
                           Supplier<BackendChoice> localTasks) {
    public SparkFacts {
      master = master == null ? "" : master.trim();
      Objects.requireNonNull(cpLibraryReason, "cpLibraryReason");
      Objects.requireNonNull(localTasks, "localTasks");
    }

    /** local or local[n]: every task runs in the driver's JVM. */
    boolean localMode() {
      return master.equals("local") || master.startsWith("local[");
    }

    /** local-cluster[...]: the executors are processes on this machine, which the driver can check for them. */
    boolean executorsOnThisMachine() {
      return master.startsWith("local-cluster");
    }
  }

  /**
   * The plan for a Spark configuration: its {@code spark.foldcp.*} keys (validated by
   * {@link FoldCpConf}) and the Spark keys above; other keys are ignored.
   */
  public static RoutePlan choose(Map<String, String> settings) {
    return choose(settings, NativeCp::unavailableReason, TaskBackends::thisJvmChoice);
  }

  /** As above, with {@code cpLibraryReason} standing in for {@link NativeCp#unavailableReason} (tests). */
  static RoutePlan choose(Map<String, String> settings, Function<String, String> cpLibraryReason) {
    return choose(settings, cpLibraryReason, TaskBackends::thisJvmChoice);
  }

  /** As above, with {@code localTasks} standing in for {@link TaskBackends#thisJvmChoice} (tests). */
  static RoutePlan choose(Map<String, String> settings, Function<String, String> cpLibraryReason,
                          Supplier<BackendChoice> localTasks) {
    FoldCpConf conf = FoldCpConf.from(settings);
    boolean dynamicAllocation = Boolean.parseBoolean(settings.getOrDefault(SparkKeys.DYNAMIC_ALLOCATION, "false").trim());
    boolean networkCrypto = Boolean.parseBoolean(settings.getOrDefault(SparkKeys.NETWORK_CRYPTO, "false").trim());
    int taskCpus = parseTaskCpus(settings.getOrDefault(SparkKeys.TASK_CPUS, "1"));
    boolean executorGpus = SparkKeys.resourceAmount(SparkKeys.EXECUTOR_GPUS, settings.get(SparkKeys.EXECUTOR_GPUS)) > 0;
    return choose(conf, new SparkFacts(dynamicAllocation, taskCpus, executorGpus, settings.get(SparkKeys.MASTER), networkCrypto,
        cpLibraryReason, localTasks));
  }

  /**
   * The plan for {@code conf} on a cluster with the given facts.
   *
   * @throws InvalidInputException when the configured route or transport cannot run with these settings
   */
  public static RoutePlan choose(FoldCpConf conf, SparkFacts facts) {
    int threads = conf.cpuThreadsPerTask(facts.taskCpus());
    CpGrid grid = conf.grid();
    int cp = grid.size();
    String route = FoldCpConf.ROUTE.name() + " = " + conf.get(FoldCpConf.ROUTE).label();
    RoutePlan plan;
    switch (conf.get(FoldCpConf.ROUTE)) {
      case AUTO:
        if (cp == 1) {
          plan = plan(Kind.SINGLE, grid, threads, conf, route + " and " + FoldCpConf.CP.name() + " = 1: each"
              + " complex runs whole in one task" + (conf.get(FoldCpConf.GPU_ENABLED)
                  ? ", on the task's GPU where it has one (sm_90), else on the CPU (each executor decides once and"
                      + " logs why)"
                  : ", on the CPU (" + FoldCpConf.GPU_ENABLED.name() + " = false)"))
              .withBackend(RoutePlan.Backend.of(conf));
          plan = autoBackendInThisJvm(plan, facts);
        } else if (facts.dynamicAllocation() && conf.get(FoldCpConf.CP_TRANSPORT) == FoldCpConf.Transport.NVSHMEM) {
          throw InvalidInputException.of(FoldCpConf.CP_TRANSPORT.name(), "'nvshmem'", "the NVSHMEM team runs as"
              + " one barrier stage, which needs all cp = " + cp + " tasks at once, and Spark refuses barrier stages"
              + " when " + SparkKeys.DYNAMIC_ALLOCATION + " = true; turn dynamic allocation off, or use transport auto,"
              + " whose reshards then go through Spark shuffles");
        } else if (facts.dynamicAllocation()) {
          plan = plan(Kind.SHUFFLE, grid, threads, conf, route + ", cp = " + cp + " and " + SparkKeys.DYNAMIC_ALLOCATION
              + " = true: a barrier stage needs all cp tasks at once, which dynamic allocation cannot promise,"
              + " so the reshards go through Spark shuffles");
        } else {
          plan = barrier(conf, facts, grid, threads, route + ", cp = " + cp + " and a fixed set of"
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
        if (cp == 1) {
          plan = plan(Kind.SINGLE, grid, threads, conf, route + ": forced, cp = 1, every task on its GPU")
              .withBackend(RoutePlan.Backend.of(conf));
        } else {
          refuseDynamicAllocation(facts, "gpu");
          plan = barrier(conf, facts, grid, threads, route + ": forced, cp = " + cp + ": a barrier stage of cp"
              + " GPU ranks");
        }
        break;
      case BARRIER:
        refuseDynamicAllocation(facts, "barrier");
        plan = barrier(conf, facts, grid, threads, route + ": forced");
        break;
      case SHUFFLE:
        plan = plan(Kind.SHUFFLE, grid, threads, conf, route + ": forced");
        break;
      default:
        throw new IllegalStateException("unhandled route " + conf.get(FoldCpConf.ROUTE));
    }
    LOG.info("fold-cp route: {}", plan);
    return plan;
  }

  /**
   * A plan of backend auto in local mode, whose tasks run in this JVM, with the backend they
   * will get (the same decision, made once: see the class comment) and why.
   */
  private static RoutePlan autoBackendInThisJvm(RoutePlan plan, SparkFacts facts) {
    if (plan.backend != RoutePlan.Backend.AUTO || !facts.localMode()) {
      return plan;
    }
    BackendChoice here = facts.localTasks().get();
    return plan.withBackend(here.onGpu() ? RoutePlan.Backend.GPU : RoutePlan.Backend.CPU)
        .withReason(plan.reason + "; in local mode (master " + facts.master() + ") the tasks run in this JVM, where"
            + " backend auto computes on " + here.describe());
  }

  private static void refuseDynamicAllocation(SparkFacts facts, String route) {
    if (facts.dynamicAllocation()) {
      throw InvalidInputException.of(FoldCpConf.ROUTE.name(), "'" + route + "'", "a barrier stage needs all cp tasks"
          + " at once and Spark refuses barrier stages when " + SparkKeys.DYNAMIC_ALLOCATION + " = true; use route"
          + " shuffle (or auto) with dynamic allocation");
    }
  }

  /** A barrier plan, its transport chosen (see the class comment); {@code why} says why it is a barrier plan. */
  private static RoutePlan barrier(FoldCpConf conf, SparkFacts facts, CpGrid grid, int threads, String why) {
    String transport = FoldCpConf.CP_TRANSPORT.name() + " = " + conf.get(FoldCpConf.CP_TRANSPORT).label();
    boolean gpuRoute = conf.get(FoldCpConf.ROUTE) == FoldCpConf.Route.GPU;
    switch (conf.get(FoldCpConf.CP_TRANSPORT)) {
      case TCP:
        return tcp(conf, facts, grid, threads, why + "; " + transport + ": CPU ranks over TCP");
      case NVSHMEM: {
        String against = nvshmemCannotRun(conf, facts, false);
        if (against != null) {
          throw InvalidInputException.of(FoldCpConf.CP_TRANSPORT.name(), "'nvshmem'", "the NVSHMEM team cannot run"
              + " here: " + against + "; use " + FoldCpConf.CP_TRANSPORT.name() + " = tcp to run the ranks on the CPU");
        }
        return nvshmem(conf, grid, threads, why + "; " + transport + ": forced, GPU ranks in an NVSHMEM team");
      }
      case AUTO: {
        String against = nvshmemCannotRun(conf, facts, !gpuRoute);
        if (against == null) {
          return nvshmem(conf, grid, threads, why + "; " + transport + ": the ranks have GPUs ("
              + (gpuRoute ? "route gpu" : SparkKeys.EXECUTOR_GPUS + " > 0") + "), so they form an NVSHMEM team, the reshards"
              + " fused into the kernels' stores");
        }
        if (gpuRoute) {
          throw InvalidInputException.of(FoldCpConf.ROUTE.name(), "'gpu'", "with cp = " + grid.size() + " the GPU"
              + " ranks form an NVSHMEM team, which cannot run here: " + against + "; use route barrier (or auto)"
              + " to run the ranks on the CPU");
        }
        if (facts.executorGpus() && conf.get(FoldCpConf.GPU_ENABLED)) {
          LOG.warn("fold-cp: the executors have GPUs, but cp = {} runs on the CPU over TCP: {}", grid.size(), against);
        }
        return tcp(conf, facts, grid, threads, why + "; " + transport + ": CPU ranks over TCP, since " + against);
      }
      default:
        throw new IllegalStateException("unhandled transport " + conf.get(FoldCpConf.CP_TRANSPORT));
    }
  }

  /**
   * A team of CPU ranks over TCP, unless Spark encrypts the traffic between executors: the team's
   * frames are not encrypted, so then route auto sends the reshards through Spark shuffles (which
   * Spark encrypts) and a forced barrier route is refused rather than run in the clear.
   */
  private static RoutePlan tcp(FoldCpConf conf, SparkFacts facts, CpGrid grid, int threads, String reason) {
    if (!facts.networkCrypto()) {
      return plan(Kind.BARRIER, grid, threads, conf, reason).withTeams(conf.get(FoldCpConf.CP_TEAMS));
    }
    if (conf.get(FoldCpConf.ROUTE) == FoldCpConf.Route.AUTO) {
      return plan(Kind.SHUFFLE, grid, threads, conf, reason + "; but " + SparkKeys.NETWORK_CRYPTO + " = true and the TCP team's"
          + " frames are not encrypted, so the reshards go through Spark shuffles, which Spark encrypts");
    }
    throw BarrierPreflight.unencryptedTeam(conf.get(FoldCpConf.ROUTE).label());
  }

  /**
   * Why an NVSHMEM team of these settings cannot run, or null when nothing the driver can see
   * stands against it; {@code needExecutorGpus}: whether executors without a GPU resource count
   * against it (for auto; a forced team meets BarrierPreflight's resource rules instead).
   */
  private static String nvshmemCannotRun(FoldCpConf conf, SparkFacts facts, boolean needExecutorGpus) {
    if (!conf.get(FoldCpConf.GPU_ENABLED)) {
      return FoldCpConf.GPU_ENABLED.name() + " = false";
    }
    if (facts.localMode()) {
      return "local mode (master " + facts.master() + ") runs every rank in the driver's JVM, and an NVSHMEM team"
          + " needs one process per rank (use local-cluster[...] or a cluster with one executor per GPU)";
    }
    if (needExecutorGpus && !facts.executorGpus()) {
      return "the executors have no GPUs (" + SparkKeys.EXECUTOR_GPUS + " is not set)";
    }
    if (facts.executorsOnThisMachine()) {
      String why = facts.cpLibraryReason().apply(conf.nvshmemHome());
      if (why != null) {
        return "the CP GPU library cannot load on this machine, where the executors run: " + why;
      }
    }
    return null;
  }

  private static RoutePlan nvshmem(FoldCpConf conf, CpGrid grid, int threads, String reason) {
    // several teams: each its own NVSHMEM world (a process joins one world for life), formed
    // through its slice of the stage's allGather (BarrierRendezvous)
    return plan(Kind.BARRIER, grid, threads, conf, reason).withTeams(conf.get(FoldCpConf.CP_TEAMS)).withNvshmem(
        new RoutePlan.Nvshmem(conf.nvshmemHome(), conf.get(FoldCpConf.NVSHMEM_HEAP_BYTES),
            conf.get(FoldCpConf.NVSHMEM_STORE_ROUTE), conf.get(FoldCpConf.NVSHMEM_RESHARD)));
  }

  private static RoutePlan plan(Kind kind, CpGrid grid, int threads, FoldCpConf conf, String reason) {
    return RoutePlan.of(kind, grid, threads, conf, reason);
  }

  private static int parseTaskCpus(String raw) {
    try {
      return Integer.parseInt(raw.trim());
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(SparkKeys.TASK_CPUS, "'" + raw + "'", "must be an integer >= 1");
    }
  }
}
