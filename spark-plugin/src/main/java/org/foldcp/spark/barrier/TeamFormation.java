package org.foldcp.spark.barrier;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkEnv;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.TeamMember;
import org.foldcp.ops.cp.TeamRankMap;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.config.SparkKeys;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the tasks of a barrier stage into its CP teams of cp ranks (one, or spark.foldcp.cp.teams
 * of them; docs/design.md section 4): each task announces
 * itself with one allGather ({@link RankAnnouncement}) and checks that the team is complete and
 * that all ranks agree on the work ({@link TeamWorkload}). A TCP team ({@link #form}) listens for
 * its peers first, announces its address and then connects the mesh; a GPU team
 * ({@link #announce}) announces its NVSHMEM member id, and the NVSHMEM team forms afterwards
 * (GpuRankTask).
 *
 * <p>Task p is rank p % cp of team p / cp, that rank being the logical CP rank: the tiles were
 * partitioned by (team, rank) before the stage, so the rank cannot be reassigned here. allGather
 * lists the messages in partition order, so a team's members are one run of cp places in it.
 */
final class TeamFormation {
  private static final Logger LOG = LoggerFactory.getLogger(TeamFormation.class);

  /** A formed TCP team: this rank's transport and the complexes all ranks run, in order. */
  record Formed(TcpTransport transport, List<ComplexShape> complexes) {}

  /** What the ranks agreed on: every rank's announcement in rank order, and the complexes all run, in order. */
  record Agreement(List<RankAnnouncement> team, List<ComplexShape> complexes) {}

  private TeamFormation() {}

  static Formed form(BarrierTaskContext ctx, RoutePlan plan, LayerStack stack, Collection<TileRecord> tiles) {
    CpGrid grid = plan.grid;
    int rank = requireTeamSize(ctx, plan);
    int team = RankPartitioner.teamOf(ctx.partitionId(), grid.size());
    SparkEnv env = SparkEnv.get();
    // the host other executors already use to reach this one (block transfers): reachable by the peers
    String host = host(env);
    String teamId = teamId(env, ctx, plan);
    AtomicReference<List<ComplexShape>> complexes = new AtomicReference<>();
    String appSecret = appSecret(env);
    TcpTransport transport = TcpTransport.open(new TcpTransport.Team(rank, grid.size(), teamId), bindAddress(host, rank),
        plan.connectTimeoutMillis, plan.barrierTimeoutMillis, (own, share) -> {
          Agreement agreed = agree(ctx::allGather, team, rank, grid,
              RankAnnouncement.of(rank, own, host, env.executorId(), tiles, stack).withKeyShare(share));
          checkMembers(agreed.team(), grid);
          complexes.set(agreed.complexes());
          log(rank, teamId, agreed);
          return roster(agreed.team(), teamId, appSecret);
        });
    return new Formed(transport, complexes.get());
  }

  /** The addresses and the team key of the announcements of a TCP team, in rank order. */
  static TcpTransport.Roster roster(List<RankAnnouncement> team, String teamId, String appSecret) {
    List<String> addresses = new ArrayList<>();
    List<byte[]> shares = new ArrayList<>();
    for (RankAnnouncement a : team) {
      addresses.add(a.address());
      shares.add(a.keyShare());
    }
    return new TcpTransport.Roster(addresses, TeamKey.of(shares, teamId, appSecret));
  }

  /**
   * Spark's application secret when {@code spark.authenticate} is on (it then keys the team key:
   * {@link TeamKey}), else null. The secret is the one Spark's own RPC authenticates with.
   */
  static String appSecret(SparkEnv env) {
    if (!env.conf().getBoolean(SparkKeys.AUTHENTICATE, false)) {
      return null;
    }
    return env.securityManager().getSecretKey();
  }

  /**
   * The agreement of a GPU team, before NVSHMEM is touched: the same announcement round as a TCP
   * team, with this process's NVSHMEM member id ({@link #memberId}) in place of an address.
   * Fails when two ranks run in one executor process, since an NVSHMEM team needs one process
   * per rank.
   */
  static Agreement announce(BarrierTaskContext ctx, RoutePlan plan, LayerStack stack, Collection<TileRecord> tiles,
                            String memberId) {
    int rank = requireTeamSize(ctx, plan);
    SparkEnv env = SparkEnv.get();
    int team = RankPartitioner.teamOf(ctx.partitionId(), plan.grid.size());
    Agreement agreed = agree(ctx::allGather, team, rank, plan.grid,
        RankAnnouncement.of(rank, memberId, host(env), env.executorId(), tiles, stack));
    checkOneProcessPerRank(agreed.team());
    log(rank, teamId(env, ctx, plan), agreed);
    return agreed;
  }

  /**
   * One allGather of the ranks' announcements ({@code allGather}: BarrierTaskContext's, or a
   * test's), checked: every rank in its place, the same layers, the same complexes. The stage's
   * tasks are the teams one after another, cp each: team {@code teamIndex} is places
   * [teamIndex * cp, (teamIndex + 1) * cp) of the gathered list, and only those are its members.
   */
  static Agreement agree(Function<String, String[]> allGather, int teamIndex, int rank, CpGrid grid,
                         RankAnnouncement mine) {
    String[] gathered = allGather.apply(mine.encode());
    int cp = grid.size();
    if (gathered.length % cp != 0 || (teamIndex + 1) * cp > gathered.length) {
      throw new IllegalStateException("rank " + rank + " of team " + teamIndex + ": allGather returned "
          + gathered.length + " announcements, not a whole number of teams of cp = " + cp);
    }
    List<RankAnnouncement> team = new ArrayList<>();
    for (int r = 0; r < cp; r++) {
      RankAnnouncement a = RankAnnouncement.decode(gathered[teamIndex * cp + r], r);
      if (a.rank() != r) {
        throw new IllegalStateException("rank " + rank + ": allGather listed the announcement of rank " + a.rank()
            + " in place " + r + ": the team order must be the partition order");
      }
      team.add(a);
    }
    return new Agreement(team, TeamWorkload.agree(team, grid));
  }

  /** This process as an NVSHMEM team member: executor id, host and process id. */
  static String memberId(SparkEnv env) {
    return "executor " + env.executorId() + "@" + host(env) + " pid " + ProcessHandle.current().pid();
  }

  /**
   * The rank of this task within its team, after checking that the stage has one task per rank of
   * every team (teams x cp).
   */
  private static int requireTeamSize(BarrierTaskContext ctx, RoutePlan plan) {
    CpGrid grid = plan.grid;
    int rank = RankPartitioner.rankOf(ctx.partitionId(), grid.size());
    int tasks = ctx.getTaskInfos().length;
    if (tasks != plan.stageTasks()) {
      throw new IllegalStateException("rank " + rank + ": the barrier stage has " + tasks + " tasks, its "
          + plan.teams + " team(s) need cp = " + grid.size() + " (grid " + grid + ") each");
    }
    return rank;
  }

  private static String host(SparkEnv env) {
    return env.blockManager().blockManagerId().host();
  }

  private static String teamId(SparkEnv env, BarrierTaskContext ctx, RoutePlan plan) {
    String stage = env.conf().getAppId() + "/stage-" + ctx.stageId() + "." + ctx.stageAttemptNumber();
    return plan.teams == 1 ? stage
        : stage + "/team-" + RankPartitioner.teamOf(ctx.partitionId(), plan.grid.size());
  }

  /** Distinct NVSHMEM member ids (announced as the address): two ranks in one process cannot both be PEs. */
  static void checkOneProcessPerRank(List<RankAnnouncement> team) {
    Map<String, Integer> first = new HashMap<>();
    for (RankAnnouncement a : team) {
      Integer other = first.putIfAbsent(a.address(), a.rank());
      if (other != null) {
        throw new IllegalStateException("ranks " + other + " and " + a.rank() + " run in one executor process ("
            + a.address() + "), and an NVSHMEM team needs one process per rank: give each task its executor's"
            + " whole GPU (spark.executor.resource.gpu.amount=1, spark.task.resource.gpu.amount=1), or use "
            + FoldCpConf.CP_TRANSPORT.name() + "=tcp");
      }
    }
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

  private static void log(int rank, String teamId, Agreement agreed) {
    if (LOG.isInfoEnabled()) {
      HashSet<String> hosts = new HashSet<>();
      HashSet<String> executors = new HashSet<>();
      agreed.team().forEach(a -> {
        hosts.add(a.host());
        executors.add(a.host() + "/" + a.executorId());
      });
      LOG.info("barrier rank {} joins team '{}': {} ranks in {} executors on {} hosts, {} complexes, {} layers",
          rank, teamId, agreed.team().size(), executors.size(), hosts.size(), agreed.complexes().size(),
          agreed.team().get(0).layers().size());
    }
  }
}
