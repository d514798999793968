"""Would a LayerNorm folded into its projection's epilogue hold the float64 contract?

A design question for stage 3 (native/NOTES-gpu.md, "The next device session for issue 27",
item 3): with W' = W diag(gamma), s = W' 1 and c = W beta,

    LN(v) W^T = rsigma (v W'^T - mu s) + c,

so the tensor cores could multiply the raw bf16 tile (no normalized copy written) and the
LayerNorm would shrink to per-token statistics applied in the epilogue. The subtraction of mu s
after an fp32 accumulation of the raw values is where precision could go. This script emulates
both paths on the CPU and prints their error against float64 for rows with growing mean / sigma
and for constant rows (sigma = 0: the eps floor):

  today:  LN in fp32, rounded to bf16, times bf16 W, fp32 accumulation in k16 steps;
  folded: raw bf16 v times bf16 W', fp32 accumulation in k16 steps, then rsigma (acc - mu s) + c.

(Each k16 step is summed exactly and added into an fp32 accumulator, as the wgmma accumulators
are; the tensor cores' internal rounding is not modelled. s is the row sums of the bf16-rounded
W', the matrix the tensor cores see: taken from the unrounded W diag(gamma) it leaves an error of
0.17 at mean / sigma = 100.) The third column takes the statistics as a kernel would, in fp32 in
one pass over values shifted by the row's channel 0 (sums of v - k and (v - k)^2, channel after
channel): no value lies further than sqrt(K) sigma from the mean, so the shift bounds the
cancellation by K + 1, where an unshifted one-pass E[v^2] - mu^2 loses (mu / sigma)^2 (3.7e-3 at
mean / sigma = 1000 in an earlier run). The last rows put channel 0 (the shift) sqrt(K) sigma off
the mean of the other channels (about sqrt(K / 2) of the whole row's sigma: near the
worst case, sqrt(K - 1)). `--biased` gives the weight rows a common sign, so that s = W' 1
is large. Usage: python3 bench/ln_fold_numerics.py [--biased]
"""
import argparse

import numpy as np


def bf16(a):
    """Rounds to bfloat16 (nearest even), returned as float32."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def mma_fp32(a, w):
    """a [T, K] times w [N, K]^T into fp32 accumulators, one exact k16 step at a time."""
    acc = np.zeros((a.shape[0], w.shape[0]), np.float32)
    for k in range(0, a.shape[1], 16):
        step = a[:, k:k + 16].astype(np.float64) @ w[:, k:k + 16].T.astype(np.float64)
        acc = (acc + step.astype(np.float32)).astype(np.float32)
    return acc


def shifted_stats_fp32(vb):
    """mu, rsigma^2 pieces as a kernel's fp32 one pass over v - v[:, 0], channel after channel."""
    v = vb.astype(np.float32)
    k = v[:, 0].copy()
    s1 = np.zeros(v.shape[0], np.float32)
    s2 = np.zeros(v.shape[0], np.float32)
    for c in range(v.shape[1]):
        d = (v[:, c] - k).astype(np.float32)
        s1 = (s1 + d).astype(np.float32)
        s2 = (s2 + d * d).astype(np.float32)
    n = np.float32(v.shape[1])
    m = (s1 / n).astype(np.float32)
    var = np.maximum((s2 / n - m * m).astype(np.float32), np.float32(0))
    return (k + m)[:, None], var[:, None]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--k", type=int, default=256, help="the LayerNorm's width (H for LN_out, D for LN_in)")
    ap.add_argument("--n", type=int, default=256, help="output channels")
    ap.add_argument("--eps", type=float, default=1e-5)
    ap.add_argument("--biased", action="store_true", help="weight rows mostly of one sign")
    args = ap.parse_args()
    T, K, N, eps = args.tokens, args.k, args.n, args.eps
    rng = np.random.default_rng(7)
    gamma = 1 + 0.1 * rng.standard_normal(K)
    beta = 0.1 * rng.standard_normal(K)
    W = (rng.standard_normal((N, K)) + (1.0 if args.biased else 0.0)) / np.sqrt(K)
    Wb = bf16(W)
    Wf = bf16(W * gamma)  # W' = W diag(gamma), rounded once
    s = Wf.astype(np.float64).sum(1).astype(np.float32)
    c = (W @ beta).astype(np.float32)

    print(f"K = {K}, N = {N}, eps = {eps}{', biased weights' if args.biased else ''}: "
          f"relative error of LN(v) W^T against float64")
    print(f"{'rows':>42} {'today':>10} {'folded':>10} {'+ fp32 shifted one-pass stats':>30}")
    cases = [(f"mean / sigma = {r:g}", r) for r in (0, 1, 10, 100, 300, 1000)]
    cases += [("constant rows v = 1", "c1"), ("constant rows v = 0.01", "c001")]
    cases += [(f"mean / sigma = {r:g}, v[0] at +sqrt(K) sigma", ("far", r)) for r in (0, 100, 1000)]
    for name, kind in cases:
        if kind == "c1":
            v = np.ones((T, K))
        elif kind == "c001":
            v = np.full((T, K), 0.01)
        elif isinstance(kind, tuple):
            v = kind[1] + rng.standard_normal((T, K))
            v[:, 0] = v[:, 1:].mean(1) + np.sqrt(K) * v[:, 1:].std(1)
        else:
            v = kind + rng.standard_normal((T, K))
        vb = bf16(v).astype(np.float64)  # the bf16 input is the truth both paths start from
        mu = vb.mean(1, keepdims=True)
        rs = 1 / np.sqrt(vb.var(1, keepdims=True) + eps)
        ref = ((vb - mu) * rs * gamma + beta) @ W.T
        today = mma_fp32(bf16(((vb - mu) * rs * gamma + beta).astype(np.float32)), Wb)
        acc = mma_fp32(vb.astype(np.float32), Wf)
        folded = rs.astype(np.float32) * (acc - mu.astype(np.float32) * s) + c
        mu1, var1 = shifted_stats_fp32(vb)
        rs1 = (1 / np.sqrt(var1 + np.float32(eps))).astype(np.float32)
        folded1 = rs1 * (acc - mu1 * s) + c
        err = [np.linalg.norm(p - ref) / np.linalg.norm(ref) for p in (today, folded, folded1)]
        print(f"{name:>42} {err[0]:10.2e} {err[1]:10.2e} {err[2]:30.2e}")


if __name__ == "__main__":
    main()
