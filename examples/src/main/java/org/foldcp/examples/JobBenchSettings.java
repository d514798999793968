package org.foldcp.examples;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.spark.config.FoldCpConf;

/** The settings of one {@link JobBenchmark} run, parsed from its command line (the usage is there). */
record JobBenchSettings(int complexes, int n, int dim, int layers, String backend, int slots, int threads, int repeats,
                        Path csv, boolean append, String commit, Map<String, String> conf) {
  static JobBenchSettings parse(String[] args) {
    int complexes = 64;
    int n = 512;
    int dim = 128;
    int layers = 4;
    String backend = "cpu";
    int slots = 1;
    int threads = Runtime.getRuntime().availableProcessors();
    int repeats = 3;
    Path csv = null;
    boolean append = false;
    String commit = System.getenv().getOrDefault("FOLDCP_COMMIT", "unknown");
    Map<String, String> conf = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String key = args[i];
      if (key.equals("--append")) {
        append = true;
        continue;
      }
      InvalidInputException.require(i + 1 < args.length, key, "(no value)", "every option takes a value");
      String v = args[++i];
      switch (key) {
        case "--complexes" -> complexes = atLeast1(key, v);
        case "--n" -> n = atLeast1(key, v);
        case "--dim" -> dim = atLeast1(key, v);
        case "--layers" -> layers = atLeast1(key, v);
        case "--backend" -> backend = v.toLowerCase(Locale.ROOT);
        case "--slots" -> slots = atLeast1(key, v);
        case "--threads" -> threads = atLeast1(key, v);
        case "--repeats" -> repeats = atLeast1(key, v);
        case "--csv" -> csv = Path.of(v);
        case "--commit" -> commit = v;
        case "--conf" -> {
          int eq = v.indexOf('=');
          InvalidInputException.require(eq > 0 && v.startsWith(FoldCpConf.PREFIX), "--conf", v,
              "must be " + FoldCpConf.PREFIX + "KEY=VALUE");
          conf.put(v.substring(0, eq), v.substring(eq + 1));
        }
        default -> throw InvalidInputException.of("option", key, "must be one of --complexes, --n, --dim, --layers,"
            + " --backend, --slots, --threads, --repeats, --csv, --append, --commit, --conf");
      }
    }
    InvalidInputException.require(backend.equals("cpu") || backend.equals("gpu"), "--backend", backend,
        "must be cpu or gpu");
    InvalidInputException.require(threads >= slots, "--threads", threads,
        "must be >= --slots = " + slots + " (each task gets threads / slots CPU threads)");
    return new JobBenchSettings(complexes, n, dim, layers, backend, slots, threads, repeats, csv, append, commit,
        Map.copyOf(conf));
  }

  private static int atLeast1(String key, String v) {
    try {
      int x = Integer.parseInt(v.trim());
      InvalidInputException.require(x >= 1, key, x, "must be an integer >= 1");
      return x;
    } catch (NumberFormatException e) {
      throw InvalidInputException.of(key, "'" + v + "'", "must be an integer >= 1");
    }
  }

  boolean gpu() {
    return backend.equals("gpu");
  }
}
