"""The numpy TriMul peer of CpuBenchmark: the same layer in float32 on numpy's BLAS (OpenBLAS).

Written the way one would on numpy, not handicapped: the four input projections are one GEMM
over every token (xn @ [p_in; g_in]^T), the triangle product is one batched matmul over
contiguous channel-major copies (numpy's matmul falls back to its own slow loop on strided
views), element-wise work is done in place. x enters as float32 (the conversion from bf16 is
not timed), the output stays float32. Random weights and input of the same scales as
LayerWeights.random / PairTensor.random; only the speed is compared, never the values.

Usage: python3 numpy_trimul.py B N D iterations
Prints one line per direction: "numpy <direction> median <ms> min <ms> max <ms> runs <n>".
"""
import sys
import time

import numpy as np


def layer_norm(v, w, b, eps=1e-5):
    mean = v.mean(axis=-1, keepdims=True)
    c = v - mean
    var = np.mean(c * c, axis=-1, keepdims=True)
    c *= 1.0 / np.sqrt(var + eps)
    c *= w
    c += b
    return c


def sigmoid_(v):
    np.negative(v, out=v)
    np.exp(v, out=v)
    v += 1.0
    np.reciprocal(v, out=v)
    return v


def forward(x, mask, w, outgoing, residual=True):
    bsz, n, _, d = x.shape
    xn = layer_norm(x, w["norm_in_w"], w["norm_in_b"])
    t = xn.reshape(-1, d)
    proj = t @ w["in_w"].T  # (tokens, 4D): p_in rows 0..2D-1, then g_in rows
    proj += w["in_b"]
    p = proj[:, : 2 * d]
    g = sigmoid_(proj[:, 2 * d:])
    p *= g
    p *= mask.reshape(-1, 1)
    ab = p.reshape(bsz, n, n, 2 * d)
    if outgoing:  # z[c, i, j] = sum_k a[i, k, c] b[j, k, c]
        a = np.ascontiguousarray(ab[..., :d].transpose(0, 3, 1, 2))
        bt = np.ascontiguousarray(ab[..., d:].transpose(0, 3, 2, 1))
    else:  # z[c, i, j] = sum_k a[k, i, c] b[k, j, c]
        a = np.ascontiguousarray(ab[..., :d].transpose(0, 3, 2, 1))
        bt = np.ascontiguousarray(ab[..., d:].transpose(0, 3, 1, 2))
    z = np.matmul(a, bt).transpose(0, 2, 3, 1)  # (B, N, N, D)
    lz = layer_norm(z, w["norm_out_w"], w["norm_out_b"]).reshape(-1, d)
    po = lz @ w["p_out_w"].T
    po += w["p_out_b"]
    go = t @ w["g_out_w"].T
    go += w["g_out_b"]
    sigmoid_(go)
    go *= po
    out = go.reshape(bsz, n, n, d)
    if residual:
        out += x
    return out


def main():
    bsz, n, d, iters = (int(v) for v in sys.argv[1:5])
    rng = np.random.default_rng(42)
    x = rng.standard_normal((bsz, n, n, d), dtype=np.float32)
    mask = (rng.random((bsz, n, n)) >= 0.1).astype(np.float32)
    s = np.float32(1.0 / np.sqrt(d))

    def m(r, c):
        return rng.standard_normal((r, c), dtype=np.float32) * s

    def v(c, scale=0.1):
        return rng.standard_normal(c, dtype=np.float32) * np.float32(scale)

    w = {
        "norm_in_w": 1 + v(d), "norm_in_b": v(d), "norm_out_w": 1 + v(d), "norm_out_b": v(d),
        "in_w": np.concatenate([m(2 * d, d), m(2 * d, d)]), "in_b": v(4 * d),
        "p_out_w": m(d, d), "g_out_w": m(d, d), "p_out_b": v(d), "g_out_b": v(d),
    }
    for label, outgoing in (("outgoing", True), ("incoming", False)):
        for _ in range(2):
            forward(x, mask, w, outgoing)
        ms = []
        for _ in range(iters):
            t0 = time.perf_counter()
            forward(x, mask, w, outgoing)
            ms.append((time.perf_counter() - t0) * 1e3)
        ms.sort()
        print(f"numpy {label} median {ms[len(ms) // 2]:.1f} min {ms[0]:.1f} max {ms[-1]:.1f} runs {iters}",
              flush=True)


if __name__ == "__main__":
    main()
