package org.foldcp.ops.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Random;
import org.foldcp.ops.gpu.HostCopy;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The native host copy moves exactly the bytes asked for, between heap arrays and raw memory, at
 * any offset and across its 4 MiB pinning slices, and HostCopy (the feed's copy) chose it where the
 * library loads.
 */
class NativeHostCopyTest {
  private static final int LEN = (9 << 20) + 4093; // two slices and an odd tail

  private static void assumeNative() {
    Assumptions.assumeTrue(NativeHostCopy.unavailableReason() == null,
        "libfoldcp_cpu.so did not load: " + NativeHostCopy.unavailableReason());
  }

  @Test
  void hostCopyChoseTheNativeCopyWhereTheLibraryLoads() {
    assumeNative();
    assertEquals(NativeHostCopy.kind(), HostCopy.describe());
  }

  @Test
  void arrayToRawToArrayAtOddOffsets() {
    assumeNative();
    byte[] src = new byte[LEN + 7];
    new Random(3).nextBytes(src);
    long raw = HostCopy.allocateRaw(LEN + 16);
    try {
      NativeHostCopy.copy(src, 7, null, raw + 3, LEN);
      byte[] back = new byte[LEN + 11];
      back[0] = 42;
      back[LEN + 10] = 43;
      NativeHostCopy.copy(null, raw + 3, back, 5, LEN);
      byte[] want = new byte[LEN];
      byte[] got = new byte[LEN];
      System.arraycopy(src, 7, want, 0, LEN);
      System.arraycopy(back, 5, got, 0, LEN);
      assertArrayEquals(want, got);
      assertEquals(42, back[0], "bytes before the range stay");
      assertEquals(43, back[LEN + 10], "bytes after the range stay");
    } finally {
      HostCopy.freeRaw(raw);
    }
  }

  @Test
  void shortArraysThroughHostCopyKeepEveryValue() {
    short[] src = new short[LEN / 2];
    Random r = new Random(5);
    for (int i = 0; i < src.length; i++) {
      src[i] = (short) r.nextInt();
    }
    long raw = HostCopy.allocateRaw(2L * src.length);
    try {
      HostCopy.shortsToAddress(src, raw);
      short[] back = new short[src.length];
      HostCopy.shortsFromAddress(raw, back);
      assertArrayEquals(src, back);
    } finally {
      HostCopy.freeRaw(raw);
    }
  }

  @Test
  void arrayToArrayAndZeroLength() {
    assumeNative();
    byte[] a = {1, 2, 3, 4, 5, 6};
    byte[] b = new byte[6];
    NativeHostCopy.copy(a, 1, b, 2, 0);
    assertArrayEquals(new byte[6], b);
    NativeHostCopy.copy(a, 1, b, 2, 4);
    assertArrayEquals(new byte[] {0, 0, 2, 3, 4, 5}, b);
    assertNull(NativeHostCopy.unavailableReason());
  }
}
