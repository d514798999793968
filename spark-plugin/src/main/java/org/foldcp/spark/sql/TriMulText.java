package org.foldcp.spark.sql;

import java.util.StringJoiner;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.spark.route.RoutePlan;

/** How the TriMul operator reads in explain(): the logical and physical nodes say the same. */
final class TriMulText {
  /** The node name in plans and the Spark UI. */
  static final String NODE_NAME = "FoldCpTriMul";

  private TriMulText() {}

  /**
   * e.g. "FoldCpTriMul route=shuffle cp=4 grid=2x2 backend=cpu layers=2", or for a GPU team
   * "FoldCpTriMul route=barrier cp=2 grid=2x1 backend=gpu transport=nvshmem storeRoute=auto reshard=fused layers=2".
   */
  static String simple(RoutePlan plan, LayerStack stack) {
    return NODE_NAME + " route=" + plan.describe() + " layers=" + stack.size();
  }

  /**
   * The operator's entry in explain("formatted"): under its numbered name, the input columns
   * (as Spark prints them), then the route, the NVSHMEM settings of a GPU team, the layers and
   * the reason, a line each.
   */
  static String formatted(String formattedNodeName, String inputLine, RoutePlan plan, LayerStack stack) {
    return "\n" + formattedNodeName + "\n" + inputLine + "\n"
        + "Route: " + plan.describe() + " threads=" + plan.threadsPerTask + "\n"
        + (plan.nvshmem == null ? "" : "NVSHMEM: " + plan.nvshmem.describe() + "\n")
        + "Layers: " + stack.size() + " of D = " + stack.dim() + hiddenText(stack, ", H = ") + " " + layers(stack) + "\n"
        + "Metrics: " + plan.metricsLevel.label() + "\n"
        + "Reason: " + plan.reason + "\n";
  }

  /**
   * {@link #simple} plus D, threads per task, a GPU team's NVSHMEM settings, each layer's spec with the head of its weight
   * digest (which identifies the values bit for bit), and why the route was chosen.
   */
  static String verbose(RoutePlan plan, LayerStack stack) {
    return simple(plan, stack) + " D=" + stack.dim() + hiddenText(stack, " H=") + " threads=" + plan.threadsPerTask
        + (plan.nvshmem == null ? "" : " nvshmem=(" + plan.nvshmem.describe() + ")") + " stack=" + layers(stack)
        + " metrics=" + plan.metricsLevel.label() + " reason=(" + plan.reason + ")";
  }

  /** Each layer's spec and the head of its weight digest, e.g. "[outgoing+residual eps=1.0E-5 weights=3a27528b5738, ...]". */
  private static String layers(LayerStack stack) {
    StringJoiner layers = new StringJoiner(", ", "[", "]");
    for (TriMulLayer layer : stack.layers()) {
      layers.add(layer.spec() + " weights=" + layer.weights().digest().substring(0, 12));
    }
    return layers.toString();
  }

  /** The stack's hidden width after {@code label} where it differs from D, else nothing. */
  private static String hiddenText(LayerStack stack, String label) {
    return stack.hidden() == stack.dim() ? "" : label + stack.hidden();
  }
}
