package org.foldcp.spark.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The barrier route streams its output: a rank computes a complex when its consumer pulls the
 * complex's tile, so the first tile leaves before the last complex is computed (counted, not
 * timed). The barrier's rules hold: a consumer that stops early still lets every rank run every
 * complex, and one that fails between pulls makes the peers fail at once, naming its rank.
 */
class BarrierStreamingTest {
  private static final int D = 8;
  private static final int COMPLEXES = 4;
  private static final LayerStack STACK = LayerStack.randomAlternating(2, D, 5, true);
  private static final CpGrid GRID = CpGrid.oneD(2);
  /** Peers wait this long for a rank: only an abort can end a wait within the tests' bounds. */
  private static final RoutePlan PLAN = new RoutePlan(RoutePlan.Kind.BARRIER, GRID, 1, 120_000, 10_000, "test");

  private static SparkSession spark;
  private static JavaSparkContext jsc;

  @BeforeAll
  static void start() {
    spark = SparkSessions.local("local[2]");
    jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
  }

  @AfterAll
  static void stop() {
    SparkSessions.stop(spark);
  }

  private static JavaRDD<TileRecord> complexes() {
    Map<String, PairTensor> in = new LinkedHashMap<>();
    for (int c = 0; c < COMPLEXES; c++) {
      in.put("complex-" + c, PairTensor.random(1, 16, D, 300 + c, 0.1));
    }
    return jsc.parallelize(BarrierRouteTest.whole(in), 2);
  }

  /**
   * Counts the complexes each rank has computed (a rank reports compute time once per complex).
   * Tasks get serialized copies, so the counts live in a static map under the copy's name, which
   * works in local mode, where tasks run in the test's JVM.
   */
  private static final class ComputedComplexes implements RouteMetrics {
    private static final long serialVersionUID = 1L;
    private static final Map<String, AtomicInteger> COUNTS = new ConcurrentHashMap<>();
    private final String name;

    ComputedComplexes(String name) {
      this.name = name;
    }

    static int of(String name, int rank) {
      AtomicInteger n = COUNTS.get(name + "#" + rank);
      return n == null ? 0 : n.get();
    }

    @Override
    public void computeNanos(long nanos) {
      COUNTS.computeIfAbsent(name + "#" + TaskContext.getPartitionId(), k -> new AtomicInteger()).incrementAndGet();
    }
  }

  @Test
  void theFirstTileLeavesBeforeTheSecondComplexIsComputed() {
    String name = "streams";
    // Consumed inside the barrier stage: at each pull, how many complexes this rank had computed.
    List<String> seen = new BarrierRoute().run(complexes(), STACK, PLAN, new ComputedComplexes(name))
        .mapPartitions(tiles -> {
          int rank = TaskContext.getPartitionId();
          List<String> pulls = new ArrayList<>();
          while (tiles.hasNext()) {
            TileRecord t = tiles.next();
            pulls.add("rank " + rank + " got " + t.complexId + " after " + ComputedComplexes.of(name, rank));
          }
          return pulls.iterator();
        }).collect();
    List<String> want = new ArrayList<>();
    for (int rank = 0; rank < GRID.size(); rank++) {
      for (int c = 0; c < COMPLEXES; c++) {
        want.add("rank " + rank + " got complex-" + c + " after " + (c + 1));
      }
    }
    assertEquals(want, seen, "each tile left its rank as soon as its complex was computed, in the team's order");
  }

  @Test
  void aConsumerThatStopsEarlyStillRunsEveryComplexWithItsPeers() {
    String name = "stops-early";
    long t0 = System.nanoTime();
    // rank 0 takes one tile and stops; rank 1 takes them all, which needs rank 0 in every reshard
    List<Integer> taken = new BarrierRoute().run(complexes(), STACK, PLAN, new ComputedComplexes(name))
        .mapPartitions(tiles -> {
          int wanted = TaskContext.getPartitionId() == 0 ? 1 : Integer.MAX_VALUE;
          int n = 0;
          while (n < wanted && tiles.hasNext()) {
            tiles.next();
            n++;
          }
          return List.of(n).iterator();
        }).collect();
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertEquals(List.of(1, COMPLEXES), taken);
    assertTrue(seconds < 30, "rank 1 waited " + seconds + " s: rank 0 left its team");
    assertEquals(COMPLEXES, ComputedComplexes.of(name, 0), "rank 0 ran the complexes its consumer did not pull");
    assertEquals(COMPLEXES, ComputedComplexes.of(name, 1));
  }

  @Test
  void aConsumerThatFailsBetweenPullsFailsThePeersAtOnceNamingItsRank() {
    long t0 = System.nanoTime();
    Exception e = assertThrows(Exception.class, () -> new BarrierRoute()
        .run(complexes(), STACK, PLAN, RouteMetrics.NONE)
        .mapPartitions(tiles -> {
          tiles.next();
          if (TaskContext.getPartitionId() == 1) {
            throw new IllegalStateException("the consumer of rank 1 fails after its first tile");
          }
          List<String> ids = new ArrayList<>();
          tiles.forEachRemaining(t -> ids.add(t.complexId));
          return ids.iterator();
        }).collect());
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertTrue(seconds < 30, "the stage took " + seconds + " s to fail: the peer waited for its timeout");
    assertTrue(e.getMessage().contains("the consumer of rank 1 fails after its first tile"), e.getMessage());
  }
}
