package org.foldcp.ops.gpu;

import java.util.Objects;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;
import org.foldcp.ops.InvalidInputException;

/**
 * Device memory from cuMemAlloc (driver API), freed by {@link #close()}. The address is at least
 * 256-byte aligned (the driver aligns to 512 bytes), as our kernels require for the workspace.
 *
 * <p>Copies: the synchronous ones ({@link #copyFromHost}, {@link #copyToHost}, {@link #fill})
 * return when the data has arrived and are ordered with every blocking stream, such as
 * {@link GpuStream}; the {@code Async} ones queue on a stream and need pinned memory
 * ({@link PinnedHostBuffer}) to overlap. Offsets and lengths are checked against both buffers.
 *
 * <p>Ownership: the buffer owns its memory; close it before its {@link GpuDevice}. Every open
 * buffer is listed by {@link MemoryLeakCheck} with its allocation site.
 */
public final class DeviceBuffer implements AutoCloseable {
  private final GpuDevice device;
  private final RawHandles.DevicePtr ptr;
  private final long bytes;
  private final String purpose;
  private final TrackedHandle handle;

  private DeviceBuffer(GpuDevice device, RawHandles.DevicePtr ptr, long bytes, String purpose) {
    this.device = device;
    this.ptr = ptr;
    this.bytes = bytes;
    this.purpose = purpose;
    this.handle = new TrackedHandle("device buffer", bytes, purpose + " on device " + device.ordinal());
  }

  /** Allocates {@code bytes} (>= 1) of device memory; {@code purpose} names it in errors and leak reports. */
  public static DeviceBuffer allocate(GpuDevice device, long bytes, String purpose) {
    InvalidInputException.require(bytes >= 1, "device buffer size", bytes, "must be >= 1 byte");
    device.makeCurrent();
    RawHandles.DevicePtr p = new RawHandles.DevicePtr();
    CudaDriver.check(JCudaDriver.cuMemAlloc(p, bytes),
        "cuMemAlloc(" + bytes + " bytes for " + purpose + " on device " + device.ordinal() + ")");
    return new DeviceBuffer(device, p, bytes, purpose);
  }

  public static DeviceBuffer allocate(GpuDevice device, long bytes) {
    return allocate(device, bytes, "device buffer");
  }

  public GpuDevice device() { return device; }

  public long bytes() { return bytes; }

  /** The raw device address (a {@code void*} for native calls). */
  public long address() {
    ensureOpen();
    return ptr.address();
  }

  CUdeviceptr pointer(long offset) {
    ensureOpen();
    return offset == 0 ? ptr : ptr.withByteOffset(offset);
  }

  /** Sets every byte to {@code value}; returns when done. */
  public void fill(byte value) {
    ensureOpen();
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemsetD8(ptr, value, bytes), "cuMemsetD8(" + bytes + " bytes)");
    CudaDriver.check(JCudaDriver.cuCtxSynchronize(), "cuCtxSynchronize (after cuMemsetD8)");
  }

  /** Copies {@code len} bytes of {@code src} from {@code srcOffset} to this buffer at {@code dstOffset}. */
  public void copyFromHost(long dstOffset, byte[] src, int srcOffset, int len) {
    Objects.checkFromIndexSize(srcOffset, len, src.length);
    checkRange(dstOffset, len);
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemcpyHtoD(pointer(dstOffset), Pointer.to(src).withByteOffset(srcOffset), len),
        "cuMemcpyHtoD(" + len + " bytes)");
  }

  /** Copies {@code len} bytes from this buffer at {@code srcOffset} into {@code dst} at {@code dstOffset}. */
  public void copyToHost(long srcOffset, byte[] dst, int dstOffset, int len) {
    Objects.checkFromIndexSize(dstOffset, len, dst.length);
    checkRange(srcOffset, len);
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemcpyDtoH(Pointer.to(dst).withByteOffset(dstOffset), pointer(srcOffset), len),
        "cuMemcpyDtoH(" + len + " bytes)");
  }

  /** Copies from pinned memory; returns when done. */
  public void copyFromHost(long dstOffset, PinnedHostBuffer src, long srcOffset, long len) {
    src.checkRange(srcOffset, len);
    checkRange(dstOffset, len);
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemcpyHtoD(pointer(dstOffset), src.pointer(srcOffset), len),
        "cuMemcpyHtoD(" + len + " bytes, pinned)");
  }

  /** Copies to pinned memory; returns when done. */
  public void copyToHost(long srcOffset, PinnedHostBuffer dst, long dstOffset, long len) {
    dst.checkRange(dstOffset, len);
    checkRange(srcOffset, len);
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemcpyDtoH(dst.pointer(dstOffset), pointer(srcOffset), len),
        "cuMemcpyDtoH(" + len + " bytes, pinned)");
  }

  /** Queues a copy from pinned memory on {@code stream}; {@code src} must stay untouched until it ran. */
  public void copyFromHostAsync(long dstOffset, PinnedHostBuffer src, long srcOffset, long len, GpuStream stream) {
    src.checkRange(srcOffset, len);
    checkRange(dstOffset, len);
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemcpyHtoDAsync(pointer(dstOffset), src.pointer(srcOffset), len, stream.stream()),
        "cuMemcpyHtoDAsync(" + len + " bytes)");
  }

  /**
   * Queues a copy from the raw address of page-locked host memory (a span of the feed's pinned
   * cache) on {@code stream}; the memory must stay allocated and untouched until the copy ran.
   */
  public void copyFromPinnedAsync(long dstOffset, long srcAddress, long len, GpuStream stream) {
    checkRange(dstOffset, len);
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemcpyHtoDAsync(pointer(dstOffset), new RawHandles.HostPtr(srcAddress), len,
        stream.stream()), "cuMemcpyHtoDAsync(" + len + " bytes, from the pinned cache)");
  }

  /** Queues a copy to pinned memory on {@code stream}; read {@code dst} only after it ran. */
  public void copyToHostAsync(long srcOffset, PinnedHostBuffer dst, long dstOffset, long len, GpuStream stream) {
    dst.checkRange(dstOffset, len);
    checkRange(srcOffset, len);
    device.makeCurrent();
    CudaDriver.check(JCudaDriver.cuMemcpyDtoHAsync(dst.pointer(dstOffset), pointer(srcOffset), len, stream.stream()),
        "cuMemcpyDtoHAsync(" + len + " bytes)");
  }

  void checkRange(long offset, long len) {
    ensureOpen();
    if (offset < 0 || len < 0 || offset > bytes - len) {
      throw new IndexOutOfBoundsException("range [" + offset + ", " + offset + " + " + len
          + ") is outside the device buffer of " + bytes + " bytes (" + purpose + ")");
    }
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  private void ensureOpen() {
    if (handle.isClosed()) {
      throw new IllegalStateException("DeviceBuffer (" + purpose + ", " + bytes + " bytes) is closed");
    }
  }

  /** Frees the memory (cuMemFree waits for work still using it); idempotent. */
  @Override
  public void close() {
    handle.free(device,
        () -> CudaDriver.check(JCudaDriver.cuMemFree(ptr), "cuMemFree(" + bytes + " bytes, " + purpose + ")"));
  }

  @Override
  public String toString() {
    return "DeviceBuffer(" + purpose + ", " + bytes + " bytes" + (isClosed() ? ", closed" : "") + ")";
  }
}
