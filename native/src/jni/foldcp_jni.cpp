// JNI bindings of the single-GPU TriMul (include/foldcp_trimul.h) for the Java class
// org.foldcp.ops.gpu.NativeTriMul. Only our kernels are bound here: device discovery, memory and
// streams go through the CUDA driver API from Java (JCuda), which shares the primary context
// with the CUDA runtime linked statically into this library.
//
// Contract with the Java side:
//  - every pointer argument is a raw device address (jlong); 0 means NULL (mask, stream);
//  - the caller makes the device's primary context current on the calling thread first, so that
//    the runtime's current device is the layer's device (the C API checks that);
//  - every failure throws: FOLDCP_ERR_INVALID_ARGUMENT -> org.foldcp.ops.InvalidInputException,
//    anything else -> org.foldcp.ops.gpu.GpuException(message, status, statusName), with the
//    native message (foldcp_last_error()) in it. Nothing returns an error code to Java.
// Exported (exports.map): the Java_* functions and JNI_OnLoad, and for libfoldcp_cp_jni.so, which
// links against this library (issue 24: one owner of the kernels and the CUDA runtime), the C
// API, the launchers the CP forward calls and forwarders to the CUDA runtime (cudart_export.cpp);
// everything else, the runtime's own names included, stays local to this library.
#include <jni.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "foldcp_trimul.h"
#include "jni_common.h"

extern "C" int foldcp_native_target_sm();
extern "C" int foldcp_native_cuda_version();

namespace {

const char* status_name(int status) { return foldcp_status_name(status); }
bool input_error(int status) { return status == FOLDCP_ERR_INVALID_ARGUMENT; }
const char* gpu_exception(int) { return kGpuException; }
const StatusMap kMap{status_name, input_error, gpu_exception};

bool check(JNIEnv* env, int status, const char* call) { return check(env, kMap, status, call); }

// foldcp_trimul_create from Java float[] weights (NativeTriMul.createLayer: the one layer type,
// which CP plans take too), with the array lengths checked first against D and H (hidden = 0
// means H = D); returns the layer's handle, or 0 with an exception pending.
jlong create_layer(
    JNIEnv* env, const StatusMap& map, jint dim, jint hidden, jint direction, jboolean residual, jfloat eps,
    jfloatArray norm_in_w, jfloatArray norm_in_b, jfloatArray p_in_w, jfloatArray g_in_w, jfloatArray norm_out_w,
    jfloatArray norm_out_b, jfloatArray p_out_w, jfloatArray g_out_w, jfloatArray p_in_b, jfloatArray g_in_b,
    jfloatArray p_out_b, jfloatArray g_out_b) {
  if (dim < 1) {
    throw_plain(env, kInvalidInput, "D = " + std::to_string(dim) + ": must be >= 1");
    return 0;
  }
  if (hidden < 0) {
    throw_plain(env, kInvalidInput, "H = " + std::to_string(hidden) + ": must be >= 1, or 0 for H = D");
    return 0;
  }
  const int64_t d = dim;
  const int64_t h = hidden == 0 ? d : hidden;
  // Lengths are checked here, before the C API reads D- and H-sized arrays through raw pointers.
  const std::string widths = ", D = " + std::to_string(d) + ", H = " + std::to_string(h);
  FloatArg a0(env, norm_in_w, "norm_in.weight", d, "[D]" + widths, false);
  FloatArg a1(env, norm_in_b, "norm_in.bias", d, "[D]" + widths, false);
  FloatArg a2(env, p_in_w, "p_in.weight", 2 * h * d, "[2H][D]" + widths, false);
  FloatArg a3(env, g_in_w, "g_in.weight", 2 * h * d, "[2H][D]" + widths, false);
  FloatArg a4(env, norm_out_w, "norm_out.weight", h, "[H]" + widths, false);
  FloatArg a5(env, norm_out_b, "norm_out.bias", h, "[H]" + widths, false);
  FloatArg a6(env, p_out_w, "p_out.weight", d * h, "[D][H]" + widths, false);
  FloatArg a7(env, g_out_w, "g_out.weight", d * d, "[D][D]" + widths, false);
  FloatArg a8(env, p_in_b, "p_in.bias", 2 * h, "[2H]" + widths, true);
  FloatArg a9(env, g_in_b, "g_in.bias", 2 * h, "[2H]" + widths, true);
  FloatArg a10(env, p_out_b, "p_out.bias", d, "[D]" + widths, true);
  FloatArg a11(env, g_out_b, "g_out.bias", d, "[D]" + widths, true);
  for (const FloatArg* a : {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8, &a9, &a10, &a11}) {
    if (!a->ok() || env->ExceptionCheck()) return 0;
  }
  foldcp_trimul_weights w{};
  w.dim = d;
  w.hidden = h;
  w.direction = direction;
  w.residual = residual ? 1 : 0;
  w.eps = eps;
  w.norm_in_weight = a0.get();
  w.norm_in_bias = a1.get();
  w.p_in_weight = a2.get();
  w.g_in_weight = a3.get();
  w.norm_out_weight = a4.get();
  w.norm_out_bias = a5.get();
  w.p_out_weight = a6.get();
  w.g_out_weight = a7.get();
  w.p_in_bias = a8.get();
  w.g_in_bias = a9.get();
  w.p_out_bias = a10.get();
  w.g_out_bias = a11.get();
  foldcp_trimul_layer* layer = nullptr;
  if (check(env, map, foldcp_trimul_create(&w, &layer), "foldcp_trimul_create")) return 0;
  return static_cast<jlong>(reinterpret_cast<uintptr_t>(layer));
}

// foldcp_trimul_destroy of a layer made by create_layer (0 = none).
void destroy_layer(JNIEnv* env, const StatusMap& map, jlong layer) {
  check(env, map, foldcp_trimul_destroy(as_ptr<foldcp_trimul_layer>(layer)), "foldcp_trimul_destroy");
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM*, void*) { return JNI_VERSION_1_8; }

JNIEXPORT jint JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_targetSm(JNIEnv*, jclass) {
  return foldcp_native_target_sm();
}

JNIEXPORT jint JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_cudaRuntimeVersion(JNIEnv*, jclass) {
  return foldcp_native_cuda_version();
}

JNIEXPORT jstring JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_lastError(JNIEnv* env, jclass) {
  const char* m = foldcp_last_error();
  return env->NewStringUTF(m == nullptr ? "" : m);
}

JNIEXPORT jstring JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_statusName(JNIEnv* env, jclass, jint status) {
  return env->NewStringUTF(foldcp_status_name(status));
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_checkShape(JNIEnv* env, jclass, jlong b, jlong n,
                                                                       jlong d) {
  check(env, foldcp_trimul_check_shape(b, n, d), "foldcp_trimul_check_shape");
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_checkDims(JNIEnv* env, jclass, jint d, jint h) {
  check(env, foldcp_trimul_check_dims(d, h), "foldcp_trimul_check_dims");
}

// The workspace functions count the channels of the triangle product: the layer's hidden width H.
JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_workspaceSize(JNIEnv* env, jclass, jlong b, jlong n,
                                                                           jlong h) {
  size_t bytes = 0;
  if (check(env, foldcp_trimul_workspace_size(b, n, h, &bytes), "foldcp_trimul_workspace_size")) return -1;
  return static_cast<jlong>(bytes);
}

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_workspaceSizeGroup(JNIEnv* env, jclass, jlong b,
                                                                                jlong n, jlong h, jlong group) {
  size_t bytes = 0;
  if (check(env, foldcp_trimul_workspace_size_group(b, n, h, group, &bytes), "foldcp_trimul_workspace_size_group"))
    return -1;
  return static_cast<jlong>(bytes);
}

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_channelGroup(JNIEnv* env, jclass, jlong b, jlong n,
                                                                          jlong h, jlong bytes_available) {
  int64_t group = 0;
  const size_t avail = bytes_available > 0 ? static_cast<size_t>(bytes_available) : 0;
  if (check(env, foldcp_trimul_channel_group(b, n, h, avail, &group), "foldcp_trimul_channel_group")) return -1;
  return static_cast<jlong>(group);
}

JNIEXPORT jdouble JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_flops(JNIEnv*, jclass, jlong b, jlong n, jlong d,
                                                                     jlong h) {
  return foldcp_trimul_flops(b, n, d, h);
}

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_createLayer(
    JNIEnv* env, jclass, jint dim, jint hidden, jint direction, jboolean residual, jfloat eps, jfloatArray norm_in_w,
    jfloatArray norm_in_b, jfloatArray p_in_w, jfloatArray g_in_w, jfloatArray norm_out_w, jfloatArray norm_out_b,
    jfloatArray p_out_w, jfloatArray g_out_w, jfloatArray p_in_b, jfloatArray g_in_b, jfloatArray p_out_b,
    jfloatArray g_out_b) {
  return create_layer(env, kMap, dim, hidden, direction, residual, eps, norm_in_w, norm_in_b, p_in_w, g_in_w,
                      norm_out_w, norm_out_b, p_out_w, g_out_w, p_in_b, g_in_b, p_out_b, g_out_b);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_destroyLayer(JNIEnv* env, jclass, jlong layer) {
  destroy_layer(env, kMap, layer);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_forward(JNIEnv* env, jclass, jlong layer, jlong x,
                                                                    jlong mask, jlong out, jlong b, jlong n,
                                                                    jlong ws, jlong ws_bytes, jlong group,
                                                                    jlong stream, jfloatArray stage_ms) {
  if (ws_bytes < 0) {
    throw_plain(env, kInvalidInput, "workspace bytes = " + std::to_string(ws_bytes) + ": must be >= 0");
    return;
  }
  if (stage_ms != nullptr && env->GetArrayLength(stage_ms) < 3) {
    throw_plain(env, kInvalidInput, "stageMs: must be null or a float[3] (one time per stage)");
    return;
  }
  float ms[3] = {0.f, 0.f, 0.f};
  foldcp_forward_options opts = FOLDCP_FORWARD_OPTIONS_INIT;
  opts.group = group;
  opts.stage_ms = stage_ms != nullptr ? ms : nullptr;
  // A profiled forward waits for its kernels, so a device fault surfaces here: the message says which.
  if (check(env,
            foldcp_trimul_forward(as_ptr<const foldcp_trimul_layer>(layer), as_ptr<const void>(x),
                                  as_ptr<const uint8_t>(mask), as_ptr<void>(out), b, n, as_ptr<void>(ws),
                                  static_cast<size_t>(ws_bytes), &opts, as_ptr<struct CUstream_st>(stream)),
            stage_ms != nullptr ? "foldcp_trimul_forward (profiled)" : "foldcp_trimul_forward"))
    return;
  if (stage_ms != nullptr) {
    env->SetFloatArrayRegion(stage_ms, 0, 3, ms);
  }
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_nonFiniteScan(JNIEnv* env, jclass, jlong x,
                                                                          jlong count, jlong result, jlong stream) {
  nonfinite_scan(env, kMap, x, count, result, stream);
}

}  // extern "C"
