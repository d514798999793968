/*
 * fold-cp-spark: the sequence-parallel all-to-all of attention heads (Ulysses) on the NVSHMEM
 * team of foldcp_cp.h: the reshard that triangle attention needs under context parallelism, and
 * the unfused reference the A2A-fused CP TriMul is measured against.
 *
 * With W ranks (the team) and tensors in row-major order:
 *   scatter_heads: [B, S_local, H, Dh] on every rank -> [B, S, H / W, Dh] on every rank, S = W * S_local;
 *     rank r gets heads [r * H / W, (r + 1) * H / W) of every position, and position
 *     s = src * S_local + s' comes from position s' of rank src.
 *   gather_heads: its inverse, [B, S, H / W, Dh] -> [B, S_local, H, Dh].
 * The values are moved, never computed on: the result is bit for bit the input's (any dtype
 * of 2 or 4 bytes; NaN payloads included).
 *
 * Routes, chosen once when the plan is made, identically on every rank:
 *   PEER: one kernel reads this rank's input and stores every element straight into its final
 *     place in the receiver's output (the permute folded into the remote store addresses), then
 *     one signal per receiver;
 *   PUT: the blocks for each peer are packed contiguously and sent with device-initiated puts that
 *     raise a signal on arrival; each receiver unpacks a source's block as soon as its signal is
 *     set (for peers without a pointer: other nodes).
 *   AUTO: PEER when every rank reaches every peer by pointer, else PUT.
 * Every call starts with a device-side handshake (no host round trip): nobody stores into a peer
 * before that peer has entered the same call, so the output of the previous call stays valid
 * until then. Calls are collective (every rank, same order) and synchronous: they return when
 * this rank's output is complete, or fail naming the ranks that did not arrive in time.
 *
 * Buffers are the plan's and are reused across calls. The plan's output buffer
 * (foldcp_a2a_output) may be passed as `out` to skip the final copy (zero copy); it then holds
 * the result until the next call on the plan. `in` may be any device memory of the caller, but
 * must not overlap `out` or the plan's output buffer.
 *
 * Errors: as foldcp_cp.h.
 */
#ifndef FOLDCP_A2A_H
#define FOLDCP_A2A_H

#include <stddef.h>
#include <stdint.h>

#include "foldcp_cp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum foldcp_a2a_dtype { FOLDCP_A2A_BF16 = 0, FOLDCP_A2A_F16 = 1, FOLDCP_A2A_F32 = 2 } foldcp_a2a_dtype;

typedef struct foldcp_a2a_config {
  int64_t batch;      /* B >= 1 */
  int64_t seq_local;  /* S_local >= 1: positions per rank */
  int64_t heads;      /* H: divisible by the team size */
  int64_t head_dim;   /* Dh >= 1 */
  int dtype;          /* foldcp_a2a_dtype */
  int route;          /* foldcp_cp_route */
} foldcp_a2a_config;

typedef struct foldcp_a2a foldcp_a2a;

/* Symmetric-heap bytes a plan of this configuration allocates on every rank of a team of
 * `ranks` (no device needed). */
int foldcp_a2a_plan_bytes(const foldcp_a2a_config* cfg, int ranks, int route, size_t* bytes);

/* Makes a plan on every rank (collective): compares the configurations, picks the route, checks
 * the heap, allocates the symmetric buffers. */
int foldcp_a2a_create(const foldcp_a2a_config* cfg, foldcp_a2a** plan);

/* Route the plan uses (FOLDCP_CP_PEER or FOLDCP_CP_PUT). */
int foldcp_a2a_route(const foldcp_a2a* plan);

/* The plan's output buffer (B * S_local * H * Dh elements) and its size in bytes. */
int foldcp_a2a_output(const foldcp_a2a* plan, void** out, size_t* bytes);

/* Bytes that leave this rank per call (every block but its own). */
int foldcp_a2a_bytes_sent(const foldcp_a2a* plan, uint64_t* bytes);

/* The two reshards (collective, synchronous on `stream`). */
int foldcp_a2a_scatter_heads(foldcp_a2a* plan, const void* in, void* out, foldcp_stream_t stream);
int foldcp_a2a_gather_heads(foldcp_a2a* plan, const void* in, void* out, foldcp_stream_t stream);

/* Frees the plan (collective). A plan of a broken team is released locally only. */
int foldcp_a2a_destroy(foldcp_a2a* plan);

#ifdef __cplusplus
}
#endif

#endif /* FOLDCP_A2A_H */
