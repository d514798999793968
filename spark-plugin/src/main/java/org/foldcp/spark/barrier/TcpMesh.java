package org.foldcp.spark.barrier;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.spark.config.FoldCpConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Connects one rank into the full mesh of its team: the lower rank of every pair connects, the
 * higher one accepts ({@link MeshAcceptor}), and a {@link Handshake} checks team id, team size
 * and both ranks and has both sides prove they hold the {@link TeamKey}, so a stray connection
 * is refused rather than taken for a peer. The rank accepts and makes all its
 * connections at once, so that one hung peer does not use up the time of the others; it all
 * ends by the connect timeout, with an error that names the ranks that did not join.
 */
final class TcpMesh {
  private static final Logger LOG = LoggerFactory.getLogger(TcpMesh.class);
  private static final int SOCKET_BUFFER_BYTES = 4 << 20;

  private final TcpTransport.Team team;
  private final TeamKey key;
  private final List<String> addresses;
  private final long connectTimeoutMillis;
  private final ExecutorService pool;
  private final PeerLink[] links;

  /** {@link #connect} fills {@code links} (by peer rank); {@code pool} runs the accepting and connecting. */
  TcpMesh(TcpTransport.Team team, TeamKey key, List<String> addresses, long connectTimeoutMillis, ExecutorService pool,
          PeerLink[] links) {
    this.team = team;
    this.key = key;
    this.addresses = addresses;
    this.connectTimeoutMillis = connectTimeoutMillis;
    this.pool = pool;
    this.links = links;
  }

  /** A listener on an ephemeral port of {@code bindAddress}, opened before the addresses are swapped. */
  static ServerSocket listen(TcpTransport.Team team, InetAddress bindAddress) {
    ServerSocket listener = null;
    try {
      listener = new ServerSocket();
      // accepted sockets inherit the receive buffer, which must be set before the handshake
      listener.setReceiveBufferSize(SOCKET_BUFFER_BYTES);
      listener.bind(new InetSocketAddress(bindAddress, 0), Math.max(50, 2 * team.size()));
      return listener;
    } catch (IOException e) {
      closeQuietly(listener);
      throw new IllegalStateException("rank " + team.rank() + " of team '" + team.teamId() + "' cannot listen on "
          + bindAddress.getHostAddress() + ": " + e.getMessage(), e);
    }
  }

  static void checkAddresses(TcpTransport.Team team, String own, List<String> addresses) {
    if (addresses == null || addresses.size() != team.size()) {
      throw new IllegalStateException("rank " + team.rank() + ": the rendezvous gave "
          + (addresses == null ? "no" : addresses.size()) + " addresses for a team of " + team.size());
    }
    if (!own.equals(addresses.get(team.rank()))) {
      throw new IllegalStateException("rank " + team.rank() + ": the rendezvous lists " + addresses.get(team.rank())
          + " for this rank, which listens on " + own + ": the ranks disagree on the rank order");
    }
  }

  /**
   * Connects every peer; on failure closes whatever it opened and names the ranks concerned. The
   * first failure also closes the listener, so that a formation already lost does not wait for
   * the lower ranks until the timeout.
   */
  void connect(ServerSocket listener) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(connectTimeoutMillis);
    CompletionService<Void> steps = new ExecutorCompletionService<>(pool);
    int count = 0;
    if (rank() > 0) {
      steps.submit(() -> {
        acceptLowerRanks(listener, deadline);
        return null;
      });
      count++;
    }
    for (int p = rank() + 1; p < size(); p++) {
      int peer = p;
      steps.submit(() -> {
        links[peer] = connectTo(peer, deadline);
        return null;
      });
      count++;
    }
    RuntimeException failure = null;
    for (int k = 0; k < count; k++) {
      Throwable t = failureOfNext(steps);
      if (t != null && failure == null) {
        failure = unchecked(t, rank(), "forming the team");
        closeQuietly(listener);
      } else if (t != null) {
        failure.addSuppressed(t);
      }
    }
    if (failure != null) {
      for (PeerLink link : links) {
        if (link != null) {
          link.close();
        }
      }
      throw failure;
    }
  }

  /** Lower ranks connect to this one; anything else that connects is refused and logged ({@link MeshAcceptor}). */
  private void acceptLowerRanks(ServerSocket listener, long deadline) throws IOException {
    new MeshAcceptor(team, key, addresses, links).run(listener, deadline, this::neverConnected);
  }

  private RuntimeException neverConnected(Set<Integer> missing) {
    return new IllegalStateException("rank " + rank() + " of team '" + teamId() + "': rank" + (missing.size() > 1 ? "s " : " ")
        + missing.toString().replaceAll("[\\[\\]]", "") + " did not connect within " + connectTimeoutMillis + " ms ("
        + FoldCpConf.CONNECT_TIMEOUT_MS.name() + "): never joined the team (failed, stuck, or cannot reach "
        + addresses.get(rank()) + ")");
  }

  private PeerLink connectTo(int peer, long deadline) {
    String address = addresses.get(peer);
    InetSocketAddress target = parseHostPort(address, peer);
    String who = "rank " + rank() + " of team '" + teamId() + "'";
    Socket s = new Socket();
    try {
      configure(s);
      s.connect(target, (int) Math.min(Integer.MAX_VALUE, Math.max(1, millisLeft(deadline))));
    } catch (SocketTimeoutException e) {
      closeQuietly(s);
      throw new IllegalStateException(who + " could not connect to rank " + peer + " at " + address + " within "
          + connectTimeoutMillis + " ms (" + FoldCpConf.CONNECT_TIMEOUT_MS.name() + "): rank " + peer + " is unreachable", e);
    } catch (IOException e) {
      closeQuietly(s);
      throw new IllegalStateException(who + " could not connect to rank " + peer + " at " + address + ": " + e.getMessage()
          + ": rank " + peer + " is not listening (it failed, or its host is unreachable)", e);
    }
    try {
      Handshake.connect(new DataInputStream(new DeadlineInputStream(s, deadline)),
          new DataOutputStream(new BufferedOutputStream(s.getOutputStream())),
          new Handshake.Hello(Handshake.VERSION, teamId(), size(), rank(), peer, TeamKey.nonce(Handshake.NONCE_BYTES)), key);
      return new PeerLink(rank(), peer, address, s);
    } catch (Handshake.Refused e) {
      closeQuietly(s);
      throw new IllegalStateException(who + ": rank " + peer + " at " + address + " refused the connection: "
          + e.getMessage(), e);
    } catch (SocketTimeoutException e) {
      closeQuietly(s);
      throw new IllegalStateException(who + ": rank " + peer + " at " + address + " took the TCP connection but did not"
          + " answer the handshake within " + connectTimeoutMillis + " ms (" + FoldCpConf.CONNECT_TIMEOUT_MS.name()
          + "): rank " + peer + " never joined the team", e);
    } catch (EOFException e) {
      closeQuietly(s);
      throw new IllegalStateException(who + ": rank " + peer + " at " + address
          + " closed the connection during the handshake: it failed while the team formed", e);
    } catch (IOException e) {
      closeQuietly(s);
      throw new IllegalStateException(who + ": the handshake with rank " + peer + " at " + address + " failed: " + e, e);
    }
  }

  static void configure(Socket s) throws IOException {
    s.setTcpNoDelay(true);
    s.setKeepAlive(true);
    s.setSendBufferSize(SOCKET_BUFFER_BYTES);
    s.setReceiveBufferSize(SOCKET_BUFFER_BYTES);
  }

  private int rank() {
    return team.rank();
  }

  private int size() {
    return team.size();
  }

  private String teamId() {
    return team.teamId();
  }

  /** "host:port", with an IPv6 literal in brackets. */
  static String hostPort(InetAddress host, int port) {
    String h = host.getHostAddress();
    return (host instanceof Inet6Address ? "[" + h + "]" : h) + ":" + port;
  }

  static InetSocketAddress parseHostPort(String address, int rank) {
    int colon = address == null ? -1 : address.lastIndexOf(':');
    if (colon <= 0) {
      throw InvalidInputException.of("address of rank " + rank, "'" + address + "'", "must look like host:port");
    }
    String host = address.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    try {
      return new InetSocketAddress(host, Integer.parseInt(address.substring(colon + 1)));
    } catch (IllegalArgumentException e) {
      throw InvalidInputException.of("address of rank " + rank, "'" + address + "'", "the port after ':' must be in [0, 65535]");
    }
  }

  /** Rethrows an Error as is; returns a RuntimeException as is, anything else wrapped with what the rank was doing. */
  static RuntimeException unchecked(Throwable t, int rank, String doing) {
    if (t instanceof Error) {
      throw (Error) t;
    }
    return t instanceof RuntimeException ? (RuntimeException) t
        : new IllegalStateException("rank " + rank + " failed " + doing + ": " + t, t);
  }

  /** The failure of the next step to finish, or of the wait for it (interrupted); null when it succeeded. */
  private static Throwable failureOfNext(CompletionService<Void> steps) {
    try {
      return failureOf(steps.take());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return e;
    }
  }

  /** The failure of a finished step, or null when it succeeded; an interrupted wait for it is the failure. */
  static Throwable failureOf(Future<Void> step) {
    try {
      step.get();
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return e;
    }
  }

  private static long millisLeft(long deadlineNanos) {
    return TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
  }

  static void closeQuietly(AutoCloseable c) {
    if (c != null) {
      try {
        c.close();
      } catch (Exception ignored) {
        // nothing left to release
      }
    }
  }
}
