package org.foldcp.ops.gpu;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Finds and loads libfoldcp_jni.so (our kernels + their static CUDA runtime) once per JVM. It is
 * the executor's one copy of both: the CP library (libfoldcp_cp_jni.so, {@code NativeCp}) links
 * against it by its SONAME and must find it loaded first, which this class does.
 *
 * <p>Where it comes from: the operators jar carries it as the resource
 * {@code /amd64/Linux/libfoldcp_jni.so} ({@code ${os.arch}/${os.name}/}, as spark-rapids-jni
 * packages libcudf.so) when the build machine had nvcc and a JDK. {@link #load()} copies it to a
 * fresh temporary file (in {@code java.io.tmpdir}, or {@code -Dfoldcp.native.tmpdir}),
 * {@code System.load}s it and deletes the file again (the mapping stays valid on Linux, and a
 * killed executor leaves nothing behind). {@code -Dfoldcp.native.path=/path/libfoldcp_jni.so}
 * loads that file instead, for development and profilers that want a file on disk.
 *
 * <p>Loading needs no GPU and no driver: the library's only dependencies are the C/C++ system
 * libraries; its CUDA runtime opens libcuda.so.1 at the first CUDA call. The outcome is
 * remembered: a second {@link #load()} after a failure throws the same message again, which says
 * which of these it was: not in this jar (built without nvcc), not this platform, could not be
 * extracted, or could not be loaded (with the dynamic loader's message).
 */
public final class NativeLibrary {
  public static final String LIBRARY_FILE = "libfoldcp_jni.so";
  /** System property: load this file instead of the jar's resource. */
  public static final String PATH_PROPERTY = "foldcp.native.path";
  /** System property: directory to extract the library into (default java.io.tmpdir). */
  public static final String TMPDIR_PROPERTY = "foldcp.native.tmpdir";

  private static boolean loaded;
  private static String loadedFrom;
  private static String failure;

  private NativeLibrary() {}

  /** The resource the jar holds the library under on this platform: "/amd64/Linux/libfoldcp_jni.so". */
  public static String resourcePath() {
    return "/" + System.getProperty("os.arch") + "/" + System.getProperty("os.name") + "/" + LIBRARY_FILE;
  }

  /** Whether this class path holds the library for this platform (no loading). */
  public static boolean isBundled() {
    return NativeLibrary.class.getResource(resourcePath()) != null;
  }

  /** Loads the library once; throws {@link GpuException} with the reason if it cannot be loaded. */
  public static synchronized void load() {
    if (loaded) {
      return;
    }
    if (failure == null) {
      Outcome o = locateAndLoad(NativeLibrary.class, resourcePath(), System.getProperty(PATH_PROPERTY));
      if (o.failure == null) {
        loaded = true;
        loadedFrom = o.from;
        return;
      }
      failure = o.failure;
    }
    throw new GpuException(failure);
  }

  /** Null when the library is loaded (trying once), else why it is not. */
  public static synchronized String unavailableReason() {
    try {
      load();
      return null;
    } catch (GpuException e) {
      return e.getMessage();
    }
  }

  /** Where the loaded library came from (a resource URL or a file), or null if not loaded. */
  public static synchronized String loadedFrom() {
    return loadedFrom;
  }

  /** The result of one attempt: from where, or why not. */
  static final class Outcome {
    final String from;
    final String failure;

    private Outcome(String from, String failure) {
      this.from = from;
      this.failure = failure;
    }

    static Outcome ok(String from) {
      return new Outcome(from, null);
    }

    static Outcome failed(String why) {
      return new Outcome(null, why);
    }
  }

  /**
   * One attempt, without touching the remembered state (tests call it with a resource that does
   * not exist): the override file if given, else the resource of {@code anchor}'s class loader.
   */
  static Outcome locateAndLoad(Class<?> anchor, String resource, String overridePath) {
    return locateAndLoad(anchor, resource, overridePath, LIBRARY_FILE, PATH_PROPERTY);
  }

  /**
   * Loads another library this jar bundles the same way (the CP library, {@code
   * org.foldcp.ops.gpu.cp}): {@code overridePath} (from system property {@code overrideProperty})
   * if given, else the resource {@code /<os.arch>/<os.name>/<fileName>}. Returns null when
   * loaded, else why not. Remembers nothing: the caller does.
   */
  public static String loadBundled(Class<?> anchor, String fileName, String overrideProperty) {
    String resource = "/" + System.getProperty("os.arch") + "/" + System.getProperty("os.name") + "/" + fileName;
    return locateAndLoad(anchor, resource, System.getProperty(overrideProperty), fileName, overrideProperty).failure;
  }

  private static Outcome locateAndLoad(Class<?> anchor, String resource, String overridePath, String fileName,
      String overrideProperty) {
    if (overridePath != null && !overridePath.isEmpty()) {
      Path p = Paths.get(overridePath).toAbsolutePath();
      if (!Files.isRegularFile(p)) {
        return Outcome.failed(fileName + " not found at -D" + overrideProperty + "=" + overridePath
            + ": the file does not exist");
      }
      return systemLoad(p, p.toString(), fileName);
    }
    URL url = anchor.getResource(resource);
    if (url == null) {
      return Outcome.failed(missingMessage(resource, System.getProperty("os.name"), System.getProperty("os.arch"),
          fileName, overrideProperty));
    }
    Path tmp;
    try {
      String dir = System.getProperty(TMPDIR_PROPERTY);
      Path tmpDir = Paths.get(dir != null && !dir.isEmpty() ? dir : System.getProperty("java.io.tmpdir"));
      Files.createDirectories(tmpDir);
      tmp = Files.createTempFile(tmpDir, fileName.replace(".so", "_"), ".so");
      try (InputStream in = url.openStream()) {
        Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException | RuntimeException e) {
      return Outcome.failed("could not extract " + resource + " from " + url + " to a temporary file: " + e
          + " (set -D" + TMPDIR_PROPERTY + " to a writable directory)");
    }
    try {
      return systemLoad(tmp, url.toString(), fileName);
    } finally {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException e) {
        tmp.toFile().deleteOnExit();
      }
    }
  }

  private static Outcome systemLoad(Path file, String from, String fileName) {
    try {
      System.load(file.toString());
      return Outcome.ok(from);
    } catch (UnsatisfiedLinkError | SecurityException e) {
      return Outcome.failed("could not load " + fileName + " (from " + from + "): " + e.getMessage());
    }
  }

  /** The message for a class path without the library. */
  static String missingMessage(String resource, String osName, String osArch) {
    return missingMessage(resource, osName, osArch, LIBRARY_FILE, PATH_PROPERTY);
  }

  private static String missingMessage(String resource, String osName, String osArch, String fileName,
      String overrideProperty) {
    String platform = osName + "/" + osArch;
    boolean supported = "linux".equals(osName.toLowerCase(Locale.ROOT)) && "amd64".equals(osArch);
    if (!supported) {
      return fileName + " is not available for " + platform
          + ": the GPU route is built for Linux on amd64 (x86-64) only";
    }
    return fileName + " is not in this build: no resource " + resource + " on the class path (the"
        + " operators jar was built without nvcc or JNI headers, or with -Dfoldcp.native.skip=true);"
        + " build it where nvcc 13 and a JDK are installed, or point -D" + overrideProperty + " at the file";
  }
}
