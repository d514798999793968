/*
 * fold-cp-spark: the context-parallel (CP) TriMul on an NVSHMEM team of GPUs (sm_90a).
 *
 * One process per rank (one Spark executor per GPU, or several processes sharing one GPU in the
 * tests). Every rank holds one token tile of the pair tensor (docs/design.md section 2): the CP grid is
 * cp0 x cp1 tiles of tile_rows x tile_cols tokens over the padded N_t x N_t grid
 * (N_t = cp0 * tile_rows = cp1 * tile_cols >= N; tokens >= N are masked padding). Per layer:
 *   1. LN_in + projection + gates + mask on the local tile; the epilogue stores a and b
 *      channel-major straight into the buffer of the rank that owns each channel (D / cp
 *      channels per rank): the first all-to-all, fused into the store;
 *   2. a signal per rank (no host round trip) says its part has landed;
 *   3. the triangle GEMM of the local channels over the whole grid; its epilogue stores z into
 *      the buffer of the rank that owns each token: the second all-to-all, fused into the store;
 *   4. LN_out + output projection + gate (+ residual) on the local tile.
 * Two store routes of the same kernels, chosen once when a plan is created and identical on every
 * rank: PEER stores through NVSHMEM peer pointers (nvshmem_ptr; GPUs of one node, or processes
 * sharing one GPU); PUT stores each peer's part into a local symmetric staging area and sends it
 * with device-initiated puts (peers without a pointer, e.g. other nodes). AUTO picks PEER when
 * every rank reaches every peer by pointer, else PUT.
 *
 * Everything that waits on a peer (team barrier, the two reshard signals) gives up after the
 * team's timeout and names the ranks that did not arrive; the team is then broken: every later
 * call fails at once (FOLDCP_ERR_TEAM) and the process should be recycled.
 *
 * Errors: as foldcp_trimul.h (foldcp_last_error() on the calling thread), plus the codes below.
 */
#ifndef FOLDCP_CP_H
#define FOLDCP_CP_H

#include <stddef.h>
#include <stdint.h>

#include "foldcp_trimul.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FOLDCP_CP_UNIQUE_ID_BYTES 128
#define FOLDCP_CP_MAX_RANKS 16
#define FOLDCP_CP_DIGEST_BYTES 32

/* Status codes beyond foldcp_status. */
#define FOLDCP_ERR_TEAM 6           /* a peer did not arrive in time, or the team is broken */
#define FOLDCP_ERR_HEAP_TOO_SMALL 7 /* the symmetric heap cannot hold the plan's buffers */
#define FOLDCP_ERR_MISMATCH 8       /* ranks disagree (weights digest, shape, grid, route) */

typedef enum foldcp_cp_route { FOLDCP_CP_AUTO = 0, FOLDCP_CP_PEER = 1, FOLDCP_CP_PUT = 2 } foldcp_cp_route;

/* How the two reshards run. FUSED: inside the epilogues' stores (the header comment above).
 * UNFUSED: the same kernels store locally (channel slices and z tiles in per-rank staging), and a
 * separate all-to-all moves them: on the PEER route the strided block copy of the all-to-all
 * primitive (foldcp_a2a.h) through peer pointers; on the PUT route the puts, which is what the
 * PUT route does anyway (the two settings are the same there). The reference fusion is measured
 * against; the results are identical. */
typedef enum foldcp_cp_reshard { FOLDCP_CP_FUSED = 0, FOLDCP_CP_UNFUSED = 1 } foldcp_cp_reshard;

/* Name of a status code, including the CP ones. */
const char* foldcp_cp_status_name(int status);

/* NVSHMEM version this library was built against, e.g. 30405. */
int foldcp_cp_nvshmem_version(void);

/* A fresh NVSHMEM unique id (rank 0 makes it; every rank passes it to foldcp_cp_team_init).
 * Needs no GPU and no initialised team. */
int foldcp_cp_unique_id(uint8_t id[FOLDCP_CP_UNIQUE_ID_BYTES]);

/* Joins the team once per process: selects `device`, sets the symmetric heap to heap_bytes, and
 * initialises NVSHMEM from the unique id as PE `rank` of `nranks`. timeout_ms bounds every later
 * wait on a peer. A second call fails (NVSHMEM initialises once per process). */
int foldcp_cp_team_init(const uint8_t id[FOLDCP_CP_UNIQUE_ID_BYTES], int rank, int nranks, int device,
                        size_t heap_bytes, int64_t timeout_ms);

/* The team of this process: my PE, number of PEs, heap size and bytes our plans hold in it, and
 * whether it is broken (a peer failed to arrive). Fails if no team was initialised. */
int foldcp_cp_team_info(int* my_pe, int* n_pes, size_t* heap_bytes, size_t* heap_used, int* broken);

/* A barrier over the team, bounded by the timeout (names the ranks that did not arrive). */
int foldcp_cp_team_barrier(void);

/* Finalises NVSHMEM (at process exit; plans must be destroyed first). */
int foldcp_cp_team_finalize(void);

typedef struct foldcp_cp_plan foldcp_cp_plan;

typedef struct foldcp_cp_config {
  int64_t batch;      /* B */
  int64_t n;          /* N: valid tokens of the whole complex */
  int64_t dim;        /* D: the pair width, a multiple of 32 in [32, 512] */
  int grid_rows;      /* cp0 */
  int grid_cols;      /* cp1; cp0 * cp1 must equal the team size */
  int64_t tile_rows;  /* tokens per tile: multiples of 8, cp0 * tile_rows = cp1 * tile_cols >= n */
  int64_t tile_cols;
  int route;          /* foldcp_cp_route */
  int reshard;        /* foldcp_cp_reshard */
  /* digest of the whole layer stack (and anything else that must agree), compared across ranks */
  uint8_t digest[FOLDCP_CP_DIGEST_BYTES];
  /* H: the layers' hidden width (the channels of a, b and z that the reshards carry), divisible by
   * cp; 0 = D. Zero-initialize the struct. */
  int64_t hidden;
} foldcp_cp_config;

/* Symmetric-heap bytes a plan of this configuration allocates on every rank for `route` (no device
 * needed; cfg->route is not read, cfg->reshard is). */
int foldcp_cp_plan_bytes(const foldcp_cp_config* cfg, int route, size_t* bytes);

/* Creates a plan on every rank (collective: every rank calls it with its own layers, the same
 * configuration and the same digest): compares configuration and digests across ranks, picks
 * the route, checks the heap, allocates the symmetric buffers and resolves the peer pointers.
 * `layers` are nlayers layers of foldcp_trimul_create (all of widths D and H), run in order. */
int foldcp_cp_plan_create(const foldcp_cp_config* cfg, foldcp_trimul_layer* const* layers, int nlayers,
                          foldcp_cp_plan** plan);

/* Route the plan uses (FOLDCP_CP_PEER or FOLDCP_CP_PUT). */
int foldcp_cp_plan_route(const foldcp_cp_plan* plan);

/* Reshard mode the plan uses (foldcp_cp_reshard). */
int foldcp_cp_plan_reshard(const foldcp_cp_plan* plan);

/* Bytes of one forward of the whole stack that leave this rank in each fused reshard
 * (token -> channel, channel -> token), summed over the layers. */
int foldcp_cp_plan_reshard_bytes(const foldcp_cp_plan* plan, uint64_t* to_channels, uint64_t* to_tokens);

/* Runs every layer of the plan on this rank's tile (collective): x and out are device bf16
 * (B, tile_rows, tile_cols, D), out may equal x; mask is device uint8 (B, tile_rows, tile_cols) or
 * NULL. Tokens at or past N are treated as masked whatever the mask says. Returns when the
 * stack has finished on this rank (it synchronises `stream`), so that a peer that did not arrive
 * is reported here, with its rank, and never as a result. */
int foldcp_cp_forward(foldcp_cp_plan* plan, const void* x, const uint8_t* mask, void* out, foldcp_stream_t stream);

/* Frees the plan (collective: nvshmem_free). A plan of a broken team is released locally only. */
int foldcp_cp_plan_destroy(foldcp_cp_plan* plan);

#ifdef __cplusplus
}
#endif

#endif /* FOLDCP_CP_H */
