package org.foldcp.spark.udf;

import static org.apache.spark.sql.functions.col;
import static org.foldcp.spark.udf.UdfFixtures.LAYERS;
import static org.foldcp.spark.udf.UdfFixtures.expected;
import static org.foldcp.spark.udf.UdfFixtures.maskBytes;
import static org.foldcp.spark.udf.UdfFixtures.messages;
import static org.foldcp.spark.udf.UdfFixtures.pairBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
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
import scala.runtime.BoxedUnit;

/**
 * foldcp_trimul in Spark local mode, through its three entry points: the built-in injected by
 * the session extensions, the temporary function of register(), and the Column helper.
 */
class FoldCpFunctionsTest {
  private static final int D = 8;
  private static final StructType SCHEMA = new StructType()
      .add("id", DataTypes.StringType, false)
      .add("n", DataTypes.IntegerType, false)
      .add("dim", DataTypes.IntegerType, false)
      .add("pair", DataTypes.BinaryType, false)
      .add("mask", DataTypes.BinaryType, true);

  @TempDir
  static Path dir;
  private static Path weights;
  /** Sessions of one local[2] SparkContext: one with fold-cp's extensions, one without. */
  private static SparkSession extended;
  private static SparkSession plain;
  private static final Map<String, PairTensor> inputs = new LinkedHashMap<>();
  private static final Map<String, byte[]> expected = new LinkedHashMap<>();

  @BeforeAll
  static void start() {
    weights = UdfFixtures.writeWeights(dir, "model.safetensors", D, 42);
    LayerStack stack = UdfFixtures.referenceStack(weights, D);
    inputs.put("c7-masked", PairTensor.random(1, 7, D, 1, 0.2));
    inputs.put("c12", PairTensor.random(1, 12, D, 2, 0.0));
    inputs.put("c20-masked", PairTensor.random(1, 20, D, 3, 0.3));
    inputs.forEach((id, x) -> expected.put(id, expected(x, stack)));

    extended = SparkSession.builder()
        .master("local[2]")
        .appName("FoldCpFunctionsTest")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.foldcp.weights.cacheEntries", "3")
        .withExtensions(ext -> {
          FoldCpFunctions.inject(ext);
          return BoxedUnit.UNIT;
        })
        .create();
    plain = SparkSession.builder().create();
  }

  @AfterAll
  static void stop() {
    if (extended != null) {
      extended.stop();
    }
  }

  /** The complexes as rows, one per partition, so that the two local cores run tasks in parallel. */
  private static Dataset<Row> complexes(SparkSession s) {
    List<Row> rows = new ArrayList<>();
    inputs.forEach((id, x) -> rows.add(RowFactory.create(id, x.rows(), D, pairBytes(x), maskBytes(x))));
    return s.createDataFrame(rows, SCHEMA).repartition(rows.size());
  }

  private static void assertMatchesCpu(List<Row> out) {
    assertEquals(inputs.size(), out.size());
    for (Row r : out) {
      String id = r.getString(0);
      assertArrayEquals(expected.get(id), (byte[]) r.get(1), id);
    }
  }

  private static String sqlCall(Path file, String layers) {
    return "foldcp_trimul(pair, n, dim, mask, '" + file + "', '" + layers + "')";
  }

  @Test
  void injectedBuiltInRunsInSqlAndMatchesTheCpuBackendBitForBit() {
    SparkSession s = extended.newSession();
    complexes(s).createOrReplaceTempView("complexes");
    assertMatchesCpu(s.sql("SELECT id, " + sqlCall(weights, LAYERS) + " AS out FROM complexes").collectAsList());
  }

  @Test
  void registerMakesTheFunctionAvailableToSql() {
    SparkSession s = plain.newSession();
    complexes(s).createOrReplaceTempView("complexes");
    String query = "SELECT id, " + sqlCall(weights, LAYERS) + " AS out FROM complexes";
    Exception unresolved = assertThrows(Exception.class, () -> s.sql(query).collectAsList());
    assertTrue(messages(unresolved).contains("foldcp_trimul"), messages(unresolved));

    FoldCpFunctions.register(s);
    assertMatchesCpu(s.sql(query).collectAsList());
  }

  @Test
  void columnHelperNeedsNoRegistration() {
    Dataset<Row> df = complexes(plain.newSession());
    assertMatchesCpu(df.select(col("id"),
        FoldCpFunctions.trimul(col("pair"), col("n"), col("dim"), col("mask"), weights.toString(), LAYERS))
        .collectAsList());
  }

  @Test
  void columnHelperWithoutMaskTreatsEveryPositionAsValid() {
    Dataset<Row> df = complexes(plain.newSession()).where(col("id").equalTo("c12"));
    List<Row> out = df.select(col("id"),
        FoldCpFunctions.trimul(col("pair"), col("n"), col("dim"), weights.toString(), LAYERS)).collectAsList();
    assertEquals(1, out.size());
    assertArrayEquals(expected.get("c12"), (byte[]) out.get(0).get(1));
  }

  @Test
  void weightsAreReadOncePerExecutorAcrossRowsTasksAndQueries() {
    // A file of its own, so that no other test has cached its key.
    Path file = UdfFixtures.writeWeights(dir, "read-once.safetensors", D, 42);
    WeightsKey key = WeightsKey.of(file.toString(), LAYERS);
    long before = WeightsCache.shared().loads();

    SparkSession s = extended.newSession();
    complexes(s).createOrReplaceTempView("complexes");
    for (int q = 0; q < 2; q++) {
      assertMatchesCpu(s.sql("SELECT id, " + sqlCall(file, LAYERS) + " FROM complexes").collectAsList());
    }
    assertMatchesCpu(complexes(s).select(col("id"),
        FoldCpFunctions.trimul(col("pair"), col("n"), col("dim"), col("mask"), file.toString(), LAYERS))
        .collectAsList());

    // local mode: one executor (this JVM), 9 rows in 9 tasks, two at a time; one read of the file.
    assertEquals(1, WeightsCache.shared().loads() - before);
    assertTrue(WeightsCache.shared().contains(key));
    assertEquals(3, WeightsCache.shared().capacity(), "spark.foldcp.weights.cacheEntries of the executor");
  }

  @Test
  void aBareFileNameFindsWeightsShippedWithTheApplication() {
    // Same seed as model.safetensors: same weights, so the same expected outputs.
    Path file = UdfFixtures.writeWeights(dir, "shipped-model.safetensors", D, 42);
    extended.sparkContext().addFile(file.toString());
    SparkSession s = extended.newSession();
    complexes(s).createOrReplaceTempView("complexes");
    assertMatchesCpu(s.sql("SELECT id, foldcp_trimul(pair, n, dim, mask, 'shipped-model.safetensors', '" + LAYERS
        + "') FROM complexes").collectAsList());

    Exception missing = assertThrows(Exception.class, () -> s.sql(
        "SELECT foldcp_trimul(pair, n, dim, mask, 'never-shipped.safetensors', '" + LAYERS + "') FROM complexes")
        .collectAsList());
    assertTrue(messages(missing).contains("weights file = 'never-shipped.safetensors': does not exist on executor driver"
        + " (looked at " + Path.of("never-shipped.safetensors").toAbsolutePath()
        + " and among the files shipped with the application)"), messages(missing));
  }

  @Test
  void nullPairsGiveNullAndBigintSizesWork() {
    SparkSession s = extended.newSession();
    complexes(s).createOrReplaceTempView("complexes");
    List<Row> out = s.sql("SELECT id, foldcp_trimul(CAST(NULL AS BINARY), n, dim, mask, '" + weights + "', '"
        + LAYERS + "') FROM complexes").collectAsList();
    assertEquals(3, out.size());
    for (Row r : out) {
      assertNull(r.get(1));
    }
    assertMatchesCpu(s.sql("SELECT id, foldcp_trimul(pair, CAST(n AS BIGINT), CAST(dim AS BIGINT), mask, '"
        + weights + "', '" + LAYERS + "') FROM complexes").collectAsList());
  }

  @Test
  void badInputsFailTheQueryWithTheirMessage() {
    SparkSession s = extended.newSession();
    complexes(s).createOrReplaceTempView("complexes");
    Exception shortPair = assertThrows(Exception.class, () -> s.sql(
        "SELECT foldcp_trimul(substring(pair, 1, 10), n, dim, mask, '" + weights + "', '" + LAYERS
            + "') FROM complexes WHERE id = 'c12'").collectAsList());
    assertTrue(messages(shortPair).contains(
        "pair length = 10 bytes: must be 2 * n * n * dim = 2 * 12 * 12 * 8 = 2304 bytes"), messages(shortPair));

    Exception badPrefix = assertThrows(Exception.class, () -> s.sql(
        "SELECT " + sqlCall(weights, "a.tri_mul_out.,a.tri_mul_sideways.") + " FROM complexes").collectAsList());
    assertTrue(messages(badPrefix).contains("key prefix = 'a.tri_mul_sideways.': no tensor in"), messages(badPrefix));

    Exception arity = assertThrows(Exception.class, () -> s.sql("SELECT foldcp_trimul(pair, n) FROM complexes"));
    assertTrue(messages(arity).contains("argument count of foldcp_trimul = 2: must be 6"), messages(arity));
  }

  @Test
  void describeFunctionShowsTheUsage() {
    List<Row> rows = extended.newSession().sql("DESCRIBE FUNCTION EXTENDED foldcp_trimul").collectAsList();
    String text = rows.toString();
    assertTrue(text.contains("foldcp_trimul(pair, n, dim, mask, weights, layers) - Applies TriMul layers"), text);
    assertTrue(text.contains("layers - comma-separated key prefixes applied in order"), text);
  }
}
