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
// Only the Java_* functions and JNI_OnLoad are exported (exports.map); everything else, the
// CUDA runtime included, stays local to this library.
#include <jni.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "foldcp_trimul.h"

extern "C" int foldcp_native_target_sm();
extern "C" int foldcp_native_cuda_version();

namespace {

constexpr const char* kInvalidInput = "org/foldcp/ops/InvalidInputException";
constexpr const char* kGpuException = "org/foldcp/ops/gpu/GpuException";

// Throws a Java exception of class `cls` (a constructor (String) is required), falling back to
// RuntimeException if the class cannot be found (it always can, in the same jar).
void throw_plain(JNIEnv* env, const char* cls, const std::string& msg) {
  if (env->ExceptionCheck()) return;  // keep the first exception
  jclass c = env->FindClass(cls);
  if (c == nullptr) {
    env->ExceptionClear();
    c = env->FindClass("java/lang/RuntimeException");
    if (c == nullptr) return;
  }
  env->ThrowNew(c, msg.c_str());
}

void throw_gpu(JNIEnv* env, const std::string& msg, int status) {
  if (env->ExceptionCheck()) return;
  jclass c = env->FindClass(kGpuException);
  if (c == nullptr) {
    env->ExceptionClear();
    throw_plain(env, "java/lang/RuntimeException", msg);
    return;
  }
  jmethodID ctor = env->GetMethodID(c, "<init>", "(Ljava/lang/String;ILjava/lang/String;)V");
  if (ctor == nullptr) {
    env->ExceptionClear();
    env->ThrowNew(c, msg.c_str());
    return;
  }
  jstring jmsg = env->NewStringUTF(msg.c_str());
  jstring jname = env->NewStringUTF(foldcp_status_name(status));
  if (jmsg == nullptr || jname == nullptr) return;  // OutOfMemoryError pending
  jobject ex = env->NewObject(c, ctor, jmsg, status, jname);
  if (ex != nullptr) env->Throw(static_cast<jthrowable>(ex));
}

// Turns a non-OK status into the matching Java exception; returns true when one was thrown.
bool check(JNIEnv* env, int status, const char* call) {
  if (status == FOLDCP_OK) return false;
  const char* native_msg = foldcp_last_error();
  std::string msg = (native_msg != nullptr && native_msg[0] != '\0') ? native_msg : "(no message)";
  if (status == FOLDCP_ERR_INVALID_ARGUMENT) {
    throw_plain(env, kInvalidInput, msg);
  } else {
    throw_gpu(env, std::string(call) + " failed (" + foldcp_status_name(status) + "): " + msg, status);
  }
  return true;
}

// A float[] pinned or copied for the duration of one call; checks its length first.
class FloatArg {
 public:
  FloatArg(JNIEnv* env, jfloatArray arr, const char* name, int64_t expect, bool optional)
      : env_(env), arr_(arr) {
    if (env->ExceptionCheck()) {  // an earlier argument failed: touch nothing more
      ok_ = false;
      return;
    }
    if (arr == nullptr) {
      if (!optional) {
        throw_plain(env, kInvalidInput,
                    std::string(name) + " = null: it is required (" + std::to_string(expect) + " floats)");
        ok_ = false;
      }
      return;
    }
    const jsize len = env->GetArrayLength(arr);
    if (static_cast<int64_t>(len) != expect) {
      throw_plain(env, kInvalidInput,
                  std::string("length of ") + name + " = " + std::to_string(len) + ": must be " +
                      std::to_string(expect) + " for D");
      ok_ = false;
      return;
    }
    ptr_ = env->GetFloatArrayElements(arr, nullptr);
    if (ptr_ == nullptr) ok_ = false;  // OutOfMemoryError pending
  }
  ~FloatArg() {
    if (ptr_ != nullptr) env_->ReleaseFloatArrayElements(arr_, ptr_, JNI_ABORT);
  }
  FloatArg(const FloatArg&) = delete;
  FloatArg& operator=(const FloatArg&) = delete;
  bool ok() const { return ok_; }
  const float* get() const { return ptr_; }

 private:
  JNIEnv* env_;
  jfloatArray arr_;
  float* ptr_ = nullptr;
  bool ok_ = true;
};

template <typename T>
T* as_ptr(jlong v) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(v));
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

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_workspaceSize(JNIEnv* env, jclass, jlong b, jlong n,
                                                                           jlong d) {
  size_t bytes = 0;
  if (check(env, foldcp_trimul_workspace_size(b, n, d, &bytes), "foldcp_trimul_workspace_size")) return -1;
  return static_cast<jlong>(bytes);
}

JNIEXPORT jdouble JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_flops(JNIEnv*, jclass, jlong b, jlong n, jlong d) {
  return foldcp_trimul_flops(b, n, d);
}

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_createLayer(
    JNIEnv* env, jclass, jint dim, jint direction, jboolean residual, jfloat eps, jfloatArray norm_in_w,
    jfloatArray norm_in_b, jfloatArray p_in_w, jfloatArray g_in_w, jfloatArray norm_out_w, jfloatArray norm_out_b,
    jfloatArray p_out_w, jfloatArray g_out_w, jfloatArray p_in_b, jfloatArray g_in_b, jfloatArray p_out_b,
    jfloatArray g_out_b) {
  if (dim < 1) {
    throw_plain(env, kInvalidInput, "D = " + std::to_string(dim) + ": must be >= 1");
    return 0;
  }
  const int64_t d = dim;
  // Lengths are checked here, before the C API reads D-sized arrays through raw pointers.
  FloatArg a0(env, norm_in_w, "norm_in.weight", d, false);
  FloatArg a1(env, norm_in_b, "norm_in.bias", d, false);
  FloatArg a2(env, p_in_w, "p_in.weight", 2 * d * d, false);
  FloatArg a3(env, g_in_w, "g_in.weight", 2 * d * d, false);
  FloatArg a4(env, norm_out_w, "norm_out.weight", d, false);
  FloatArg a5(env, norm_out_b, "norm_out.bias", d, false);
  FloatArg a6(env, p_out_w, "p_out.weight", d * d, false);
  FloatArg a7(env, g_out_w, "g_out.weight", d * d, false);
  FloatArg a8(env, p_in_b, "p_in.bias", 2 * d, true);
  FloatArg a9(env, g_in_b, "g_in.bias", 2 * d, true);
  FloatArg a10(env, p_out_b, "p_out.bias", d, true);
  FloatArg a11(env, g_out_b, "g_out.bias", d, true);
  for (const FloatArg* a : {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8, &a9, &a10, &a11}) {
    if (!a->ok() || env->ExceptionCheck()) return 0;
  }
  foldcp_trimul_weights w{};
  w.dim = d;
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
  if (check(env, foldcp_trimul_create(&w, &layer), "foldcp_trimul_create")) return 0;
  return static_cast<jlong>(reinterpret_cast<uintptr_t>(layer));
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_destroyLayer(JNIEnv* env, jclass, jlong layer) {
  check(env, foldcp_trimul_destroy(as_ptr<foldcp_trimul_layer>(layer)), "foldcp_trimul_destroy");
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_forward(JNIEnv* env, jclass, jlong layer, jlong x,
                                                                    jlong mask, jlong out, jlong b, jlong n,
                                                                    jlong ws, jlong ws_bytes, jlong stream) {
  if (ws_bytes < 0) {
    throw_plain(env, kInvalidInput, "workspace bytes = " + std::to_string(ws_bytes) + ": must be >= 0");
    return;
  }
  check(env,
        foldcp_trimul_forward(as_ptr<const foldcp_trimul_layer>(layer), as_ptr<const void>(x),
                              as_ptr<const uint8_t>(mask), as_ptr<void>(out), b, n, as_ptr<void>(ws),
                              static_cast<size_t>(ws_bytes), as_ptr<struct CUstream_st>(stream)),
        "foldcp_trimul_forward");
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_NativeTriMul_forwardProfiled(JNIEnv* env, jclass, jlong layer,
                                                                            jlong x, jlong mask, jlong out, jlong b,
                                                                            jlong n, jlong ws, jlong ws_bytes,
                                                                            jlong stream, jfloatArray stage_ms) {
  if (ws_bytes < 0) {
    throw_plain(env, kInvalidInput, "workspace bytes = " + std::to_string(ws_bytes) + ": must be >= 0");
    return;
  }
  if (stage_ms == nullptr || env->GetArrayLength(stage_ms) < 3) {
    throw_plain(env, kInvalidInput, "stageMs: must be a float[3] (one time per stage)");
    return;
  }
  float ms[3] = {0.f, 0.f, 0.f};
  if (check(env,
            foldcp_trimul_forward_profiled(as_ptr<const foldcp_trimul_layer>(layer), as_ptr<const void>(x),
                                           as_ptr<const uint8_t>(mask), as_ptr<void>(out), b, n, as_ptr<void>(ws),
                                           static_cast<size_t>(ws_bytes), as_ptr<struct CUstream_st>(stream), ms),
            "foldcp_trimul_forward_profiled"))
    return;
  env->SetFloatArrayRegion(stage_ms, 0, 3, ms);
}

}  // extern "C"
