package org.foldcp.spark.sql;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics;
import org.foldcp.ops.StageTimes;
import org.foldcp.spark.config.FoldCpConf.MetricsLevel;
import org.foldcp.spark.route.RouteMetrics;

/**
 * RouteMetrics that land in the SQL metrics of the TriMul operator (Spark UI, explain cost
 * modes, {@code SparkPlan.metrics()}). SQLMetrics are accumulators: a route's tasks update their
 * deserialized copies and Spark merges them into the driver's when each task ends.
 *
 * <p>Names and levels follow Spark and spark-rapids: {@value #NUM_OUTPUT_ROWS} and
 * {@value #OP_TIME} (the operator's own time: compute plus reshard, not its child's) are
 * essential; the work counts and bytes moved are moderate; the per-stage split of opTime, the
 * GPU kernel time per TriMul stage (cp = 1 route) and the fused reshard bytes per direction are
 * debug. Metrics above the plan's level are not created at all, so they cost nothing and do not
 * show; the GPU stage times also cost a wait for the kernels after each layer, which is why the
 * route measures them at debug level only.
 *
 * <p>Times are nanosecond timing metrics rather than millisecond ones: one small tile computes
 * in well under a millisecond, and summing per-tile times truncated to whole milliseconds would
 * report zero; the UI still shows them as durations.
 */
final class SqlRouteMetrics implements RouteMetrics {
  private static final long serialVersionUID = 4L;

  static final String NUM_OUTPUT_ROWS = "numOutputRows";
  static final String OP_TIME = "opTime";
  static final String NUM_TILES = "numTiles";
  static final String GPU_TILES = "gpuTiles";
  static final String BYTES_IN = "bytesIn";
  static final String BYTES_OUT = "bytesOut";
  static final String RESHARD_BYTES = "reshardBytes";
  static final String GPU_BUSY_TIME = "gpuBusyTime";
  static final String COPY_WAIT_TIME = "copyWaitTime";
  static final String HOST_COPY_TIME = "hostCopyTime";
  static final String BYTES_IN_PLACE = "bytesInPlace";
  static final String COMPUTE_TIME = "computeTime";
  static final String RESHARD_TIME = "reshardTime";
  static final String GPU_STAGE1_TIME = "gpuStage1Time";
  static final String GPU_STAGE2_TIME = "gpuStage2Time";
  static final String GPU_STAGE3_TIME = "gpuStage3Time";
  static final String RESHARD_TO_CHANNELS_BYTES = "reshardToChannelsBytes";
  static final String RESHARD_TO_TOKENS_BYTES = "reshardToTokensBytes";

  /** The kept metrics by name, in display order; a metric above the level is absent. */
  private final Map<String, SQLMetric> byName;

  private SqlRouteMetrics(SparkContext sc, MetricsLevel level) {
    Kept k = new Kept(sc, level);
    k.count(MetricsLevel.ESSENTIAL, NUM_OUTPUT_ROWS, "number of output rows");
    k.nanos(MetricsLevel.ESSENTIAL, OP_TIME, "op time (TriMul compute + reshard)");
    k.count(MetricsLevel.MODERATE, NUM_TILES, "number of tiles computed");
    k.count(MetricsLevel.MODERATE, GPU_TILES, "tiles computed on a GPU");
    k.bytes(MetricsLevel.MODERATE, BYTES_IN, "pair bytes in");
    k.bytes(MetricsLevel.MODERATE, BYTES_OUT, "pair bytes out");
    k.bytes(MetricsLevel.MODERATE, RESHARD_BYTES, "bytes resharded between ranks");
    k.nanos(MetricsLevel.MODERATE, GPU_BUSY_TIME, "GPU busy time (feed: scan + layers)");
    k.nanos(MetricsLevel.MODERATE, COPY_WAIT_TIME, "time waiting for pinned blocks, slots, copies");
    k.nanos(MetricsLevel.MODERATE, HOST_COPY_TIME, "time copying input into pinned memory (all threads)");
    k.bytes(MetricsLevel.MODERATE, BYTES_IN_PLACE, "pair bytes uploaded from the pinned row cache (no host copy)");
    k.nanos(MetricsLevel.DEBUG, COMPUTE_TIME, "TriMul compute time");
    k.nanos(MetricsLevel.DEBUG, RESHARD_TIME, "reshard time");
    k.nanos(MetricsLevel.DEBUG, GPU_STAGE1_TIME, "GPU stage 1 time (LN_in, projections, gates)");
    k.nanos(MetricsLevel.DEBUG, GPU_STAGE2_TIME, "GPU stage 2 time (triangle GEMM)");
    k.nanos(MetricsLevel.DEBUG, GPU_STAGE3_TIME, "GPU stage 3 time (LN_out, output projection)");
    k.bytes(MetricsLevel.DEBUG, RESHARD_TO_CHANNELS_BYTES, "fused reshard bytes token->channel");
    k.bytes(MetricsLevel.DEBUG, RESHARD_TO_TOKENS_BYTES, "fused reshard bytes channel->token");
    byName = Collections.unmodifiableMap(k.metrics);
  }

  /** Creates the metrics of {@code level} and below, in display order. */
  private static final class Kept {
    private final SparkContext sc;
    private final MetricsLevel level;
    private final Map<String, SQLMetric> metrics = new LinkedHashMap<>();

    Kept(SparkContext sc, MetricsLevel level) {
      this.sc = sc;
      this.level = level;
    }

    void count(MetricsLevel of, String name, String text) {
      keep(of, name, () -> SQLMetrics.createMetric(sc, text));
    }

    void bytes(MetricsLevel of, String name, String text) {
      keep(of, name, () -> SQLMetrics.createSizeMetric(sc, text, SQLMetrics.createSizeMetric$default$3()));
    }

    void nanos(MetricsLevel of, String name, String text) {
      keep(of, name, () -> SQLMetrics.createNanoTimingMetric(sc, text, SQLMetrics.createNanoTimingMetric$default$3()));
    }

    private void keep(MetricsLevel of, String name, java.util.function.Supplier<SQLMetric> make) {
      if (level.keeps(of)) {
        metrics.put(name, make.get());
      }
    }
  }

  /** Fresh metrics of {@code level} registered with {@code sc}. */
  static SqlRouteMetrics create(SparkContext sc, MetricsLevel level) {
    return new SqlRouteMetrics(sc, level);
  }

  /** The kept metrics by the names the operator publishes them under. */
  Map<String, SQLMetric> byName() {
    return byName;
  }

  /** Adds {@code value} to the metric {@code name}, if the plan's level keeps it. */
  private void add(String name, long value) {
    SQLMetric metric = byName.get(name);
    if (metric != null) {
      metric.add(value);
    }
  }

  /** One row left the operator. */
  void outputRow() {
    add(NUM_OUTPUT_ROWS, 1);
  }

  @Override
  public void tiles(long count) {
    add(NUM_TILES, count);
  }

  @Override
  public void bytesIn(long bytes) {
    add(BYTES_IN, bytes);
  }

  @Override
  public void bytesOut(long bytes) {
    add(BYTES_OUT, bytes);
  }

  @Override
  public void computeNanos(long nanos) {
    add(COMPUTE_TIME, nanos);
    add(OP_TIME, nanos);
  }

  @Override
  public void reshardNanos(long nanos) {
    add(RESHARD_TIME, nanos);
    add(OP_TIME, nanos);
  }

  @Override
  public void reshardBytes(long bytes) {
    add(RESHARD_BYTES, bytes);
  }

  @Override
  public void fusedReshardBytes(long toChannels, long toTokens) {
    add(RESHARD_TO_CHANNELS_BYTES, toChannels);
    add(RESHARD_TO_TOKENS_BYTES, toTokens);
  }

  @Override
  public void gpuBusyNanos(long nanos) {
    add(GPU_BUSY_TIME, nanos);
  }

  @Override
  public void copyWaitNanos(long nanos) {
    add(COPY_WAIT_TIME, nanos);
  }

  @Override
  public void hostCopyNanos(long nanos) {
    add(HOST_COPY_TIME, nanos);
  }

  @Override
  public void bytesInPlace(long bytes) {
    add(BYTES_IN_PLACE, bytes);
  }

  @Override
  public void gpuTiles(long count) {
    add(GPU_TILES, count);
  }

  @Override
  public void gpuStageTimes(StageTimes times) {
    add(GPU_STAGE1_TIME, times.stage1Nanos());
    add(GPU_STAGE2_TIME, times.stage2Nanos());
    add(GPU_STAGE3_TIME, times.stage3Nanos());
  }
}
