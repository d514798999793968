package org.foldcp.spark.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.SparkConf;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.gpu.cp.StoreRoute;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FoldCpConfTest {

  @Test
  void defaultsAreTheDocumentedOnes() {
    FoldCpConf c = FoldCpConf.defaults();
    assertEquals(FoldCpConf.Route.AUTO, c.get(FoldCpConf.ROUTE));
    assertEquals(1, c.get(FoldCpConf.CP));
    assertEquals(CpGrid.oneD(1), c.grid());
    assertEquals(0, c.get(FoldCpConf.CPU_THREADS));
    assertEquals(300, c.get(FoldCpConf.BARRIER_TIMEOUT_SECONDS));
    assertEquals(30000, c.get(FoldCpConf.CONNECT_TIMEOUT_MS));
    assertTrue(c.get(FoldCpConf.GPU_ENABLED));
    assertEquals(FoldCpConf.Transport.AUTO, c.get(FoldCpConf.CP_TRANSPORT));
    assertNull(c.nvshmemHome(), "empty home: search");
    assertEquals(16L << 30, c.get(FoldCpConf.NVSHMEM_HEAP_BYTES));
    assertEquals(StoreRoute.AUTO, c.get(FoldCpConf.NVSHMEM_STORE_ROUTE));
    assertEquals(8, c.get(FoldCpConf.WEIGHTS_CACHE_ENTRIES));
    for (ConfKey<?> k : FoldCpConf.KEYS) {
      assertFalse(c.isSet(k), k.name());
      assertEquals(k.defaultValue(), c.asMap().get(k.name()), k.name());
    }
  }

  @Test
  void everyKeyIsUnderThePrefixOnceAndItsDefaultParses() {
    Set<String> names = new HashSet<>();
    for (ConfKey<?> k : FoldCpConf.KEYS) {
      assertTrue(k.name().startsWith(FoldCpConf.PREFIX), k.name());
      assertTrue(names.add(k.name()), "listed twice: " + k.name());
      assertFalse(k.doc().isBlank(), k.name());
      k.parseDefault();
    }
  }

  @Test
  void readsEveryKeyFromASparkConf() {
    SparkConf sc = new SparkConf(false)
        .set("spark.foldcp.route", " Barrier ")
        .set("spark.foldcp.cp", "4")
        .set("spark.foldcp.grid", "2x2")
        .set("spark.foldcp.cpu.threads", "3")
        .set("spark.foldcp.barrier.timeoutSeconds", "60")
        .set("spark.foldcp.transport.connectTimeoutMs", "1500")
        .set("spark.foldcp.gpu.enabled", "FALSE")
        .set("spark.foldcp.cp.transport", "TCP")
        .set("spark.foldcp.nvshmem.home", "/opt/nvshmem")
        .set("spark.foldcp.nvshmem.heapBytes", "8g")
        .set("spark.foldcp.nvshmem.storeRoute", "Put")
        .set("spark.foldcp.weights.cacheEntries", "0")
        .set("spark.executor.memory", "4g"); // outside the namespace: ignored
    FoldCpConf c = FoldCpConf.from(sc);
    assertEquals(FoldCpConf.Route.BARRIER, c.get(FoldCpConf.ROUTE));
    assertEquals(4, c.get(FoldCpConf.CP));
    assertEquals(CpGrid.of(2, 2), c.grid());
    assertEquals(3, c.get(FoldCpConf.CPU_THREADS));
    assertEquals(3, c.cpuThreadsPerTask(8));
    assertEquals(60, c.get(FoldCpConf.BARRIER_TIMEOUT_SECONDS));
    assertEquals(1500, c.get(FoldCpConf.CONNECT_TIMEOUT_MS));
    assertFalse(c.get(FoldCpConf.GPU_ENABLED));
    assertEquals(FoldCpConf.Transport.TCP, c.get(FoldCpConf.CP_TRANSPORT));
    assertEquals("/opt/nvshmem", c.nvshmemHome());
    assertEquals(8L << 30, c.get(FoldCpConf.NVSHMEM_HEAP_BYTES));
    assertEquals(StoreRoute.PUT, c.get(FoldCpConf.NVSHMEM_STORE_ROUTE));
    assertEquals(0, c.get(FoldCpConf.WEIGHTS_CACHE_ENTRIES));
    assertTrue(c.isSet(FoldCpConf.GRID));
    assertEquals("Barrier", c.asMap().get("spark.foldcp.route"), "values are kept as given, trimmed");
    assertFalse(c.asMap().containsKey("spark.executor.memory"));
  }

  @Test
  void emptyGridIsOneDimensionalOverCp() {
    FoldCpConf c = FoldCpConf.from(Map.of("spark.foldcp.cp", "3"));
    assertEquals(CpGrid.oneD(3), c.grid());
    assertEquals(3, c.grid().rowGroups());
    assertEquals(1, c.grid().colGroups());
  }

  @Test
  void zeroCpuThreadsMeansTaskCpus() {
    FoldCpConf c = FoldCpConf.defaults();
    assertEquals(4, c.cpuThreadsPerTask(4));
    assertEquals(1, c.cpuThreadsPerTask(1));
  }

  @ParameterizedTest
  @CsvSource({
      "67108864, 67108864",
      "65536k, 67108864",
      "512m, 536870912",
      "2GB, 2147483648",
      "16g, 17179869184",
      "1t, 1099511627776"})
  void parsesHeapSizes(String raw, long bytes) {
    FoldCpConf c = FoldCpConf.from(Map.of("spark.foldcp.nvshmem.heapBytes", raw));
    assertEquals(bytes, c.get(FoldCpConf.NVSHMEM_HEAP_BYTES));
  }

  @Test
  void asMapRoundTripsToTheSameSettings() {
    FoldCpConf a = FoldCpConf.from(Map.of("spark.foldcp.cp", "6", "spark.foldcp.grid", "3x2",
        "spark.foldcp.route", "shuffle", "spark.foldcp.nvshmem.heapBytes", "4g", "spark.foldcp.nvshmem.home",
        "/opt/nvshmem"));
    FoldCpConf b = FoldCpConf.from(a.asMap());
    assertEquals(a.asMap(), b.asMap());
    assertEquals(a.grid(), b.grid());
    assertEquals(a.get(FoldCpConf.ROUTE), b.get(FoldCpConf.ROUTE));
    assertEquals(a.get(FoldCpConf.NVSHMEM_HEAP_BYTES), b.get(FoldCpConf.NVSHMEM_HEAP_BYTES));
    assertEquals(a.nvshmemHome(), b.nvshmemHome());
    assertEquals(FoldCpConf.KEYS.stream().map(ConfKey::name).toList(),
        List.copyOf(b.asMap().keySet()), "asMap lists every key in table order");
  }

  @Test
  void javaSerializationKeepsTheGivenSettingsAndTheirValues() throws Exception {
    FoldCpConf a = FoldCpConf.from(Map.of("spark.foldcp.cp", "4", "spark.foldcp.grid", "2x2",
        "spark.foldcp.nvshmem.storeRoute", "put"));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(a);
    }
    FoldCpConf b;
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      b = (FoldCpConf) in.readObject();
    }
    assertEquals(a.describe(), b.describe(), "same values, same keys marked as defaults");
    assertEquals(CpGrid.of(2, 2), b.grid());
    assertEquals(StoreRoute.PUT, b.get(FoldCpConf.NVSHMEM_STORE_ROUTE));
    assertTrue(b.isSet(FoldCpConf.CP));
    assertFalse(b.isSet(FoldCpConf.ROUTE));
  }

  @Test
  void getRefusesAKeyThatIsNotRegistered() {
    ConfKey<Integer> stray = new ConfRegistry(FoldCpConf.PREFIX, "test").conf(FoldCpConf.PREFIX + "stray")
        .doc("Registered elsewhere.").intConf().atLeast("0").createWithDefault("0");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> FoldCpConf.defaults().get(stray));
    assertEquals("spark.foldcp.stray is not one of FoldCpConf.KEYS", e.getMessage());
  }

  @ParameterizedTest(name = "{0} = ''{1}''")
  @CsvSource(delimiter = ';', value = {
      "spark.foldcp.route; gpus; must be one of auto, cpu, gpu, barrier, shuffle",
      "spark.foldcp.cp; 0; must be auto or an integer >= 1",
      "spark.foldcp.cp; two; must be auto or an integer >= 1",
      "spark.foldcp.cp; 99999999999; must be auto or an integer >= 1",
      "spark.foldcp.grid; 2y2; must be empty or cp0xcp1",
      "spark.foldcp.grid; 0x1; must be empty or cp0xcp1",
      "spark.foldcp.cpu.threads; -1; must be an integer >= 0",
      "spark.foldcp.barrier.timeoutSeconds; 0; must be an integer >= 1",
      "spark.foldcp.transport.connectTimeoutMs; 1.5; must be an integer >= 1",
      "spark.foldcp.gpu.enabled; yes; must be true or false",
      "spark.foldcp.cp.transport; mpi; must be one of auto, tcp, nvshmem",
      "spark.foldcp.nvshmem.home; nvshmem/lib; must be empty or an absolute path",
      "spark.foldcp.nvshmem.heapBytes; 8x; must be a byte count >= 64m",
      "spark.foldcp.nvshmem.heapBytes; 0; must be a byte count >= 64m",
      "spark.foldcp.nvshmem.heapBytes; 63m; must be a byte count >= 64m",
      "spark.foldcp.nvshmem.heapBytes; auto; must be a byte count >= 64m",
      "spark.foldcp.nvshmem.heapBytes; 99999999999t; must be a byte count >= 64m",
      "spark.foldcp.nvshmem.storeRoute; nvlink; must be one of auto, peer, put",
      "spark.foldcp.weights.cacheEntries; -3; must be an integer >= 0"})
  void badValuesNameKeyValueAndRule(String key, String value, String rule) {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpConf.from(Map.of(key, value)));
    assertTrue(e.getMessage().startsWith(key + " = '" + value + "': " + rule), e.getMessage());
  }

  @Test
  void gridMustCoverExactlyCpRanks() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpConf.from(Map.of("spark.foldcp.cp", "2", "spark.foldcp.grid", "2x2")));
    assertEquals("spark.foldcp.grid = '2x2': cp0 * cp1 must equal spark.foldcp.cp, but 2 * 2 = 4 and"
        + " spark.foldcp.cp = 2", e.getMessage());
    // The default cp = 1 does not fit a 2x2 grid either: setting the grid alone is not enough.
    assertThrows(InvalidInputException.class, () -> FoldCpConf.from(Map.of("spark.foldcp.grid", "2x2")));
  }

  @Test
  void gpuRouteNeedsGpusEnabled() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpConf.from(Map.of("spark.foldcp.route", "gpu", "spark.foldcp.gpu.enabled", "false")));
    assertEquals("spark.foldcp.route = 'gpu': route gpu needs spark.foldcp.gpu.enabled = true, but it is false",
        e.getMessage());
  }

  @Test
  void nvshmemTransportNeedsGpusAndABarrierRoute() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> FoldCpConf.from(Map.of(
        "spark.foldcp.cp.transport", "nvshmem", "spark.foldcp.gpu.enabled", "false")));
    assertEquals("spark.foldcp.cp.transport = 'nvshmem': the NVSHMEM team runs its ranks on GPUs and needs"
        + " spark.foldcp.gpu.enabled = true, but it is false", e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> FoldCpConf.from(Map.of(
        "spark.foldcp.cp.transport", "nvshmem", "spark.foldcp.route", "shuffle", "spark.foldcp.cp", "2")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.cp.transport = 'nvshmem': nvshmem is the transport of the"
        + " barrier route's GPU team, but spark.foldcp.route = shuffle moves the reshards through Spark shuffles;"
        + " use route auto, gpu or barrier"), e.getMessage());
    e = assertThrows(InvalidInputException.class, () -> FoldCpConf.from(Map.of(
        "spark.foldcp.cp.transport", "nvshmem", "spark.foldcp.route", "cpu")));
    assertTrue(e.getMessage().contains("spark.foldcp.route = cpu computes on the CPU"), e.getMessage());
  }

  @Test
  void tcpTransportContradictsGpuRanks() {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> FoldCpConf.from(Map.of(
        "spark.foldcp.cp.transport", "tcp", "spark.foldcp.route", "gpu", "spark.foldcp.cp", "2")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.cp.transport = 'tcp': the TCP team computes on the CPU, but"
        + " spark.foldcp.route = gpu runs the cp = 2 ranks on GPUs"), e.getMessage());
    // cp = 1 has no team, so the transport does not matter there
    assertEquals(FoldCpConf.Transport.TCP, FoldCpConf.from(Map.of("spark.foldcp.cp.transport", "tcp",
        "spark.foldcp.route", "gpu")).get(FoldCpConf.CP_TRANSPORT));
  }

  @Test
  void unknownKeyIsNamedWithASuggestionAndTheKnownKeys() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpConf.from(Map.of("spark.foldcp.cpp", "2", "spark.foldcp.route", "cpu")));
    String m = e.getMessage();
    assertTrue(m.startsWith("spark.foldcp.cpp = '2': not a fold-cp setting (did you mean spark.foldcp.cp?)"), m);
    for (ConfKey<?> k : FoldCpConf.KEYS) {
      assertTrue(m.contains(k.name()), "lists " + k.name() + ": " + m);
    }
  }

  @Test
  void severalUnknownKeysAreAllReported() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpConf.from(Map.of("spark.foldcp.zzz", "1", "spark.foldcp.aaa", "2")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.aaa = '2': not a fold-cp setting;"), e.getMessage());
    assertTrue(e.getMessage().endsWith("; also unknown: spark.foldcp.zzz"), e.getMessage());
  }

  @Test
  void noSuggestionForAKeyFarFromEveryKnownOne() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpConf.from(Map.of("spark.foldcp.somethingElseEntirely", "1")));
    assertFalse(e.getMessage().contains("did you mean"), e.getMessage());
  }

  @Test
  void describeMarksDefaults() {
    String d = FoldCpConf.from(Map.of("spark.foldcp.cp", "2")).describe();
    assertTrue(d.contains("spark.foldcp.cp=2,"), d);
    assertTrue(d.contains("spark.foldcp.route=auto (default)"), d);
    assertTrue(d.contains("spark.foldcp.grid='' (default)"), d);
  }

  @ParameterizedTest
  @CsvSource({
      "spark.foldcp.cpp, spark.foldcp.cp",
      "spark.foldcp.grdi, spark.foldcp.grid",
      "spark.foldcp.cpu.thread, spark.foldcp.cpu.threads",
      "spark.foldcp.weights.cacheEntry, spark.foldcp.weights.cacheEntries",
      "spark.foldcp.gpu.enable, spark.foldcp.gpu.enabled",
      "spark.foldcp.nvshmem.heapbytes, spark.foldcp.nvshmem.heapBytes",
      "spark.foldcp.cp.transprt, spark.foldcp.cp.transport"})
  void suggestsTheKeyATypoWasMeantToBe(String typo, String meant) {
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> FoldCpConf.from(Map.of(typo, "1")));
    assertTrue(e.getMessage().contains("(did you mean " + meant + "?)"), e.getMessage());
  }

  @Test
  void markdownTableHasARowPerKeyWithItsDefault() {
    String[] lines = FoldCpConf.markdownTable().split("\n");
    assertEquals("| key | default | meaning |", lines[0]);
    assertEquals(2 + FoldCpConf.KEYS.size(), lines.length);
    for (int i = 0; i < FoldCpConf.KEYS.size(); i++) {
      ConfKey<?> k = FoldCpConf.KEYS.get(i);
      String def = k.defaultValue().isEmpty() ? "(empty)" : "`" + k.defaultValue() + "`";
      assertTrue(lines[2 + i].startsWith("| `" + k.name() + "` | " + def + " | " + k.doc()), lines[2 + i]);
    }
  }

  @Test
  void cpTeamsIsAutoOrAPositiveInteger() {
    assertEquals(1, FoldCpConf.from(Map.of()).get(FoldCpConf.CP_TEAMS));
    assertEquals(3, FoldCpConf.from(Map.of("spark.foldcp.cp.teams", "3")).get(FoldCpConf.CP_TEAMS));
    assertEquals(0, FoldCpConf.from(Map.of("spark.foldcp.cp.teams", "Auto")).get(FoldCpConf.CP_TEAMS));
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> FoldCpConf.from(Map.of("spark.foldcp.cp.teams", "0")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.cp.teams = '0': must be auto or an integer >= 1"),
        e.getMessage());
  }
}
