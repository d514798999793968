package org.foldcp.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ExplainMode;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.sql.FoldCp;
import org.foldcp.spark.sql.FoldCpOptions;
import org.foldcp.spark.tiles.PairTiles;
import org.foldcp.spark.tiles.TileRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The barrier route's TCP team on a cluster that authenticates, and one that also encrypts, its
 * traffic (README: Reliability), with separate executor JVMs. Each case needs a cluster of its
 * own (these are SparkContext settings, which a session cannot change), and both use the
 * DataFrame API with route auto at cp = 2, as a user runs it, so that the route choice reads the
 * cluster's real settings.
 *
 * <p>With spark.authenticate, the TCP team's key is keyed with Spark's application secret
 * (TeamKey). What shows it without showing the key: each rank logs, once its mesh is connected,
 * the key's description, which says "with Spark's application secret" exactly when the secret
 * went into the key. The test reads those lines from the executors' logs, and checks that the
 * secret itself is in none of them.
 */
@ExtendWith(SharedCluster.class)
class ClusterAuthTest {
  /** A fresh secret per run: it is also what the executors' logs must never contain. */
  private static final String SECRET = HexFormat.of().formatHex(secretBytes());
  /**
   * TcpTransport's line once a rank's mesh is connected, e.g. "rank 1 of team 'APP/stage-2.0'
   * connected to 1 peers in 69 ms, listening on 127.0.0.1:42471 until then, key TeamKey(hidden)".
   */
  private static final Pattern CONNECTED = Pattern.compile(
      "rank (\\d+) of team '([^']+)' connected to \\d+ peers in .* key (TeamKey\\([^)]*\\))");
  /** TeamFormation's line when a rank joins a team: in executor logs only where a barrier team formed. */
  private static final String JOINS_TEAM = "joins team";
  /** How long the Workers may take to copy an executor's log lines to its stderr file: a bound, not a wait. */
  private static final long LOG_FLUSH_MILLIS = 15_000;

  /** spark.authenticate with a secret, which local-cluster (a standalone cluster) needs to be given. */
  static final class Authenticated implements Supplier<Map<String, String>> {
    @Override
    public Map<String, String> get() {
      return Map.of("spark.authenticate", "true", "spark.authenticate.secret", SECRET);
    }
  }

  /** As {@link Authenticated}, and Spark encrypts its RPC and block transfers (which needs spark.authenticate). */
  static final class Encrypted implements Supplier<Map<String, String>> {
    @Override
    public Map<String, String> get() {
      Map<String, String> settings = new TreeMap<>(new Authenticated().get());
      settings.put("spark.network.crypto.enabled", "true");
      return settings;
    }
  }

  @Test
  void withSparkAuthenticateTheTcpTeamKeysItsKeyWithSparksSecretAndEqualsTheCp1Forward(
      @ClusterSettings(Authenticated.class) LocalCluster cluster) throws Exception {
    assertEquals(Map.of("authentication", true, "encryption", false), executorSecurity(cluster),
        "the executor JVMs authenticate with Spark's secret and do not encrypt");
    LayerStack stack = Complexes.stack(53L);
    List<TileRecord> complexes = complexes();
    BarrierTaskPlacement placement = new BarrierTaskPlacement();
    AutoRun run = runAuto(cluster, tiles(complexes), stack, placement);
    String explain = run.explain();
    List<Row> rows = run.rows();

    assertTrue(explain.contains("Route: barrier cp=2 grid=2x1 backend=cpu transport=tcp"), explain);
    assertTrue(explain.contains("spark.foldcp.cp.transport = auto: CPU ranks over TCP"), explain);
    assertEquals(2, placement.barrierExecutors().size(),
        "the two ranks ran in the two executor JVMs: " + placement.barrierExecutors());
    assertBitForBit(complexes, stack, rows, "route auto, cp = 2, spark.authenticate: the barrier route over TCP");

    // Both ranks of the team, in their own executor JVMs, logged a key made with Spark's secret.
    String appId = cluster.context().sc().applicationId();
    Map<String, String> keyByRank = awaitConnectedRanks(cluster, appId, 2);
    assertEquals(Map.of("0", "TeamKey(hidden, with Spark's application secret)",
        "1", "TeamKey(hidden, with Spark's application secret)"), keyByRank,
        "what each rank logged of its team key: " + logsOf(cluster));
    assertSecretInNoExecutorLog(cluster);
  }

  @Test
  void withNetworkCryptoRouteAutoTakesSparkShufflesAndAForcedBarrierRouteIsRefusedNamingTheKeys(
      @ClusterSettings(Encrypted.class) LocalCluster cluster) throws Exception {
    assertEquals(Map.of("authentication", true, "encryption", true), executorSecurity(cluster),
        "the executor JVMs authenticate and encrypt Spark's traffic");
    LayerStack stack = Complexes.stack(59L);
    List<TileRecord> complexes = complexes();
    Dataset<Row> tiles = tiles(complexes);

    // Refused when planned, before any job runs: the TCP team's frames would travel in the clear.
    InvalidInputException refused = assertThrows(InvalidInputException.class,
        () -> FoldCp.apply(tiles, stack, FoldCpOptions.fromConf().withRoute("barrier").withGrid("2")));
    assertTrue(refused.getMessage().startsWith("spark.foldcp.route = 'barrier': its CPU ranks exchange the reshards"
        + " over their own TCP connections, which are authenticated but not encrypted, and"
        + " spark.network.crypto.enabled = true asks for encrypted traffic between executors; use route shuffle"
        + " (or auto)"), refused.getMessage());

    BarrierTaskPlacement placement = new BarrierTaskPlacement();
    AutoRun run = runAuto(cluster, tiles, stack, placement);
    String explain = run.explain();
    List<Row> rows = run.rows();

    assertTrue(explain.contains("Route: shuffle cp=2 grid=2x1 backend=cpu threads="), explain);
    assertTrue(explain.contains("but spark.network.crypto.enabled = true and the TCP team's frames are not"
        + " encrypted, so the reshards go through Spark shuffles, which Spark encrypts"), explain);
    assertEquals(0, placement.barrierStageCount(), "no barrier stage ran, so no TCP team formed");
    assertBitForBit(complexes, stack, rows, "route auto, cp = 2, spark.network.crypto.enabled: the shuffle route");
    List<String> teamLines = matchingLines(cluster, l -> l.contains(JOINS_TEAM) || CONNECTED.matcher(l).find());
    assertEquals(List.of(), teamLines, "no executor formed a TCP team");
    assertSecretInNoExecutorLog(cluster);
  }

  /** Two tiny complexes; N = 21 does not divide by cp = 2 (padded with masked tokens, cropped), and it has a mask. */
  private static List<TileRecord> complexes() {
    return List.of(Complexes.whole("alpha", 16, 5L, 0.0), Complexes.whole("beta", 21, 6L, 0.2));
  }

  /** The complexes as a DataFrame of whole-complex tiles, on the running cluster's context. */
  private static Dataset<Row> tiles(List<TileRecord> complexes) {
    SparkSession spark = SparkSession.builder().getOrCreate();
    return spark.createDataFrame(complexes.stream().map(TileRecord::toRow).collect(Collectors.toList()),
        PairTiles.SCHEMA);
  }

  private static String explain(Dataset<Row> out) {
    return ((org.apache.spark.sql.classic.Dataset<Row>) out).queryExecution()
        .explainString(ExplainMode.fromString("formatted"));
  }

  /** The CPU backend's CP forward equals its cp = 1 forward bit for bit (README: Math and accuracy). */
  private static void assertBitForBit(List<TileRecord> complexes, LayerStack stack, List<Row> rows, String route) {
    List<TileRecord> out = rows.stream().map(TileRecord::fromRow).collect(Collectors.toList());
    Map<String, Long> tilesPerComplex = out.stream().collect(Collectors.groupingBy(t -> t.complexId,
        TreeMap::new, Collectors.counting()));
    assertEquals(Map.of("alpha", 2L, "beta", 2L), tilesPerComplex, route + ": one output tile per (complex, rank)");
    Complexes.assertBitForBit(Complexes.cp1Forward(complexes, stack), Complexes.reassemble(out), route);
  }

  /**
   * Whether the executors' SecurityManagers authenticate and encrypt, from a task in each
   * partition; all tasks must agree. The test's own lambda, shipped as application code.
   */
  private static Map<String, Boolean> executorSecurity(LocalCluster cluster) {
    List<String> seen = cluster.collect(cluster.context().parallelize(List.of(0, 1), LocalCluster.EXECUTORS).map(i -> {
      SecurityManager security = SparkEnv.get().securityManager();
      return security.isAuthenticationEnabled() + "/" + security.isEncryptionEnabled();
    }));
    assertEquals(1, new TreeSet<>(seen).size(), "the executors disagree: " + seen);
    String[] both = seen.get(0).split("/");
    return Map.of("authentication", Boolean.parseBoolean(both[0]), "encryption", Boolean.parseBoolean(both[1]));
  }

  /**
   * The key description each rank of one team logged on connecting (rank to description), once
   * {@code ranks} ranks of a team of this application logged it. The Workers copy an executor's
   * output to its log file as it comes, so the lines may land just after the job returned.
   */
  private static Map<String, String> awaitConnectedRanks(LocalCluster cluster, String appId, int ranks)
      throws InterruptedException {
    long deadline = System.nanoTime() + LOG_FLUSH_MILLIS * 1_000_000;
    while (true) {
      Map<String, Map<String, String>> teams = new TreeMap<>();
      for (String line : matchingLines(cluster, l -> CONNECTED.matcher(l).find())) {
        Matcher m = CONNECTED.matcher(line);
        if (m.find() && m.group(2).startsWith(appId + "/")) {
          teams.computeIfAbsent(m.group(2), t -> new TreeMap<>()).put(m.group(1), m.group(3));
        }
      }
      for (Map<String, String> team : teams.values()) {
        if (team.size() == ranks) {
          return team;
        }
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no team of " + ranks + " ranks logged its connection within " + LOG_FLUSH_MILLIS
            + " ms: " + teams + "; " + logsOf(cluster));
      }
      Thread.sleep(200);
    }
  }

  private static void assertSecretInNoExecutorLog(LocalCluster cluster) {
    List<Path> logs = cluster.executorLogs();
    assertFalse(logs.isEmpty(), "the executors' logs are there to check");
    for (Path log : logs) {
      assertFalse(read(log).contains(SECRET), "the executor log " + log + " holds spark.authenticate.secret");
    }
  }

  private static List<String> matchingLines(LocalCluster cluster, Predicate<String> test) {
    List<String> out = new ArrayList<>();
    for (Path log : cluster.executorLogs()) {
      read(log).lines().filter(test).forEach(out::add);
    }
    return out;
  }

  /** Where to look when an assertion on the executors' log lines fails. */
  private static String logsOf(LocalCluster cluster) {
    return "executor logs " + cluster.executorLogs();
  }

  private static String read(Path log) {
    try {
      return Files.readString(log, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static byte[] secretBytes() {
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    return b;
  }

  /** What a route auto, cp = 2 run returned: its explain() text and its rows. */
  private record AutoRun(String explain, List<Row> rows) {}

  /** FoldCp.apply at route auto, grid 2, collected while {@code placement} watches the cluster's tasks. */
  private static AutoRun runAuto(LocalCluster cluster, Dataset<Row> tiles, LayerStack stack,
      BarrierTaskPlacement placement) throws Exception {
    cluster.context().sc().addSparkListener(placement);
    try {
      Dataset<Row> out = FoldCp.apply(tiles, stack, FoldCpOptions.fromConf().withRoute("auto").withGrid("2"));
      String explain = explain(out);
      List<Row> rows = out.collectAsList();
      placement.awaitEvents(cluster.context());
      return new AutoRun(explain, rows);
    } finally {
      cluster.context().sc().removeSparkListener(placement);
    }
  }
}
