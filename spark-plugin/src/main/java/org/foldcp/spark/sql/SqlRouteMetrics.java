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
  private static final long serialVersionUID = 3L;

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

  /** The kept metrics by name, in display order; a metric above the level is absent (its field null). */
  private final Map<String, SQLMetric> byName;
  private final SQLMetric numOutputRows;
  private final SQLMetric opTime;
  private final SQLMetric tiles;
  private final SQLMetric gpuTiles;
  private final SQLMetric bytesIn;
  private final SQLMetric bytesOut;
  private final SQLMetric reshardBytes;
  private final SQLMetric gpuBusyTime;
  private final SQLMetric copyWaitTime;
  private final SQLMetric hostCopyTime;
  private final SQLMetric bytesInPlace;
  private final SQLMetric computeTime;
  private final SQLMetric reshardTime;
  private final SQLMetric gpuStage1Time;
  private final SQLMetric gpuStage2Time;
  private final SQLMetric gpuStage3Time;
  private final SQLMetric reshardToChannels;
  private final SQLMetric reshardToTokens;

  private SqlRouteMetrics(SparkContext sc, MetricsLevel level) {
    Kept k = new Kept(sc, level);
    numOutputRows = k.count(MetricsLevel.ESSENTIAL, NUM_OUTPUT_ROWS, "number of output rows");
    opTime = k.nanos(MetricsLevel.ESSENTIAL, OP_TIME, "op time (TriMul compute + reshard)");
    tiles = k.count(MetricsLevel.MODERATE, NUM_TILES, "number of tiles computed");
    gpuTiles = k.count(MetricsLevel.MODERATE, GPU_TILES, "tiles computed on a GPU");
    bytesIn = k.bytes(MetricsLevel.MODERATE, BYTES_IN, "pair bytes in");
    bytesOut = k.bytes(MetricsLevel.MODERATE, BYTES_OUT, "pair bytes out");
    reshardBytes = k.bytes(MetricsLevel.MODERATE, RESHARD_BYTES, "bytes resharded between ranks");
    gpuBusyTime = k.nanos(MetricsLevel.MODERATE, GPU_BUSY_TIME, "GPU busy time (feed: scan + layers)");
    copyWaitTime = k.nanos(MetricsLevel.MODERATE, COPY_WAIT_TIME, "time waiting for pinned blocks, slots, copies");
    hostCopyTime = k.nanos(MetricsLevel.MODERATE, HOST_COPY_TIME, "time copying input into pinned memory (all threads)");
    bytesInPlace = k.bytes(MetricsLevel.MODERATE, BYTES_IN_PLACE, "pair bytes uploaded from the pinned row cache (no host copy)");
    computeTime = k.nanos(MetricsLevel.DEBUG, COMPUTE_TIME, "TriMul compute time");
    reshardTime = k.nanos(MetricsLevel.DEBUG, RESHARD_TIME, "reshard time");
    gpuStage1Time = k.nanos(MetricsLevel.DEBUG, GPU_STAGE1_TIME, "GPU stage 1 time (LN_in, projections, gates)");
    gpuStage2Time = k.nanos(MetricsLevel.DEBUG, GPU_STAGE2_TIME, "GPU stage 2 time (triangle GEMM)");
    gpuStage3Time = k.nanos(MetricsLevel.DEBUG, GPU_STAGE3_TIME, "GPU stage 3 time (LN_out, output projection)");
    reshardToChannels = k.bytes(MetricsLevel.DEBUG, RESHARD_TO_CHANNELS_BYTES, "fused reshard bytes token->channel");
    reshardToTokens = k.bytes(MetricsLevel.DEBUG, RESHARD_TO_TOKENS_BYTES, "fused reshard bytes channel->token");
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

    SQLMetric count(MetricsLevel of, String name, String text) {
      return keep(of, name, () -> SQLMetrics.createMetric(sc, text));
    }

    SQLMetric bytes(MetricsLevel of, String name, String text) {
      return keep(of, name, () -> SQLMetrics.createSizeMetric(sc, text, SQLMetrics.createSizeMetric$default$3()));
    }

    SQLMetric nanos(MetricsLevel of, String name, String text) {
      return keep(of, name,
          () -> SQLMetrics.createNanoTimingMetric(sc, text, SQLMetrics.createNanoTimingMetric$default$3()));
    }

    private SQLMetric keep(MetricsLevel of, String name, java.util.function.Supplier<SQLMetric> make) {
      if (!level.keeps(of)) {
        return null;
      }
      SQLMetric m = make.get();
      metrics.put(name, m);
      return m;
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

  private static void add(SQLMetric metric, long value) {
    if (metric != null) {
      metric.add(value);
    }
  }

  /** One row left the operator. */
  void outputRow() {
    add(numOutputRows, 1);
  }

  @Override
  public void tiles(long count) {
    add(tiles, count);
  }

  @Override
  public void bytesIn(long bytes) {
    add(bytesIn, bytes);
  }

  @Override
  public void bytesOut(long bytes) {
    add(bytesOut, bytes);
  }

  @Override
  public void computeNanos(long nanos) {
    add(computeTime, nanos);
    add(opTime, nanos);
  }

  @Override
  public void reshardNanos(long nanos) {
    add(reshardTime, nanos);
    add(opTime, nanos);
  }

  @Override
  public void reshardBytes(long bytes) {
    add(reshardBytes, bytes);
  }

  @Override
  public void fusedReshardBytes(long toChannels, long toTokens) {
    add(reshardToChannels, toChannels);
    add(reshardToTokens, toTokens);
  }

  @Override
  public void gpuBusyNanos(long nanos) {
    add(gpuBusyTime, nanos);
  }

  @Override
  public void copyWaitNanos(long nanos) {
    add(copyWaitTime, nanos);
  }

  @Override
  public void hostCopyNanos(long nanos) {
    add(hostCopyTime, nanos);
  }

  @Override
  public void bytesInPlace(long bytes) {
    add(bytesInPlace, bytes);
  }

  @Override
  public void gpuTiles(long count) {
    add(gpuTiles, count);
  }

  @Override
  public void gpuStageTimes(StageTimes times) {
    add(gpuStage1Time, times.stage1Nanos());
    add(gpuStage2Time, times.stage2Nanos());
    add(gpuStage3Time, times.stage3Nanos());
  }
}
