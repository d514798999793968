package org.foldcp.examples;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.storage.StorageLevel;
import org.foldcp.ops.gpu.feed.HeapComplex;
import org.foldcp.ops.tensor.Bf16;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The complexes of {@link JobBenchmark} (and {@link FeedCheck}): made from their index alone, so
 * that every arm, and the executors that cache them, get the same bytes.
 */
final class JobBenchInput {
  private JobBenchInput() {}

  /**
   * Complex {@code c} of the run as bytes: values uniform in [-1.7, 1.7) (about unit variance),
   * 10% of the pairs masked, one SplittableRandom per row, rows made in parallel. The forward does
   * not care which distribution its inputs come from, and making Gaussians per value took longer
   * than folding them.
   */
  static HeapComplex complex(int c, int n, int dim) {
    byte[] pair = new byte[Math.toIntExact(2L * n * n * dim)];
    byte[] mask = new byte[n * n];
    IntStream.range(0, n).parallel().forEach(i -> {
      SplittableRandom rng = new SplittableRandom(1_000_003L * (1000L + c) + i);
      ByteBuffer row = ByteBuffer.wrap(pair, i * n * dim * 2, n * dim * 2).order(ByteOrder.LITTLE_ENDIAN);
      for (int q = 0; q < n * dim; q++) {
        row.putShort(Bf16.fromFloat((float) (rng.nextDouble() * 3.4 - 1.7)));
      }
      for (int j = 0; j < n; j++) {
        mask[i * n + j] = rng.nextDouble() < 0.1 ? (byte) 0 : (byte) 1;
      }
    });
    return new HeapComplex(1, n, dim, pair, mask);
  }

  /**
   * The complexes as whole-complex pair-tile rows, cached in Spark (slots partitions); the cache is
   * built by the first arm's warm-up pass.
   */
  static Dataset<Row> cachedInput(SparkSession spark, JobBenchSettings s) {
    int n = s.n();
    int dim = s.dim();
    return spark.range(0, s.complexes(), 1, Math.min(s.complexes(), s.slots()))
        .map((MapFunction<Long, Row>) c -> {
          HeapComplex x = complex(c.intValue(), n, dim);
          return RowFactory.create("c" + c, n, 0, 0, n, n, dim, x.pair(), x.mask());
        }, Encoders.row(PairTiles.SCHEMA))
        .persist(StorageLevel.MEMORY_ONLY());
  }
}
