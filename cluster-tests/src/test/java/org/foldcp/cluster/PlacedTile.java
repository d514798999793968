package org.foldcp.cluster;

import java.io.Serializable;
import java.lang.management.ManagementFactory;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaRDD;
import org.foldcp.spark.tiles.TileRecord;

/** An output tile with the executor and the JVM of the task that produced it. */
final class PlacedTile implements Serializable {
  private static final long serialVersionUID = 1L;

  final String executorId;
  /** pid@host of the task's JVM: executors of one host differ in their pid. */
  final String jvm;
  final TileRecord tile;

  private PlacedTile(String executorId, String jvm, TileRecord tile) {
    this.executorId = executorId;
    this.jvm = jvm;
    this.tile = tile;
  }

  /**
   * Tags every tile with where it was computed. The map is narrow, so it runs in the task that
   * produced the tile (the route's last stage), not in a stage of its own.
   */
  static JavaRDD<PlacedTile> tag(JavaRDD<TileRecord> tiles) {
    return tiles.map(t -> new PlacedTile(SparkEnv.get().executorId(), currentJvm(), t));
  }

  static String currentJvm() {
    return ManagementFactory.getRuntimeMXBean().getName();
  }
}
