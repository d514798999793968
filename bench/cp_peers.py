#!/usr/bin/env python3
"""TriMul under context parallelism, one process per GPU: ours (libfoldcp_cp.so: the NVSHMEM team
with the two reshards fused into the GEMM epilogues, and the same kernels with a separate
all-to-all) against the PyTorch context-parallel baseline (torch.distributed all_to_all_single over
NCCL, token -> channel -> token) and against our cp = 1 on one of the GPUs.

Protocol (docs/benchmarks.md): the same inputs on every arm (bf16 x, a mask with ~5% zeros, random
weights with biases, generated identically on every rank from one seed), every arm checked at a
small shape first (the assembled tiles against a float64 reference, and ours against our cp = 1),
warm-up, then >= 10 timed iterations per arm (one for a memory-scale shape); before each sample
the ranks are aligned by a barrier, the sample is the slowest rank's wall time (all_reduce MAX),
the arms are interleaved and their order rotated every iteration, the median is reported. An arm
that failed its check is not timed and gets status error at every shape of that grid and
direction; a plan the heap cannot hold, or a cp = 1 arm that does not fit on GPU 0, gets status
oom. Rows are saved as they come, so a run that dies keeps what it measured.
Rows: date,commit,gpu,placement,cp,grid,direction,B,N,D,arm,median_ms,peak_gib,status
(arms: ours, ours_unfused, torch_cp_nccl, ours_cp1; placement gpu_per_rank, or shared_gpu with
--shared-gpu: every rank on GPU 0, which proves the arms and is no speed figure, see fold_team.py;
there NCCL refuses and torch_cp_nccl gets status nccl_refused). peak_gib: for torch_cp_nccl what the caching
allocator holds at its peak on top of what was resident before it ran, plus its input and output
tiles; for ours the plan's symmetric-heap bytes plus the tiles.

The tiles: grid cp0 x cp1 over N_t x N_t tokens, N_t the smallest multiple of 8 cp0 and 8 cp1 that
holds N; rank r holds tile (r // cp1, r % cp1) (the layout of foldcp_cp.h). The baseline runs the
same formulation as bench/torch_peers.py (docs/design.md section 1, einsum, bf16) on the same tiles:
stage 1 on the token tile, all_to_all of a and b to D / cp channels per rank over the whole grid
(the permutes that assemble the grid are part of it), the triangle einsum on those channels,
all_to_all of z back to the token tiles, stage 3 on the tile.

Usage: python3 bench/cp_peers.py --lib native/build/libfoldcp_cp.so --grids 2x1,1x2 [--csv out.csv]
           [--shapes "1,1024,128;1,2048,128"] [--memory-shapes "1,16384,128"] [--iters 10] [--shared-gpu]
Needs as many GPUs as ranks (cp0 * cp1, the same for every grid) and prints SKIP otherwise, unless
--shared-gpu.
"""
import argparse
import ctypes
import hashlib
import math
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

from fold_team import (FoldLib, Placement, ROUTES, agree, enough_gpus, gather_to, placement_args, probe_if_shared,
                       save_row, slowest, spawn, start, write_csv)
from torch_cp import torch_cp_layer
from torch_peers import EPS, make_trimul, make_weights, rel_err

DIGEST_BYTES = 32
CHECK_N = 200  # the correctness shape's N (B = 1): every arm against float64 and ours against cp = 1


class CpConfig(ctypes.Structure):
    """foldcp_cp_config; hidden (the layers' H, 0 = D) is left 0: these layers are square."""
    _fields_ = [("batch", ctypes.c_int64), ("n", ctypes.c_int64), ("dim", ctypes.c_int64),
                ("grid_rows", ctypes.c_int), ("grid_cols", ctypes.c_int), ("tile_rows", ctypes.c_int64),
                ("tile_cols", ctypes.c_int64), ("route", ctypes.c_int), ("reshard", ctypes.c_int),
                ("digest", ctypes.c_uint8 * DIGEST_BYTES), ("hidden", ctypes.c_int64)]


class OursCp(FoldLib):
    """FoldLib plus the CP plans of foldcp_cp.h."""

    def __init__(self, path):
        super().__init__(path)
        L = self.lib
        L.foldcp_cp_plan_bytes.argtypes = [ctypes.POINTER(CpConfig), ctypes.c_int, ctypes.POINTER(ctypes.c_size_t)]
        L.foldcp_cp_plan_create.argtypes = [ctypes.POINTER(CpConfig), ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                            ctypes.POINTER(ctypes.c_void_p)]
        L.foldcp_cp_plan_route.argtypes = [ctypes.c_void_p]
        L.foldcp_cp_forward.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_void_p]
        L.foldcp_cp_plan_destroy.argtypes = [ctypes.c_void_p]

    def plan_bytes(self, cfg, route):
        n = ctypes.c_size_t()
        self.check(self.lib.foldcp_cp_plan_bytes(ctypes.byref(cfg), route, ctypes.byref(n)), "cp_plan_bytes")
        return n.value

    def plan(self, cfg, layers):
        arr = (ctypes.c_void_p * len(layers))(*[h.value for h in layers])
        p = ctypes.c_void_p()
        self.heap_error(self.lib.foldcp_cp_plan_create(ctypes.byref(cfg), arr, len(layers), ctypes.byref(p)),
                        "cp_plan_create")
        return p

    def cp_forward(self, plan, x, mask_u8, out):
        self.check(self.lib.foldcp_cp_forward(plan, x.data_ptr(), mask_u8.data_ptr(), out.data_ptr(),
                                              torch.cuda.current_stream().cuda_stream), "cp_forward")


# ----------------------------------------------------------------------------- geometry
def tiles(n, cp0, cp1):
    step = math.lcm(8 * cp0, 8 * cp1)
    nt = -(-n // step) * step
    return nt, nt // cp0, nt // cp1


def config(B, N, D, cp0, cp1, reshard, digest):
    nt, tr, tc = tiles(N, cp0, cp1)
    c = CpConfig(B, N, D, cp0, cp1, tr, tc, 0, reshard)
    ctypes.memmove(c.digest, digest, DIGEST_BYTES)
    return c


def digest_of(p, direction):
    h = hashlib.sha256(direction.encode())
    for k in sorted(p):
        h.update(k.encode())
        h.update(p[k].numpy().tobytes())
    return h.digest()


# ----------------------------------------------------------------------------- one rank
def inputs(B, N, D, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(B, N, N, D, device="cuda", dtype=torch.bfloat16, generator=gen).add_(0.3)
    m = (torch.rand(B, N, N, device="cuda", generator=gen) > 0.05).to(torch.uint8)
    return x, m


def inputs_tile(B, tr, tc, D, N, rank, cp1, seed):
    """This rank's tile of a memory-scale input (its own random values; zeros past N)."""
    gen = torch.Generator(device="cuda").manual_seed(seed * 1000 + rank)
    x = torch.randn(B, tr, tc, D, device="cuda", dtype=torch.bfloat16, generator=gen).add_(0.3)
    m = (torch.rand(B, tr, tc, device="cuda", generator=gen) > 0.05).to(torch.uint8)
    i, j = divmod(rank, cp1)
    rows, cols = max(0, min(tr, N - i * tr)), max(0, min(tc, N - j * tc))
    x[:, rows:] = 0
    x[:, :, cols:] = 0
    m[:, rows:] = 0
    m[:, :, cols:] = 0
    return x, m


def tile_of(t, rank, cp1, tr, tc):
    i, j = divmod(rank, cp1)
    shape = (t.shape[0], tr, tc) + tuple(t.shape[3:])
    out = t.new_zeros(shape)
    part = t[:, i * tr:(i + 1) * tr, j * tc:(j + 1) * tc]
    out[:, :part.shape[1], :part.shape[2]] = part
    return out


def assemble(out_t, N, cp0, cp1, world):
    parts = gather_to(out_t, world)
    B, tr, tc = out_t.shape[:3]
    full = out_t.new_empty((B, cp0 * tr, cp1 * tc) + tuple(out_t.shape[3:]))
    for src in range(world):
        i, j = divmod(src, cp1)
        full[:, i * tr:(i + 1) * tr, j * tc:(j + 1) * tc] = parts[src]
    return full[:, :N, :N]


def run_shape(ours, layer_cache, B, N, D, direction, cp0, cp1, rank, world, iters, log, memory=False, check=False,
              bad=()):
    """One grid x direction x shape on every rank. check: the correctness pass (no timing):
    returns {arm: "error"} for the arms that missed the contract (against float64, or ours against
    our cp = 1). Else returns rank 0's rows (arm, median_ms, peak_gib, status); arms in `bad` (they
    failed the check of this grid and direction) are not timed and give status error.
    memory: a memory-scale shape: each rank makes only its own tile (the whole x would not fit on
    one GPU), and only ours (fused) runs, in place.
    Errors that hit one rank only (a CUDA error, an allocation that fails on one rank) are not
    caught: the process exits, mp.spawn ends the others, and the rows written so far remain. Only
    decisions every rank takes together are handled here: a plan the heap cannot hold (the plan is
    collective) and a cp = 1 arm that does not fit on GPU 0 (agreed by an all_reduce)."""
    world_t = cp0 * cp1
    p32 = make_weights(D, torch.Generator().manual_seed(1000 + D), bias=True)
    pb = {k: v.to("cuda", torch.bfloat16) for k, v in p32.items()}
    key = (D, direction)
    if key not in layer_cache:
        layer_cache[key] = ours.layer(p32, direction)
    h = layer_cache[key]
    digest = digest_of(p32, direction)
    nt, tr, tc = tiles(N, cp0, cp1)
    if memory:
        x = m = None
        x_t, m_t = inputs_tile(B, tr, tc, D, N, rank, cp1, seed=7 + N + D)
    else:
        x, m = inputs(B, N, D, seed=7 + N + D)
        x_t, m_t = tile_of(x, rank, cp1, tr, tc), tile_of(m, rank, cp1, tr, tc)
        if rank != 0 and not check:
            x = m = None  # only rank 0 needs the whole input (the cp = 1 arm)
    mb_t = m_t.to(torch.bfloat16)
    rows, arms, plans = [], {}, []
    tile_bytes = (1 if memory else 2) * x_t.numel() * 2 + m_t.numel()

    # ours, fused and unfused reshards (memory scale: fused only)
    for arm, reshard in (("ours", 0),) + ((("ours_unfused", 1),) if not memory else ()):
        if arm in bad:
            rows.append((arm, None, None, "error"))
            continue
        cfg = config(B, N, D, cp0, cp1, reshard, digest)
        try:
            plan = ours.plan(cfg, [h])
        except MemoryError as e:
            log(f"{arm}: {e}")
            rows.append((arm, None, None, "oom"))
            continue
        plans.append(plan)
        out_t = x_t if memory else torch.empty_like(x_t)  # memory scale: in place (foldcp_cp.h allows it)
        heap_gib = ours.plan_bytes(cfg, ours.lib.foldcp_cp_plan_route(plan)) / 2**30
        log(f"{arm}: route {ROUTES[ours.lib.foldcp_cp_plan_route(plan)]}, {heap_gib:.2f} GiB of heap")
        arms[arm] = (lambda plan=plan, out_t=out_t: (ours.cp_forward(plan, x_t, m_t, out_t), out_t)[1],
                     heap_gib + tile_bytes / 2**30)

    # the PyTorch CP baseline
    def torch_arm():
        return torch_cp_layer(x_t, mb_t, pb, direction, cp0, cp1, rank, world_t)

    if not memory:
        if not Placement.nccl_ok:
            rows.append(("torch_cp_nccl", None, None, "nccl_refused"))
        elif "torch_cp_nccl" in bad:
            rows.append(("torch_cp_nccl", None, None, "error"))
        else:
            arms["torch_cp_nccl"] = (torch_arm, None)

    # ours at cp = 1 on rank 0 (the others wait at the barrier); whether it fits is agreed by all
    out1 = ws = None
    if not memory:
        if rank == 0:
            try:
                out1 = torch.empty_like(x)
                ws = torch.empty(ours.ws_bytes(B, N, D), dtype=torch.uint8, device="cuda")
            except torch.cuda.OutOfMemoryError:
                out1 = ws = None
        have_cp1 = agree(1 if (rank != 0 or ws is not None) else 0, dist.ReduceOp.MIN)
        if "ours_cp1" in bad:
            rows.append(("ours_cp1", None, None, "error"))
        elif have_cp1:
            arms["ours_cp1"] = ((lambda: ours.forward(h, x, m, out1, ws) if rank == 0 else None),
                                ((ws.numel() + 2 * x.numel() * 2) / 2**30) if rank == 0 else None)
        else:
            rows.append(("ours_cp1", None, None, "oom"))

    if check:
        failed = {}
        ref = make_trimul(direction)(x.double(), m.double(), {k: v.double().cuda() for k, v in p32.items()})
        # ours at cp = 1 first: the CP arms are compared with its output too
        for arm, (fn, _) in sorted(arms.items(), key=lambda kv: kv[0] != "ours_cp1"):
            o = fn()
            got = o if arm == "ours_cp1" else assemble(o, N, cp0, cp1, world_t)
            if rank == 0:
                e = rel_err(got, ref)
                line = f"check {direction} B={B} N={N} D={D} grid {cp0}x{cp1} {arm}: rel err vs float64 {e:.3e}"
                ok = e <= 1e-2
                if arm != "ours_cp1" and out1 is not None:
                    e1 = rel_err(got, out1.double())
                    line += f", vs ours cp=1 {e1:.3e}"
                    ok = ok and e1 <= 1e-2
                log(line + ("" if ok else " FAIL"))
                if not ok:
                    failed[arm] = "error"
        flags = [failed]
        dist.broadcast_object_list(flags, src=0)
        for plan in plans:
            ours.lib.foldcp_cp_plan_destroy(plan)
        return flags[0]

    order = list(arms)
    if not order:
        return rows
    times = {a: [] for a in order}
    peaks = {}
    for w in range(3):  # warm-up
        for a in order:
            arms[a][0]()
    torch.cuda.synchronize()
    # the baseline's own memory: what it allocates on top of what is resident before it runs
    # (other arms' buffers, rank 0's whole input), plus its input and output tiles
    own = (x_t.numel() * 2 + mb_t.numel() * 2) * 2
    for it in range(iters):
        rot = order[it % len(order):] + order[:it % len(order)]
        for a in rot:
            if a == "torch_cp_nccl":
                torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated()
            dist.barrier()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            arms[a][0]()
            torch.cuda.synchronize()
            times[a].append(slowest(time.perf_counter() - t0))
            if a == "torch_cp_nccl":
                peaks[a] = max(peaks.get(a, 0.0), (torch.cuda.max_memory_allocated() - base + own) / 2**30)
    for a in order:
        rows.append((a, 1e3 * statistics.median(times[a]), peaks.get(a, arms[a][1]), "ok"))
    for plan in plans:
        ours.lib.foldcp_cp_plan_destroy(plan)
    return rows


def worker(rank, args, port):
    log = start(rank, args, port, "cp_peers")
    ours = OursCp(args.lib)
    # The symmetric heap: the plans alive at once (fused and unfused for a timed shape, the fused
    # one for a memory-scale shape) of any grid and shape, on the PEER route (what AUTO picks when
    # every rank reaches every peer by pointer: one node), plus 256 MiB.
    heap = 0
    for (cp0, cp1) in args.grids:
        for (B, N, D), reshards in [(s, (0, 1)) for s in args.shapes] + [(s, (0,)) for s in args.memory_shapes]:
            heap = max(heap, sum(ours.plan_bytes(config(B, N, D, cp0, cp1, r, b"\0" * DIGEST_BYTES), 1)
                                 for r in reshards))
    ours.join(rank, args.world, heap + (256 << 20))
    log(f"team of {args.world} up; symmetric heap {(heap + (256 << 20)) / 2**30:.2f} GiB per rank")
    layer_cache = {}
    for (cp0, cp1) in args.grids:
        grid = f"{cp0}x{cp1}"
        for direction in ("outgoing", "incoming"):
            dc = check_dim(args.world)
            bad = run_shape(ours, layer_cache, 1, CHECK_N, dc, direction, cp0, cp1, rank, args.world, 1, log,
                            check=True)
            for arm in bad:
                save_row(args, rank, (Placement.name(), args.world, grid, direction, 1, CHECK_N, dc, arm, None, None,
                                      "error"))
            for (B, N, D), memory in [(s, False) for s in args.shapes] + [(s, True) for s in args.memory_shapes]:
                for arm, ms, peak, status in run_shape(ours, layer_cache, B, N, D, direction, cp0, cp1, rank,
                                                       args.world, 1 if memory else args.iters, log, memory=memory,
                                                       bad=bad):
                    save_row(args, rank, (Placement.name(), args.world, grid, direction, B, N, D, arm, ms, peak,
                                          status))
                    log(f"{grid} {direction} {B},{N},{D}{' (memory scale)' if memory else ''} {arm}: "
                        + (f"{ms:.2f} ms" if ms is not None else status))
    for h in layer_cache.values():
        ours.lib.foldcp_trimul_destroy(h)
    ours.lib.foldcp_cp_team_finalize()
    dist.destroy_process_group()


def check_dim(world):
    """D of the correctness shape: a multiple of 32 in [64, 256] that every rank gets a share of."""
    return next(d for d in range(64, 257, 32) if d % world == 0)


def parse_shapes(s):
    return [tuple(int(v) for v in t.split(",")) for t in s.split(";") if t.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--grids", default="2x1,1x2")
    ap.add_argument("--shapes", default="1,1024,128;1,2048,128;1,2048,256;1,4096,128;1,4096,256")
    ap.add_argument("--memory-shapes", default="")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--csv", default="")
    placement_args(ap)
    args = ap.parse_args()
    args.iters = max(10, args.iters)
    args.grids = [tuple(int(v) for v in g.split("x")) for g in args.grids.split(",")]
    worlds = {a * b for a, b in args.grids}
    if len(worlds) != 1:
        sys.exit(f"every grid must have the same number of ranks: {args.grids}")
    args.world = worlds.pop()
    args.shapes = parse_shapes(args.shapes)
    args.memory_shapes = parse_shapes(args.memory_shapes)
    for (B, N, D) in args.shapes + args.memory_shapes:
        if D % args.world != 0:
            sys.exit(f"D = {D} must divide by cp = {args.world}")
    if not enough_gpus(args.world, args.shared_gpu):
        return 0
    probe_if_shared(args, "cp_peers")
    rows, ok = spawn(worker, args, args.world)
    write_csv(args.csv, "date,commit,gpu,placement,cp,grid,direction,B,N,D,arm,median_ms,peak_gib,status",
              [(where, cp, grid, direction, B, N, D, arm, "" if ms is None else f"{ms:.3f}",
                "" if peak is None else f"{peak:.2f}", status)
               for (where, cp, grid, direction, B, N, D, arm, ms, peak, status) in rows])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
