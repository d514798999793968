package org.foldcp.ops.gpu;

import java.nio.charset.StandardCharsets;
import jcuda.driver.CUcontext;
import jcuda.driver.CUctx_flags;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.JCudaDriver;
import org.foldcp.ops.InvalidInputException;

/**
 * One CUDA device with its primary context retained (driver API through JCuda).
 *
 * <p>The primary context is the one the CUDA runtime uses too (our kernels' static runtime
 * included): a context made current here is the runtime's current device, so memory from
 * {@link DeviceBuffer} and streams from {@link GpuStream} are valid for the kernels. Contexts are
 * current per thread, so every operation that calls into CUDA makes this context current on the
 * calling thread first ({@link #makeCurrent()}); a {@code GpuDevice} can be used from any thread.
 *
 * <p>Ownership: {@link #open} retains the primary context, {@link #close()} releases it. Close
 * every buffer, stream and layer made on the device before the device itself.
 */
public final class GpuDevice implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(GpuDevice.class.getName());
  private final int ordinal;
  private final CUdevice device;
  private final CUcontext context;
  private final String name;
  private final int major;
  private final int minor;
  private final TrackedHandle handle;

  /** What the driver says about a device, read without creating a context. */
  public static final class Info {
    private final int ordinal;
    private final String name;
    private final int major;
    private final int minor;
    private final long totalBytes;

    Info(int ordinal, String name, int major, int minor, long totalBytes) {
      this.ordinal = ordinal;
      this.name = name;
      this.major = major;
      this.minor = minor;
      this.totalBytes = totalBytes;
    }

    public int ordinal() { return ordinal; }

    public String name() { return name; }

    public int major() { return major; }

    public int minor() { return minor; }

    public long totalBytes() { return totalBytes; }

    /** "9.0" */
    public String computeCapability() { return major + "." + minor; }

    @Override
    public String toString() {
      return "device " + ordinal + " (" + name + ", compute capability " + computeCapability() + ", "
          + (totalBytes >> 20) + " MiB)";
    }
  }

  /** Free and total device memory, as cuMemGetInfo reports them. */
  public static final class MemInfo {
    private final long free;
    private final long total;

    MemInfo(long free, long total) {
      this.free = free;
      this.total = total;
    }

    public long free() { return free; }

    public long total() { return total; }

    @Override
    public String toString() {
      return (free >> 20) + " MiB free of " + (total >> 20) + " MiB";
    }
  }

  private GpuDevice(int ordinal, CUdevice device, CUcontext context, Info info) {
    this.ordinal = ordinal;
    this.device = device;
    this.context = context;
    this.name = info.name();
    this.major = info.major();
    this.minor = info.minor();
    this.handle = new TrackedHandle("primary context", 0, "device " + ordinal + " (" + name + ")");
  }

  /** Number of CUDA devices the driver sees (after CUDA_VISIBLE_DEVICES). */
  public static int deviceCount() {
    CudaDriver.init();
    int[] count = new int[1];
    CudaDriver.check(JCudaDriver.cuDeviceGetCount(count), "cuDeviceGetCount");
    return count[0];
  }

  /** Name, compute capability and memory of device {@code ordinal}, without a context. */
  public static Info info(int ordinal) {
    CUdevice dev = deviceHandle(ordinal);
    byte[] raw = new byte[256];
    CudaDriver.check(JCudaDriver.cuDeviceGetName(raw, raw.length, dev), "cuDeviceGetName(" + ordinal + ")");
    int len = 0;
    while (len < raw.length && raw[len] != 0) {
      len++;
    }
    String name = new String(raw, 0, len, StandardCharsets.UTF_8);
    int[] v = new int[1];
    CudaDriver.check(JCudaDriver.cuDeviceGetAttribute(v,
        CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute(major)");
    int major = v[0];
    CudaDriver.check(JCudaDriver.cuDeviceGetAttribute(v,
        CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute(minor)");
    int minor = v[0];
    long[] total = new long[1];
    CudaDriver.check(JCudaDriver.cuDeviceTotalMem(total, dev), "cuDeviceTotalMem(" + ordinal + ")");
    return new Info(ordinal, name, major, minor, total[0]);
  }

  private static CUdevice deviceHandle(int ordinal) {
    int count = deviceCount();
    InvalidInputException.require(ordinal >= 0 && ordinal < count, "device ordinal", ordinal,
        "must lie in [0, " + count + "): the CUDA driver sees " + count + " device(s)"
            + visibleDevicesNote());
    CUdevice dev = new CUdevice();
    CudaDriver.check(JCudaDriver.cuDeviceGet(dev, ordinal), "cuDeviceGet(" + ordinal + ")");
    return dev;
  }

  static String visibleDevicesNote() {
    String v = System.getenv("CUDA_VISIBLE_DEVICES");
    return v == null ? "" : " (CUDA_VISIBLE_DEVICES=" + v + ")";
  }

  /** Retains device {@code ordinal}'s primary context (any architecture; the caller checks). */
  public static GpuDevice open(int ordinal) {
    Info info = info(ordinal);
    CUdevice dev = new CUdevice();
    CudaDriver.check(JCudaDriver.cuDeviceGet(dev, ordinal), "cuDeviceGet(" + ordinal + ")");
    blockingSync(dev, ordinal);
    CUcontext ctx = new CUcontext();
    CudaDriver.check(JCudaDriver.cuDevicePrimaryCtxRetain(ctx, dev), "cuDevicePrimaryCtxRetain(" + ordinal + ")");
    GpuDevice d = new GpuDevice(ordinal, dev, ctx, info);
    try {
      d.makeCurrent();
    } catch (GpuException e) {
      d.close();
      throw e;
    }
    return d;
  }

  /**
   * Makes host threads that wait for the device sleep instead of spin, before the primary context
   * first becomes active (the flag is fixed from then on). The driver's default spins while there
   * are fewer contexts than cores, and an executor's task threads waiting for their downloads then
   * take the cores its copy threads need to fill the pinned pool. Once the context is active (a
   * library made it first) its flags stay as they are; that is logged, not an error.
   */
  private static void blockingSync(CUdevice dev, int ordinal) {
    int[] flags = new int[1];
    int[] active = new int[1];
    CudaDriver.check(JCudaDriver.cuDevicePrimaryCtxGetState(dev, flags, active),
        "cuDevicePrimaryCtxGetState(" + ordinal + ")");
    int want = CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC;
    if ((flags[0] & CUctx_flags.CU_CTX_SCHED_MASK) == want) {
      return;
    }
    if (active[0] != 0) {
      LOG.log(System.Logger.Level.INFO, () -> "fold-cp: device " + ordinal + "'s primary context was already active"
          + " with flags 0x" + Integer.toHexString(flags[0]) + ": waiting host threads keep the driver's scheduling");
      return;
    }
    CudaDriver.check(JCudaDriver.cuDevicePrimaryCtxSetFlags(dev, (flags[0] & ~CUctx_flags.CU_CTX_SCHED_MASK) | want),
        "cuDevicePrimaryCtxSetFlags(" + ordinal + ", CU_CTX_SCHED_BLOCKING_SYNC)");
  }

  public int ordinal() { return ordinal; }

  public String name() { return name; }

  public int major() { return major; }

  public int minor() { return minor; }

  /** "9.0" */
  public String computeCapability() { return major + "." + minor; }

  /** Makes the primary context current on the calling thread (needed before any CUDA work). */
  public void makeCurrent() {
    ensureOpen();
    setCurrent();
  }

  /** Like makeCurrent, also after close: lets late frees of this device's memory still succeed. */
  void setCurrent() {
    CudaDriver.check(JCudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent(primary context of device " + ordinal + ")");
  }

  /** Free and total memory of the device. */
  public MemInfo memInfo() {
    makeCurrent();
    long[] free = new long[1];
    long[] total = new long[1];
    CudaDriver.check(JCudaDriver.cuMemGetInfo(free, total), "cuMemGetInfo");
    return new MemInfo(free[0], total[0]);
  }

  /** Waits for all work on the device's primary context (every stream). */
  public void synchronize() {
    makeCurrent();
    CudaDriver.check(JCudaDriver.cuCtxSynchronize(), "cuCtxSynchronize");
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  void ensureOpen() {
    if (handle.isClosed()) {
      throw new IllegalStateException("GpuDevice " + ordinal + " (" + name + ") is closed");
    }
  }

  /** Releases the primary context retain; idempotent. */
  @Override
  public void close() {
    handle.free(() -> CudaDriver.check(JCudaDriver.cuDevicePrimaryCtxRelease(device),
        "cuDevicePrimaryCtxRelease(" + ordinal + ")"));
  }

  @Override
  public String toString() {
    return "GpuDevice(" + ordinal + ", " + name + ", sm_" + major + minor + (isClosed() ? ", closed" : "") + ")";
  }
}
