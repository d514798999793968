package org.foldcp.ops.gpu.cp;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.foldcp.ops.cp.Sharding;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.gpu.LayerCache;
import org.foldcp.ops.gpu.PinnedTransfers;
import org.foldcp.ops.tensor.PairTensor;

/**
 * One rank of a team test, as its own process (NVSHMEM: one PE per process; several may share
 * one GPU). Usage: {@code CpTeamRank DIR RANK SIZE TIMEOUT_MS HEAP_BYTES}; reads DIR/cases.txt
 * (one {@link CpCase} per line), forms the team through a {@link FileRendezvous} in DIR/rv, runs
 * every case on its tile (a case with repeats staging each next forward's tile while one computes) and writes, per case, out-CASE-RANK.bin (the output tile, bf16), for a
 * case of one forward also again-CASE-RANK.bin (a second forward of the same tile in the same plan), or
 * err-CASE-RANK.txt (exception class and message), mem-CASE-RANK.txt for cases with repeats
 * (free device memory before, after the forwards and after close), then done-RANK.txt, and
 * finalizes NVSHMEM. A {@link TeamException} ends the process early (the team is broken). A case
 * with a {@link CpCase.Halt} for this rank kills the process in its forwards ({@link RankMain#haltAfter}).
 */
public final class CpTeamRank {
  private CpTeamRank() {}

  public static void main(String[] args) throws Exception {
    RankMain.main(args, "cases.txt", CpCase::parse, CpCase::name, CpTeamRank::run);
  }

  private static void run(Path dir, NvshmemTeam team, CpCase c) throws IOException {
    int rank = team.rank();
    long mark = org.foldcp.ops.gpu.MemoryLeakCheck.mark();
    long before = RankMain.quiescentFreeBytes(team);
    PairTensor out = null;
    long afterForwards;
    String route;
    // this process is the rank's executor: its host transfers, small enough that every tile of the
    // cases streams through the pool block by block (8 blocks of 1 MiB, two copy threads); rank 0's
    // stack makes its own native layers, the other ranks pin theirs in a layer cache as the
    // executor's (single-GPU library layers, as the cp = 1 backend's), so every team runs both ways
    try (GpuDevice device = GpuDevice.open(team.spec().device());
         PinnedTransfers transfers = new PinnedTransfers(device, 8, 1L << 20, 2);
         LayerCache cpLayers = rank == 0 ? null : new LayerCache(device, 8, LayerCache.SINGLE_GPU);
         CpGpuStack stack = new CpGpuStack(team, c.cpGrid(), c.n(), c.batch(), c.stack(rank), c.route(),
             c.reshard(), transfers, c.repeats() > 1, cpLayers)) {
      route = stack.route().label();
      if (stack.reshard() != c.reshard()) {
        throw new IllegalStateException("asked for reshard " + c.reshard() + ", the plan runs " + stack.reshard());
      }
      Path in = dir.resolve(c.tileFile(rank));
      var t = stack.tile();
      PairTensor tile = Files.exists(in) ? TileFiles.read(in, c.batch(), t.rows, t.cols, c.dim())
          : Sharding.tile(c.input(), t, c.n(), true);
      // repeats run as the barrier route runs a shape's complexes: each next tile staged into the
      // other buffer pair while the current one computes
      int repeats = Math.max(1, c.repeats());
      for (int k = 0; k < repeats; k++) {
        if (k == 0 || !stack.stagesAhead()) {
          stack.load(tile);
        }
        if (k + 1 < repeats && stack.stagesAhead()) {
          stack.stage(tile); // the next forward's tile, copied and uploaded while this one computes
        }
        stack.compute(false);
        out = stack.collect();
        if (c.halt().armsAt(rank, k + 1)) {
          RankMain.haltAfter(dir, rank, c.halt().delayMs(), c.halt().delayMs() > 0
              ? c.halt().delayMs() + " ms after forward " + (k + 1) + " of " + c.repeats() + " returned"
              : "between forwards " + (k + 1) + " and " + (k + 2) + " of " + c.repeats());
        }
      }
      if (c.repeats() <= 1 && c.halt().rank() < 0) {
        // a second forward of the same tile in the same plan: its output must be the first's bits
        // (the cp = 4 peer-route differences of 2026-12-06 came and went between runs; whether a
        // second forward repeats them tells a plan's first forward from any forward)
        stack.load(tile);
        stack.compute(false);
        TileFiles.write(dir.resolve("again-" + c.name() + "-" + rank + ".bin"), stack.collect());
      }
      afterForwards = RankMain.quiescentFreeBytes(team);
      RankMain.write(dir.resolve("route-" + c.name() + "-" + rank + ".txt"), route + " " + stack.bytesToChannels() + " "
          + stack.bytesToTokens());
    }
    long afterClose = RankMain.quiescentFreeBytes(team);
    if (c.repeats() > 1) {
      NvshmemTeam.Info info = team.info();
      RankMain.write(dir.resolve("mem-" + c.name() + "-" + rank + ".txt"), before + " " + afterForwards + " " + afterClose
          + " " + org.foldcp.ops.gpu.MemoryLeakCheck.openHandlesSince(mark).size() + " " + info.heapUsed());
    }
    TileFiles.write(dir.resolve("out-" + c.name() + "-" + rank + ".bin"), out);
  }
}
