package org.foldcp.spark.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.Test;

/** The borrowing rules of an executor's GPU, with fake backends (no GPU needed). */
class ExecutorGpuTest {
  private static final Duration LIMIT = Duration.ofSeconds(20);
  private final FakeGpus gpus = new FakeGpus();

  private ExecutorGpu gpu(int permits) {
    return new ExecutorGpu(5, permits, gpus);
  }

  /** Borrows for {@code task} on another thread, so that a test can watch it wait. */
  private static CompletableFuture<BorrowedGpu> borrowLater(ExecutorGpu gpu, Borrower task) {
    return CompletableFuture.supplyAsync(() -> gpu.borrow(task));
  }

  private static void assertStillWaiting(CompletableFuture<?> borrow) {
    assertThrows(TimeoutException.class, () -> borrow.get(300, TimeUnit.MILLISECONDS), "the borrow should wait");
  }

  @Test
  void oneBackendOpenedAtTheFirstBorrowServesEveryTask() {
    ExecutorGpu gpu = gpu(1);
    assertEquals(0, gpus.made().size(), "nothing opens before a task borrows");
    PairTensor x = PairTensor.random(1, 4, 2, 1, 0.0);
    for (long attempt = 1; attempt <= 3; attempt++) {
      try (BorrowedGpu b = gpu.borrow(new FakeTask(attempt))) {
        assertEquals("gpu", b.name());
        assertSame(x, b.forward(x, LayerStack.randomAlternating(1, 2, 3, false)));
      }
    }
    assertEquals(1, gpus.made().size(), "one backend per executor and device, not one per task");
    assertEquals(5, gpus.made().get(0).deviceOrdinal());
    assertEquals(3, gpus.made().get(0).forwards());
    assertEquals(0, gpus.made().get(0).closes(), "a task's close gives the borrow back, not the GPU");
    assertEquals(1, gpu.availablePermits());
  }

  @Test
  void noMoreTasksThanPermitsHoldTheGpu() throws Exception {
    ExecutorGpu gpu = gpu(2);
    BorrowedGpu a = gpu.borrow(new FakeTask(1));
    BorrowedGpu b = gpu.borrow(new FakeTask(2));
    assertEquals(0, gpu.availablePermits());
    CompletableFuture<BorrowedGpu> c = borrowLater(gpu, new FakeTask(3));
    assertStillWaiting(c);
    a.close();
    BorrowedGpu third = c.get(LIMIT.toSeconds(), TimeUnit.SECONDS);
    assertTrue(third.waitedMillis() >= 250, "waited " + third.waitedMillis() + " ms");
    assertEquals(0, gpu.availablePermits());
    b.close();
    third.close();
    assertEquals(2, gpu.availablePermits());
  }

  @Test
  void aTaskThatFailsWithoutClosingGivesItsPermitBack() {
    ExecutorGpu gpu = gpu(1);
    FakeTask failing = new FakeTask(1);
    BorrowedGpu lent = gpu.borrow(failing);
    assertEquals(0, gpu.availablePermits());
    failing.end(); // Spark runs completion listeners on failure too; the task never closed its view
    assertEquals(1, gpu.availablePermits());
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> lent.forward(PairTensor.random(1, 4, 2, 1, 0.0), LayerStack.randomAlternating(1, 2, 3, false)));
    assertTrue(e.getMessage().contains("was given back"), e.getMessage());
    lent.close(); // after the task's end: nothing more to give back
    assertEquals(1, gpu.availablePermits());
    assertTimeoutPreemptively(LIMIT, () -> gpu.borrow(new FakeTask(2)).close(), "the next task gets the GPU");
  }

  @Test
  void aTaskBorrowingAgainSharesItsPermitInsteadOfWaitingForItself() {
    ExecutorGpu gpu = gpu(1);
    FakeTask task = new FakeTask(1);
    BorrowedGpu first = gpu.borrow(task);
    BorrowedGpu second = assertTimeoutPreemptively(LIMIT, () -> gpu.borrow(task));
    assertEquals(0, second.waitedMillis());
    first.close();
    first.close(); // a second close gives nothing back twice
    assertEquals(0, gpu.availablePermits(), "the task's other view still holds the permit");
    second.close();
    assertEquals(1, gpu.availablePermits());
    task.end();
    assertEquals(1, gpu.availablePermits(), "the task's end after its views closed gives back nothing more");
  }

  @Test
  void callsOutsideTasksEachTakeAPermit() throws Exception {
    ExecutorGpu gpu = gpu(1);
    BorrowedGpu a = gpu.borrow(Borrower.NONE);
    CompletableFuture<BorrowedGpu> b = borrowLater(gpu, Borrower.NONE);
    assertStillWaiting(b);
    a.close();
    b.get(LIMIT.toSeconds(), TimeUnit.SECONDS).close();
    assertEquals(1, gpu.availablePermits());
  }

  @Test
  void closingClosesTheBackendOnceAndLaterBorrowsFailSayingWhy() {
    ExecutorGpu gpu = gpu(1);
    BorrowedGpu lent = gpu.borrow(new FakeTask(1));
    gpu.close();
    assertEquals(1, gpus.made().get(0).closes());
    gpu.close();
    assertEquals(1, gpus.made().get(0).closes(), "a second close does nothing");
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> gpu.borrow(new FakeTask(2)));
    assertEquals("GPU 5 of this executor is closed: the executor is shutting down, and no task can borrow its GPU"
        + " any more", e.getMessage());
    assertThrows(IllegalStateException.class,
        () -> lent.forward(PairTensor.random(1, 4, 2, 1, 0.0), LayerStack.randomAlternating(1, 2, 3, false)));
    lent.close();
    assertEquals(1, gpus.made().size(), "nothing reopens after close");
  }

  @Test
  void closingAnUnusedGpuOpensNothing() {
    ExecutorGpu gpu = gpu(1);
    gpu.close();
    assertEquals(0, gpus.made().size());
  }

  @Test
  void aTaskWaitingWhenTheGpuClosesFailsInsteadOfHanging() {
    ExecutorGpu gpu = gpu(1);
    gpu.borrow(new FakeTask(1));
    CompletableFuture<BorrowedGpu> waiting = borrowLater(gpu, new FakeTask(2));
    assertStillWaiting(waiting);
    gpu.close();
    ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(LIMIT.toSeconds(), TimeUnit.SECONDS));
    assertTrue(e.getCause().getMessage().contains("is closed"), e.getCause().getMessage());
  }

  @Test
  void aTaskKilledWhileWaitingLeavesTheQueue() {
    ExecutorGpu gpu = gpu(1);
    gpu.borrow(new FakeTask(1));
    FakeTask killed = new FakeTask(2);
    CompletableFuture<BorrowedGpu> waiting = borrowLater(gpu, killed);
    assertStillWaiting(waiting);
    killed.kill();
    ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(LIMIT.toSeconds(), TimeUnit.SECONDS));
    assertEquals("task 2 was killed", e.getCause().getMessage());
    assertEquals(0, gpu.availablePermits(), "task 1 still holds the only permit; task 2 took none");
  }

  @Test
  void aBackendThatFailsToOpenGivesThePermitBackAndIsTriedAgain() {
    int[] calls = {0};
    ExecutorGpu gpu = new ExecutorGpu(0, 1, ordinal -> {
      if (calls[0]++ == 0) {
        throw new IllegalStateException("cuCtxCreate failed: out of memory");
      }
      return gpus.apply(ordinal);
    });
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> gpu.borrow(new FakeTask(1)));
    assertEquals("cuCtxCreate failed: out of memory", e.getMessage());
    assertEquals(1, gpu.availablePermits());
    try (TriMulBackend b = gpu.borrow(new FakeTask(2))) {
      assertEquals("gpu", b.name());
    }
    assertEquals(2, calls[0]);
  }

  @Test
  void permitsAndDeviceAreChecked() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> new ExecutorGpu(0, 0, gpus));
    assertEquals("spark.foldcp.gpu.concurrentTasks = 0: must be an integer >= 1", e.getMessage());
    assertThrows(InvalidInputException.class, () -> new ExecutorGpu(-1, 1, gpus));
  }

  @Test
  void outsideATaskTheBorrowerIsNobodyInParticular() {
    assertSame(Borrower.NONE, Borrower.current());
    assertFalse(gpu(1).toString().contains("closed"));
    assertEquals("GPU 5 (lent to 2 tasks at a time)", gpu(2).toString());
  }
}
