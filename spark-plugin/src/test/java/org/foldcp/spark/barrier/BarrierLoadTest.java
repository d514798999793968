package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.gpu.MemoryLeakCheck;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

/**
 * Load: one barrier-route job (cp = 2, CPU ranks over TCP) over 200 complexes of mixed N, from 32
 * to 512 but mostly small, in Spark local mode. Every output equals the cp = 1 reference, and the
 * job leaves nothing behind, counted before and after rather than assumed: no fold-cp thread, no
 * file descriptor or socket, no heap growth beyond a bound, no direct or GPU-registered native memory.
 */
class BarrierLoadTest {
  private static final int D = 8;
  private static final int COMPLEXES = 200;
  /** Heap growth a job may leave behind (Spark's bookkeeping of one more job); the job's own data is far more. */
  private static final long HEAP_SLACK = 48L << 20;
  /** Descriptors Spark itself may add on a second job (lazily opened jars, shuffle files being deleted). */
  private static final int SPARK_SLACK = 8;

  /** N of complex {@code c}: 32..64 for most, a few up to 300, two of 512. */
  static int n(int c) {
    if (c < 160) {
      return 32 + (c * 37) % 33;
    }
    if (c < 190) {
      return 65 + (c * 53) % 96;
    }
    return c < 198 ? 161 + (c * 71) % 140 : 512;
  }

  @Test
  void twoHundredComplexesOfMixedNMatchTheReferenceAndLeaveNothingBehind() throws Exception {
    LayerStack stack = LayerStack.randomAlternating(2, D, 77L, true);
    List<TileRecord> in = new ArrayList<>();
    for (int c = 0; c < COMPLEXES; c++) {
      in.add(new TileRecord(String.format("c%03d", c), n(c), 0, 0, PairTensor.random(1, n(c), D, 1000L + c, 0.1)));
    }
    // two CPU threads per rank: the ranks' thread pools are counted too
    RoutePlan plan = new RoutePlan(RoutePlan.Kind.BARRIER, CpGrid.of(2, 1), 2, 120_000, 30_000, "load test");
    SparkSession spark = SparkSessions.local("local[2]");
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      // a first, small job starts whatever Spark starts once (pools, shuffle service, block manager)
      new BarrierRoute().run(jsc.parallelize(in.subList(0, 4), 2), stack, plan, RouteMetrics.NONE).collect();
      Resources before = Resources.settled();
      long mark = MemoryLeakCheck.mark();

      List<TileRecord> out = new BarrierRoute().run(jsc.parallelize(in, 4), stack, plan, RouteMetrics.NONE).collect();
      Map<String, PairTensor> got = BarrierRouteTest.reassemble(out);
      assertEquals(2 * COMPLEXES, out.size(), "one output tile per (complex, rank)");
      try (CpuTriMul cpu = new CpuTriMul(1)) {
        for (TileRecord x : in) {
          assertTrue(got.get(x.complexId).sameAs(cpu.forward(x.tile, stack)), x.complexId + " (N = " + x.nTokens + ")");
        }
      }
      out = null;
      got = null;

      Resources after = Resources.settled();
      System.out.println("[load] " + COMPLEXES + " complexes, N 32..512: before " + before + ", after " + after);
      System.out.println("[load] new threads: " + newThreads(before.threadNames(), after.threadNames()));
      System.out.println("[load] sockets before: " + before.socketNames() + ", after: " + after.socketNames());
      assertEquals(List.of(), MemoryLeakCheck.openHandlesSince(mark), "native handles left open");
      assertEquals(before.foldcpThreads(), after.foldcpThreads(), "fold-cp threads: " + after.foldcpThreadNames());
      // Spark's shuffle client may keep a pooled connection to its block manager's port; every other
      // socket open now was open before (the team's listeners and links are closed)
      assertEquals(List.of(), after.socketsNotTo(before.listeningPorts()).stream()
          .filter(sock -> !before.socketNames().contains(sock)).toList(), "sockets left open by the job");
      assertTrue(after.fds() - after.sockets() <= before.fds() - before.sockets() + SPARK_SLACK,
          "file descriptors other than sockets: " + before + " -> " + after);
      assertTrue(after.heapUsed() <= before.heapUsed() + HEAP_SLACK, "heap: " + before + " -> " + after);
      assertTrue(after.directBytes() <= before.directBytes() + (1L << 20), "direct memory: " + before + " -> " + after);
    } finally {
      SparkSessions.stop(spark);
    }
  }

  /** The names in {@code after} that {@code before} did not have (a multiset difference). */
  static List<String> newThreads(List<String> before, List<String> after) {
    List<String> left = new ArrayList<>(after);
    before.forEach(left::remove);
    return left;
  }

  /** What a job could leak, counted in this JVM. */
  record Resources(long heapUsed, long directBytes, List<String> threadNames, List<String> foldcpThreadNames, int fds,
                   List<String> socketNames) {
    int foldcpThreads() {
      return foldcpThreadNames.size();
    }

    int threads() {
      return threadNames.size();
    }

    int sockets() {
      return socketNames.size();
    }

    /** The ports listening now (Spark's RPC and block transfer services, before a job). */
    List<String> listeningPorts() {
      return socketNames.stream().filter(sock -> sock.endsWith("state 0A"))
          .map(sock -> sock.substring(4, sock.indexOf("->"))).toList();
    }

    /** The sockets whose ends are none of {@code ports} (":1234" each). */
    List<String> socketsNotTo(List<String> ports) {
      return socketNames.stream().filter(sock -> ports.stream().noneMatch(p -> sock.contains(p + "->")
          || sock.contains("->" + p + " "))).toList();
    }

    /**
     * Counts once fold-cp's threads have ended (pools end their threads asynchronously) and after
     * a full collection, so that the heap count is what is still referenced.
     */
    static Resources settled() throws IOException, InterruptedException {
      long deadline = System.nanoTime() + 10_000_000_000L;
      List<String> foldcp = liveFoldcpThreads();
      while (!foldcp.isEmpty() && System.nanoTime() < deadline) {
        Thread.sleep(100);
        foldcp = liveFoldcpThreads();
      }
      for (int k = 0; k < 3; k++) {
        System.gc();
        Thread.sleep(50);
      }
      Runtime rt = Runtime.getRuntime();
      long direct = 0;
      for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
        if (pool.getName().equals("direct")) {
          direct = pool.getMemoryUsed();
        }
      }
      Map<String, String> tcp = tcpByInode();
      int fds = 0;
      List<String> sockets = new ArrayList<>();
      try (Stream<Path> list = Files.list(Path.of("/proc/self/fd"))) {
        for (Path fd : (Iterable<Path>) list::iterator) {
          fds++;
          try {
            String target = Files.readSymbolicLink(fd).toString();
            if (target.startsWith("socket:[")) {
              String inode = target.substring(8, target.length() - 1);
              sockets.add(tcp.getOrDefault(inode, "socket " + inode));
            }
          } catch (IOException e) {
            // closed between listing and reading: not open any more
          }
        }
      }
      sockets.sort(null);
      return new Resources(rt.totalMemory() - rt.freeMemory(), direct, threadNames(""), foldcp, fds, sockets);
    }

    /** TCP sockets of this machine by inode, as "tcp :localPort->:remotePort state" (from /proc/net). */
    private static Map<String, String> tcpByInode() throws IOException {
      Map<String, String> out = new TreeMap<>();
      for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
        Path p = Path.of(table);
        if (!Files.isReadable(p)) {
          continue;
        }
        for (String line : Files.readAllLines(p).subList(1, Files.readAllLines(p).size())) {
          String[] f = line.trim().split("\\s+");
          out.put(f[9], "tcp :" + Integer.parseInt(f[1].substring(f[1].indexOf(':') + 1), 16) + "->:"
              + Integer.parseInt(f[2].substring(f[2].indexOf(':') + 1), 16) + " state " + f[3]);
        }
      }
      return out;
    }

    /** fold-cp's threads: its own (named foldcp-*) and the CPU backend's fork-join workers. */
    private static List<String> liveFoldcpThreads() {
      List<String> out = new ArrayList<>(threadNames("foldcp-"));
      out.addAll(threadNames("ForkJoinPool-"));
      return out;
    }

    private static List<String> threadNames(String prefix) {
      List<String> names = new ArrayList<>();
      for (Thread t : Thread.getAllStackTraces().keySet()) {
        if (t.getName().startsWith(prefix) && t.isAlive()) {
          names.add(t.getName());
        }
      }
      names.sort(null);
      return names;
    }

    @Override
    public String toString() {
      return String.format("heap %d MiB, direct %d KiB, %d threads (%d fold-cp), %d fds (%d sockets)",
          heapUsed >> 20, directBytes >> 10, threads(), foldcpThreads(), fds, sockets());
    }
  }

  /** Keeps the N distribution honest: mostly small, the range 32..512 covered. */
  @Test
  void theMixIsMostlySmallAndSpans32To512() {
    Map<Integer, Integer> byBand = new TreeMap<>();
    int min = Integer.MAX_VALUE;
    int max = 0;
    for (int c = 0; c < COMPLEXES; c++) {
      byBand.merge(n(c) <= 64 ? 64 : n(c) <= 160 ? 160 : 512, 1, Integer::sum);
      min = Math.min(min, n(c));
      max = Math.max(max, n(c));
    }
    assertEquals(32, min);
    assertEquals(512, max);
    assertEquals(Map.of(64, 160, 160, 30, 512, 10), byBand);
  }
}
