package org.foldcp.spark.plugin;

import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.gpu.FakeGpus;

/**
 * A fold-cp executor bound in this JVM whose task GPU is device 0 with backends from a {@link
 * FakeGpus}: local-mode jobs then run their tasks on the fake GPU, as an executor with a GPU runs
 * them on its real one. For tests of other packages; close the state to unbind it.
 */
public final class FakeExecutor {
  private FakeExecutor() {}

  public static ExecutorState withGpu(FakeGpus gpus) {
    return ExecutorState.bind("fake", FoldCpConf.defaults(), 0, 1, FakeGpus.owners("executor fake", gpus));
  }
}
