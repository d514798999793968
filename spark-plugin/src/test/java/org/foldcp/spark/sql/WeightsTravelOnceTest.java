package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.Set;
import org.apache.spark.Dependency;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

/**
 * The weights reach executors by broadcast, not inside task closures: what Spark ships with each
 * task of every stage of a route (the stage's RDD chain and functions, serialized as the
 * scheduler serializes them) stays the same size when the weights of the same layers grow a hundredfold.
 */
class WeightsTravelOnceTest {
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    spark = SparkTestSession.start();
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  @Test
  void taskBinariesDoNotGrowWithTheWeights() {
    LayerStack small = LayerStack.randomAlternating(4, 8, 3, true); // same layers, so the same stages
    LayerStack big = LayerStack.randomAlternating(4, 128, 3, true);
    long weightsGrowth = javaBytes(big) - javaBytes(small);
    assertTrue(weightsGrowth > 500_000, "the big stack must be much bigger: " + weightsGrowth + " bytes more");
    for (Kind kind : Kind.values()) {
      long withSmall = largestTaskBinary(route(kind, small));
      long withBig = largestTaskBinary(route(kind, big));
      assertTrue(withBig - withSmall < 1024, kind + ": the largest task binary grew from " + withSmall + " to "
          + withBig + " bytes with " + weightsGrowth + " bytes more weights");
    }
  }

  private static JavaRDD<TileRecord> route(Kind kind, LayerStack stack) {
    JavaRDD<TileRecord> in = SparkTestSession.wholeComplexes(spark).javaRDD().map(TileRecord::fromRow);
    CpGrid grid = kind == Kind.SINGLE ? CpGrid.oneD(1) : CpGrid.oneD(2);
    RoutePlan plan = RoutePlan.of(kind, grid, 1, org.foldcp.spark.config.FoldCpConf.defaults(), "test");
    return Routes.forKind(kind).run(in, stack, plan, RouteMetrics.NONE);
  }

  /**
   * The largest serialized RDD of the lineage. A stage's task binary is its last RDD with the
   * narrow chain above it, up to the shuffle boundaries (whose parents are transient), so the
   * largest of these bounds every stage's; functions holding weights would show in one of them.
   */
  private static long largestTaskBinary(JavaRDD<?> out) {
    long largest = 0;
    Deque<RDD<?>> todo = new ArrayDeque<>();
    Set<Integer> seen = new HashSet<>();
    todo.push(out.rdd());
    while (!todo.isEmpty()) {
      RDD<?> r = todo.pop();
      if (!seen.add(r.id())) {
        continue;
      }
      largest = Math.max(largest, SparkEnv.get().closureSerializer().newInstance()
          .serialize(r, ClassTag$.MODULE$.apply(RDD.class)).remaining());
      for (Dependency<?> d : CollectionConverters.asJava(r.dependencies())) {
        todo.push(d.rdd());
      }
    }
    return largest;
  }

  private static long javaBytes(Object o) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(o);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.size();
  }
}
