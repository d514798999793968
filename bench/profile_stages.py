"""What limits each stage kernel of one forward, from Nsight Compute: the ncu arguments and the summary.

bin/gpu-run's `profile` step (--profile-shapes) runs our C++ bench under ncu and profiles the third
outgoing forward's three stage kernels (the first two are the bench's warm-up):

  ncu $(python3 bench/profile_stages.py --sections) -k "regex:proj_in_wgmma|tri_gemm_wgmma|proj_out" \\
      --launch-skip 6 --launch-count 3 -o rep native/build/foldcp_trimul_bench --iters 10 --shapes 1,2048,128
  ncu --import rep.ncu-rep --csv --page raw --print-units base > ncu.csv
  python3 bench/profile_stages.py --summarize ncu.csv

(A forward in channel groups launches stages 1 and 2 once per group: the skip and count then
miss the third forward; the profiled shapes run ungrouped. Where stage 3 is two kernels, D above
384, a forward is four launches: gpu-run skips 8 and profiles 4.)
`--source-summary` and `--source-sites` read the source page that `gpu-run --profile-source` exports
(`ncu --import rep --csv --page source --print-source cuda,sass`): a kernel's CUDA lines by warp
samples, and its busiest SASS instructions with the caller's lines around them.
`--summarize` turns ncu's raw CSV into one line per kernel: duration, SM and DRAM throughput, tensor
pipe and issue-slot use, and the top warp stall reasons (the numbers that tell an issue-bound
epilogue from a memory-bound or latency-bound one). (A torch-driven forward under ncu ended with
status 11 before any kernel ran on the H100 of 2026-12-06; the C++ bench needs no torch.)
"""
import argparse
import csv
import re
import sys

# ncu sections the step collects (present in every ncu release, unlike single metric names):
# duration and throughputs, pipe use, issue activity, warp stall reasons.
SECTIONS = ["SpeedOfLight", "ComputeWorkloadAnalysis", "SchedulerStats", "WarpStateStats", "MemoryWorkloadAnalysis"]
# ... plus the wgmma pipe's busy cycles, which no section collects on Hopper (ComputeWorkloadAnalysis
# gives an instruction rate of that pipe, not how busy it is)
EXTRA_METRICS = ["sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"]
# What the summary prints, each the first column whose name matches one of its patterns (the
# metric names differ a little between ncu releases).
COLUMNS = [
    ("SM%", [r"^sm__throughput\.avg\.pct_of_peak_sustained_elapsed$"]),
    ("mem%", [r"^gpu__compute_memory_throughput\.avg\.pct_of_peak_sustained_elapsed$"]),
    ("DRAM%", [r"^dram__throughput\.avg\.pct_of_peak_sustained_elapsed$",
               r"^gpu__dram_throughput\.avg\.pct_of_peak_sustained_elapsed$"]),
    ("tensor%", [r"^sm__pipe_tensor_op_gmma_cycles_active\.avg\.pct_of_peak_sustained_active$",
                 r"^sm__pipe_tensor_cycles_active\.avg\.pct_of_peak_sustained_active$"]),
    ("issue%", [r"^smsp__issue_active\.avg\.pct_of_peak_sustained_active$",
                r"^sm__inst_issued\.avg\.pct_of_peak_sustained_active$"]),
    ("L1%", [r"^l1tex__throughput\.avg\.pct_of_peak_sustained_active$"]),
    # L2's own throughput: stages 1 and 3 stream their whole weight matrix from L2 per 128-token
    # tile (W1 512 KiB at D = H = 256), which mem% (the largest unit's) does not single out
    ("L2%", [r"^lts__throughput\.avg\.pct_of_peak_sustained_elapsed$"]),
]
STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio$")


def num(v):
    try:
        return float(str(v).replace(",", ""))
    except ValueError:
        return float("nan")


STAGES = {"proj_in_wgmma_kernel": "stage1", "tri_gemm_wgmma_kernel": "stage2", "proj_out_wgmma_kernel": "stage3",
          "proj_out_wide_kernel": "stage3w", "proj_out_resident_kernel": "stage3r", "proj_out_p_kernel": "stage3p",
          "proj_out_g_kernel": "stage3g"}


def kernel_label(name):
    """The stage of one of our kernels, with its template arguments where ncu gives them."""
    for base, stage in STAGES.items():
        if base in name:
            m = re.search(re.escape(base) + r"<([^>]*)>", name)
            return f"{stage}<{m.group(1).replace(' ', '')}>" if m else stage
    return "other " + name[:34]


def summarize(path):
    rows = list(csv.reader(open(path)))
    # ncu's raw csv: a header row of metric names, a row of units, then one row per kernel
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None:
        print("no kernel rows in the ncu output (was the forward profiled? see the step's log)")
        return 1
    names, units = rows[head], rows[head + 1] if head + 1 < len(rows) else []
    col = {n: i for i, n in enumerate(names)}
    pick = {}
    for short, pats in COLUMNS:
        for pat in pats:
            hit = next((n for n in names if re.search(pat, n)), None)
            if hit:
                pick[short] = hit
                break
    # ("selected" is the issuing warp itself: about one per issue by definition, not a stall)
    stalls = [(n, STALL.match(n).group(1)) for n in names if STALL.match(n) and STALL.match(n).group(1) != "selected"]
    dur = next((n for n in names if n == "gpu__time_duration.sum"), None)
    n_kernels = 0
    for r in rows[head + 1:]:
        if len(r) != len(names) or not re.fullmatch(r"\d+", r[col.get("ID", 0)].strip()):
            continue  # the units row, or a short line
        n_kernels += 1
        vals = []
        if dur:
            unit = units[col[dur]] if len(units) == len(names) else "nsecond"
            scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}.get(unit.strip(), 1e-6)
            vals.append(f"{num(r[col[dur]]) * scale:.3f} ms")
        vals += [f"{short} {num(r[col[m]]):.0f}" for short, m in pick.items()]
        top = sorted(((num(r[col[n]]), reason) for n, reason in stalls), reverse=True)
        top = ", ".join(f"{reason} {v:.2f}" for v, reason in top[:4] if v == v)
        print(f"{kernel_label(r[col['Kernel Name']]):28s} {'  '.join(vals)}  stalls per issue: {top}")
    if n_kernels == 0:
        print("the ncu output has a header but no kernel rows")
        return 1
    return 0


def source_rows(path):
    """The rows of ncu --page source --print-source cuda,sass --csv output, one table per (source
    file, kernel): a "File Path" row, a "Function Name" row, a header ("Line No", "Source",
    "Address", "Source", metrics...), then each CUDA line with its samples summed (where the build
    has -lineinfo) followed by its SASS lines. Yields per data row a dict: kernel, where (file:line of
    a CUDA line row, else None), addr (the SASS address text), cuda and sass (the two Source
    columns), samples (NaN where absent) and reasons ((samples, stall reason) pairs, largest first,
    without the Not-issued twins). Column names are read from the header (they differ between ncu
    releases)."""
    fpath = fname = ""
    head = None
    for r in csv.reader(open(path, newline="")):
        c = [x.strip() for x in r]
        if len(c) >= 2 and c[0] == "File Path":
            fpath, head = c[1], None
        elif len(c) >= 2 and c[0] == "Function Name":
            fname, head = c[1], None
        elif "Source" in c and any("Warp Stall Sampling (All" in x for x in c):
            head = c
            samp = next(i for i, n in enumerate(c) if "Warp Stall Sampling (All" in n)
            srcs = [i for i, n in enumerate(c) if n == "Source"]
            li = c.index("Line No") if "Line No" in c else None
            ai = c.index("Address") if "Address" in c else None
            stall = [(i, n[len("stall_"):]) for i, n in enumerate(c) if n.startswith("stall_") and "Not Issued" not in n]
        elif head is not None and len(c) == len(head):
            line = li is not None and c[li].isdigit()
            yield {"kernel": fname, "where": f"{fpath.rsplit('/', 1)[-1]}:{c[li]}" if line else None,
                   "addr": c[ai] if ai is not None else "", "cuda": c[srcs[0]], "sass": c[srcs[-1]],
                   "samples": num(c[samp]),
                   "reasons": sorted(((num(c[i]), n) for i, n in stall if num(c[i]) == num(c[i]) and num(c[i]) > 0),
                                     reverse=True)}


def source_summary(path, top=30):
    """Per kernel of a source page (source_rows), its CUDA lines (file:line) with the most warp
    samples, their share of the kernel's samples and their three largest stall reasons; without
    line tables, its SASS lines. An inlined instruction can be listed under its helper's line and
    under the caller's line too, so shares are of the summed rows, a little over the kernel's
    samples (--source-sites counts each once)."""
    kernels = {}  # kernel -> {"lines"|"sass": [(samples, where, text, reasons)]}
    for row in source_rows(path):
        v = row["samples"]
        if v != v:
            continue
        k = kernels.setdefault(row["kernel"], {"lines": [], "sass": []})
        if row["where"]:
            k["lines"].append((v, row["where"], row["cuda"], row["reasons"]))
        elif row["addr"] not in ("", "-", "..."):
            k["sass"].append((v, row["addr"][-6:], row["sass"], row["reasons"]))
    if not kernels:
        print(f"no source table in {path} (was SourceCounters collected?)")
        return 1
    for name, k in kernels.items():
        items = k["lines"] or k["sass"]
        total = sum(x[0] for x in items) or 1.0
        view = "CUDA lines" if k["lines"] else "SASS lines (no line tables: build with -lineinfo)"
        print(f"== {kernel_label(name)}  {total:.0f} warp samples, by {view}")
        for v, where, text, reasons in sorted(items, key=lambda x: -x[0])[:top]:
            why = ", ".join(f"{n} {x:.0f}" for x, n in reasons[:3])
            print(f"  {100 * v / total:5.1f}%  {where:28s} {text[:80]:80s} [{why}]")
    return 0


def source_sites(path, kernel, top=25):
    """The SASS instructions of one kernel (its name contains `kernel`) with the most warp samples,
    each with the CUDA lines of the code around it: an inlined helper (an mbarrier wait, say) is one
    CUDA line for all its call sites, but each call site is its own instruction, and the caller's
    lines just before and after it tell which wait it is. From the same source page (source_rows)."""
    where = None
    ins = {}  # address -> [samples, innermost CUDA line, SASS text, top reasons]
    for row in source_rows(path):
        if kernel not in row["kernel"]:
            continue
        if row["where"]:
            where = row["where"]
            continue
        where = where or "?:0"  # (SASS before any CUDA line: a build without line tables)
        try:
            a = int(row["addr"], 16)
        except ValueError:
            continue
        v = row["samples"]
        # (an instruction inlined from several levels is listed under each: keep the innermost)
        if a not in ins or where.split(":")[0] in ("wgmma_common.cuh", "common.cuh"):
            ins[a] = [0.0 if v != v else v, where, row["sass"], row["reasons"][:2]]
    if not ins:
        print(f"no SASS lines of a kernel named like {kernel!r} in {path}")
        return 1
    order = sorted(ins)
    total = sum(x[0] for x in ins.values()) or 1.0
    helpers = ("wgmma_common.cuh", "common.cuh", "sm_30_intrinsics.hpp", "cuda_bf16.hpp")

    def around(k, step):
        seen, j = [], k + step
        while 0 <= j < len(order) and len(seen) < 3:
            w = ins[order[j]][1]
            if w.split(":")[0] not in helpers and (not seen or seen[-1] != w):
                seen.append(w)
            j += step
        return ", ".join(seen)

    print(f"== {kernel}: {len(order)} SASS instructions, {total:.0f} warp samples")
    ranked = sorted(range(len(order)), key=lambda k: -ins[order[k]][0])[:top]
    for k in sorted(ranked):
        v, w, text, reasons = ins[order[k]]
        why = ", ".join(f"{n} {x:.0f}" for x, n in reasons)
        print(f"  {100 * v / total:5.1f}%  +{order[k] - order[0]:05x}  {w:26s} {text[:44]:44s} [{why}]")
        print(f"          after {around(k, -1)}  |  before {around(k, 1)}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--summarize", help="ncu --csv --page raw output to summarize")
    ap.add_argument("--sections", action="store_true", help="print the ncu --section arguments")
    ap.add_argument("--source-summary", help="ncu --csv --page source output to summarize by line")
    ap.add_argument("--source-sites", nargs=2, metavar=("CSV", "KERNEL"),
                    help="the same output: one kernel's busiest SASS instructions with the code around them")
    args = ap.parse_args()
    if args.sections:
        print(" ".join([f"--section {x}" for x in SECTIONS] + ["--metrics", ",".join(EXTRA_METRICS)]))
        return 0
    if args.summarize:
        return summarize(args.summarize)
    if args.source_summary:
        return source_summary(args.source_summary)
    if args.source_sites:
        return source_sites(*args.source_sites)
    ap.error("give --sections, --summarize CSV, --source-summary CSV or --source-sites CSV KERNEL")


if __name__ == "__main__":
    sys.exit(main())
