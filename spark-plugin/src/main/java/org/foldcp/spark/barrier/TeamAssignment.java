package org.foldcp.spark.barrier;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.foldcp.ops.plan.CostModel;

/**
 * Which of a barrier stage's teams runs each complex: the complexes spread over the teams by their
 * work (a layer's FLOPs, 2BN^3D + 12BN^2D^2, the same for every layer of the stack), not by count:
 * largest first, each to the team with the least work so far (ties to the lowest team), so that
 * one N = 3000 complex and many N = 100 ones do not leave a team idle. Decided on the driver, once,
 * from every complex's shape; deterministic for a given set of complexes.
 */
public final class TeamAssignment implements Serializable {
  private static final long serialVersionUID = 1L;

  /** One complex as the planner sees it. */
  public record Complex(String id, int n, int dim) implements Serializable {}

  private final int teams;
  private final Map<String, Integer> teamOf;
  private final double[] work;

  private TeamAssignment(int teams, Map<String, Integer> teamOf, double[] work) {
    this.teams = teams;
    this.teamOf = teamOf;
    this.work = work;
  }

  /** The assignment of {@code complexes} (distinct ids) to {@code teams} teams, under layers of H = D. */
  public static TeamAssignment of(List<Complex> complexes, int teams) {
    return of(complexes, teams, 0);
  }

  /**
   * As {@link #of(List, int)} under layers of hidden width {@code hidden} (0: each complex's D):
   * a complex's work is its layer's FLOPs, the triangle's N^3 term scaling with H.
   */
  public static TeamAssignment of(List<Complex> complexes, int teams, int hidden) {
    if (teams < 1) {
      throw new IllegalArgumentException("teams = " + teams + ": must be >= 1");
    }
    List<Complex> order = new ArrayList<>(complexes);
    ToDoubleFunction<Complex> flops =
        c -> CostModel.flops(1, c.n(), c.dim(), hidden > 0 ? hidden : c.dim());
    order.sort(Comparator.comparingDouble((Complex c) -> -flops.applyAsDouble(c)).thenComparing(Complex::id));
    double[] work = new double[teams];
    Map<String, Integer> teamOf = new HashMap<>();
    for (Complex c : order) {
      int best = 0;
      for (int t = 1; t < teams; t++) {
        if (work[t] < work[best]) {
          best = t;
        }
      }
      if (teamOf.put(c.id(), best) != null) {
        throw new IllegalArgumentException("complex '" + c.id() + "' is listed twice");
      }
      work[best] += flops.applyAsDouble(c);
    }
    return new TeamAssignment(teams, teamOf, work);
  }

  public int teams() {
    return teams;
  }

  /** The team of complex {@code id}. */
  public int teamOf(String id) {
    Integer t = teamOf.get(id);
    if (t == null) {
      throw new IllegalStateException("complex '" + id + "' was not planned: the stage's input changed after the plan");
    }
    return t;
  }

  /** Each team's FLOPs per layer, by team. */
  public double[] work() {
    return work.clone();
  }

  /** How many complexes each team runs. */
  public int[] counts() {
    int[] c = new int[teams];
    teamOf.values().forEach(t -> c[t]++);
    return c;
  }
}
