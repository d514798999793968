package org.foldcp.ops.cp;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.foldcp.ops.InvalidInputException;

/**
 * Maps logical CP ranks (positions in the grid) to team ranks (the order in which the barrier
 * tasks' allGather listed them, which is also the NVSHMEM PE order).
 *
 * <p>Logical ranks are assigned in (host, device) order, so that ranks of one host are
 * consecutive: the row groups of a 2-D grid then land on as few hosts as possible and their
 * traffic stays on NVLink. Every process computes the same map from the same allGather list.
 */
public final class TeamRankMap implements Serializable {
  private static final long serialVersionUID = 1L;

  private final CpGrid grid;
  private final List<TeamMember> members; // team-rank order
  private final int[] teamOfLogical;
  private final int[] logicalOfTeam;

  public TeamRankMap(CpGrid grid, List<TeamMember> membersInTeamOrder) {
    this.grid = grid;
    this.members = List.copyOf(membersInTeamOrder);
    InvalidInputException.require(members.size() == grid.size(), "team size", members.size(),
        "must equal cp = " + grid.size() + " (grid " + grid + "): one process per rank");
    Set<TeamMember> seen = new HashSet<>();
    for (TeamMember m : members) {
      InvalidInputException.require(seen.add(m), "team member", m,
          "appears twice: each rank needs its own device (one executor per GPU)");
    }
    List<Integer> order = new ArrayList<>();
    for (int t = 0; t < members.size(); t++) {
      order.add(t);
    }
    order.sort(Comparator.comparing((Integer t) -> members.get(t).host)
        .thenComparingInt(t -> members.get(t).device)
        .thenComparingInt(t -> t));
    teamOfLogical = new int[members.size()];
    logicalOfTeam = new int[members.size()];
    for (int logical = 0; logical < order.size(); logical++) {
      teamOfLogical[logical] = order.get(logical);
      logicalOfTeam[order.get(logical)] = logical;
    }
  }

  public CpGrid grid() { return grid; }

  public int teamRank(int logicalRank) {
    grid.checkRank(logicalRank);
    return teamOfLogical[logicalRank];
  }

  public int logicalRank(int teamRank) {
    grid.checkRank(teamRank);
    return logicalOfTeam[teamRank];
  }

  public TeamMember memberOfLogical(int logicalRank) {
    return members.get(teamRank(logicalRank));
  }

  /** True when both logical ranks run on one host (peer stores over NVLink are possible). */
  public boolean sameHost(int logicalA, int logicalB) {
    return memberOfLogical(logicalA).host.equals(memberOfLogical(logicalB).host);
  }

  /** Number of distinct hosts in the team. */
  public int hostCount() {
    Set<String> hosts = new HashSet<>();
    for (TeamMember m : members) {
      hosts.add(m.host);
    }
    return hosts.size();
  }
}
