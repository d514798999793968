package org.foldcp.spark.tiles;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import scala.Tuple2;

/**
 * Bad pair-tile rows (docs/design.md section 5): each is refused with a message that names the value
 * and the rule, before anything is allocated from a size field.
 */
class PairTilesBadInputTest {
  /** A (1, 3, 3, 2) masked complex "c" as one whole tile row. */
  private static Object[] whole() {
    PairTensor x = PairTensor.random(1, 3, 2, 1L, 0.3);
    Row r = PairTiles.toRow("c", 3, 0, 0, x, 0);
    Object[] v = new Object[r.size()];
    for (int f = 0; f < v.length; f++) {
      v[f] = r.get(f);
    }
    return v;
  }

  private static String message(Executable call) {
    return assertThrows(InvalidInputException.class, call).getMessage();
  }

  @Test
  void pairBytesThatDoNotMatchTheHeader() {
    Object[] v = whole();
    v[7] = new byte[35];
    String msg = message(() -> TileRecord.fromRow(RowFactory.create(v)));
    assertTrue(msg.startsWith("pair bytes of complex 'c' = 35: must be 2 * rows * cols * dim = 2 * 3 * 3 * 2 = 36"), msg);
  }

  @Test
  void aMaskWhoseShapeDoesNotMatchTheTile() {
    Object[] v = whole();
    v[8] = new byte[6]; // (2, 3) instead of (3, 3)
    String msg = message(() -> TileRecord.fromRow(RowFactory.create(v)));
    assertTrue(msg.startsWith("mask bytes of complex 'c' = 6: must be rows * cols = 3 * 3 = 9"), msg);
    byte[] two = new byte[9];
    java.util.Arrays.fill(two, (byte) 1);
    two[4] = 2;
    v[8] = two;
    msg = message(() -> TileRecord.fromRow(RowFactory.create(v)));
    assertTrue(msg.startsWith("mask[0, 1, 1] = 2: mask values must be 0 (masked) or 1 (valid)"), msg);
  }

  @Test
  void nullAndMistypedFieldsNameTheirColumn() {
    // found by TileDecodeFuzzTest: a null INT gave a NullPointerException, a BIGINT a ClassCastException
    Object[] v = whole();
    v[4] = null;
    String msg = message(() -> TileRecord.fromRow(RowFactory.create(v)));
    assertTrue(msg.startsWith("column 'rows' of a tile row = null: only the mask of a tile may be null"), msg);
    Object[] w = whole();
    w[1] = 3L;
    msg = message(() -> TileRecord.fromRow(RowFactory.create(w)));
    assertTrue(msg.startsWith("column 'n_tokens' of a tile row = Long 3: must be of type int"), msg);
    Object[] s = whole();
    s[7] = "not bytes";
    msg = message(() -> TileRecord.fromRow(RowFactory.create(s)));
    assertTrue(msg.startsWith("column 'pair' of a tile row = String not bytes: must be of type binary"), msg);
    msg = message(() -> FoldCp.assemble(List.of(RowFactory.create("c", 3, 0, 0)), "c"));
    assertTrue(msg.startsWith("column count of a tile row = 4: a tile row has the 9 columns of PairTiles.SCHEMA"), msg);
  }

  @Test
  void aTileOutsideItsGrid() {
    Object[] v = whole();
    v[2] = 1; // row0 = 1: rows 1..3 of a 3-token complex
    String msg = message(() -> FoldCp.assemble(List.<Row>of(RowFactory.create(v)), "c"));
    assertTrue(msg.startsWith("tile (row0, col0, rows, cols) of complex 'c' = (1, 0, 3, 3): must lie inside the N x N grid,"
        + " N = 3"), msg);
    Object[] n = whole();
    n[1] = 0;
    msg = message(() -> FoldCp.assemble(List.<Row>of(RowFactory.create(n)), "c"));
    assertTrue(msg.startsWith("n_tokens of complex 'c' = 0: must be >= 1"), msg);
  }

  @Test
  void tilesThatDisagreeOnNOrD() {
    PairTensor x = PairTensor.random(1, 4, 2, 2L, 0);
    List<Row> rows = new ArrayList<>();
    rows.add(PairTiles.toRow("c", 4, 0, 0, x.window(0, 0, 2, 4), 0));
    rows.add(PairTiles.toRow("c", 5, 2, 0, x.window(2, 0, 2, 4), 0));
    String msg = message(() -> FoldCp.assemble(rows, "c"));
    assertTrue(msg.startsWith("n_tokens of a tile of complex 'c' = 5: every tile of a complex must give the same n_tokens (4)"),
        msg);
    rows.set(1, PairTiles.toRow("c", 4, 2, 0, PairTensor.random(1, 4, 1, 3L, 0).window(2, 0, 2, 4), 0));
    msg = message(() -> FoldCp.assemble(rows, "c"));
    assertTrue(msg.startsWith("dim of a tile of complex 'c' = 1: every tile of a complex must give the same dim (2)"), msg);
  }

  @Test
  void aHugeNTokensIsRefusedBeforeItsGridIsAllocated() {
    // found by TileDecodeFuzzTest: one 3 x 3 tile claiming N = 46341 made assemble allocate the
    // padded N x N x D layout tile and an N x N int cover grid (25 GB) before finding the gap
    Object[] v = whole();
    v[1] = 46341;
    String msg = assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> message(() -> FoldCp.assemble(List.<Row>of(RowFactory.create(v)), "c")));
    assertTrue(msg.startsWith("pair position (0, 3) of complex 'c' = missing: the tiles of a complex must cover its whole"
        + " N x N grid (N = 46341)"), msg);
    // the same through the shuffle route's cut into a 1x2 layout (cp = 2 divides D = 2)
    CpGrid grid = CpGrid.of(1, 2);
    TileRecord r = TileRecord.fromRow(RowFactory.create(v));
    List<Tuple2<TileKey, TileRecord>> pieces = Retiling.pieces(r, grid);
    msg = assertTimeoutPreemptively(Duration.ofSeconds(20),
        () -> message(() -> Retiling.assemble(pieces.get(0)._1(), List.of(pieces.get(0)._2()), grid)));
    assertTrue(msg.startsWith("pair position (0, 3) of complex 'c' = missing"), msg);
  }

  @Test
  void aMissingPositionIsStillNamedExactly() {
    // the area check keeps the old message: the first uncovered position in row-major order
    PairTensor x = PairTensor.random(1, 5, 2, 4L, 0);
    List<Row> rows = List.of(
        PairTiles.toRow("c", 5, 0, 0, x.window(0, 0, 2, 5), 0),
        PairTiles.toRow("c", 5, 2, 0, x.window(2, 0, 3, 2), 0),
        PairTiles.toRow("c", 5, 2, 3, x.window(2, 3, 3, 2), 0));
    String msg = message(() -> FoldCp.assemble(rows, "c"));
    assertTrue(msg.startsWith("pair position (2, 2) of complex 'c' = missing"), msg);
  }
}
