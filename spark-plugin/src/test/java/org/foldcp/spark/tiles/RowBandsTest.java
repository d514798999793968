package org.foldcp.spark.tiles;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.route.RouteMetrics;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.SingleRankRoute;
import org.junit.jupiter.api.Test;

class RowBandsTest {
  @Test
  void aComplexAboveOneBinaryValueIsCutIntoBandsBelowIt() {
    // (1, 8192, 8192, 32): 4 GiB of bf16, twice what one binary value could hold; one row is 512 KiB
    int n = 8192;
    int d = 32;
    int[][] bands = RowBands.BINARY.bands("big", n, d);
    int per = RowBands.BINARY.rowsPerBand("big", n, d);
    assertEquals(2048, per, "1 GiB bands hold 2048 rows of 512 KiB");
    assertEquals(4, bands.length, "8192 rows in bands of 2048");
    long covered = 0;
    for (int[] b : bands) {
      assertEquals(covered, b[0], "bands follow one another");
      assertTrue(2L * b[1] * n * d <= RowBands.DEFAULT_MAX_TILE_BYTES, "each band within the default limit");
      covered += b[1];
    }
    assertEquals(n, covered);
    // a complex that fits stays whole
    assertEquals(1, RowBands.BINARY.bands("small", 1024, 128).length);
  }

  @Test
  void aRowTooLargeForOneTileIsRefusedNamingTheComplex() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new RowBands(1000).rowsPerBand("wide", 100, 8));
    assertTrue(e.getMessage().contains("complex 'wide'") && e.getMessage().contains("1600 bytes")
        && e.getMessage().contains("cp > 1"), e.getMessage());
    assertThrows(InvalidInputException.class, () -> new RowBands(RowBands.BINARY_LIMIT + 1));
  }

  @Test
  void cutThenGatherGivesBackTheComplexAndItsMask() {
    PairTensor x = PairTensor.random(1, 21, 8, 4, 0.25);
    RowBands bands = new RowBands(2L * 21 * 8 * 5); // five rows per band
    TileRecord whole = new TileRecord("x", 21, 0, 0, x);
    List<TileRecord> cut = bands.cut(whole);
    assertEquals(List.of(0, 5, 10, 15, 20), cut.stream().map(t -> t.row0).toList());
    assertTrue(cut.stream().allMatch(t -> t.pairBytes() <= bands.maxTileBytes()));

    List<TileRecord> stream = new ArrayList<>(cut);
    TileRecord other = new TileRecord("y", 3, 0, 0, PairTensor.random(1, 3, 8, 5, 0.0));
    stream.add(other);
    var it = RowBands.gather(stream.iterator());
    assertTrue(it.next().tile.sameAs(x), "the bands joined equal the complex, values and mask");
    assertSame(other, it.next(), "a whole complex passes through");
    assertSame(whole, new RowBands(RowBands.BINARY_LIMIT).cut(whole).get(0), "a complex that fits is not copied");
  }

  @Test
  void bandsOutOfOrderOrInterleavedFailSayingWhatTheRouteAccepts() {
    PairTensor x = PairTensor.random(1, 10, 8, 4, 0.0);
    List<TileRecord> cut = new RowBands(2L * 10 * 8 * 4).cut(new TileRecord("x", 10, 0, 0, x));
    List<TileRecord> swapped = List.of(cut.get(1), cut.get(0), cut.get(2));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> RowBands.gather(swapped.iterator()).next());
    assertTrue(e.getMessage().contains("first tile of complex 'x'") && e.getMessage().contains("row order"),
        e.getMessage());
    List<TileRecord> cutShort = List.of(cut.get(0), cut.get(1));
    e = assertThrows(InvalidInputException.class, () -> RowBands.gather(cutShort.iterator()).next());
    assertTrue(e.getMessage().contains("rows [0, 8)") && e.getMessage().contains("end of the partition")
        && e.getMessage().contains("spark.foldcp.route=shuffle"), e.getMessage());
  }

  /**
   * The cp = 1 route with a lowered band limit (a real constructor parameter): banded input is
   * joined, the output leaves as bands within the limit, and the values are the CPU backend's.
   */
  @Test
  void theCp1RouteJoinsBandsAndEmitsBandsWithinItsLimit() {
    SparkSession spark = SparkSession.builder().master("local[2]").config("spark.ui.enabled", "false").getOrCreate();
    try {
      LayerStack stack = LayerStack.randomAlternating(2, 8, 9, true);
      PairTensor a = PairTensor.random(1, 23, 8, 1, 0.2);
      PairTensor b = PairTensor.random(1, 6, 8, 2, 0.0);
      RowBands bands = new RowBands(2L * 23 * 8 * 7); // seven rows of a; b fits whole
      List<TileRecord> in = new ArrayList<>(bands.cut(new TileRecord("a", 23, 0, 0, a)));
      in.add(new TileRecord("b", 6, 0, 0, b));
      assertEquals(5, in.size());

      List<TileRecord> out = new SingleRankRoute(bands)
          .run(JavaSparkContext.fromSparkContext(spark.sparkContext()).parallelize(in, 1), stack,
              RoutePlan.single(1, "test"), RouteMetrics.NONE)
          .collect();

      assertEquals(List.of(0, 7, 14, 21), out.stream().filter(t -> t.complexId.equals("a")).map(t -> t.row0).toList());
      assertTrue(out.stream().allMatch(t -> t.pairBytes() <= bands.maxTileBytes()), "every output tile within the limit");
      try (CpuTriMul cpu = new CpuTriMul(1)) {
        List<TileRecord> outA = out.stream().filter(t -> t.complexId.equals("a")).toList();
        assertTrue(RowBands.gather(outA.iterator()).next().tile.sameAs(cpu.forward(a, stack)), "a, bit for bit");
        TileRecord outB = out.stream().filter(t -> t.complexId.equals("b")).findFirst().orElseThrow();
        assertTrue(outB.tile.sameAs(cpu.forward(b, stack)), "b, bit for bit");
      }
    } finally {
      spark.stop();
    }
  }
}
