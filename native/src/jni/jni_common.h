// JNI helpers shared by libfoldcp_jni.so (foldcp_jni.cpp) and libfoldcp_cp_jni.so
// (foldcp_cp_jni.cpp): exceptions from status codes with the native message, float[] arguments
// checked by length, raw pointers from jlong, and the bodies of the natives both Java classes
// declare (NativeTriMul and NativeCp: createLayer, destroyLayer, nonFiniteScan). Each library
// compiles its own copy (everything here is internal linkage; only Java_* symbols are exported).
// The Java_* definitions themselves stay in each library's file: their names differ by class,
// and NativeTriMulSymbolsTest reads foldcp_jni.cpp's definitions.
#pragma once
#include <jni.h>

#include <cstdint>
#include <string>

#include "foldcp_trimul.h"

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

void throw_gpu(JNIEnv* env, const char* cls, const std::string& msg, int status, const char* status_name) {
  if (env->ExceptionCheck()) return;
  jclass c = env->FindClass(cls);
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
  jstring jname = env->NewStringUTF(status_name);
  if (jmsg == nullptr || jname == nullptr) return;  // OutOfMemoryError pending
  jobject ex = env->NewObject(c, ctor, jmsg, status, jname);
  if (ex != nullptr) env->Throw(static_cast<jthrowable>(ex));
}

// How a library maps its status codes onto Java exceptions.
struct StatusMap {
  const char* (*name)(int status);
  bool (*is_input_error)(int status);       // -> InvalidInputException(native message)
  const char* (*exception_class)(int status);  // otherwise: this class (String, int, String)
};

// Turns a non-OK status into the matching Java exception; returns true when one was thrown.
bool check(JNIEnv* env, const StatusMap& map, int status, const char* call) {
  if (status == FOLDCP_OK) return false;
  const char* native_msg = foldcp_last_error();
  std::string msg = (native_msg != nullptr && native_msg[0] != '\0') ? native_msg : "(no message)";
  if (map.is_input_error(status)) {
    throw_plain(env, kInvalidInput, msg);
  } else {
    throw_gpu(env, map.exception_class(status), std::string(call) + " failed (" + map.name(status) + "): " + msg,
              status, map.name(status));
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

// foldcp_trimul_create from Java float[] weights (NativeTriMul.createLayer and NativeCp.createLayer),
// with the array lengths checked first; returns the layer's handle, or 0 with an exception pending.
jlong create_layer(
    JNIEnv* env, const StatusMap& map, jint dim, jint direction, jboolean residual, jfloat eps, jfloatArray norm_in_w,
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
  if (check(env, map, foldcp_trimul_create(&w, &layer), "foldcp_trimul_create")) return 0;
  return static_cast<jlong>(reinterpret_cast<uintptr_t>(layer));
}

// foldcp_trimul_destroy of a layer made by create_layer (0 = none).
void destroy_layer(JNIEnv* env, const StatusMap& map, jlong layer) {
  check(env, map, foldcp_trimul_destroy(as_ptr<foldcp_trimul_layer>(layer)), "foldcp_trimul_destroy");
}

// foldcp_nonfinite_scan of `count` bf16 values at device address x into result (device), on stream.
void nonfinite_scan(JNIEnv* env, const StatusMap& map, jlong x, jlong count, jlong result, jlong stream) {
  if (count < 0) {
    throw_plain(env, kInvalidInput, "count = " + std::to_string(count) + ": must be >= 0");
    return;
  }
  check(env, map,
        foldcp_nonfinite_scan(as_ptr<const void>(x), static_cast<uint64_t>(count), as_ptr<void>(result),
                              as_ptr<struct CUstream_st>(stream)),
        "foldcp_nonfinite_scan");
}

}  // namespace
