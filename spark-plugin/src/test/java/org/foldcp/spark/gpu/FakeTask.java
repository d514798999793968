package org.foldcp.spark.gpu;

import java.util.ArrayList;
import java.util.List;

/** A task attempt as the GPU owner sees one: an id, completion actions the test runs, a kill flag. */
final class FakeTask implements Borrower {
  private final long attemptId;
  private final List<Runnable> atEnd = new ArrayList<>();
  private volatile boolean killed;

  FakeTask(long attemptId) {
    this.attemptId = attemptId;
  }

  @Override
  public long attemptId() { return attemptId; }

  @Override
  public synchronized void atEnd(Runnable action) {
    atEnd.add(action);
  }

  @Override
  public void checkKilled() {
    if (killed) {
      throw new IllegalStateException("task " + attemptId + " was killed");
    }
  }

  /** The task ends, as Spark ends it on success and on failure alike: its completion actions run. */
  synchronized void end() {
    atEnd.forEach(Runnable::run);
  }

  void kill() {
    killed = true;
  }
}
