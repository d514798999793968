/*
 * libfoldcp_cpu.so: the CPU backend's native kernels behind org.foldcp.ops.cpu.NativeKernels.
 * Built with gcc alone (no CUDA). The variant (AVX-512 or AVX2 + FMA) is chosen by the Java side
 * once, from what variants() reports this CPU runs; a CPU with neither gets the pure-Java path.
 * Java checks every offset and length before it calls in; arrays are pinned
 * (GetPrimitiveArrayCritical) for the duration of one call, in which no JNI call is made.
 */
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kernels.h"

#define N_VARIANTS 2
static const struct foldcp_cpu_kernels *const VARIANTS[N_VARIANTS] = {&foldcp_cpu_kernels_avx512,
                                                                     &foldcp_cpu_kernels_avx2};

static int runs(int v) {
  __builtin_cpu_init();
  switch (v) {
    case 0: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    case 1: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return 0;
  }
}

static const struct foldcp_cpu_kernels *kernels(JNIEnv *env, jint v) {
  if (v < 0 || v >= N_VARIANTS || !runs(v)) {
    char msg[128];
    snprintf(msg, sizeof msg, "fold-cp CPU kernels: variant %d does not run on this CPU", (int) v);
    (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalStateException"), msg);
    return NULL;
  }
  return VARIANTS[v];
}

static void pin_failed(JNIEnv *env) {
  (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/OutOfMemoryError"),
                   "fold-cp CPU kernels: the JVM could not pin an array for a native call");
}

#define PIN(arr) ((arr) ? (*env)->GetPrimitiveArrayCritical(env, (arr), NULL) : NULL)
#define UNPIN(arr, p, mode) \
  do { if (p) (*env)->ReleasePrimitiveArrayCritical(env, (arr), (p), (mode)); } while (0)

/* Bit v set where variant v runs on this CPU. */
JNIEXPORT jint JNICALL Java_org_foldcp_ops_cpu_NativeKernels_variants(JNIEnv *env, jclass cls) {
  (void) env;
  (void) cls;
  jint bits = 0;
  for (int v = 0; v < N_VARIANTS; v++)
    if (runs(v)) bits |= 1 << v;
  return bits;
}

JNIEXPORT jstring JNICALL Java_org_foldcp_ops_cpu_NativeKernels_variantName(JNIEnv *env, jclass cls, jint v) {
  (void) cls;
  if (v < 0 || v >= N_VARIANTS) return NULL;
  return (*env)->NewStringUTF(env, VARIANTS[v]->name);
}

/* The CPU features that matter here, as names, space-separated. */
JNIEXPORT jstring JNICALL Java_org_foldcp_ops_cpu_NativeKernels_cpuFeatures(JNIEnv *env, jclass cls) {
  (void) cls;
  __builtin_cpu_init();
  char buf[128];
  snprintf(buf, sizeof buf, "%s%s%s%s", __builtin_cpu_supports("avx2") ? "avx2 " : "",
           __builtin_cpu_supports("fma") ? "fma " : "", __builtin_cpu_supports("avx512f") ? "avx512f " : "",
           __builtin_cpu_supports("avx512bf16") ? "avx512_bf16 " : "");
  return (*env)->NewStringUTF(env, buf);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_cpu_NativeKernels_nGemm(JNIEnv *env, jclass cls, jint v, jboolean ta,
                                                                   jboolean tb, jint m, jint n, jint k,
                                                                   jfloatArray a, jint aOff, jint lda,
                                                                   jfloatArray b, jint bOff, jint ldb,
                                                                   jfloatArray c, jint cOff, jint ldc,
                                                                   jboolean acc) {
  (void) cls;
  const struct foldcp_cpu_kernels *kv = kernels(env, v);
  if (!kv) return;
  float *pa = PIN(a);
  float *pb = PIN(b);
  float *pc = PIN(c);
  if (pa && pb && pc)
    kv->gemm(ta, tb, m, n, k, pa + aOff, lda, pb + bOff, ldb, pc + cOff, ldc, acc);
  UNPIN(c, pc, 0);
  UNPIN(b, pb, JNI_ABORT);
  UNPIN(a, pa, JNI_ABORT);
  if (!(pa && pb && pc)) pin_failed(env);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_cpu_NativeKernels_nLayerNormBf16(
    JNIEnv *env, jclass cls, jint v, jshortArray x, jint xOff, jint cols, jint d, jfloatArray w, jfloatArray bias,
    jfloat eps, jfloatArray out, jint outOff) {
  (void) cls;
  const struct foldcp_cpu_kernels *kv = kernels(env, v);
  if (!kv) return;
  uint16_t *px = PIN(x);
  float *pw = PIN(w);
  float *pbias = PIN(bias);
  float *po = PIN(out);
  int ok = px && pw && pbias && po;
  if (ok) kv->layer_norm_bf16(px + xOff, cols, d, pw, pbias, eps, po + outOff);
  UNPIN(out, po, 0);
  UNPIN(bias, pbias, JNI_ABORT);
  UNPIN(w, pw, JNI_ABORT);
  UNPIN(x, px, JNI_ABORT);
  if (!ok) pin_failed(env);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_cpu_NativeKernels_nLayerNormF32(
    JNIEnv *env, jclass cls, jint v, jfloatArray x, jint xOff, jint cols, jint d, jfloatArray w, jfloatArray bias,
    jfloat eps, jfloatArray out, jint outOff) {
  (void) cls;
  const struct foldcp_cpu_kernels *kv = kernels(env, v);
  if (!kv) return;
  float *px = PIN(x);
  float *pw = PIN(w);
  float *pbias = PIN(bias);
  float *po = PIN(out);
  int ok = px && pw && pbias && po;
  if (ok) kv->layer_norm_f32(px + xOff, cols, d, pw, pbias, eps, po + outOff);
  UNPIN(out, po, 0);
  UNPIN(bias, pbias, JNI_ABORT);
  UNPIN(w, pw, JNI_ABORT);
  UNPIN(x, px, JNI_ABORT);
  if (!ok) pin_failed(env);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_cpu_NativeKernels_nGateProjection(
    JNIEnv *env, jclass cls, jint v, jfloatArray proj, jint cc, jint cols, jfloatArray bias4, jint biasOff,
    jbyteArray mask, jfloatArray a, jfloatArray b) {
  (void) cls;
  const struct foldcp_cpu_kernels *kv = kernels(env, v);
  if (!kv) return;
  float *pp = PIN(proj);
  float *pbias = PIN(bias4);
  uint8_t *pm = PIN(mask);
  float *pa = PIN(a);
  float *pb = PIN(b);
  int ok = pp && pbias && (pm || !mask) && pa && pb;
  if (ok) kv->gate_projection(pp, cc, cols, pbias + biasOff, pm, pa, pb);
  UNPIN(b, pb, 0);
  UNPIN(a, pa, 0);
  UNPIN(mask, pm, JNI_ABORT);
  UNPIN(bias4, pbias, JNI_ABORT);
  UNPIN(proj, pp, JNI_ABORT);
  if (!ok) pin_failed(env);
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_cpu_NativeKernels_nGateOutput(
    JNIEnv *env, jclass cls, jint v, jfloatArray po, jfloatArray go, jint cols, jint d, jfloatArray pb,
    jfloatArray gb, jshortArray x, jint xOff, jboolean residual, jshortArray out, jint outOff) {
  (void) cls;
  const struct foldcp_cpu_kernels *kv = kernels(env, v);
  if (!kv) return;
  float *ppo = PIN(po);
  float *pgo = PIN(go);
  float *ppb = PIN(pb);
  float *pgb = PIN(gb);
  uint16_t *px = PIN(x);
  uint16_t *pout = PIN(out);
  int ok = ppo && pgo && ppb && pgb && px && pout;
  if (ok) kv->gate_output(ppo, pgo, cols, d, ppb, pgb, px + xOff, residual, pout + outOff);
  UNPIN(out, pout, 0);
  UNPIN(x, px, JNI_ABORT);
  UNPIN(gb, pgb, JNI_ABORT);
  UNPIN(pb, ppb, JNI_ABORT);
  UNPIN(go, pgo, JNI_ABORT);
  UNPIN(po, ppo, JNI_ABORT);
  if (!ok) pin_failed(env);
}

/* GFLOP/s of the calling thread running 12 independent FMA chains for about `seconds`. */
JNIEXPORT jdouble JNICALL Java_org_foldcp_ops_cpu_NativeKernels_nFmaRate(JNIEnv *env, jclass cls, jint v,
                                                                        jdouble seconds) {
  (void) cls;
  const struct foldcp_cpu_kernels *kv = kernels(env, v);
  if (!kv) return 0;
  struct timespec t0, t1;
  double flops = 0, elapsed = 0;
  long iters = 1 << 20;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (elapsed < seconds) {
    flops += kv->fma_chains(iters);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    elapsed = (double) (t1.tv_sec - t0.tv_sec) + 1e-9 * (double) (t1.tv_nsec - t0.tv_nsec);
  }
  return flops / elapsed / 1e9;
}

/*
 * Bulk host copy for org.foldcp.ops.cpu.NativeHostCopy: large blocks with non-temporal stores
 * (copy_avx2.c) where the CPU has AVX2, glibc's memcpy otherwise; Unsafe.copyMemory moves 8 bytes
 * per instruction through the cache (about half C memcpy's rate on the H200 host). A base of NULL means
 * its offset is a raw address; otherwise the base is a primitive array and the offset a byte index
 * into it. The arrays are pinned one slice at a time, so that a long copy never holds the garbage
 * collector off for more than one slice's memcpy.
 */
#define COPY_SLICE (4L << 20)
/* Below this a copy stays in the cache-friendly memcpy (a small block is likely read again soon). */
#define STREAM_MIN (256L << 10)

static int stream_copy(void) {
  static int v = -1; /* decided once; a race only computes the same answer twice */
  if (v < 0) {
    __builtin_cpu_init();
    v = __builtin_cpu_supports("avx2");
  }
  return v;
}

/* What nCopy uses for large blocks on this CPU. */
JNIEXPORT jstring JNICALL Java_org_foldcp_ops_cpu_NativeHostCopy_nKind(JNIEnv *env, jclass cls) {
  (void) cls;
  return (*env)->NewStringUTF(env, stream_copy() ? "AVX2 non-temporal stores (libfoldcp_cpu.so)"
                                                 : "glibc memcpy (libfoldcp_cpu.so)");
}

JNIEXPORT void JNICALL Java_org_foldcp_ops_cpu_NativeHostCopy_nCopy(JNIEnv *env, jclass cls, jobject src,
                                                                    jlong src_off, jobject dst, jlong dst_off,
                                                                    jlong len) {
  (void) cls;
  while (len > 0) {
    jlong n = len < COPY_SLICE ? len : COPY_SLICE;
    char *s = PIN(src);
    if (src && !s) { pin_failed(env); return; }
    char *d = PIN(dst);
    if (dst && !d) { UNPIN(src, s, JNI_ABORT); pin_failed(env); return; }
    char *from = src ? s + src_off : (char *) (intptr_t) src_off;
    char *to = dst ? d + dst_off : (char *) (intptr_t) dst_off;
    if (n >= STREAM_MIN && stream_copy()) {
      foldcp_copy_stream_avx2(to, from, (size_t) n);
    } else {
      memcpy(to, from, (size_t) n);
    }
    UNPIN(dst, d, 0);
    UNPIN(src, s, JNI_ABORT);
    src_off += n;
    dst_off += n;
    len -= n;
  }
}
