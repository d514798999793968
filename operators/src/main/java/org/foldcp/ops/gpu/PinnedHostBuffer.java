package org.foldcp.ops.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.Pointer;
import jcuda.driver.JCudaDriver;
import org.foldcp.ops.InvalidInputException;

/**
 * Page-locked host memory from cuMemAllocHost, seen from Java as a direct {@link ByteBuffer}
 * (little-endian, the byte order of bf16 on the device), freed by {@link #close()}. Used to stage
 * bf16 rows and mask rows for asynchronous copies: Java fills it with bulk puts
 * ({@code asShortBuffer().put(short[])}), the DMA engine reads it directly.
 *
 * <p>The ByteBuffer is a view of native memory that the JVM does not own: JCuda makes it with
 * JNI's NewDirectByteBuffer when it allocates, so no Cleaner frees it, and after {@link #close()}
 * any access through a view obtained earlier would read freed memory (a crash, not an exception).
 * Views are therefore only handed out by {@link #buffer()}, which refuses once closed; callers
 * must not keep them past close. A buffer above 2 GiB - 1 bytes (a ByteBuffer's limit) is malloc'd
 * memory page-locked by cuMemHostRegister and has no view: it is reached through {@link #address()}
 * and the device copies only (the GPU feed's pool).
 */
public final class PinnedHostBuffer implements AutoCloseable {
  private final GpuDevice device;
  private final RawHandles.HostPtr pointer;
  private final ByteBuffer buffer;
  private final long bytes;
  /** The malloc'd block a registered buffer lives in (0 for cuMemAllocHost memory). */
  private final long registeredFrom;
  private final TrackedHandle handle;

  private PinnedHostBuffer(GpuDevice device, RawHandles.HostPtr pointer, ByteBuffer buffer, long bytes,
                           long registeredFrom, String purpose) {
    this.device = device;
    this.pointer = pointer;
    this.buffer = buffer;
    this.bytes = bytes;
    this.registeredFrom = registeredFrom;
    this.handle = new TrackedHandle("pinned host buffer", bytes, purpose);
  }

  public static PinnedHostBuffer allocate(GpuDevice device, long bytes, String purpose) {
    InvalidInputException.require(bytes >= 1, "pinned buffer size", bytes, "must be >= 1 byte");
    device.makeCurrent();
    if (bytes > Integer.MAX_VALUE) {
      return registered(device, bytes, purpose);
    }
    RawHandles.HostPtr p = new RawHandles.HostPtr();
    CudaDriver.check(JCudaDriver.cuMemAllocHost(p, bytes), "cuMemAllocHost(" + bytes + " bytes for " + purpose + ")");
    ByteBuffer bb = p.getByteBuffer(0, bytes);
    if (bb == null) {
      JCudaDriver.cuMemFreeHost(p);
      throw new GpuException("cuMemAllocHost(" + bytes + " bytes) returned memory that JCuda gives no ByteBuffer for");
    }
    bb = bb.slice().order(ByteOrder.LITTLE_ENDIAN);
    return new PinnedHostBuffer(device, p, bb, bytes, 0, purpose);
  }

  /**
   * Above 2 GiB - 1: malloc'd memory page-locked with cuMemHostRegister. cuMemAllocHost cannot be
   * used there: JCuda makes a ByteBuffer of every host allocation, whose int capacity wraps (an
   * exception after the allocation, or a view of the wrong size).
   */
  private static PinnedHostBuffer registered(GpuDevice device, long bytes, String purpose) {
    long page = 4096;
    long raw = HostCopy.allocateRaw(bytes + page);
    if (raw == 0) {
      throw new GpuException("no " + (bytes + page) + " bytes of host memory for " + purpose + " (malloc failed)");
    }
    long start = (raw + page - 1) & ~(page - 1);
    RawHandles.HostPtr p = new RawHandles.HostPtr(start);
    int rc = JCudaDriver.cuMemHostRegister(p, bytes, 0);
    if (rc != 0) {
      HostCopy.freeRaw(raw);
      CudaDriver.check(rc, "cuMemHostRegister(" + bytes + " bytes for " + purpose + ")");
    }
    return new PinnedHostBuffer(device, p, null, bytes, raw, purpose);
  }

  public static PinnedHostBuffer allocate(GpuDevice device, long bytes) {
    return allocate(device, bytes, "pinned host buffer");
  }

  public long bytes() { return bytes; }

  /**
   * The raw host address of the first byte, for bulk copies ({@link HostCopy}); valid only until
   * {@link #close()}, like the views of {@link #buffer()}.
   */
  public long address() {
    ensureOpen();
    return pointer.address();
  }

  /**
   * A fresh little-endian view of the whole buffer (position 0, limit = bytes); valid only until
   * {@link #close()}. None for a buffer above 2 GiB - 1 bytes.
   */
  public ByteBuffer buffer() {
    ensureOpen();
    if (buffer == null) {
      throw new IllegalStateException("a pinned buffer of " + bytes + " bytes has no ByteBuffer view (above 2^31 - 1"
          + " bytes): use address()");
    }
    return buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
  }

  Pointer pointer(long offset) {
    ensureOpen();
    return offset == 0 ? pointer : pointer.withByteOffset(offset);
  }

  void checkRange(long offset, long len) {
    ensureOpen();
    if (offset < 0 || len < 0 || offset > bytes - len) {
      throw new IndexOutOfBoundsException("range [" + offset + ", " + offset + " + " + len
          + ") is outside the pinned buffer of " + bytes + " bytes");
    }
  }

  public boolean isClosed() {
    return handle.isClosed();
  }

  private void ensureOpen() {
    if (handle.isClosed()) {
      throw new IllegalStateException("PinnedHostBuffer (" + bytes + " bytes) is closed");
    }
  }

  /** Frees the pinned memory; idempotent. Wait for copies that use it first. */
  @Override
  public void close() {
    handle.free(device, () -> {
      if (registeredFrom == 0) {
        CudaDriver.check(JCudaDriver.cuMemFreeHost(pointer), "cuMemFreeHost(" + bytes + " bytes)");
        return;
      }
      try {
        CudaDriver.check(JCudaDriver.cuMemHostUnregister(pointer), "cuMemHostUnregister(" + bytes + " bytes)");
      } finally {
        HostCopy.freeRaw(registeredFrom);
      }
    });
  }
}
