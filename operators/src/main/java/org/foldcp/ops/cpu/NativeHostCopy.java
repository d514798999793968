package org.foldcp.ops.cpu;

/**
 * Bulk host copies through libfoldcp_cpu.so: glibc's memcpy, which moves large blocks at about
 * twice the rate of {@code Unsafe.copyMemory} (8 bytes per instruction) on the H200 hosts: 10.6
 * against 5.4 GB/s on one thread, 65 against 44 GB/s on twelve (bench/results, HostCopyFloor).
 * The GPU feed copies every byte of every complex this way (org.foldcp.ops.gpu.HostCopy).
 */
public final class NativeHostCopy {
  private NativeHostCopy() {}

  /** Null where the library is loaded (the copy is native), else why not. */
  public static String unavailableReason() {
    return NativeKernels.unavailableReason();
  }

  /**
   * Copies {@code len} bytes from (src, srcOffset) to (dst, dstOffset). A null base means its
   * offset is a raw address; an array base (any primitive array) takes a byte index into the array,
   * counted from element 0. The caller guarantees both ranges are valid: nothing is checked here.
   * Only when {@link #unavailableReason()} is null.
   */
  public static void copy(Object src, long srcOffset, Object dst, long dstOffset, long len) {
    nCopy(src, srcOffset, dst, dstOffset, len);
  }

  private static native void nCopy(Object src, long srcOffset, Object dst, long dstOffset, long len);
}
