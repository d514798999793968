package org.foldcp.ops.gpu.cp;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.foldcp.ops.gpu.GpuTests;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a stranger on the NVSHMEM team's bootstrap port does to a team that is forming (README,
 * "Security"). While a team of two forms on GPU 0, rank 0 listens on the TCP port its unique id
 * names (NVSHMEM's UID bootstrap); the test reads that port out of the unique id as the ranks'
 * rendezvous carries it, connects to it before rank 1 initialises, and then lets rank 1 go:
 * <ul>
 *   <li>garbage: one connection that sends 64 KiB of random bytes and closes, one that sends them
 *       and stays open;</li>
 *   <li>silent: a connection that sends nothing and stays open while the team forms.</li>
 * </ul>
 * The promise checked: the team forms (and passes a barrier), or every rank fails with an error
 * naming the cause within the team's timeout; no rank hangs (a rank still running at the timeout
 * plus a margin fails the test).
 */
@Tag("gpu")
@Tag("cp")
class BootstrapStrangerGpuTest {
  private static final long TIMEOUT_MS = 20_000;
  private static final long HEAP = 256L << 20;
  /** Beyond the team's timeout: JVM start, CUDA context, NVSHMEM's own teardown. */
  private static final long MARGIN_MS = 40_000;

  @BeforeAll
  static void teamRuns() {
    RankProcesses.assumeTeamRuns();
  }

  @Test
  void garbageOnTheBootstrapPortNeitherHangsNorBreaksTheTeam(@TempDir Path dir) throws Exception {
    formWithStrangers(dir, "garbage", addr -> {
      List<Socket> held = new ArrayList<>();
      byte[] junk = new byte[64 << 10];
      new Random(29).nextBytes(junk);
      try (Socket once = connect(addr)) {
        once.getOutputStream().write(junk);
      }
      Socket stays = connect(addr);
      OutputStream out = stays.getOutputStream();
      out.write(junk);
      out.flush();
      held.add(stays);
      return held;
    });
  }

  @Test
  void aSilentConnectionOnTheBootstrapPortNeitherHangsNorBreaksTheTeam(@TempDir Path dir) throws Exception {
    formWithStrangers(dir, "silent", addr -> List.of(connect(addr)));
  }

  /** Connects strangers to the bootstrap port; returns the sockets to hold open while the team forms. */
  @FunctionalInterface
  private interface Strangers {
    List<Socket> connect(InetSocketAddress bootstrap) throws IOException;
  }

  private static void formWithStrangers(Path dir, String what, Strangers strangers) throws Exception {
    Process r0 = start(dir, 0, false);
    Process r1 = start(dir, 1, true);
    List<Socket> held = new ArrayList<>();
    long t0 = System.currentTimeMillis();
    try {
      byte[] uid = uniqueIdOf(dir, r0, r1);
      InetSocketAddress bootstrap = bootstrapAddress(uid, 15_000);
      held.addAll(strangers.connect(bootstrap));
      System.out.println(what + ": strangers connected to rank 0's bootstrap port " + bootstrap);
      Files.writeString(dir.resolve("go"), "go");
      long deadline = t0 + 2 * TIMEOUT_MS + MARGIN_MS;
      for (Process p : List.of(r0, r1)) {
        if (!p.waitFor(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS)) {
          fail(what + ": a rank still ran " + (System.currentTimeMillis() - t0) + " ms after it started (team timeout "
              + TIMEOUT_MS + " ms): it hangs; logs: " + RankProcesses.logs(dir, 2));
        }
      }
    } finally {
      for (Socket s : held) {
        s.close();
      }
      r0.destroyForcibly();
      r1.destroyForcibly();
    }
    long took = System.currentTimeMillis() - t0;
    List<String> outcome = new ArrayList<>();
    int formed = 0;
    for (int r = 0; r < 2; r++) {
      Path done = dir.resolve("done-" + r + ".txt");
      Path err = dir.resolve("err-team-" + r + ".txt");
      if (Files.exists(done)) {
        formed++;
        outcome.add("rank " + r + ": " + Files.readString(dir.resolve("team-" + r + ".txt")));
      } else if (Files.exists(err)) {
        String msg = Files.readString(err);
        assertTrue(msg.contains("TeamException") && msg.length() > 40, what + ": rank " + r
            + " failed without naming a cause: " + msg);
        outcome.add("rank " + r + " failed: " + msg);
      } else {
        fail(what + ": rank " + r + " ended without forming the team or reporting why (exit "
            + (r == 0 ? r0 : r1).exitValue() + "); logs: " + RankProcesses.logs(dir, 2));
      }
    }
    System.out.println(what + ": " + (formed == 2 ? "the team formed" : formed == 0 ? "the team failed on every rank"
        : "the team formed on " + formed + " of 2 ranks") + " in " + took + " ms; " + String.join("; ", outcome));
    assertTrue(formed == 2 || formed == 0, what + ": one rank formed the team and the other did not: " + outcome);
    if (formed == 0) {
      assertTrue(took <= 2 * TIMEOUT_MS + MARGIN_MS, what + ": the failure took " + took + " ms");
    }
  }

  private static Process start(Path dir, int rank, boolean gated) throws IOException {
    Files.writeString(dir.resolve("stranger-cases.txt"), "");
    ProcessBuilder pb = GpuTests.testJvm(List.of(), List.of("-Xmx2g"), StrangerRank.class, List.of(dir.toString(),
        "" + rank, "2", "" + TIMEOUT_MS, "" + HEAP, gated ? "gate" : "free"), dir.resolve("rank-" + rank + ".log"));
    pb.environment().put("NVSHMEM_DISABLE_NVLS", "1");
    return pb.start();
  }

  /** Rank 0's unique id, from its message of rendezvous round 1 (NvshmemTeam's encoding). */
  private static byte[] uniqueIdOf(Path dir, Process r0, Process r1) throws Exception {
    Path f = dir.resolve("rv").resolve("round-1.rank-0");
    long deadline = System.currentTimeMillis() + TIMEOUT_MS + MARGIN_MS;
    while (!Files.exists(f)) {
      if (!r0.isAlive() || !r1.isAlive() || System.currentTimeMillis() > deadline) {
        fail("rank 0 never sent its unique id; logs: " + RankProcesses.logs(dir, 2));
      }
      Thread.sleep(20);
    }
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(Files.readAllBytes(f)))) {
      in.readUTF();
      in.readUTF();
      byte[] uid = new byte[in.readInt()];
      in.readFully(uid);
      return uid;
    }
  }

  /**
   * The socket address inside the unique id: a sockaddr_in (family 2, little-endian) or
   * sockaddr_in6 (family 10) whose port (big-endian) is one this machine listens on
   * (/proc/net/tcp and tcp6). Read this way rather than at a fixed offset, so that a change of
   * NVSHMEM's id layout fails here with a clear message instead of testing the wrong port. Waits
   * up to {@code waitMs} for the port to be listened on (the root may open it only when it
   * starts its init).
   */
  static InetSocketAddress bootstrapAddress(byte[] uid, long waitMs) throws IOException, InterruptedException {
    long deadline = System.currentTimeMillis() + waitMs;
    Set<Integer> listening = listeningPorts();
    InetSocketAddress found;
    while ((found = findAddress(uid, listening)) == null && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
      listening = listeningPorts();
    }
    if (found == null) {
      fail("no socket address of a listening port in the unique id (" + hex(uid) + ") within " + waitMs
          + " ms; listening: " + listening);
    }
    return found;
  }

  private static InetSocketAddress findAddress(byte[] uid, Set<Integer> listening) throws IOException {
    for (int k = 0; k + 8 <= uid.length; k += 2) {
      int family = (uid[k] & 0xff) | (uid[k + 1] & 0xff) << 8;
      int port = (uid[k + 2] & 0xff) << 8 | (uid[k + 3] & 0xff);
      if (port == 0 || !listening.contains(port)) {
        continue;
      }
      if (family == 2) {
        InetAddress a = InetAddress.getByAddress(Arrays.copyOfRange(uid, k + 4, k + 8));
        return new InetSocketAddress(a.isAnyLocalAddress() ? InetAddress.getLoopbackAddress() : a, port);
      }
      if (family == 10 && k + 24 <= uid.length) {
        InetAddress a = InetAddress.getByAddress(Arrays.copyOfRange(uid, k + 8, k + 24));
        return new InetSocketAddress(a.isAnyLocalAddress() ? InetAddress.getLoopbackAddress() : a, port);
      }
    }
    return null;
  }

  private static Set<Integer> listeningPorts() throws IOException {
    Set<Integer> ports = new HashSet<>();
    for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
      Path p = Path.of(table);
      if (!Files.exists(p)) {
        continue;
      }
      for (String line : Files.readAllLines(p, StandardCharsets.US_ASCII)) {
        String[] f = line.trim().split("\\s+");
        if (f.length > 3 && f[3].equals("0A")) { // TCP_LISTEN
          String local = f[1];
          ports.add(Integer.parseInt(local.substring(local.indexOf(':') + 1), 16));
        }
      }
    }
    return ports;
  }

  private static Socket connect(InetSocketAddress addr) throws IOException {
    Socket s = new Socket();
    s.connect(addr, 5_000);
    return s;
  }

  private static String hex(byte[] b) {
    StringBuilder sb = new StringBuilder();
    for (byte x : b) {
      sb.append(String.format("%02x", x));
    }
    return sb.toString();
  }
}
