package org.foldcp.spark.route;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

/** The single route's tasks stream their output and always close their backend. */
class StreamedForwardTest {
  private static final LayerStack STACK = LayerStack.randomAlternating(1, 8, 3, true);
  private static final RoutePlan PLAN = RoutePlan.single(1, "streamed forward test");
  // Backends of the Spark job below, which runs in this JVM (local mode): what they did.
  private static final AtomicInteger OPENED = new AtomicInteger();
  private static final AtomicInteger CLOSED = new AtomicInteger();

  /** Counts forwards and closes; fails its forward number {@code failAt} (1-based; 0 never). */
  private static final class Counting implements TriMulBackend {
    final AtomicInteger forwards = new AtomicInteger();
    final AtomicInteger closes = new AtomicInteger();
    private final int failAt;
    private final Runnable onClose;

    Counting(int failAt) {
      this(failAt, () -> {});
    }

    Counting(int failAt, Runnable onClose) {
      this.failAt = failAt;
      this.onClose = onClose;
    }

    @Override
    public String name() {
      return "counting";
    }

    @Override
    public PairTensor forward(PairTensor x, TriMulLayer layer, boolean allowNonFinite) {
      if (forwards.incrementAndGet() == failAt) {
        throw new IllegalStateException("forward " + failAt + " fails on purpose");
      }
      return x;
    }

    @Override
    public void close() {
      closes.incrementAndGet();
      onClose.run();
    }
  }

  private static List<TileRecord> complexes(int count) {
    List<TileRecord> out = new ArrayList<>();
    for (int c = 0; c < count; c++) {
      out.add(new TileRecord("c" + c, 5, 0, 0, PairTensor.random(1, 5, 8, c, 0.2)));
    }
    return out;
  }

  @Test
  void outputsComeOneAtATimeAndTheBackendClosesWhenTheInputEnds() {
    Counting backend = new Counting(0);
    Iterator<TileRecord> out = new StreamedForward(complexes(3).iterator(), () -> backend, () -> STACK, PLAN,
        RouteMetrics.NONE);
    assertEquals(0, backend.forwards.get(), "nothing computes before the consumer asks");
    assertEquals("c0", out.next().complexId);
    assertEquals(1, backend.forwards.get(), "one output computed for one taken: none waits in a list");
    out.next();
    out.next();
    assertEquals(0, backend.closes.get());
    assertFalse(out.hasNext());
    assertEquals(1, backend.closes.get(), "closed once the input runs out, before the task ends");
    assertFalse(out.hasNext());
    assertEquals(1, backend.closes.get(), "closing twice closes once");
  }

  @Test
  void anEmptyPartitionOpensNoBackend() {
    Iterator<TileRecord> out = new StreamedForward(Collections.emptyIterator(), () -> {
      throw new AssertionError("opened a backend for no complexes");
    }, () -> STACK, PLAN, RouteMetrics.NONE);
    assertFalse(out.hasNext());
  }

  /** A task that fails on its second complex still closes its backend: the task-completion listener does. */
  @Test
  void aFailingTaskStillClosesItsBackend() throws InterruptedException {
    OPENED.set(0);
    CLOSED.set(0);
    SparkSession spark = SparkSession.builder().master("local[2]").appName("streamed-forward-test")
        .config("spark.ui.enabled", "false").config("spark.task.maxFailures", "1").getOrCreate();
    try {
      JavaSparkContext sc = new JavaSparkContext(spark.sparkContext());
      Exception e = assertThrows(Exception.class, () -> sc.parallelize(complexes(6), 2)
          .mapPartitions(it -> new StreamedForward(it, () -> {
            OPENED.incrementAndGet();
            return new Counting(2, CLOSED::incrementAndGet);
          }, () -> STACK, PLAN, RouteMetrics.NONE))
          .map(t -> t.complexId)
          .collect());
      assertTrue(String.valueOf(e.getMessage()).contains("forward 2 fails on purpose"), String.valueOf(e.getMessage()));
      assertTrue(OPENED.get() >= 1, "a task opened a backend");
      // collect() throws as soon as the first task fails; the other task is then being killed and
      // closes its backend when its thread ends, which may be a moment later
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (CLOSED.get() < OPENED.get() && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(OPENED.get(), CLOSED.get(), "every backend a task opened was closed, failed task included");
    } finally {
      spark.stop();
    }
  }
}
