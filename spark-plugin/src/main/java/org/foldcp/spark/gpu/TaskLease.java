package org.foldcp.spark.gpu;

import java.util.function.Consumer;

/**
 * One permit of an executor's GPU as a task holds it. The views the task borrowed share it, and
 * it is given back exactly once: when the last view closes, or when the task ends (successful or
 * not) with views still open, whichever comes first. A task that fails half-way therefore never
 * keeps a permit, and closing a view twice never gives back a permit twice.
 */
final class TaskLease {
  private final long attemptId;
  private final Consumer<TaskLease> giveBack;
  private int views;        // guarded by this
  private boolean returned; // guarded by this

  TaskLease(long attemptId, Consumer<TaskLease> giveBack) {
    this.attemptId = attemptId;
    this.giveBack = giveBack;
  }

  long attemptId() {
    return attemptId;
  }

  /** Adds a view; false when the permit was already given back (the task ended meanwhile). */
  synchronized boolean join() {
    if (returned) {
      return false;
    }
    views++;
    return true;
  }

  /** A view closed; the last one gives the permit back. */
  void leave() {
    boolean last;
    synchronized (this) {
      last = !returned && --views == 0;
      returned |= last;
    }
    // Outside the lock: giving back takes the owner's lease table lock, which join() runs under.
    if (last) {
      giveBack.accept(this);
    }
  }

  /** The task ended: the permit goes back whatever views are still open. */
  void end() {
    boolean first;
    synchronized (this) {
      first = !returned;
      returned = true;
    }
    if (first) {
      giveBack.accept(this);
    }
  }

  synchronized boolean returned() {
    return returned;
  }
}
