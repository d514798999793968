package org.foldcp.spark.shuffle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;

/** The route under cluster settings users run with; each test has a Spark session of its own. */
class ShuffleRouteSettingsTest {
  @Test
  void runsWithDynamicAllocationEnabled() {
    assertRouteCorrectUnder(CpGrid.oneD(2), "spark.dynamicAllocation.enabled", "true",
        "spark.dynamicAllocation.shuffleTracking.enabled", "true");
  }

  /** Kryo without registrations: the shuffle records must go through Kryo's default serializers. */
  @Test
  void runsWithKryo() {
    assertRouteCorrectUnder(CpGrid.of(2, 2), "spark.serializer", "org.apache.spark.serializer.KryoSerializer");
  }

  @Test
  void takesItsPartitionCountFromTheConstructorOrTheConf() {
    SparkSession spark = LocalSpark.start("spark.sql.shuffle.partitions", "3");
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<TileRecord> in = Complexes.whole("a", ShuffleRouteTest.COMPLEXES.get("a"));
      var plan = ShuffleRoute.plan(CpGrid.oneD(2), 1, "test");
      assertEquals(3, new ShuffleRoute().run(jsc.parallelize(in), ShuffleRouteTest.STACK, plan, RouteMetrics.NONE)
          .getNumPartitions());
      assertEquals(5, new ShuffleRoute(5).run(jsc.parallelize(in), ShuffleRouteTest.STACK, plan, RouteMetrics.NONE)
          .getNumPartitions());
    } finally {
      spark.stop();
    }
  }

  private static void assertRouteCorrectUnder(CpGrid grid, String... conf) {
    SparkSession spark = LocalSpark.start(conf);
    try {
      for (int q = 0; q < conf.length; q += 2) {
        assertEquals(conf[q + 1], spark.sparkContext().getConf().get(conf[q]), "the session must run with " + conf[q]);
      }
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<TileRecord> in = new ArrayList<>();
      long seed = 11;
      for (Map.Entry<String, PairTensor> e : ShuffleRouteTest.COMPLEXES.entrySet()) {
        in.addAll(Complexes.irregular(e.getKey(), e.getValue(), seed++));
      }
      List<TileRecord> out = new ShuffleRoute()
          .run(jsc.parallelize(in, 3), ShuffleRouteTest.STACK, ShuffleRoute.plan(grid, 1, "test"), RouteMetrics.NONE)
          .collect();
      Map<String, PairTensor> whole = Complexes.reassemble(out, ShuffleRouteTest.nTokens(ShuffleRouteTest.COMPLEXES),
          ShuffleRouteTest.D);
      ShuffleRouteTest.COMPLEXES.forEach((id, x) -> assertTrue(
          whole.get(id).sameAs(ShuffleRouteTest.reference(x, ShuffleRouteTest.STACK)),
          "complex '" + id + "' must equal the CPU backend bit for bit"));
    } finally {
      spark.stop();
    }
  }
}
