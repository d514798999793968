package org.foldcp.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The plugin loaded the way users load it: spark.plugins in a local SparkSession. */
class FoldCpPluginTest {

  private static SparkSession.Builder localSpark(Map<String, String> conf) {
    SparkSession.Builder b = SparkSession.builder()
        .master("local[2]")
        .appName("FoldCpPluginTest")
        .config("spark.ui.enabled", "false")
        .config("spark.plugins", FoldCpPlugin.class.getName());
    conf.forEach(b::config);
    return b;
  }

  @AfterEach
  void noSessionLeftBehind() {
    SparkSession.getActiveSession().foreach(s -> {
      s.stop();
      return null;
    });
  }

  @Test
  void tasksSeeTheSettingsTheDriverValidated() {
    SparkSession spark = localSpark(Map.of(
        "spark.foldcp.cp", "4",
        "spark.foldcp.grid", "2x2",
        "spark.foldcp.route", "shuffle",
        "spark.task.cpus", "2")).getOrCreate();
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      List<String> seen = jsc.parallelize(List.of(1, 2, 3), 3).map(i -> {
        ExecutorState s = ExecutorState.require();
        FoldCpConf c = s.conf();
        // weights.cacheEntries was not configured: seeing it set proves the task reads the
        // driver's complete validated map, not the raw SparkConf.
        return s.executorId() + " device=" + s.deviceOrdinal() + " route=" + c.get(FoldCpConf.ROUTE).label() + " cp=" + c.get(FoldCpConf.CP)
            + " grid=" + c.grid() + " threads=" + s.cpuThreadsPerTask()
            + " fromDriver=" + c.isSet(FoldCpConf.WEIGHTS_CACHE_ENTRIES);
      }).collect();
      assertEquals(3, seen.size());
      for (String s : seen) {
        assertEquals("driver device=-1 route=shuffle cp=4 grid=2x2 threads=2 fromDriver=true", s);
      }
    } finally {
      spark.stop();
    }
    assertFalse(ExecutorState.current().isPresent(), "stopping Spark shuts the executor plugin down");
  }

  @Test
  void pairTensorsTravelThroughKryoInAJob() {
    SparkSession spark = localSpark(Map.of(
        "spark.serializer", "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator", FoldCpKryoRegistrator.class.getName(),
        "spark.kryo.registrationRequired", "true")).getOrCreate();
    try {
      JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
      // Tensors are made in the tasks and come back as task results, serialized by Kryo.
      JavaRDD<PairTensor> made = jsc.parallelize(List.of(11L, 12L, 13L, 14L), 2)
          .map(seed -> PairTensor.random(1, 9, 4, seed, 0.25));
      List<PairTensor> back = made.collect();
      List<PairTensor> expected = new ArrayList<>();
      for (long seed = 11; seed <= 14; seed++) {
        expected.add(PairTensor.random(1, 9, 4, seed, 0.25));
      }
      assertEquals(expected.size(), back.size());
      for (int q = 0; q < back.size(); q++) {
        assertTrue(back.get(q).sameAs(expected.get(q)), "tensor " + q);
        assertTrue(back.get(q).hasMask(), "tensor " + q);
      }
    } finally {
      spark.stop();
    }
  }

  @Test
  void aBadValueStopsSparkFromStarting() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> localSpark(Map.of("spark.foldcp.cp", "0")).getOrCreate());
    assertEquals("spark.foldcp.cp = '0': must be auto or an integer >= 1", e.getMessage());
    assertFalse(SparkSession.getActiveSession().isDefined());
  }

  @Test
  void anUnknownKeyStopsSparkFromStarting() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> localSpark(Map.of("spark.foldcp.cpp", "2")).getOrCreate());
    String m = e.getMessage();
    assertTrue(m.startsWith("spark.foldcp.cpp = '2': not a fold-cp setting (did you mean spark.foldcp.cp?);"
        + " the known keys are spark.foldcp.route, spark.foldcp.cp, "), m);
    assertFalse(SparkSession.getActiveSession().isDefined());
  }
}
