package org.foldcp.ops.gpu.cp;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;

/**
 * One rank of {@link BootstrapStrangerGpuTest}, as its own process. Arguments
 * {@code DIR RANK SIZE TIMEOUT_MS HEAP_BYTES GATE}: forms the team through a file rendezvous in
 * DIR/rv, then runs a barrier over the team (proof that a team formed while strangers sat on its
 * bootstrap port works). With GATE = "gate", this rank waits after the rendezvous, before it
 * initialises NVSHMEM, until the test writes DIR/go (the test connects its strangers to rank 0's
 * bootstrap port in between, so they are there while the team forms). Writes team-RANK.txt and
 * done-RANK.txt, or err-team-RANK.txt (exception and message) and exits 3.
 */
public final class StrangerRank {
  private StrangerRank() {}

  public static void main(String[] args) throws Exception {
    Path dir = Paths.get(args[0]);
    int rank = Integer.parseInt(args[1]);
    int size = Integer.parseInt(args[2]);
    Duration timeout = Duration.ofMillis(Long.parseLong(args[3]));
    long heap = Long.parseLong(args[4]);
    boolean gated = args.length > 5 && args[5].equals("gate");
    Rendezvous files = new FileRendezvous(dir.resolve("rv"), rank, size);
    Rendezvous rv = gated ? new Gated(files, dir.resolve("go"), rank, size) : files;
    long t0 = System.nanoTime();
    NvshmemTeam team;
    try {
      team = NvshmemTeam.form(new NvshmemTeam.Spec(0, heap, timeout, null, "stranger-rank-" + rank), rv);
      team.barrier();
    } catch (RuntimeException e) {
      RankMain.write(dir.resolve("err-team-" + rank + ".txt"), e.getClass().getName() + ": " + e.getMessage());
      System.exit(3);
      return;
    }
    RankMain.write(dir.resolve("team-" + rank + ".txt"), "rank " + team.rank() + " of " + team.size()
        + " formed and passed a barrier in " + (System.nanoTime() - t0) / 1_000_000 + " ms");
    NvshmemTeam.finalizeTeam();
    RankMain.write(dir.resolve("done-" + rank + ".txt"), "ok");
    System.exit(0);
  }

  /** A rendezvous that, after the round carrying the unique id (round 1), waits for a file. */
  private static final class Gated extends Rendezvous {
    private final Rendezvous inner;
    private final Path go;
    private int rounds;

    Gated(Rendezvous inner, Path go, int rank, int size) {
      super(rank, size);
      this.inner = inner;
      this.go = go;
    }

    @Override
    public List<byte[]> allGather(byte[] mine, Duration timeout) {
      List<byte[]> all = inner.allGather(mine, timeout);
      if (rounds++ == 1) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!Files.exists(go)) {
          if (System.nanoTime() > deadline) {
            throw new TeamException("the test did not open the gate " + go + " within " + timeout.toMillis() + " ms");
          }
          try {
            Thread.sleep(20);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TeamException("interrupted at the gate", e);
          }
        }
      }
      return all;
    }
  }
}
