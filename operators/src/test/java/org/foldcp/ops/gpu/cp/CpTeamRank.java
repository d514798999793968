package org.foldcp.ops.gpu.cp;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.foldcp.ops.cp.Sharding;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.gpu.GpuDevice;
import org.foldcp.ops.tensor.PairTensor;

/**
 * One rank of a team test, as its own process (NVSHMEM: one PE per process; several may share
 * one GPU). Usage: {@code CpTeamRank DIR RANK SIZE TIMEOUT_MS HEAP_BYTES}; reads DIR/cases.txt
 * (one {@link CpCase} per line), forms the team through a {@link FileRendezvous} in DIR/rv, runs
 * every case on its tile and writes, per case, out-CASE-RANK.bin (the output tile, bf16) or
 * err-CASE-RANK.txt (exception class and message), mem-CASE-RANK.txt for cases with repeats
 * (free device memory before, after the forwards and after close), then done-RANK.txt, and
 * finalizes NVSHMEM. A {@link TeamException} ends the process early (the team is broken).
 */
public final class CpTeamRank {
  private CpTeamRank() {}

  public static void main(String[] args) throws Exception {
    Path dir = Paths.get(args[0]);
    int rank = Integer.parseInt(args[1]);
    int size = Integer.parseInt(args[2]);
    Duration timeout = Duration.ofMillis(Long.parseLong(args[3]));
    long heap = Long.parseLong(args[4]);
    List<CpCase> cases = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve("cases.txt"))) {
      if (!line.isBlank()) {
        cases.add(CpCase.parse(line));
      }
    }
    NvshmemTeam team;
    try {
      team = NvshmemTeam.form(new NvshmemTeam.Spec(0, heap, timeout, null, "rank-process-" + rank + "-pid-"
          + ProcessHandle.current().pid()), new FileRendezvous(dir.resolve("rv"), rank, size));
    } catch (RuntimeException e) {
      write(dir.resolve("err-team-" + rank + ".txt"), e.getClass().getName() + ": " + e.getMessage());
      System.exit(3);
      return;
    }
    write(dir.resolve("team-" + rank + ".txt"), "rank " + team.rank() + " of " + team.size() + ", NVSHMEM "
        + NativeCp.nvshmemVersion() + " from " + NativeCp.hostLibrary());
    for (CpCase c : cases) {
      try {
        run(dir, team, c);
      } catch (TeamException e) {
        write(dir.resolve("err-" + c.name() + "-" + rank + ".txt"), e.getClass().getName() + ": " + e.getMessage());
        System.exit(4);
      } catch (RuntimeException e) {
        write(dir.resolve("err-" + c.name() + "-" + rank + ".txt"), e.getClass().getName() + ": " + e.getMessage());
      }
    }
    NvshmemTeam.finalizeTeam();
    write(dir.resolve("done-" + rank + ".txt"), "ok");
    System.exit(0);
  }

  private static void run(Path dir, NvshmemTeam team, CpCase c) throws IOException {
    int rank = team.rank();
    long mark = org.foldcp.ops.gpu.MemoryLeakCheck.mark();
    long before = quiescentFreeBytes(team);
    PairTensor out = null;
    long afterForwards;
    String route;
    try (CpGpuStack stack = new CpGpuStack(team, c.cpGrid(), c.n(), c.batch(), c.stack(rank), c.route(),
        c.reshard())) {
      route = stack.route().label();
      if (stack.reshard() != c.reshard()) {
        throw new IllegalStateException("asked for reshard " + c.reshard() + ", the plan runs " + stack.reshard());
      }
      Path in = dir.resolve(c.tileFile(rank));
      var t = stack.tile();
      PairTensor tile = Files.exists(in) ? TileFiles.read(in, c.batch(), t.rows, t.cols, c.dim())
          : Sharding.tile(c.input(), t, c.n(), true);
      for (int k = 0; k < Math.max(1, c.repeats()); k++) {
        out = stack.forward(tile);
      }
      afterForwards = quiescentFreeBytes(team);
      write(dir.resolve("route-" + c.name() + "-" + rank + ".txt"), route + " " + stack.bytesToChannels() + " "
          + stack.bytesToTokens());
    }
    long afterClose = quiescentFreeBytes(team);
    if (c.repeats() > 1) {
      NvshmemTeam.Info info = team.info();
      write(dir.resolve("mem-" + c.name() + "-" + rank + ".txt"), before + " " + afterForwards + " " + afterClose
          + " " + org.foldcp.ops.gpu.MemoryLeakCheck.openHandlesSince(mark).size() + " " + info.heapUsed());
    }
    TileFiles.write(dir.resolve("out-" + c.name() + "-" + rank + ".bin"), out);
  }

  /**
   * Free device memory while every rank is between two barriers (the ranks share one GPU, so a
   * reading taken while a peer allocates would move with it).
   */
  static long quiescentFreeBytes(NvshmemTeam team) {
    team.barrier();
    long free;
    try (GpuDevice dev = GpuDevice.open(0)) {
      dev.makeCurrent();
      dev.synchronize();
      free = dev.memInfo().free();
    }
    team.barrier();
    return free;
  }

  private static void write(Path p, String s) throws IOException {
    TileFiles.writeAtomically(p, s.getBytes(StandardCharsets.UTF_8));
  }
}
