package org.foldcp.ops.gpu;

import org.foldcp.ops.InvalidInputException;

import org.foldcp.ops.layer.Direction;
import org.foldcp.ops.layer.LayerWeights;
import org.foldcp.ops.layer.TriMulLayer;

/**
 * The JNI binding of our single-GPU TriMul kernels (native/include/foldcp_trimul.h), implemented
 * in native/src/jni/foldcp_jni.cpp. Raw and unchecked by design: pointers are device addresses
 * ({@link DeviceBuffer#address()}), streams raw handles ({@link GpuStream#handle()}), 0 means
 * NULL (no mask, legacy default stream). {@link GpuTriMul} is the safe API over it.
 *
 * <p>Before calling: {@link NativeLibrary#load()} (or {@link #ensureLoaded()}), and make the
 * device's primary context current on the calling thread ({@link GpuDevice#makeCurrent()}):
 * the static CUDA runtime inside the library then works on that same context.
 *
 * <p>Errors: every method throws instead of returning a status: a bad shape, weight or pointer
 * ({@code FOLDCP_ERR_INVALID_ARGUMENT}) as {@link org.foldcp.ops.InvalidInputException} with the
 * native message, anything else as {@link GpuException} carrying the foldcp_status, its name and
 * the native message.
 *
 * <p>A test (NativeTriMulSymbolsTest) keeps these declarations and the C++ exports in step.
 */
public final class NativeTriMul {
  /** foldcp_direction values. */
  public static final int OUTGOING = 0;
  public static final int INCOMING = 1;

  private NativeTriMul() {}

  /** Loads libfoldcp_jni.so if needed; throws {@link GpuException} saying why it cannot. */
  public static void ensureLoaded() {
    NativeLibrary.load();
  }

  /** The SM architecture the kernels were compiled for (90 for sm_90a). */
  public static native int targetSm();

  /** CUDA runtime version the library was built with and links statically (e.g. 13000). */
  public static native int cudaRuntimeVersion();

  /** The native message of the last failure on this thread ("" if none). */
  public static native String lastError();

  /** The name of a foldcp_status code, e.g. "FOLDCP_ERR_CUDA". */
  public static native String statusName(int status);

  /** Checks (B, N, D) against the kernels' rules (no device needed). */
  public static native void checkShape(long batch, long n, long dim);

  /** Device workspace bytes one forward of (B, N, D) needs (no device needed). */
  public static native long workspaceSize(long batch, long n, long dim);

  /**
   * Device workspace bytes of a forward in channel groups of {@code group} channels (a multiple
   * of 32 in [32, D]): a and b for one group, z for all D channels (no device needed).
   */
  public static native long workspaceSizeGroup(long batch, long n, long dim, long group);

  /**
   * The largest channel group whose workspace fits in {@code bytesAvailable}: D when the whole
   * workspace fits; throws {@link GpuException} (FOLDCP_ERR_OUT_OF_MEMORY, naming the bytes a
   * group of 32 needs) when none does (no device needed).
   */
  public static native long channelGroup(long batch, long n, long dim, long bytesAvailable);

  /** FLOPs of one layer as docs/benchmarks.md counts them: 2 B N^3 D + 12 B N^2 D^2. */
  public static native double flops(long batch, long n, long dim);

  /**
   * Creates a layer on the current device from float32 host weights in PyTorch layout; returns
   * the native handle. Optional biases may be null. Every array length is checked against D.
   */
  public static native long createLayer(int dim, int direction, boolean residual, float eps,
      float[] normInWeight, float[] normInBias, float[] pInWeight, float[] gInWeight,
      float[] normOutWeight, float[] normOutBias, float[] pOutWeight, float[] gOutWeight,
      float[] pInBias, float[] gInBias, float[] pOutBias, float[] gOutBias);

  /** Frees a layer's device memory; 0 is allowed. */
  public static native void destroyLayer(long layer);

  /**
   * One forward, asynchronous on {@code stream}: x and out are bf16 (B, N, N, D) device buffers
   * (out may equal x), mask a uint8 (B, N, N) device buffer or 0, workspace at least
   * {@link #workspaceSizeGroup} bytes for {@code group} (D, or 0, is the whole: {@link #workspaceSize}).
   * The result does not depend on the group, bit for bit. With {@code stageMs} (a float[3]; null:
   * not profiled) it waits for the kernels and stores the milliseconds of the 3 stages, summed over
   * the channel groups.
   */
  public static native void forward(long layer, long x, long mask, long out, long batch, long n,
      long workspace, long workspaceBytes, long group, long stream, float[] stageMs);

  /**
   * The device-side input check, asynchronous on {@code stream}: counts the NaN and Inf among the
   * {@code count} bf16 values at {@code x} (16-byte aligned) and finds the first; writes two
   * uint64 to the device memory at {@code result}: the count, and (index << 16) | bits of the
   * first (all ones when there is none). Read them after the stream has run.
   */
  public static native void nonFiniteScan(long x, long count, long result, long stream);

  /**
   * Refuses a layer whose hidden width H differs from its pair width D: the GPU kernels run the
   * triangle product over D channels so far (the CPU backend and its CP routes take any H).
   * Every GPU path calls it before it uploads anything.
   */
  public static void requireKernelsFor(TriMulLayer layer) {
    InvalidInputException.require(layer.hidden() == layer.dim(), "H of the layer", layer.hidden(),
        "must equal its D = " + layer.dim() + " on the GPU: the GPU kernels take H = D so far; a layer with its own"
            + " hidden width runs on the CPU backend (spark.foldcp.route = cpu, or spark.foldcp.gpu.enabled = false for"
            + " every route and foldcp_trimul)");
  }

  /**
   * Creates the native layer of {@code layer} (loads the library first): the one layer type of
   * both routes, since the CP library's plans take these handles too (it links against this
   * library).
   */
  public static long createLayer(TriMulLayer layer) {
    requireKernelsFor(layer);
    ensureLoaded();
    LayerWeights w = layer.weights();
    return createLayer(w.dim(), layer.direction() == Direction.OUTGOING ? OUTGOING : INCOMING,
        layer.spec().residual(), layer.spec().eps(),
        w.get(LayerWeights.NORM_IN_W), w.get(LayerWeights.NORM_IN_B),
        w.get(LayerWeights.P_IN_W), w.get(LayerWeights.G_IN_W),
        w.get(LayerWeights.NORM_OUT_W), w.get(LayerWeights.NORM_OUT_B),
        w.get(LayerWeights.P_OUT_W), w.get(LayerWeights.G_OUT_W),
        w.bias(LayerWeights.P_IN_B), w.bias(LayerWeights.G_IN_B),
        w.bias(LayerWeights.P_OUT_B), w.bias(LayerWeights.G_OUT_B));
  }
}
