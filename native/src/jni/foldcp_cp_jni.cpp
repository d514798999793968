// JNI bindings of the context-parallel TriMul on an NVSHMEM team (include/foldcp_cp.h) for the
// Java class org.foldcp.ops.gpu.cp.NativeCp. Built only where NVSHMEM is found; the library needs
// libnvshmem_host.so.3 at load time, which the Java side (NvshmemLibraries) loads first from
// where it found it, so that nobody has to set LD_LIBRARY_PATH, and libfoldcp_jni.so, which owns
// the single-GPU kernels, the layers and the CUDA runtime this library uses (issue 24): the Java
// side loads it first, and the dynamic loader binds this library's NEEDED entry to it by SONAME.
// A plan's layers are handles of NativeTriMul.createLayer; this library makes no layers.
//
// Contract with the Java side: as foldcp_jni.cpp (raw device pointers as jlong, 0 = NULL, the
// device's primary context current on the calling thread), and every failure throws:
// FOLDCP_ERR_INVALID_ARGUMENT, FOLDCP_ERR_MISMATCH (weights or shapes differ across ranks) and
// FOLDCP_ERR_HEAP_TOO_SMALL -> InvalidInputException (bad input, named with its rule);
// FOLDCP_ERR_TEAM -> org.foldcp.ops.gpu.cp.TeamException (a peer missing, a broken team);
// anything else -> GpuException.
#include <jni.h>

#include <cstdint>
#include <string>
#include <vector>

#include "foldcp_a2a.h"
#include "foldcp_cp.h"
#include "foldcp_trimul.h"
#include "jni_common.h"

namespace {

constexpr const char* kTeamException = "org/foldcp/ops/gpu/cp/TeamException";

const char* cp_status_name(int status) { return foldcp_cp_status_name(status); }
bool cp_input_error(int status) {
  return status == FOLDCP_ERR_INVALID_ARGUMENT || status == FOLDCP_ERR_MISMATCH || status == FOLDCP_ERR_HEAP_TOO_SMALL;
}
const char* cp_exception(int status) { return status == FOLDCP_ERR_TEAM ? kTeamException : kGpuException; }
const StatusMap kCpMap{cp_status_name, cp_input_error, cp_exception};

bool check(JNIEnv* env, int status, const char* call) { return check(env, kCpMap, status, call); }

// hidden: the layers' H (0 = D), the channels the reshards carry.
bool config_from(JNIEnv* env, jlong batch, jlong n, jlong dim, jlong hidden, jint grid_rows, jint grid_cols,
                 jlong tile_rows, jlong tile_cols, jint route, jint reshard, jbyteArray digest, foldcp_cp_config* c) {
  *c = foldcp_cp_config{};
  c->batch = batch;
  c->n = n;
  c->dim = dim;
  c->hidden = hidden;
  c->grid_rows = grid_rows;
  c->grid_cols = grid_cols;
  c->tile_rows = tile_rows;
  c->tile_cols = tile_cols;
  c->route = route;
  c->reshard = reshard;
  if (digest != nullptr) {
    if (env->GetArrayLength(digest) != FOLDCP_CP_DIGEST_BYTES) {
      throw_plain(env, kInvalidInput, "digest length = " + std::to_string(env->GetArrayLength(digest)) +
                                          ": must be " + std::to_string(FOLDCP_CP_DIGEST_BYTES) + " bytes (SHA-256)");
      return false;
    }
    env->GetByteArrayRegion(digest, 0, FOLDCP_CP_DIGEST_BYTES, reinterpret_cast<jbyte*>(c->digest));
  }
  return true;
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM*, void*) { return JNI_VERSION_1_8; }

JNIEXPORT jint JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_nvshmemVersion(JNIEnv*, jclass) {
  return foldcp_cp_nvshmem_version();
}

JNIEXPORT jbyteArray JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_uniqueId(JNIEnv* env, jclass) {
  uint8_t id[FOLDCP_CP_UNIQUE_ID_BYTES] = {};
  if (check(env, foldcp_cp_unique_id(id), "foldcp_cp_unique_id")) return nullptr;
  jbyteArray out = env->NewByteArray(FOLDCP_CP_UNIQUE_ID_BYTES);
  if (out != nullptr) env->SetByteArrayRegion(out, 0, FOLDCP_CP_UNIQUE_ID_BYTES, reinterpret_cast<const jbyte*>(id));
  return out;
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_teamInit(JNIEnv* env, jclass, jbyteArray id, jint rank,
                                                                    jint nranks, jint device, jlong heap_bytes,
                                                                    jlong timeout_ms) {
  if (id == nullptr || env->GetArrayLength(id) != FOLDCP_CP_UNIQUE_ID_BYTES) {
    throw_plain(env, kInvalidInput, "unique id: must be the 128 bytes rank 0 made (NativeCp.uniqueId)");
    return;
  }
  if (heap_bytes < 0) {
    throw_plain(env, kInvalidInput, "heap bytes = " + std::to_string(heap_bytes) + ": must be >= 0");
    return;
  }
  uint8_t raw[FOLDCP_CP_UNIQUE_ID_BYTES];
  env->GetByteArrayRegion(id, 0, FOLDCP_CP_UNIQUE_ID_BYTES, reinterpret_cast<jbyte*>(raw));
  check(env, foldcp_cp_team_init(raw, rank, nranks, device, static_cast<size_t>(heap_bytes), timeout_ms),
        "foldcp_cp_team_init");
}

// {my PE, PEs, heap bytes, heap bytes used, broken (0/1)}
JNIEXPORT jlongArray JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_teamInfo(JNIEnv* env, jclass) {
  int me = -1, n = 0, broken = 0;
  size_t heap = 0, used = 0;
  if (check(env, foldcp_cp_team_info(&me, &n, &heap, &used, &broken), "foldcp_cp_team_info")) return nullptr;
  const jlong v[5] = {me, n, static_cast<jlong>(heap), static_cast<jlong>(used), broken};
  jlongArray out = env->NewLongArray(5);
  if (out != nullptr) env->SetLongArrayRegion(out, 0, 5, v);
  return out;
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_teamBarrier(JNIEnv* env, jclass) {
  check(env, foldcp_cp_team_barrier(), "foldcp_cp_team_barrier");
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_teamFinalize(JNIEnv* env, jclass) {
  check(env, foldcp_cp_team_finalize(), "foldcp_cp_team_finalize");
}

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_planBytes(JNIEnv* env, jclass, jlong batch, jlong n,
                                                                      jlong dim, jlong hidden, jint grid_rows,
                                                                      jint grid_cols, jlong tile_rows, jlong tile_cols,
                                                                      jint route, jint reshard) {
  foldcp_cp_config c;
  if (!config_from(env, batch, n, dim, hidden, grid_rows, grid_cols, tile_rows, tile_cols, route, reshard, nullptr,
                   &c))
    return -1;
  size_t bytes = 0;
  if (check(env, foldcp_cp_plan_bytes(&c, route, &bytes), "foldcp_cp_plan_bytes")) return -1;
  return static_cast<jlong>(bytes);
}

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_createPlan(JNIEnv* env, jclass, jlong batch, jlong n,
                                                                       jlong dim, jlong hidden, jint grid_rows,
                                                                       jint grid_cols, jlong tile_rows, jlong tile_cols,
                                                                       jint route, jint reshard, jbyteArray digest,
                                                                       jlongArray layers) {
  if (digest == nullptr || layers == nullptr) {
    throw_plain(env, kInvalidInput, "digest and layers must not be null");
    return 0;
  }
  foldcp_cp_config c;
  if (!config_from(env, batch, n, dim, hidden, grid_rows, grid_cols, tile_rows, tile_cols, route, reshard, digest,
                   &c))
    return 0;
  // handles of NativeTriMul.createLayer: foldcp_trimul_layer of libfoldcp_jni.so, whose kernels run them
  const jsize nl = env->GetArrayLength(layers);
  std::vector<jlong> handles(nl);
  env->GetLongArrayRegion(layers, 0, nl, handles.data());
  std::vector<foldcp_trimul_layer*> ls(nl);
  for (jsize i = 0; i < nl; ++i) ls[i] = as_ptr<foldcp_trimul_layer>(handles[i]);
  foldcp_cp_plan* plan = nullptr;
  if (check(env, foldcp_cp_plan_create(&c, ls.data(), nl, &plan), "foldcp_cp_plan_create")) return 0;
  return static_cast<jlong>(reinterpret_cast<uintptr_t>(plan));
}

JNIEXPORT jint JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_planRoute(JNIEnv*, jclass, jlong plan) {
  return foldcp_cp_plan_route(as_ptr<const foldcp_cp_plan>(plan));
}

JNIEXPORT jint JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_planReshard(JNIEnv*, jclass, jlong plan) {
  return foldcp_cp_plan_reshard(as_ptr<const foldcp_cp_plan>(plan));
}

// {bytes of reshard 1 (token -> channel), bytes of reshard 2 (channel -> token)} per forward
JNIEXPORT jlongArray JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_planReshardBytes(JNIEnv* env, jclass, jlong plan) {
  uint64_t a = 0, b = 0;
  if (check(env, foldcp_cp_plan_reshard_bytes(as_ptr<const foldcp_cp_plan>(plan), &a, &b),
            "foldcp_cp_plan_reshard_bytes"))
    return nullptr;
  const jlong v[2] = {static_cast<jlong>(a), static_cast<jlong>(b)};
  jlongArray out = env->NewLongArray(2);
  if (out != nullptr) env->SetLongArrayRegion(out, 0, 2, v);
  return out;
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_forward(JNIEnv* env, jclass, jlong plan, jlong x,
                                                                   jlong mask, jlong out, jlong stream) {
  check(env,
        foldcp_cp_forward(as_ptr<foldcp_cp_plan>(plan), as_ptr<const void>(x), as_ptr<const uint8_t>(mask),
                          as_ptr<void>(out), as_ptr<struct CUstream_st>(stream)),
        "foldcp_cp_forward");
}

// The input check of a rank's tile on the device (foldcp_trimul.h: the kernel of libfoldcp_jni.so,
// which this library links against), so that the rank's host path only copies bytes.
JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_nonFiniteScan(JNIEnv* env, jclass, jlong x, jlong count,
                                                                         jlong result, jlong stream) {
  nonfinite_scan(env, kCpMap, x, count, result, stream);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_destroyPlan(JNIEnv* env, jclass, jlong plan) {
  check(env, foldcp_cp_plan_destroy(as_ptr<foldcp_cp_plan>(plan)), "foldcp_cp_plan_destroy");
}

// ---- the heads all-to-all (foldcp_a2a.h)

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_a2aPlanBytes(JNIEnv* env, jclass, jlong batch,
                                                                         jlong seq_local, jlong heads, jlong head_dim,
                                                                         jint dtype, jint ranks, jint route) {
  const foldcp_a2a_config c{batch, seq_local, heads, head_dim, dtype, route};
  size_t bytes = 0;
  if (check(env, foldcp_a2a_plan_bytes(&c, ranks, route, &bytes), "foldcp_a2a_plan_bytes")) return -1;
  return static_cast<jlong>(bytes);
}

JNIEXPORT jlong JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_a2aCreate(JNIEnv* env, jclass, jlong batch, jlong seq_local,
                                                                      jlong heads, jlong head_dim, jint dtype,
                                                                      jint route) {
  const foldcp_a2a_config c{batch, seq_local, heads, head_dim, dtype, route};
  foldcp_a2a* plan = nullptr;
  if (check(env, foldcp_a2a_create(&c, &plan), "foldcp_a2a_create")) return 0;
  return static_cast<jlong>(reinterpret_cast<uintptr_t>(plan));
}

JNIEXPORT jint JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_a2aRoute(JNIEnv*, jclass, jlong plan) {
  return foldcp_a2a_route(as_ptr<const foldcp_a2a>(plan));
}

// {output buffer address, its bytes, bytes sent per call}
JNIEXPORT jlongArray JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_a2aBuffers(JNIEnv* env, jclass, jlong plan) {
  void* out = nullptr;
  size_t bytes = 0;
  uint64_t sent = 0;
  if (check(env, foldcp_a2a_output(as_ptr<const foldcp_a2a>(plan), &out, &bytes), "foldcp_a2a_output")) return nullptr;
  if (check(env, foldcp_a2a_bytes_sent(as_ptr<const foldcp_a2a>(plan), &sent), "foldcp_a2a_bytes_sent")) return nullptr;
  const jlong v[3] = {static_cast<jlong>(reinterpret_cast<uintptr_t>(out)), static_cast<jlong>(bytes),
                      static_cast<jlong>(sent)};
  jlongArray arr = env->NewLongArray(3);
  if (arr != nullptr) env->SetLongArrayRegion(arr, 0, 3, v);
  return arr;
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_a2aScatterHeads(JNIEnv* env, jclass, jlong plan, jlong in,
                                                                           jlong out, jlong stream) {
  check(env,
        foldcp_a2a_scatter_heads(as_ptr<foldcp_a2a>(plan), as_ptr<const void>(in), as_ptr<void>(out),
                                 as_ptr<struct CUstream_st>(stream)),
        "foldcp_a2a_scatter_heads");
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_a2aGatherHeads(JNIEnv* env, jclass, jlong plan, jlong in,
                                                                          jlong out, jlong stream) {
  check(env,
        foldcp_a2a_gather_heads(as_ptr<foldcp_a2a>(plan), as_ptr<const void>(in), as_ptr<void>(out),
                                as_ptr<struct CUstream_st>(stream)),
        "foldcp_a2a_gather_heads");
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_gpu_cp_NativeCp_a2aDestroy(JNIEnv* env, jclass, jlong plan) {
  check(env, foldcp_a2a_destroy(as_ptr<foldcp_a2a>(plan)), "foldcp_a2a_destroy");
}

}  // extern "C"
