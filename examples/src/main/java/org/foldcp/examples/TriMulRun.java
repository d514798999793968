package org.foldcp.examples;

import static org.foldcp.examples.TriMulExecs.findTriMuls;
import static org.foldcp.examples.TriMulExecs.routeOf;
import static org.foldcp.examples.TriMulExecs.value;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.foldcp.examples.plots.Charts;
import org.foldcp.examples.plots.PairHeatmaps;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.Npy;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.sql.TriMulExec;
import org.foldcp.spark.tiles.PairTiles;

/**
 * The stages of a {@link TriMulJob} run, each a step of its {@link JobProgress}: prepare (inputs
 * and layer weights), the forward (one Spark job, or with --per-layer the inputs and then one job
 * per layer), the checksum (and --output), the --plots; then the {@link TriMulReport}.
 */
final class TriMulRun {
  private TriMulRun() {}

  static void run(SparkSession spark, JobOptions o, JobProgress progress, PrintStream report) {
    long t0 = System.nanoTime();
    progress.begin("prepare", "inputs and layer weights");
    TriMulInputs in = TriMulInputs.prepare(spark, o);
    Dataset<Row> tiles = in.tiles();
    int count = in.count();
    String firstId = in.firstId();
    LayerStack stack = TriMulInputs.loadStack(o, in.d());
    progress.end();
    long t1 = System.nanoTime();
    FoldCpOptions options = FoldCpOptions.fromConf();
    Dataset<Row> out;
    List<Row> rows;
    List<TriMulExec> layerExecs = new ArrayList<>();
    double[] layerMs = new double[stack.size()];
    PairTensor firstInput = null;
    if (!o.perLayer) {
      out = FoldCp.apply(tiles, stack, options);
      progress.begin("forward", stack.size() + " layers (" + TriMulReport.describe(stack) + ") on " + count
          + " complexes" + routeOf(out));
      rows = out.collectAsList();
      progress.end();
    } else {
      // One Spark job per layer, each layer's output checkpointed on the executors: the UI, the log
      // and the bar show each layer, and each layer gets its own time.
      progress.begin("inputs", count + " complexes" + (o.input == null ? ", generated on the executors" : ""));
      tiles = tiles.localCheckpoint(true);
      if (o.plots != null) {
        firstInput = FoldCp.assemble(tiles.filter(functions.col(FoldCp.COMPLEX_ID).equalTo(firstId)).collectAsList(), firstId);
      }
      progress.end();
      Dataset<Row> cur = tiles;
      out = null;
      rows = null;
      for (int l = 0; l < stack.size(); l++) {
        Dataset<Row> applied = FoldCp.apply(cur, LayerStack.of(stack.get(l)), options);
        progress.begin("layer " + (l + 1) + "/" + stack.size() + " " + stack.get(l).direction().label(),
            count + " complexes" + routeOf(applied));
        if (l == stack.size() - 1) {
          rows = applied.collectAsList();
        } else {
          cur = applied.localCheckpoint(true);
        }
        layerMs[l] = progress.end();
        out = applied;
        findTriMuls(applied.queryExecution().executedPlan(), layerExecs);
      }
    }
    long t2 = System.nanoTime();

    progress.begin("checksum", o.output == null ? "of every output value" : "and write " + o.output);
    double checksum = 0;
    double absSum = 0;
    java.util.Set<String> complexes = new java.util.TreeSet<>();
    for (Row r : rows) {
      complexes.add(r.getString(0));
      for (float v : PairTiles.fromRow(r).toFloats()) {
        checksum += v;
        absSum += Math.abs(v);
      }
    }
    InvalidInputException.require(complexes.size() == count, "output complexes", complexes.size(),
        "must equal the " + count + " input complexes: no partial output");
    String digest = OutputDigest.of(rows, complexes);
    if (o.output != null) {
      // In the input's rank: an (N, N, D) input gives an (N, N, D) output.
      int rank = o.input == null ? 4 : Npy.pairRank(Path.of(o.input));
      Npy.writePair(Path.of(o.output), FoldCp.assemble(rows, firstId), rank);
    }
    progress.end();
    long t3 = System.nanoTime();

    List<TriMulExec> finalExecs = findTriMuls(out.queryExecution().executedPlan(), new ArrayList<>());
    TriMulExec exec = finalExecs.isEmpty() ? null : finalExecs.get(0);
    List<TriMulExec> execs = o.perLayer ? layerExecs : finalExecs;
    List<String> plotFiles = new ArrayList<>();
    if (o.plots != null) {
      progress.begin("plots", "PNGs of " + firstId + " to " + o.plots);
      plotFiles = writePlots(Path.of(o.plots), firstId, firstInput, FoldCp.assemble(rows, firstId), stack,
          layerMs, layerExecs, exec == null ? "?" : exec.plan().toString(), count);
      progress.end();
    }
    progress.finish();
    new TriMulReport(o, in, tiles, stack, rows, finalExecs, execs, new double[] {ms(t0, t1), ms(t1, t2), ms(t2, t3)},
        layerMs, checksum, absSum, digest, plotFiles).print(spark, report);
  }

  /** pair-heatmap.png and layer-times.png of the first complex; returns their paths. */
  static List<String> writePlots(Path dir, String id, PairTensor before, PairTensor after, LayerStack stack,
      double[] layerMs, List<TriMulExec> layerExecs, String route, int complexes) {
    int d = after.dim();
    int[] channels = d >= 3 ? new int[] {0, d / 2, d - 1} : d == 2 ? new int[] {0, 1} : new int[] {0};
    Path heat = Charts.writePng(PairHeatmaps.beforeAfter(before, after, 0, channels,
        String.format(Locale.ROOT, "fold-cp: pair channels of %s before and after %d TriMul layers (N=%d, D=%d)",
            id, stack.size(), after.rows(), d)), dir.resolve("pair-heatmap.png"));
    List<String> labels = new ArrayList<>();
    double[] compute = new double[stack.size()];
    java.util.Arrays.fill(compute, Double.NaN);
    for (int l = 0; l < stack.size(); l++) {
      labels.add((l + 1) + " " + stack.get(l).direction().label());
      if (l < layerExecs.size()) {
        compute[l] = value(layerExecs.get(l).metrics(), "computeTime") / 1e6;
      }
    }
    int why = route.indexOf(" (");
    Path times = Charts.writePng(Charts.layerTimes("fold-cp: time per TriMul layer",
        "route " + (why > 0 ? route.substring(0, why) : route) + "; " + complexes + (complexes == 1 ? " complex" : " complexes")
            + " of N=" + after.rows() + ", D=" + d + " per layer", labels,
        List.of("Spark job wall time", "TriMul compute (SQL metric, summed over tasks)"),
        new double[][] {layerMs, compute}), dir.resolve("layer-times.png"));
    return List.of(heat.toString(), times.toString());
  }

  private static double ms(long a, long b) {
    return (b - a) / 1e6;
  }
}
