package org.foldcp.ops.gpu.cp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Finds NVSHMEM's host library (libnvshmem_host.so.3; its bootstrap and transport plugins sit in
 * the same folder and are found by its own $ORIGIN run path) without anyone setting
 * LD_LIBRARY_PATH. Where it looks, in this order:
 * <ol>
 *   <li>the configured home ({@code spark.foldcp.nvshmem.home}, or {@code -Dfoldcp.nvshmem.home});</li>
 *   <li>the environment's {@code NVSHMEM_HOME};</li>
 *   <li>the pip wheel {@code nvidia-nvshmem-cu13}: asking {@code python3} where
 *       {@code nvidia.nvshmem} lives, then the usual site-packages folders;</li>
 *   <li>every folder of {@code java.library.path}.</li>
 * </ol>
 * In each candidate folder it accepts {@code lib/}, {@code lib64/} or the folder itself. When
 * nothing is found the error lists every place it looked.
 */
public final class NvshmemLibraries {
  public static final String HOST_LIBRARY = "libnvshmem_host.so.3";
  public static final String HOME_PROPERTY = "foldcp.nvshmem.home";

  private NvshmemLibraries() {}

  /** The result of a search: the library file, or null with the places looked at. */
  public record Found(Path hostLibrary, List<String> looked) {
    public String failure() {
      return HOST_LIBRARY + " (NVSHMEM 3, CUDA 13 build) was not found; looked in: " + String.join("; ", looked)
          + ". Install the pip wheel nvidia-nvshmem-cu13, or set spark.foldcp.nvshmem.home (or NVSHMEM_HOME)"
          + " to the folder holding lib/" + HOST_LIBRARY;
    }
  }

  /** Searches with {@code configuredHome} (may be null or empty) and this process's environment. */
  public static Found find(String configuredHome) {
    return find(configuredHome, System.getenv(), System.getProperty("java.library.path", ""), true);
  }

  static Found find(String configuredHome, Map<String, String> env, String libraryPath, boolean askPython) {
    List<String> looked = new ArrayList<>();
    List<Candidate> candidates = new ArrayList<>();
    String home = configuredHome != null && !configuredHome.isBlank() ? configuredHome
        : System.getProperty(HOME_PROPERTY, "");
    if (!home.isBlank()) {
      candidates.add(new Candidate(home, "spark.foldcp.nvshmem.home"));
    }
    String envHome = env.get("NVSHMEM_HOME");
    if (envHome != null && !envHome.isBlank()) {
      candidates.add(new Candidate(envHome, "NVSHMEM_HOME"));
    }
    if (askPython) {
      String wheel = pythonWheelFolder();
      if (wheel != null) {
        candidates.add(new Candidate(wheel, "python3 nvidia.nvshmem"));
      } else {
        looked.add("python3 -c 'import nvidia.nvshmem' (not importable)");
      }
    }
    for (String dir : sitePackages(env)) {
      candidates.add(new Candidate(dir + "/nvidia/nvshmem", "pip wheel"));
    }
    for (String dir : libraryPath.split(java.io.File.pathSeparator)) {
      if (!dir.isBlank()) {
        candidates.add(new Candidate(dir, "java.library.path"));
      }
    }
    Set<String> seen = new LinkedHashSet<>();
    for (Candidate c : candidates) {
      for (String sub : new String[] {"lib", "lib64", ""}) {
        Path p = Paths.get(c.dir, sub, HOST_LIBRARY).toAbsolutePath().normalize();
        if (!seen.add(p.toString())) {
          continue;
        }
        if (Files.isRegularFile(p)) {
          looked.add(p + " (" + c.source + "): found");
          return new Found(p, looked);
        }
      }
      looked.add(c.dir + " (" + c.source + ")");
    }
    return new Found(null, looked);
  }

  private record Candidate(String dir, String source) {}

  /** Folders where pip puts packages for the usual Pythons (3.8 .. 3.14), user and system. */
  private static List<String> sitePackages(Map<String, String> env) {
    List<String> out = new ArrayList<>();
    String home = env.getOrDefault("HOME", System.getProperty("user.home", ""));
    String venv = env.get("VIRTUAL_ENV");
    for (int minor = 14; minor >= 8; minor--) {
      String py = "python3." + minor;
      if (venv != null && !venv.isBlank()) {
        out.add(venv + "/lib/" + py + "/site-packages");
      }
      out.add(home + "/.local/lib/" + py + "/site-packages");
      out.add("/usr/local/lib/" + py + "/dist-packages");
      out.add("/usr/lib/" + py + "/dist-packages");
      out.add("/usr/local/lib/" + py + "/site-packages");
      out.add("/usr/lib/" + py + "/site-packages");
    }
    return out;
  }

  /** Where python3 imports nvidia.nvshmem from, or null (no python3, no wheel, or it took > 20 s). */
  private static String pythonWheelFolder() {
    try {
      Process p = new ProcessBuilder("python3", "-c", "import nvidia.nvshmem as m; print(list(m.__path__)[0])")
          .redirectErrorStream(false).start();
      String line;
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        line = r.readLine();
      }
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return null;
      }
      return p.exitValue() == 0 && line != null && !line.isBlank() ? line.trim() : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }
}
