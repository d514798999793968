package org.foldcp.spark.data;

import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.NpyPairOutput;
import org.foldcp.spark.tiles.TileRecord;

/**
 * Streams complexes into {@code <work>/<id>.npy}, one open file at a time. A complex's tiles
 * must come one after another, sorted by (row0, col0), and form row bands: the tiles of one band
 * share row0 and rows and cover columns 0 to N side by side (every layout of the routes does).
 * A band is written as soon as it is complete, so the writer holds one band of tiles, not a
 * complex. A gap, an overlap or a complex that comes back later fails the task, naming the tile;
 * the committer then discards what the attempt wrote.
 */
final class NpyComplexWriter extends RecordWriter<String, TileRecord> {
  private final FileSystem fs;
  private final Path work;
  private final int rank;
  private final Set<String> written = new HashSet<>();

  private String id;
  private Path file;
  private OutputStream stream;
  private NpyPairOutput out;
  private int nextRow;
  private final List<TileRecord> band = new ArrayList<>();
  private int bandCols;

  NpyComplexWriter(FileSystem fs, Path work, int rank) {
    this.fs = fs;
    this.work = work;
    this.rank = rank;
  }

  @Override
  public void write(String complexId, TileRecord tile) throws IOException {
    if (!complexId.equals(id)) {
      finishComplex();
      start(tile);
    }
    place(tile);
  }

  private void start(TileRecord tile) throws IOException {
    String cid = tile.complexId;
    InvalidInputException.require(!cid.isEmpty() && !cid.contains("/") && !cid.startsWith("_") && !cid.startsWith(".")
        && !cid.contains(":"), "complex_id", "'" + cid + "'", "names the output file <id>.npy: it must be non-empty,"
        + " without '/' or ':', and not start with '_' or '.' (names Hadoop and Spark treat as hidden)");
    InvalidInputException.require(written.add(cid), "tiles of complex '" + cid + "'", "apart in the task's input",
        "a complex's tiles must come one after another (FoldCpData.writeNpyDirectory sorts them)");
    id = cid;
    file = new Path(work, cid + NpyDirectory.PAIR_SUFFIX);
    stream = fs.create(file, false);
    out = new NpyPairOutput(stream, file, rank, 1, tile.nTokens, tile.dim());
    nextRow = 0;
    band.clear();
    bandCols = 0;
  }

  private void place(TileRecord t) throws IOException {
    TileRecord first = band.isEmpty() ? null : band.get(0);
    int row0 = first == null ? nextRow : first.row0;
    int rows = first == null ? t.tile.rows() : first.tile.rows();
    boolean fits = t.row0 == row0 && t.col0 == bandCols && t.tile.rows() == rows && t.dim() == out.dim()
        && t.nTokens == out.n() && t.col0 + t.tile.cols() <= t.nTokens;
    InvalidInputException.require(fits, "tile of complex '" + id + "'", t.toString(),
        "the next tile must start at (row " + row0 + ", column " + bandCols + ")" + (first == null ? "" : " with "
        + rows + " rows") + " and stay inside N = " + out.n() + ", D = " + out.dim() + ": a complex's tiles come sorted"
        + " by (row0, col0) as row bands covering every position once");
    band.add(t);
    bandCols += t.tile.cols();
    if (bandCols == t.nTokens) {
      for (int i = 0; i < rows; i++) {
        for (TileRecord piece : band) {
          out.write(piece.tile.row(0, i), 0, piece.tile.cols() * piece.dim());
        }
      }
      nextRow += rows;
      band.clear();
      bandCols = 0;
    }
  }

  /** Closes the current file after checking that every row was written; a short file is an error. */
  private void finishComplex() throws IOException {
    if (id == null) {
      return;
    }
    InvalidInputException.require(band.isEmpty() && nextRow == out.n(), "tiles of complex '" + id + "'",
        "rows [0, " + nextRow + ") of " + out.n() + (band.isEmpty() ? "" : " and part of the next band"),
        "every position must be covered; the rest is missing");
    out.finish();
    stream.close();
    id = null;
    stream = null;
  }

  @Override
  public void close(TaskAttemptContext context) throws IOException {
    try {
      finishComplex();
    } finally {
      if (stream != null) {
        stream.close(); // a failed task's partial file is deleted with its attempt directory
      }
    }
  }
}
