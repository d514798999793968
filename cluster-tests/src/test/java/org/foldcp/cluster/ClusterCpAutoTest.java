package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ExplainMode;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.data.FoldCpData;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * spark.foldcp.cp = auto on a cluster: 40 complexes of N = 50 to 3000 (D = 8, one layer) read
 * from a directory by two executor JVMs of two task slots each, a memory cap per rank (192 MiB of
 * the cost model's 10 B N^2 D / cp) that puts N <= 1200 at cp = 1, N = 1600 and 1800 at cp = 2
 * (two TCP teams of two: 4 slots / cp) and N = 2400 and 3000 at cp = 4 (one team over both
 * executors), all in one job; every file written equals the cp = 1 forward's byte for byte.
 */
@ExtendWith(SharedCluster.class)
class ClusterCpAutoTest {
  private static final int D = 8;

  /** Four task slots (two teams of cp = 2, one of cp = 4) and room for the N = 3000 complex's rows. */
  static final class FourSlotsRoomy implements Supplier<Map<String, String>> {
    @Override
    public Map<String, String> get() {
      return Map.of(LocalCluster.WORKER_CORES, "2", LocalCluster.WORKER_MEMORY, "3072");
    }
  }

  @TempDir
  Path dir;

  @Test
  void mixedDatasetSmallOnesAtCp1LargeOnesInTeamsEqualCp1(@ClusterSettings(FourSlotsRoomy.class) LocalCluster cluster)
      throws IOException {
    SparkSession spark = SparkSession.builder().getOrCreate(); // on the cluster's SparkContext
    LayerStack stack = LayerStack.randomAlternating(1, D, 43, true);
    List<Integer> ns = new ArrayList<>();
    for (int k = 0; k < 35; k++) {
      ns.add(50 + 10 * k); // 50 .. 390
    }
    ns.addAll(List.of(1200, 1600, 1800, 2400, 3000));
    Path in = Files.createDirectory(dir.resolve("in"));
    for (int k = 0; k < ns.size(); k++) {
      Npy.writePair(in.resolve(id(k) + ".npy"), PairTensor.random(1, ns.get(k), D, 700 + k, 0.0));
    }

    spark.conf().set(FoldCpConf.CP.name(), "auto");
    spark.conf().set(FoldCpConf.CP_AUTO_CANDIDATES.name(), "1,2,4");
    spark.conf().set(FoldCpConf.CP_AUTO_MEMORY_PER_RANK.name(), "192m");
    Path out = dir.resolve("out");
    try {
      Dataset<Row> folded = FoldCp.apply(FoldCpData.tilesFromDirectory(spark, in.toUri().toString()), stack,
          FoldCpOptions.fromConf());
      String explain = ((org.apache.spark.sql.classic.Dataset<Row>) folded).queryExecution()
          .explainString(ExplainMode.fromString("extended"));
      assertTrue(explain.contains("cp auto: 36 of 40 complexes at cp = 1 (N 50..1200"), explain);
      assertTrue(explain.contains("cp auto: 2 of 40 complexes at cp = 2 (N 1600..1800"), explain);
      assertTrue(explain.contains("cp auto: 2 of 40 complexes at cp = 4 (N 2400..3000"), explain);
      FoldCpData.writeNpyDirectory(folded, out.toUri().toString());
    } finally {
      spark.conf().unset(FoldCpConf.CP.name());
      spark.conf().unset(FoldCpConf.CP_AUTO_CANDIDATES.name());
      spark.conf().unset(FoldCpConf.CP_AUTO_MEMORY_PER_RANK.name());
    }

    Path reference = dir.resolve("reference.npy");
    try (CpuTriMul cpu = new CpuTriMul(2)) {
      for (int k = 0; k < ns.size(); k++) {
        Npy.writePair(reference, cpu.forward(Npy.readPair(in.resolve(id(k) + ".npy")), stack));
        assertTrue(Arrays.equals(Files.readAllBytes(reference), Files.readAllBytes(out.resolve(id(k) + ".npy"))),
            "complex " + id(k) + " (N = " + ns.get(k) + "): the cp auto output differs from cp = 1");
      }
    }
    try (var files = Files.list(out)) {
      assertEquals(41, files.filter(p -> !p.getFileName().toString().startsWith(".")).count(),
          "one file per complex and _SUCCESS");
    }
  }

  private static String id(int k) {
    return String.format("m%02d", k);
  }
}
