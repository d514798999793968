package org.foldcp.examples;

import static org.foldcp.examples.TriMulExecs.sum;
import static org.foldcp.examples.TriMulExecs.value;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.sql.TriMulExec;

/**
 * What a {@link TriMulJob} run found, and the report it prints: the route and why, the shapes, the
 * time of each stage (and layer), the operator's metrics, the output checksum and digest, and the
 * --sql, --output and --plots lines.
 *
 * @param tiles      the input rows the forward read (with --per-layer, their checkpoint)
 * @param rows       the output rows, every complex's
 * @param finalExecs the fold-cp operators of the last Spark job's plan (several with cp auto)
 * @param execs      those whose metrics the report sums: every layer's with --per-layer, else finalExecs
 * @param stageMs    the wall time of prepare, forward and checksum (with the output's write)
 * @param layerMs    with --per-layer, each layer's Spark job time
 */
record TriMulReport(JobOptions o, TriMulInputs in, Dataset<Row> tiles, LayerStack stack, List<Row> rows,
                    List<TriMulExec> finalExecs, List<TriMulExec> execs, double[] stageMs, double[] layerMs,
                    double checksum, double absSum, String digest, List<String> plotFiles) {
  /** Prints the report to {@code report}; with --sql, its line runs the SQL comparison first (a Spark job). */
  void print(SparkSession spark, PrintStream report) {
    TriMulExec exec = finalExecs.isEmpty() ? null : finalExecs.get(0);
    report.println("fold-cp TriMul job");
    report.println("  route       " + (exec == null ? "?" : exec.plan().toString()));
    for (TriMulExec other : finalExecs.subList(Math.min(1, finalExecs.size()), finalExecs.size())) {
      report.println("  route       " + other.plan()); // cp auto: one node per cp
    }
    if (finalExecs.size() > 1) { // cp auto: what each node's complexes took, beside the plan's prediction
      for (TriMulExec e : finalExecs) {
        report.printf(Locale.ROOT, "  measured    cp = %d: %d tiles, compute %.1f ms, reshard %.1f ms (summed over its"
            + " tasks)%n", e.plan().grid.size(), value(e.metrics(), "numTiles"), value(e.metrics(), "computeTime") / 1e6,
            value(e.metrics(), "reshardTime") / 1e6);
      }
    }
    report.printf(Locale.ROOT, "  complexes   %d x (N=%s, D=%d), layers %d%s: %s; master %s%n", in.count(),
        o.input == null ? TriMulInputs.nText(o) : Integer.toString(in.n()), in.d(), stack.size(),
        stack.hidden() == stack.dim() ? "" : " of hidden width H=" + stack.hidden(), describe(stack),
        spark.sparkContext().master());
    report.printf(Locale.ROOT, "  stage ms    prepare %.0f | forward incl. data generation (Spark job) %.0f"
        + " | checksum+write %.0f%n", stageMs[0], stageMs[1], stageMs[2]);
    if (o.perLayer) {
      StringBuilder sb = new StringBuilder();
      for (int l = 0; l < stack.size(); l++) {
        sb.append(l == 0 ? "" : " | ").append(String.format(Locale.ROOT, "%d %s %.0f", l + 1,
            stack.get(l).direction().label(), layerMs[l]));
      }
      report.println("  layer ms    " + sb + " (one Spark job each)");
    }
    if (!execs.isEmpty()) {
      report.printf(Locale.ROOT, "  metrics     tiles %d | bytes in %d | bytes out %d | compute ms %.1f | reshard ms %.1f%n",
          sum(execs, "numTiles"), sum(execs, "bytesIn"), sum(execs, "bytesOut"),
          sum(execs, "computeTime") / 1e6, sum(execs, "reshardTime") / 1e6);
      long gpu = sum(execs, "gpuTiles");
      long all = sum(execs, "numTiles");
      report.printf(Locale.ROOT, "  ran on      %s (%d of %d tile forwards on a GPU)%n",
          gpu == 0 ? "cpu" : gpu == all ? "gpu" : "gpu and cpu", gpu, all);
      long[] gpuStages = {sum(execs, "gpuStage1Time"), sum(execs, "gpuStage2Time"), sum(execs, "gpuStage3Time")};
      if (gpuStages[0] + gpuStages[1] + gpuStages[2] > 0) {
        report.printf(Locale.ROOT, "  gpu stages  LN_in+projections+gates %.1f ms | triangle GEMM %.1f ms"
            + " | LN_out+output projection %.1f ms (kernel time, summed over tasks and layers)%n",
            gpuStages[0] / 1e6, gpuStages[1] / 1e6, gpuStages[2] / 1e6);
      }
      long toChannels = sum(execs, "reshardToChannelsBytes");
      long toTokens = sum(execs, "reshardToTokensBytes");
      if (toChannels + toTokens > 0) {
        report.printf(Locale.ROOT, "  reshards    fused into the GPU kernels' stores: %d B token->channel,"
            + " %d B channel->token between ranks%n", toChannels, toTokens);
      }
    }
    report.printf(Locale.ROOT, "  checksum    sum %.6e  sum|.| %.6e%n", checksum, absSum);
    report.println("  digest      " + digest + " (SHA-256 of every complex's bf16 output, complexes by id: equal"
        + " digests, equal bits)");
    if (o.sql) {
      report.println("  sql         " + SqlCheck.compare(spark, tiles, stack, rows));
    }
    if (o.output != null) {
      report.println("  output      " + o.output + " (" + in.firstId() + ")");
    }
    if (!plotFiles.isEmpty()) {
      report.println("  plots       " + String.join(", ", plotFiles));
    }
  }

  /** The layers' directions, in order, comma-separated. */
  static String describe(LayerStack s) {
    StringBuilder sb = new StringBuilder();
    for (TriMulLayer l : s.layers()) {
      sb.append(sb.length() == 0 ? "" : ", ").append(l.direction().label());
    }
    return sb.toString();
  }
}
