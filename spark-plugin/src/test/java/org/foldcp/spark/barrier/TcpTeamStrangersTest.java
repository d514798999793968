package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Strangers at a forming TCP team: while the ranks listen, connections with a wrong key, garbage
 * bytes, nothing at all, or a valid hello one byte at a time (a slow-loris) knock at every
 * accepting rank, ahead of the real peers. Each is refused and closed within the handshake bound,
 * the team still forms, and the CP forward it then runs equals the single-rank reference. Once the
 * team is formed nobody listens any more.
 */
class TcpTeamStrangersTest {
  private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
  private static final int CP = 3;
  /** How long after connecting a stranger must be closed: the handshake bound, with room for a loaded machine. */
  private static final long REFUSED_WITHIN_MILLIS = MeshAcceptor.HANDSHAKE_MILLIS + 4_000;

  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void stop() {
    threads.shutdownNow();
  }

  /** What happened to one stranger: how long its connection lived and what it was told. */
  record Outcome(String kind, long aliveMillis, long closedAtNanos, String answer) {}

  /** How long rank 0 waits before connecting: the accepting ranks wait for it longer than a handshake may take. */
  private static final long RANK0_LATE_MILLIS = MeshAcceptor.HANDSHAKE_MILLIS + 1_500;

  @Test
  void strangersAreRefusedInBoundedTimeAndTheTeamStillComputesTheReference() {
    assertTimeoutPreemptively(Duration.ofSeconds(90), () -> {
      CpCase c = CpCase.of(CP, 9, 6, 21);
      ThreadRendezvous rv = new ThreadRendezvous(CP);
      List<Future<Outcome>> strangers = new ArrayList<>();
      List<String> listened = new ArrayList<>(List.of("", "", ""));
      // ranks 1 and 2 accept: four strangers connect to each before it may swap addresses
      CountDownLatch knocked = new CountDownLatch(2 * 4);
      List<Future<PairTensor>> done = new ArrayList<>();
      CompletableFuture<Long> formedAt = new CompletableFuture<>();
      for (int r = 0; r < CP; r++) {
        int rank = r;
        TcpTransport.Rendezvous announce = rv.forRank(rank);
        TcpTransport.Rendezvous withStrangers = (own, share) -> {
          listened.set(rank, own);
          if (rank > 0) {
            for (String kind : List.of("wrong key", "garbage", "silent", "one byte at a time")) {
              strangers.add(threads.submit(() -> stranger(kind, own, rank, knocked)));
            }
          }
          await(knocked);
          TcpTransport.Roster roster = announce.exchange(own, share);
          if (rank == 0) {
            TcpTransportTest.sleep(RANK0_LATE_MILLIS); // so the strangers must be closed by their own deadline, not by the team forming
          }
          return roster;
        };
        done.add(threads.submit(() -> {
          try (TcpTransport t = TcpTransport.open(new TcpTransport.Team(rank, CP, "team-strangers"), LOOPBACK, 20_000,
              20_000, withStrangers)) {
            formedAt.complete(System.nanoTime());
            return c.forward(rank, t);
          }
        }));
      }
      PairTensor[] out = new PairTensor[CP];
      for (int r = 0; r < CP; r++) {
        out[r] = done.get(r).get(60, TimeUnit.SECONDS);
      }
      c.assertEqualsReference(out);
      assertEquals(8, strangers.size());
      for (Future<Outcome> f : strangers) {
        Outcome o = f.get(30, TimeUnit.SECONDS);
        assertTrue(o.aliveMillis() < REFUSED_WITHIN_MILLIS, o + ": not closed within " + REFUSED_WITHIN_MILLIS + " ms");
        assertTrue(o.closedAtNanos() < formedAt.get(), o + ": closed only when the team had formed");
        if (o.kind().equals("wrong key")) {
          assertTrue(o.answer().contains("did not prove it holds the team key"), o.toString());
        } else {
          assertFalse(o.answer().contains("accepted"), o.toString());
        }
      }
      // the listeners closed with the formation: nobody can connect any more
      for (int r = 1; r < CP; r++) {
        String address = listened.get(r);
        assertThrows(ConnectException.class, () -> new Socket().connect(TcpMesh.parseHostPort(address, 1), 2000),
            "rank listening on " + address + " after its team formed");
      }
    });
  }

  /**
   * Connects to {@code address} as one kind of stranger, counts down {@code knocked} once
   * connected (and, but for the silent one, once it began to talk), and waits to be closed.
   */
  private static Outcome stranger(String kind, String address, int to, CountDownLatch knocked) {
    long t0 = System.nanoTime();
    String answer;
    try (Socket s = new Socket()) {
      s.connect(TcpMesh.parseHostPort(address, to), 5000);
      t0 = System.nanoTime();
      s.setSoTimeout((int) (REFUSED_WITHIN_MILLIS + 5_000));
      OutputStream raw = s.getOutputStream();
      switch (kind) {
        case "wrong key": {
          knocked.countDown();
          TeamKey wrong = TeamKey.of(List.of(TeamKey.newShare(), TeamKey.newShare(), TeamKey.newShare()),
              "team-strangers", null);
          Handshake.connect(new DataInputStream(s.getInputStream()), new DataOutputStream(new BufferedOutputStream(raw)),
              new Handshake.Hello(Handshake.VERSION, "team-strangers", CP, 0, to, TeamKey.nonce(Handshake.NONCE_BYTES)),
              wrong);
          answer = "accepted";
          break;
        }
        case "garbage":
          raw.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
          raw.flush();
          knocked.countDown();
          answer = drain(s.getInputStream());
          break;
        case "silent":
          knocked.countDown();
          answer = drain(s.getInputStream());
          break;
        default: { // a valid hello, one byte every 200 ms: each read is quick, the whole never ends
          ByteArrayOutputStream hello = new ByteArrayOutputStream();
          DataOutputStream h = new DataOutputStream(hello);
          h.writeInt(Handshake.HELLO);
          h.writeInt(Handshake.VERSION);
          h.writeUTF("team-strangers");
          h.writeInt(CP);
          h.writeInt(0);
          h.writeInt(to);
          h.write(new byte[Handshake.NONCE_BYTES]);
          byte[] bytes = hello.toByteArray();
          knocked.countDown();
          answer = "sent all " + bytes.length + " bytes unrefused";
          for (byte b : bytes) {
            try {
              raw.write(b);
              raw.flush();
              Thread.sleep(200);
            } catch (IOException e) {
              answer = "closed while sending: " + e;
              break;
            }
          }
          if (answer.startsWith("sent")) {
            answer = drain(s.getInputStream());
          }
          break;
        }
      }
    } catch (Handshake.Refused e) {
      answer = "refused: " + e.getMessage();
    } catch (IOException e) {
      answer = "closed: " + e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      answer = "interrupted";
    }
    long closed = System.nanoTime();
    return new Outcome(kind, TimeUnit.NANOSECONDS.toMillis(closed - t0), closed, answer);
  }

  /** Reads until the other side closes; says what came. */
  private static String drain(InputStream in) throws IOException {
    int count = 0;
    while (in.read() >= 0) {
      count++;
    }
    return "closed after " + count + " bytes from the rank";
  }

  private static void await(CountDownLatch latch) {
    try {
      if (!latch.await(20, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the strangers did not all connect");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
