// The NVSHMEM team of this process (one per process: NVSHMEM initialises once) and the timed,
// signal-based waits every CP step uses. Internal to libfoldcp_cp (cp_team.cu, cp_plan.cu,
// cp_forward.cu, a2a.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "foldcp_cp.h"
#include "../trimul_internal.h"

namespace foldcp {
namespace cp {

// Signal slots: each holds one uint64 per source rank, set by that rank to an epoch that only
// grows, so no slot is ever reset (a reset could race with a fast peer's next signal).
// kA2aReady / kA2aData: the heads all-to-all (a2a.cu): "I entered the call" and "my blocks for
// you have landed" (set by the signal kernel, or by a put with signal).
enum Slot { kBarrier = 0, kToChannels = 1, kToTokens = 2, kA2aReady = 3, kA2aData = 4, kSlots = 5 };
constexpr int kRecordBytes = 256;
static_assert(FOLDCP_CP_MAX_RANKS == kMaxRanks, "one rank limit for the header and the kernels");

struct Team {
  bool up = false;
  bool broken = false;
  int me = -1, n = 0, device = -1;
  size_t heap = 0, used = 0;
  int64_t timeout_ms = 0;
  // symmetric control block
  void* control = nullptr;
  uint64_t* sig = nullptr;       // [kSlots][kMaxRanks]
  uint8_t* rec_mine = nullptr;   // [kRecordBytes]: what this rank publishes
  uint8_t* rec_all = nullptr;    // [kMaxRanks][kRecordBytes]: gathered from every rank
  uint64_t epoch[kSlots] = {};
  // host-mapped flags: [r] = 1 when rank r did not signal in time; [kMaxRanks] = any wait failed
  int* miss_host = nullptr;
  int* miss_dev = nullptr;
  cudaStream_t stream = nullptr;  // the team's own stream (barriers and record exchange)
  size_t control_bytes = 0;
};

Team& team();
int cuda_fail(cudaError_t e, const char* what, int line);

// Fails (FOLDCP_ERR_TEAM) unless the team is up and not broken; `what` names the caller.
int require_team(const char* what);

// Enqueues "I am done with step `slot`" to every peer and a bounded wait until every peer said
// the same, on `s`. The epoch advances on the host at enqueue time, identically on every rank
// (every step is collective).
cudaError_t enqueue_signal_and_wait(Slot slot, cudaStream_t s);

// After the stream is synchronised: FOLDCP_OK, or FOLDCP_ERR_TEAM naming the ranks that did not
// signal within the timeout (and the team is marked broken).
int check_waits(const char* during);

// A barrier over the team bounded by the timeout (synchronous).
int timed_barrier(const char* during);

// Frees a plan's symmetric allocation of `bytes` (collective: nvshmem_free waits for every rank,
// so a timed barrier goes first). Frees nothing where the team is down or broken, or sym is NULL.
int free_symmetric(void* sym, size_t bytes, const char* during);

// Publishes `rec` (kRecordBytes) and gathers every rank's record into `all` (host,
// n * kRecordBytes). Collective and synchronous.
int exchange_records(const uint8_t* rec, uint8_t* all, const char* during);

// Device-initiated puts of a channel slice / z tile to peers (the PUT route), enqueued on `s`.
struct PutAb {
  const bf16_raw* stage_a;  // [rank][plane][tile_rows][tile_cols], plane = b * dloc + cl
  const bf16_raw* stage_b;
  bf16_raw* recv_a;  // symmetric: [plane][np][np] (stride sab)
  bf16_raw* recv_b;
  int64_t stage_rank;  // elements between ranks in the staging areas
  int64_t tile_rows, tile_cols, row0, col0, np, sab;
  int planes, me, n;
};
struct PutZ {
  const bf16_raw* stage;  // [rank][plane][tile_rows][tile_cols] (z is bf16)
  bf16_raw* recv;         // symmetric: [b * H + channel][tile_rows][tile_cols] (stride szt)
  int64_t stage_rank, tile_elems, szt;
  int dloc, hidden, planes, me, n;
};
cudaError_t launch_put_ab(const PutAb& p, cudaStream_t s);
cudaError_t launch_put_z(const PutZ& p, cudaStream_t s);

std::string ranks_text(const int* flags, int n);

}  // namespace cp
}  // namespace foldcp
