package org.foldcp.spark.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.TaskResultLost$;
import org.apache.spark.scheduler.AccumulableInfo;
import org.foldcp.ops.gpu.GpuException;
import org.foldcp.ops.gpu.cp.TeamException;
import org.foldcp.ops.InvalidInputException;
import org.foldcp.ops.cp.CpGrid;
import org.foldcp.spark.config.FoldCpConf;
import org.foldcp.spark.gpu.ExecutorGpu;
import org.foldcp.spark.gpu.FakeGpus;
import org.foldcp.spark.gpu.GpuOwners;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The executor half of the plugin against a PluginContext whose GPU resources the test chooses. */
class FoldCpExecutorPluginTest {
  private static final Map<String, String> DRIVER_SETTINGS =
      FoldCpConf.from(Map.of("spark.foldcp.cp", "4", "spark.foldcp.grid", "2x2")).asMap();

  @AfterEach
  void clearState() {
    ExecutorState.current().ifPresent(ExecutorState::close);
  }

  @Test
  void bindsTheGpuSparkAssignedAndTheDriverSettings() {
    FoldCpExecutorPlugin plugin = new FoldCpExecutorPlugin();
    plugin.init(FakePluginContext.withGpus("7", 4, "3"), DRIVER_SETTINGS);
    ExecutorState s = ExecutorState.require();
    assertEquals("7", s.executorId());
    assertEquals(3, s.deviceOrdinal());
    assertTrue(s.hasDevice());
    assertEquals(4, s.conf().get(FoldCpConf.CP));
    assertEquals(CpGrid.of(2, 2), s.conf().grid());
    assertEquals(4, s.cpuThreadsPerTask(), "cpu.threads = 0 resolves to spark.task.cpus");
    plugin.shutdown();
    assertFalse(ExecutorState.current().isPresent(), "shutdown clears the executor state");
  }

  @Test
  void anExecutorWithoutAGpuBindsNoDevice() {
    FoldCpExecutorPlugin plugin = new FoldCpExecutorPlugin();
    plugin.init(FakePluginContext.withGpus("1", 1), DRIVER_SETTINGS);
    assertEquals(-1, ExecutorState.require().deviceOrdinal());
    assertFalse(ExecutorState.require().hasDevice());
    plugin.shutdown();
  }

  @Test
  void gpusDisabledLeaveTheAssignedGpuUnbound() {
    Map<String, String> settings = FoldCpConf.from(Map.of("spark.foldcp.gpu.enabled", "false")).asMap();
    FoldCpExecutorPlugin plugin = new FoldCpExecutorPlugin();
    plugin.init(FakePluginContext.withGpus("1", 1, "0"), settings);
    assertEquals(-1, ExecutorState.require().deviceOrdinal());
    plugin.shutdown();
  }

  @Test
  void severalGpusOnOneExecutorAreRefused() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new FoldCpExecutorPlugin().init(FakePluginContext.withGpus("7", 1, "0", "1"), DRIVER_SETTINGS));
    assertEquals("GPU addresses of executor 7 = [0, 1]: fold-cp runs one executor per GPU:"
        + " set spark.executor.resource.gpu.amount=1", e.getMessage());
    assertFalse(ExecutorState.current().isPresent());
  }

  @Test
  void aGpuAddressThatIsNotAnOrdinalIsRefused() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new FoldCpExecutorPlugin().init(FakePluginContext.withGpus("7", 1, "GPU-5f3e"), DRIVER_SETTINGS));
    assertTrue(e.getMessage().startsWith("GPU address of executor 7 = 'GPU-5f3e': must be a CUDA device ordinal"),
        e.getMessage());
  }

  @Test
  void settingsAreValidatedAgainOnTheExecutor() {
    InvalidInputException e = assertThrows(InvalidInputException.class,
        () -> new FoldCpExecutorPlugin().init(FakePluginContext.withGpus("7", 1), Map.of("spark.foldcp.cp", "0")));
    assertTrue(e.getMessage().startsWith("spark.foldcp.cp = '0': must be auto or an integer >= 1"), e.getMessage());
  }

  @Test
  void anExecutorWithoutDriverSettingsRefusesToStart() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> new FoldCpExecutorPlugin().init(FakePluginContext.withGpus("7", 1), Map.of()));
    assertTrue(e.getMessage().contains("got no fold-cp settings from the driver"), e.getMessage());
  }

  @Test
  void requireWithoutThePluginSaysHowToLoadIt() {
    IllegalStateException e = assertThrows(IllegalStateException.class, ExecutorState::require);
    assertTrue(e.getMessage().contains("spark.plugins=org.foldcp.spark.plugin.FoldCpPlugin"), e.getMessage());
  }

  @Test
  void closingAStaleStateKeepsTheNewerOne() {
    FoldCpConf conf = FoldCpConf.defaults();
    ExecutorState old = ExecutorState.bind("a", conf, -1, 1);
    ExecutorState newer = ExecutorState.bind("b", conf, 0, 1);
    old.close();
    assertSame(newer, ExecutorState.require());
    newer.close();
    assertFalse(ExecutorState.current().isPresent());
  }

  @Test
  void tasksBorrowOneGpuThatShutdownClosesOnce() {
    FakeGpus gpus = new FakeGpus();
    FoldCpExecutorPlugin plugin = new FoldCpExecutorPlugin(id -> FakeGpus.owners("executor " + id, gpus));
    Map<String, String> settings = FoldCpConf.from(Map.of("spark.foldcp.gpu.concurrentTasks", "2")).asMap();
    plugin.init(FakePluginContext.withGpus("7", 1, "3"), settings);
    ExecutorState state = ExecutorState.require();
    assertEquals("ExecutorState(executor 7, GPU 3 lent to 2 tasks at a time, 1 CPU threads per task)", state.toString());
    ExecutorGpu gpu = state.gpu(3);
    assertSame(gpu, state.gpu(3));
    assertEquals(2, gpu.permits());
    assertEquals(0, gpus.made().size(), "the GPU opens at the first borrow, not at executor start");
    gpu.borrow().close();
    gpu.borrow().close();
    assertEquals(1, gpus.made().size());
    assertEquals(0, gpus.made().get(0).closes(), "tasks give their borrow back; the executor keeps the GPU");

    plugin.shutdown();
    plugin.shutdown();
    state.close();
    assertEquals(1, gpus.made().get(0).closes(), "closed once, at executor shutdown");
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> state.gpu(3));
    assertTrue(e.getMessage().startsWith("the GPUs of executor 7 are closed"), e.getMessage());
    e = assertThrows(IllegalStateException.class, gpu::borrow);
    assertTrue(e.getMessage().startsWith("GPU 3 of this executor is closed"), e.getMessage());
  }

  @Test
  void replacingAStaleStateClosesItsGpu() {
    FakeGpus gpus = new FakeGpus();
    GpuOwners staleGpus = FakeGpus.owners("executor a", gpus);
    ExecutorState.bind("a", FoldCpConf.defaults(), 0, 1, staleGpus).gpu(0).borrow().close();
    ExecutorState.bind("b", FoldCpConf.defaults(), 0, 1, FakeGpus.owners("executor b", gpus));
    assertEquals(1, gpus.made().get(0).closes());
    assertThrows(IllegalStateException.class, () -> staleGpus.device(0, 1));
  }

  @SuppressWarnings("unchecked")
  private static final scala.collection.immutable.Seq<AccumulableInfo> NO_ACCUMULATORS =
      (scala.collection.immutable.Seq<AccumulableInfo>) (Object) scala.collection.immutable.Nil$.MODULE$;

  private static ExceptionFailure failure(Throwable e) {
    return new ExceptionFailure(e, NO_ACCUMULATORS);
  }

  @Test
  void aTaskFailedWithABrokenNvshmemTeamRecyclesTheExecutor() throws InterruptedException {
    BlockingQueue<Integer> exits = new LinkedBlockingQueue<>();
    FoldCpExecutorPlugin plugin = new FoldCpExecutorPlugin(ExecutorState::gpusOf, exits::add, Duration.ofMillis(50));
    plugin.init(FakePluginContext.withGpus("3", 1, "0"), DRIVER_SETTINGS);
    plugin.onTaskFailed(failure(new IllegalStateException("other failure")));
    plugin.onTaskFailed(TaskResultLost$.MODULE$);
    TeamException team = new TeamException("barrier rank 0 of cp = 2 (grid 2x1) failed: rank(s) [1] of 2 missing");
    plugin.onTaskFailed(failure(new RuntimeException("wrapped", team)));
    plugin.onTaskFailed(failure(team)); // a second rank of this executor's stage: one exit is enough
    assertEquals(FoldCpExecutorPlugin.TEAM_BROKEN_EXIT_CODE, exits.poll(10, TimeUnit.SECONDS));
    assertNull(exits.poll(500, TimeUnit.MILLISECONDS), "only a broken team recycles the executor, once");
    plugin.shutdown();
  }

  @Test
  void inLocalModeABrokenTeamIsLoggedButTheDriverKeepsRunning() throws InterruptedException {
    BlockingQueue<Integer> exits = new LinkedBlockingQueue<>();
    FoldCpExecutorPlugin plugin = new FoldCpExecutorPlugin(ExecutorState::gpusOf, exits::add, Duration.ZERO);
    plugin.init(FakePluginContext.withGpus("driver", 1), DRIVER_SETTINGS);
    plugin.onTaskFailed(failure(new TeamException("NVSHMEM init did not complete")));
    assertNull(exits.poll(500, TimeUnit.MILLISECONDS), "the driver's JVM is never exited");
    plugin.shutdown();
  }

  @Test
  void aTeamFailureIsFoundInTheStackTraceWhenTheExceptionDidNotTravel() {
    String trace = "java.lang.IllegalStateException: barrier rank 1 failed\nCaused by: "
        + TeamException.class.getName() + ": rank(s) [0] did not arrive";
    ExceptionFailure lost = new ExceptionFailure("java.lang.IllegalStateException", "barrier rank 1 failed",
        new StackTraceElement[0], trace, scala.Option.empty(), NO_ACCUMULATORS, ExceptionFailure.apply$default$7(),
        ExceptionFailure.apply$default$8());
    assertEquals("barrier rank 1 failed", FoldCpExecutorPlugin.teamFailure(lost));
    assertEquals("deep", FoldCpExecutorPlugin.teamFailure(failure(new RuntimeException(new RuntimeException(
        new TeamException("deep"))))));
    assertNull(FoldCpExecutorPlugin.teamFailure(failure(new RuntimeException("no team here"))));
  }

  @Test
  void aStickyCudaErrorRecyclesTheExecutorAndAPassingOneDoesNot() throws InterruptedException {
    BlockingQueue<Integer> exits = new LinkedBlockingQueue<>();
    FoldCpExecutorPlugin plugin = new FoldCpExecutorPlugin(ExecutorState::gpusOf, exits::add, Duration.ofMillis(50));
    plugin.init(FakePluginContext.withGpus("5", 1, "0"), DRIVER_SETTINGS);
    // out of memory and a bad argument leave the context usable: the executor stays
    plugin.onTaskFailed(failure(new GpuException("cuMemAlloc failed: out of memory", 2, "CUDA_ERROR_OUT_OF_MEMORY")));
    plugin.onTaskFailed(failure(new GpuException("foldcp_trimul_forward failed: cudaErrorInvalidValue", 5,
        "FOLDCP_ERR_CUDA")));
    plugin.onTaskFailed(failure(new IllegalStateException("cudaErrorIllegalAddress, said by no GPU call")));
    assertNull(exits.poll(300, TimeUnit.MILLISECONDS), "no sticky error yet");
    // an illegal address from the JNI library, wrapped by the route: the executor exits, once
    GpuException sticky = new GpuException("triangle kernel failed: cudaErrorIllegalAddress (an illegal memory access"
        + " was encountered) [trimul_api.cu:212]", 5, "FOLDCP_ERR_CUDA");
    plugin.onTaskFailed(failure(new RuntimeException("rank 0 failed", sticky)));
    plugin.onTaskFailed(failure(sticky));
    assertEquals(FoldCpExecutorPlugin.STICKY_CUDA_EXIT_CODE, exits.poll(10, TimeUnit.SECONDS));
    assertNull(exits.poll(500, TimeUnit.MILLISECONDS), "one exit");
    plugin.shutdown();
  }

  @Test
  void stickyCudaErrorsAreFoundByDriverStatusOrInTheTraceText() {
    assertEquals("CUDA_ERROR_LAUNCH_FAILED", FoldCpExecutorPlugin.stickyCudaFailure(failure(
        new GpuException("cuStreamSynchronize failed", 719, "CUDA_ERROR_LAUNCH_FAILED"))));
    String trace = "java.lang.IllegalStateException: rank 1 failed\nCaused by: " + GpuException.class.getName()
        + ": cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS";
    ExceptionFailure lost = new ExceptionFailure("java.lang.IllegalStateException", "rank 1 failed",
        new StackTraceElement[0], trace, scala.Option.empty(), NO_ACCUMULATORS, ExceptionFailure.apply$default$7(),
        ExceptionFailure.apply$default$8());
    assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", FoldCpExecutorPlugin.stickyCudaFailure(lost));
    assertNull(FoldCpExecutorPlugin.stickyCudaFailure(TaskResultLost$.MODULE$));
  }
}
