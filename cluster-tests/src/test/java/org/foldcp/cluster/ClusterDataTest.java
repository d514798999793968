package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.data.FoldCpData;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Complexes from a directory and back, read and written by the executor JVMs: 20 complexes of
 * mixed N (some with masks) through the cp = 1 route, written per complex through the output
 * committer, each file equal byte for byte to what the single-file path (FoldCp.tilesFromNpy,
 * FoldCp.apply, FoldCp.assemble, Npy.writePair on the driver) makes of the same input.
 */
@ExtendWith(SharedCluster.class)
class ClusterDataTest {
  private static final int COMPLEXES = 20;

  @TempDir
  Path dir;

  @Test
  void twentyComplexesOfMixedNFromADirectoryAndBackEqualTheSingleFilePath(LocalCluster cluster) throws IOException {
    SparkSession spark = SparkSession.builder().getOrCreate(); // on the cluster's SparkContext
    Path in = Files.createDirectory(dir.resolve("in"));
    List<String> ids = new ArrayList<>();
    for (int c = 0; c < COMPLEXES; c++) {
      String id = String.format("cx%02d", c);
      PairTensor x = PairTensor.random(1, 5 + 3 * c % 31, Complexes.D, 40 + c, c % 3 == 0 ? 0.2 : 0.0);
      Npy.writePair(in.resolve(id + ".npy"), x);
      if (x.hasMask()) {
        Npy.writeMask(in.resolve(id + ".mask.npy"), x);
      }
      ids.add(id);
    }
    LayerStack stack = Complexes.stack(77L);
    FoldCpOptions cp1 = FoldCpOptions.fromConf().withRoute("cpu");

    Dataset<Row> tiles = FoldCpData.tilesFromDirectory(spark, in.toUri().toString());
    assertTrue(tiles.javaRDD().getNumPartitions() >= 2, "the complexes are spread over read tasks");
    Path out = dir.resolve("out");
    FoldCpData.writeNpyDirectory(FoldCp.apply(tiles, stack, cp1), out.toUri().toString());

    Dataset<Row> single = null;
    for (String id : ids) {
      Path mask = in.resolve(id + ".mask.npy");
      Dataset<Row> one = FoldCp.tilesFromNpy(spark, in.resolve(id + ".npy"), Files.exists(mask) ? mask : null, id);
      single = single == null ? one : single.union(one);
    }
    List<Row> expected = FoldCp.apply(single, stack, cp1).collectAsList();

    Set<String> written = new TreeSet<>();
    try (Stream<Path> s = Files.list(out)) {
      s.map(p -> p.getFileName().toString()).filter(n -> !n.startsWith(".")).forEach(written::add);
    }
    Set<String> want = new TreeSet<>(List.of("_SUCCESS"));
    ids.forEach(id -> want.add(id + ".npy"));
    assertEquals(want, written, "one file per complex and the job's _SUCCESS");
    for (String id : ids) {
      Path reference = dir.resolve(id + "-single.npy");
      Npy.writePair(reference, FoldCp.assemble(expected, id));
      assertArrayEquals(Files.readAllBytes(reference), Files.readAllBytes(out.resolve(id + ".npy")), id);
    }
  }
}
