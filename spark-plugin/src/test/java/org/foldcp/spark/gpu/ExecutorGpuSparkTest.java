package org.foldcp.spark.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Borrowing from real Spark tasks (local mode): Spark's completion listeners give permits back
 * after tasks that never closed their views, failed ones included.
 */
class ExecutorGpuSparkTest {
  /** Reached from the tasks, which run in this JVM: closures do not capture statics. */
  private static final FakeGpus GPUS = new FakeGpus();
  private static final ExecutorGpu GPU = new ExecutorGpu(0, 2, GPUS);
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    spark = SparkSession.builder().master("local[4]").appName("ExecutorGpuSparkTest")
        .config("spark.ui.enabled", "false").getOrCreate();
  }

  @AfterAll
  static void stop() {
    spark.stop();
    GPU.close();
  }

  @Test
  void tasksThatFailHoldingTheGpuGiveTheirPermitsBack() throws InterruptedException {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    SparkException e = assertThrows(SparkException.class, () -> jsc.parallelize(List.of(1, 2, 3, 4, 5, 6), 6)
        .map(i -> {
          GPU.borrow(); // never closed: the task fails holding it
          throw new IllegalStateException("task fails on the GPU");
        }).collect());
    assertTrue(e.getMessage().contains("task fails on the GPU"), e.getMessage());
    // The job fails at the first failed task; the stage's other tasks end (fail or are killed) after.
    awaitFreePermits(2, "every failed task gave its permit back");
  }

  private static void awaitFreePermits(int permits, String why) throws InterruptedException {
    long deadline = System.nanoTime() + 20_000_000_000L;
    while (GPU.availablePermits() != permits && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(permits, GPU.availablePermits(), why);
  }

  @Test
  void tasksThatBorrowTwiceAndNeverCloseFinishAndGiveBack() {
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    List<Long> secondWaits = jsc.parallelize(List.of(1, 2, 3, 4, 5, 6, 7, 8), 8).map(i -> {
      GPU.borrow();
      return GPU.borrow().waitedMillis(); // one task, one permit: the second borrow never waits
    }).collect();
    assertEquals(List.of(0L, 0L, 0L, 0L, 0L, 0L, 0L, 0L), secondWaits);
    assertEquals(2, GPU.availablePermits());
    assertEquals(1, GPUS.made().size(), "one backend for all tasks of the executor");
  }
}
