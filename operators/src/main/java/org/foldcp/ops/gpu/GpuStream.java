package org.foldcp.ops.gpu;

import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * A CUDA stream on a device (driver API). It is a blocking stream (CU_STREAM_DEFAULT), so work
 * on it is ordered after earlier work on the legacy default stream (the synchronous
 * cuMemsetD8/cuMemcpy calls of {@link DeviceBuffer}) and before later such work: a buffer
 * filled synchronously is ready for a kernel launched here. Its handle is what
 * {@code cudaStream_t} is in the CUDA runtime, so our kernels launch on it directly.
 *
 * <p>Ownership: created by {@link #create}, destroyed by {@link #close()} (after waiting for its
 * work); close it before its device.
 */
public final class GpuStream implements AutoCloseable {
  private final GpuDevice device;
  private final RawHandles.StreamHandle stream;
  private final TrackedHandle handle;

  private GpuStream(GpuDevice device, RawHandles.StreamHandle stream) {
    this.device = device;
    this.stream = stream;
    this.handle = new TrackedHandle("stream", 0, "device " + device.ordinal());
  }

  public static GpuStream create(GpuDevice device) {
    device.makeCurrent();
    RawHandles.StreamHandle s = new RawHandles.StreamHandle();
    CudaDriver.check(JCudaDriver.cuStreamCreate(s, CUstream_flags.CU_STREAM_DEFAULT), "cuStreamCreate");
    return new GpuStream(device, s);
  }

  public GpuDevice device() { return device; }

  /** The raw CUstream / cudaStream_t handle, for native calls. */
  public long handle() {
    ensureOpen();
    return stream.handle();
  }

  CUstream stream() {
    ensureOpen();
    return stream;
  }

  /** Waits for all work queued on this stream; an asynchronous kernel failure surfaces here. */
  public void synchronize() {
    ensureOpen();
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuStreamSynchronize(stream), "cuStreamSynchronize");
  }

  private void ensureOpen() {
    if (handle.isClosed()) {
      throw new IllegalStateException("GpuStream is closed");
    }
  }

  /** Waits for the stream's work, then destroys it; idempotent. */
  @Override
  public void close() {
    handle.free(device, () -> {
      int sync = JCudaDriver.cuStreamSynchronize(stream);
      CudaDriver.check(JCudaDriver.cuStreamDestroy(stream), "cuStreamDestroy");
      CudaDriver.check(sync, "cuStreamSynchronize (before cuStreamDestroy)");
    });
  }
}
