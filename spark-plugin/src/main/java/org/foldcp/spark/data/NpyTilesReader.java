package org.foldcp.spark.data;

import java.io.IOException;
import java.util.Iterator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.unsafe.types.UTF8String;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.io.NpyMaskFile;
import org.foldcp.ops.io.NpyPairFile;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.RowBands;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the complexes of one partition on an executor, one tile row at a time: each complex's
 * pair tensor (and mask) is opened through Hadoop's FileSystem and read a band of rows at a time
 * into the row's bf16 bytes, so a task holds one tile (its values decoded and encoded; at most
 * the band limit, 1 GiB by default) and a bounded read buffer, never a whole file. The rows equal those of
 * {@code FoldCp.tilesFromNpy} for the same files: the same decoder rounds every value, a batch
 * element b of a (B, N, N, D) file is complex {@code <id>/b}, and a complex above the band limit
 * comes as consecutive row bands.
 */
final class NpyTilesReader implements PartitionReader<InternalRow> {
  private static final Logger LOG = LoggerFactory.getLogger(NpyTilesReader.class);

  private final Configuration conf;
  private final RowBands bands;
  private final Iterator<ComplexFiles> complexes;
  private OpenComplex open;
  private InternalRow current;

  NpyTilesReader(Configuration conf, RowBands bands, List<ComplexFiles> complexes) {
    this.conf = conf;
    this.bands = bands;
    this.complexes = complexes.iterator();
  }

  @Override
  public boolean next() throws IOException {
    while (open == null || !open.hasNext()) {
      if (open != null) {
        open.close();
        open = null;
      }
      if (!complexes.hasNext()) {
        current = null;
        return false;
      }
      open = new OpenComplex(complexes.next());
    }
    current = open.next();
    return true;
  }

  @Override
  public InternalRow get() {
    return current;
  }

  @Override
  public void close() throws IOException {
    if (open != null) {
      open.close();
      open = null;
    }
  }

  /** One complex's files, open, and where its next band starts. */
  private final class OpenComplex implements AutoCloseable {
    private final ComplexFiles files;
    private final HadoopChannel pairChannel;
    private final HadoopChannel maskChannel;
    private final NpyPairFile pair;
    private final NpyMaskFile mask;
    private int b;
    private int band;
    private int[][] layout;

    OpenComplex(ComplexFiles files) throws IOException {
      this.files = files;
      HadoopChannel p = HadoopChannel.open(conf, new Path(files.pair()));
      HadoopChannel m = null;
      try {
        pair = NpyPairFile.open(p, files.pair());
        if (files.mask() != null) {
          m = HadoopChannel.open(conf, new Path(files.mask()));
          mask = NpyMaskFile.open(m, files.mask(), pair.batch(), pair.n(), pair.n());
        } else {
          mask = null;
        }
      } catch (RuntimeException | IOException e) {
        p.close();
        if (m != null) {
          m.close();
        }
        throw e;
      }
      pairChannel = p;
      maskChannel = m;
      layout = bands.bands(complexId(), pair.n(), pair.dim());
    }

    boolean hasNext() {
      return b < pair.batch();
    }

    InternalRow next() {
      String id = complexId();
      int n = pair.n();
      int row0 = layout[band][0];
      int rows = layout[band][1];
      PairTensor t = PairTensor.zeros(1, rows, n, pair.dim());
      pair.readRows(b, row0, t, 0);
      if (mask != null) {
        byte[][] m = new byte[rows][n];
        mask.readRows(b, row0, rows, m, 0);
        t.setMask(m);
      }
      Row row = PairTiles.toRow(id, n, row0, 0, t, 0);
      if (++band == layout.length) {
        band = 0;
        b++;
        if (b < pair.batch()) {
          layout = bands.bands(complexId(), n, pair.dim());
        }
      }
      return new GenericInternalRow(new Object[] {UTF8String.fromString(id), n, row0, 0, rows, n, pair.dim(),
          row.get(7), row.get(8)});
    }

    /** {@code <id>} for one complex per file, {@code <id>/b} for batch element b of a (B, N, N, D) file. */
    private String complexId() {
      return pair.batch() == 1 ? files.id() : files.id() + "/" + b;
    }

    @Override
    public void close() throws IOException {
      if (pair.isFloat16()) {
        LOG.warn(Npy.float16Warning(files.pair(), pair.roundedValues(), (long) pair.batch() * pair.n() * pair.n()
            * pair.dim()));
      }
      try {
        pairChannel.close();
      } finally {
        if (maskChannel != null) {
          maskChannel.close();
        }
      }
    }
  }
}
