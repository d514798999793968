package org.foldcp.spark.barrier;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.ReshardTransport;
import org.foldcp.spark.config.FoldCpConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reshards of a CP team over TCP, one socket per pair of ranks (a full mesh), for ranks in
 * different processes or hosts: the barrier tasks of the CPU route.
 *
 * <p>Forming the mesh: every rank listens on an ephemeral port, the ranks swap "host:port" and
 * random shares of the team's key through a {@link Rendezvous} (the barrier stage's allGather),
 * then the lower rank of every pair connects and the higher one accepts. A handshake states team
 * id, team size and both ranks, and both sides prove they hold the key, so a stray connection is
 * refused rather than taken for a peer. The listener is closed as soon as the mesh is formed (or
 * failed): a rank listens only while its team forms. Connecting is bounded by the connect
 * timeout; every later read by the read timeout.
 *
 * <p>An all-to-all writes to each peer on one thread and reads from it on another, so payloads
 * of any size cannot deadlock on full socket buffers. The first failure on any link ends the
 * round: this rank then {@link #abort}s, which sends each peer a notice naming the failed rank
 * and why, and closes every socket, so that peers waiting on it fail at once instead of at
 * their timeout.
 */
public final class TcpTransport implements ReshardTransport {
  private static final Logger LOG = LoggerFactory.getLogger(TcpTransport.class);
  /** How long an abort waits for its notices to go out before it closes the sockets anyway. */
  private static final long ABORT_NOTICE_MILLIS = 500;
  /**
   * After a broken link, how long to wait for a peer's own account of the failure (an abort
   * notice) before reporting the bare broken link.
   */
  private static final long PEER_ACCOUNT_MILLIS = 250;

  /**
   * Swaps this rank's "host:port" and its share of the team key ({@link TeamKey#newShare}) for
   * the addresses of all ranks, in rank order, and the team's key made of all shares.
   */
  @FunctionalInterface
  public interface Rendezvous {
    Roster exchange(String ownAddress, byte[] keyShare);
  }

  /** What the rendezvous gives every rank: the addresses in rank order and the team's key. */
  record Roster(List<String> addresses, TeamKey key) {}

  /** Who this rank is in which team. The team id must be the same on every rank and unique per team. */
  public record Team(int rank, int size, String teamId) {
    public Team {
      InvalidInputException.require(size >= 1, "team size", size, "must be >= 1");
      InvalidInputException.require(rank >= 0 && rank < size, "rank", rank, "must lie in [0, " + size + ")");
      InvalidInputException.require(teamId != null && !teamId.isEmpty(), "team id", "'" + teamId + "'",
          "must be a non-empty string shared by the whole team");
    }
  }

  private final Team team;
  private final List<String> addresses;
  private final long readTimeoutMillis;
  private final PeerLink[] links;
  private final ExecutorService pool;
  private final AtomicReference<Throwable> abortCause = new AtomicReference<>();
  private volatile boolean closed;
  private int round;
  private long bytesSent;

  private TcpTransport(Team team, List<String> addresses, long readTimeoutMillis) {
    this.team = team;
    this.addresses = List.copyOf(addresses);
    this.readTimeoutMillis = readTimeoutMillis;
    this.links = new PeerLink[team.size()];
    int rank = team.rank();
    // a writer and a reader per peer; while the mesh forms, the acceptor and the connectors
    this.pool = Executors.newFixedThreadPool(Math.max(1, 2 * (team.size() - 1)), r -> {
      Thread t = new Thread(r, "foldcp-tcp-rank-" + rank);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Listens on {@code bindAddress}, swaps addresses through {@code rendezvous} and connects the
   * mesh ({@link TcpMesh}). Fails, naming the ranks concerned, when a peer cannot be reached,
   * refuses, or does not join within {@code connectTimeoutMillis}. Later reads wait at most
   * {@code readTimeoutMillis} for a peer.
   */
  public static TcpTransport open(Team team, InetAddress bindAddress, long connectTimeoutMillis, long readTimeoutMillis,
                                  Rendezvous rendezvous) {
    InvalidInputException.require(connectTimeoutMillis >= 1, "connect timeout", connectTimeoutMillis + " ms", "must be >= 1 ms");
    InvalidInputException.require(readTimeoutMillis >= 1, "read timeout", readTimeoutMillis + " ms", "must be >= 1 ms");
    ServerSocket listener = TcpMesh.listen(team, bindAddress);
    String own = TcpMesh.hostPort(bindAddress, listener.getLocalPort());
    TcpTransport transport = null;
    try {
      Roster roster = rendezvous.exchange(own, TeamKey.newShare());
      TcpMesh.checkAddresses(team, own, roster.addresses());
      transport = new TcpTransport(team, roster.addresses(), readTimeoutMillis);
      long t0 = System.nanoTime();
      new TcpMesh(team, roster.key(), transport.addresses, connectTimeoutMillis, transport.pool, transport.links)
          .connect(listener);
      transport.applyReadTimeout();
      LOG.info("rank {} of team '{}' connected to {} peers in {} ms, listening on {} until then, key {}", team.rank(),
          team.teamId(), team.size() - 1, (System.nanoTime() - t0) / 1_000_000, own, roster.key());
      return transport;
    } catch (RuntimeException | Error e) {
      if (transport != null) {
        transport.close();
      }
      throw e;
    } finally {
      TcpMesh.closeQuietly(listener);
    }
  }

  @Override
  public int rank() {
    return team.rank();
  }

  @Override
  public int size() {
    return team.size();
  }

  public String teamId() {
    return team.teamId();
  }

  /** The address every rank listened on, in rank order, as the rendezvous gave them. */
  public List<String> addresses() {
    return addresses;
  }

  @Override
  public float[][] allToAll(float[][] outgoing) {
    requireUsable();
    if (outgoing.length != size()) {
      throw new IllegalArgumentException("payload count = " + outgoing.length + ": must equal the team size " + size());
    }
    int r = ++round;
    float[][] received = new float[size()][];
    received[rank()] = outgoing[rank()];
    CompletionService<Void> done = new ExecutorCompletionService<>(pool);
    List<Future<Void>> jobs = new ArrayList<>();
    for (PeerLink link : links) {
      if (link != null) {
        int p = link.peer();
        jobs.add(done.submit(() -> sendTo(link, r, outgoing[p])));
        jobs.add(done.submit(() -> {
          received[p] = receiveFrom(link, r);
          return null;
        }));
      }
    }
    Throwable failure = null;
    try {
      for (int k = 0; k < jobs.size() && failure == null; k++) {
        failure = TcpMesh.failureOf(done.take());
        if (failure != null && !(failure instanceof RankFailedException)) {
          failure = preferPeerAccount(failure, done, jobs.size() - k - 1);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      failure = new IllegalStateException("rank " + rank() + " was interrupted in reshard round " + r, e);
    }
    if (failure != null) {
      abort(failure);
      jobs.forEach(j -> j.cancel(true));
      throw TcpMesh.unchecked(failure, rank(), "in reshard round " + r);
    }
    for (int p = 0; p < size(); p++) {
      if (p != rank() && outgoing[p] != null) {
        bytesSent += (long) outgoing[p].length * Float.BYTES;
      }
    }
    return received;
  }

  @Override
  public long bytesSent() {
    return bytesSent;
  }

  /**
   * Marks this rank failed, tells every peer (which rank failed and why: the cause, or the
   * failed peer a {@link RankFailedException} names) and closes every socket. Idempotent.
   */
  @Override
  public void abort(Throwable cause) {
    Throwable c = cause != null ? cause : new IllegalStateException("aborted without a cause");
    if (!abortCause.compareAndSet(null, c)) {
      return;
    }
    int failed = c instanceof RankFailedException ? ((RankFailedException) c).failedRank() : rank();
    String reason = c instanceof RankFailedException ? ((RankFailedException) c).reason() : c.toString();
    LOG.warn("rank {} aborts team '{}': rank {} failed: {}", rank(), teamId(), failed, reason);
    // each notice on its own thread: a peer that stopped reading must not hold this rank up
    List<Thread> notices = new ArrayList<>();
    for (PeerLink link : links) {
      if (link != null) {
        Thread t = new Thread(() -> link.sendAbort(failed, reason, ABORT_NOTICE_MILLIS),
            "foldcp-abort-notice-" + rank() + "-to-" + link.peer());
        t.setDaemon(true);
        t.start();
        notices.add(t);
      }
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ABORT_NOTICE_MILLIS);
    try {
      for (Thread t : notices) {
        t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      closeLinks();
    }
  }

  @Override
  public void close() {
    closed = true;
    closeLinks();
    pool.shutdownNow();
  }


  private Void sendTo(PeerLink link, int r, float[] payload) {
    try {
      link.send(r, payload);
      return null;
    } catch (IOException e) {
      throw linkFailure(link, r, "sending to", e);
    }
  }

  private float[] receiveFrom(PeerLink link, int r) {
    try {
      return link.receive(r);
    } catch (IOException e) {
      throw linkFailure(link, r, "receiving from", e);
    }
  }

  private RuntimeException linkFailure(PeerLink link, int r, String doing, IOException e) {
    Throwable local = abortCause.get();
    int p = link.peer();
    if (local != null) {
      return new IllegalStateException("rank " + rank() + " stopped reshard round " + r + ": this rank aborted: " + local, local);
    }
    if (e instanceof SocketTimeoutException) {
      return new IllegalStateException("rank " + rank() + " waited more than " + readTimeoutMillis + " ms for rank " + p
          + " in reshard round " + r + " (" + FoldCpConf.BARRIER_TIMEOUT_SECONDS.name() + "): rank " + p
          + " is stuck, dead, or slower than the timeout", e);
    }
    if (e instanceof EOFException) {
      return new IllegalStateException("rank " + rank() + ": rank " + p + " closed its connection in reshard round " + r
          + ": it failed or was killed", e);
    }
    if (e instanceof ProtocolException) {
      return new IllegalStateException("rank " + rank() + ": " + e.getMessage(), e);
    }
    return new IllegalStateException("rank " + rank() + " lost its connection to rank " + p + " (" + link.address()
        + ") in reshard round " + r + " while " + doing + " it: " + e, e);
  }

  /**
   * A broken link is often the echo of a peer that failed and closed its sockets; its abort
   * notice says why. Waits briefly for the other links and prefers such a notice.
   */
  private static Throwable preferPeerAccount(Throwable first, CompletionService<Void> done, int pending)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(PEER_ACCOUNT_MILLIS);
    for (int k = 0; k < pending; k++) {
      Future<Void> f = done.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      if (f == null) {
        break;
      }
      Throwable t = TcpMesh.failureOf(f);
      if (t instanceof RankFailedException) {
        return t;
      }
    }
    return first;
  }

  private void requireUsable() {
    Throwable cause = abortCause.get();
    if (cause instanceof RankFailedException) {
      RankFailedException rf = (RankFailedException) cause;
      throw new RankFailedException(rank(), rf.failedRank(), rf.reason());
    }
    if (cause != null) {
      throw new IllegalStateException("rank " + rank() + ": the transport was aborted: " + cause, cause);
    }
    if (closed) {
      throw new IllegalStateException("rank " + rank() + ": the transport of team '" + teamId() + "' is closed");
    }
  }

  private void closeLinks() {
    for (PeerLink link : links) {
      if (link != null) {
        link.close();
      }
    }
  }

  private void applyReadTimeout() {
    for (PeerLink link : links) {
      if (link != null) {
        try {
          link.readTimeoutMillis(readTimeoutMillis);
        } catch (IOException e) {
          throw new IllegalStateException("rank " + rank() + ": cannot set the read timeout on " + link + ": " + e, e);
        }
      }
    }
  }
}
