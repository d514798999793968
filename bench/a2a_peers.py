#!/usr/bin/env python3
"""The heads all-to-all (Ulysses scatter, foldcp_a2a.h) across GPUs, one process per GPU: ours
(libfoldcp_cp.so: each element stored straight into its final place on the receiver) against NCCL
all_to_all_single alone, NCCL with the permutes that make it the same scatter, and the GPU-to-GPU
copy ceiling of the same bytes.

Method (docs/benchmarks.md): per dtype (bf16, fp32) and message size (MiB of input per rank,
[1, S_local, 32 heads, 128] per rank; 36 heads at world 6), every arm checked first (ours equal to NCCL + permute bit
for bit), then >= 10 samples per arm; before each sample every rank overwrites a 256 MiB scratch
buffer (cold L2) and the ranks meet at a barrier; a sample is the slowest rank's CUDA-event time;
the arm order rotates every iteration (iteration k starts at arm k mod the number of arms of the order each row
records after "rotated:"); the median is reported with the bytes a rank sends (every block but its own) per
second. Arms:
  ours          foldcp_a2a_scatter_heads into the plan's output buffer (zero copy);
  nccl          all_to_all_single of a buffer already in block order (no permute);
  nccl_permute  the permute into block order, all_to_all_single, the permute into [B, S, H / W, Dh];
  copy          every rank copies the bytes it would send to the next GPU (copy_ across devices,
                NVLink), all at once: the ceiling of moving those bytes.
Rows: date,commit,gpu,placement,world,heads,dtype,mib_per_rank,arm,median_ms,gb_per_s,arm_order,status
(placement gpu_per_rank, or shared_gpu with --shared-gpu: every rank on GPU 0, no speed figure, see
fold_team.py; there NCCL refuses, the nccl arms get status nccl_refused, ours is checked bit for bit
against the same scatter assembled from the inputs gathered over gloo, and copy is a copy within
GPU 0)

Usage: python3 bench/a2a_peers.py --lib native/build/libfoldcp_cp.so [--world 2] [--mib 1,16,64,256]
           [--iters 20] [--csv out.csv] [--shared-gpu]
"""
import argparse
import ctypes
import statistics
import sys

import torch
import torch.distributed as dist

from fold_team import (FoldLib, Placement, ROUTES, agree, enough_gpus, gather_to, placement_args, probe_if_shared,
                       save_row, slowest, spawn, start, write_csv)

HEAD_DIM = 128
DTYPES = {"bf16": (torch.bfloat16, 0), "fp32": (torch.float32, 2)}


class A2aConfig(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("seq_local", ctypes.c_int64), ("heads", ctypes.c_int64),
                ("head_dim", ctypes.c_int64), ("dtype", ctypes.c_int), ("route", ctypes.c_int)]


class A2aLib(FoldLib):
    """FoldLib plus the all-to-all plans of foldcp_a2a.h."""

    def __init__(self, path):
        super().__init__(path)
        L = self.lib
        L.foldcp_a2a_plan_bytes.argtypes = [ctypes.POINTER(A2aConfig), ctypes.c_int, ctypes.c_int,
                                            ctypes.POINTER(ctypes.c_size_t)]
        L.foldcp_a2a_create.argtypes = [ctypes.POINTER(A2aConfig), ctypes.POINTER(ctypes.c_void_p)]
        L.foldcp_a2a_route.argtypes = [ctypes.c_void_p]
        L.foldcp_a2a_output.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_size_t)]
        L.foldcp_a2a_bytes_sent.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64)]
        L.foldcp_a2a_scatter_heads.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        L.foldcp_a2a_destroy.argtypes = [ctypes.c_void_p]

    def plan_bytes(self, cfg, world):
        n = ctypes.c_size_t()
        self.check(self.lib.foldcp_a2a_plan_bytes(ctypes.byref(cfg), world, 1, ctypes.byref(n)), "a2a_plan_bytes")
        return n.value

    def create(self, cfg):
        p = ctypes.c_void_p()
        self.heap_error(self.lib.foldcp_a2a_create(ctypes.byref(cfg), ctypes.byref(p)), "a2a_create")
        return p

    def output(self, plan):
        ptr, n = ctypes.c_void_p(), ctypes.c_size_t()
        self.check(self.lib.foldcp_a2a_output(plan, ctypes.byref(ptr), ctypes.byref(n)), "a2a_output")
        return ptr.value

    def bytes_sent(self, plan):
        n = ctypes.c_uint64()
        self.check(self.lib.foldcp_a2a_bytes_sent(plan, ctypes.byref(n)), "a2a_bytes_sent")
        return n.value

    def scatter(self, plan, x, out_ptr):
        self.check(self.lib.foldcp_a2a_scatter_heads(plan, x.data_ptr(), out_ptr,
                                                     torch.cuda.current_stream().cuda_stream), "a2a_scatter_heads")


def heads_for(world):
    """32 heads (the anchors' shape), or the next multiple of the world size (36 at world 6)."""
    return -(-32 // world) * world


def seq_local(mib, dtype, heads):
    return max(1, (mib << 20) // (heads * HEAD_DIM * dtype.itemsize))


def nccl_scatter(x, world):
    """The Ulysses scatter over NCCL: [B, S_l, H, Dh] -> [B, W S_l, H / W, Dh]."""
    B, S_l, H, Dh = x.shape
    send = x.reshape(B, S_l, world, H // world, Dh).permute(2, 0, 1, 3, 4).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=Placement.data_group)
    return recv.permute(1, 0, 2, 3, 4).reshape(B, world * S_l, H // world, Dh)


def gathered_scatter(x, rank, world):
    """The same scatter built from every rank's input gathered over the control plane (no NCCL):
    out[b, s' S_l + s, h, d] = x of rank s' at [b, s, rank H / W + h, d]."""
    B, S_l, H, Dh = x.shape
    Hl = H // world
    return torch.cat([p[:, :, rank * Hl:(rank + 1) * Hl] for p in gather_to(x, world)], dim=1)


def worker(rank, args, port):
    log = start(rank, args, port, "a2a_peers")
    lib = A2aLib(args.lib)
    H = heads_for(args.world)
    heap = max(lib.plan_bytes(A2aConfig(1, seq_local(m, t, H), H, HEAD_DIM, code, 0), args.world)
               for m in args.mib for (t, code) in DTYPES.values())
    lib.join(rank, args.world, heap + (256 << 20))
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    # the copy arm's target: the next GPU, or GPU 0 itself where the ranks share it
    peer = Placement.gpu((rank + 1) % args.world)
    where = Placement.name()
    for name, (dtype, code) in DTYPES.items():
        for mib in args.mib:
            S_l = seq_local(mib, dtype, H)
            gen = torch.Generator(device="cuda").manual_seed(1000 * mib + rank)
            x = torch.randn(1, S_l, H, HEAD_DIM, device="cuda", generator=gen).to(dtype)
            try:
                plan = lib.create(A2aConfig(1, S_l, H, HEAD_DIM, code, 0))
            except MemoryError as e:
                log(f"{name} {mib} MiB: {e}")
                save_row(args, rank, (where, args.world, H, name, mib, "ours", "", "", "", "oom"))
                continue
            out_ptr = lib.output(plan)
            sent = lib.bytes_sent(plan)
            ours_out = torch.empty(1, args.world * S_l, H // args.world, HEAD_DIM, dtype=dtype, device="cuda")
            # the copy arm: the bytes a rank sends, into a buffer on the next GPU
            src = x.reshape(-1).view(torch.uint8)[:sent]
            dst = torch.empty(sent, dtype=torch.uint8, device=torch.device("cuda", peer))
            arms = {"ours": lambda: lib.scatter(plan, x, out_ptr)}
            if Placement.nccl_ok:
                blocks = x.reshape(1, S_l, args.world, H // args.world, HEAD_DIM).permute(2, 0, 1, 3, 4).contiguous()
                recv = torch.empty_like(blocks)
                arms["nccl"] = lambda: dist.all_to_all_single(recv, blocks, group=Placement.data_group)
                arms["nccl_permute"] = lambda: nccl_scatter(x, args.world)
            else:
                for a in ("nccl", "nccl_permute"):
                    save_row(args, rank, (where, args.world, H, name, mib, a, "", "", "", "nccl_refused"))
            arms["copy"] = lambda: dst.copy_(src, non_blocking=True)
            # check: ours (copied out of the plan's buffer) equals NCCL + permute bit for bit (without
            # NCCL: the scatter assembled from every rank's input gathered over gloo)
            lib.scatter(plan, x, ours_out.data_ptr())
            ref = nccl_scatter(x, args.world) if Placement.nccl_ok else gathered_scatter(x, rank, args.world)
            same = agree(1 if torch.equal(ours_out.view(torch.uint8), ref.view(torch.uint8)) else 0, dist.ReduceOp.MIN)
            refname = "NCCL + permute" if Placement.nccl_ok else "the gathered permute"
            log(f"check {name} {mib} MiB (S_local {S_l}): ours {'==' if same else '!='} {refname}, "
                f"route {ROUTES[lib.lib.foldcp_a2a_route(plan)]}, {sent / 2**20:.1f} MiB sent per rank")
            del ref
            order = list(arms)
            times = {a: [] for a in order}
            ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for a in order:  # warm-up
                arms[a]()
            torch.cuda.synchronize()
            for it in range(args.iters):
                rot = order[it % len(order):] + order[:it % len(order)]
                for a in rot:
                    scratch.fill_(it & 0xFF)  # cold L2
                    dist.barrier()
                    torch.cuda.synchronize()
                    ev0.record()
                    arms[a]()
                    ev1.record()
                    ev1.synchronize()
                    times[a].append(slowest(ev0.elapsed_time(ev1)))
            for a in order:
                ms = statistics.median(times[a])
                ok = "ok" if (a != "ours" or same) else "error"
                save_row(args, rank, (where, args.world, H, name, mib, a, f"{ms:.4f}", f"{sent / (ms * 1e-3) / 1e9:.1f}",
                             "rotated:" + "/".join(order), ok))
                log(f"{name} {mib} MiB {a}: {ms:.4f} ms, {sent / (ms * 1e-3) / 1e9:.1f} GB/s sent per rank")
            lib.lib.foldcp_a2a_destroy(plan)
    lib.lib.foldcp_cp_team_finalize()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--world", type=int, default=0, help="ranks, one per GPU (default: every GPU)")
    ap.add_argument("--mib", default="1,4,16,64,256")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--csv", default="")
    placement_args(ap)
    args = ap.parse_args()
    args.world = args.world or torch.cuda.device_count()
    args.mib = [int(v) for v in args.mib.split(",")]
    args.iters = max(10, args.iters)
    if args.world < 2:
        print(f"SKIP: the all-to-all benchmark needs two or more ranks (--world {args.world}; one GPU: --world 2 "
              "--shared-gpu)")
        return 0
    if not enough_gpus(args.world, args.shared_gpu):
        return 0
    probe_if_shared(args, "a2a_peers")
    rows, ok = spawn(worker, args, args.world)
    write_csv(args.csv, "date,commit,gpu,placement,world,heads,dtype,mib_per_rank,arm,median_ms,gb_per_s,arm_order,status",
              rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
