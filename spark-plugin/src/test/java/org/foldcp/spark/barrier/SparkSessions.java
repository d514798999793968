package org.foldcp.spark.barrier;

import org.apache.spark.sql.SparkSession;

/** Local Spark sessions for the tests, one at a time per JVM. */
final class SparkSessions {
  private SparkSessions() {}

  static SparkSession local(String master, String... confPairs) {
    SparkSession.Builder b = SparkSession.builder()
        .appName("fold-cp barrier tests")
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4");
    for (int q = 0; q < confPairs.length; q += 2) {
      b.config(confPairs[q], confPairs[q + 1]);
    }
    return b.getOrCreate();
  }

  static void stop(SparkSession spark) {
    if (spark != null) {
      spark.stop();
    }
    SparkSession.clearActiveSession();
    SparkSession.clearDefaultSession();
  }
}
