package org.foldcp.spark.config;

import java.io.InvalidObjectException;
import java.io.ObjectInputStream;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.spark.SparkConf;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.ops.gpu.cp.Reshard;
import org.foldcp.ops.gpu.feed.FeedSettings;
import org.foldcp.ops.gpu.cp.StoreRoute;
import scala.Tuple2;

/**
 * Every {@code spark.foldcp.*} setting, in one place: the keys with their accepted values,
 * defaults and meaning ({@link #KEYS}, rendered into README.md by {@link #markdownTable()}), and
 * a validated, typed view of one configuration.
 *
 * <p>Each key is declared once, as a {@link ConfKey} constant made by {@code register}, which
 * carries its name, accepted values, default, meaning and parser and adds it to {@link #KEYS}; a
 * configuration's value of a key is read with {@link #get(ConfKey)}, e.g. {@code
 * conf.get(FoldCpConf.ROUTE)}. The few getters here compute something from the keys.
 *
 * <p>A FoldCpConf that exists is valid: construction parses every key, rejects keys under
 * {@code spark.foldcp.} that are not listed here (a typo must not silently fall back to a
 * default), and checks the keys against each other. Errors name the key, the value and the rule.
 */
public final class FoldCpConf implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The namespace of every fold-cp key. */
  public static final String PREFIX = "spark.foldcp.";

  // Filled by register() as each key constant is initialised, so no key can be left out of them.
  private static final List<ConfKey<?>> REGISTERED = new ArrayList<>();
  private static final Map<String, ConfKey<?>> BY_NAME = new LinkedHashMap<>();

  /** Every key, in declaration order: the order of the README table and of {@link #asMap()}. */
  public static final List<ConfKey<?>> KEYS = Collections.unmodifiableList(REGISTERED);

  /** How TriMul layers run over a DataFrame of complexes. */
  public enum Route {
    AUTO, CPU, GPU, BARRIER, SHUFFLE;

    /** The value as written in the configuration. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** How the ranks of a barrier team move the reshards (see {@link #CP_TRANSPORT}). */
  public enum Transport {
    AUTO, TCP, NVSHMEM;

    /** The value as written in the configuration. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * How many SQL metrics the TriMul operator keeps (see {@link #METRICS_LEVEL}), as spark-rapids
   * levels its metrics: each level shows what the levels before it show, and more.
   */
  public enum MetricsLevel {
    ESSENTIAL, MODERATE, DEBUG;

    /** Whether a metric of level {@code metric} is kept at this level. */
    public boolean keeps(MetricsLevel metric) {
      return metric.ordinal() <= ordinal();
    }

    /** The value as written in the configuration. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  public static final ConfKey<Route> ROUTE = register("route",
      "one of auto, cpu, gpu, barrier, shuffle", "auto",
      "How TriMul layers run: auto picks from cp and the executors' GPUs, cpu forces the CPU backend,"
          + " gpu the GPU backend (with cp > 1 a barrier team of GPU ranks), barrier a CP team of cp executors"
          + " in a barrier stage (CPU or GPU ranks: see spark.foldcp.cp.transport), shuffle a CP reshard"
          + " through Spark shuffles.",
      ValueParsers.anyCaseEnum(Route.class));

  public static final ConfKey<Integer> CP = register("cp",
      "auto or an integer >= 1", "1",
      "Context-parallel ranks per complex (executors that hold one pair tensor together);"
          + " D must be divisible by cp. auto: each complex its own cp from the cost model (docs/cost-model.md):"
          + " the smallest of spark.foldcp.cp.auto.candidates whose share fits spark.foldcp.cp.auto.memoryPerRank and"
          + " meets spark.foldcp.cp.auto.targetSeconds; the complexes of each cp run together in one job.",
      ValueParsers.autoOrIntAtLeast(1));

  public static final ConfKey<int[]> CP_AUTO_CANDIDATES = register("cp.auto.candidates",
      "a comma-separated ascending list of integers >= 1 starting at 1", "1,2,4,8",
      "The cp values spark.foldcp.cp = auto may give a complex (a value that does not divide D is skipped).",
      ValueParsers.ascendingIntsFromOne());

  public static final ConfKey<Long> CP_AUTO_MEMORY_PER_RANK = register("cp.auto.memoryPerRank",
      "a byte count >= 1m with an optional suffix k, m, g, t (powers of 1024)", "120g",
      "Device memory one rank may use for a layer's buffers when spark.foldcp.cp = auto picks cp (the model counts"
          + " 10 B N^2 D / cp bytes: x, the output, a, b, z); the default leaves an H200's 141 GB some room.",
      ValueParsers.byteSizeAtLeast(1L << 20));

  public static final ConfKey<Double> CP_AUTO_TARGET_SECONDS = register("cp.auto.targetSeconds",
      "none or a number of seconds > 0", "none",
      "The time one complex's stack may take when spark.foldcp.cp = auto picks cp, as the cost model predicts it"
          + " from an H200's measured rates (docs/cost-model.md); a larger cp is taken where a smaller one misses it."
          + " none: memory alone decides.",
      ValueParsers.noneOrPositiveSeconds());

  public static final ConfKey<Integer> CP_TEAMS = register("cp.teams",
      "auto or an integer >= 1", "1",
      "CP teams one barrier stage forms (route barrier): the stage runs teams x cp tasks, each team of cp"
          + " ranks its own complexes, the complexes spread over the teams by their FLOPs; a TCP mesh per team"
          + " (transport tcp) or an NVSHMEM world per team (transport nvshmem); auto: as many teams as the task"
          + " slots hold when the stage starts (slots / cp).",
      ValueParsers.autoOrIntAtLeast(1));

  public static final ConfKey<Optional<CpGrid>> GRID = register("grid",
      "empty or cp0xcp1 with cp0, cp1 >= 1, e.g. 2x2 (a bare n means nx1)", "",
      "Shape of the CP grid, cp0 row groups by cp1 column groups, with cp0 * cp1 = cp;"
          + " empty means 1-D (cp row bands, cp x 1).",
      FoldCpConf::parseGrid);

  public static final ConfKey<Integer> CPU_THREADS = register("cpu.threads",
      "an integer >= 0", "0",
      "Threads a task uses on the CPU backend; 0 means spark.task.cpus.",
      ValueParsers.intAtLeast(0));

  public static final ConfKey<Integer> BARRIER_TIMEOUT_SECONDS = register("barrier.timeoutSeconds",
      "an integer >= 1", "300",
      "Seconds a barrier-stage rank waits for its peers (team formation, allGather) before it fails"
          + " the stage instead of hanging.",
      ValueParsers.intAtLeast(1));

  public static final ConfKey<Integer> CONNECT_TIMEOUT_MS = register("transport.connectTimeoutMs",
      "an integer >= 1", "30000",
      "Milliseconds a rank waits to connect to a peer executor before it fails.",
      ValueParsers.intAtLeast(1));

  public static final ConfKey<Boolean> GPU_ENABLED = register("gpu.enabled",
      "true or false", "true",
      "Whether executors use the GPU Spark assigned them; false keeps every task on the CPU"
          + " (and makes route gpu an error).",
      ValueParsers.bool());

  public static final ConfKey<Integer> GPU_CONCURRENT_TASKS = register("gpu.concurrentTasks",
      "an integer >= 1", "1",
      "Tasks of one executor that may use its GPU at once: they borrow the executor's one CUDA context, layer"
          + " cache and GPU feed (pinned pool, streams, device slots), and further tasks wait (fair, in arrival order)"
          + " holding nothing on the device. On the cp = 1 route each task keeps up to 3 of its complexes in the feed"
          + " (their bytes copied by the feed's copy threads), so enough tasks to keep the device slots full (the job"
          + " benchmark's 16 on a 16-core host) is the setting to try.",
      ValueParsers.intAtLeast(1));

  public static final ConfKey<Long> GPU_PINNED_POOL_BYTES = register("gpu.pinnedPoolBytes",
      "a byte count >= 32m with an optional suffix k, m, g, t (powers of 1024), e.g. 2g", "1g",
      "Pinned (page-locked) host memory each executor allocates once for its GPU, in blocks of 16 MiB: every byte"
          + " of a complex moves between Spark's rows and the GPU through it with bulk copies, the uploads, kernels and"
          + " downloads of different complexes overlapped. An output row is laid out in the pool where a span of it"
          + " is free, so that the download writes the values where Spark reads them (no host copy); each task in"
          + " flight holds one such row, so a pool of about (concurrent tasks) x (largest complex + 64 MiB) lets every"
          + " output skip the copy. A CP rank on the GPU moves its tile in and out through the same pool. Fixed for the"
          + " executor's life; a complex or tile larger than the pool streams through it.",
      ValueParsers.byteSizeAtLeast(32L << 20));

  public static final ConfKey<Integer> GPU_DEVICE_SLOTS = register("gpu.deviceSlots",
      "an integer >= 2", "4",
      "Complexes an executor's GPU holds at once between upload and download (each slot grows to the largest complex"
          + " it held): at least 3 keep an upload, the kernels and a download busy together; more let several tasks"
          + " feed the GPU. A complex whose slots and workspace would not fit in device memory runs on its own,"
          + " in channel groups where needed.",
      ValueParsers.intAtLeast(2));

  public static final ConfKey<Integer> GPU_COPY_THREADS = register("gpu.copyThreads",
      "an integer in [1, 256]", "8",
      "Threads of each executor that copy complexes (and CP ranks' tiles) from Spark's rows into the pinned pool,"
          + " 16 MiB blocks in the order the complexes came, each block uploaded as soon as it is copied: one complex's"
          + " copy runs on all of them, so the first complex reaches the GPU soonest. About half the host's cores (8"
          + " threads copied 49-57 GB/s on a 16-core H200 host).",
      ValueParsers.intIn(1, 256));

  public static final ConfKey<Long> GPU_PINNED_CACHE_BYTES = register("gpu.pinnedCacheBytes",
      "a byte count >= 0 with an optional suffix k, m, g, t (powers of 1024), e.g. 16g", "8g",
      "Pinned host memory that rows cached with spark.sql.cache.serializer=" + "org.foldcp.spark.sql.RowCachedBatchSerializer"
          + " may take on an executor whose tasks compute on a GPU: a cached complex lies where the GPU's DMA engines"
          + " read it, so every later pass uploads it with no host copy. Allocated row by row as the cache fills,"
          + " nothing before; rows beyond it stay on the Java heap (and are copied through the pinned pool); the"
          + " memory of a dropped cache returns at the JVM's next collection, and all of it when the executor's GPU"
          + " closes. 0 keeps every cached row on the heap.",
      ValueParsers.byteSizeAtLeast(0));

  public static final ConfKey<Transport> CP_TRANSPORT = register("cp.transport",
      "one of auto, tcp, nvshmem", "auto",
      "How the cp ranks of the barrier route exchange the reshards: tcp runs the ranks on the CPU over a TCP"
          + " mesh; nvshmem runs them on their executors' GPUs as one NVSHMEM team, the reshards fused into the"
          + " kernels' stores (one executor per GPU, one rank per executor); auto picks nvshmem when the ranks"
          + " have GPUs (route gpu, or executors given a GPU resource, outside local mode) and tcp otherwise.",
      ValueParsers.anyCaseEnum(Transport.class));

  public static final ConfKey<String> NVSHMEM_HOME = register("nvshmem.home",
      "empty or an absolute path", "",
      "Folder on the executors holding NVSHMEM's lib/libnvshmem_host.so.3 (NVSHMEM 3, CUDA 13); empty searches"
          + " NVSHMEM_HOME, the pip wheel nvidia-nvshmem-cu13 and java.library.path.",
      ValueParsers.emptyOrAbsolutePath());

  public static final ConfKey<Long> NVSHMEM_HEAP_BYTES = register("nvshmem.heapBytes",
      "a byte count >= 64m with an optional suffix k, m, g, t (powers of 1024), e.g. 16g", "16g",
      "NVSHMEM symmetric heap each GPU rank reserves when its team forms, fixed for the executor's life;"
          + " a stack whose buffers do not fit fails naming the bytes it needs.",
      ValueParsers.byteSizeAtLeast(64L << 20));

  public static final ConfKey<StoreRoute> NVSHMEM_STORE_ROUTE = register("nvshmem.storeRoute",
      "one of auto, peer, put", "auto",
      "How the fused reshards reach the other GPU ranks: peer stores through NVSHMEM peer pointers (NVLink"
          + " within a node, or ranks sharing a GPU), put through device-initiated puts (ranks on other nodes);"
          + " auto takes peer when every rank reaches every other by pointer, else put. Decided once per stack,"
          + " the same on every rank.",
      ValueParsers.anyCaseEnum(StoreRoute.class));

  public static final ConfKey<Reshard> NVSHMEM_RESHARD = register("nvshmem.reshard",
      "one of fused, unfused", "fused",
      "How the GPU team's two reshards run: fused into the GEMM epilogues' stores, or unfused (the kernels store"
          + " locally, then a separate all-to-all moves the data: the reference that shows what fusion buys;"
          + " the outputs are the same bits). Decided once per stack, the same on every rank.",
      ValueParsers.anyCaseEnum(Reshard.class));

  public static final ConfKey<Integer> WEIGHTS_CACHE_ENTRIES = register("weights.cacheEntries",
      "an integer >= 0", "8",
      "Decoded layer weights an executor keeps for reuse by later tasks; 0 disables the cache.",
      ValueParsers.intAtLeast(0));

  public static final ConfKey<Boolean> INPUT_ALLOW_NON_FINITE = register("input.allowNonFinite",
      "true or false", "false",
      "Whether pair tensors holding NaN or Inf may go through TriMul. false (the default) fails the job where the"
          + " data enters (every route and foldcp_trimul), naming the complex, the first (b, i, j, c) and the count,"
          + " since one such value spreads into almost every output; true skips the check (outputs may be NaN).",
      ValueParsers.bool());

  public static final ConfKey<MetricsLevel> METRICS_LEVEL = register("metrics.level",
      "one of essential, moderate, debug", "essential",
      "SQL metrics of the TriMul operator (Spark UI, explain(\"cost\")): essential keeps Spark's numOutputRows and"
          + " opTime (compute plus reshard time); moderate adds tiles computed, tiles on a GPU, the pair and reshard"
          + " bytes moved and, on the cp = 1 route's GPU feed, the GPU busy time and the time tasks waited for pinned"
          + " blocks, device slots and copies; debug adds the time per stage (compute, reshard), the fused reshard bytes per direction and,"
          + " on the cp = 1 route's GPU, the kernel time of each TriMul stage (each layer then waits for its kernels, so debug runs the cp = 1 route's complexes through the tensor path,"
          + " not the overlapped GPU feed).",
      ValueParsers.anyCaseEnum(MetricsLevel.class));

  /** Declares the key {@code PREFIX + suffix} and adds it to {@link #KEYS}. */
  private static <T> ConfKey<T> register(String suffix, String values, String defaultValue, String doc,
                                         ConfKey.Parser<T> parser) {
    ConfKey<T> key = new ConfKey<>(PREFIX + suffix, values, defaultValue, doc, parser);
    if (BY_NAME.putIfAbsent(key.name(), key) != null) {
      throw new IllegalStateException("declared twice: " + key.name());
    }
    REGISTERED.add(key);
    return key;
  }

  private final Map<String, String> settings; // every key, KEYS order: the given value or the default
  private final Set<String> given;            // keys set explicitly
  private final Map<ConfKey<?>, Object> values; // every key's parsed setting; identity keys: one object per key
  private final CpGrid grid;

  private FoldCpConf(Map<String, String> givenSettings) {
    Map<String, String> all = new LinkedHashMap<>();
    Map<ConfKey<?>, Object> parsed = new IdentityHashMap<>();
    for (ConfKey<?> k : KEYS) {
      String raw = givenSettings.get(k.name());
      String setting = raw == null ? k.defaultValue() : raw.trim();
      all.put(k.name(), setting);
      parsed.put(k, k.parse(setting));
    }
    this.settings = Collections.unmodifiableMap(all);
    this.given = Collections.unmodifiableSet(new LinkedHashSet<>(givenSettings.keySet()));
    this.values = Collections.unmodifiableMap(parsed);
    Route route = get(ROUTE);
    int cp = get(CP);
    Optional<CpGrid> explicitGrid = get(GRID);
    boolean gpuEnabled = get(GPU_ENABLED);
    Transport transport = get(CP_TRANSPORT);

    // Cross-key rules, checked here so that no route has to repeat them.
    if (cp == 0 && explicitGrid.isPresent()) {
      throw ValueParsers.bad(GRID.name(), all.get(GRID.name()), "must be empty when " + CP.name()
          + " = auto: each complex gets its own cp, and its grid is cp x 1");
    }
    if (cp != 0 && explicitGrid.isPresent() && explicitGrid.get().size() != cp) {
      CpGrid g = explicitGrid.get();
      throw ValueParsers.bad(GRID.name(), all.get(GRID.name()),
          "cp0 * cp1 must equal " + CP.name() + ", but " + g.rowGroups() + " * " + g.colGroups() + " = " + g.size()
              + " and " + CP.name() + " = " + cp);
    }
    // cp = auto: the grid of one complex is chosen when its shape is known (CpAutoRoute); cp x 1
    this.grid = explicitGrid.orElseGet(() -> CpGrid.oneD(Math.max(cp, 1)));
    if (route == Route.GPU && !gpuEnabled) {
      throw ValueParsers.bad(ROUTE.name(), all.get(ROUTE.name()),
          "route gpu needs " + GPU_ENABLED.name() + " = true, but it is false");
    }
    String transportRaw = all.get(CP_TRANSPORT.name());
    if (transport == Transport.NVSHMEM && !gpuEnabled) {
      throw ValueParsers.bad(CP_TRANSPORT.name(), transportRaw,
          "the NVSHMEM team runs its ranks on GPUs and needs " + GPU_ENABLED.name() + " = true, but it is false");
    }
    if (transport == Transport.NVSHMEM && (route == Route.CPU || route == Route.SHUFFLE)) {
      throw ValueParsers.bad(CP_TRANSPORT.name(), transportRaw,
          "nvshmem is the transport of the barrier route's GPU team, but " + ROUTE.name() + " = " + route.label()
              + (route == Route.CPU ? " computes on the CPU" : " moves the reshards through Spark shuffles")
              + "; use route auto, gpu or barrier");
    }
    if (transport == Transport.TCP && route == Route.GPU && cp > 1) {
      throw ValueParsers.bad(CP_TRANSPORT.name(), transportRaw,
          "the TCP team computes on the CPU, but " + ROUTE.name() + " = gpu runs the cp = " + cp + " ranks on GPUs;"
              + " use transport nvshmem (or auto) for GPU ranks, or route barrier for CPU ranks");
    }
  }

  /** All defaults. */
  public static FoldCpConf defaults() {
    return new FoldCpConf(Map.of());
  }

  /** Validates the {@code spark.foldcp.*} keys of a SparkConf; other keys are ignored. */
  public static FoldCpConf from(SparkConf conf) {
    Map<String, String> all = new TreeMap<>();
    for (Tuple2<String, String> kv : conf.getAll()) {
      all.put(kv._1(), kv._2());
    }
    return from(all);
  }

  /**
   * Validates the {@code spark.foldcp.*} keys of {@code conf} (for example the map the driver
   * plugin hands to executors); keys outside the namespace are ignored.
   *
   * @throws InvalidInputException for an unknown key, a bad value or keys that contradict each other
   */
  public static FoldCpConf from(Map<String, String> conf) {
    Map<String, String> ours = new TreeMap<>(); // sorted, so the first unknown key reported is stable
    for (Map.Entry<String, String> e : conf.entrySet()) {
      if (e.getKey().startsWith(PREFIX)) {
        ours.put(e.getKey(), e.getValue());
      }
    }
    List<String> unknown = new ArrayList<>();
    for (String key : ours.keySet()) {
      if (!BY_NAME.containsKey(key)) {
        unknown.add(key);
      }
    }
    if (!unknown.isEmpty()) {
      String key = unknown.get(0);
      throw ValueParsers.bad(key, ours.get(key), unknownKeyRule(key, unknown));
    }
    return new FoldCpConf(ours);
  }

  private static String unknownKeyRule(String key, List<String> unknown) {
    StringBuilder rule = new StringBuilder("not a fold-cp setting");
    Spelling.closest(key, BY_NAME.keySet(), PREFIX).ifPresent(k -> rule.append(" (did you mean ").append(k).append("?)"));
    rule.append("; the known keys are ").append(KEYS.stream().map(ConfKey::name).collect(Collectors.joining(", ")));
    if (unknown.size() > 1) {
      rule.append("; also unknown: ").append(String.join(", ", unknown.subList(1, unknown.size())));
    }
    return rule.toString();
  }

  private static Optional<CpGrid> parseGrid(String key, String raw, String values) {
    if (raw.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(CpGrid.parse(raw));
    } catch (InvalidInputException e) {
      throw ValueParsers.bad(key, raw, "must be " + values + " (" + e.getMessage() + ")");
    }
  }

  /**
   * The validated value of {@code key} in this configuration (the given setting or the default).
   *
   * @throws IllegalArgumentException for a key not in {@link #KEYS}
   */
  public <T> T get(ConfKey<T> key) {
    Object value = values.get(key);
    if (value == null) {
      throw new IllegalArgumentException(key.name() + " is not one of FoldCpConf.KEYS");
    }
    @SuppressWarnings("unchecked") // the constructor stored key.parse(...) under key, a T
    T typed = (T) value;
    return typed;
  }

  /** The grid of cp ranks (cp x 1 unless spark.foldcp.grid says otherwise); 1 x 1 when cp = auto. */
  public CpGrid grid() { return grid; }

  /** Whether spark.foldcp.cp = auto: each complex gets its own cp (CpAutoRoute). */
  public boolean cpAuto() { return get(CP) == 0; }

  /** Threads a task uses on the CPU backend, given spark.task.cpus ({@link #CPU_THREADS} 0 means those). */
  public int cpuThreadsPerTask(int taskCpus) {
    InvalidInputException.require(taskCpus >= 1, "spark.task.cpus", taskCpus, "must be an integer >= 1");
    int cpuThreads = get(CPU_THREADS);
    return cpuThreads == 0 ? taskCpus : cpuThreads;
  }

  /** The sizes of each executor's GPU feed: its pinned pool, device slots and copy threads. */
  public FeedSettings feedSettings() {
    return new FeedSettings(get(GPU_PINNED_POOL_BYTES), FeedSettings.DEFAULT_BLOCK_BYTES, get(GPU_DEVICE_SLOTS),
        get(GPU_COPY_THREADS), get(GPU_PINNED_CACHE_BYTES));
  }

  /** The configured NVSHMEM folder, or null to search (see {@link #NVSHMEM_HOME}). */
  public String nvshmemHome() {
    String home = get(NVSHMEM_HOME);
    return home.isEmpty() ? null : home;
  }

  /** Whether {@code key} was set explicitly rather than left at its default. */
  public boolean isSet(ConfKey<?> key) {
    return given.contains(key.name());
  }

  /**
   * Every key with its effective value (given or default), in {@link #KEYS} order; {@link
   * #from(Map)} of this map gives back the same settings.
   */
  public Map<String, String> asMap() {
    return settings;
  }

  /** One line for logs: every key with its value, defaults marked. */
  public String describe() {
    StringBuilder sb = new StringBuilder();
    for (ConfKey<?> k : KEYS) {
      if (sb.length() > 0) {
        sb.append(", ");
      }
      String v = settings.get(k.name());
      sb.append(k.name()).append('=').append(v.isEmpty() ? "''" : v);
      if (!isSet(k)) {
        sb.append(" (default)");
      }
    }
    return sb.toString();
  }

  @Override
  public String toString() {
    return "FoldCpConf(" + describe() + ")";
  }

  /**
   * Java serialization writes the explicitly given settings only and reads them back through the
   * constructor, so a deserialized FoldCpConf is validated like any other and its values are keyed
   * by this JVM's {@link ConfKey} objects (which, holding parsers, are not serializable).
   */
  private Object writeReplace() {
    LinkedHashMap<String, String> givenSettings = new LinkedHashMap<>();
    for (String key : given) {
      givenSettings.put(key, settings.get(key));
    }
    return new SerializedForm(givenSettings);
  }

  private void readObject(ObjectInputStream in) throws InvalidObjectException {
    throw new InvalidObjectException("a FoldCpConf is read through its SerializedForm");
  }

  /** What {@link #writeReplace()} writes: the given settings, by key name. */
  private static final class SerializedForm implements Serializable {
    private static final long serialVersionUID = 1L;

    private final LinkedHashMap<String, String> givenSettings;

    SerializedForm(LinkedHashMap<String, String> givenSettings) {
      this.givenSettings = givenSettings;
    }

    private Object readResolve() {
      return new FoldCpConf(givenSettings);
    }
  }

  /** The keys as a Markdown table (key | default | meaning), as README.md shows it. */
  public static String markdownTable() {
    StringBuilder sb = new StringBuilder();
    sb.append("| key | default | meaning |\n");
    sb.append("|---|---|---|\n");
    for (ConfKey<?> k : KEYS) {
      String def = k.defaultValue().isEmpty() ? "(empty)" : "`" + k.defaultValue() + "`";
      sb.append("| `").append(k.name()).append("` | ").append(def).append(" | ")
          .append(cell(k.doc() + " Values: " + k.values() + ".")).append(" |\n");
    }
    return sb.toString();
  }

  private static String cell(String text) {
    return text.replace("|", "\\|");
  }

  /** Prints {@link #markdownTable()}, for pasting into README.md. */
  public static void main(String[] args) {
    System.out.print(markdownTable());
  }
}
