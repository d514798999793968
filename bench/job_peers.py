#!/usr/bin/env python3
"""The plain PyTorch loop a user would write instead of the Spark job (docs/benchmarks.md, "The job").

For each complex held on the host (ordinary pageable tensors, as a user's data loader gives them):
x.cuda(), the 4-layer stack, .cpu(). Two arms, in the CSV of JobBenchmark (same columns, rows appended):
  pytorch_loop        the stack is ours (libfoldcp_native.so through ctypes, in place on the device)
  pytorch_loop_eager  the stack is PyTorch eager (the einsum formulation of docs/design.md, bf16)
Each layer is residual and the directions alternate, as JobBenchmark's stack. Values uniform in
[-1.7, 1.7), 10% of the pairs masked: the distribution of JobBenchmark's complexes (the bytes differ:
neither the kernels' nor the copies' time depends on them). Before timing, one layer of ours is
checked against eager on a small complex (relative error <= 1e-2). A warm-up pass per arm, then
--repeats passes over all complexes, the two arms alternating with the first arm rotating, the median
pass reported; share_of_overlapped_floor from the CSV's overlapped_floor row of the same N, if there.

Usage: python3 bench/job_peers.py --lib native/build/libfoldcp_native.so --csv FILE
           [--n 512] [--complexes 64] [--dim 128] [--layers 4] [--repeats 3] [--commit SHA]
"""
import argparse
import csv
import datetime
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peers import Ours, make_trimul, make_weights, rel_err  # noqa: E402


def complexes(count, n, d, seed=1):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        x = ((torch.rand(1, n, n, d, generator=gen) * 3.4 - 1.7)).to(torch.bfloat16)
        m = (torch.rand(1, n, n, generator=gen) >= 0.1).to(torch.uint8)
        out.append((x, m))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--complexes", type=int, default=64)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--commit", default=os.environ.get("FOLDCP_COMMIT", "unknown"))
    a = ap.parse_args()
    n, d = a.n, a.dim
    dev = torch.device("cuda")
    ours = Ours(a.lib)
    gen = torch.Generator().manual_seed(7)
    weights = [make_weights(d, gen, bias=True) for _ in range(a.layers)]
    dirs = ["outgoing" if k % 2 == 0 else "incoming" for k in range(a.layers)]
    handles = [ours.layer(p, dr, residual=True) for p, dr in zip(weights, dirs)]
    eager_w = [{k: v.to(dev, torch.bfloat16) for k, v in p.items()} for p in weights]
    eager_f = [make_trimul(dr) for dr in dirs]

    # check: one layer of ours (residual) against eager (x + trimul) on a small complex
    xs, ms = complexes(1, 64, d, seed=3)[0]
    xg, mg = xs.to(dev), ms.to(dev)
    ws_small = torch.empty(ours.ws_bytes(1, 64, d), dtype=torch.uint8, device=dev)
    got = ours.forward(handles[0], xg.clone(), mg, torch.empty_like(xg), ws_small)
    ref = (xg.double() + eager_f[0](xg.double(), mg.double(),
                                   {k: v.double() for k, v in eager_w[0].items()}))
    err = rel_err(got, ref)
    print(f"check: ours vs float64 eager, one residual layer at (1,64,64,{d}): rel err {err:.2e}")
    if not err <= 1e-2:
        print("check FAILED")
        sys.exit(1)

    data = complexes(a.complexes, n, d)
    ws = torch.empty(ours.ws_bytes(1, n, d), dtype=torch.uint8, device=dev)

    def loop_ours():
        t0 = time.perf_counter()
        for x, m in data:
            xg, mg = x.cuda(), m.cuda()
            for h in handles:
                ours.forward(h, xg, mg, xg, ws)  # in place: out == x
            xg.cpu()
        return time.perf_counter() - t0

    def loop_eager():
        t0 = time.perf_counter()
        with torch.no_grad():
            for x, m in data:
                xg, mg = x.cuda(), m.cuda()
                mf = mg.to(torch.bfloat16)
                for f, p in zip(eager_f, eager_w):
                    xg = xg + f(xg, mf, p)
                xg.cpu()
        return time.perf_counter() - t0

    arms = [("pytorch_loop", loop_ours), ("pytorch_loop_eager", loop_eager)]
    passes = {name: [] for name, _ in arms}
    for name, f in arms:
        f()  # warm-up
    for r in range(a.repeats):
        for k in range(len(arms)):
            name, f = arms[(k + r) % len(arms)]
            passes[name].append(f())

    floor = None
    if os.path.exists(a.csv):
        with open(a.csv) as fh:
            for row in csv.DictReader(line for line in fh if not line.startswith("#")):
                if row.get("arm") == "overlapped_floor" and row.get("N") == str(n):
                    floor = float(row["complexes_per_s"])
    gpu = torch.cuda.get_device_name(0).replace(",", " ")
    new = not os.path.exists(a.csv)
    with open(a.csv, "a") as fh:
        if new:
            fh.write("# bench/job_peers.py " + " ".join(sys.argv[1:]) + "\n")
            fh.write("date,commit,device,backend,complexes,N,D,layers,slots,threads,arm,median_s,"
                     "complexes_per_s,share_of_overlapped_floor,status\n")
        for name, _ in arms:
            med = statistics.median(passes[name])
            rate = a.complexes / med
            share = f"{rate / floor:.3f}" if floor else ""
            fh.write(f"{datetime.date.today()},{a.commit},{gpu},torch,{a.complexes},{n},{d},{a.layers},1,1,"
                     f"{name},{med:.4f},{rate:.3f},{share},ok\n")
            print(f"{name:<19} N={n:<5} {med:8.3f} s  {rate:9.2f} complexes/s"
                  + (f"  ({100 * rate / floor:.1f}% of the overlapped floor)" if floor else ""))
    for h in handles:
        ours.lib.foldcp_trimul_destroy(h)


if __name__ == "__main__":
    main()
