package org.foldcp.ops.gpu.cp;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.foldcp.ops.gpu.GpuDevice;

/**
 * The body every rank process of a team test shares ({@link CpTeamRank}, {@link HeadsRank}).
 * Arguments {@code DIR RANK SIZE TIMEOUT_MS HEAP_BYTES}; reads the cases (one per line) from a
 * file in DIR, forms the team through a {@link FileRendezvous} in DIR/rv, runs each case and
 * writes err-CASE-RANK.txt for a case that threw, then done-RANK.txt, and finalizes NVSHMEM. A
 * team that cannot form writes err-team-RANK.txt and exits 3; a {@link TeamException} in a case
 * ends the process with {@link #TEAM_BROKEN} (the team is broken) through System.exit, whose
 * shutdown hook finalizes NVSHMEM only when the team is whole (NvshmemTeam.finalizeAtExit: the
 * native finalize returns at once for a broken team, which a peer that missed its timeout
 * marks), so a dead peer cannot hold the process. Files are written atomically, so the test
 * never reads half of one.
 */
final class RankMain {
  /** The exit status of a rank whose case failed with a {@link TeamException}: the team is broken. */
  static final int TEAM_BROKEN = 4;
  /** The exit status of a rank that halted on purpose ({@link #haltAfter}): a SIGKILLed process's, 128 + 9. */
  static final int HALTED = 137;

  private RankMain() {}

  /** One case on this rank's team; whatever it writes, it writes into {@code dir}. */
  interface Body<C> {
    void run(Path dir, NvshmemTeam team, C c) throws IOException;
  }

  static <C> void main(String[] args, String casesFile, Function<String, C> parse, Function<C, String> name,
      Body<C> body) throws IOException {
    Path dir = Paths.get(args[0]);
    int rank = Integer.parseInt(args[1]);
    int size = Integer.parseInt(args[2]);
    Duration timeout = Duration.ofMillis(Long.parseLong(args[3]));
    long heap = Long.parseLong(args[4]);
    List<C> cases = new ArrayList<>();
    for (String line : Files.readAllLines(dir.resolve(casesFile))) {
      if (!line.isBlank()) {
        cases.add(parse.apply(line));
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
    for (C c : cases) {
      Path err = dir.resolve("err-" + name.apply(c) + "-" + rank + ".txt");
      try {
        body.run(dir, team, c);
      } catch (TeamException e) {
        write(err, e.getClass().getName() + ": " + e.getMessage());
        System.exit(TEAM_BROKEN);
      } catch (RuntimeException e) {
        write(err, e.getClass().getName() + ": " + e.getMessage());
      }
    }
    NvshmemTeam.finalizeTeam();
    write(dir.resolve("done-" + rank + ".txt"), "ok");
    System.exit(0);
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

  /**
   * Kills this rank's process the way an executor JVM dies when it is killed: Runtime.halt, so no
   * shutdown hook runs (no NVSHMEM finalize, no plan closed, nothing signalled to the peers). With
   * {@code delayMs} > 0 from a daemon thread that long after the call, while the caller goes on;
   * else at once, in the caller. Just before, it leaves halt-RANK.txt, "EPOCH_MS what": when the
   * peers' timeout starts to run, and proof for the test that this death was the planned one.
   */
  static void haltAfter(Path dir, int rank, long delayMs, String what) {
    Runnable die = () -> {
      try {
        write(dir.resolve("halt-" + rank + ".txt"), System.currentTimeMillis() + " " + what);
      } catch (IOException e) {
        e.printStackTrace();  // dies all the same; the test then reports the rank as unfinished
      }
      Runtime.getRuntime().halt(HALTED);
    };
    if (delayMs <= 0) {
      die.run();
      return;
    }
    Thread t = new Thread(() -> {
      try {
        Thread.sleep(delayMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      die.run();
    }, "foldcp-test-halt");
    t.setDaemon(true);
    t.start();
  }

  static void write(Path p, String s) throws IOException {
    TileFiles.writeAtomically(p, s.getBytes(StandardCharsets.UTF_8));
  }
}
