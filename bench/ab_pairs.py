"""The same-run A/B of two builds of our library, timed in pairs (bench/torch_peers.py --baseline-lib)."""
import math
import statistics

import torch


def paired_ab(arms, ours_ms, iters, min_ms, what):
    """The same-run A/B in pairs: ours and ours_baseline back to back, the pair's order alternating,
    until ours has run min_ms (at least iters pairs), so that a shape of about a millisecond gets
    hundreds of pairs; prints the median of the per-pair ratios and its quartiles (drift between
    pairs cancels in a ratio). Returns the two arms' medians over the pairs."""
    pairs = max(iters, math.ceil(min_ms / max(ours_ms, 1e-3)))
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    ta, tb, ratios = [], [], []
    for it in range(pairs):
        got = {}
        for name in (("ours", "ours_baseline") if it % 2 == 0 else ("ours_baseline", "ours")):
            torch.cuda.synchronize()
            e0.record()
            arms[name]()
            e1.record()
            e1.synchronize()
            got[name] = e0.elapsed_time(e1)
        ta.append(got["ours"])
        tb.append(got["ours_baseline"])
        ratios.append(got["ours"] / got["ours_baseline"])
    q = statistics.quantiles(ratios, n=4)
    print(f"  A/B {what}: {pairs} pairs, ours/baseline per pair: median {statistics.median(ratios):.3f}, "
          f"quartiles {q[0]:.3f}-{q[2]:.3f}", flush=True)
    return {"ours": statistics.median(ta), "ours_baseline": statistics.median(tb)}
