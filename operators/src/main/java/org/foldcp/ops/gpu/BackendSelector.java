package org.foldcp.ops.gpu;

import org.foldcp.ops.TriMulBackend;
import org.foldcp.ops.cpu.CpuTriMul;

/**
 * Picks the backend for "auto" (DESIGN.md section 3): the GPU backend where it can run, else the
 * CPU backend with a warning that says why (no driver, no GPU, wrong architecture, no native
 * library in this build). The choice is logged either way (System.Logger, i.e.
 * java.util.logging unless the application routes it elsewhere).
 */
public final class BackendSelector {
  private static final System.Logger LOG = System.getLogger(BackendSelector.class.getName());

  private BackendSelector() {}

  /** The GPU backend on device 0 if available, else {@code new CpuTriMul(cpuThreads)}. */
  public static TriMulBackend auto(int cpuThreads) {
    return auto(cpuThreads, 0);
  }

  /** The GPU backend on device {@code deviceOrdinal} if available, else {@code new CpuTriMul(cpuThreads)}. */
  public static TriMulBackend auto(int cpuThreads, int deviceOrdinal) {
    String why = GpuTriMul.availability(deviceOrdinal);
    if (why == null) {
      try {
        GpuTriMul gpu = new GpuTriMul(deviceOrdinal);
        LOG.log(System.Logger.Level.INFO, "fold-cp backend: gpu on " + gpu.device());
        return gpu;
      } catch (GpuException e) {
        why = e.getMessage();
      }
    }
    LOG.log(System.Logger.Level.WARNING, "fold-cp backend: falling back to cpu (" + cpuThreads + " threads): " + why);
    return new CpuTriMul(cpuThreads);
  }
}
