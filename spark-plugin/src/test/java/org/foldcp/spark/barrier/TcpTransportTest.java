package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetAddress;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Three ranks on threads of this JVM, meeting over loopback TCP as barrier tasks would. */
class TcpTransportTest {
  private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
  private static final int CP = 3;

  private ExecutorService ranks;

  @BeforeEach
  void startRanks() {
    ranks = Executors.newFixedThreadPool(CP + 1);
  }

  @AfterEach
  void stopRanks() {
    ranks.shutdownNow();
  }

  private static TcpTransport open(int rank, ThreadRendezvous rv, String team, long connectMs, long readMs) {
    return TcpTransport.open(new TcpTransport.Team(rank, CP, team), LOOPBACK, connectMs, readMs, rv.forRank(rank));
  }

  /** Runs body(rank) for every rank on its own thread. */
  private <T> List<Future<T>> onEveryRank(IntFunction<T> body) {
    List<Future<T>> out = new ArrayList<>();
    for (int r = 0; r < CP; r++) {
      int rank = r;
      out.add(ranks.submit(() -> body.apply(rank)));
    }
    return out;
  }

  private static float[] payload(int src, int dst, int round) {
    float[] p = new float[1 + 1000 * src + 37 * dst + round];
    for (int q = 0; q < p.length; q++) {
      p[q] = src * 1e6f + dst * 1e4f + round * 100 + q * 0.5f;
    }
    return p;
  }

  private static Throwable failureOf(Future<?> f) throws InterruptedException {
    try {
      f.get(20, TimeUnit.SECONDS);
      throw new AssertionError("the rank was expected to fail");
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError("the rank hung", e);
    }
  }

  @Test
  void everyRankReceivesWhatEachPeerSentItOverSeveralRounds() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      ThreadRendezvous rv = new ThreadRendezvous(CP);
      List<Future<long[]>> done = onEveryRank(rank -> {
        try (TcpTransport t = open(rank, rv, "team-a", 10_000, 10_000)) {
          long expectSent = 0;
          for (int round = 1; round <= 3; round++) {
            float[][] out = new float[CP][];
            for (int dst = 0; dst < CP; dst++) {
              out[dst] = payload(rank, dst, round);
              expectSent += dst == rank ? 0 : 4L * out[dst].length;
            }
            if (round == 2) {
              out[(rank + 1) % CP] = null; // "no payload" travels as such
              expectSent -= 4L * payload(rank, (rank + 1) % CP, round).length;
            }
            float[][] in = t.allToAll(out);
            for (int src = 0; src < CP; src++) {
              if (round == 2 && (src + 1) % CP == rank) {
                assertNull(in[src], "rank " + rank + " round 2 from " + src);
              } else {
                assertArrayEquals(payload(src, rank, round), in[src], "rank " + rank + " round " + round + " from " + src);
              }
            }
          }
          return new long[] {t.bytesSent(), expectSent};
        }
      });
      for (Future<long[]> f : done) {
        long[] sent = f.get();
        assertEquals(sent[1], sent[0], "bytesSent counts the payload bytes to other ranks");
      }
    });
  }

  @Test
  void payloadsFarLargerThanSocketBuffersDoNotDeadlock() {
    assertTimeoutPreemptively(Duration.ofSeconds(120), () -> {
      ThreadRendezvous rv = new ThreadRendezvous(CP);
      int n = 6 << 20; // 24 MB to every peer, all ranks sending at once
      List<Future<Boolean>> done = onEveryRank(rank -> {
        try (TcpTransport t = open(rank, rv, "team-big", 10_000, 30_000)) {
          float[][] out = new float[CP][];
          for (int dst = 0; dst < CP; dst++) {
            out[dst] = new float[n];
            out[dst][0] = rank;
            out[dst][n - 1] = dst + 0.25f;
          }
          float[][] in = t.allToAll(out);
          for (int src = 0; src < CP; src++) {
            assertEquals(n, in[src].length);
            assertEquals(src, in[src][0]);
            assertEquals(rank + 0.25f, in[src][n - 1]);
          }
          return true;
        }
      });
      for (Future<Boolean> f : done) {
        assertTrue(f.get());
      }
    });
  }

  @Test
  void aRankThatFailsMakesItsPeersFailWithinASecondNamingIt() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      ThreadRendezvous rv = new ThreadRendezvous(CP);
      CompletableFuture<Long> abortedAt = new CompletableFuture<>();
      List<Future<Long>> done = onEveryRank(rank -> {
        // a read timeout of a minute: only the abort can end the peers' wait this soon
        try (TcpTransport t = open(rank, rv, "team-fail", 10_000, 60_000)) {
          if (rank == 2) {
            sleep(300); // the peers are waiting in the exchange by now
            abortedAt.complete(System.nanoTime());
            t.abort(new IllegalStateException("rank 2 ran out of memory"));
            return 0L;
          }
          try {
            t.allToAll(new float[CP][8]);
          } catch (RuntimeException e) {
            throw new FailedAt(System.nanoTime(), e);
          }
          return 0L;
        }
      });
      for (int r = 0; r < 2; r++) {
        Throwable t = failureOf(done.get(r));
        assertTrue(t instanceof FailedAt, String.valueOf(t));
        FailedAt f = (FailedAt) t;
        long afterAbort = f.nanos - abortedAt.get();
        assertTrue(afterAbort < TimeUnit.SECONDS.toNanos(1),
            "rank " + r + " failed " + afterAbort / 1e6 + " ms after the abort, not within a second");
        Throwable e = f.getCause();
        String m = e.getMessage();
        assertTrue(e instanceof RankFailedException, m);
        assertEquals(2, ((RankFailedException) e).failedRank());
        assertTrue(m.startsWith("rank " + r + ": rank 2 failed: ") && m.contains("rank 2 ran out of memory"), m);
      }
      done.get(2).get();
    });
  }

  /** A rank's failure and when it happened. */
  private static final class FailedAt extends RuntimeException {
    final long nanos;

    FailedAt(long nanos, RuntimeException cause) {
      super(cause);
      this.nanos = nanos;
    }
  }

  @Test
  void aRankThatNeverJoinsMakesThePeersTimeOutNamingIt() throws Exception {
    // rank 1 announced an address and then hung: its port takes connections but nobody answers
    try (ServerSocket silent = new ServerSocket(0, 50, LOOPBACK)) {
      assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
        ThreadRendezvous rv = new ThreadRendezvous(CP);
        rv.announce(1, TcpMesh.hostPort(LOOPBACK, silent.getLocalPort()));
        Future<TcpTransport> rank0 = ranks.submit(() -> open(0, rv, "team-missing", 1500, 10_000));
        Future<TcpTransport> rank2 = ranks.submit(() -> open(2, rv, "team-missing", 1500, 10_000));
        String m0 = failureOf(rank0).getMessage();
        assertTrue(m0.contains("rank 0 of team 'team-missing': rank 1 at ") && m0.contains("did not answer the handshake"
            + " within 1500 ms (spark.foldcp.transport.connectTimeoutMs): rank 1 never joined the team"), m0);
        String m2 = failureOf(rank2).getMessage();
        assertTrue(m2.contains("rank 2 of team 'team-missing': rank 1 did not connect within 1500 ms")
            && m2.contains("never joined the team"), m2);
      });
    }
  }

  @Test
  void aRankThatStopsExchangingMakesThePeersTimeOutNamingIt() {
    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
      ThreadRendezvous rv = new ThreadRendezvous(CP);
      CompletableFuture<Void> released = new CompletableFuture<>();
      List<Future<Object>> done = onEveryRank(rank -> {
        try (TcpTransport t = open(rank, rv, "team-stuck", 10_000, 800)) {
          if (rank == 1) {
            released.join(); // joined the team, then never reaches the exchange
            return null;
          }
          t.allToAll(new float[CP][4]);
          return null;
        }
      });
      try {
        for (int r : new int[] {0, 2}) {
          String m = failureOf(done.get(r)).getMessage();
          assertTrue(m.contains("waited more than 800 ms for rank 1 in reshard round 1"), m);
        }
      } finally {
        released.complete(null);
      }
    });
  }

  @Test
  void aStrayConnectionIsRefusedAndTheTeamStillForms() {
    assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
      ThreadRendezvous rv = new ThreadRendezvous(CP);
      CompletableFuture<Void> knocked = new CompletableFuture<>();
      CompletableFuture<String> strayAnswer = new CompletableFuture<>();
      List<Future<float[]>> done = new ArrayList<>();
      for (int r = 0; r < CP; r++) {
        int rank = r;
        TcpTransport.Rendezvous announce = rv.forRank(rank);
        TcpTransport.Rendezvous mine = (own, share) -> {
          if (rank == 2) {
            // while rank 2 listens, someone from another team knocks, ahead of every peer
            ranks.submit(() -> strayAnswer.complete(knock(own, "other-team", 2, knocked)));
          }
          knocked.join();
          return announce.exchange(own, share);
        };
        done.add(ranks.submit(() -> {
          try (TcpTransport t = TcpTransport.open(new TcpTransport.Team(rank, CP, "team-s"), LOOPBACK, 10_000, 10_000,
              mine)) {
            float[][] out = new float[CP][];
            for (int dst = 0; dst < CP; dst++) {
              out[dst] = new float[] {rank};
            }
            return t.allToAll(out)[(rank + 1) % CP];
          }
        }));
      }
      for (int r = 0; r < CP; r++) {
        assertArrayEquals(new float[] {(r + 1) % CP}, done.get(r).get());
      }
      String refusal = strayAnswer.get(10, TimeUnit.SECONDS);
      assertTrue(refusal != null && refusal.contains("team id 'other-team' differs from this team's 'team-s'"), refusal);
    });
  }

  /**
   * Connects as rank 0 of {@code team} to {@code address} and says hello, then completes
   * {@code sent}; returns the refusal, or null when accepted.
   */
  private static String knock(String address, String team, int to, CompletableFuture<Void> sent) {
    try (Socket s = new Socket()) {
      s.connect(TcpMesh.parseHostPort(address, to), 5000);
      s.setSoTimeout(5000);
      sent.complete(null);
      TeamKey someKey = TeamKey.of(List.of(TeamKey.newShare()), team, null);
      Handshake.connect(new DataInputStream(s.getInputStream()),
          new DataOutputStream(new BufferedOutputStream(s.getOutputStream())),
          new Handshake.Hello(Handshake.VERSION, team, CP, 0, to, TeamKey.nonce(Handshake.NONCE_BYTES)), someKey);
      return null;
    } catch (Handshake.Refused e) {
      return e.getMessage();
    } catch (Exception e) {
      sent.complete(null);
      return "no answer: " + e;
    }
  }

  @Test
  void aFrameOfAnotherRoundFailsLoudly() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 1, LOOPBACK);
         Socket client = new Socket(LOOPBACK, server.getLocalPort());
         Socket accepted = server.accept()) {
      PeerLink sender = new PeerLink(0, 1, "test", client);
      PeerLink receiver = new PeerLink(1, 0, "test", accepted);
      sender.send(5, new float[] {1, 2, 3});
      ProtocolException e = assertThrows(ProtocolException.class, () -> receiver.receive(4));
      assertTrue(e.getMessage().contains("rank 0 sent the payload of reshard round 5 while rank 1 is in round 4"),
          e.getMessage());
    }
  }

  @Test
  void framesCarryFloatsExactlyIncludingSpecialValues() throws Exception {
    try (ServerSocket server = new ServerSocket(0, 1, LOOPBACK);
         Socket client = new Socket(LOOPBACK, server.getLocalPort());
         Socket accepted = server.accept()) {
      PeerLink sender = new PeerLink(0, 1, "test", client);
      PeerLink receiver = new PeerLink(1, 0, "test", accepted);
      float[] values = new float[PeerLink.CHUNK_FLOATS * 2 + 3]; // crosses chunk boundaries
      for (int q = 0; q < values.length; q++) {
        values[q] = Float.intBitsToFloat(0x3f800000 + q * 7919);
      }
      values[1] = Float.NaN;
      values[2] = -0.0f;
      values[3] = Float.NEGATIVE_INFINITY;
      values[4] = Float.MIN_VALUE;
      Future<?> sent = ranks.submit(() -> {
        sender.send(1, values);
        return null;
      });
      float[] got = receiver.receive(1);
      sent.get();
      for (int q = 0; q < values.length; q++) {
        assertEquals(Float.floatToRawIntBits(values[q]), Float.floatToRawIntBits(got[q]), "float " + q);
      }
    }
  }

  @Test
  void cpRanksOverTcpReproduceTheSingleRankBackendBitForBit() {
    assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
      CpCase c = CpCase.of(CP, 7, 6, 11);
      ThreadRendezvous rv = new ThreadRendezvous(CP);
      List<Future<PairTensor>> done = onEveryRank(rank -> {
        try (TcpTransport t = open(rank, rv, "team-cp", 10_000, 30_000)) {
          return c.forward(rank, t);
        }
      });
      PairTensor[] out = new PairTensor[CP];
      for (int r = 0; r < CP; r++) {
        out[r] = done.get(r).get();
      }
      c.assertEqualsReference(out);
    });
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
