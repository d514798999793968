package org.foldcp.spark.udf;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.spark.TaskContext;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.TaskBackends;

/**
 * One backend per task and kind for the rows of foldcp_trimul: on the GPU it is a borrow of the
 * executor's GPU (which holds a permit), so the rows of a task share one borrow and the task's
 * completion gives it back; on the CPU, one CpuTriMul per task (a task whose rows name layers the
 * GPU cannot take holds one of each). Outside a task (a direct call) the caller gets a backend of
 * its own to close itself.
 */
final class RowBackends {
  private static final Map<String, TriMulBackend> BY_TASK = new ConcurrentHashMap<>();

  private RowBackends() {}

  /** Runs {@code work} with this task's backend. */
  static <T> T with(RoutePlan.Backend where, int threads, Function<TriMulBackend, T> work) {
    TaskContext task = TaskContext.get();
    if (task == null) {
      try (TriMulBackend backend = TaskBackends.open(where, threads)) {
        return work.apply(backend);
      }
    }
    String attempt = task.taskAttemptId() + "/" + where;
    TriMulBackend backend = BY_TASK.computeIfAbsent(attempt, id -> {
      TriMulBackend b = TaskBackends.open(where, threads);
      task.addTaskCompletionListener(done -> {
        TriMulBackend closing = BY_TASK.remove(id);
        if (closing != null) {
          closing.close();
        }
      });
      return b;
    });
    return work.apply(backend);
  }
}
