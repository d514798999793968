package org.foldcp.ops.cpu;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * The native kernels: libfoldcp_cpu.so (native/cpu/, built with gcc alone, no CUDA), in the
 * variant this CPU runs best: AVX-512 (8 x 32 register tile) or AVX2 + FMA (6 x 16). Our own
 * kernels, not a BLAS: a BLAS may choose its blocking, and with it each element's summation
 * order, by size and thread count, which would break the rule that makes CP equal cp = 1 (see
 * {@link CpuKernels#gemm}); and the operators jar stays small (bin/gpu-pack's 60 MiB limit), where
 * a portable OpenBLAS build would add tens of MiB.
 *
 * <p>The library comes from the operators jar (resource {@code /amd64/Linux/libfoldcp_cpu.so}),
 * copied to a temporary file that is deleted once loaded, or from {@code -D}{@value #PATH_PROPERTY}.
 * It is tried once per JVM; {@link #unavailableReason()} says why it did not load.
 *
 * <p>No native state: each call pins its arrays for its duration; the packing workspace is the
 * calling thread's (thread-local in the library, freed when the thread ends).
 */
final class NativeKernels extends CpuKernels {
  static final String LIBRARY_FILE = "libfoldcp_cpu.so";
  /** System property: load this file instead of the jar's resource. */
  static final String PATH_PROPERTY = "foldcp.cpu.native.path";
  /** The library's variants by index (cpu_jni.c), fastest first. */
  private static final String[] VARIANT_NAMES = {"avx512", "avx2"};

  private static final String UNAVAILABLE = load();

  private final int variant;

  NativeKernels(int variant) {
    if (UNAVAILABLE != null) {
      throw new IllegalStateException(UNAVAILABLE);
    }
    if (variant < 0 || variant >= VARIANT_NAMES.length || (variants() & (1 << variant)) == 0) {
      throw new IllegalStateException("fold-cp CPU kernels: variant " + variant + " does not run on this CPU"
          + " (features: " + cpuFeatures() + ")");
    }
    this.variant = variant;
  }

  /** Null where the library is loaded, else why not. */
  static String unavailableReason() {
    return UNAVAILABLE;
  }

  /** The fastest variant this CPU runs, or -1 for none. */
  static int bestVariant() {
    int bits = variants();
    for (int v = 0; v < VARIANT_NAMES.length; v++) {
      if ((bits & (1 << v)) != 0) {
        return v;
      }
    }
    return -1;
  }

  /** The variant called {@code name} ("avx512", "avx2") if this CPU runs it, else -1. */
  static int variantNamed(String name) {
    for (int v = 0; v < VARIANT_NAMES.length; v++) {
      if (VARIANT_NAMES[v].equals(name)) {
        return (variants() & (1 << v)) != 0 ? v : -1;
      }
    }
    return -1;
  }

  /** Every variant this CPU runs (tests run them all). */
  static int[] runnableVariants() {
    int bits = UNAVAILABLE == null ? variants() : 0;
    return java.util.stream.IntStream.range(0, VARIANT_NAMES.length).filter(v -> (bits & (1 << v)) != 0).toArray();
  }

  @Override
  public String describe() {
    return "native " + variantName(variant) + " (" + LIBRARY_FILE + ")";
  }

  @Override
  public boolean isNative() {
    return true;
  }

  /**
   * GFLOP/s of the calling thread running 12 independent vector FMA chains of this variant's
   * width for about {@code seconds}: the machine's FMA throughput, not its latency.
   */
  double fmaRate(double seconds) {
    return nFmaRate(variant, seconds);
  }

  @Override
  void gemm0(boolean ta, boolean tb, int m, int n, int k, float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
             float[] c, int cOff, int ldc, boolean accumulate) {
    nGemm(variant, ta, tb, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc, accumulate);
  }

  @Override
  void layerNormBf160(short[] x, int xOff, int cols, int d, float[] w, float[] bias, float eps, float[] out) {
    nLayerNormBf16(variant, x, xOff, cols, d, w, bias, eps, out, 0);
  }

  @Override
  void layerNorm0(float[] x, int cols, int d, float[] w, float[] bias, float eps, float[] out) {
    nLayerNormF32(variant, x, 0, cols, d, w, bias, eps, out, 0);
  }

  @Override
  void gateProjection0(float[] proj, int cc, int cols, float[] bias4, int biasOff, byte[] mask, float[] a,
                       float[] b) {
    nGateProjection(variant, proj, cc, cols, bias4, biasOff, mask, a, b);
  }

  @Override
  void gateOutput0(float[] po, float[] go, int cols, int d, float[] pb, float[] gb, short[] x, int xOff,
                   boolean residual, short[] out, int outOff) {
    nGateOutput(variant, po, go, cols, d, pb, gb, x, xOff, residual, out, outOff);
  }

  static native int variants();

  static native String variantName(int variant);

  static native String cpuFeatures();

  private static native double nFmaRate(int variant, double seconds);

  private static native void nGemm(int variant, boolean ta, boolean tb, int m, int n, int k, float[] a, int aOff,
                                   int lda, float[] b, int bOff, int ldb, float[] c, int cOff, int ldc,
                                   boolean accumulate);

  private static native void nLayerNormBf16(int variant, short[] x, int xOff, int cols, int d, float[] w,
                                            float[] bias, float eps, float[] out, int outOff);

  private static native void nLayerNormF32(int variant, float[] x, int xOff, int cols, int d, float[] w,
                                           float[] bias, float eps, float[] out, int outOff);

  private static native void nGateProjection(int variant, float[] proj, int cc, int cols, float[] bias4,
                                             int biasOff, byte[] mask, float[] a, float[] b);

  private static native void nGateOutput(int variant, float[] po, float[] go, int cols, int d, float[] pb,
                                         float[] gb, short[] x, int xOff, boolean residual, short[] out,
                                         int outOff);

  /** Loads the library; null when loaded, else why not. */
  private static String load() {
    String os = System.getProperty("os.name");
    String arch = System.getProperty("os.arch");
    String override = System.getProperty(PATH_PROPERTY);
    if (override != null && !override.isEmpty()) {
      Path p = Paths.get(override).toAbsolutePath();
      if (!Files.isRegularFile(p)) {
        return LIBRARY_FILE + " not found at -D" + PATH_PROPERTY + "=" + override;
      }
      return systemLoad(p, p.toString());
    }
    if (!"linux".equals(os.toLowerCase(Locale.ROOT)) || !"amd64".equals(arch)) {
      return LIBRARY_FILE + " is built for Linux on amd64 only, not " + os + "/" + arch;
    }
    String resource = "/" + arch + "/" + os + "/" + LIBRARY_FILE;
    URL url = NativeKernels.class.getResource(resource);
    if (url == null) {
      return LIBRARY_FILE + " is not in this build (no resource " + resource + " on the class path: the"
          + " operators jar was built without gcc or JNI headers, or with -Dfoldcp.native.skip=true)";
    }
    Path tmp;
    try {
      String dir = System.getProperty("foldcp.native.tmpdir");
      Path tmpDir = Paths.get(dir != null && !dir.isEmpty() ? dir : System.getProperty("java.io.tmpdir"));
      Files.createDirectories(tmpDir);
      tmp = Files.createTempFile(tmpDir, "libfoldcp_cpu_", ".so");
      try (InputStream in = url.openStream()) {
        Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException | RuntimeException e) {
      return "could not extract " + resource + " to a temporary file: " + e
          + " (set -Dfoldcp.native.tmpdir to a writable directory)";
    }
    try {
      return systemLoad(tmp, url.toString());
    } finally {
      try {
        Files.deleteIfExists(tmp);
      } catch (IOException e) {
        tmp.toFile().deleteOnExit();
      }
    }
  }

  private static String systemLoad(Path file, String from) {
    try {
      System.load(file.toString());
      return null;
    } catch (UnsatisfiedLinkError | SecurityException e) {
      return "could not load " + LIBRARY_FILE + " (from " + from + "): " + e.getMessage();
    }
  }
}
