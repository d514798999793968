package org.foldcp.spark.barrier;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.foldcp.spark.route.RouteMetrics;

/**
 * Route metrics a test can read back. Tasks get serialized copies of this object, so the counts
 * live in a static map under the copy's name: this works in local mode, where tasks run in the
 * test's JVM.
 */
final class RecordingMetrics implements RouteMetrics {
  private static final long serialVersionUID = 1L;
  private static final Map<String, LongAdder> COUNTS = new ConcurrentHashMap<>();

  private final String name;

  RecordingMetrics(String name) {
    this.name = name;
  }

  long get(String metric) {
    LongAdder a = COUNTS.get(name + "." + metric);
    return a == null ? 0 : a.sum();
  }

  private void add(String metric, long v) {
    COUNTS.computeIfAbsent(name + "." + metric, k -> new LongAdder()).add(v);
  }

  @Override
  public void tiles(long count) { add("tiles", count); }

  @Override
  public void bytesIn(long bytes) { add("bytesIn", bytes); }

  @Override
  public void bytesOut(long bytes) { add("bytesOut", bytes); }

  @Override
  public void computeNanos(long nanos) { add("computeNanos", nanos); }

  @Override
  public void reshardNanos(long nanos) { add("reshardNanos", nanos); }
}
