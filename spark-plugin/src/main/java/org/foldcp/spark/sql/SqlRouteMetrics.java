package org.foldcp.spark.sql;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics;
import org.foldcp.spark.route.RouteMetrics;

/**
 * RouteMetrics that land in the SQL metrics of the TriMul operator (Spark UI, explain cost
 * modes, {@code SparkPlan.metrics()}). SQLMetrics are accumulators: a route's tasks update their
 * deserialized copies and Spark merges them into the driver's when each task ends.
 *
 * <p>Times are nanosecond timing metrics rather than millisecond ones: one small tile computes
 * in well under a millisecond, and summing per-tile times truncated to whole milliseconds would
 * report zero; the UI still shows them as durations.
 */
final class SqlRouteMetrics implements RouteMetrics {
  private static final long serialVersionUID = 1L;

  static final String NUM_TILES = "numTiles";
  static final String BYTES_IN = "bytesIn";
  static final String BYTES_OUT = "bytesOut";
  static final String COMPUTE_TIME = "computeTime";
  static final String RESHARD_TIME = "reshardTime";
  static final String RESHARD_BYTES = "reshardBytes";
  static final String GPU_TILES = "gpuTiles";
  static final String RESHARD_TO_CHANNELS_BYTES = "reshardToChannelsBytes";
  static final String RESHARD_TO_TOKENS_BYTES = "reshardToTokensBytes";

  private final SQLMetric tiles;
  private final SQLMetric bytesIn;
  private final SQLMetric bytesOut;
  private final SQLMetric computeTime;
  private final SQLMetric reshardTime;
  private final SQLMetric reshardBytes;
  private final SQLMetric gpuTiles;
  private final SQLMetric reshardToChannels;
  private final SQLMetric reshardToTokens;

  private SqlRouteMetrics(SQLMetric tiles, SQLMetric bytesIn, SQLMetric bytesOut, SQLMetric computeTime,
                          SQLMetric reshardTime, SQLMetric reshardBytes, SQLMetric reshardToChannels,
                          SQLMetric reshardToTokens, SQLMetric gpuTiles) {
    this.tiles = tiles;
    this.bytesIn = bytesIn;
    this.bytesOut = bytesOut;
    this.computeTime = computeTime;
    this.reshardTime = reshardTime;
    this.reshardBytes = reshardBytes;
    this.reshardToChannels = reshardToChannels;
    this.reshardToTokens = reshardToTokens;
    this.gpuTiles = gpuTiles;
  }

  /** Fresh metrics registered with {@code sc}. */
  static SqlRouteMetrics create(SparkContext sc) {
    return new SqlRouteMetrics(
        SQLMetrics.createMetric(sc, "number of output tiles"),
        SQLMetrics.createSizeMetric(sc, "pair bytes in", SQLMetrics.createSizeMetric$default$3()),
        SQLMetrics.createSizeMetric(sc, "pair bytes out", SQLMetrics.createSizeMetric$default$3()),
        SQLMetrics.createNanoTimingMetric(sc, "TriMul compute time", SQLMetrics.createNanoTimingMetric$default$3()),
        SQLMetrics.createNanoTimingMetric(sc, "reshard time", SQLMetrics.createNanoTimingMetric$default$3()),
        SQLMetrics.createSizeMetric(sc, "bytes resharded between ranks", SQLMetrics.createSizeMetric$default$3()),
        SQLMetrics.createSizeMetric(sc, "fused reshard bytes token->channel", SQLMetrics.createSizeMetric$default$3()),
        SQLMetrics.createSizeMetric(sc, "fused reshard bytes channel->token", SQLMetrics.createSizeMetric$default$3()),
        SQLMetrics.createMetric(sc, "tiles computed on a GPU"));
  }

  /** The metrics by the names the operator publishes them under. */
  Map<String, SQLMetric> byName() {
    Map<String, SQLMetric> m = new LinkedHashMap<>();
    m.put(NUM_TILES, tiles);
    m.put(BYTES_IN, bytesIn);
    m.put(BYTES_OUT, bytesOut);
    m.put(COMPUTE_TIME, computeTime);
    m.put(RESHARD_TIME, reshardTime);
    m.put(RESHARD_BYTES, reshardBytes);
    m.put(RESHARD_TO_CHANNELS_BYTES, reshardToChannels);
    m.put(RESHARD_TO_TOKENS_BYTES, reshardToTokens);
    m.put(GPU_TILES, gpuTiles);
    return m;
  }

  @Override
  public void tiles(long count) {
    tiles.add(count);
  }

  @Override
  public void bytesIn(long bytes) {
    bytesIn.add(bytes);
  }

  @Override
  public void bytesOut(long bytes) {
    bytesOut.add(bytes);
  }

  @Override
  public void computeNanos(long nanos) {
    computeTime.add(nanos);
  }

  @Override
  public void reshardNanos(long nanos) {
    reshardTime.add(nanos);
  }

  @Override
  public void reshardBytes(long bytes) {
    reshardBytes.add(bytes);
  }

  @Override
  public void fusedReshardBytes(long toChannels, long toTokens) {
    reshardToChannels.add(toChannels);
    reshardToTokens.add(toTokens);
  }

  @Override
  public void gpuTiles(long count) {
    gpuTiles.add(count);
  }
}
