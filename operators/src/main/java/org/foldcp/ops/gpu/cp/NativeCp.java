package org.foldcp.ops.gpu.cp;

import org.foldcp.ops.gpu.GpuException;
import org.foldcp.ops.gpu.NativeLibrary;
import org.foldcp.ops.gpu.NativeTriMul;

/**
 * The JNI binding of the context-parallel TriMul on an NVSHMEM team
 * (native/include/foldcp_cp.h, native/src/jni/foldcp_cp_jni.cpp), in libfoldcp_cp_jni.so, which
 * the operators jar carries only when it was built where NVSHMEM was found. Raw and unchecked
 * like {@link org.foldcp.ops.gpu.NativeTriMul}: device addresses and stream handles as longs.
 * {@link NvshmemTeam} and {@link CpGpuStack} are the safe API over it.
 *
 * <p>Loading: {@link #load(String)} first loads the single-GPU library ({@link NativeLibrary}),
 * which owns the kernels, the layers and the CUDA runtime that the CP library links against
 * (NEEDED libfoldcp_jni.so: the dynamic loader resolves it by SONAME to that loaded copy), then
 * NVSHMEM's host library from where {@link NvshmemLibraries} finds it (by absolute path, so the
 * loader resolves our library's NEEDED entry to it without LD_LIBRARY_PATH), then our library
 * from the jar (or {@code -Dfoldcp.cp.native.path=FILE}). The outcome is remembered, failure
 * included.
 *
 * <p>Layers: a plan takes layers made by {@link NativeTriMul#createLayer} (a
 * {@link org.foldcp.ops.gpu.LayerCache} with {@link org.foldcp.ops.gpu.LayerCache#SINGLE_GPU}),
 * the same handles the single-GPU forward uses.
 *
 * <p>Errors: bad input, weights that differ across ranks and a heap too small throw
 * {@link org.foldcp.ops.InvalidInputException}; a missing peer or a broken team
 * {@link TeamException}; anything else {@link GpuException}.
 */
public final class NativeCp {
  public static final String LIBRARY_FILE = "libfoldcp_cp_jni.so";
  public static final String PATH_PROPERTY = "foldcp.cp.native.path";

  private static boolean loaded;
  private static String failure;
  private static String hostLibrary;

  private NativeCp() {}

  /**
   * Loads NVSHMEM and our CP library once per JVM ({@code nvshmemHome} may be null: see
   * {@link NvshmemLibraries}); throws {@link GpuException} saying why it cannot.
   */
  public static synchronized void load(String nvshmemHome) {
    if (loaded) {
      return;
    }
    if (failure == null) {
      failure = tryLoad(nvshmemHome);
    }
    if (failure != null) {
      throw new GpuException(failure);
    }
    loaded = true;
  }

  /** Null when the CP library can be loaded (trying once), else why not. */
  public static synchronized String unavailableReason(String nvshmemHome) {
    try {
      load(nvshmemHome);
      return null;
    } catch (GpuException e) {
      return e.getMessage();
    }
  }

  /** The NVSHMEM host library that was loaded, or null. */
  public static synchronized String hostLibrary() {
    return hostLibrary;
  }

  private static String tryLoad(String nvshmemHome) {
    // The single-GPU library first: the CP library's NEEDED libfoldcp_jni.so must find it loaded
    // (it is extracted to a temporary file, so no search path would find it otherwise).
    String why = NativeLibrary.unavailableReason();
    if (why != null) {
      return why + " (the CP library links against " + NativeLibrary.LIBRARY_FILE + ")";
    }
    NvshmemLibraries.Found found = NvshmemLibraries.find(nvshmemHome);
    if (found.hostLibrary() == null) {
      return found.failure();
    }
    try {
      System.load(found.hostLibrary().toString());
    } catch (UnsatisfiedLinkError | SecurityException e) {
      return "could not load " + found.hostLibrary() + ": " + e.getMessage();
    }
    hostLibrary = found.hostLibrary().toString();
    String cp = NativeLibrary.loadBundled(NativeCp.class, LIBRARY_FILE, PATH_PROPERTY);
    if (cp != null) {
      return cp + " (the CP library is built only where NVSHMEM's headers are found: set NVSHMEM_HOME or install"
          + " the pip wheel nvidia-nvshmem-cu13 on the build machine)";
    }
    return null;
  }

  /** NVSHMEM version the library was built against, e.g. 30405 for 3.4.5. */
  public static native int nvshmemVersion();

  /** A new 128-byte NVSHMEM unique id (rank 0 makes it; no team needed). */
  public static native byte[] uniqueId();

  /** Joins the team once per process (see foldcp_cp_team_init). */
  public static native void teamInit(byte[] uniqueId, int rank, int nranks, int device, long heapBytes, long timeoutMs);

  /** {my PE, PEs, heap bytes, heap bytes used, broken (0/1)}. */
  public static native long[] teamInfo();

  public static native void teamBarrier();

  public static native void teamFinalize();

  /**
   * Symmetric-heap bytes of a plan (no device needed once loaded) for layers of pair width D and
   * hidden width H ({@code hidden}: 0 means D), H divisible by cp: the reshards carry H channels.
   */
  public static native long planBytes(long batch, long n, long dim, long hidden, int gridRows, int gridCols,
      long tileRows, long tileCols, int route, int reshard);

  /**
   * A plan over {@code layers}: handles of {@link NativeTriMul#createLayer}, on this rank's GPU, all of
   * widths D and H ({@code hidden}: 0 means D).
   */
  public static native long createPlan(long batch, long n, long dim, long hidden, int gridRows, int gridCols,
      long tileRows, long tileCols, int route, int reshard, byte[] digest, long[] layers);

  public static native int planRoute(long plan);

  public static native int planReshard(long plan);

  /** {reshard 1 bytes, reshard 2 bytes} leaving this rank per forward of the stack. */
  public static native long[] planReshardBytes(long plan);

  /**
   * The device-side input check of a tile, asynchronous on {@code stream}: as
   * {@link org.foldcp.ops.gpu.NativeTriMul#nonFiniteScan} (the same kernel, in the single-GPU library),
   * two uint64 at {@code result} ({@link org.foldcp.ops.gpu.ScanResult}).
   */
  public static native void nonFiniteScan(long x, long count, long result, long stream);

  public static native void forward(long plan, long x, long mask, long out, long stream);

  public static native void destroyPlan(long plan);

  // ---- the heads all-to-all (native/include/foldcp_a2a.h); HeadsAllToAll is the safe API

  /** Symmetric-heap bytes of an all-to-all plan on {@code ranks} ranks (no team needed once loaded). */
  public static native long a2aPlanBytes(long batch, long seqLocal, long heads, long headDim, int dtype, int ranks,
      int route);

  public static native long a2aCreate(long batch, long seqLocal, long heads, long headDim, int dtype, int route);

  public static native int a2aRoute(long plan);

  /** {output buffer address, its bytes, bytes sent per call}. */
  public static native long[] a2aBuffers(long plan);

  public static native void a2aScatterHeads(long plan, long in, long out, long stream);

  public static native void a2aGatherHeads(long plan, long in, long out, long stream);

  public static native void a2aDestroy(long plan);
}
