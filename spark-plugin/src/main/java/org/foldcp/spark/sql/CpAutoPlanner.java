package org.foldcp.spark.sql;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.plan.CostModel;
import org.foldcp.ops.plan.CpChooser;
import org.foldcp.ops.plan.DeviceRates;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.route.RoutePlan;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code spark.foldcp.cp = auto}: each complex gets its own cp, and the complexes of one cp run
 * together (docs/cost-model.md). One Spark job reads every complex's id and N (the tiles' headers;
 * cache the input where recomputing it is costly), {@link CpChooser} gives each the smallest cp of
 * {@link FoldCpConf#CP_AUTO_CANDIDATES} whose share fits {@link FoldCpConf#CP_AUTO_MEMORY_PER_RANK}
 * and meets {@link FoldCpConf#CP_AUTO_TARGET_SECONDS}, and the result is the union of one TriMul
 * node per cp over that cp's complexes: cp = 1 as the single route (every complex whole on one
 * task, on every GPU), each larger cp as the route the chooser gives that cp (a barrier stage of
 * teams of cp ranks, {@code teams = auto} unless set). Each node's reason says how many complexes
 * it holds and why, so explain() and the job's route lines show the whole plan.
 *
 * <p>The rates are one H200's ({@link DeviceRates#h200()}): the time target is in H200 seconds
 * whatever the backend; with the default target (none) only memory decides.
 */
final class CpAutoPlanner {
  private static final Logger LOG = LoggerFactory.getLogger(CpAutoPlanner.class);

  private CpAutoPlanner() {}

  /** How many complexes at one cp, their N range and the predicted stack time of them all. */
  record Group(int cp, List<String> ids, int minN, int maxN, double predictedSeconds, String why) {
    String describe(int total) {
      return String.format(Locale.ROOT, "cp auto: %d of %d complexes at cp = %d (N %d..%d, %s; predicted %.3g s"
          + " on H200 rates)", ids.size(), total, cp, minN, maxN, why, predictedSeconds);
    }
  }

  static Dataset<Row> apply(Dataset<Row> tiles, LayerStack stack, Map<String, String> settings) {
    FoldCpConf conf = FoldCpConf.from(settings);
    List<Row> shapes = tiles.select(FoldCp.COMPLEX_ID, "n_tokens").distinct().collectAsList();
    List<Group> groups = plan(shapes, stack, conf);
    Map<Integer, RoutePlan> plans = new HashMap<>();
    for (Group g : groups) {
      plans.put(g.cp(), RouteChooser.choose(settingsFor(settings, conf, g.cp())));
    }
    groups = oneNvshmemTeamSize(groups, plans);
    Dataset<Row> out = null;
    for (Group g : groups) {
      RoutePlan p = plans.computeIfAbsent(g.cp(), cp -> RouteChooser.choose(settingsFor(settings, conf, cp)));
      p = p.withReason(g.describe(shapes.size()) + "; " + p.reason);
      Dataset<Row> part = FoldCp.withPlan(
          tiles.filter(functions.col(FoldCp.COMPLEX_ID).isin(g.ids().toArray())), stack, p);
      out = out == null ? part : out.union(part);
    }
    if (out == null) { // no complexes: the cp = 1 node over the empty input
      RoutePlan one = RouteChooser.choose(withCp1(settings));
      return FoldCp.withPlan(tiles, stack, one.withReason("cp auto: no complexes in the input; " + one.reason));
    }
    return out;
  }

  /**
   * The groups, ascending by cp, for complexes given as rows of (complex id, N): each complex's
   * {@link CpChooser} choice, D and the layer count from {@code stack}.
   */
  static List<Group> plan(List<Row> shapes, LayerStack stack, FoldCpConf conf) {
    CpChooser chooser = new CpChooser(new CostModel(DeviceRates.h200()), conf.get(FoldCpConf.CP_AUTO_CANDIDATES),
        conf.get(FoldCpConf.CP_AUTO_MEMORY_PER_RANK), conf.get(FoldCpConf.CP_AUTO_TARGET_SECONDS));
    TreeMap<Integer, List<CpChooser.Choice>> byCp = new TreeMap<>();
    Map<String, Integer> nOf = new HashMap<>();
    for (Row r : shapes) {
      String id = r.getString(0);
      int n = r.getInt(1);
      nOf.put(id, n);
      CpChooser.Choice c = chooser.choose(id, 1, n, stack.dim(), stack.hidden(), stack.size());
      byCp.computeIfAbsent(c.cp(), k -> new ArrayList<>()).add(c);
    }
    List<Group> groups = new ArrayList<>();
    for (Map.Entry<Integer, List<CpChooser.Choice>> e : byCp.entrySet()) {
      List<String> ids = new ArrayList<>();
      int minN = Integer.MAX_VALUE;
      int maxN = 0;
      double seconds = 0;
      TreeMap<String, Integer> reasons = new TreeMap<>();
      for (CpChooser.Choice c : e.getValue()) {
        ids.add(c.complexId());
        minN = Math.min(minN, nOf.get(c.complexId()));
        maxN = Math.max(maxN, nOf.get(c.complexId()));
        seconds += c.predictedSeconds();
        reasons.merge(c.reason(), 1, Integer::sum);
      }
      ids.sort(null);
      groups.add(new Group(e.getKey(), ids, minN, maxN, seconds, String.join(", ", reasons.keySet())));
    }
    if (LOG.isInfoEnabled()) {
      StringBuilder sb = new StringBuilder();
      for (Group g : groups) {
        sb.append(sb.length() == 0 ? "" : "; ").append(g.ids().size()).append(" at cp=").append(g.cp())
            .append(" (N ").append(g.minN()).append("..").append(g.maxN()).append(')');
      }
      LOG.info("TriMul cp auto over {} complexes (memory per rank {} B, target {} s, candidates {}): {}", shapes.size(),
          conf.get(FoldCpConf.CP_AUTO_MEMORY_PER_RANK), conf.get(FoldCpConf.CP_AUTO_TARGET_SECONDS),
          java.util.Arrays.toString(conf.get(FoldCpConf.CP_AUTO_CANDIDATES)), sb);
    }
    return groups;
  }

  private static Map<String, String> settingsFor(Map<String, String> settings, FoldCpConf conf, int cp) {
    Map<String, String> sub = new HashMap<>(settings);
    sub.put(FoldCpConf.CP.name(), Integer.toString(cp));
    if (cp > 1 && !conf.isSet(FoldCpConf.CP_TEAMS)) {
      sub.put(FoldCpConf.CP_TEAMS.name(), "auto"); // as many teams as the slots hold: every GPU works
    }
    return sub;
  }

  /**
   * GPU teams: an executor joins one NVSHMEM world for its life (NVSHMEM initialises once per
   * process), so the barrier stages of one job may not ask for two team sizes: the groups of
   * every cp > 1 but the largest move up to the largest (a complex that fits at cp fits at any
   * larger cp). TCP teams form per stage and keep their groups.
   */
  static List<Group> oneNvshmemTeamSize(List<Group> groups, Map<Integer, RoutePlan> plans) {
    List<Group> gpuTeams = new ArrayList<>();
    for (Group g : groups) {
      if (g.cp() > 1 && plans.get(g.cp()).transport == RoutePlan.Transport.NVSHMEM) {
        gpuTeams.add(g);
      }
    }
    if (gpuTeams.size() < 2) {
      return groups;
    }
    Group top = gpuTeams.get(gpuTeams.size() - 1);
    List<String> ids = new ArrayList<>();
    int minN = Integer.MAX_VALUE;
    double seconds = 0;
    for (Group g : gpuTeams) {
      ids.addAll(g.ids());
      minN = Math.min(minN, g.minN());
      seconds += g.predictedSeconds(); // as predicted at their own cp, not re-predicted at the larger one
    }
    ids.sort(null);
    List<Group> out = new ArrayList<>();
    for (Group g : groups) {
      if (!gpuTeams.contains(g)) {
        out.add(g);
      }
    }
    out.add(new Group(top.cp(), ids, minN, top.maxN(), seconds, top.why() + "; complexes of cp "
        + gpuTeams.stream().map(g -> Integer.toString(g.cp())).toList() + " all at cp = " + top.cp()
        + ": one NVSHMEM team size per job, an executor joins one world for life"));
    LOG.info("TriMul cp auto: GPU teams of {} complexes at cp {} all run at cp = {} (one NVSHMEM team size per job)",
        ids.size(), gpuTeams.stream().map(Group::cp).toList(), top.cp());
    return out;
  }

  private static Map<String, String> withCp1(Map<String, String> settings) {
    Map<String, String> sub = new HashMap<>(settings);
    sub.put(FoldCpConf.CP.name(), "1");
    return sub;
  }
}
