package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.spark.gpu.BackendChoice;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.junit.jupiter.api.Test;

class RouteChooserTest {
  /** The CP library check of a driver that must not need it (no executors on its machine). */
  private static final Function<String, String> NO_LIBRARY_CHECK = home -> {
    throw new AssertionError("the CP library was looked for on the driver");
  };

  private static Map<String, String> conf(String... kv) {
    Map<String, String> m = new HashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  @Test
  void autoWithCp1RunsEachComplexInOneTask() {
    RoutePlan p = RouteChooser.choose(conf());
    assertEquals(Kind.SINGLE, p.kind);
    assertEquals(CpGrid.oneD(1), p.grid);
    assertTrue(p.reason.contains("spark.foldcp.cp = 1"), p.reason);
  }

  @Test
  void autoWithCp4FormsABarrierTeamOnAOneDGrid() {
    RoutePlan p = RouteChooser.choose(conf("spark.foldcp.cp", "4"));
    assertEquals(Kind.BARRIER, p.kind);
    assertEquals(CpGrid.oneD(4), p.grid);
    assertTrue(p.reason.contains("cp = 4"), p.reason);
    assertEquals(RoutePlan.Transport.TCP, p.transport);
    assertEquals("barrier cp=4 grid=4x1 backend=cpu transport=tcp", p.describe());
  }

  @Test
  void autoWithCp4AndDynamicAllocationShufflesAndSaysWhy() {
    RoutePlan p = RouteChooser.choose(conf("spark.foldcp.cp", "4", "spark.foldcp.grid", "2x2",
        "spark.dynamicAllocation.enabled", "true"));
    assertEquals(Kind.SHUFFLE, p.kind);
    assertEquals(CpGrid.of(2, 2), p.grid);
    assertTrue(p.reason.contains("spark.dynamicAllocation.enabled = true"), p.reason);
    assertEquals("shuffle cp=4 grid=2x2 backend=cpu", p.describe());
  }

  @Test
  void autoWithExecutorGpusAndCp1RunsEachComplexOnItsTasksGpu() {
    RoutePlan p = RouteChooser.choose(conf("spark.executor.resource.gpu.amount", "1"));
    assertEquals(Kind.SINGLE, p.kind);
    assertEquals(RoutePlan.Backend.AUTO, p.backend);
    assertEquals(RoutePlan.Transport.NONE, p.transport);
  }

  @Test
  void explicitRoutesForceTheirKind() {
    assertEquals(Kind.SHUFFLE, RouteChooser.choose(conf("spark.foldcp.route", "shuffle", "spark.foldcp.cp", "4")).kind);
    assertEquals(Kind.BARRIER, RouteChooser.choose(conf("spark.foldcp.route", "BARRIER", "spark.foldcp.cp", "2")).kind);
    RoutePlan cpu = RouteChooser.choose(conf("spark.foldcp.route", "cpu"));
    assertEquals(Kind.SINGLE, cpu.kind);
    assertTrue(cpu.reason.contains("forced"), cpu.reason);
  }

  @Test
  void cpuRouteWithCp4IsRefusedNamingBothKeys() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> RouteChooser.choose(conf("spark.foldcp.route", "cpu", "spark.foldcp.cp", "4")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.route = 'cpu': "), e.getMessage());
    assertTrue(e.getMessage().contains("spark.foldcp.cp = 4"), e.getMessage());
  }

  @Test
  void gpuRouteWithCp1RunsEachComplexOnItsTasksGpu() {
    RoutePlan plan = RouteChooser.choose(conf("spark.foldcp.route", "gpu"));
    assertEquals(Kind.SINGLE, plan.kind);
    assertEquals(RoutePlan.Backend.GPU, plan.backend);
    assertTrue(plan.describe().endsWith("backend=gpu"), plan.describe());
  }

  @Test
  void gpuRouteWithCp2IsABarrierTeamOfGpuRanksAndRefusedWhereItCannotRun() {
    RoutePlan plan = RouteChooser.choose(conf("spark.foldcp.route", "gpu", "spark.foldcp.cp", "2",
        "spark.master", "spark://head:7077"), NO_LIBRARY_CHECK);
    assertEquals(Kind.BARRIER, plan.kind);
    assertEquals("barrier cp=2 grid=2x1 backend=gpu transport=nvshmem storeRoute=auto reshard=fused", plan.describe());
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(conf(
        "spark.foldcp.route", "gpu", "spark.foldcp.cp", "2", "spark.master", "local[4]"), NO_LIBRARY_CHECK));
    assertTrue(e.getMessage().startsWith("spark.foldcp.route = 'gpu': with cp = 2 the GPU ranks form an NVSHMEM"
        + " team, which cannot run here: local mode (master local[4]) runs every rank in the driver's JVM"),
        e.getMessage());
    assertTrue(e.getMessage().endsWith("use route barrier (or auto) to run the ranks on the CPU"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(conf("spark.foldcp.route", "gpu",
        "spark.foldcp.cp", "2", "spark.dynamicAllocation.enabled", "true"), NO_LIBRARY_CHECK));
    assertTrue(e.getMessage().contains("spark.dynamicAllocation.enabled = true"), e.getMessage());
  }

  @Test
  void autoWithCp1UsesTheTasksGpuWhereItHasOneUnlessGpusAreDisabled() {
    assertEquals(RoutePlan.Backend.AUTO, RouteChooser.choose(conf()).backend);
    assertEquals(RoutePlan.Backend.CPU, RouteChooser.choose(conf("spark.foldcp.gpu.enabled", "false")).backend);
    assertEquals(RoutePlan.Backend.CPU, RouteChooser.choose(conf("spark.foldcp.route", "cpu")).backend);
    assertEquals(RoutePlan.Backend.CPU, RouteChooser.choose(conf("spark.foldcp.cp", "2")).backend);
  }

  /**
   * In local mode the tasks run in the driver's JVM: the plan takes backend auto's decision there
   * (the chooser the tasks use) and shows it with its reason; on a cluster it stays auto.
   */
  @Test
  void inLocalModeAutoIsDecidedByTheChooserOfThisJvmAndSaysWhy() {
    String why = "GPU backend unavailable: no CUDA driver";
    RoutePlan cpu = RouteChooser.choose(conf("spark.master", "local[2]"), NO_LIBRARY_CHECK,
        () -> new BackendChoice(0, why));
    assertEquals(RoutePlan.Backend.CPU, cpu.backend);
    assertEquals("single cp=1 grid=1x1 backend=cpu", cpu.describe());
    assertTrue(cpu.reason.endsWith("; in local mode (master local[2]) the tasks run in this JVM, where backend auto"
        + " computes on cpu, because " + why), cpu.reason);

    RoutePlan gpu = RouteChooser.choose(conf("spark.master", "local[2]"), NO_LIBRARY_CHECK,
        () -> new BackendChoice(0, null));
    assertEquals(RoutePlan.Backend.GPU, gpu.backend);
    assertTrue(gpu.reason.endsWith("backend auto computes on gpu (device 0)"), gpu.reason);

    java.util.function.Supplier<BackendChoice> notAsked = () -> {
      throw new AssertionError("the driver of a cluster cannot know its executors' GPUs");
    };
    RoutePlan cluster = RouteChooser.choose(conf("spark.master", "spark://head:7077"), NO_LIBRARY_CHECK, notAsked);
    assertEquals(RoutePlan.Backend.AUTO, cluster.backend);
    assertTrue(cluster.reason.contains("else on the CPU (each executor decides once and logs why)"), cluster.reason);
    assertEquals(RoutePlan.Backend.CPU, RouteChooser.choose(conf("spark.master", "local[2]", "spark.foldcp.route",
        "cpu"), NO_LIBRARY_CHECK, notAsked).backend, "a forced backend asks no one");
  }

  @Test
  void barrierRouteUnderDynamicAllocationIsRefusedBeforeSparkWould() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(
        conf("spark.foldcp.route", "barrier", "spark.foldcp.cp", "2", "spark.dynamicAllocation.enabled", "true")));
    assertTrue(e.getMessage().contains("spark.dynamicAllocation.enabled = true"), e.getMessage());
  }

  @Test
  void networkCryptoKeepsTheReshardsOffTheUnencryptedTcpTeam() {
    RoutePlan p = RouteChooser.choose(conf("spark.foldcp.cp", "2", "spark.network.crypto.enabled", "true"));
    assertEquals(Kind.SHUFFLE, p.kind);
    assertTrue(p.reason.contains("spark.network.crypto.enabled = true and the TCP team's frames are not encrypted, so"
        + " the reshards go through Spark shuffles, which Spark encrypts"), p.reason);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(
        conf("spark.foldcp.route", "barrier", "spark.foldcp.cp", "2", "spark.network.crypto.enabled", "true")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.route = 'barrier': its CPU ranks exchange the reshards over"
        + " their own TCP connections, which are authenticated but not encrypted, and spark.network.crypto.enabled"
        + " = true asks for encrypted traffic"), e.getMessage());
    assertEquals(Kind.SHUFFLE, RouteChooser.choose(conf("spark.foldcp.route", "shuffle", "spark.foldcp.cp", "2",
        "spark.network.crypto.enabled", "true")).kind);
    assertEquals(Kind.BARRIER, RouteChooser.choose(conf("spark.foldcp.cp", "2", "spark.network.crypto.enabled", "false"))
        .kind);
  }

  @Test
  void threadsAndTimeoutsComeFromTheConfiguration() {
    assertEquals(3, RouteChooser.choose(conf("spark.task.cpus", "3")).threadsPerTask);
    RoutePlan p = RouteChooser.choose(conf("spark.task.cpus", "3", "spark.foldcp.cpu.threads", "2",
        "spark.foldcp.barrier.timeoutSeconds", "7", "spark.foldcp.transport.connectTimeoutMs", "1500"));
    assertEquals(2, p.threadsPerTask);
    assertEquals(7000, p.barrierTimeoutMillis);
    assertEquals(1500, p.connectTimeoutMillis);
  }

  @Test
  void badSettingsFailWithTheKeyAndValue() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> RouteChooser.choose(conf("spark.foldcp.route", "fast")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.route = 'fast': "), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(conf("spark.task.cpus", "two")));
    assertTrue(e.getMessage().startsWith("spark.task.cpus = 'two': "), e.getMessage());
  }

  @Test
  void optionsOverrideTheKeysTheyStandFor() {
    Map<String, String> session = conf("spark.foldcp.cp", "2", "spark.foldcp.route", "barrier");
    RoutePlan p = RouteChooser.choose(FoldCpOptions.fromConf().withRoute(Kind.SHUFFLE).withGrid("2x2")
        .withThreadsPerTask(2).applyTo(session));
    assertEquals(Kind.SHUFFLE, p.kind);
    assertEquals(CpGrid.of(2, 2), p.grid);
    assertEquals(2, p.threadsPerTask);
    assertEquals(Kind.BARRIER, RouteChooser.choose(FoldCpOptions.fromConf().applyTo(session)).kind);
    assertEquals(Kind.SINGLE, RouteChooser.choose(FoldCpOptions.fromConf().withRoute("auto").withGrid("1")
        .applyTo(session)).kind);
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(
        FoldCpOptions.fromConf().withRoute(Kind.SINGLE).applyTo(session)));
    assertTrue(e.getMessage().contains("spark.foldcp.cp = 2"), e.getMessage());
  }

  /** foldcp_trimul rows (RoutePlan.Backend.of) and the single route's plan pick the backend by one rule. */
  @Test
  void rowsAndTheSingleRouteChooseTheBackendAlike() {
    String[][] settings = {{}, {"spark.foldcp.route", "cpu"}, {"spark.foldcp.route", "gpu"},
        {"spark.foldcp.gpu.enabled", "false"}};
    RoutePlan.Backend[] expected = {RoutePlan.Backend.AUTO, RoutePlan.Backend.CPU, RoutePlan.Backend.GPU,
        RoutePlan.Backend.CPU};
    for (int q = 0; q < settings.length; q++) {
      Map<String, String> c = conf(settings[q]);
      assertEquals(expected[q], RoutePlan.Backend.of(org.foldcp.spark.config.FoldCpConf.from(c)), c.toString());
      assertEquals(expected[q], RouteChooser.choose(c).backend, c.toString());
    }
  }

  /** Plans made outside the chooser take their timeouts from FoldCpConf's defaults, not literals of their own. */
  @Test
  void plansOutsideTheChooserUseTheConfigurationDefaults() {
    RoutePlan chosen = RouteChooser.choose(conf("spark.foldcp.route", "cpu"));
    RoutePlan single = RoutePlan.single(1, "test");
    assertEquals(chosen.barrierTimeoutMillis, single.barrierTimeoutMillis);
    assertEquals(chosen.connectTimeoutMillis, single.connectTimeoutMillis);
    assertEquals(chosen.allowNonFinite, single.allowNonFinite);
  }
}
