package org.foldcp.spark.data;

import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.foldcp.spark.tiles.PairTiles;

/** The tiles of one directory of complexes, as {@link NpyTilesSource} reads them. */
final class NpyTilesTable implements SupportsRead {
  private final CaseInsensitiveStringMap options;

  NpyTilesTable(CaseInsensitiveStringMap options) {
    this.options = options;
  }

  @Override
  public String name() {
    return NpyTilesSource.SHORT_NAME + " " + options.getOrDefault("path", "(no path)");
  }

  @Override
  public StructType schema() {
    return PairTiles.SCHEMA;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
    return new NpyTilesScan(scanOptions);
  }
}
