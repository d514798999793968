// JNI helpers shared by libfoldcp_jni.so (foldcp_jni.cpp) and libfoldcp_cp_jni.so
// (foldcp_cp_jni.cpp): exceptions from status codes with the native message, float[] arguments
// checked by length, raw pointers from jlong, and the body of the native both Java classes
// declare (NativeTriMul and NativeCp: nonFiniteScan). Each library compiles its own copy
// (everything here is internal linkage, never exported).
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

// A float[] pinned or copied for the duration of one call; checks its length first. `shape` is
// the rule the length follows, named in the message (e.g. "[2H][D], D = 64, H = 32").
class FloatArg {
 public:
  FloatArg(JNIEnv* env, jfloatArray arr, const char* name, int64_t expect, const std::string& shape, bool optional)
      : env_(env), arr_(arr) {
    if (env->ExceptionCheck()) {  // an earlier argument failed: touch nothing more
      ok_ = false;
      return;
    }
    if (arr == nullptr) {
      if (!optional) {
        throw_plain(env, kInvalidInput,
                    std::string(name) + " = null: it is required (" + std::to_string(expect) + " floats, " + shape +
                        ")");
        ok_ = false;
      }
      return;
    }
    const jsize len = env->GetArrayLength(arr);
    if (static_cast<int64_t>(len) != expect) {
      throw_plain(env, kInvalidInput,
                  std::string("length of ") + name + " = " + std::to_string(len) + ": must be " +
                      std::to_string(expect) + " (" + shape + ")");
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
