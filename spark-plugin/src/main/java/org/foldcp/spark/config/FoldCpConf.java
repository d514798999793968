package org.foldcp.spark.config;

import java.io.InvalidObjectException;
import java.io.ObjectInputStream;
import java.io.Serializable;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
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
 * <p>Each key is declared once, as a {@link ConfKey} constant built by {@code conf(name)} (see
 * {@link ConfBuilder}): its doc, its type and rule, and its default, which registers it in {@link
 * #KEYS}. The README table, the validation, the unknown-key check and {@link #get(ConfKey)} (e.g.
 * {@code conf.get(FoldCpConf.ROUTE)}) all read that one list. The few getters here compute
 * something from the keys.
 *
 * <p>A FoldCpConf that exists is valid: construction parses every key, rejects keys under
 * {@code spark.foldcp.} that are not listed here (a typo must not silently fall back to a
 * default), and checks the keys against each other ({@link CrossKeyRules}). Errors name the key,
 * the value and the rule.
 */
public final class FoldCpConf implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The namespace of every fold-cp key. */
  public static final String PREFIX = "spark.foldcp.";

  // Declared before the keys: each key registers itself here as its constant is initialised.
  private static final ConfRegistry REGISTRY = new ConfRegistry(PREFIX, "fold-cp");

  /** Every key, in declaration order: the order of the README table and of {@link #asMap()}. */
  public static final List<ConfKey<?>> KEYS = REGISTRY.keys();

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

  public static final ConfKey<Route> ROUTE = conf("spark.foldcp.route")
      .doc("How TriMul layers run: auto picks from cp and the executors' GPUs, cpu forces the CPU backend,"
          + " gpu the GPU backend (with cp > 1 a barrier team of GPU ranks), barrier a CP team of cp executors"
          + " in a barrier stage (CPU or GPU ranks: see spark.foldcp.cp.transport), shuffle a CP reshard"
          + " through Spark shuffles.")
      .enumConf(Route.class).createWithDefault("auto");

  public static final ConfKey<Integer> CP = conf("spark.foldcp.cp")
      .doc("Context-parallel ranks per complex (executors that hold one pair tensor together);"
          + " H must be divisible by cp (the hidden width: D for layers without their own). auto: each complex its own cp from the cost model (docs/cost-model.md):"
          + " the smallest of spark.foldcp.cp.auto.candidates whose share fits spark.foldcp.cp.auto.memoryPerRank and"
          + " meets spark.foldcp.cp.auto.targetSeconds; the complexes of each cp run together in one job.")
      .intConf().atLeast("1").or("auto", 0).createWithDefault("1");

  public static final ConfKey<int[]> CP_AUTO_CANDIDATES = conf("spark.foldcp.cp.auto.candidates")
      .doc("The cp values spark.foldcp.cp = auto may give a complex (a value that does not divide the hidden width H is skipped).")
      .parsedBy("a comma-separated ascending list of integers >= 1 starting at 1",
          ValueParsers::ascendingIntsFromOne).createWithDefault("1,2,4,8");

  public static final ConfKey<Long> CP_AUTO_MEMORY_PER_RANK = conf("spark.foldcp.cp.auto.memoryPerRank")
      .doc("Device memory one rank may use for a layer's buffers when spark.foldcp.cp = auto picks cp (the model counts"
          + " (4 B N^2 D + 6 B N^2 H) / cp bytes: x, the output (D channels), a, b, z (H); 10 B N^2 D / cp at H = D;"
          + " under CP 2 B N^2 D / cp more where D or H is above 384, stage 3's p); the default leaves an H200's 141 GB some room.")
      .bytesConf().atLeast("1m").createWithDefault("120g");

  public static final ConfKey<Double> CP_AUTO_TARGET_SECONDS = conf("spark.foldcp.cp.auto.targetSeconds")
      .doc("The time one complex's stack may take when spark.foldcp.cp = auto picks cp, as the cost model predicts it"
          + " from an H200's measured rates (docs/cost-model.md); a larger cp is taken where a smaller one misses it."
          + " none: memory alone decides.")
      .secondsConf().above("0").or("none", Double.POSITIVE_INFINITY).createWithDefault("none");

  public static final ConfKey<Integer> CP_TEAMS = conf("spark.foldcp.cp.teams")
      .doc("CP teams one barrier stage forms (route barrier): the stage runs teams x cp tasks, each team of cp"
          + " ranks its own complexes, the complexes spread over the teams by their FLOPs; a TCP mesh per team"
          + " (transport tcp) or an NVSHMEM world per team (transport nvshmem); auto: as many teams as the task"
          + " slots hold when the stage starts (slots / cp).")
      .intConf().atLeast("1").or("auto", 0).createWithDefault("1");

  public static final ConfKey<Optional<CpGrid>> GRID = conf("spark.foldcp.grid")
      .doc("Shape of the CP grid, cp0 row groups by cp1 column groups, with cp0 * cp1 = cp;"
          + " empty means 1-D (cp row bands, cp x 1).")
      .parsedBy("cp0xcp1 with cp0, cp1 >= 1, e.g. 2x2 (a bare n means nx1)",
          setting -> Optional.of(CpGrid.parse(setting))).orEmpty(Optional.empty()).createWithDefault("");

  public static final ConfKey<Integer> CPU_THREADS = conf("spark.foldcp.cpu.threads")
      .doc("Threads a task uses on the CPU backend; 0 means spark.task.cpus.")
      .intConf().atLeast("0").createWithDefault("0");

  public static final ConfKey<Integer> BARRIER_TIMEOUT_SECONDS = conf("spark.foldcp.barrier.timeoutSeconds")
      .doc("Seconds a barrier-stage rank waits for its peers (team formation, allGather) before it fails"
          + " the stage instead of hanging.")
      .intConf().atLeast("1").createWithDefault("300");

  public static final ConfKey<Integer> CONNECT_TIMEOUT_MS = conf("spark.foldcp.transport.connectTimeoutMs")
      .doc("Milliseconds a rank waits to connect to a peer executor before it fails.")
      .intConf().atLeast("1").createWithDefault("30000");

  public static final ConfKey<Boolean> GPU_ENABLED = conf("spark.foldcp.gpu.enabled")
      .doc("Whether executors use the GPU Spark assigned them; false keeps every task on the CPU"
          + " (and makes route gpu an error).")
      .booleanConf().createWithDefault("true");

  public static final ConfKey<Integer> GPU_CONCURRENT_TASKS = conf("spark.foldcp.gpu.concurrentTasks")
      .doc("Tasks of one executor that may use its GPU at once: they borrow the executor's one CUDA context, layer"
          + " cache and GPU feed (pinned pool, streams, device slots), and further tasks wait (fair, in arrival order)"
          + " holding nothing on the device. On the cp = 1 route each task keeps up to 3 of its complexes in the feed"
          + " (their bytes copied by the feed's copy threads), so enough tasks to keep the device slots full (the job"
          + " benchmark's 16 on a 16-core host) is the setting to try.")
      .intConf().atLeast("1").createWithDefault("1");

  public static final ConfKey<Long> GPU_PINNED_POOL_BYTES = conf("spark.foldcp.gpu.pinnedPoolBytes")
      .doc("Pinned (page-locked) host memory each executor allocates once for its GPU, in blocks of 16 MiB: every byte"
          + " of a complex moves between Spark's rows and the GPU through it with bulk copies, the uploads, kernels and"
          + " downloads of different complexes overlapped. An output row is laid out in the pool where a span of it"
          + " is free, so that the download writes the values where Spark reads them (no host copy); each task in"
          + " flight holds one such row, so a pool of about (concurrent tasks) x (largest complex + 64 MiB) lets every"
          + " output skip the copy. A CP rank on the GPU moves its tile in and out through the same pool. Fixed for the"
          + " executor's life; a complex or tile larger than the pool streams through it.")
      .bytesConf().atLeast("32m").example("2g").createWithDefault("1g");

  public static final ConfKey<Integer> GPU_DEVICE_SLOTS = conf("spark.foldcp.gpu.deviceSlots")
      .doc("Complexes an executor's GPU holds at once between upload and download (each slot grows to the largest complex"
          + " it held): at least 3 keep an upload, the kernels and a download busy together; more let several tasks"
          + " feed the GPU. A complex whose slots and workspace would not fit in device memory runs on its own,"
          + " in channel groups where needed.")
      .intConf().atLeast("2").createWithDefault("4");

  public static final ConfKey<Integer> GPU_COPY_THREADS = conf("spark.foldcp.gpu.copyThreads")
      .doc("Threads of each executor that copy complexes (and CP ranks' tiles) from Spark's rows into the pinned pool,"
          + " 16 MiB blocks in the order the complexes came, each block uploaded as soon as it is copied: one complex's"
          + " copy runs on all of them, so the first complex reaches the GPU soonest. About half the host's cores (8"
          + " threads copied 49-57 GB/s on a 16-core H200 host).")
      .intConf().in("1", "256").createWithDefault("8");

  public static final ConfKey<Long> GPU_PINNED_CACHE_BYTES = conf("spark.foldcp.gpu.pinnedCacheBytes")
      .doc("Pinned host memory that rows cached with spark.sql.cache.serializer=" + "org.foldcp.spark.sql.RowCachedBatchSerializer"
          + " may take on an executor whose tasks compute on a GPU: a cached complex lies where the GPU's DMA engines"
          + " read it, so every later pass uploads it with no host copy. Allocated row by row as the cache fills,"
          + " nothing before; rows beyond it stay on the Java heap (and are copied through the pinned pool); the"
          + " memory of a dropped cache returns at the JVM's next collection, and all of it when the executor's GPU"
          + " closes. 0 keeps every cached row on the heap.")
      .bytesConf().atLeast("0").example("16g").createWithDefault("8g");

  public static final ConfKey<Transport> CP_TRANSPORT = conf("spark.foldcp.cp.transport")
      .doc("How the cp ranks of the barrier route exchange the reshards: tcp runs the ranks on the CPU over a TCP"
          + " mesh; nvshmem runs them on their executors' GPUs as one NVSHMEM team, the reshards fused into the"
          + " kernels' stores (one executor per GPU, one rank per executor); auto picks nvshmem when the ranks"
          + " have GPUs (route gpu, or executors given a GPU resource, outside local mode) and tcp otherwise.")
      .enumConf(Transport.class).createWithDefault("auto");

  public static final ConfKey<String> NVSHMEM_HOME = conf("spark.foldcp.nvshmem.home")
      .doc("Folder on the executors holding NVSHMEM's lib/libnvshmem_host.so.3 (NVSHMEM 3, CUDA 13); empty searches"
          + " NVSHMEM_HOME, the pip wheel nvidia-nvshmem-cu13 and java.library.path.")
      .absolutePathConf().orEmpty("").createWithDefault("");

  public static final ConfKey<Long> NVSHMEM_HEAP_BYTES = conf("spark.foldcp.nvshmem.heapBytes")
      .doc("NVSHMEM symmetric heap each GPU rank reserves when its team forms, fixed for the executor's life;"
          + " a stack whose buffers do not fit fails naming the bytes it needs.")
      .bytesConf().atLeast("64m").example("16g").createWithDefault("16g");

  public static final ConfKey<StoreRoute> NVSHMEM_STORE_ROUTE = conf("spark.foldcp.nvshmem.storeRoute")
      .doc("How the fused reshards reach the other GPU ranks: peer stores through NVSHMEM peer pointers (NVLink"
          + " within a node, or ranks sharing a GPU), put through device-initiated puts (ranks on other nodes);"
          + " auto takes peer when every rank reaches every other by pointer, else put. Decided once per stack,"
          + " the same on every rank.")
      .enumConf(StoreRoute.class).createWithDefault("auto");

  public static final ConfKey<Reshard> NVSHMEM_RESHARD = conf("spark.foldcp.nvshmem.reshard")
      .doc("How the GPU team's two reshards run: fused into the GEMM epilogues' stores, or unfused (the kernels store"
          + " locally, then a separate all-to-all moves the data: the reference that shows what fusion buys;"
          + " the outputs are the same bits). Decided once per stack, the same on every rank.")
      .enumConf(Reshard.class).createWithDefault("fused");

  public static final ConfKey<Integer> WEIGHTS_CACHE_ENTRIES = conf("spark.foldcp.weights.cacheEntries")
      .doc("Decoded layer weights an executor keeps for reuse by later tasks; 0 disables the cache.")
      .intConf().atLeast("0").createWithDefault("8");

  public static final ConfKey<Boolean> INPUT_ALLOW_NON_FINITE = conf("spark.foldcp.input.allowNonFinite")
      .doc("Whether pair tensors holding NaN or Inf may go through TriMul. false (the default) fails the job where the"
          + " data enters (every route and foldcp_trimul), naming the complex, the first (b, i, j, c) and the count,"
          + " since one such value spreads into almost every output; true skips the check (outputs may be NaN).")
      .booleanConf().createWithDefault("false");

  public static final ConfKey<MetricsLevel> METRICS_LEVEL = conf("spark.foldcp.metrics.level")
      .doc("SQL metrics of the TriMul operator (Spark UI, explain(\"cost\")): essential keeps Spark's numOutputRows and"
          + " opTime (compute plus reshard time); moderate adds tiles computed, tiles on a GPU, the pair and reshard"
          + " bytes moved and, on the cp = 1 route's GPU feed, the GPU busy time and the time tasks waited for pinned"
          + " blocks, device slots and copies; debug adds the time per stage (compute, reshard), the fused reshard bytes per direction and,"
          + " on the cp = 1 route's GPU, the kernel time of each TriMul stage (each layer then waits for its kernels, so debug runs the cp = 1 route's complexes through the tensor path,"
          + " not the overlapped GPU feed).")
      .enumConf(MetricsLevel.class).createWithDefault("essential");

  private static ConfBuilder conf(String name) {
    return REGISTRY.conf(name);
  }

  private final Map<String, String> settings; // every key, KEYS order: the given value or the default
  private final Set<String> given;            // keys set explicitly
  private final Map<ConfKey<?>, Object> values; // every key's parsed setting; identity keys: one object per key
  private final CpGrid grid;

  private FoldCpConf(Map<String, String> givenSettings) {
    ConfRegistry.Parsed parsed = REGISTRY.read(givenSettings);
    this.settings = parsed.settings();
    this.given = Collections.unmodifiableSet(new LinkedHashSet<>(givenSettings.keySet()));
    this.values = parsed.values();
    CrossKeyRules.check(this);
    // cp = auto: the grid of one complex is chosen when its shape is known (CpAutoRoute); cp x 1
    this.grid = get(GRID).orElseGet(() -> CpGrid.oneD(Math.max(get(CP), 1)));
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
    return new FoldCpConf(REGISTRY.known(conf));
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

  /** The public keys as a Markdown table (key | default | meaning), as README.md shows it. */
  public static String markdownTable() {
    return REGISTRY.markdownTable();
  }

  /** Prints {@link #markdownTable()}, for pasting into README.md. */
  public static void main(String[] args) {
    System.out.print(markdownTable());
  }
}
