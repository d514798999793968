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


def source_summary(path, top=30):
    """ncu --page source --csv output (one table per kernel; each a header row with a "Source" column,
    then one row per SASS or CUDA line): per table, the lines with the most warp samples, their share
    of the table's samples and their three largest stall columns. The column names are taken from
    the header (they differ between ncu releases and source views), so that a format this script
    has not seen still summarizes."""
    rows = list(csv.reader(open(path, newline="")))
    tables, cur, title = [], None, ""
    for r in rows:
        cells = [c.strip() for c in r]
        if "Source" in cells:
            cur = {"title": title, "head": cells, "rows": []}
            tables.append(cur)
        elif cur is not None and len(cells) == len(cur["head"]):
            cur["rows"].append(cells)
        elif any(cells):
            title = " ".join(c for c in cells if c)[:160]  # a kernel's or a file's name line, if any
    if not tables:
        print(f"no source table in {path} (was SourceCounters collected?)")
        return 1
    for t in tables:
        head = t["head"]
        src = head.index("Source")
        samp = next((i for i, n in enumerate(head) if re.search(r"Warp Stall Sampling \(All", n)), None)
        if samp is None:
            samp = next((i for i, n in enumerate(head) if re.search(r"(?i)sampl", n)), None)
        if samp is None:
            print(f"== {t['title']}: no warp-sample column among {head[:12]}")
            continue
        label = next((i for i, n in enumerate(head) if n in ("#", "Line", "# Address", "Address")), 0)
        stall_cols = [i for i, n in enumerate(head)
                      if i != samp and re.search(r"(?i)stall", n) and not re.search(r"(?i)all samples|not-issued", n)]
        total = sum(num(r[samp]) for r in t["rows"] if num(r[samp]) == num(r[samp])) or 1.0
        print(f"== {t['title']}  ({len(t['rows'])} lines, {total:.0f} samples)")
        ranked = sorted(t["rows"], key=lambda r: -(num(r[samp]) if num(r[samp]) == num(r[samp]) else 0))
        for r in ranked[:top]:
            v = num(r[samp])
            if not v or v != v:
                break
            reasons = sorted(((num(r[i]), head[i]) for i in stall_cols if num(r[i]) == num(r[i]) and num(r[i]) > 0),
                             reverse=True)[:3]
            why = ", ".join(f"{re.sub(r'(?i).*stall(ed)?[_ ]*', '', n)[:24]} {x:.0f}" for x, n in reasons)
            print(f"  {r[label][:10]:>10} {100 * v / total:5.1f}%  {r[src][:90]:90s} [{why}]")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--summarize", help="ncu --csv --page raw output to summarize")
    ap.add_argument("--sections", action="store_true", help="print the ncu --section arguments")
    ap.add_argument("--source-summary", help="ncu --csv --page source output to summarize by line")
    args = ap.parse_args()
    if args.sections:
        print(" ".join([f"--section {x}" for x in SECTIONS] + ["--metrics", ",".join(EXTRA_METRICS)]))
        return 0
    if args.summarize:
        return summarize(args.summarize)
    if args.source_summary:
        return source_summary(args.source_summary)
    ap.error("give --sections, --summarize CSV or --source-summary CSV")


if __name__ == "__main__":
    sys.exit(main())
