package org.foldcp.ops.cpu;

/**
 * Bulk host copies through libfoldcp_cpu.so: blocks of 256 KiB and more with non-temporal stores
 * where the CPU has AVX2 (the destination's cache lines are not read first: a third less memory
 * traffic), glibc's memcpy below that or without AVX2. On the H200 host {@code Unsafe.copyMemory}
 * (8 bytes per instruction, through the cache) copies 5.4 GB/s on one thread and memcpy of 4 MiB
 * blocks 6.1, where C memcpy of 256 MiB (non-temporal stores) reaches 10.3 (HostCopyFloor, bench/host_memcpy.c).
 * The GPU feed copies every byte of every complex this way (org.foldcp.ops.gpu.HostCopy).
 */
public final class NativeHostCopy {
  private NativeHostCopy() {}

  /** Null where the library is loaded (the copy is native), else why not. */
  public static String unavailableReason() {
    return NativeKernels.unavailableReason();
  }

  /** How large blocks are copied on this CPU; only when {@link #unavailableReason()} is null. */
  public static String kind() {
    return nKind();
  }

  /**
   * Copies {@code len} bytes from (src, srcOffset) to (dst, dstOffset). A null base means its
   * offset is a raw address; an array base (any primitive array) takes a byte index into the array,
   * counted from element 0. The caller guarantees both ranges are valid and do not overlap (memcpy):
   * nothing is checked here.
   * Only when {@link #unavailableReason()} is null.
   */
  public static void copy(Object src, long srcOffset, Object dst, long dstOffset, long len) {
    nCopy(src, srcOffset, dst, dstOffset, len);
  }

  private static native String nKind();

  private static native void nCopy(Object src, long srcOffset, Object dst, long dstOffset, long len);
}
