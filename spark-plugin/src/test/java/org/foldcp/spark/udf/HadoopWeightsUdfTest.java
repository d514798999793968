package org.foldcp.spark.udf;

import static org.foldcp.spark.udf.UdfFixtures.LAYERS;
import static org.foldcp.spark.udf.UdfFixtures.expected;
import static org.foldcp.spark.udf.UdfFixtures.messages;
import static org.foldcp.spark.udf.UdfFixtures.pairBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;
import scala.runtime.BoxedUnit;

/**
 * foldcp_trimul with its weights on Hadoop file systems, in Spark local mode: file: URIs, and a
 * scheme only Hadoop knows (lfs:, the local disk renamed by the session's
 * spark.hadoop.fs.lfs.impl), read on the executor through its Hadoop configuration, once per
 * file version whatever the spelling; a scheme without a FileSystem and a missing file fail the
 * query naming the argument and the rule.
 */
class HadoopWeightsUdfTest {
  private static final int D = 8;
  private static final StructType SCHEMA = new StructType()
      .add("id", DataTypes.StringType, false)
      .add("n", DataTypes.IntegerType, false)
      .add("pair", DataTypes.BinaryType, false);

  @TempDir
  static Path dir;
  private static SparkSession spark;
  private static final List<PairTensor> INPUTS = List.of(PairTensor.random(1, 6, D, 11, 0.0),
      PairTensor.random(1, 9, D, 12, 0.0), PairTensor.random(1, 5, D, 13, 0.0));

  @BeforeAll
  static void start() {
    Option<SparkSession> old = SparkSession.getDefaultSession();
    if (old.isDefined()) {
      old.get().stop();
    }
    spark = SparkSession.builder().master("local[2]").appName("HadoopWeightsUdfTest")
        .config("spark.ui.enabled", "false")
        .config("spark.hadoop.fs." + RenamedLocalFileSystem.SCHEME + ".impl", RenamedLocalFileSystem.class.getName())
        .withExtensions(ext -> {
          FoldCpFunctions.inject(ext);
          return BoxedUnit.UNIT;
        })
        .getOrCreate();
    List<Row> rows = new ArrayList<>();
    for (int c = 0; c < INPUTS.size(); c++) {
      rows.add(RowFactory.create("c" + c, INPUTS.get(c).rows(), pairBytes(INPUTS.get(c))));
    }
    spark.createDataFrame(rows, SCHEMA).repartition(rows.size()).createOrReplaceTempView("complexes");
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static List<Row> trimul(String weights) {
    return spark.sql("SELECT id, foldcp_trimul(pair, n, " + D + ", NULL, '" + weights + "', '" + LAYERS + "')"
        + " FROM complexes ORDER BY id").collectAsList();
  }

  private static void assertMatchesCpu(List<Row> out, LayerStack stack) {
    assertEquals(INPUTS.size(), out.size());
    for (int c = 0; c < INPUTS.size(); c++) {
      assertArrayEquals(expected(INPUTS.get(c), stack), (byte[]) out.get(c).get(1), "c" + c);
    }
  }

  @Test
  void fileUrisAndAHadoopOnlySchemeReadTheWeightsOncePerExecutor() {
    Path file = UdfFixtures.writeWeights(dir, "on-hadoop.safetensors", D, 77);
    LayerStack stack = UdfFixtures.referenceStack(file, D);
    long before = WeightsCache.shared().loads();

    assertMatchesCpu(trimul(file.toUri().toString()), stack); // file:///...
    assertMatchesCpu(trimul("file:" + file), stack);          // file:/..., as Hadoop prints paths
    assertMatchesCpu(trimul(file.toString()), stack);         // the local path
    assertEquals(1, WeightsCache.shared().loads() - before,
        "one executor (this JVM), three spellings of one file, three tasks each: one read");

    String lfs = RenamedLocalFileSystem.SCHEME + "://" + file;
    assertMatchesCpu(trimul(lfs), stack);
    assertEquals(2, WeightsCache.shared().loads() - before, "another file system's path is another key: one more read");
    assertTrue(WeightsCache.shared().contains(WeightsKey.of(lfs, LAYERS)), "cached under its lfs: location (this JVM is the executor)");
  }

  @Test
  void aSchemeWithoutAFileSystemAndAMissingFileFailNamingTheArgument() {
    Exception scheme = assertThrows(Exception.class, () -> trimul("nosuchfs://bucket/model.safetensors"));
    assertTrue(messages(scheme).contains("weights = 'nosuchfs://bucket/model.safetensors': its scheme has no Hadoop"
        + " FileSystem on executor driver (No FileSystem for scheme \"nosuchfs\")"), messages(scheme));

    String absent = RenamedLocalFileSystem.SCHEME + "://" + dir.resolve("absent.safetensors");
    Exception missing = assertThrows(Exception.class, () -> trimul(absent));
    assertTrue(messages(missing).contains("weights file = '" + absent + "': does not exist on executor driver (looked at "
        + RenamedLocalFileSystem.SCHEME + ":" + dir.resolve("absent.safetensors") + ")"), messages(missing));
  }
}
