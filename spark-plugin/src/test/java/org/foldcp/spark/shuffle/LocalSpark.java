package org.foldcp.spark.shuffle;

import org.apache.spark.sql.SparkSession;

/** Small local-mode Spark sessions for the route tests: 2 cores, no UI, 4 shuffle partitions. */
final class LocalSpark {
  private LocalSpark() {}

  /** A session with the test defaults and {@code extra} key/value pairs on top. */
  static SparkSession start(String... extra) {
    SparkSession.Builder b = SparkSession.builder()
        .appName("foldcp-shuffle-route-test")
        .master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4");
    for (int q = 0; q + 1 < extra.length; q += 2) {
      b.config(extra[q], extra[q + 1]);
    }
    return b.getOrCreate();
  }
}
