package org.foldcp.spark.sql;

import java.util.Collections;
import java.util.Iterator;
import java.util.Optional;
import java.util.function.Function;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.util.TaskCompletionListener;
import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.gpu.feed.StackFeed;
import org.foldcp.spark.config.FoldCpConf.MetricsLevel;
import org.foldcp.spark.gpu.BorrowedGpu;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SharedStack;
import org.foldcp.spark.route.SingleRankRoute;
import org.foldcp.spark.route.TaskBackends;
import org.foldcp.spark.tiles.RowBands;

/**
 * One partition of the cp = 1 route, rows in and rows out. The task's backend decides the path,
 * once, at the partition's first row:
 * <ul>
 *   <li>the executor's GPU, below metrics level debug: {@link FeedForward}, whole complexes moved
 *       as bytes through the executor's GPU feed (pinned pool, overlapped copies and kernels);</li>
 *   <li>otherwise (the CPU backend, or debug, whose per-stage GPU times need the profiled forward
 *       that waits for each layer): the decoding path, rows decoded into tensors, through
 *       {@link SingleRankRoute#forward}, encoded again.</li>
 * </ul>
 * The path taken is logged by the backend choice and shows in the metrics (gpuBusyTime is only
 * reported by the feed).
 */
final class SingleRankRows {
  /** Complexes of one task in the GPU feed at once: one uploading, one computing, one downloading. */
  static final int FEED_DEPTH = 3;

  private SingleRankRows() {}

  static Iterator<InternalRow> forward(Iterator<InternalRow> rows, int[] ordinals, SharedStack shared,
                                       RoutePlan plan, SqlRouteMetrics metrics) {
    if (!rows.hasNext()) {
      return Collections.emptyIterator(); // no complex: no backend, no GPU borrow
    }
    TriMulBackend backend = TaskBackends.open(plan.backend, plan.threadsPerTask);
    Function<Iterator<InternalRow>, Iterator<InternalRow>> decoding = in -> TriMulExec.encode(
        SingleRankRoute.forward(TriMulExec.decode(in, ordinals), () -> backend, shared, plan, metrics, RowBands.BINARY),
        metrics);
    Optional<StackFeed> feed = backend instanceof BorrowedGpu g && !plan.metricsLevel.keeps(MetricsLevel.DEBUG)
        ? g.feed() : Optional.empty();
    if (feed.isEmpty()) {
      return decoding.apply(rows); // closes the backend after the last complex, or at the task's end
    }
    FeedForward f = new FeedForward(rows, ordinals, feed.get(), shared.get().layers(), plan.allowNonFinite, metrics,
        FEED_DEPTH, decoding);
    TaskContext task = TaskContext.get();
    if (task != null) {
      task.addTaskCompletionListener((TaskCompletionListener) done -> {
        f.finish();
        backend.close();
      });
    }
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        boolean more = f.hasNext();
        if (!more) {
          backend.close(); // the GPU permit goes back before the task's later work
        }
        return more;
      }

      @Override
      public InternalRow next() {
        return f.next(); // counted where it is made: by the feed, or by the decoding path's encoder
      }
    };
  }
}
