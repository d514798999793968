package org.foldcp.spark.barrier;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkEnv;
import org.foldcp.ops.cp.TileBounds;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.gpu.cp.CpGpuStack;
import org.foldcp.ops.gpu.cp.NativeCp;
import org.foldcp.ops.gpu.cp.NvshmemTeam;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.gpu.BorrowedGpu;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.route.TaskBackends;
import org.foldcp.spark.tiles.TileRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The body of one barrier task of a GPU team (transport nvshmem), that is one CP rank on its
 * executor's GPU: the NVSHMEM counterpart of {@link TcpRankTask}, with the same input (this rank's
 * layout tiles) and output (its output tiles cropped to N).
 * <ol>
 *   <li>checks that the CP GPU library loads in this executor and that the task has a usable
 *       GPU (the task's resource or the executor's, never device 0 by assumption);
 *   <li>agrees with its peers on the layers and the complexes ({@link TeamFormation#announce},
 *       the TCP team's announcement round), before NVSHMEM is touched;
 *   <li>forms, or reuses, this executor's NVSHMEM team ({@link NvshmemTeam#form}) through the
 *       stage's allGather ({@link BarrierRendezvous}): with several teams in the stage, each team
 *       is an NVSHMEM world of its own (its rank 0's unique id; a process belongs to one world);
 *   <li>borrows the executor's GPU as every task that computes there does ({@link
 *       TaskBackends#borrowGpu}: a permit, given back when the rank ends);
 *   <li>runs every complex through a {@link CpGpuStack}, its tile in and out through the executor's
 *       pinned pool and copy threads ({@link org.foldcp.spark.gpu.ExecutorGpu#transfers}), its
 *       native layers uploaded once per executor ({@link org.foldcp.spark.gpu.ExecutorGpu#cpLayers}), one stack per shape
 *       (N, D) at a time: complexes of one shape share a stack(), the next one's tile cut, copied
 *       and uploaded while one computes (where the device has room for a second tile), and a
 *       stack is closed (collectively, on every rank in the same order) before the next shape's is
 *       made, so the symmetric heap holds one plan at a time. One complex per output tile the
 *       consumer pulls ({@link RankOutput}).
 * </ol>
 * Any failure is rethrown naming this rank; a broken team stays a
 * {@link org.foldcp.ops.gpu.cp.TeamException}, on which the executor plugin recycles the executor.
 */
final class GpuRankTask extends RankBody {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(GpuRankTask.class);

  GpuRankTask(SharedStack stack, RoutePlan plan, RouteMetrics metrics) {
    super(stack, plan, metrics);
    if (plan.nvshmem == null) {
      throw new IllegalArgumentException("GPU ranks need an NVSHMEM plan, not " + plan);
    }
  }

  @Override
  Iterator<TileRecord> run(BarrierTaskContext ctx, Iterator<TileRecord> input) {
    int rank = RankPartitioner.rankOf(ctx.partitionId(), plan.grid.size());
    BorrowedGpu gpu = null;
    try {
      SparkEnv env = SparkEnv.get();
      String why = NativeCp.unavailableReason(plan.nvshmem.home());
      if (why != null) {
        throw new IllegalStateException(FoldCpConf.CP_TRANSPORT.name() + " = nvshmem, but the CP GPU library cannot"
            + " load in executor " + env.executorId() + ": " + why + "; or set " + FoldCpConf.CP_TRANSPORT.name()
            + "=tcp to run the ranks on the CPU");
      }
      int device = TaskBackends.requireTaskGpu();
      // the executor's GPU, borrowed like any task's, before the team meets: its permit for as long as the rank computes
      gpu = TaskBackends.borrowGpu(device);
      Map<String, TileRecord> mine = RankTiles.tilesOf(rank, input, plan.grid);
      String memberId = TeamFormation.memberId(env);
      TeamFormation.Agreement agreed = TeamFormation.announce(ctx, plan, stack(), mine.values(), memberId);
      NvshmemTeam team = NvshmemTeam.form(new NvshmemTeam.Spec(device, plan.nvshmem.heapBytes(),
          Duration.ofMillis(plan.barrierTimeoutMillis), plan.nvshmem.home(), memberId),
          new BarrierRendezvous(RankPartitioner.teamOf(ctx.partitionId(), plan.grid.size()), plan.teams, rank,
              plan.grid.size(), ctx::allGather));
      Map<String, List<ComplexShape>> shapes = byShape(agreed.complexes());
      List<ComplexShape> inShapeOrder = new ArrayList<>();
      shapes.values().forEach(inShapeOrder::addAll);
      return new RankOutput(RankPartitioner.teamOf(ctx.partitionId(), plan.grid.size()), rank, plan, metrics,
          inShapeOrder, new NvshmemRank(rank, team, gpu, mine, inShapeOrder, shapes.size()), ctx);
    } catch (RuntimeException | Error e) {
      if (gpu != null) {
        gpu.close();
      }
      throw RankBody.withRank(plan, rank, e);
    }
  }

  /**
   * A GPU rank's complexes, in shape order: a complex of a new shape closes the previous shape's
   * stack and makes its own, as every rank does at the same complex.
   */
  private final class NvshmemRank implements RankOutput.Rank {
    private final int rank;
    private final NvshmemTeam team;
    private final BorrowedGpu gpu; // the executor's GPU, borrowed for this task
    private final PinnedTransfers transfers; // the executor's
    private final Map<String, TileRecord> mine;
    private final List<ComplexShape> order; // the complexes as run() gets them
    private final int shapeCount;
    private int position; // index in order of the complex run() gets next
    private ComplexShape stagedFor; // the complex whose tile the stack staged, or null
    private TileRecord stagedTile;
    private CpGpuStack cp; // the stack of the current shape, or null
    private String shape = "";
    private String route = "";
    private int complexesRun;
    private int tilesOut;
    private long compute;
    private long toChannels;
    private long toTokens;

    NvshmemRank(int rank, NvshmemTeam team, BorrowedGpu gpu, Map<String, TileRecord> mine,
        List<ComplexShape> order, int shapeCount) {
      this.rank = rank;
      this.team = team;
      this.gpu = gpu;
      this.transfers = gpu.owner().transfers();
      this.mine = mine;
      this.order = List.copyOf(order);
      this.shapeCount = shapeCount;
    }

    @Override
    public TileRecord run(ComplexShape c) {
      String key = shapeKey(c);
      int at = position++;
      if (cp == null || !key.equals(shape)) {
        closeStack();
        // a second tile buffer pair only where another complex of this shape follows to stage into it
        boolean more = at + 1 < order.size() && shapeKey(order.get(at + 1)).equals(key);
        cp = new CpGpuStack(team, plan.grid, c.nTokens(), 1, stack(), plan.nvshmem.storeRoute(),
            plan.nvshmem.reshard(), transfers, more, gpu.owner().cpLayers());
        shape = key;
        route = cp.route().label();
      }
      complexesRun++;
      boolean wasStaged = c.equals(stagedFor);
      TileRecord in = wasStaged ? stagedTile : RankTiles.layoutTile(c, mine, plan.grid, rank, metrics);
      stagedFor = null;
      stagedTile = null;
      requireStackTile(cp.tile(), in, c, rank);
      long t0 = System.nanoTime();
      if (!wasStaged) {
        cp.load(in.tile);
      }
      // the next complex of this shape: its tile cut here, then copied and uploaded by the copy
      // threads while this one's kernels run (collect makes it the loaded tile)
      ComplexShape next = at + 1 < order.size() ? order.get(at + 1) : null;
      if (next != null && shapeKey(next).equals(key) && cp.stagesAhead()) {
        TileRecord nextTile = RankTiles.layoutTile(next, mine, plan.grid, rank, metrics);
        requireStackTile(cp.tile(), nextTile, next, rank);
        cp.stage(nextTile.tile);
        stagedFor = next;
        stagedTile = nextTile;
      }
      cp.compute(true); // NaN and Inf were refused before the stage (BarrierRoute)
      PairTensor y = cp.collect();
      long nanos = System.nanoTime() - t0;
      compute += nanos;
      metrics.computeNanos(nanos);
      metrics.fusedReshardBytes(cp.bytesToChannels(), cp.bytesToTokens());
      metrics.reshardBytes(cp.bytesToChannels() + cp.bytesToTokens());
      toChannels += cp.bytesToChannels();
      toTokens += cp.bytesToTokens();
      TileRecord o = RankTiles.output(c, in, y, metrics);
      if (o != null) {
        tilesOut++;
        metrics.gpuTiles(1);
      }
      return o;
    }

    @Override
    public void finish() {
      closeStack();
      gpu.close();
      LOG.info("barrier GPU rank {} (NVSHMEM PE {} of {}, GPU {}, store route {}): {} complexes in {} shapes, {}"
          + " output tiles, compute {} ms (fused reshards included), {} B token->channel and {} B channel->token sent",
          rank, team.rank(), team.size(), team.spec().device(), route, complexesRun, shapeCount, tilesOut,
          compute / 1_000_000, toChannels, toTokens);
    }

    /** Nothing to send: an NVSHMEM team has no abort, so the peers end at their timeout, in a TeamException naming this rank. */
    @Override
    public void abort(Throwable cause) {}

    @Override
    public void close() {
      try {
        closeStack();
      } finally {
        gpu.close();
      }
    }

    private void closeStack() {
      if (cp != null) {
        CpGpuStack closing = cp;
        cp = null;
        closing.close();
      }
    }
  }

  private static String shapeKey(ComplexShape c) {
    return c.nTokens() + "x" + c.dim();
  }

  /** The complexes grouped by (N, D), groups and members in the agreed order, so every rank makes the same stacks in the same order. */
  static Map<String, List<ComplexShape>> byShape(List<ComplexShape> complexes) {
    Map<String, List<ComplexShape>> groups = new LinkedHashMap<>();
    for (ComplexShape c : complexes) {
      groups.computeIfAbsent(shapeKey(c), k -> new ArrayList<>()).add(c);
    }
    return groups;
  }

  /** The route's layout and the GPU stack's must give this rank the same tile (ShardLayout's one layout for both). */
  private static void requireStackTile(TileBounds want, TileRecord in, ComplexShape c, int rank) {
    if (in.row0 != want.row0 || in.col0 != want.col0 || in.tile.rows() != want.rows || in.tile.cols() != want.cols) {
      throw new IllegalStateException("rank " + rank + ": its layout tile of complex " + c + " is (" + in.row0 + ", "
          + in.col0 + ", " + in.tile.rows() + ", " + in.tile.cols() + "), but the GPU stack expects " + want
          + ": the barrier route and the GPU CP layout disagree");
    }
  }
}
