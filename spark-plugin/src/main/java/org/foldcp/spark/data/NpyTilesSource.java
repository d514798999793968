package org.foldcp.spark.data;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.foldcp.spark.tiles.PairTiles;

/**
 * A Spark data source (DataSource V2) of pair tiles from a directory of .npy files on any Hadoop
 * file system: {@code spark.read().format("foldcp-npy").load(dir)}, rows of
 * {@link PairTiles#SCHEMA}. The directory convention is {@link NpyDirectory}'s; the driver lists
 * the names, the executors read the data ({@link NpyTilesReader}).
 *
 * <p>Why a reader of our own and not {@code format("binaryFile")}: binaryFile hands each file to
 * the task as one byte array, so a task holds the float32 file (twice the bf16 tile) before
 * decoding it, and a file above 2 GiB cannot be read at all. This reader streams each file in
 * bounded chunks straight into the tile's bf16 bytes, and cuts a complex above 1 GiB into row
 * bands.
 *
 * <p>Option {@code maxTileBytes} lowers the band limit (default 1 GiB: RowBands.DEFAULT_MAX_TILE_BYTES).
 */
public final class NpyTilesSource implements TableProvider, DataSourceRegister {
  /** The name {@code spark.read().format(...)} takes. */
  public static final String SHORT_NAME = "foldcp-npy";

  @Override
  public String shortName() {
    return SHORT_NAME;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return PairTiles.SCHEMA;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new NpyTilesTable(new CaseInsensitiveStringMap(properties));
  }
}
