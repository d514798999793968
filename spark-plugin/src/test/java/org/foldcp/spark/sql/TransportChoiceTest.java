package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.cp.NativeCp;
import org.foldcp.ops.gpu.cp.StoreRoute;
import org.foldcp.spark.route.RoutePlan;
import org.foldcp.spark.route.RoutePlan.Kind;
import org.foldcp.spark.route.RoutePlan.Transport;
import org.junit.jupiter.api.Test;

/**
 * How a barrier team moves its reshards (spark.foldcp.cp.transport), decided on the driver: auto,
 * tcp and nvshmem across backends, GPU resources and masters, with the CP GPU library's
 * availability either faked or (for the forced case) this machine's real one.
 */
class TransportChoiceTest {
  private static final String CLUSTER = "spark://head:7077";
  private static final String LOCAL_CLUSTER = "local-cluster[2,1,1024]";
  /** The library check of a machine where the CP GPU library loads. */
  private static final Function<String, String> LOADS = home -> null;

  private static Map<String, String> conf(String... kv) {
    Map<String, String> m = new HashMap<>();
    m.put("spark.foldcp.cp", "2");
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
  }

  /** A library check that must not be consulted (the driver of a real cluster cannot see the executors'). */
  private static String notAsked(String home) {
    throw new AssertionError("the driver asked for the CP library although the executors are not on its machine");
  }

  @Test
  void teamsCarryIntoTcpAndGpuPlans() {
    RoutePlan tcp = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.foldcp.cp.teams", "3"),
        TransportChoiceTest::notAsked);
    assertEquals(Transport.TCP, tcp.transport);
    assertEquals(3, tcp.teams);
    assertEquals(6, tcp.stageTasks());
    assertEquals("barrier cp=2 grid=2x1 backend=cpu transport=tcp teams=3", tcp.describe());
    // GPU ranks: each team its own NVSHMEM world
    RoutePlan gpu = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.executor.resource.gpu.amount", "1",
        "spark.foldcp.cp.teams", "2"), TransportChoiceTest::notAsked);
    assertEquals(Transport.NVSHMEM, gpu.transport);
    assertEquals(2, gpu.teams);
    assertEquals(4, gpu.stageTasks());
    assertEquals("barrier cp=2 grid=2x1 backend=gpu transport=nvshmem teams=2 storeRoute=auto reshard=fused",
        gpu.describe());
    RoutePlan auto = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.executor.resource.gpu.amount", "1",
        "spark.foldcp.cp.teams", "auto"), TransportChoiceTest::notAsked);
    assertEquals(RoutePlan.AUTO_TEAMS, auto.teams);
  }

  @Test
  void autoPicksNvshmemWhenTheExecutorsHaveGpus() {
    RoutePlan p = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.executor.resource.gpu.amount", "1",
        "spark.foldcp.nvshmem.heapBytes", "2g", "spark.foldcp.nvshmem.home", "/opt/nvshmem"),
        TransportChoiceTest::notAsked);
    assertEquals(Kind.BARRIER, p.kind);
    assertEquals(RoutePlan.Backend.GPU, p.backend);
    assertEquals(Transport.NVSHMEM, p.transport);
    assertEquals(new RoutePlan.Nvshmem("/opt/nvshmem", 2L << 30, StoreRoute.AUTO), p.nvshmem);
    assertEquals("barrier cp=2 grid=2x1 backend=gpu transport=nvshmem storeRoute=auto reshard=fused", p.describe());
    assertTrue(p.reason.contains("spark.foldcp.cp.transport = auto: the ranks have GPUs"
        + " (spark.executor.resource.gpu.amount > 0), so they form an NVSHMEM team"), p.reason);
  }

  @Test
  void autoPicksTcpWithoutGpusAndSaysWhy() {
    RoutePlan p = RouteChooser.choose(conf("spark.master", CLUSTER), TransportChoiceTest::notAsked);
    assertEquals(Transport.TCP, p.transport);
    assertEquals(RoutePlan.Backend.CPU, p.backend);
    assertNull(p.nvshmem);
    assertTrue(p.reason.endsWith("CPU ranks over TCP, since the executors have no GPUs"
        + " (spark.executor.resource.gpu.amount is not set)"), p.reason);
    RoutePlan off = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.executor.resource.gpu.amount", "1",
        "spark.foldcp.gpu.enabled", "false"), TransportChoiceTest::notAsked);
    assertEquals(Transport.TCP, off.transport);
    assertTrue(off.reason.endsWith("since spark.foldcp.gpu.enabled = false"), off.reason);
  }

  @Test
  void autoInLocalModeRunsTcpEvenWithTheDriversGpu() {
    // local mode: every task in the driver's JVM, and NVSHMEM has one PE per process
    RoutePlan p = RouteChooser.choose(conf("spark.master", "local[4]", "spark.driver.resource.gpu.amount", "1",
        "spark.executor.resource.gpu.amount", "1"), TransportChoiceTest::notAsked);
    assertEquals(Transport.TCP, p.transport);
    assertTrue(p.reason.contains("local mode (master local[4]) runs every rank in the driver's JVM, and an NVSHMEM"
        + " team needs one process per rank"), p.reason);
  }

  @Test
  void autoOnALocalClusterAsksTheLibraryAndFallsBackToTcpWithItsReason() {
    List<String> asked = new ArrayList<>();
    RoutePlan gpu = RouteChooser.choose(conf("spark.master", LOCAL_CLUSTER, "spark.executor.resource.gpu.amount", "1",
        "spark.foldcp.nvshmem.home", "/opt/nv"), home -> {
          asked.add(home);
          return null;
        });
    assertEquals(Transport.NVSHMEM, gpu.transport);
    assertEquals(List.of("/opt/nv"), asked, "the configured home is where the library is looked for");
    RoutePlan cpu = RouteChooser.choose(conf("spark.master", LOCAL_CLUSTER, "spark.executor.resource.gpu.amount",
        "1"), home -> "libnvshmem_host.so.3 was not found; looked in: nowhere");
    assertEquals(Transport.TCP, cpu.transport);
    assertTrue(cpu.reason.endsWith("since the CP GPU library cannot load on this machine, where the executors run:"
        + " libnvshmem_host.so.3 was not found; looked in: nowhere"), cpu.reason);
  }

  @Test
  void forcedTcpKeepsGpuExecutorsRanksOnTheCpu() {
    RoutePlan p = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.executor.resource.gpu.amount", "1",
        "spark.foldcp.cp.transport", "tcp"), TransportChoiceTest::notAsked);
    assertEquals(Transport.TCP, p.transport);
    assertEquals("barrier cp=2 grid=2x1 backend=cpu transport=tcp", p.describe());
    assertTrue(p.reason.endsWith("spark.foldcp.cp.transport = tcp: CPU ranks over TCP"), p.reason);
  }

  @Test
  void forcedNvshmemOnAClusterIsPlannedWithTheStoreRoute() {
    RoutePlan p = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.foldcp.cp.transport", "NVSHMEM",
        "spark.foldcp.nvshmem.storeRoute", "put", "spark.foldcp.route", "barrier"), TransportChoiceTest::notAsked);
    assertEquals(Transport.NVSHMEM, p.transport);
    assertEquals("barrier cp=2 grid=2x1 backend=gpu transport=nvshmem storeRoute=put reshard=fused", p.describe());
    assertTrue(p.reason.contains("spark.foldcp.cp.transport = nvshmem: forced"), p.reason);
  }

  @Test
  void forcedNvshmemWithoutTheLibraryFailsWithNativeCpsReason() {
    String why = NativeCp.unavailableReason(null);
    assertNotNull(why, "this test machine has no CP GPU library");
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(conf(
        "spark.master", LOCAL_CLUSTER, "spark.foldcp.cp.transport", "nvshmem")));
    String m = e.getMessage();
    assertTrue(m.startsWith("spark.foldcp.cp.transport = 'nvshmem': the NVSHMEM team cannot run here: the CP GPU"
        + " library cannot load on this machine, where the executors run: "), m);
    assertTrue(m.contains(why), m);
    assertTrue(m.endsWith("use spark.foldcp.cp.transport = tcp to run the ranks on the CPU"), m);
  }

  @Test
  void forcedNvshmemInLocalModeOrWithDynamicAllocationIsRefused() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(conf(
        "spark.master", "local[2]", "spark.foldcp.cp.transport", "nvshmem"), LOADS));
    assertTrue(e.getMessage().contains("local mode (master local[2])"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> RouteChooser.choose(conf("spark.master", CLUSTER,
        "spark.foldcp.cp.transport", "nvshmem", "spark.dynamicAllocation.enabled", "true"), LOADS));
    assertTrue(e.getMessage().startsWith("spark.foldcp.cp.transport = 'nvshmem': the NVSHMEM team runs as one"
        + " barrier stage"), e.getMessage());
    assertTrue(e.getMessage().contains("spark.dynamicAllocation.enabled = true"), e.getMessage());
  }

  @Test
  void cp1AndTheShuffleRouteHaveNoTeam() {
    RoutePlan single = RouteChooser.choose(conf("spark.foldcp.cp", "1", "spark.foldcp.cp.transport", "nvshmem"), LOADS);
    assertEquals(Kind.SINGLE, single.kind);
    assertEquals(Transport.NONE, single.transport);
    RoutePlan shuffle = RouteChooser.choose(conf("spark.master", CLUSTER, "spark.executor.resource.gpu.amount", "1",
        "spark.dynamicAllocation.enabled", "true"), LOADS);
    assertEquals(Kind.SHUFFLE, shuffle.kind);
    assertEquals(Transport.NONE, shuffle.transport);
    assertEquals("shuffle cp=2 grid=2x1 backend=cpu", shuffle.describe());
  }

  @Test
  void planRefusesAnInconsistentTeam() {
    RoutePlan barrier = new RoutePlan(Kind.BARRIER, org.foldcp.ops.cp.CpGrid.oneD(2), 1, 1000, 1000, "test");
    assertEquals(Transport.TCP, barrier.transport);
    assertThrows(IllegalArgumentException.class, () -> barrier.withBackend(RoutePlan.Backend.GPU));
    assertThrows(IllegalArgumentException.class, () -> RoutePlan.single(1, "test")
        .withNvshmem(new RoutePlan.Nvshmem(null, 1L << 30, StoreRoute.AUTO)));
    RoutePlan gpu = barrier.withNvshmem(new RoutePlan.Nvshmem(null, 1L << 30, StoreRoute.PEER));
    assertEquals("barrier cp=2 grid=2x1 backend=gpu transport=nvshmem storeRoute=peer reshard=fused", gpu.describe());
  }
}
