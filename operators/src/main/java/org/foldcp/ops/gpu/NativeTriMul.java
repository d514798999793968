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

  /**
   * Checks a layer's pair width D and hidden width H (0 = D) against the kernels' rules
   * (foldcp_trimul_check_dims, no device needed); {@link #gpuKernelsTake} is the same rule in Java.
   */
  public static native void checkDims(int dim, int hidden);

  /**
   * Device workspace bytes one forward of B complexes of N tokens needs through a layer of hidden
   * width H (the channels of a, b and z; no device needed).
   */
  public static native long workspaceSize(long batch, long n, long hidden);

  /**
   * Device workspace bytes of a forward in channel groups of {@code group} channels (a multiple
   * of 8 in [8, H]): a and b for one group, z for all H channels (no device needed).
   */
  public static native long workspaceSizeGroup(long batch, long n, long hidden, long group);

  /**
   * The largest channel group of a layer of hidden width H whose workspace fits in
   * {@code bytesAvailable}: H when the whole workspace fits; throws {@link GpuException}
   * (FOLDCP_ERR_OUT_OF_MEMORY, naming the bytes a group of 8 needs) when none does (no device
   * needed).
   */
  public static native long channelGroup(long batch, long n, long hidden, long bytesAvailable);

  /**
   * FLOPs of one layer of pair width D and hidden width H (0 = D) as docs/benchmarks.md counts
   * them: 2BN^3H + 8BN^2DH + 2BN^2D(H + D), which is 2BN^3D + 12BN^2D^2 at H = D.
   */
  public static native double flops(long batch, long n, long dim, long hidden);

  /**
   * Creates a layer of pair width D and hidden width H ({@code hidden}: 0 means D) on the current
   * device from float32 host weights in PyTorch layout; returns the native handle. Optional biases
   * may be null. Every array length is checked against D and H.
   */
  public static native long createLayer(int dim, int hidden, int direction, boolean residual, float eps,
      float[] normInWeight, float[] normInBias, float[] pInWeight, float[] gInWeight,
      float[] normOutWeight, float[] normOutBias, float[] pOutWeight, float[] gOutWeight,
      float[] pInBias, float[] gInBias, float[] pOutBias, float[] gOutBias);

  /** Frees a layer's device memory; 0 is allowed. */
  public static native void destroyLayer(long layer);

  /**
   * One forward, asynchronous on {@code stream}: x and out are bf16 (B, N, N, D) device buffers
   * (out may equal x), mask a uint8 (B, N, N) device buffer or 0, workspace at least
   * {@link #workspaceSizeGroup} bytes for {@code group} (the layer's H, or 0, is the whole:
   * {@link #workspaceSize}).
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

  /** The rule of the GPU kernels for a layer's widths, D and H alike. */
  public static final String WIDTH_RULE = "a multiple of 32 in [32, 512]";

  /**
   * Whether the GPU kernels take a layer of pair width {@code d} and hidden width {@code h}: both
   * {@link #WIDTH_RULE}. The rule of foldcp_trimul_check_dims ({@link #checkDims}; a test keeps the
   * two in step) in plain Java, so that a driver without the native library plans by it.
   */
  public static boolean gpuKernelsTake(int d, int h) {
    return kernelWidth(d) && kernelWidth(h);
  }

  private static boolean kernelWidth(int c) {
    return c >= 32 && c <= 512 && c % 32 == 0;
  }

  /**
   * Throws {@link InvalidInputException} unless {@link #gpuKernelsTake}(d, h): the message names the
   * width that breaks the rule ("D of " or "H of " + {@code of}), the rule, then {@code context}
   * (where the layer was to run, and what takes it instead).
   */
  public static void requireWidths(int d, int h, String of, String context) {
    InvalidInputException.require(kernelWidth(d), "D of " + of, d, "must be " + WIDTH_RULE + " " + context);
    InvalidInputException.require(kernelWidth(h), "H of " + of, h,
        "must be " + WIDTH_RULE + " (D = " + d + ") " + context);
  }

  /**
   * Refuses a layer whose widths the GPU kernels do not take ({@link #gpuKernelsTake}), naming where
   * such a layer runs (the CPU backend and its CP routes take any D and H). Every GPU path calls it
   * before it uploads anything.
   */
  public static void requireKernelsFor(TriMulLayer layer) {
    requireWidths(layer.dim(), layer.hidden(), "the layer", "on the GPU: a layer of other widths runs on the CPU"
        + " backend (spark.foldcp.route = cpu, or spark.foldcp.gpu.enabled = false for every route and foldcp_trimul)");
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
    return createLayer(w.dim(), w.hidden(), layer.direction() == Direction.OUTGOING ? OUTGOING : INCOMING,
        layer.spec().residual(), layer.spec().eps(),
        w.get(LayerWeights.NORM_IN_W), w.get(LayerWeights.NORM_IN_B),
        w.get(LayerWeights.P_IN_W), w.get(LayerWeights.G_IN_W),
        w.get(LayerWeights.NORM_OUT_W), w.get(LayerWeights.NORM_OUT_B),
        w.get(LayerWeights.P_OUT_W), w.get(LayerWeights.G_OUT_W),
        w.bias(LayerWeights.P_IN_B), w.bias(LayerWeights.G_IN_B),
        w.bias(LayerWeights.P_OUT_B), w.bias(LayerWeights.G_OUT_B));
  }
}
