package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The messages of the GPU route, without a GPU: wrong architecture, no driver, no such device.
 * Runs everywhere (no "gpu" tag). Which backend "auto" picks from them is the Spark executor's
 * decision, tested with it (spark-plugin's BackendChoiceTest).
 */
class GpuAvailabilityTest {

  @Test
  void wrongArchitectureMessageNamesTheArchAndTheRule() {
    String m = GpuAvailability.archMessage(8, 0, "NVIDIA A100-SXM4-80GB");
    assertTrue(m.startsWith("compute capability 8.0 (NVIDIA A100-SXM4-80GB): the GPU route needs sm_90 (Hopper"), m);
    String ada = GpuAvailability.archMessage(8, 9, "NVIDIA L4");
    assertTrue(ada.contains("compute capability 8.9 (NVIDIA L4)") && ada.contains("sm_90"), ada);
    assertTrue(GpuAvailability.unavailable(m).startsWith("GPU backend unavailable: compute capability 8.0"));
  }

  @Test
  void onlyComputeCapability90IsSupported() {
    assertTrue(GpuAvailability.isSupported(9, 0));
    assertFalse(GpuAvailability.isSupported(8, 0), "A100");
    assertFalse(GpuAvailability.isSupported(8, 9), "Ada");
    assertFalse(GpuAvailability.isSupported(10, 0), "Blackwell: sm_90a code does not run there");
    assertFalse(GpuAvailability.isSupported(12, 0));
  }

  @Test
  void jcudaLinkErrorsAreSummarisedToTheLoaderMessage() {
    // The shape of the message JCuda 12.6 throws on a machine without the NVIDIA driver.
    String jcuda = "Error while loading native library \"JCudaDriver-12.6.0-linux-x86_64\"\n"
        + "Operating system name: Linux\nArchitecture         : amd64\nArchitecture bit size: 64\n"
        + "---(start of nested stack traces)---\n"
        + "Stack trace from the attempt to load the library as a file:\n"
        + "java.lang.UnsatisfiedLinkError: no JCudaDriver-12.6.0-linux-x86_64 in java.library.path: /usr/lib\n"
        + "\tat java.base/java.lang.ClassLoader.loadLibrary(ClassLoader.java:2434)\n"
        + "Stack trace from the attempt to load the library as a resource:\n"
        + "java.lang.UnsatisfiedLinkError: /tmp/libJCudaDriver-12.6.0-linux-x86_64.so: libcuda.so.1: cannot open"
        + " shared object file: No such file or directory\n"
        + "\tat java.base/jdk.internal.loader.NativeLibraries.load(Native Method)\n";
    String s = CudaDriver.summarizeLinkError(new UnsatisfiedLinkError(jcuda));
    assertTrue(s.startsWith("/tmp/libJCudaDriver-12.6.0-linux-x86_64.so: libcuda.so.1: cannot open shared object file"), s);
    assertTrue(s.contains("libcuda.so.1 from the NVIDIA driver"), s);
    String cp = CudaDriver.summarizeLinkError(new NoClassDefFoundError("jcuda/driver/JCudaDriver"));
    assertTrue(cp.startsWith("JCuda is not on the class path"), cp);
  }

  @Test
  void availabilityIsNullOrAReason() {
    String why = GpuAvailability.availability();
    if (why != null) {
      assertTrue(why.startsWith("GPU backend unavailable: "), why);
      assertTrue(why.length() > "GPU backend unavailable: ".length() + 10, why);
      // Stable: the same reason again (the driver probe is remembered).
      assertEquals(why, GpuAvailability.availability());
    }
    String bad = GpuAvailability.availability(1 << 20);
    assertNotNull(bad, "device ordinal 2^20 cannot exist");
    assertTrue(bad.startsWith("GPU backend unavailable: "), bad);
  }

  @Test
  void noGpuConstructorThrowsTheReason() {
    String why = GpuAvailability.availability();
    Assumptions.assumeTrue(why != null, "a usable GPU is present: the no-GPU message cannot be observed here");
    GpuException e = assertThrows(GpuException.class, GpuTriMul::new);
    assertEquals(why, e.getMessage());
  }
}
