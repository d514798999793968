package org.foldcp.spark.barrier;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkEnv;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.TeamMember;
import org.foldcp.ops.cp.TeamRankMap;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the cp tasks of a barrier stage into a CP team (DESIGN.md section 4): each task listens
 * for peers, announces itself with one allGather ({@link RankAnnouncement}), checks that the
 * team is complete and that all ranks agree on the work ({@link TeamWorkload}), then connects
 * the TCP mesh. The same steps will carry an NVSHMEM unique id instead of TCP addresses.
 *
 * <p>The rank is the partition index, which is also the logical CP rank: the tiles were
 * partitioned by rank before the stage, so the rank cannot be reassigned here. allGather lists
 * the messages in partition order, which is therefore also the team order.
 */
final class TeamFormation {
  private static final Logger LOG = LoggerFactory.getLogger(TeamFormation.class);

  /** A formed team: this rank's transport and the complexes all ranks run, in order. */
  record Formed(TcpTransport transport, List<ComplexShape> complexes) {}

  private TeamFormation() {}

  static Formed form(BarrierTaskContext ctx, RoutePlan plan, LayerStack stack, Collection<TileRecord> tiles) {
    CpGrid grid = plan.grid;
    int rank = ctx.partitionId();
    int tasks = ctx.getTaskInfos().length;
    if (tasks != grid.size()) {
      throw new IllegalStateException("rank " + rank + ": the barrier stage has " + tasks + " tasks, the team needs cp = "
          + grid.size() + " (grid " + grid + ")");
    }
    SparkEnv env = SparkEnv.get();
    // the host other executors already use to reach this one (block transfers): reachable by the peers
    String host = env.blockManager().blockManagerId().host();
    String executorId = env.executorId();
    String teamId = env.conf().getAppId() + "/stage-" + ctx.stageId() + "." + ctx.stageAttemptNumber();
    AtomicReference<List<ComplexShape>> complexes = new AtomicReference<>();
    TcpTransport transport = TcpTransport.open(new TcpTransport.Team(rank, grid.size(), teamId), bindAddress(host, rank),
        plan.connectTimeoutMillis, plan.barrierTimeoutMillis, own -> {
          RankAnnouncement mine = RankAnnouncement.of(rank, own, host, executorId, tiles, stack);
          String[] gathered = ctx.allGather(mine.encode());
          List<RankAnnouncement> team = new ArrayList<>();
          for (int r = 0; r < gathered.length; r++) {
            RankAnnouncement a = RankAnnouncement.decode(gathered[r], r);
            if (a.rank() != r) {
              throw new IllegalStateException("rank " + rank + ": allGather listed the announcement of rank " + a.rank()
                  + " in place " + r + ": the team order must be the partition order");
            }
            team.add(a);
          }
          checkMembers(team, grid);
          complexes.set(TeamWorkload.agree(team, grid));
          log(rank, teamId, team, complexes.get());
          List<String> addresses = new ArrayList<>();
          team.forEach(a -> addresses.add(a.address()));
          return addresses;
        });
    return new Formed(transport, complexes.get());
  }

  /** One process (listener) per rank, as many as the grid has ranks. */
  private static void checkMembers(List<RankAnnouncement> team, CpGrid grid) {
    List<TeamMember> members = new ArrayList<>();
    for (RankAnnouncement a : team) {
      members.add(new TeamMember(a.host(), TcpMesh.parseHostPort(a.address(), a.rank()).getPort()));
    }
    new TeamRankMap(grid, members);
  }

  private static InetAddress bindAddress(String host, int rank) {
    try {
      return InetAddress.getByName(host);
    } catch (UnknownHostException e) {
      throw new IllegalStateException("rank " + rank + ": the executor host '" + host + "' does not resolve to an address"
          + " to listen on for peers: " + e.getMessage(), e);
    }
  }

  private static void log(int rank, String teamId, List<RankAnnouncement> team, List<ComplexShape> complexes) {
    if (LOG.isInfoEnabled()) {
      HashSet<String> hosts = new HashSet<>();
      HashSet<String> executors = new HashSet<>();
      team.forEach(a -> {
        hosts.add(a.host());
        executors.add(a.host() + "/" + a.executorId());
      });
      LOG.info("barrier rank {} joins team '{}': {} ranks in {} executors on {} hosts, {} complexes, {} layers",
          rank, teamId, team.size(), executors.size(), hosts.size(), complexes.size(), team.get(0).layers().size());
    }
  }
}
