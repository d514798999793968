/*
 * fold-cp-spark native TriMul, single GPU (sm_90, Hopper): C host API.
 *
 * One TriMul layer forward (docs/design.md section 1), both directions:
 *   xn  = LN_in(x)
 *   ab  = sigmoid(xn g_in^T + g_in.bias) * (xn p_in^T + p_in.bias) * mask[..., None]   (2H channels)
 *   outgoing: z[b,i,j,c] = sum_k a[b,i,k,c] b[b,j,k,c]
 *   incoming: z[b,i,j,c] = sum_k a[b,k,i,c] b[b,k,j,c]
 *   out = sigmoid(xn g_out^T + g_out.bias) * (LN_out(z) p_out^T + p_out.bias)  (+ x if residual)
 * x and out are bf16 (B, N, N, D) row-major on the device; mask is uint8 (B, N, N) (nonzero =
 * valid) or NULL (all valid). Accumulation is fp32; z is kept in bf16 between the stages.
 *
 * Usage: create a layer (uploads weights once, converted to bf16 on the device), query the
 * workspace size for (B, N, H), allocate it once, then call foldcp_trimul_forward as often as
 * needed (options: a channel group, stage times). Everything stays on the device, so a stack of
 * layers can run back to back on one stream; out may be the same buffer as x (in place), which
 * a layer stack can use.
 *
 * Errors: every function returns a foldcp_status; on failure foldcp_last_error() (per calling
 * thread) holds a message that names the offending value and the rule, or the failing CUDA call.
 * A failed forward leaves out undefined: never treat it as a result.
 */
#ifndef FOLDCP_TRIMUL_H
#define FOLDCP_TRIMUL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same type as cudaStream_t / CUstream, declared here so that callers need no CUDA headers. */
struct CUstream_st;
typedef struct CUstream_st* foldcp_stream_t;

typedef struct foldcp_trimul_layer foldcp_trimul_layer;

typedef enum foldcp_status {
  FOLDCP_OK = 0,
  FOLDCP_ERR_INVALID_ARGUMENT = 1,   /* bad shape, pointer, weight or option */
  FOLDCP_ERR_UNSUPPORTED_DEVICE = 2, /* no CUDA device, or not sm_90 */
  FOLDCP_ERR_OUT_OF_MEMORY = 3,      /* a device allocation failed */
  FOLDCP_ERR_WORKSPACE_TOO_SMALL = 4,
  FOLDCP_ERR_CUDA = 5                /* any other CUDA error (message names the call) */
} foldcp_status;

typedef enum foldcp_direction { FOLDCP_OUTGOING = 0, FOLDCP_INCOMING = 1 } foldcp_direction;

/* Layer weights: host pointers to float32 arrays in PyTorch layout (Linear weight = [out][in]).
 * D is the pair width (the channels of x and out), H the hidden width (the channels of a, b and
 * z: OpenFold's c_hidden); H = D in AlphaFold3 and Boltz. The optional biases may be NULL
 * (= zeros). Nothing is retained after foldcp_trimul_create. Zero-initialize the struct
 * (foldcp_trimul_weights w = {0}; or {} in C++): hidden = 0 means H = D. */
typedef struct foldcp_trimul_weights {
  int64_t dim;       /* D: a multiple of 32, 32..512 */
  int direction;     /* foldcp_direction */
  int residual;      /* nonzero: out += x */
  float eps;         /* LayerNorm eps (> 0; 1e-5 in the models) */
  const float* norm_in_weight;  /* [D] */
  const float* norm_in_bias;    /* [D] */
  const float* p_in_weight;     /* [2H][D] */
  const float* g_in_weight;     /* [2H][D] */
  const float* norm_out_weight; /* [H] */
  const float* norm_out_bias;   /* [H] */
  const float* p_out_weight;    /* [D][H] */
  const float* g_out_weight;    /* [D][D] */
  const float* p_in_bias;       /* [2H] or NULL */
  const float* g_in_bias;       /* [2H] or NULL */
  const float* p_out_bias;      /* [D] or NULL */
  const float* g_out_bias;      /* [D] or NULL */
  int64_t hidden;               /* H: a multiple of 32, 32..512; 0 = D */
} foldcp_trimul_weights;

/* Message of the last failure on this thread ("" if none). Valid until the next call. */
const char* foldcp_last_error(void);
/* Constant name of a status code, e.g. "FOLDCP_ERR_INVALID_ARGUMENT". */
const char* foldcp_status_name(int status);

/* Checks (B, N, D) against the kernels' rules without touching the device. */
int foldcp_trimul_check_shape(int64_t B, int64_t N, int64_t D);

/* Checks a layer's pair width D and hidden width H (0 = D) against the kernels' rules without
 * touching the device: both multiples of 32 in [32, 512]. */
int foldcp_trimul_check_dims(int64_t D, int64_t H);

/* The workspace functions below count the channels of the triangle product, C: the layer's hidden
 * width H (which is D for a layer without a hidden width of its own). */

/* Device workspace bytes a forward of B complexes of N tokens through a layer of hidden width C
 * needs (checks the shape first). */
int foldcp_trimul_workspace_size(int64_t B, int64_t N, int64_t C, size_t* bytes);

/* Channel groups (foldcp_forward_options.group), for pair tensors whose intermediates do not fit
 * at once: stages 1 and 2 run once per group of `group` channels (a multiple of 8 in [8, C]; the
 * last group may be smaller), so the workspace holds a and b for one group plus z for all C
 * channels (stage 3's LayerNorm needs them all). group = C is the ungrouped forward. The result
 * is the same as ungrouped, bit for bit (each channel is computed by the same arithmetic). Stage 1
 * computes 32 channels at a time: a group that is not a multiple of 32 costs stage 1 up to 4x
 * (group 8), which the chooser below takes only where no multiple of 32 fits. */
int foldcp_trimul_workspace_size_group(int64_t B, int64_t N, int64_t C, int64_t group, size_t* bytes);
/* The largest group whose workspace fits in bytes_available, among C, C - 32, ..., 32, then 16
 * and 8; FOLDCP_ERR_OUT_OF_MEMORY, with the bytes needed for a group of 8, when none does. */
int foldcp_trimul_channel_group(int64_t B, int64_t N, int64_t C, size_t bytes_available, int64_t* group);

/* Creates a layer on the current CUDA device: checks the weights (shapes by D and H, finiteness),
 * uploads them and converts them to bf16 on the device. Synchronous. */
int foldcp_trimul_create(const foldcp_trimul_weights* w, foldcp_trimul_layer** layer);

/* Frees the layer's device memory (switching to its device for that). NULL is allowed. */
int foldcp_trimul_destroy(foldcp_trimul_layer* layer);

/* D, H, direction and residual flag of a layer (any pointer may be NULL). */
int foldcp_trimul_layer_info(const foldcp_trimul_layer* layer, int64_t* dim, int64_t* hidden, int* direction,
                             int* residual);

/* Options of one forward. Start from FOLDCP_FORWARD_OPTIONS_INIT, then set what you need:
 *   foldcp_forward_options o = FOLDCP_FORWARD_OPTIONS_INIT;
 *   o.group = 64;
 * Passing NULL instead means all defaults. The struct grows at its end in later versions:
 * struct_size (sizeof the caller's struct) tells the library which fields the caller has; a
 * library older than the caller's header accepts the larger struct only while the fields it does
 * not know are zero. */
typedef struct foldcp_forward_options {
  size_t struct_size; /* sizeof(foldcp_forward_options), as FOLDCP_FORWARD_OPTIONS_INIT sets it */
  /* Channel group: stages 1 and 2 run once per group of `group` channels (a multiple of 8 in
   * [8, H]; the last group may be smaller), for pair tensors whose intermediates do not fit at
   * once; the workspace must then hold foldcp_trimul_workspace_size_group(B, N, H, group) bytes.
   * The result equals the ungrouped forward's bit for bit. 0 (the default) = H, ungrouped. */
  int64_t group;
  /* Stage times, for benchmarks: NULL (the default), or a float[3] that receives, in ms,
   * [0] LN_in + input projection + gates, [1] triangle GEMM (each summed over the channel
   * groups), [2] LN_out + output projection + gate (+ residual). Timed with CUDA events around
   * the launches; the call then returns only when the forward's kernels on `stream` are done. */
  float* stage_ms;
} foldcp_forward_options;

#define FOLDCP_FORWARD_OPTIONS_INIT {sizeof(foldcp_forward_options), 0, NULL}

/* One forward on the device, asynchronous on `stream` (NULL = legacy default stream) unless
 * opts asks for stage times.
 * x, out: device bf16 (B, N, N, D), 16-byte aligned; out may equal x (in place) but must not
 * otherwise overlap it. mask: device uint8 (B, N, N) or NULL. workspace: device memory of at
 * least foldcp_trimul_workspace_size(B, N, H) bytes for the layer's hidden width H
 * (foldcp_trimul_workspace_size_group with a channel group), 256-byte aligned, not overlapping
 * x/out. opts: NULL for the defaults, or see foldcp_forward_options. The current device must be the layer's. */
int foldcp_trimul_forward(const foldcp_trimul_layer* layer, const void* x, const uint8_t* mask, void* out, int64_t B,
                          int64_t N, void* workspace, size_t workspace_bytes, const foldcp_forward_options* opts,
                          foldcp_stream_t stream);

/* The input check for NaN and Inf on the device, asynchronous on `stream`: counts the bf16 values
 * of x (`count` of them, x 16-byte aligned) whose exponent bits are all ones and finds the first.
 * result: device memory of two uint64 (8-byte aligned), written by the stream:
 *   result[0] = how many values are NaN or +-Inf,
 *   result[1] = (index << 16) | bits of the first of them (smallest flat index), ~0 when none.
 * Read it back after the stream has run; count < 2^48. */
int foldcp_nonfinite_scan(const void* x, uint64_t count, void* result, foldcp_stream_t stream);

/* FLOPs of one layer forward as docs/benchmarks.md counts them, for pair width D and hidden width
 * H (0 = D): 2 B N^3 H (the triangle) + 8 B N^2 D H (p_in, g_in) + 2 B N^2 D (H + D) (p_out,
 * g_out); 2 B N^3 D + 12 B N^2 D^2 when H = D. */
double foldcp_trimul_flops(int64_t B, int64_t N, int64_t D, int64_t H);

#ifdef __cplusplus
}
#endif

#endif /* FOLDCP_TRIMUL_H */
