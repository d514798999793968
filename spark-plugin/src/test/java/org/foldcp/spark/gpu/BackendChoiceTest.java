package org.foldcp.spark.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.foldcp.ops.gpu.GpuAvailability;
import org.junit.jupiter.api.Test;

/**
 * The one chooser behind backend auto: an executor decides once per device whether its tasks
 * compute on the GPU, and logs the reason for a CPU fallback once, however many tasks ask.
 */
class BackendChoiceTest {
  private static final String NOT_HOPPER = "GPU backend unavailable: compute capability 8.0 (NVIDIA A100-SXM4-80GB):"
      + " the GPU route needs sm_90";

  @Test
  void eachDeviceIsProbedOnceAndAFallbackIsLoggedOnceWithItsReason() {
    AtomicInteger probes = new AtomicInteger();
    GpuOwners owners = new GpuOwners("executor 7", new FakeGpus(), ordinal -> {
      probes.incrementAndGet();
      return ordinal == 3 ? NOT_HOPPER : null;
    });
    try (LogLines log = new LogLines(GpuOwners.class)) {
      BackendChoice a100 = owners.choice(3);
      for (int task = 0; task < 5; task++) {
        assertSame(a100, owners.choice(3), "every later task gets the decision already made");
      }
      assertFalse(a100.onGpu());
      assertEquals(NOT_HOPPER, a100.whyNotGpu());
      assertEquals("cpu, because " + NOT_HOPPER, a100.describe());

      BackendChoice h200 = owners.choice(1);
      assertSame(h200, owners.choice(1));
      assertTrue(h200.onGpu());
      assertEquals("gpu (device 1)", h200.describe());
      assertEquals(2, probes.get(), "one probe per device");

      List<String> lines = log.lines();
      assertEquals(2, lines.size(), lines.toString());
      assertEquals("WARN fold-cp backend in executor 7: tasks cannot compute on a GPU, so backend auto computes on"
          + " the CPU (and backend gpu fails) because " + NOT_HOPPER, lines.get(0));
      assertEquals("INFO fold-cp backend in executor 7: tasks compute on GPU 1 (backend auto and gpu)", lines.get(1));
    }
  }

  @Test
  void aTaskWithoutAGpuComputesOnTheCpuWithoutAProbeAndSaysHowToGiveItOne() {
    GpuOwners owners = new GpuOwners("executor 2", new FakeGpus(), ordinal -> {
      throw new AssertionError("probed device " + ordinal + " for a task that has none");
    });
    BackendChoice none = owners.choice(-1);
    assertFalse(none.onGpu());
    assertTrue(none.whyNotGpu().startsWith("this task has no GPU") && none.whyNotGpu()
        .contains("spark.task.resource.gpu.amount=1"), none.whyNotGpu());
  }

  /** The real probe (moved from the operator library's BackendSelector test): GPU where usable, else the CPU. */
  @Test
  void theRealProbePicksTheGpuWhereTheGpuBackendCanRun() {
    String why = GpuAvailability.availability(0);
    BackendChoice device0 = new GpuOwners("this test").choice(0);
    assertEquals(why == null, device0.onGpu(), "availability: " + why);
    assertEquals(why, device0.whyNotGpu());
  }
}
