package org.foldcp.ops.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.StageTimes;
import org.foldcp.ops.cpu.CpuTriMul;
import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;
import org.foldcp.ops.layer.TriMulSpec;
import org.foldcp.ops.tensor.PairTensor;
import org.foldcp.ops.testing.Reference64;
import org.foldcp.ops.testing.Tensors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The GPU backend against the float64 reference and the CPU backend (docs/design.md accuracy
 * contract: ||out - ref|| / ||ref|| <= 1e-2, NaN never passes). Needs an sm_90 GPU, the CUDA
 * driver and libfoldcp_jni.so in the jar; every test skips with the reason otherwise.
 */
@Tag("gpu")
class GpuTriMulTest {
  private static GpuTriMul gpu;
  private static CpuTriMul cpu;

  @BeforeEach
  void needGpu() {
    GpuTests.assumeGpu();
    if (gpu == null) {
      gpu = new GpuTriMul();
      cpu = new CpuTriMul();
    }
  }

  @AfterAll
  static void stop() {
    if (gpu != null) {
      gpu.close();
      cpu.close();
      gpu = null;
    }
  }

  /**
   * Every value of each axis appears, not the full cross product: N in {8, 100, 257, 1000},
   * D in {32, 128, 256}, B in {1, 2}, both directions, mask (with an all-zero row and column) or
   * none or present-but-all-valid, biases on and off, residual on and off. The float64 reference
   * runs up to N = 257; at N = 1000 the CPU backend is the yardstick.
   */
  static Stream<Arguments> cases() {
    return Stream.of(
        Arguments.of(Direction.OUTGOING, 8, 32, 1, "mask", true, false),
        Arguments.of(Direction.INCOMING, 8, 256, 2, "none", false, true),
        Arguments.of(Direction.OUTGOING, 100, 128, 2, "mask", false, true),
        Arguments.of(Direction.INCOMING, 100, 256, 1, "mask", true, false),
        Arguments.of(Direction.INCOMING, 100, 32, 1, "allValid", true, true),
        Arguments.of(Direction.OUTGOING, 100, 256, 1, "none", true, true),
        Arguments.of(Direction.OUTGOING, 257, 32, 2, "mask", true, true),
        Arguments.of(Direction.INCOMING, 257, 128, 1, "none", true, false),
        Arguments.of(Direction.OUTGOING, 1000, 128, 1, "mask", false, true),
        Arguments.of(Direction.INCOMING, 1000, 32, 2, "none", true, false));
  }

  @ParameterizedTest(name = "{0} N={1} D={2} B={3} mask={4} bias={5} residual={6}")
  @MethodSource("cases")
  void matchesReferenceAndCpu(Direction dir, int n, int d, int b, String mask, boolean bias, boolean residual) {
    long seed = 31L * n + 7L * d + b + dir.ordinal() + (bias ? 11 : 0) + (residual ? 13 : 0);
    PairTensor x = GpuTests.input(b, n, d, seed, mask.equals("mask"));
    if (mask.equals("allValid")) {
      x.setValid(0, 0, 0, true); // a mask that is present but all ones: uploaded as NULL
    }
    PairTensor xCopy = x.copy();
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(dir, residual), LayerWeights.random(d, seed + 1, bias));
    String what = dir + " N=" + n + " D=" + d + " B=" + b + " mask=" + mask + " bias=" + bias + " residual=" + residual;

    // 1. Into a poisoned buffer (0xFF), with a poisoned tail behind the output.
    long bytes = (long) b * n * n * d * 2;
    PairTensor hooked;
    try (DeviceBuffer out = DeviceBuffer.allocate(gpu.device(), bytes + 4096, "test output")) {
      out.fill(GpuTests.POISON);
      hooked = gpu.forwardInto(x, layer, out);
      GpuTests.assertPoisonIntact(out, bytes, 4096, what);
    }
    GpuTests.assertAllWrittenAndFinite(hooked, what);

    // 2. The public route (in place on the resident copy) gives the same bits.
    GpuStats before = gpu.stats();
    PairTensor y = gpu.forward(x, layer);
    GpuStats after = gpu.stats();
    assertTrue(y.sameAs(hooked), what + ": in-place forward differs from the out-of-place one");
    assertTrue(x.sameAs(xCopy), "the input is never modified");
    assertEquals(x.shapeString(), y.shapeString());
    assertEquals(x.hasMask(), y.hasMask(), "the output carries the input's mask");
    assertTrue(masksEqual(x, y), "the output's mask is the input's");
    assertEquals(mask.equals("mask") ? 2 : 1, after.uploads() - before.uploads(),
        "values, plus the mask only when some position is masked");
    assertEquals(1, after.downloads() - before.downloads());

    // 3. Accuracy.
    PairTensor c = cpu.forward(x, layer);
    double vsCpu = Tensors.assertWithinContract(y, Reference64.toDoubles(c), what + " vs CpuTriMul");
    if (n <= 257) {
      double vsRef = Tensors.assertWithinContract(y, Reference64.forward(x, layer), what + " vs Reference64");
      System.out.printf("[gpu] %s: rel err vs float64 %.2e, vs cpu %.2e%n", what, vsRef, vsCpu);
    } else {
      System.out.printf("[gpu] %s: rel err vs cpu %.2e%n", what, vsCpu);
    }
  }

  private static boolean masksEqual(PairTensor a, PairTensor b) {
    for (int bb = 0; bb < a.batch(); bb++) {
      for (int i = 0; i < a.rows(); i++) {
        for (int j = 0; j < a.cols(); j++) {
          if (a.valid(bb, i, j) != b.valid(bb, i, j)) {
            return false;
          }
        }
      }
    }
    return true;
  }

  /**
   * Layers of a hidden width H of their own (OpenFold's c_hidden), narrower and wider than D, up to
   * 512 (the pairs above 256 run the wide stage 3 up to 384 and the split one above, and stage 1
   * at D above 256; 352 / 256 keeps LN_in(x) past channel 256 in shared memory in both, half a
   * k-block at its end): a
   * resident stack of both directions with a mask equals the layers run one by one, and is within
   * the accuracy contract of the CPU backend and of float64.
   */
  @ParameterizedTest(name = "D={0} H={1} N={2} B={3}")
  @CsvSource({"128, 64, 100, 1", "64, 128, 130, 2", "256, 128, 64, 1", "32, 256, 72, 1", "384, 256, 72, 1",
      "512, 512, 40, 1", "128, 512, 64, 2", "288, 96, 50, 1", "352, 256, 60, 2"})
  void aStackOfItsOwnHiddenWidthMatchesTheCpuAndFloat64(int d, int h, int n, int b) {
    PairTensor x = GpuTests.input(b, n, d, 17L * d + h + n, true);
    LayerStack stack = new LayerStack(List.of(
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), LayerWeights.random(d, h, 5L * h + d, true)),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(d, h, 5L * h + d + 1, false))));
    String what = "D=" + d + " H=" + h + " N=" + n + " B=" + b;
    PairTensor y = gpu.forward(x, stack);
    GpuTests.assertAllWrittenAndFinite(y, what);
    assertEquals(x.shapeString(), y.shapeString(), "the output has the pair width D");
    assertEquals(h, gpu.channelGroup(), "the whole workspace of H channels fits: one group of H");
    PairTensor cur = x;
    for (TriMulLayer l : stack.layers()) {
      cur = gpu.forward(cur, l);
    }
    assertTrue(y.sameAs(cur), what + ": resident stack == layer by layer");
    double vsCpu = Tensors.assertWithinContract(y, Reference64.toDoubles(cpu.forward(x, stack)), what + " vs CpuTriMul");
    double vsRef = Tensors.assertWithinContract(y, Reference64.forward(x, stack), what + " vs Reference64");
    System.out.printf("[gpu] hidden width %s: rel err vs float64 %.2e, vs cpu %.2e%n", what, vsRef, vsCpu);
  }

  @Test
  void threeLayerStackStaysOnTheDevice() {
    int n = 100;
    int d = 128;
    PairTensor x = GpuTests.input(1, n, d, 77, true);
    LayerStack stack = new LayerStack(List.of(
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), LayerWeights.random(d, 101, true)),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(d, 102, false)),
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), LayerWeights.random(d, 103, true))));
    GpuStats before = gpu.stats();
    PairTensor y = gpu.forward(x, stack);
    GpuStats after = gpu.stats();
    assertEquals(3, after.layerRuns() - before.layerRuns());
    assertEquals(2, after.uploads() - before.uploads(), "values and mask uploaded once for the whole stack");
    assertEquals(1, after.downloads() - before.downloads(), "downloaded once for the whole stack");
    assertEquals((long) n * n * d * 2, after.bytesFromDevice() - before.bytesFromDevice());
    GpuTests.assertAllWrittenAndFinite(y, "stack");
    assertTrue(y.hasMask());

    // Layer by layer through the host gives the same bits (bf16 between layers either way).
    PairTensor cur = x;
    for (TriMulLayer l : stack.layers()) {
      cur = gpu.forward(cur, l);
    }
    assertTrue(y.sameAs(cur), "resident stack == layer-by-layer");

    Tensors.assertWithinContract(y, Reference64.forward(x, stack), "3-layer stack vs Reference64");
    Tensors.assertWithinContract(y, Reference64.toDoubles(cpu.forward(x, stack)), "3-layer stack vs CpuTriMul");
  }

  /**
   * Asked for stage times, the stack runs every layer through the native profiled forward and
   * reports once: three positive times, together within the forward's own duration (they time
   * the kernels only), and the output is the plain forward's, bit for bit.
   */
  @Test
  void profiledStackReportsPositiveStageTimesAndTheSameBits() {
    int n = 256;
    int d = 128;
    PairTensor x = GpuTests.input(1, n, d, 61, true);
    LayerStack stack = new LayerStack(List.of(
        new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), LayerWeights.random(d, 62, true)),
        new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(d, 63, false))));
    PairTensor plain = gpu.forward(x, stack); // also makes the layers and the resident buffers
    List<StageTimes> reported = new ArrayList<>();
    GpuStats before = gpu.stats();
    long t0 = System.nanoTime();
    PairTensor profiled = gpu.forward(x, stack, false, reported::add);
    long forwardNanos = System.nanoTime() - t0;
    GpuStats after = gpu.stats();

    assertEquals(1, reported.size(), "one report per forward, summed over the layers");
    StageTimes t = reported.get(0);
    System.out.printf("[gpu] profiled 2-layer stack (1, %d, %d): %s, forward %.3f ms%n", n, d, t, forwardNanos / 1e6);
    assertTrue(t.stage1Nanos() > 0 && t.stage2Nanos() > 0 && t.stage3Nanos() > 0, t.toString());
    assertTrue(t.totalNanos() <= forwardNanos, t + " sums to more than the forward's " + forwardNanos + " ns");
    assertEquals(2, after.profiledLayerRuns() - before.profiledLayerRuns(), "both layers profiled");
    assertTrue(profiled.sameAs(plain), "the profiled forward gives the plain forward's bits");
  }

  /**
   * A device-memory budget too small for the whole workspace: stages 1-2 run in channel groups
   * (of the hidden width H: the workspace holds a, b and z of H channels), and the output equals
   * the ungrouped one bit for bit; a budget too small even for groups of 8 fails before any
   * upload, naming the sizes.
   */
  @ParameterizedTest(name = "D={0} H={1}")
  @CsvSource({"128, 128", "64, 128"})
  void smallMemoryBudgetRunsInChannelGroups(int d, int h) {
    int n = 300;
    PairTensor x = GpuTests.input(1, n, d, 91, true);
    TriMulLayer layer = new TriMulLayer(TriMulSpec.of(Direction.INCOMING, true), LayerWeights.random(d, h, 92, true));
    PairTensor whole = gpu.forward(x, layer);
    assertEquals(h, gpu.channelGroup(), "the default instance has room for the whole workspace");
    long tensors = (long) n * n * d * 2 + (long) n * n;
    long budget = tensors + NativeTriMul.workspaceSizeGroup(1, n, h, 64) + 4096;
    try (GpuTriMul small = new GpuTriMul(0, 2, budget)) {
      PairTensor grouped = small.forward(x, layer);
      assertEquals(64, small.channelGroup(), "the largest group that fits the budget");
      assertTrue(grouped.sameAs(whole), "channel groups give the ungrouped result, bit for bit");
      // The profiled forward in channel groups: the stage times summed over the groups, the same bits.
      List<StageTimes> reported = new ArrayList<>();
      PairTensor asked = small.forward(x, new LayerStack(List.of(layer)), false, reported::add);
      assertEquals(1, reported.size(), "one report per forward: " + reported);
      assertTrue(reported.get(0).totalNanos() > 0, "the grouped stages took GPU time: " + reported);
      assertEquals(1, small.stats().profiledLayerRuns());
      assertTrue(asked.sameAs(whole), "the grouped forward with stage times gives the same bits");
    }
    // below a group of 32 the chooser takes 16, then 8 (stage 1 computes whole chunks of 32 and
    // stores the group's channels): the same bits again
    long tight = tensors + NativeTriMul.workspaceSizeGroup(1, n, h, 8) + 4096;
    try (GpuTriMul eight = new GpuTriMul(0, 2, tight)) {
      PairTensor g8 = eight.forward(x, layer);
      assertEquals(8, eight.channelGroup(), "no group of 16 fits the budget");
      assertTrue(g8.sameAs(whole), "channel groups of 8 give the ungrouped result, bit for bit");
    }
    try (GpuTriMul tiny = new GpuTriMul(0, 2, tensors + 1024)) {
      GpuException e = assertThrows(GpuException.class, () -> tiny.forward(x, layer));
      assertTrue(e.getMessage().contains("does not fit on device") && e.getMessage().contains("channel groups of 8"),
          e.getMessage());
      assertEquals(0, tiny.stats().uploads(), "refused before any upload");
    }
  }

  @Test
  void layersAreCachedByDigestAndSpec() {
    try (GpuTriMul g = new GpuTriMul(0, 2)) {
      PairTensor x = GpuTests.input(1, 8, 32, 5, false);
      LayerWeights w = LayerWeights.random(32, 9, true);
      TriMulLayer a = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, false), w);
      TriMulLayer sameWeights = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, false),
          LayerWeights.fromTensors(w.tensors(), "", 32));
      TriMulLayer residual = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING, true), w);
      TriMulLayer incoming = new TriMulLayer(TriMulSpec.of(Direction.INCOMING, false), w);
      g.forward(x, a);
      g.forward(x, sameWeights);
      assertEquals(1, g.stats().layersCreated(), "equal digest and spec: one native layer");
      g.forward(x, residual);
      assertEquals(2, g.stats().layersCreated(), "the residual flag is part of the native layer");
      g.forward(x, incoming);
      assertEquals(3, g.stats().layersCreated());
      assertEquals(2, g.cachedLayers(), "at most maxCachedLayers stay");
      assertEquals(1, g.stats().residentAllocations(), "one (B, N, D): buffers allocated once");
      g.forward(GpuTests.input(2, 8, 32, 6, false), a);
      assertEquals(2, g.stats().residentAllocations(), "a new (B, N, D) reallocates");
    }
  }

  @Test
  void unsupportedShapesFailBeforeAnyUpload() {
    GpuStats before = gpu.stats();
    PairTensor x30 = PairTensor.random(1, 16, 30, 1, 0);
    TriMulLayer l30 = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(30, 2, false));
    InvalidInputException e = assertThrows(InvalidInputException.class, () -> gpu.forward(x30, l30));
    assertTrue(e.getMessage().startsWith("D of the layer = 30: must be a multiple of 32 in [32, 512] on the GPU"),
        e.getMessage());
    PairTensor x544 = PairTensor.random(1, 8, 544, 1, 0);
    TriMulLayer l544 = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(544, 2, false));
    assertThrows(InvalidInputException.class, () -> gpu.forward(x544, l544));
    PairTensor x = PairTensor.random(1, 8, 32, 1, 0);
    TriMulLayer l64 = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(64, 2, false));
    InvalidInputException dm = assertThrows(InvalidInputException.class, () -> gpu.forward(x, l64));
    assertTrue(dm.getMessage().contains("D of the pair tensor = 32"), dm.getMessage());
    // a hidden width the kernels do not take (aStackOfItsOwnHiddenWidthMatchesTheCpuAndFloat64 runs
    // those they take): the value, the rule and where such a layer runs
    for (int h : new int[] {48, 544}) {
      TriMulLayer bad = new TriMulLayer(TriMulSpec.of(Direction.OUTGOING), LayerWeights.random(32, h, 2, false));
      InvalidInputException hd = assertThrows(InvalidInputException.class, () -> gpu.forward(x, bad));
      assertTrue(hd.getMessage().startsWith("H of the layer = " + h + ": must be a multiple of 32 in [32, 512] (D = 32)")
          && hd.getMessage().contains("CPU"), hd.getMessage());
    }
    assertEquals(before.uploads(), gpu.stats().uploads(), "nothing was uploaded");
  }

  /** The NaN / Inf scan on the device after the upload: the position and count, no layer run; allowed, it runs. */
  @Test
  void nonFiniteInputFailsAfterTheUploadUnlessAllowed() {
    PairTensor x = PairTensor.random(1, 24, 32, 5, 0);
    x.set(0, 3, 4, 5, Float.NaN);
    x.set(0, 20, 1, 0, Float.POSITIVE_INFINITY);
    TriMulLayer l = new TriMulLayer(TriMulSpec.of(Direction.INCOMING), LayerWeights.random(32, 6, true));
    org.foldcp.ops.NonFiniteInputException e =
        assertThrows(org.foldcp.ops.NonFiniteInputException.class, () -> gpu.forward(x, l));
    assertEquals(2, e.count());
    assertTrue(e.getMessage().contains("(0, 3, 4, 5)"), e.getMessage());
    PairTensor y = gpu.forward(x, l, true);
    assertEquals(x.shapeString(), y.shapeString());
    PairTensor clean = PairTensor.random(1, 24, 32, 5, 0);
    GpuTests.assertAllWrittenAndFinite(gpu.forward(clean, l), "clean input after a refused one");
  }

  @Test
  void deviceIsHopper() {
    GpuDevice dev = gpu.device();
    assertEquals(9, dev.major());
    assertEquals(0, dev.minor());
    assertFalse(dev.name().isEmpty());
    GpuDevice.MemInfo m = dev.memInfo();
    assertTrue(m.free() > 0 && m.free() <= m.total(), m.toString());
  }
}
