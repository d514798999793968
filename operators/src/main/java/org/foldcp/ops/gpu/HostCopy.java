package org.foldcp.ops.gpu;

import java.lang.reflect.Field;
import org.foldcp.ops.cpu.NativeHostCopy;
import sun.misc.Unsafe;

/**
 * Bulk copies between Java heap arrays (or any base object and offset, as Spark's UnsafeRow
 * addresses its bytes) and raw host memory (pinned buffers), at memcpy speed: the host data path
 * of the GPU feed moves every byte this way, once per direction, never element by element.
 *
 * <p>The copy is chosen once per JVM and logged: libfoldcp_cpu.so's ({@link NativeHostCopy}:
 * non-temporal stores for large blocks) where that library loads; Unsafe otherwise (module
 * jdk.unsupported, which Spark itself needs: the only copy in Java 17 from an array straight into
 * native memory without a direct ByteBuffer per call). Either runs in slices of {@link #SLICE}
 * bytes, so that a long copy lets the JVM reach a safepoint (Unsafe) or collect garbage (the
 * native copy pins an array per slice) between slices.
 */
public final class HostCopy {
  /** Bytes per copyMemory call. */
  static final long SLICE = 4L << 20;
  private static final Unsafe UNSAFE = unsafe();
  /** Offset of element 0 of a byte[] from the array object's base, for {@link #copy}. */
  public static final long BYTE_ARRAY_OFFSET = UNSAFE.arrayBaseOffset(byte[].class);
  /** Offset of element 0 of a short[] (bf16 rows of a PairTensor, little-endian like the device's). */
  static final long SHORT_ARRAY_OFFSET = UNSAFE.arrayBaseOffset(short[].class);
  /** True where copies go through libfoldcp_cpu.so ({@link NativeHostCopy}), decided once. */
  private static final boolean NATIVE = chooseNative();

  private HostCopy() {}

  /** {@code bytes} of plain native memory (malloc), uninitialised; 0 when there is none. */
  public static long allocateRaw(long bytes) {
    try {
      return UNSAFE.allocateMemory(bytes);
    } catch (OutOfMemoryError e) {
      return 0;
    }
  }

  /** Frees memory of {@link #allocateRaw}. */
  public static void freeRaw(long address) {
    UNSAFE.freeMemory(address);
  }

  /** How host copies run in this JVM (logged once, where the choice is made). */
  public static String describe() {
    return NATIVE ? NativeHostCopy.kind()
        : "Unsafe.copyMemory (libfoldcp_cpu.so did not load: " + NativeHostCopy.unavailableReason() + ")";
  }

  private static boolean chooseNative() {
    boolean yes = NativeHostCopy.unavailableReason() == null;
    System.Logger log = System.getLogger(HostCopy.class.getName());
    log.log(yes ? System.Logger.Level.INFO : System.Logger.Level.WARNING,
        () -> "fold-cp host copies: " + (yes ? NativeHostCopy.kind()
            : "Unsafe.copyMemory, about half memcpy's rate for large blocks (libfoldcp_cpu.so did not load: "
                + NativeHostCopy.unavailableReason() + ")"));
    return yes;
  }

  private static boolean isPrimitiveArrayOrNull(Object base) {
    return base == null || (base.getClass().isArray() && base.getClass().getComponentType().isPrimitive());
  }

  /** The Unsafe offset of element 0 of the array {@code base}, 0 for null (a raw address). */
  private static long arrayBase(Object base) {
    return base == null ? 0 : UNSAFE.arrayBaseOffset(base.getClass());
  }

  private static Unsafe unsafe() {
    try {
      Field f = Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      return (Unsafe) f.get(null);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError("sun.misc.Unsafe is not reachable (module jdk.unsupported): " + e);
    }
  }

  /**
   * Copies {@code len} bytes from (srcBase, srcOffset) to (dstBase, dstOffset): a base of null
   * means the offset is a raw address; a byte[] base takes {@link #BYTE_ARRAY_OFFSET} + index.
   * The caller guarantees both ranges are valid and do not overlap: nothing is checked here.
   */
  public static void copy(Object srcBase, long srcOffset, Object dstBase, long dstOffset, long len) {
    if (NATIVE && isPrimitiveArrayOrNull(srcBase) && isPrimitiveArrayOrNull(dstBase)) {
      NativeHostCopy.copy(srcBase, srcOffset - arrayBase(srcBase), dstBase, dstOffset - arrayBase(dstBase), len);
      return;
    }
    while (len > 0) {
      long n = Math.min(len, SLICE);
      UNSAFE.copyMemory(srcBase, srcOffset, dstBase, dstOffset, n);
      srcOffset += n;
      dstOffset += n;
      len -= n;
    }
  }

  /** Copies {@code len} bytes of {@code src} from index {@code from} to the raw address {@code dst}. */
  public static void toAddress(byte[] src, int from, long dst, long len) {
    checkRange(from, len, src.length, "a byte[" + src.length + "]");
    copy(src, BYTE_ARRAY_OFFSET + from, null, dst, len);
  }

  /** Copies all of {@code src} (bf16 values, 2 bytes each, in the host's little-endian order) to {@code dst}. */
  public static void shortsToAddress(short[] src, long dst) {
    copy(src, SHORT_ARRAY_OFFSET, null, dst, 2L * src.length);
  }

  /**
   * Copies bytes [fromByte, fromByte + len) of {@code src} (bf16 values, 2 bytes each, little-endian)
   * to the raw address {@code dst}.
   */
  public static void shortsToAddress(short[] src, long fromByte, long dst, long len) {
    checkRange(fromByte, len, 2L * src.length, "a short[" + src.length + "]");
    copy(src, SHORT_ARRAY_OFFSET + fromByte, null, dst, len);
  }

  /** Copies {@code len} bytes from the raw address {@code src} into {@code dst} from its byte {@code toByte}. */
  public static void shortsFromAddress(long src, short[] dst, long toByte, long len) {
    checkRange(toByte, len, 2L * dst.length, "a short[" + dst.length + "]");
    copy(null, src, dst, SHORT_ARRAY_OFFSET + toByte, len);
  }

  /** Sets {@code len} bytes from the raw address {@code dst} to {@code value}. */
  public static void fill(long dst, long len, byte value) {
    UNSAFE.setMemory(dst, len, value);
  }

  /** Fills all of {@code dst} from the 2 * dst.length bytes at the raw address {@code src}. */
  public static void shortsFromAddress(long src, short[] dst) {
    copy(null, src, dst, SHORT_ARRAY_OFFSET, 2L * dst.length);
  }

  /** Copies {@code len} bytes from the raw address {@code src} into {@code dst} from index {@code to}. */
  public static void fromAddress(long src, byte[] dst, int to, long len) {
    checkRange(to, len, dst.length, "a byte[" + dst.length + "]");
    copy(null, src, dst, BYTE_ARRAY_OFFSET + to, len);
  }

  /** Bytes [from, from + len) must lie within {@code size} bytes of {@code what}. */
  private static void checkRange(long from, long len, long size, String what) {
    if (from < 0 || len < 0 || from > size - len) {
      throw new IndexOutOfBoundsException("bytes [" + from + ", " + from + " + " + len + ") of " + what);
    }
  }
}
