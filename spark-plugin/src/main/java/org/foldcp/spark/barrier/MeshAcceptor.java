package org.foldcp.spark.barrier;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The accepting half of forming a TCP mesh: takes the connections of the lower ranks and runs
 * each handshake on its own thread, so that a connection that stalls (a slow-loris, a port
 * scanner, a stranger) delays nobody else. Each handshake must finish within
 * {@link #HANDSHAKE_MILLIS} of its connection, in total and not per read, and at most
 * {@link #MAX_PENDING} run at once; a connection beyond that is closed at once. Refusals are
 * logged with the remote address and the reason, never with key material.
 */
final class MeshAcceptor {
  private static final Logger LOG = LoggerFactory.getLogger(MeshAcceptor.class);
  /** How long one connection may take over its handshake; a rank's takes a round trip or two. */
  static final long HANDSHAKE_MILLIS = 3_000;
  /** Handshakes in progress at once: a team's lower ranks, with room for strangers. */
  static final int MAX_PENDING = 64;
  /** How often the accepting loop looks whether the team is complete. */
  private static final int POLL_MILLIS = 50;

  private final TcpTransport.Team team;
  private final TeamKey key;
  private final PeerLink[] links;
  private final List<String> addresses;
  /** Guards missing, pending and closed: a rank is claimed and its socket kept, or the socket closed, atomically. */
  private final Object lock = new Object();
  private final Set<Integer> missing = new TreeSet<>();
  private final Set<Socket> pending = new HashSet<>();
  private boolean closed;

  MeshAcceptor(TcpTransport.Team team, TeamKey key, List<String> addresses, PeerLink[] links) {
    this.team = team;
    this.key = key;
    this.addresses = addresses;
    this.links = links;
    for (int p = 0; p < team.rank(); p++) {
      missing.add(p);
    }
  }

  /**
   * Accepts until every lower rank joined; {@code neverJoined} builds the error when the deadline
   * passes first, from the ranks still missing.
   */
  void run(ServerSocket listener, long deadlineNanos, Function<Set<Integer>, RuntimeException> neverJoined)
      throws IOException {
    ExecutorService handshakes = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "foldcp-handshake-rank-" + team.rank());
      t.setDaemon(true);
      return t;
    });
    try {
      while (true) {
        synchronized (lock) {
          if (missing.isEmpty()) {
            return;
          }
        }
        long left = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
        if (left <= 0) {
          synchronized (lock) {
            throw neverJoined.apply(new TreeSet<>(missing));
          }
        }
        listener.setSoTimeout((int) Math.min(POLL_MILLIS, left));
        Socket s;
        try {
          s = listener.accept();
        } catch (SocketTimeoutException e) {
          continue;
        }
        if (!admitPending(s)) {
          LOG.warn("rank {} of team '{}' closed a connection from {} at once: {} handshakes are already in progress",
              team.rank(), team.teamId(), s.getRemoteSocketAddress(), MAX_PENDING);
          TcpMesh.closeQuietly(s);
          continue;
        }
        handshakes.execute(() -> handshake(s, Math.min(deadlineNanos,
            System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(HANDSHAKE_MILLIS))));
      }
    } finally {
      synchronized (lock) {
        closed = true;
        pending.forEach(TcpMesh::closeQuietly); // strangers still talking when the team is complete
        pending.clear();
      }
      handshakes.shutdownNow();
    }
  }

  private boolean admitPending(Socket s) {
    synchronized (lock) {
      return !closed && pending.size() < MAX_PENDING && pending.add(s);
    }
  }

  private void handshake(Socket s, long deadlineNanos) {
    try {
      TcpMesh.configure(s);
      DataInputStream in = new DataInputStream(new DeadlineInputStream(s, deadlineNanos));
      DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream()));
      Handshake.accept(in, out, team.teamId(), team.size(), team.rank(), key, TeamKey.nonce(Handshake.NONCE_BYTES),
          p -> claim(p, s));
    } catch (Handshake.Refused e) {
      LOG.warn("rank {} of team '{}' refused a connection from {}: {}", team.rank(), team.teamId(),
          s.getRemoteSocketAddress(), e.getMessage());
      drop(s);
    } catch (IOException | RuntimeException e) {
      LOG.warn("rank {} of team '{}' dropped a connection from {} during the handshake (which may take {} ms): {}",
          team.rank(), team.teamId(), s.getRemoteSocketAddress(), HANDSHAKE_MILLIS, e.toString());
      drop(s);
    }
  }

  /** Takes rank {@code p} for {@code s}, unless it is taken or the formation ended. */
  private boolean claim(int p, Socket s) {
    synchronized (lock) {
      if (closed || !missing.contains(p) || !pending.remove(s)) {
        return false;
      }
      try {
        links[p] = new PeerLink(team.rank(), p, addresses.get(p), s);
      } catch (IOException e) {
        pending.add(s);
        return false;
      }
      missing.remove(p);
      return true;
    }
  }

  private void drop(Socket s) {
    synchronized (lock) {
      pending.remove(s);
    }
    TcpMesh.closeQuietly(s);
  }
}
