package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.storage.StorageLevel;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.collection.immutable.Seq;

/** The row cache: rows back as they went in, whole (the very rows) or projected, through Spark's RDDs. */
class RowCachedBatchSerializerTest {
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
  void rowsComeBackAsTheyWentInWholeOrProjected() {
    RowCachedBatchSerializer ser = new RowCachedBatchSerializer();
    Dataset<Row> df = SparkTestSession.wholeComplexes(spark);
    RDD<InternalRow> rows = ((org.apache.spark.sql.classic.Dataset<Row>) df).queryExecution().toRdd();
    Seq<Attribute> attrs = ((org.apache.spark.sql.classic.Dataset<Row>) df).queryExecution().analyzed().output();
    SQLConf conf = SQLConf.get();
    RDD<CachedBatch> cached = ser.convertInternalRowToCachedBatch(rows, attrs, StorageLevel.MEMORY_ONLY(), conf);
    cached.persist(StorageLevel.MEMORY_ONLY());
    List<CachedBatch> batches = cached.toJavaRDD().collect();
    assertEquals(SparkTestSession.IDS.length, batches.size(), "one batch per row");
    for (CachedBatch b : batches) {
      assertEquals(1, b.numRows());
      assertTrue(b.sizeInBytes() > 2L * 13 * 13 * SparkTestSession.D, "its row's bytes: " + b.sizeInBytes());
    }

    List<InternalRow> whole = ser.convertCachedBatchToInternalRow(cached, attrs, attrs, conf).toJavaRDD()
        .map(r -> (InternalRow) ((UnsafeRow) r).copy()).collect();
    for (int c = 0; c < SparkTestSession.IDS.length; c++) {
      TileRecord t = TileRows.decode(whole.get(c), TileRows.identityOrdinals());
      assertEquals(SparkTestSession.IDS[c], t.complexId);
      assertTrue(t.tile.sameAs(SparkTestSession.input(c)), "values and mask of " + t);
    }
    // all columns: the cached row object itself, no copy (within one task, from the block manager)
    List<Boolean> same = ser.convertCachedBatchToInternalRow(cached, attrs, attrs, conf).toJavaRDD()
        .zip(cached.toJavaRDD()).map(p -> p._1() == ((RowCachedBatchSerializer.RowBatch) p._2()).row).collect();
    assertTrue(same.stream().allMatch(x -> x), "the rows handed out are the cached ones");

    Seq<Attribute> two = Scala.seq(List.of(attrs.apply(1), attrs.apply(0)));
    List<InternalRow> projected = ser.convertCachedBatchToInternalRow(cached, attrs, two, conf).toJavaRDD()
        .map(r -> (InternalRow) ((UnsafeRow) r).copy()).collect();
    for (int c = 0; c < SparkTestSession.IDS.length; c++) {
      assertEquals(2, projected.get(c).numFields());
      assertEquals(SparkTestSession.N[c], projected.get(c).getInt(0));
      assertEquals(SparkTestSession.IDS[c], projected.get(c).getUTF8String(1).toString());
    }
    cached.unpersist(true);
  }

  @Test
  void itIsRowBasedAndSaysSo() {
    RowCachedBatchSerializer ser = new RowCachedBatchSerializer();
    assertTrue(!ser.supportsColumnarInput(Scala.seq()) && !ser.supportsColumnarOutput(new org.apache.spark.sql.types.StructType()));
    UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
        () -> ser.convertCachedBatchToColumnarBatch(null, Scala.seq(), Scala.seq(), SQLConf.get()));
    assertTrue(e.getMessage().contains("rows only"), e.getMessage());
    scala.collection.Iterator<CachedBatch> none = scala.collection.Iterator.empty();
    assertSame(none, ser.buildFilter(Scala.seq(), Scala.seq()).apply(0, none), "no statistics: nothing filtered");
  }
}
