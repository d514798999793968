package org.foldcp.spark.sql;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.cp.ShardLayout;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.io.OutputPath;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.Retiling;
import org.foldcp.spark.tiles.RowBands;
import org.foldcp.spark.tiles.TileKey;
import org.foldcp.spark.tiles.TileRecord;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The DataFrame API of fold-cp: a TriMul layer stack over DataFrames of pair tiles
 * ({@link PairTiles#SCHEMA}), planned by Spark as a row-based operator with SQL metrics and its
 * route in explain(). The session must be started with
 * {@code spark.sql.extensions=org.foldcp.spark.sql.FoldCpExtensions}.
 *
 * <pre>{@code
 * Dataset<Row> tiles = FoldCp.tilesFromNpy(spark, Path.of("pair.npy"), Path.of("mask.npy"), "7xyz");
 * Dataset<Row> out = FoldCp.apply(tiles, stack);        // route, cp, grid from spark.foldcp.*
 * FoldCp.writeNpy(out, "7xyz", Path.of("out.npy"));
 * }</pre>
 */
public final class FoldCp {
  /** The column that names a tile's complex. */
  public static final String COMPLEX_ID = PairTiles.SCHEMA.fields()[0].name();

  private FoldCp() {}

  /** {@link #apply(Dataset, LayerStack, FoldCpOptions)} with the route, cp, grid and threads of the session's configuration. */
  public static Dataset<Row> apply(Dataset<Row> tiles, LayerStack stack) {
    return apply(tiles, stack, FoldCpOptions.fromConf());
  }

  /**
   * The stack applied to every complex in {@code tiles}. Input: rows with the columns of
   * PairTiles.SCHEMA (any further columns are ignored), each complex covered exactly once by its
   * tiles: in any tiling for the CP routes, whole in one row for cp = 1 (as
   * {@link #tilesFromNpy} makes them). Output: rows of PairTiles.SCHEMA, one tile per (complex,
   * rank) of the route's layout, cropped to N (one whole-complex tile for cp = 1).
   *
   * <p>Everything that can be checked before running is checked here, so a bad setting fails at
   * this call: the configuration, D against cp, the input columns, and that the session plans
   * fold-cp's operator and has the chosen route.
   *
   * @throws InvalidInputException for bad settings, a D that cp does not divide, or missing or mistyped columns
   * @throws IllegalStateException when the session lacks the extension or the build lacks the route
   */
  public static Dataset<Row> apply(Dataset<Row> tiles, LayerStack stack, FoldCpOptions options) {
    org.apache.spark.sql.classic.SparkSession session = classicSession(tiles);
    requireExtension(session);
    Map<String, String> settings = forStack(options.applyTo(settings(session)), stack);
    if (FoldCpConf.from(settings).cpAuto()) {
      return CpAutoPlanner.apply(tileColumns(tiles), stack, settings);
    }
    return withPlan(tileColumns(tiles), stack, RouteChooser.choose(settings));
  }

  /**
   * The settings {@code stack} is planned under: as given where the GPU kernels take it; else with
   * GPUs off, so that every choice made by auto (the backend, the local-mode GPU, the transport of
   * a team) lands on the CPU, unless the settings force the GPU (route gpu, transport nvshmem):
   * then the plan is refused by name ({@link RoutePlan#forStack}).
   */
  static Map<String, String> forStack(Map<String, String> settings, LayerStack stack) {
    if (RoutePlan.gpuKernelsTake(stack)) {
      return settings;
    }
    FoldCpConf conf = FoldCpConf.from(settings);
    if (conf.get(FoldCpConf.ROUTE) == FoldCpConf.Route.GPU
        || conf.get(FoldCpConf.CP_TRANSPORT) == FoldCpConf.Transport.NVSHMEM) {
      return settings;
    }
    Map<String, String> cpu = new HashMap<>(settings);
    cpu.put(FoldCpConf.GPU_ENABLED.name(), "false");
    return cpu;
  }

  /** The TriMul node of {@code plan} over {@code tiles} (tile columns already selected). */
  static Dataset<Row> withPlan(Dataset<Row> tiles, LayerStack stack, RoutePlan chosen) {
    new ShardLayout(chosen.grid, 1, stack.dim(), stack.hidden()); // H must divide by cp; its message says why
    RoutePlan plan = chosen.forStack(stack); // where the GPU kernels cannot take the stack
    org.apache.spark.sql.classic.Dataset<Row> t = (org.apache.spark.sql.classic.Dataset<Row>) tiles;
    return org.apache.spark.sql.classic.Dataset.ofRows(t.sparkSession(), TriMulNode.over(t.logicalPlan(), stack, plan));
  }

  /**
   * A pair tensor from .npy files as tile rows, one whole complex per batch element: complex id
   * {@code complexId} when the tensor has one batch element, {@code complexId + "/" + b} for
   * element b otherwise; a complex above 2 GiB of bf16 comes as consecutive row bands
   * ({@link RowBands}). The tensor is read on the driver, so it must fit there; for many complexes
   * on any file system, read on the executors, see {@code org.foldcp.spark.data.FoldCpData}.
   *
   * @param maskNpyOrNull the pair mask (see {@link Npy#readMask}), or null for all valid
   */
  public static Dataset<Row> tilesFromNpy(SparkSession spark, Path pairNpy, Path maskNpyOrNull, String complexId) {
    PairTensor x = maskNpyOrNull == null ? Npy.readPair(pairNpy) : Npy.readPair(pairNpy, maskNpyOrNull);
    List<Row> rows = new ArrayList<>();
    for (int b = 0; b < x.batch(); b++) {
      String id = x.batch() == 1 ? complexId : complexId + "/" + b;
      // above 2 GiB of bf16 a complex becomes row bands, which the cp = 1 route joins again
      for (TileRecord band : RowBands.BINARY.cut(new TileRecord(id, x.n(), 0, 0, x.batch() == 1 ? x : x.batchElement(b)))) {
        rows.add(band.toRow());
      }
    }
    return spark.createDataFrame(rows, PairTiles.SCHEMA);
  }

  /**
   * The (1, N, N, D) pair tensor of {@code complexId} put together from its tiles among
   * {@code tiles} (rows of PairTiles.SCHEMA; rows of other complexes are skipped).
   *
   * @throws InvalidInputException when no tile has that id, or a position of the N x N grid is
   *     missing, given twice or outside it, naming the position
   */
  public static PairTensor assemble(List<Row> tiles, String complexId) {
    CpGrid whole = CpGrid.oneD(1); // one rank whose layout tile is the whole complex
    List<TileRecord> pieces = new ArrayList<>();
    for (Row row : tiles) {
      if (complexId.equals(PairTiles.complexId(row))) {
        for (Tuple2<TileKey, TileRecord> p : Retiling.pieces(TileRecord.fromRow(row), whole)) {
          pieces.add(p._2());
        }
      }
    }
    InvalidInputException.require(!pieces.isEmpty(), COMPLEX_ID, "'" + complexId + "'",
        "no tile of this complex among the " + tiles.size() + " rows given");
    // the layout pads N like every layout (ShardLayout.GPU_TILE_MULTIPLE): crop the padding off again
    return Retiling.crop(Retiling.assemble(new TileKey(complexId, 0), pieces, whole)).tile;
  }

  /**
   * Collects the output tiles of {@code complexId}, puts them together ({@link #assemble}) and
   * writes the values with {@link Npy#writePair}. Nothing is written unless every position is
   * there.
   */
  public static void writeNpy(Dataset<Row> outTiles, String complexId, Path out) {
    writeNpy(outTiles, complexId, out, 4);
  }

  /**
   * As {@link #writeNpy(Dataset, String, Path)}, with the shape (1, N, N, D) for {@code rank} 4 or
   * (N, N, D) for rank 3: pass {@code Npy.pairRank(input)} to write the output in the rank of
   * the .npy input it came from.
   */
  public static void writeNpy(Dataset<Row> outTiles, String complexId, Path out, int rank) {
    OutputPath.requireWritable(out, "output file"); // before the tiles are computed and collected
    List<Row> rows = outTiles.filter(functions.col(COMPLEX_ID).equalTo(functions.lit(complexId))).collectAsList();
    Npy.writePair(out, assemble(rows, complexId), rank);
  }

  private static org.apache.spark.sql.classic.SparkSession classicSession(Dataset<Row> tiles) {
    if (!(tiles instanceof org.apache.spark.sql.classic.Dataset)) {
      throw new IllegalStateException("fold-cp plans its operator inside the Spark driver; a Spark Connect"
          + " DataFrame (" + tiles.getClass().getName() + ") cannot carry it");
    }
    return (org.apache.spark.sql.classic.SparkSession) tiles.sparkSession();
  }

  private static void requireExtension(org.apache.spark.sql.classic.SparkSession session) {
    for (SparkStrategy s : CollectionConverters.asJava(session.sessionState().planner().strategies())) {
      if (s instanceof TriMulStrategy) {
        return;
      }
    }
    throw new IllegalStateException("this Spark session cannot plan fold-cp's TriMul operator: start it with"
        + " spark.sql.extensions=" + FoldCpExtensions.class.getName()
        + " (--conf on spark-submit, or SparkSession.builder().config(...))");
  }

  /** The SparkContext's settings overlaid with the session's (spark.conf.set at runtime). */
  private static Map<String, String> settings(org.apache.spark.sql.classic.SparkSession session) {
    Map<String, String> all = new LinkedHashMap<>();
    for (Tuple2<String, String> kv : session.sparkContext().getConf().getAll()) {
      all.put(kv._1(), kv._2());
    }
    all.putAll(CollectionConverters.asJava(session.conf().getAll()));
    return all;
  }

  /** The columns of PairTiles.SCHEMA in its order, after checking that each is there with its type. */
  private static Dataset<Row> tileColumns(Dataset<Row> tiles) {
    StructType have = tiles.schema();
    List<String> names = List.of(have.fieldNames());
    Column[] cols = new Column[PairTiles.SCHEMA.size()];
    int f = 0;
    for (StructField want : PairTiles.SCHEMA.fields()) {
      InvalidInputException.require(names.contains(want.name()), "column '" + want.name() + "' of the tiles",
          "missing", "the tiles need the columns of PairTiles.SCHEMA " + PairTiles.SCHEMA.simpleString()
              + "; they have " + have.simpleString());
      StructField got = have.apply(want.name());
      InvalidInputException.require(got.dataType().equals(want.dataType()), "type of column '" + want.name()
          + "' of the tiles", got.dataType().simpleString(), "must be " + want.dataType().simpleString());
      cols[f++] = tiles.col(want.name());
    }
    return tiles.select(cols);
  }
}
