package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sticky CUDA error for real, and what {@link StickyCudaErrors} (by which the executor plugin
 * decides to exit the executor) makes of it and of errors that are not sticky. The GPU work runs
 * in a process of its own, {@link StickyErrorProbe}: a sticky error would poison this JVM's
 * CUDA context and every GPU test after it.
 */
@Tag("gpu")
class StickyCudaErrorGpuTest {
  /** The probe starts a JVM, makes a few small forwards and one that faults: seconds, not this. */
  static final int WALL_SECONDS = 60;

  /** One step of the probe, as it wrote it. */
  record Step(String name, String outcome, String message, String status, String sticky) {
    static Step of(Properties found, String name) {
      String outcome = found.getProperty(name + ".outcome");
      assertTrue(outcome != null, "the probe did not record step " + name + ": " + found);
      return new Step(name, outcome, found.getProperty(name + ".message", ""), found.getProperty(name + ".status", ""),
          found.getProperty(name + ".sticky", "none"));
    }

    String text() {
      return outcome + (message.isEmpty() ? "" : ": " + message);
    }
  }

  @Test
  void anIllegalAddressIsStickyAndClassifiedSoWhileOtherGpuErrorsAreNot(@TempDir Path dir) throws Exception {
    GpuTests.assumeGpu();
    Properties found = runProbe(dir);

    Step valid = Step.of(found, "valid");
    assertEquals("ok", valid.outcome(), "the valid forward before any error must succeed: " + valid.text());

    // (d) Errors that leave the context usable: not sticky, and the same forward still works after them.
    Step small = Step.of(found, "smallWorkspace");
    assertEquals("GpuException", small.outcome(), "a too small workspace: " + small.text());
    assertEquals("FOLDCP_ERR_WORKSPACE_TOO_SMALL", small.status(), small.text());
    assertEquals("none", small.sticky(), "a too small workspace is not a sticky error: " + small.text());
    Step notDevice = Step.of(found, "notDeviceMemory");
    assertEquals("InvalidInputException", notDevice.outcome(), "a bogus address: " + notDevice.text());
    assertTrue(notDevice.message().contains("x = ") && notDevice.message().contains("is not device memory"),
        "the native check must name x as no device memory: " + notDevice.text());
    assertEquals("none", notDevice.sticky(),
        "a bogus address the native side refuses is not sticky: " + notDevice.text());
    Step oom = Step.of(found, "outOfMemory");
    assertEquals("GpuException", oom.outcome(), "cuMemAlloc of 1 PiB: " + oom.text());
    assertTrue(oom.status().startsWith("CUDA_ERROR_") && oom.message().contains("cuMemAlloc"),
        "the driver's error must be named: " + oom.text());
    assertEquals("none", oom.sticky(), "a failed allocation (" + oom.status() + ") is not sticky: " + oom.text());
    Step validAfter = Step.of(found, "validAfterNonSticky");
    assertEquals("ok", validAfter.outcome(), "after errors that are not sticky the context must still work (so they"
        + " must not recycle the executor): " + validAfter.text());

    // (a) The illegal access reaches Java as a GpuException with the native CUDA message, and (b) it is sticky.
    Step illegal = Step.of(found, "illegalAddress");
    assertEquals("GpuException", illegal.outcome(), "the forward that stores past its workspace ("
        + found.getProperty("illegalAddress.workspace") + "): " + illegal.text());
    assertEquals("FOLDCP_ERR_CUDA", illegal.status(), illegal.text());
    assertTrue(illegal.message().contains("foldcp_trimul_forward (profiled) failed (FOLDCP_ERR_CUDA)")
        && illegal.message().contains("cudaError"), "the message must carry the native CUDA error: " + illegal.text());
    assertNotEquals("none", illegal.sticky(), "StickyCudaErrors.in must name the error: " + illegal.text());
    assertTrue(illegal.message().contains(illegal.sticky()), "the sticky error named (" + illegal.sticky()
        + ") must be the one in the message: " + illegal.text());

    // (c) Sticky: valid calls of the same process fail from now on; the driver's names the same error.
    Step validSticky = Step.of(found, "validAfterSticky");
    assertNotEquals("ok", validSticky.outcome(), "a valid forward after " + illegal.sticky() + " must fail too");
    Step create = Step.of(found, "createLayerAfterSticky");
    assertNotEquals("ok", create.outcome(), "creating a layer (cudaMalloc) after " + illegal.sticky() + " must fail");
    Step sync = Step.of(found, "synchronizeAfterSticky");
    assertEquals("GpuException", sync.outcome(), "cuCtxSynchronize after " + illegal.sticky() + ": " + sync.text());
    assertNotEquals("none", sync.sticky(), "the driver must report the sticky error again: " + sync.text());

    System.out.println("PASS anIllegalAddressIsStickyAndClassifiedSoWhileOtherGpuErrorsAreNot: " + illegal.message()
        + " -> sticky " + illegal.sticky() + "; after it, in the same process: valid forward -> " + validSticky.text()
        + " (sticky: " + validSticky.sticky() + "); createLayer -> " + create.text() + "; cuCtxSynchronize -> "
        + sync.status() + " (sticky: " + sync.sticky() + "); not sticky, context still usable: " + small.status()
        + ", " + notDevice.outcome() + " (not device memory), " + oom.status());
  }

  /** Runs the probe to its end (it must exit by itself, 0) and returns its findings. */
  private static Properties runProbe(Path dir) throws IOException, InterruptedException {
    Path findings = dir.resolve("findings.properties");
    Path log = dir.resolve("probe.log");
    Process p = GpuTests.testJvm(List.of(), List.of("-Xmx2g"), StickyErrorProbe.class, List.of(findings.toString()),
        log).start();
    if (!p.waitFor(WALL_SECONDS, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      fail("the probe did not end within " + WALL_SECONDS + " s; its log:\n" + tail(log));
    }
    assertEquals(0, p.exitValue(), "the probe must run to its end and exit by itself; its log:\n" + tail(log));
    Properties found = new Properties();
    try (Reader r = Files.newBufferedReader(findings)) {
      found.load(r);
    }
    System.out.println("StickyErrorProbe log:\n" + tail(log));
    return found;
  }

  private static String tail(Path log) throws IOException {
    String s = Files.exists(log) ? Files.readString(log) : "(no log)";
    return s.length() <= 4000 ? s : s.substring(s.length() - 4000);
  }
}
