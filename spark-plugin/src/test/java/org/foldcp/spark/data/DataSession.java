package org.foldcp.spark.data;

import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * The local Spark session of the data tests (started before a test class, stopped after it),
 * and complexes written as a directory of .npy files.
 */
abstract class DataSession {
  static SparkSession spark;

  @TempDir
  Path dir;

  @BeforeAll
  static void startSession() {
    spark = start();
  }

  @AfterAll
  static void stopSession() {
    spark.stop();
  }

  /**
   * Two slots and two attempts per task ({@code local[2,2]}), so that a task failing once is
   * retried as on a cluster. A session other tests left behind is stopped first: its master
   * would allow no retry.
   */
  private static SparkSession start() {
    Option<SparkSession> old = SparkSession.getDefaultSession();
    if (old.isDefined()) {
      old.get().stop();
    }
    return SparkSession.builder()
        .master("local[2,2]")
        .appName("fold-cp data tests")
        .config("spark.sql.extensions", "org.foldcp.spark.sql.FoldCpExtensions")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "3")
        .getOrCreate();
  }

  /** A complex of N tokens, D = 8, seeded by {@code seed}, with a mask when {@code masked}. */
  static PairTensor complex(int n, long seed, boolean masked) {
    return PairTensor.random(1, n, 8, seed, masked ? 0.2 : 0.0);
  }

  /** Writes {@code x} as {@code dir/<id>.npy}, and its mask as {@code <id>.mask.npy} when it has one. */
  static void write(Path dir, String id, PairTensor x) {
    Npy.writePair(dir.resolve(id + ".npy"), x);
    if (x.hasMask()) {
      Npy.writeMask(dir.resolve(id + ".mask.npy"), x);
    }
  }

  /** The directory as a file: URI, as Hadoop paths name it. */
  static String uri(Path dir) {
    return dir.toUri().toString();
  }
}
