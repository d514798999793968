#!/usr/bin/env python3
"""TriMul on one GPU: ours (native library through ctypes) against PyTorch eager and torch.compile.

Protocol (BENCHMARKS.md): same inputs for every arm (fresh random bf16 x, a mask with ~5% zeros,
random weights), each arm checked against a float64 reference at a small shape first, warm-up,
then >= 10 timed iterations per arm with CUDA events, arms interleaved and their order rotated
every iteration, median reported; peak GPU memory per arm; out-of-memory reported as status oom.
The peer formulation is docs/design.md section 1 written with einsum, in bf16 (weights bf16 too).

Usage: python3 bench/torch_peers.py --lib native/build/libfoldcp_native.so [--csv out.csv]
           [--shapes "1,1024,128;1,2048,256/128"] [--compile-max-n 2048] [--iters 10] [--no-compile]
A shape is B,N,D or B,N,D/H: H is the hidden width (the channels of a, b and z), D when absent.
"""
import argparse
import ctypes
import datetime
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import ab_pairs
from foldcp_lib import EPS, Ours  # noqa: F401 (job_peers, cp_peers and fold_team import them from here)



# ----------------------------------------------------------------------------- peers
def make_trimul(direction):
    eq = "bikc,bjkc->bijc" if direction == "outgoing" else "bkic,bkjc->bijc"

    def trimul(x, mask, p):
        D = x.shape[-1]
        H = p["p_in.weight"].shape[0] // 2  # p_in maps D -> 2H (a, then b)
        xn = F.layer_norm(x, (D,), p["norm_in.weight"], p["norm_in.bias"], EPS)
        ab = torch.sigmoid(F.linear(xn, p["g_in.weight"], p.get("g_in.bias"))) * F.linear(
            xn, p["p_in.weight"], p.get("p_in.bias"))
        ab = ab * mask.unsqueeze(-1)
        a, b = ab[..., :H], ab[..., H:]
        z = torch.einsum(eq, a, b)
        zn = F.layer_norm(z, (H,), p["norm_out.weight"], p["norm_out.bias"], EPS)
        out = torch.sigmoid(F.linear(xn, p["g_out.weight"], p.get("g_out.bias"))) * F.linear(
            zn, p["p_out.weight"], p.get("p_out.bias"))
        return out

    return trimul


def make_weights(D, gen, bias=False, H=None):
    """Random layer weights of pair width D and hidden width H (D when None), PyTorch layout."""
    H = H or D
    s, sh = 1.0 / math.sqrt(D), 1.0 / math.sqrt(H)

    def u(*shape, scale=1.0, off=0.0):
        return (torch.rand(*shape, generator=gen) * 2 - 1) * scale + off

    p = {
        "norm_in.weight": u(D, scale=0.1, off=1.0), "norm_in.bias": u(D, scale=0.1),
        "p_in.weight": u(2 * H, D, scale=s), "g_in.weight": u(2 * H, D, scale=s),
        "norm_out.weight": u(H, scale=0.1, off=1.0), "norm_out.bias": u(H, scale=0.1),
        "p_out.weight": u(D, H, scale=sh), "g_out.weight": u(D, D, scale=s),
    }
    if bias:
        p.update({"p_in.bias": u(2 * H, scale=0.2), "g_in.bias": u(2 * H, scale=0.2),
                  "p_out.bias": u(D, scale=0.2), "g_out.bias": u(D, scale=0.2)})
    return {k: v.float().contiguous() for k, v in p.items()}


def parse_shapes(spec):
    """'B,N,D;B,N,D/H;...' -> [(B, N, D, H)] (H = D where absent)."""
    shapes = []
    for s in spec.split(";"):
        if s.strip():
            b, n, dh = s.split(",")
            d, _, h = dh.partition("/")
            shapes.append((int(b), int(n), int(d), int(h or d)))
    return shapes


def label(B, N, D, H):
    return f"({B},{N},{D})" if H == D else f"({B},{N},{D}/{H})"


def flops(B, N, D, H):
    """docs/benchmarks.md's count: the triangle 2 B N^3 H, p_in and g_in 8 B N^2 D H, p_out and
    g_out 2 B N^2 D (H + D); 2 B N^3 D + 12 B N^2 D^2 where H = D."""
    return 2 * B * N**3 * H + 8 * B * N**2 * D * H + 2 * B * N**2 * D * (H + D)


# ----------------------------------------------------------------------------- helpers
def rel_err(out, ref):
    o = out.double()
    if not torch.isfinite(o).all():
        return float("nan")
    return ((o - ref).norm() / ref.norm()).item()


def correctness(ours, compile_ok, hiddens=(64, 32)):
    """Every arm against float64 at a small shape (D = 64, each hidden width of `hiddens`), both
    directions."""
    lines = []
    for H in hiddens:
        lines += correctness_at(ours, compile_ok, H)
    return lines


def correctness_at(ours, compile_ok, H):
    dev = "cuda"
    gen = torch.Generator().manual_seed(11)
    B, N, D = 1, 96, 64
    p32 = make_weights(D, gen, bias=True, H=H)
    x = (torch.randn(B, N, N, D, generator=gen) + 0.3).to(torch.bfloat16).to(dev)
    m = (torch.rand(B, N, N, generator=gen) > 0.1).to(dev)
    m[0, 5, :] = False
    m[0, :, 7] = False
    lines = []
    for direction in ("outgoing", "incoming"):
        fn = make_trimul(direction)
        p64 = {k: v.double().to(dev) for k, v in p32.items()}
        ref = fn(x.double(), m.double(), p64)
        pb = {k: v.to(dev, torch.bfloat16) for k, v in p32.items()}
        errs = {"torch_eager": rel_err(fn(x, m.to(torch.bfloat16), pb), ref)}
        if compile_ok:
            cfn = torch.compile(fn, dynamic=False)
            errs["torch_compile"] = rel_err(cfn(x, m.to(torch.bfloat16), pb), ref)
        h = ours.layer(p32, direction)
        ws = torch.empty(ours.ws_bytes(B, N, H), dtype=torch.uint8, device=dev)
        out = torch.full_like(x, float("nan"))
        ours.forward(h, x, m.to(torch.uint8), out, ws)
        torch.cuda.synchronize()
        ours.lib.foldcp_trimul_destroy(h)
        errs["ours"] = rel_err(out, ref)
        for arm, e in errs.items():
            ok = e == e and e <= 1e-2
            lines.append(f"{'PASS' if ok else 'FAIL'} {direction:8s} {arm:14s} rel_err={e:.3e} (B,N,D/H)={B},{N},{D}/{H}")
    return lines


def sampled_reference(x, m, p64, direction, S, T):
    """float64 output at tokens (i, j), i in S, j in T, of a pair tensor too large for a whole
    float64 reference: a for the rows (outgoing) or columns (incoming) S, b for T, then z, LN_out
    and the output projection at those tokens only. Returns (|S|, |T|, D) float64."""
    D = x.shape[-1]
    H = p64["p_in.weight"].shape[0] // 2
    idx = torch.tensor(S + T, device=x.device)
    if direction == "outgoing":
        xs, ms = x[0, idx].double(), m[0, idx].double()          # (|S|+|T|, N, D): rows
    else:
        xs, ms = x[0, :, idx].double(), m[0, :, idx].double()    # (N, |S|+|T|, D): columns
    xn = F.layer_norm(xs, (D,), p64["norm_in.weight"], p64["norm_in.bias"], EPS)
    ab = torch.sigmoid(F.linear(xn, p64["g_in.weight"], p64.get("g_in.bias"))) * F.linear(
        xn, p64["p_in.weight"], p64.get("p_in.bias"))
    ab = ab * ms.unsqueeze(-1)
    ns = len(S)
    if direction == "outgoing":
        z = torch.einsum("ikc,jkc->ijc", ab[:ns, :, :H], ab[ns:, :, H:])
        xij = xn[:ns][:, torch.tensor(T, device=x.device)]    # LN_in(x) at (i, j): rows S, columns T
    else:
        z = torch.einsum("kic,kjc->ijc", ab[:, :ns, :H], ab[:, ns:, H:])
        xij = xn[torch.tensor(S, device=x.device), ns:]       # rows S of the columns T
    zn = F.layer_norm(z, (H,), p64["norm_out.weight"], p64["norm_out.bias"], EPS)
    return torch.sigmoid(F.linear(xij, p64["g_out.weight"], p64.get("g_out.bias"))) * F.linear(
        zn, p64["p_out.weight"], p64.get("p_out.bias"))


def memory_scale(ours, shapes, args, gpu):
    """Pair tensors whose intermediates do not fit at once: ours in place (out = x) in the
    largest channel group that fits what is free, checked on a sampled block against float64;
    torch eager tried on the same input (out-of-memory recorded). Rows for the memory CSV."""
    dev = "cuda"
    date = datetime.date.today().isoformat()
    rows = []
    for si, (B, N, D, H) in enumerate(shapes):
        shape = label(B, N, D, H)
        for direction in ("outgoing", "incoming"):
            gen = torch.Generator().manual_seed(2000 + si)
            p32 = make_weights(D, gen, H=H)
            p64 = {k: v.double().to(dev) for k, v in p32.items()}
            pb = {k: v.to(dev, torch.bfloat16) for k, v in p32.items()}
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            x = torch.randn(B, N, N, D, device=dev, dtype=torch.bfloat16)
            mu8 = (torch.rand(B, N, N, device=dev) > 0.05).to(torch.uint8)
            g = torch.Generator().manual_seed(3000 + si)
            S = sorted(torch.randperm(N, generator=g)[:2].tolist())
            T = sorted(torch.randperm(N, generator=g)[:64].tolist())
            ref = sampled_reference(x, mu8, p64, direction, S, T)
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            # torch eager first (it leaves x intact); its peak is what it reached before failing
            status, med, peak = "ok", "", 0.0
            torch.cuda.reset_peak_memory_stats()
            try:
                r = make_trimul(direction)(x, mu8.to(torch.bfloat16), pb)
                torch.cuda.synchronize()
                del r
            except torch.OutOfMemoryError:
                status = "oom"
            peak = torch.cuda.max_memory_allocated() / 2**30
            torch.cuda.empty_cache()
            rows.append([date, args.commit, gpu, direction, B, N, D, H, "torch_eager", med, f"{peak:.2f}", status, "", "",
                         ""])
            print(f"memory {direction} {shape} torch_eager: {status}, peak {peak:.1f} GiB", flush=True)
            # ours, in place, channel group from what is free
            h = ours.layer(p32, direction)
            free, _ = torch.cuda.mem_get_info()
            group = ours.channel_group(B, N, H, free - (2 << 30))
            torch.cuda.reset_peak_memory_stats()
            ws = torch.empty(ours.ws_bytes_group(B, N, H, group), dtype=torch.uint8, device=dev)
            ours.forward_group(h, x, mu8, x, ws, group)
            torch.cuda.synchronize()
            got = x[0, torch.tensor(S, device=dev)][:, torch.tensor(T, device=dev)].double()
            err = rel_err(got, ref)
            times = []
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            for _ in range(max(10, args.iters)):
                e0.record()
                ours.forward_group(h, x, mu8, x, ws, group)
                e1.record()
                e1.synchronize()
                times.append(e0.elapsed_time(e1))
            peak = torch.cuda.max_memory_allocated() / 2**30
            ok = err == err and err <= 1e-2
            med = statistics.median(times)
            rows.append([date, args.commit, gpu, direction, B, N, D, H, "ours", f"{med:.3f}", f"{peak:.2f}",
                         "ok" if ok else "inaccurate", group, f"{err:.3e}", len(S) * len(T)])
            print(f"memory {direction} {shape} ours: {med:.1f} ms ({flops(B, N, D, H) / med / 1e9:.0f} TFLOP/s), "
                  f"channel group {group}, peak {peak:.1f} GiB, sampled rel err {err:.2e} on {len(S)}x{len(T)} tokens "
                  f"({'PASS' if ok else 'FAIL'})", flush=True)
            ours.lib.foldcp_trimul_destroy(h)
            x = mu8 = ws = ref = got = None
            torch.cuda.empty_cache()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--baseline-lib", default="",
                    help="a second build of our library (say, the commit before a change), timed as arm "
                         "ours_baseline interleaved with ours on the same inputs: the same-run A/B")
    ap.add_argument("--baseline-hidden", action="store_true",
                    help="the baseline build takes a hidden width of its own (its foldcp_trimul.h has the "
                         "hidden field): A/B at H != D too (else H = D only: an older build reads p_in as [2D][D])")
    ap.add_argument("--csv", default="")
    ap.add_argument("--shapes", default="1,1024,128;1,2048,128;1,2048,256;1,4096,128;1,4096,256",
                    help="B,N,D or B,N,D/H entries, ';'-separated")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--ab-min-ms", type=float, default=400.0,
                    help="with --baseline-lib: ours and ours_baseline timed in pairs until ours has run this long")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--compile-max-n", type=int, default=2048)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--commit", default=os.environ.get("FOLDCP_COMMIT", "unknown"))
    ap.add_argument("--memory-shapes", default="",
                    help="shapes for the memory-scale arms (e.g. '1,12288,128;1,8192,256'): ours in channel groups, "
                         "in place, checked on a sampled block against float64; torch eager tried")
    ap.add_argument("--memory-csv", default="", help="where the memory-scale rows go")
    ap.add_argument("--budget-s", type=float, default=1e9,
                    help="wall-clock budget: torch.compile arms are skipped when less than 100 s are left, "
                         "remaining shapes when less than 25 s are left")
    args = ap.parse_args()
    iters = max(10, args.iters)
    dev = "cuda"
    gpu = torch.cuda.get_device_name(0)
    print(f"torch {torch.__version__}, {gpu}", flush=True)
    ours = Ours(args.lib)
    baseline = Ours(args.baseline_lib) if args.baseline_lib else None
    t_start = time.time()
    left = lambda: args.budget_s - (time.time() - t_start)

    for line in correctness(ours, not args.no_compile):
        print(line, flush=True)
    if baseline is not None:  # a baseline build may predate the hidden width: H = D only, unless it has one
        for line in correctness(baseline, False, hiddens=(64, 32) if args.baseline_hidden else (64,)):
            if " ours " in line:
                print(line.replace(" ours ", " ours_baseline ", 1), flush=True)

    if args.memory_shapes:
        mrows = memory_scale(ours, parse_shapes(args.memory_shapes), args, gpu)
        if args.memory_csv:
            with open(args.memory_csv, "w") as f:
                f.write(f"# python3 bench/torch_peers.py {' '.join(sys.argv[1:])}\n")
                f.write("date,commit,gpu,direction,B,N,D,H,arm,median_ms,peak_gib,status,channel_group,"
                        "sampled_rel_err,sampled_tokens\n")
                for r in mrows:
                    f.write(",".join(str(v) for v in r) + "\n")

    shapes = parse_shapes(args.shapes)
    date = datetime.date.today().isoformat()
    rows = []
    table = []
    for si, (B, N, D, H) in enumerate(shapes):
        shape = label(B, N, D, H)
        for direction in ("outgoing", "incoming"):
            if left() < 25:
                print(f"skipping {direction} {shape}: time budget spent", flush=True)
                continue
            gen = torch.Generator().manual_seed(1000 + si)
            p32 = make_weights(D, gen, H=H)
            pb = {k: v.to(dev, torch.bfloat16) for k, v in p32.items()}
            x = torch.randn(B, N, N, D, device=dev, dtype=torch.bfloat16)
            mu8 = (torch.rand(B, N, N, device=dev) > 0.05).to(torch.uint8)
            mbf = mu8.to(torch.bfloat16)
            fn = make_trimul(direction)
            arms = {}
            status = {}
            peak = {}
            # ours (and the baseline build on the same workspace and output buffers)
            h = ours.layer(p32, direction)
            # a baseline build may predate the hidden width (it would read p_in as [2D][D]): H = D only,
            # unless gpu-run found the hidden field in its header
            hb = (baseline.layer(p32, direction)
                  if baseline is not None and (H == D or args.baseline_hidden) else None)
            ws = out = None
            try:
                ws = torch.empty(ours.ws_bytes(B, N, H), dtype=torch.uint8, device=dev)
                out = torch.empty_like(x)
                arms["ours"] = lambda: ours.forward(h, x, mu8, out, ws)
                if hb is not None and baseline.ws_bytes(B, N, H if args.baseline_hidden else D) <= ws.numel():
                    arms["ours_baseline"] = lambda: baseline.forward(hb, x, mu8, out, ws)
            except torch.OutOfMemoryError:
                status["ours"] = "oom"
            arms["torch_eager"] = lambda: fn(x, mbf, pb)
            if not args.no_compile and N <= args.compile_max_n and left() >= 100:
                cfn = torch.compile(fn, dynamic=False)
                arms["torch_compile"] = lambda: cfn(x, mbf, pb)
            # warm-up (compiles), peak memory per arm: what the arm itself holds at its peak plus the
            # shared inputs (x, masks); buffers that other arms keep allocated are not counted
            shared = x.numel() * x.element_size() + mu8.numel() + mbf.numel() * mbf.element_size()
            own = {"ours": (ws.numel() + out.numel() * out.element_size()) if "ours" in arms else 0}
            own["ours_baseline"] = own["ours"]
            for name in list(arms):
                try:
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                    base = torch.cuda.memory_allocated()
                    t0 = time.time()
                    for _ in range(args.warmup):
                        r = arms[name]()
                        del r
                    torch.cuda.synchronize()
                    peak[name] = (torch.cuda.max_memory_allocated() - base + shared + own.get(name, 0)) / 2**30
                    status[name] = "ok"
                    if time.time() - t0 > 30:
                        print(f"  ({name} warm-up took {time.time() - t0:.0f} s)", flush=True)
                except torch.OutOfMemoryError:
                    status[name] = "oom"
                    arms.pop(name)
                    torch.cuda.empty_cache()
                except Exception as e:  # noqa: BLE001
                    status[name] = "error"
                    print(f"  {name} failed: {e}", flush=True)
                    arms.pop(name)
            if "ours" in arms and "ours_baseline" in arms:
                arms["ours"]()
                mine = out.clone()
                arms["ours_baseline"]()
                torch.cuda.synchronize()
                same = torch.equal(mine.view(torch.int16), out.view(torch.int16))
                print(f"  A/B {direction} {shape}: ours and ours_baseline outputs "
                      f"{'bit-equal' if same else 'DIFFER'}", flush=True)
                status["ours_baseline"] = "ok" if same else "differs"
                mine = None
            times = {k: [] for k in arms}
            names = list(arms)
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            for it in range(iters):
                order = names[it % len(names):] + names[:it % len(names)] if names else []
                for name in order:
                    torch.cuda.synchronize()
                    e0.record()
                    r = arms[name]()
                    e1.record()
                    e1.synchronize()
                    times[name].append(e0.elapsed_time(e1))
                    del r
            med = {k: statistics.median(v) for k, v in times.items()}
            if "ours" in arms and "ours_baseline" in arms:
                med.update(ab_pairs.paired_ab(arms, med["ours"], iters, args.ab_min_ms, f"{direction} {shape}"))
            for name in ["ours", "ours_baseline", "torch_eager", "torch_compile"]:
                if name in status:
                    rows.append([date, args.commit, gpu, 1, "1x1", direction, B, N, D, H, name,
                                 f"{med[name]:.3f}" if name in med else "", f"{peak.get(name, 0):.2f}",
                                 status[name]])
            table.append((direction, B, N, D, H, med, status))
            if "ours" in arms:
                # where ours (and the A/B baseline) spends its time: the median of profiled
                # forwards after the timed ones (events between the stages: the sum is a little
                # above the median). With a baseline the two arms' forwards alternate, each going
                # first in turn: run back to back (ours' three, then the baseline's), the stage
                # lines read ours 1-3 % slower even in kernels both arms share (2026-12-07 A/Bs).
                staged = [("", ours, h)]
                if "ours_baseline" in arms:
                    staged.append((" baseline", baseline, hb))
                reps = 5 if len(staged) > 1 else 3
                runs = {tag: [] for tag, _, _ in staged}
                for rep in range(reps):
                    for arm_tag, lib, handle in (staged if rep % 2 == 0 else staged[::-1]):
                        runs[arm_tag].append(lib.stage_ms(handle, x, mu8, out, ws))
                for arm_tag, _, _ in staged:
                    if all(r is not None for r in runs[arm_tag]):
                        st = [statistics.median(r[k] for r in runs[arm_tag]) for k in range(3)]
                        print(f"  stages {direction} {shape}{arm_tag}: stage 1 {st[0]:.2f} ms, stage 2 {st[1]:.2f} ms, "
                              f"stage 3 {st[2]:.2f} ms", flush=True)
            fl = flops(B, N, D, H)
            msg = "  ".join(f"{k}={v:.2f}ms" for k, v in med.items())
            print(f"{direction:8s} {shape} {msg}  ours={fl / med.get('ours', float('nan')) / 1e9:.0f} TFLOP/s"
                  if "ours" in med else f"{direction} {shape} {msg}", flush=True)
            ours.lib.foldcp_trimul_destroy(h)
            if hb is not None:
                baseline.lib.foldcp_trimul_destroy(hb)
            arms = x = mu8 = mbf = pb = ws = out = cfn = r = None
            torch.cuda.empty_cache()
            torch._dynamo.reset()

    if args.csv:
        with open(args.csv, "w") as f:
            f.write(f"# python3 bench/torch_peers.py {' '.join(sys.argv[1:])}\n")
            f.write("date,commit,gpu,cp,grid,direction,B,N,D,H,arm,median_ms,peak_gib,status\n")
            for r in rows:
                f.write(",".join(str(v) for v in r) + "\n")

    print(f"\n=== TriMul, one {gpu}: median ms (ratio = peer / ours, > 1 means ours is faster) ===")
    print(f"{'dir':8s} {'B,N,D/H':14s} {'ours':>8s} {'TF/s':>6s} {'eager':>8s} {'x':>6s} {'compile':>8s} {'x':>6s}")
    for direction, B, N, D, H, med, status in table:
        o = med.get("ours")
        fl = flops(B, N, D, H)

        def cell(k):
            if k in med:
                return f"{med[k]:8.2f}", (f"{med[k] / o:6.2f}" if o else "     -")
            return f"{status.get(k, '-'):>8s}", "     -"
        e, ex = cell("torch_eager")
        c, cx = cell("torch_compile")
        print(f"{direction:8s} {label(B, N, D, H)[1:-1]:14s} {o if o else float('nan'):8.2f} "
              f"{(fl / o / 1e9) if o else 0:6.0f} {e} {ex} {c} {cx}")


if __name__ == "__main__":
    main()
