package org.foldcp.spark.gpu;

import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;

/**
 * Who borrows an executor's GPU: a Spark task, or nobody in particular (a direct call outside
 * Spark, which returns what it borrowed itself). An interface rather than TaskContext itself so
 * that the borrowing rules can be tested without starting Spark.
 */
interface Borrower {
  /** The attempt id of a borrower that is no task. */
  long NO_TASK = -1;

  /** Nobody in particular: every borrow takes its own permit, returned only by close(). */
  Borrower NONE = new Borrower() {
    @Override
    public long attemptId() { return NO_TASK; }

    @Override
    public void atEnd(Runnable action) {}

    @Override
    public void checkKilled() {}
  };

  /**
   * The task attempt this borrow belongs to: borrows of one attempt share one permit, so that
   * a task holding the GPU never waits for itself (a SQL function feeding the cp = 1 route in
   * the same task borrows twice).
   */
  long attemptId();

  /** Runs {@code action} when the task ends, successful or not. */
  void atEnd(Runnable action);

  /** Throws when the task was killed while it waited for a permit. */
  void checkKilled();

  /** The running Spark task on this thread, or {@link #NONE} outside tasks. */
  static Borrower current() {
    TaskContext task = TaskContext.get();
    return task == null ? NONE : new SparkTask(task);
  }

  /** A Spark task: its completion listeners run on success and on failure alike. */
  record SparkTask(TaskContext task) implements Borrower {
    @Override
    public long attemptId() { return task.taskAttemptId(); }

    @Override
    public void atEnd(Runnable action) {
      task.addTaskCompletionListener((TaskCompletionListener) done -> action.run());
    }

    @Override
    public void checkKilled() {
      task.killTaskIfInterrupted();
    }
  }
}
