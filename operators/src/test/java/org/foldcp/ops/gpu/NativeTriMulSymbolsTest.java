package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.gpu.cp.NativeCp;
import org.foldcp.ops.layer.LayerWeights;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Keeps the Java native declarations of {@link NativeTriMul}, the C++ definitions in
 * native/src/jni/foldcp_jni.cpp and the symbols the built library exports in step (and those of
 * {@link NativeCp} with native/src/jni/foldcp_cp_jni.cpp), and exercises the calls that need no GPU
 * (shape and width checks, error mapping). No "gpu" tag: runs on every build; the parts that need
 * the source tree or the built library skip with a reason without them.
 */
class NativeTriMulSymbolsTest {
  private static final String PREFIX = "Java_org_foldcp_ops_gpu_NativeTriMul_";
  private static final Set<String> ALLOWED_NEEDED = Set.of("libcuda.so.1", "libc.so.6", "libstdc++.so.6",
      "libm.so.6", "libgcc_s.so.1", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2");

  /** JNI short name -> C parameter types after (JNIEnv*, jclass), plus the return type first. */
  static Map<String, List<String>> javaNatives() {
    return javaNatives(NativeTriMul.class, PREFIX);
  }

  /** As {@link #javaNatives()}, for the natives of {@code cls}, whose JNI names start with {@code prefix}. */
  static Map<String, List<String>> javaNatives(Class<?> cls, String prefix) {
    Map<String, List<String>> out = new TreeMap<>();
    for (Method m : cls.getDeclaredMethods()) {
      if (!Modifier.isNative(m.getModifiers())) {
        continue;
      }
      assertTrue(Modifier.isStatic(m.getModifiers()), m + " must be static (the C side takes jclass)");
      List<String> sig = new ArrayList<>();
      sig.add(jniType(m.getReturnType()));
      for (Class<?> p : m.getParameterTypes()) {
        sig.add(jniType(p));
      }
      String name = prefix + mangle(m.getName());
      assertFalse(out.containsKey(name), "overloaded native " + m.getName() + " would need JNI long names");
      out.put(name, sig);
    }
    return out;
  }

  static String jniType(Class<?> c) {
    if (c == void.class) return "void";
    if (c == int.class) return "jint";
    if (c == long.class) return "jlong";
    if (c == boolean.class) return "jboolean";
    if (c == float.class) return "jfloat";
    if (c == double.class) return "jdouble";
    if (c == String.class) return "jstring";
    if (c == float[].class) return "jfloatArray";
    if (c == byte[].class) return "jbyteArray";
    if (c == long[].class) return "jlongArray";
    throw new AssertionError("no JNI mapping in this test for " + c);
  }

  /** JNI name mangling (JNI spec, "Resolving Native Method Names"). */
  static String mangle(String s) {
    StringBuilder sb = new StringBuilder();
    for (char ch : s.toCharArray()) {
      if (ch == '_') {
        sb.append("_1");
      } else if (ch == ';') {
        sb.append("_2");
      } else if (ch == '[') {
        sb.append("_3");
      } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) {
        sb.append(ch);
      } else {
        sb.append(String.format("_0%04x", (int) ch));
      }
    }
    return sb.toString();
  }

  @Test
  void everyNativeIsDefinedInTheJniSourceWithMatchingTypes() throws Exception {
    assertDefinedWithMatchingTypes(javaNatives(), "foldcp_jni.cpp");
  }

  /** The CP library's natives: its plans carry D and H too, so its declarations change with the C API's. */
  @Test
  void everyCpNativeIsDefinedInTheCpJniSourceWithMatchingTypes() throws Exception {
    assertDefinedWithMatchingTypes(javaNatives(NativeCp.class, "Java_org_foldcp_ops_gpu_cp_NativeCp_"),
        "foldcp_cp_jni.cpp");
  }

  /** Every native of {@code declared} is defined in native/src/jni/{@code file}, which defines no others. */
  private static void assertDefinedWithMatchingTypes(Map<String, List<String>> declared, String file)
      throws Exception {
    Path src = Paths.get("..", "native", "src", "jni", file);
    Assumptions.assumeTrue(Files.isRegularFile(src), "no source tree here (" + src.toAbsolutePath() + ")");
    String text = Files.readString(src, StandardCharsets.UTF_8);
    Pattern fn = Pattern.compile("JNIEXPORT\\s+(\\w+)\\s+JNICALL\\s+(Java_\\w+)\\s*\\(([^)]*)\\)");
    Map<String, List<String>> defined = new TreeMap<>();
    Matcher m = fn.matcher(text);
    while (m.find()) {
      List<String> sig = new ArrayList<>();
      sig.add(m.group(1));
      String[] params = m.group(3).split(",");
      for (int i = 0; i < params.length; i++) {
        String p = params[i].replace("*", " ").trim();
        String type = p.split("\\s+")[0];
        if (i == 0) {
          assertEquals("JNIEnv", type, m.group(2) + ": first parameter");
        } else if (i == 1) {
          assertEquals("jclass", type, m.group(2) + ": second parameter (static native)");
        } else {
          sig.add(type);
        }
      }
      defined.put(m.group(2), sig);
    }
    assertFalse(declared.isEmpty());
    assertEquals(declared.keySet(), defined.keySet(), "Java natives vs C++ definitions in " + file);
    for (Map.Entry<String, List<String>> e : declared.entrySet()) {
      assertEquals(e.getValue(), defined.get(e.getKey()), e.getKey() + ": [return, params...] types");
    }
  }

  private static byte[] bundledLibrary() throws Exception {
    try (InputStream in = NativeTriMul.class.getResourceAsStream(NativeLibrary.resourcePath())) {
      Assumptions.assumeTrue(in != null,
          "libfoldcp_jni.so is not in this build (no nvcc or no JNI headers where it was built)");
      return in.readAllBytes();
    }
  }

  @Test
  void theBuiltLibraryExportsExactlyTheDeclaredNatives() throws Exception {
    ElfDynamic elf = ElfDynamic.parse(bundledLibrary());
    Set<String> exported = new TreeSet<>();
    for (String s : elf.definedGlobals) {
      if (s.startsWith(PREFIX)) {
        exported.add(s);
      }
    }
    assertEquals(javaNatives().keySet(), exported, "Java natives vs the library's exported JNI symbols");
    Set<String> others = new TreeSet<>(elf.definedGlobals);
    others.removeAll(exported);
    others.remove("JNI_OnLoad");
    // besides the JNI entry points, only what libfoldcp_cp_jni.so links against (exports.map)
    others.removeIf(s -> FOR_CP_LIBRARY.matcher(s).matches());
    assertTrue(others.isEmpty(), "the library exports the JNI entry points and, for the CP library, the C API,"
        + " the launchers of trimul_internal.h it calls and foldcp_cudart_* forwarders (the static CUDA runtime's"
        + " own names stay hidden); found besides " + others);
    assertFalse(elf.definedGlobals.stream().anyMatch(s -> s.startsWith("cuda") || s.startsWith("__cuda")),
        "the static CUDA runtime's own names must stay local");
  }

  /** What libfoldcp_jni.so exports for libfoldcp_cp_jni.so (native/src/jni/exports.map), mangled names included. */
  private static final Pattern FOR_CP_LIBRARY = Pattern.compile("foldcp_trimul_\\w+|foldcp_status_name|foldcp_last_error"
      + "|foldcp_nonfinite_scan|foldcp_native_\\w+|foldcp_cudart_\\w+"
      + "|_ZN6foldcp(9dev_layer|9set_error|11clear_error|17launch_proj_in_to|18launch_tri_gemm_to|20launch_proj_out_tile)E\\w+");

  @Test
  void theBuiltLibraryForwardsEveryCudaRuntimeFunctionTheCpLibraryNeeds() throws Exception {
    Path list = Paths.get("..", "native", "src", "jni", "cudart_shared.inc");
    Assumptions.assumeTrue(Files.isRegularFile(list), "no source tree here (" + list.toAbsolutePath() + ")");
    ElfDynamic elf = ElfDynamic.parse(bundledLibrary());
    Matcher m = Pattern.compile("^FOLDCP_CUDART\\((\\w+)\\)", Pattern.MULTILINE)
        .matcher(Files.readString(list, StandardCharsets.UTF_8));
    int n = 0;
    while (m.find()) {
      assertTrue(elf.definedGlobals.contains("foldcp_cudart_" + m.group(1)), "foldcp_cudart_" + m.group(1)
          + " (cudart_shared.inc) is not exported");
      n++;
    }
    assertTrue(n > 0, "no FOLDCP_CUDART entries in " + list);
  }

  @Test
  void theBuiltLibraryNeedsOnlySystemLibraries() throws Exception {
    ElfDynamic elf = ElfDynamic.parse(bundledLibrary());
    for (String lib : elf.needed) {
      assertTrue(ALLOWED_NEEDED.contains(lib), "NEEDED " + lib + ": the CUDA runtime must be linked statically,"
          + " only libcuda and the C/C++ system libraries may be needed; all: " + elf.needed);
    }
    assertFalse(elf.needed.stream().anyMatch(s -> s.startsWith("libcudart")), String.valueOf(elf.needed));
  }

  @Test
  void callsThatNeedNoGpuWorkAndMapErrors() throws Exception {
    bundledLibrary(); // skips without it
    NativeTriMul.ensureLoaded();
    assertEquals(90, NativeTriMul.targetSm());
    assertTrue(NativeTriMul.cudaRuntimeVersion() >= 12000, "CUDA runtime " + NativeTriMul.cudaRuntimeVersion());
    assertEquals("FOLDCP_ERR_INVALID_ARGUMENT", NativeTriMul.statusName(1));
    assertEquals("FOLDCP_ERR_CUDA", NativeTriMul.statusName(5));
    NativeTriMul.checkShape(2, 100, 128);
    assertTrue(NativeTriMul.workspaceSize(1, 100, 32) >= 2L * 32 * 128 * 128 * 2 + 32L * 100 * 128 * 2); // a, b and z: bf16
    assertEquals(2.0 * 8 * 8 * 8 * 32 + 12.0 * 8 * 8 * 32 * 32, NativeTriMul.flops(1, 8, 32, 0));
    assertEquals(2.0 * 8 * 8 * 8 * 32 + 12.0 * 8 * 8 * 32 * 32, NativeTriMul.flops(1, 8, 32, 32));
    // H of its own: 2BN^3H (triangle) + 8BN^2DH (p_in, g_in) + 2BN^2D(H + D) (p_out, g_out)
    assertEquals(2.0 * 8 * 8 * 8 * 64 + 8.0 * 8 * 8 * 32 * 64 + 2.0 * 8 * 8 * 32 * (64 + 32),
        NativeTriMul.flops(1, 8, 32, 64));
    // the workspace is a, b and z of its C = H channels and nothing else: at N = 100 (planes of
    // 128 x 128 + 128 and 100 x 128 + 128 bf16, each a 256-byte multiple) twice the channels take
    // exactly twice the bytes
    assertEquals(2 * (64L * (128 * 128 + 128) * 2) + 64L * (100 * 128 + 128) * 2, NativeTriMul.workspaceSize(1, 100, 64));
    assertEquals(2 * NativeTriMul.workspaceSize(1, 100, 32), NativeTriMul.workspaceSize(1, 100, 64));

    InvalidInputException d = assertThrows(InvalidInputException.class, () -> NativeTriMul.checkShape(1, 100, 30));
    assertTrue(d.getMessage().startsWith("D = 30 is not supported"), d.getMessage());
    InvalidInputException n = assertThrows(InvalidInputException.class, () -> NativeTriMul.workspaceSize(1, 0, 32));
    assertTrue(n.getMessage().startsWith("N = 0 is out of range"), n.getMessage());
    assertTrue(NativeTriMul.lastError().startsWith("N = 0"), NativeTriMul.lastError());

    LayerWeights w = LayerWeights.random(32, 3, true);
    InvalidInputException len = assertThrows(InvalidInputException.class, () -> NativeTriMul.createLayer(32, 0, 0,
        true, 1e-5f, w.get(LayerWeights.NORM_IN_W), w.get(LayerWeights.NORM_IN_B), new float[5],
        w.get(LayerWeights.G_IN_W), w.get(LayerWeights.NORM_OUT_W), w.get(LayerWeights.NORM_OUT_B),
        w.get(LayerWeights.P_OUT_W), w.get(LayerWeights.G_OUT_W), null, null, null, null));
    assertEquals("length of p_in.weight = 5: must be 2048 ([2H][D], D = 32, H = 32)", len.getMessage());
    // H of its own: D = 32 weights given for H = 64 are measured against H
    InvalidInputException lenH = assertThrows(InvalidInputException.class, () -> NativeTriMul.createLayer(32, 64, 0,
        true, 1e-5f, w.get(LayerWeights.NORM_IN_W), w.get(LayerWeights.NORM_IN_B), w.get(LayerWeights.P_IN_W),
        w.get(LayerWeights.G_IN_W), w.get(LayerWeights.NORM_OUT_W), w.get(LayerWeights.NORM_OUT_B),
        w.get(LayerWeights.P_OUT_W), w.get(LayerWeights.G_OUT_W), null, null, null, null));
    assertEquals("length of p_in.weight = 2048: must be 4096 ([2H][D], D = 32, H = 64)", lenH.getMessage());
    InvalidInputException dim = assertThrows(InvalidInputException.class, () -> NativeTriMul.createLayer(30, 30, 0,
        true, 1e-5f, new float[30], new float[30], new float[1800], new float[1800], new float[30], new float[30],
        new float[900], new float[900], null, null, null, null));
    assertTrue(dim.getMessage().startsWith("D = 30 is not supported"), dim.getMessage());

    if (CudaDriver.unavailableReason() != null) {
      // No driver: the static CUDA runtime cannot open libcuda.so.1, and says so as a GpuException.
      GpuException e = assertThrows(GpuException.class, () -> NativeTriMul.createLayer(32, 32, 0, true, 1e-5f,
          w.get(LayerWeights.NORM_IN_W), w.get(LayerWeights.NORM_IN_B), w.get(LayerWeights.P_IN_W),
          w.get(LayerWeights.G_IN_W), w.get(LayerWeights.NORM_OUT_W), w.get(LayerWeights.NORM_OUT_B),
          w.get(LayerWeights.P_OUT_W), w.get(LayerWeights.G_OUT_W), null, null, null, null));
      assertEquals("FOLDCP_ERR_UNSUPPORTED_DEVICE", e.statusName(), e.getMessage());
      assertEquals(2, e.status());
      assertTrue(e.getMessage().startsWith("foldcp_trimul_create failed (FOLDCP_ERR_UNSUPPORTED_DEVICE): no CUDA device"),
          e.getMessage());
    }
  }

  /**
   * The Java rule of the GPU kernels' widths ({@link NativeTriMul#gpuKernelsTake}, which a driver
   * without the library plans by) is the native one (foldcp_trimul_check_dims) for every D and H
   * in steps of 16 from 0 to 544 and a few odd ones; native H = 0 means H = D.
   */
  @Test
  void theJavaWidthRuleIsTheNativeOne() throws Exception {
    bundledLibrary(); // skips without it
    NativeTriMul.ensureLoaded();
    List<Integer> widths = new ArrayList<>(List.of(-32, 1, 31, 33, 255, 257, 511, 513));
    for (int c = 0; c <= 544; c += 16) {
      widths.add(c);
    }
    int taken = 0;
    for (int d : widths) {
      for (int h : widths) {
        boolean java = NativeTriMul.gpuKernelsTake(d, h == 0 ? d : h);
        boolean nativeTakes;
        try {
          NativeTriMul.checkDims(d, h);
          nativeTakes = true;
        } catch (InvalidInputException e) {
          nativeTakes = false;
        }
        assertEquals(nativeTakes, java, "D = " + d + ", H = " + h + ": Java rule vs foldcp_trimul_check_dims");
        taken += java ? 1 : 0;
      }
    }
    assertEquals(16 * 17, taken, "D in 32..512 by 32 (16 values), H the same or 0 (17)");
  }
}
