package org.foldcp.spark.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Map;
import org.foldcp.ops.layer.LayerStack;
import org.foldcp.spark.config.FoldCpConf;
import org.junit.jupiter.api.Test;

/**
 * The settings a stack is planned under: a stack the GPU kernels cannot take (a hidden width H
 * outside their rule) turns GPUs off, so that whatever auto would resolve (the backend, the
 * local-mode GPU, a team's transport) lands on the CPU; one they take (H != D included) keeps the
 * settings; a setting that forces the GPU is kept, for the plan to refuse by name.
 */
class FoldCpForStackTest {
  private static final LayerStack SQUARE = LayerStack.randomAlternating(1, 32, 1, false);
  private static final LayerStack HIDDEN = LayerStack.randomAlternating(1, 32, 16, 1, false);

  @Test
  void aStackOfItsOwnHiddenWidthTurnsGpusOffUnlessTheyAreForced() {
    Map<String, String> none = Map.of("spark.master", "local[2]");
    assertSame(none, FoldCp.forStack(none, SQUARE));
    assertSame(none, FoldCp.forStack(none, LayerStack.randomAlternating(1, 32, 64, 1, false)));
    assertEquals("false", FoldCp.forStack(none, HIDDEN).get(FoldCpConf.GPU_ENABLED.name()));
    Map<String, String> cp2 = Map.of(FoldCpConf.CP.name(), "2");
    assertEquals("false", FoldCp.forStack(cp2, HIDDEN).get(FoldCpConf.GPU_ENABLED.name()));
    Map<String, String> gpu = Map.of(FoldCpConf.ROUTE.name(), "gpu");
    assertSame(gpu, FoldCp.forStack(gpu, HIDDEN));
    Map<String, String> nvshmem = Map.of(FoldCpConf.CP.name(), "2", FoldCpConf.CP_TRANSPORT.name(), "nvshmem");
    assertSame(nvshmem, FoldCp.forStack(nvshmem, HIDDEN));
  }
}
