package org.foldcp.spark.route;

import java.io.Serializable;
import java.util.Locale;
import java.util.Objects;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.gpu.NativeTriMul;
import org.foldcp.ops.gpu.cp.Reshard;
import org.foldcp.ops.gpu.cp.StoreRoute;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;

/**
 * How a route runs, decided on the driver before anything executes: which route, the backend,
 * how a barrier team moves its reshards (the transport, and for GPU teams the NVSHMEM settings),
 * the CP grid, CPU threads per task, and how long a barrier team waits for its members.
 * {@code reason} says why this route was chosen (logged and shown by explain()).
 */
public final class RoutePlan implements Serializable {
  private static final long serialVersionUID = 4L;

  /** The ways a TriMul stack can run on Spark (docs/design.md section 3). */
  public enum Kind {
    /** cp = 1: every complex whole in one task. */
    SINGLE,
    /** cp > 1: one barrier stage of cp tasks exchanging the reshards directly. */
    BARRIER,
    /** cp > 1: the two reshards as two Spark shuffles per layer. */
    SHUFFLE
  }

  /** Where a task computes. */
  public enum Backend {
    /** The CPU backend. */
    CPU,
    /** The task's GPU (sm_90); a task without one fails with the reason. */
    GPU,
    /** The task's GPU where it has a usable one, else the CPU (with a warning in the task log). */
    AUTO;

    /**
     * Where a whole complex (cp = 1) computes under {@code conf}: the CPU when route cpu forces
     * it or GPUs are disabled, the GPU when route gpu forces it, else the task's GPU where
     * usable. The one rule for the single route and for rows of foldcp_trimul.
     */
    public static Backend of(FoldCpConf conf) {
      if (!conf.get(FoldCpConf.GPU_ENABLED) || conf.get(FoldCpConf.ROUTE) == FoldCpConf.Route.CPU) {
        return CPU;
      }
      return conf.get(FoldCpConf.ROUTE) == FoldCpConf.Route.GPU ? GPU : AUTO;
    }

    /**
     * Where {@code stack} computes: AUTO becomes the CPU for a stack the GPU kernels do not take
     * ({@link RoutePlan#gpuKernelsTake}); GPU stays, and such a stack is refused on the GPU by name.
     */
    public Backend forStack(LayerStack stack) {
      return this == AUTO && !gpuKernelsTake(stack) ? CPU : this;
    }
  }

  /**
   * Whether the driver leaves {@code stack} to the GPU: the kernels take its widths D and H
   * ({@link NativeTriMul#gpuKernelsTake}, plain Java: no native library needed here), square or not.
   */
  public static boolean gpuKernelsTake(LayerStack stack) {
    return NativeTriMul.gpuKernelsTake(stack.dim(), stack.hidden());
  }

  /**
   * This plan for {@code stack}, decided on the driver: unchanged where the GPU kernels take the
   * stack; else an AUTO backend becomes the CPU (the reason says so), and a plan that forces
   * the GPU (route gpu, or GPU ranks in an NVSHMEM team) is refused naming the width, the rule and
   * the settings that help.
   */
  public RoutePlan forStack(LayerStack stack) {
    if (gpuKernelsTake(stack)) {
      return this;
    }
    int d = stack.dim();
    int h = stack.hidden();
    if (transport == Transport.NVSHMEM) {
      NativeTriMul.requireWidths(d, h, "the layer stack", "for GPU ranks in an NVSHMEM team (" + reason + "); CPU"
          + " ranks take it (spark.foldcp.cp.transport = tcp, or spark.foldcp.gpu.enabled = false)");
    }
    if (backend == Backend.GPU) {
      NativeTriMul.requireWidths(d, h, "the layer stack", "on the GPU (" + reason + "); the CPU backend takes it"
          + " (spark.foldcp.route = cpu or auto)");
    }
    String why = "layers of D = " + d + ", H = " + h + ": the GPU kernels need each to be " + NativeTriMul.WIDTH_RULE;
    Backend b = backend.forStack(stack); // the one rule: AUTO becomes the CPU
    return b == backend ? withReason(reason + "; " + why) : withBackend(b).withReason(reason + "; on the CPU: " + why);
  }

  /** How the ranks of a barrier plan exchange the reshards. */
  public enum Transport {
    /** No team: single-rank plans move nothing, shuffle plans move the reshards through Spark shuffles. */
    NONE,
    /** CPU ranks exchanging the payloads over a TCP mesh. */
    TCP,
    /** GPU ranks in one NVSHMEM team, the reshards fused into the kernels' stores. */
    NVSHMEM;

    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * What the GPU ranks of an NVSHMEM plan need: where NVSHMEM is ({@code home}, null to search),
   * the symmetric heap each rank reserves, and the store route their stacks ask for.
   */
  public record Nvshmem(String home, long heapBytes, StoreRoute storeRoute, Reshard reshard) implements Serializable {
    public Nvshmem {
      Objects.requireNonNull(storeRoute, "storeRoute");
      Objects.requireNonNull(reshard, "reshard");
    }

    /** Fused reshards (the default). */
    public Nvshmem(String home, long heapBytes, StoreRoute storeRoute) {
      this(home, heapBytes, storeRoute, Reshard.FUSED);
    }

    /** e.g. "store route auto, reshards fused, heap 16384 MiB per GPU, NVSHMEM from a search". */
    public String describe() {
      return "store route " + storeRoute.label() + ", reshards " + reshard.label() + ", heap " + (heapBytes >> 20) + " MiB per GPU, NVSHMEM from "
          + (home == null ? "a search (NVSHMEM_HOME, pip wheel, java.library.path)" : home);
    }
  }

  public final Kind kind;
  public final Backend backend;
  public final Transport transport;
  /** The GPU team's settings; null unless {@link #transport} is NVSHMEM. */
  public final Nvshmem nvshmem;
  public final CpGrid grid;
  public final int threadsPerTask;
  public final long barrierTimeoutMillis;
  public final long connectTimeoutMillis;
  public final String reason;
  /** Whether input holding NaN or Inf may go through (spark.foldcp.input.allowNonFinite); false: it fails. */
  public final boolean allowNonFinite;
  /** Which SQL metrics the operator keeps (spark.foldcp.metrics.level); not part of how the route runs. */
  public final FoldCpConf.MetricsLevel metricsLevel;
  /**
   * CP teams of a barrier stage (spark.foldcp.cp.teams): the stage runs teams x cp tasks; 1 for
   * other routes; {@link #AUTO_TEAMS} until the barrier route resolves it from the task slots.
   */
  public final int teams;
  /** {@link #teams} of a plan whose barrier route picks the number from the slots it finds (slots / cp). */
  public static final int AUTO_TEAMS = 0;

  /** A plan on the CPU backend; a barrier plan's team talks over TCP. */
  public RoutePlan(Kind kind, CpGrid grid, int threadsPerTask, long barrierTimeoutMillis, long connectTimeoutMillis,
                   String reason) {
    this(kind, Backend.CPU, grid, threadsPerTask, barrierTimeoutMillis, connectTimeoutMillis, reason);
  }

  /** A plan on {@code backend}; a barrier plan's team talks over TCP (so its backend must be the CPU). */
  public RoutePlan(Kind kind, Backend backend, CpGrid grid, int threadsPerTask, long barrierTimeoutMillis,
                   long connectTimeoutMillis, String reason) {
    this(kind, backend, kind == Kind.BARRIER ? Transport.TCP : Transport.NONE, null, grid, threadsPerTask,
        barrierTimeoutMillis, connectTimeoutMillis, reason);
  }

  /**
   * Every field. A barrier plan has a team: TCP with CPU ranks, or NVSHMEM with GPU ranks and
   * its settings; other kinds have none.
   */
  public RoutePlan(Kind kind, Backend backend, Transport transport, Nvshmem nvshmem, CpGrid grid, int threadsPerTask,
                   long barrierTimeoutMillis, long connectTimeoutMillis, String reason) {
    this(kind, backend, transport, nvshmem, grid, threadsPerTask, barrierTimeoutMillis, connectTimeoutMillis, reason,
        false, FoldCpConf.MetricsLevel.ESSENTIAL, 1);
  }

  private RoutePlan(Kind kind, Backend backend, Transport transport, Nvshmem nvshmem, CpGrid grid, int threadsPerTask,
                    long barrierTimeoutMillis, long connectTimeoutMillis, String reason, boolean allowNonFinite,
                    FoldCpConf.MetricsLevel metricsLevel, int teams) {
    this.allowNonFinite = allowNonFinite;
    this.teams = teams;
    this.metricsLevel = Objects.requireNonNull(metricsLevel, "metricsLevel");
    this.kind = Objects.requireNonNull(kind, "kind");
    this.backend = Objects.requireNonNull(backend, "backend");
    this.transport = Objects.requireNonNull(transport, "transport");
    this.nvshmem = nvshmem;
    this.grid = Objects.requireNonNull(grid, "grid");
    this.threadsPerTask = threadsPerTask;
    this.barrierTimeoutMillis = barrierTimeoutMillis;
    this.connectTimeoutMillis = connectTimeoutMillis;
    this.reason = reason;
    boolean consistent = switch (transport) {
      case NONE -> kind != Kind.BARRIER && nvshmem == null;
      case TCP -> kind == Kind.BARRIER && backend == Backend.CPU && nvshmem == null;
      case NVSHMEM -> kind == Kind.BARRIER && backend == Backend.GPU && nvshmem != null;
    };
    if (teams < AUTO_TEAMS || (teams != 1 && kind != Kind.BARRIER)) {
      throw new IllegalArgumentException("inconsistent route plan: " + describe() + ": " + teams + " teams (more than"
          + " one team per stage, or auto, is for the barrier route only)");
    }
    if (!consistent) {
      throw new IllegalArgumentException("inconsistent route plan: " + describe() + (nvshmem == null ? "" : ", "
          + nvshmem.describe()) + " (a barrier plan runs CPU ranks over TCP or GPU ranks in an NVSHMEM team"
          + " with its settings; other routes have no team)");
    }
  }

  /**
   * A plan of {@code kind} on the CPU backend with the timeouts and input check of {@code conf};
   * the other settings come from the caller (the route chooser decides them).
   */
  public static RoutePlan of(Kind kind, CpGrid grid, int threadsPerTask, FoldCpConf conf, String reason) {
    return new RoutePlan(kind, grid, threadsPerTask, conf.get(FoldCpConf.BARRIER_TIMEOUT_SECONDS) * 1000L,
        conf.get(FoldCpConf.CONNECT_TIMEOUT_MS), reason)
        .withAllowNonFinite(conf.get(FoldCpConf.INPUT_ALLOW_NON_FINITE))
        .withMetricsLevel(conf.get(FoldCpConf.METRICS_LEVEL));
  }

  /** A cp = 1 plan on the CPU backend with the default settings. */
  public static RoutePlan single(int threadsPerTask, String reason) {
    return of(Kind.SINGLE, CpGrid.oneD(1), threadsPerTask, FoldCpConf.defaults(), reason);
  }

  /** The same plan computing on {@code b}. */
  public RoutePlan withBackend(Backend b) {
    return new RoutePlan(kind, b, transport, nvshmem, grid, threadsPerTask, barrierTimeoutMillis,
        connectTimeoutMillis, reason, allowNonFinite, metricsLevel, teams);
  }

  /** The same plan with {@code why} as its reason. */
  public RoutePlan withReason(String why) {
    return new RoutePlan(kind, backend, transport, nvshmem, grid, threadsPerTask, barrierTimeoutMillis,
        connectTimeoutMillis, why, allowNonFinite, metricsLevel, teams);
  }

  /** The same plan letting input with NaN or Inf through ({@code allow}) or failing on it. */
  public RoutePlan withAllowNonFinite(boolean allow) {
    return new RoutePlan(kind, backend, transport, nvshmem, grid, threadsPerTask, barrierTimeoutMillis,
        connectTimeoutMillis, reason, allow, metricsLevel, teams);
  }

  /** The same plan keeping the operator's SQL metrics of {@code level}. */
  public RoutePlan withMetricsLevel(FoldCpConf.MetricsLevel level) {
    return new RoutePlan(kind, backend, transport, nvshmem, grid, threadsPerTask, barrierTimeoutMillis,
        connectTimeoutMillis, reason, allowNonFinite, level, teams);
  }

  /**
   * The same barrier plan forming {@code t} teams of cp ranks in its stage: TCP meshes of CPU
   * ranks, or NVSHMEM worlds of GPU ranks, one per team.
   */
  public RoutePlan withTeams(int t) {
    return new RoutePlan(kind, backend, transport, nvshmem, grid, threadsPerTask, barrierTimeoutMillis,
        connectTimeoutMillis, reason, allowNonFinite, metricsLevel, t);
  }

  /** Tasks of the barrier stage: teams x cp (once the number of teams is known). */
  public int stageTasks() {
    if (teams == AUTO_TEAMS) {
      throw new IllegalStateException("the teams of " + describe() + " are not resolved yet (BarrierRoute does it)");
    }
    return teams * grid.size();
  }

  /** The same barrier plan with GPU ranks in an NVSHMEM team. */
  public RoutePlan withNvshmem(Nvshmem settings) {
    return new RoutePlan(kind, Backend.GPU, Transport.NVSHMEM, Objects.requireNonNull(settings, "settings"), grid,
        threadsPerTask, barrierTimeoutMillis, connectTimeoutMillis, reason, allowNonFinite, metricsLevel, teams);
  }

  /**
   * e.g. "shuffle cp=4 grid=2x2 backend=cpu", "barrier cp=2 grid=2x1 backend=cpu transport=tcp",
   * "barrier cp=2 grid=2x1 backend=gpu transport=nvshmem storeRoute=auto reshard=fused".
   */
  public String describe() {
    StringBuilder sb = new StringBuilder(kind.name().toLowerCase(Locale.ROOT)).append(" cp=").append(grid.size())
        .append(" grid=").append(grid).append(" backend=").append(backend.name().toLowerCase(Locale.ROOT));
    if (transport != Transport.NONE) {
      sb.append(" transport=").append(transport.label());
    }
    if (teams != 1) {
      sb.append(" teams=").append(teams == AUTO_TEAMS ? "auto" : Integer.toString(teams));
    }
    if (nvshmem != null) {
      sb.append(" storeRoute=").append(nvshmem.storeRoute().label()).append(" reshard=")
          .append(nvshmem.reshard().label());
    }
    if (allowNonFinite) {
      sb.append(" allowNonFinite");
    }
    return sb.toString();
  }

  @Override
  public String toString() {
    return describe() + " (" + reason + ")";
  }
}
