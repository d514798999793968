package org.foldcp.examples;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.io.OutputPath;

/** Command-line options of {@link TriMulJob}; every option has a default that runs as is. */
final class JobOptions {
  String master = null; // null: keep spark-submit's; local[*] when run directly
  int n = 256;
  int[] ns = {256}; // --n N1,N2,...: synthetic complex c has ns[c % ns.length] tokens (n = ns[0])
  int dim = 128;
  /** Hidden width of the generated layers; 0: the pair width D. */
  int hidden;
  int layers = 2;
  int complexes = 2;
  int threads = 0; // 0: spark.task.cpus, or all cores in local mode
  String route = null; // null: spark.foldcp.route (auto)
  int cp = 0; // 0: spark.foldcp.cp (1)
  boolean cpAuto; // --cp auto: each complex its own cp (spark.foldcp.cp = auto)
  String grid = null; // null: spark.foldcp.grid (1-D)
  String transport = null; // null: spark.foldcp.cp.transport (auto)
  long seed = 20261129L;
  double maskedFraction = 0.1;
  String input = null;
  String inputMask = null;
  String weights = null;
  List<String> prefixes = new ArrayList<>();
  String output = null;
  boolean sql = false;
  String plots = null; // a folder for PNG plots; implies perLayer
  boolean perLayer = false;
  boolean help = false;
  boolean verbose = false; // stack traces with errors
  Map<String, String> conf = new LinkedHashMap<>(); // --conf key=value: Spark settings, spark.foldcp.* among them

  static final String USAGE = String.join("\n",
      "fold-cp-spark TriMul job: applies a TriMul layer stack to pair tensors on Spark.",
      "",
      "Usage: TriMulJob [options]     (or spark-submit --class org.foldcp.examples.TriMulJob <jar> [options])",
      "  --master URL        Spark master when not set by spark-submit (default local[*]: the machine's cores;",
      "                      a barrier route needs cp task slots, e.g. --master local[4] for --cp 4)",
      "  --conf KEY=VALUE    a Spark setting, e.g. --conf spark.foldcp.gpu.enabled=false (repeatable; the",
      "                      options below win over it)",
      "  --n N[,N2,...]      tokens of each synthetic complex (default 256); a list: complex c gets the",
      "                      (c mod length)-th, a mixed dataset (e.g. with --cp auto)",
      "  --dim D             pair channels of the synthetic complexes and weights (default 128)",
      "  --hidden H          hidden channels of the generated layers (a, b and the triangle product; OpenFold's",
      "                      c_hidden), default D; with --weights the file's shapes decide",
      "  --layers L          layers of the generated stack, alternating outgoing/incoming, residual (default 2)",
      "  --complexes C       synthetic complexes to fold in parallel (default 2)",
      "  --masked F          fraction of masked pair positions in synthetic complexes (default 0.1)",
      "  --seed S            random seed for synthetic data and weights",
      "  --input FILE.npy    a pair tensor (N,N,D) or (B,N,N,D), float32/float16, instead of synthetic data",
      "  --input-mask FILE   its pair mask .npy (N,N) or (B,N,N), uint8/bool/float32",
      "  --weights FILE      a .safetensors file; with --prefix, one layer per prefix, in order",
      "  --prefix P          key prefix of a layer, e.g. pairformer.layers.0.tri_mul_out. (repeatable;",
      "                      tri_mul_in in a prefix makes the layer incoming, else outgoing; residual on)",
      "  --threads T         CPU threads per task (default spark.task.cpus, or all cores locally)",
      "  --route R           auto | cpu | gpu | barrier | shuffle (default spark.foldcp.route, auto): --route gpu",
      "                      runs on the tasks' GPUs (cp > 1: a barrier team of GPU ranks), cpu on the CPU",
      "  --cp CP             context-parallel ranks per complex (default spark.foldcp.cp, 1); auto: each",
      "                      complex the smallest cp that fits spark.foldcp.cp.auto.memoryPerRank",
      "  --grid AxB          2-D CP grid with A*B = cp, e.g. 2x2 (default 1-D)",
      "  --transport T       auto | tcp | nvshmem: how barrier ranks reshard, CPU ranks over TCP or GPU ranks",
      "                      in an NVSHMEM team (default spark.foldcp.cp.transport, auto)",
      "  --output FILE.npy   write the output of the first complex (float32)",
      "  --sql               also run the stack through the SQL function foldcp_trimul and compare",
      "  --per-layer         run each layer as its own Spark job: progress and time per layer",
      "  --plots DIR         write PNG plots of the first complex to DIR: pair-heatmap.png (channels before",
      "                      and after, the mask) and layer-times.png (per-layer times; implies --per-layer)",
      "  --verbose           print the stack trace with an error (errors are one line on stderr, exit code 2)",
      "  --help              this text");

  static JobOptions parse(String[] args) {
    JobOptions o = new JobOptions();
    for (int q = 0; q < args.length; q++) {
      String a = args[q];
      if (a.equals("--sql")) {
        o.sql = true;
        continue;
      }
      if (a.equals("--help") || a.equals("-h")) {
        o.help = true;
        continue;
      }
      if (a.equals("--verbose")) {
        o.verbose = true;
        continue;
      }
      if (a.equals("--per-layer")) {
        o.perLayer = true;
        continue;
      }
      if (q + 1 >= args.length) {
        throw InvalidInputException.of("option " + a, "(no value)", "needs a value; see --help");
      }
      String v = args[++q];
      switch (a) {
        case "--master": o.master = v; break;
        case "--n":
          String[] parts = v.split(",");
          o.ns = new int[parts.length];
          for (int k = 0; k < parts.length; k++) {
            o.ns[k] = positive(a, parts[k].trim());
          }
          o.n = o.ns[0];
          break;
        case "--dim": o.dim = positive(a, v); break;
        case "--hidden": o.hidden = positive(a, v); break;
        case "--layers": o.layers = positive(a, v); break;
        case "--complexes": o.complexes = positive(a, v); break;
        case "--threads": o.threads = positive(a, v); break;
        case "--seed": o.seed = integer(a, v); break;
        case "--conf": setting(o.conf, v); break;
        case "--masked": o.maskedFraction = fraction(a, v); break;
        case "--input": o.input = v; break;
        case "--input-mask": o.inputMask = v; break;
        case "--weights": o.weights = v; break;
        case "--prefix": o.prefixes.add(v); break;
        case "--output": o.output = v; break;
        case "--plots": o.plots = v; o.perLayer = true; break;
        case "--route": o.route = v; break;
        case "--cp":
          if (v.trim().equalsIgnoreCase("auto")) {
            o.cpAuto = true;
          } else {
            o.cp = positive(a, v);
          }
          break;
        case "--grid": o.grid = v; break;
        case "--transport": o.transport = v; break;
        default:
          throw InvalidInputException.of("option", a, "is not known; see --help");
      }
    }
    InvalidInputException.require(o.weights == null || !o.prefixes.isEmpty(), "--prefix", "(none)",
        "--weights needs at least one --prefix naming a layer in the file");
    if (o.output != null) {
      OutputPath.requireWritable(Path.of(o.output), "--output"); // before any work, not after hours of it
    }
    return o;
  }

  private static int positive(String name, String v) {
    try {
      int x = Integer.parseInt(v);
      InvalidInputException.require(x >= 1, name, x, "must be an integer >= 1");
      return x;
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(name, "'" + v + "'", "must be an integer >= 1");
    }
  }

  private static long integer(String name, String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(name, "'" + v + "'", "must be an integer");
    }
  }

  /** A --conf value, key=value with a non-empty key; spark.foldcp.* keys are checked when Spark starts. */
  private static void setting(Map<String, String> conf, String v) {
    int eq = v.indexOf('=');
    InvalidInputException.require(eq > 0, "--conf", "'" + v + "'", "must be key=value, e.g. spark.foldcp.cp=2");
    conf.put(v.substring(0, eq).strip(), v.substring(eq + 1));
  }

  private static double fraction(String name, String v) {
    try {
      double x = Double.parseDouble(v);
      InvalidInputException.require(x >= 0 && x < 1, name, x, "must lie in [0, 1)");
      return x;
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(name, "'" + v + "'", "must be a number in [0, 1)");
    }
  }

  static boolean incoming(String prefix) {
    return prefix.toLowerCase(Locale.ROOT).contains("tri_mul_in");
  }
}
