package org.foldcp.spark.sql;

import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RoutePlan.Kind;

/**
 * Per-call overrides of the session's {@code spark.foldcp.*} settings for {@link FoldCp#apply}:
 * the route, the CP grid and the CPU threads per task. Each option stands for its key and goes
 * through the same validation, so an error names the key it maps to ({@code spark.foldcp.route},
 * {@code spark.foldcp.cp} and {@code spark.foldcp.grid}, {@code spark.foldcp.cpu.threads}).
 * Unset options keep the session's value. Immutable; every {@code with} returns a new instance.
 */
public final class FoldCpOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  private final String route;   // null: the session's
  private final CpGrid grid;    // null: the session's
  private final Integer threads; // null: the session's

  private FoldCpOptions(String route, CpGrid grid, Integer threads) {
    this.route = route;
    this.grid = grid;
    this.threads = threads;
  }

  /** No overrides: everything from the session's configuration. */
  public static FoldCpOptions fromConf() {
    return new FoldCpOptions(null, null, null);
  }

  /** {@code route}: auto, cpu, gpu, barrier or shuffle, as {@link FoldCpConf#ROUTE} takes it. */
  public FoldCpOptions withRoute(String route) {
    InvalidInputException.require(route != null, FoldCpConf.ROUTE.name(), "null", "must be " + FoldCpConf.ROUTE.values());
    return new FoldCpOptions(route, grid, threads);
  }

  /** Forces a route kind: SINGLE is the cpu route (cp = 1), BARRIER and SHUFFLE the CP routes. */
  public FoldCpOptions withRoute(Kind kind) {
    switch (kind) {
      case SINGLE:
        return withRoute(FoldCpConf.Route.CPU.label());
      case BARRIER:
        return withRoute(FoldCpConf.Route.BARRIER.label());
      case SHUFFLE:
        return withRoute(FoldCpConf.Route.SHUFFLE.label());
      default:
        throw new IllegalStateException("unhandled route kind " + kind);
    }
  }

  /** The CP grid, which also sets cp to its size. */
  public FoldCpOptions withGrid(CpGrid grid) {
    InvalidInputException.require(grid != null, FoldCpConf.GRID.name(), "null", "must be " + FoldCpConf.GRID.values());
    return new FoldCpOptions(route, grid, threads);
  }

  /** The CP grid as text: "4" (1-D, four row bands) or "2x2". */
  public FoldCpOptions withGrid(String grid) {
    return withGrid(CpGrid.parse(grid));
  }

  /** CPU threads per task; 0 means spark.task.cpus. */
  public FoldCpOptions withThreadsPerTask(int threadsPerTask) {
    return new FoldCpOptions(route, grid, threadsPerTask);
  }

  /** {@code settings} with these options written over the keys they stand for. */
  Map<String, String> applyTo(Map<String, String> settings) {
    Map<String, String> out = new LinkedHashMap<>(settings);
    if (route != null) {
      out.put(FoldCpConf.ROUTE.name(), route);
    }
    if (grid != null) {
      out.put(FoldCpConf.CP.name(), Integer.toString(grid.size()));
      out.put(FoldCpConf.GRID.name(), grid.toString());
    }
    if (threads != null) {
      out.put(FoldCpConf.CPU_THREADS.name(), Integer.toString(threads));
    }
    return out;
  }

  @Override
  public String toString() {
    return "FoldCpOptions(route=" + (route == null ? "(conf)" : route) + ", grid=" + (grid == null ? "(conf)" : grid)
        + ", threadsPerTask=" + (threads == null ? "(conf)" : threads) + ")";
  }
}
