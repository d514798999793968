package org.foldcp.ops.gpu;

import java.util.Locale;

/**
 * The device buffers a {@link GpuTriMul} keeps for one (B, N, D) and hidden width H between
 * forwards: the pair tensor (computed in place), the mask (only once some input had a masked
 * position) and the workspace, which holds a, b and z of H channels. The channel group of stages
 * 1-2 is chosen here, once per shape: H when the whole workspace fits beside the tensor, else the
 * largest group that does (same result, bit for bit).
 */
final class ResidentBuffers implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ResidentBuffers.class.getName());

  final int b;
  final int n;
  final int d;
  /** The layers' hidden width: the channels of a, b and z in the workspace. */
  final int h;
  /** Channels per group of stages 1-2 (h: one group). */
  final long group;
  private final GpuDevice device;
  private DeviceBuffer x;
  private DeviceBuffer mask;
  private DeviceBuffer ws;

  private ResidentBuffers(GpuDevice device, int b, int n, int d, int h, long group) {
    this.device = device;
    this.b = b;
    this.n = n;
    this.d = d;
    this.h = h;
    this.group = group;
  }

  /**
   * Allocates the buffers of (b, n, d) for layers of hidden width h within {@code memoryBudget}
   * bytes (0: whatever is free), in channel groups where the whole workspace does not fit.
   *
   * @throws GpuException when even groups of 8 channels do not fit, naming every size
   */
  static ResidentBuffers allocate(GpuDevice device, int b, int n, int d, int h, boolean masked, long memoryBudget) {
    long xBytes = (long) b * n * n * d * 2;
    long maskBytes = masked ? (long) b * n * n : 0;
    long wsBytes = NativeTriMul.workspaceSize(b, n, h);
    GpuDevice.MemInfo mem = device.memInfo();
    long budget = memoryBudget > 0 ? Math.min(memoryBudget, mem.free()) : mem.free();
    String shape = "(B, N, D) = (" + b + ", " + n + ", " + d + ")" + (h == d ? "" : " and H = " + h);
    long group = h;
    if (xBytes + maskBytes + wsBytes > budget) {
      // The intermediates of all channels do not fit: the workspace holds a and b for one group of
      // channels and z for all of them.
      try {
        group = NativeTriMul.channelGroup(b, n, h, Math.max(0, budget - xBytes - maskBytes));
      } catch (GpuException e) {
        throw new GpuException(shape + " does not fit on device "
            + device.ordinal() + " (" + device.name() + "): pair tensor " + mib(xBytes) + ", mask " + mib(maskBytes)
            + ", and a workspace of at least " + mib(NativeTriMul.workspaceSizeGroup(b, n, h, 8))
            + " (channel groups of 8), with " + mib(budget) + " available (" + mib(mem.free()) + " free of "
            + mib(mem.total()) + (memoryBudget > 0 ? ", budget " + mib(memoryBudget) : "") + ")");
      }
      long full = wsBytes;
      wsBytes = NativeTriMul.workspaceSizeGroup(b, n, h, group);
      long g = group;
      long grouped = wsBytes;
      LOG.log(System.Logger.Level.INFO, () -> shape + ": the whole workspace ("
          + mib(full) + ") does not fit in " + mib(budget) + " with the pair tensor; stages 1-2 run in channel groups of "
          + g + " (workspace " + mib(grouped) + ")");
    }
    ResidentBuffers r = new ResidentBuffers(device, b, n, d, h, group);
    try {
      r.x = DeviceBuffer.allocate(device, xBytes, "pair tensor (B, N, N, D) bf16 for (" + b + ", " + n + ", " + d + ")");
      r.ws = DeviceBuffer.allocate(device, wsBytes, "workspace for " + shape);
      if (masked) {
        r.ensureMask();
      }
    } catch (RuntimeException e) {
      Closeables.closeAll(e, r);
      throw e;
    }
    return r;
  }

  boolean matches(int b2, int n2, int d2, int h2) {
    return b == b2 && n == n2 && d == d2 && h == h2;
  }

  /** The mask buffer, allocated at the first masked input of this shape. */
  DeviceBuffer ensureMask() {
    if (mask == null) {
      mask = DeviceBuffer.allocate(device, (long) b * n * n, "mask (B, N, N) uint8");
    }
    return mask;
  }

  DeviceBuffer x() {
    return x;
  }

  DeviceBuffer workspace() {
    return ws;
  }

  private static String mib(long bytes) {
    return String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
  }

  @Override
  public void close() {
    RuntimeException e = Closeables.closeAll(null, ws, mask, x);
    ws = null;
    mask = null;
    x = null;
    if (e != null) {
      throw e;
    }
  }
}
