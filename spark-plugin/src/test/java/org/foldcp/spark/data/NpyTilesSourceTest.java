package org.foldcp.spark.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.tiles.PairTiles;
import org.junit.jupiter.api.Test;

/** The foldcp-npy data source against the single-file path FoldCp.tilesFromNpy, on the same files. */
class NpyTilesSourceTest extends DataSession {

  /** a: masked (1, N, N, D); b: (N, N, D) without mask; c: (2, N, N, D) with a (2, N, N) mask. */
  private void writeMixed() {
    DataSession.write(dir, "a", DataSession.complex(13, 1, true));
    Npy.writePair(dir.resolve("b.npy"), DataSession.complex(20, 2, false), 3);
    PairTensor c = PairTensor.random(2, 9, 8, 3, 0.3);
    Npy.writePair(dir.resolve("c.npy"), c);
    Npy.writeMask(dir.resolve("c.mask.npy"), c);
  }

  private List<Row> singleFilePath(String id, boolean masked) {
    Path mask = masked ? dir.resolve(id + ".mask.npy") : null;
    return FoldCp.tilesFromNpy(spark, dir.resolve(id + ".npy"), mask, id).collectAsList();
  }

  @Test
  void rowsEqualTheSingleFilePathField_byField() {
    writeMixed();
    List<Row> expected = new ArrayList<>();
    expected.addAll(singleFilePath("a", true));
    expected.addAll(singleFilePath("b", false));
    expected.addAll(singleFilePath("c", true));

    Dataset<Row> tiles = FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir));

    assertEquals(PairTiles.SCHEMA, tiles.schema());
    assertSameRows(expected, tiles.collectAsList());
    assertEquals(List.of("a", "b", "c/0", "c/1"), ids(tiles.collectAsList()));
  }

  @Test
  void aLoweredBandLimitCutsComplexesIntoRowBandsThatTheCp1RouteJoins() {
    writeMixed();
    long limit = 2L * 20 * 8 * 6; // six rows of the N = 20 complex, nine of N = 13
    List<Row> bands = FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir), limit).collectAsList();

    List<Row> b = bands.stream().filter(r -> r.getString(0).equals("b")).toList();
    assertEquals(List.of(0, 6, 12, 18), b.stream().map(r -> r.getInt(2)).toList(), "row0 of b's bands");
    assertEquals(List.of(6, 6, 6, 2), b.stream().map(r -> r.getInt(4)).toList(), "rows of b's bands");
    assertTrue(bands.stream().allMatch(r -> ((byte[]) r.get(7)).length <= limit), "every band within the limit");

    LayerStack stack = LayerStack.randomAlternating(2, 8, 5, true);
    FoldCpOptions cpu = FoldCpOptions.fromConf().withRoute("cpu");
    List<Row> whole = FoldCp.apply(FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir)), stack, cpu)
        .collectAsList();
    List<Row> banded = FoldCp.apply(FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir), limit), stack, cpu)
        .collectAsList();
    for (String id : List.of("a", "b", "c/0", "c/1")) {
      assertTrue(FoldCp.assemble(whole, id).sameAs(FoldCp.assemble(banded, id)), id + ": banded input, same output");
    }
  }

  @Test
  void aMaskOfTheWrongShapeFailsNamingTheFileAndTheShapeItNeeds() {
    DataSession.write(dir, "a", DataSession.complex(6, 1, false));
    Npy.writeMask(dir.resolve("a.mask.npy"), DataSession.complex(5, 1, true));

    Exception e = assertThrows(Exception.class,
        () -> FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir)).collectAsList());
    String m = rootMessage(e);
    assertTrue(m.contains("a.mask.npy") && m.contains("(1, 5, 5)") && m.contains("(B, rows, cols) = (1, 6, 6)"), m);
  }

  @Test
  void aFileThatIsNotAnNpyArrayFailsNamingIt() throws Exception {
    java.nio.file.Files.writeString(dir.resolve("a.npy"), "not numpy");
    Exception e = assertThrows(Exception.class,
        () -> FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir)).collectAsList());
    String m = rootMessage(e);
    assertTrue(m.contains("a.npy") && m.contains("\\x93NUMPY"), m);
  }

  @Test
  void theConventionIsCheckedAtTheCallAndTheBandLimitToo() {
    DataSession.write(dir, "a", DataSession.complex(6, 1, false));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir.resolve("nope"))));
    assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> FoldCpData.tilesFromDirectory(spark, DataSession.uri(dir), 1));
    assertTrue(e.getMessage().contains("maxTileBytes"), e.getMessage());
  }

  @Test
  void complexesArePackedIntoReadTasksByBytesWithoutSplittingOne() {
    List<ComplexFiles> files = new ArrayList<>();
    for (int k = 0; k < 10; k++) {
      files.add(new ComplexFiles("c" + k, "p" + k, null, 100));
    }
    // 10 x (100 + 10) bytes over 4 slots: splits of 275 bytes, two complexes each
    List<ComplexSplit> splits = NpyTilesScan.pack(files, 1 << 20, 10, 4);
    assertEquals(5, splits.size());
    assertEquals(files, splits.stream().flatMap(s -> s.complexes().stream()).toList(), "all, in order, once");
    // a cap below one complex still takes each complex whole
    assertEquals(10, NpyTilesScan.pack(files, 50, 10, 1).size());
  }

  static String rootMessage(Throwable e) {
    StringBuilder sb = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      sb.append(t.getMessage()).append(" | ");
    }
    return sb.toString();
  }

  private static List<String> ids(List<Row> rows) {
    return rows.stream().map(r -> r.getString(0)).distinct().sorted().toList();
  }

  /** Equal rows, every field, the pair and mask bytes by content; the order of complexes aside. */
  static void assertSameRows(List<Row> expected, List<Row> got) {
    Comparator<Row> order = Comparator.comparing((Row r) -> r.getString(0)).thenComparingInt(r -> r.getInt(2));
    List<Row> e = new ArrayList<>(expected);
    List<Row> g = new ArrayList<>(got);
    e.sort(order);
    g.sort(order);
    assertEquals(e.size(), g.size(), "row count");
    for (int k = 0; k < e.size(); k++) {
      for (int f = 0; f < 7; f++) {
        assertEquals(e.get(k).get(f), g.get(k).get(f), "row " + k + " field " + PairTiles.SCHEMA.fields()[f].name());
      }
      assertArrayEquals((byte[]) e.get(k).get(7), (byte[]) g.get(k).get(7), "row " + k + " pair bytes");
      assertArrayEquals((byte[]) e.get(k).get(8), (byte[]) g.get(k).get(8), "row " + k + " mask bytes");
    }
  }
}
