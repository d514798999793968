package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;
import org.apache.spark.TaskKilledException;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.cp.TeamException;
import org.junit.jupiter.api.Test;

/**
 * The barrier stage's Rendezvous with a stand-in for BarrierTaskContext.allGather: bytes of any
 * value travel Base64 and come back in rank order, round after round; a round that does not
 * complete, or fails, ends in a TeamException naming the rank and the round.
 */
class BarrierRendezvousTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(20);

  /** An allGather for ranks that are threads: each round completes when every rank has sent. */
  private static final class ThreadsAllGather {
    private final int size;
    private final List<AtomicReferenceArray<String>> rounds = new ArrayList<>();
    private final List<CountDownLatch> arrived = new ArrayList<>();
    private final int[] calls;

    ThreadsAllGather(int size, int maxRounds) {
      this.size = size;
      this.calls = new int[size];
      for (int k = 0; k < maxRounds; k++) {
        rounds.add(new AtomicReferenceArray<>(size));
        arrived.add(new CountDownLatch(size));
      }
    }

    Function<String, String[]> forRank(int rank) {
      return message -> {
        int k;
        synchronized (calls) {
          k = calls[rank]++;
        }
        rounds.get(k).set(rank, message);
        arrived.get(k).countDown();
        try {
          if (!arrived.get(k).await(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("test allGather: round " + k + " incomplete");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
        String[] all = new String[size];
        for (int r = 0; r < size; r++) {
          all[r] = rounds.get(k).get(r);
        }
        return all;
      };
    }
  }

  @Test
  void bytesTravelBase64AndComeBackInRankOrderRoundAfterRound() throws Exception {
    int size = 3;
    ThreadsAllGather gather = new ThreadsAllGather(size, 2);
    ExecutorService pool = Executors.newFixedThreadPool(size);
    try {
      List<Future<List<List<byte[]>>>> results = new ArrayList<>();
      for (int r = 0; r < size; r++) {
        int rank = r;
        results.add(pool.submit(() -> {
          BarrierRendezvous rv = new BarrierRendezvous(0, 1, rank, size, gather.forRank(rank));
          assertEquals(rank, rv.rank());
          assertEquals(size, rv.size());
          // every byte value, an empty message (a rank with nothing to say), and a 128-byte unique id
          byte[] first = new byte[256];
          for (int i = 0; i < first.length; i++) {
            first[i] = (byte) (i + rank);
          }
          byte[] second = rank == 0 ? new byte[128] : new byte[0];
          return List.of(rv.allGather(first, TIMEOUT), rv.allGather(second, TIMEOUT));
        }));
      }
      for (Future<List<List<byte[]>>> f : results) {
        List<List<byte[]>> rounds = f.get(30, TimeUnit.SECONDS);
        assertEquals(size, rounds.get(0).size());
        for (int r = 0; r < size; r++) {
          byte[] want = new byte[256];
          for (int i = 0; i < want.length; i++) {
            want[i] = (byte) (i + r);
          }
          assertArrayEquals(want, rounds.get(0).get(r), "round 0, message of rank " + r);
          assertEquals(r == 0 ? 128 : 0, rounds.get(1).get(r).length, "round 1, message of rank " + r);
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Two teams of two in one barrier stage: the stage's allGather carries all four messages, and
   * each team's rendezvous sees its own slice (task t x cp + r is rank r of team t), round after
   * round, so each team's rank 0 hands its unique id to its own team only.
   */
  @Test
  void teamsOfOneStageEachSeeTheirOwnSlice() throws Exception {
    int cp = 2;
    int teams = 2;
    ThreadsAllGather gather = new ThreadsAllGather(cp * teams, 2);
    ExecutorService pool = Executors.newFixedThreadPool(cp * teams);
    try {
      List<Future<List<List<byte[]>>>> results = new ArrayList<>();
      for (int task = 0; task < cp * teams; task++) {
        int t = task;
        results.add(pool.submit(() -> {
          BarrierRendezvous rv = new BarrierRendezvous(RankPartitioner.teamOf(t, cp), teams,
              RankPartitioner.rankOf(t, cp), cp, gather.forRank(t));
          byte[] uid = rv.rank() == 0 ? new byte[] {(byte) (100 + t)} : new byte[0];
          return List.of(rv.allGather(new byte[] {(byte) t}, TIMEOUT), rv.allGather(uid, TIMEOUT));
        }));
      }
      for (int task = 0; task < cp * teams; task++) {
        List<List<byte[]>> rounds = results.get(task).get(30, TimeUnit.SECONDS);
        int team = task / cp;
        for (int r = 0; r < cp; r++) {
          assertArrayEquals(new byte[] {(byte) (team * cp + r)}, rounds.get(0).get(r), "task " + task + ", rank " + r);
        }
        assertArrayEquals(new byte[] {(byte) (100 + team * cp)}, rounds.get(1).get(0),
            "task " + task + ": its team's rank 0's unique id");
      }
    } finally {
      pool.shutdownNow();
    }
    BarrierRendezvous rv = new BarrierRendezvous(1, 2, 0, 2, message -> new String[] {message, message});
    TeamException e = assertThrows(TeamException.class, () -> rv.allGather(new byte[0], TIMEOUT));
    assertTrue(e.getMessage().startsWith("rank 0 of 2 in team 1 of 2, team formation round 0: the barrier allGather"
        + " returned 2 messages for 2 team(s) of 2 ranks"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new BarrierRendezvous(2, 2, 0, 2, m -> new String[0]));
  }

  @Test
  void aRoundThatDoesNotCompleteFailsWithinTheTimeoutNamingTheRank() {
    CountDownLatch never = new CountDownLatch(1);
    BarrierRendezvous rv = new BarrierRendezvous(0, 1, 1, 2, message -> {
      try {
        never.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return null;
    });
    long t0 = System.nanoTime();
    TeamException e = assertThrows(TeamException.class, () -> rv.allGather(new byte[] {1}, Duration.ofMillis(300)));
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertTrue(seconds < 5, "waited " + seconds + " s");
    assertTrue(e.getMessage().startsWith("rank 1 of 2, team formation round 0: not every rank of the team reached"
        + " this round within 300 ms (spark.foldcp.barrier.timeoutSeconds)"), e.getMessage());
  }

  @Test
  void aFailedAllGatherIsATeamExceptionAndAKillStaysAKill() {
    BarrierRendezvous failing = new BarrierRendezvous(0, 1, 0, 2, message -> {
      throw new IllegalStateException("coordinator gone");
    });
    TeamException e = assertThrows(TeamException.class, () -> failing.allGather(new byte[0], TIMEOUT));
    assertTrue(e.getMessage().startsWith("rank 0 of 2, team formation round 0: the barrier allGather failed:"),
        e.getMessage());
    assertTrue(e.getMessage().contains("coordinator gone"), e.getMessage());

    TaskKilledException kill = new TaskKilledException("stage cancelled");
    BarrierRendezvous killed = new BarrierRendezvous(0, 1, 0, 2, message -> {
      throw kill;
    });
    assertSame(kill, assertThrows(TaskKilledException.class, () -> killed.allGather(new byte[0], TIMEOUT)));
  }

  @Test
  void aWrongCountOrAForeignMessageIsNamed() {
    BarrierRendezvous short1 = new BarrierRendezvous(0, 1, 0, 3, message -> new String[] {message});
    TeamException e = assertThrows(TeamException.class, () -> short1.allGather(new byte[0], TIMEOUT));
    assertTrue(e.getMessage().contains("returned 1 messages for 1 team(s) of 3 ranks"), e.getMessage());
    BarrierRendezvous foreign = new BarrierRendezvous(0, 1, 0, 2, message -> new String[] {message, "not base64!"});
    e = assertThrows(TeamException.class, () -> foreign.allGather(new byte[0], TIMEOUT));
    assertTrue(e.getMessage().contains("the message of rank 1 is not Base64"), e.getMessage());
  }

  @Test
  void rankMustLieInTheTeam() {
    assertThrows(InvalidInputException.class, () -> new BarrierRendezvous(0, 1, 2, 2, m -> new String[0]));
    assertThrows(InvalidInputException.class, () -> new BarrierRendezvous(0, 1, 0, 0, m -> new String[0]));
  }
}
