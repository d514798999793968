"""What the multi-GPU benchmarks share (bench/cp_peers.py, bench/a2a_peers.py): libfoldcp_cp.so
through ctypes (the trimul API of bench/torch_peers.py plus the NVSHMEM team), one process per GPU
with torch.distributed over NCCL beside the team, the slowest-rank timing of a sample, and the CSV
with the command in its first line. Needs torch; imports nothing of the benchmarks themselves.

Two placements (the `placement` column of every row):
  gpu_per_rank  rank r on GPU r: the speed figures.
  shared_gpu    every rank a process on GPU 0 (--shared-gpu): proves that every arm builds, checks
                and times, on a machine of one GPU; its times are the ranks' work time-sliced on one
                device, not a speed figure. NCCL refuses two ranks on one GPU (ncclInvalidUsage,
                "Duplicate GPU detected", since NCCL 2.5), so here the control plane (barriers, the
                slowest-rank reduction, gathers for the checks) runs over gloo on the host, and the
                NCCL arms are tried once (nccl_probe) and, refused, get the status nccl_refused.
"""
import ctypes
import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_peers import Ours  # noqa: E402

# NVLink multicast stays off in NCCL, PyTorch and NVSHMEM: the lent GPU machines require it (a
# program that uses it can take a shared host's GPUs out of service), and the spawned ranks
# inherit this environment.
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

UID_BYTES = 128
ERR_HEAP_TOO_SMALL = 7
ROUTES = ("auto", "peer", "put")
PLACEMENTS = ("gpu_per_rank", "shared_gpu")


class Placement:
    """Where the ranks run and what carries their collectives, fixed once per process by start()."""
    shared = False
    ctl = "cuda"         # device of the control plane's tensors: cuda over NCCL, cpu over gloo
    data_group = None    # group of the NCCL arms' collectives (None: the default group); unset: refused
    nccl_ok = True

    @classmethod
    def name(cls):
        return PLACEMENTS[1] if cls.shared else PLACEMENTS[0]

    @classmethod
    def gpu(cls, rank):
        return 0 if cls.shared else rank


class FoldLib(Ours):
    """The trimul C API (Ours) plus the team of foldcp_cp.h, from libfoldcp_cp.so."""

    def __init__(self, path):
        super().__init__(path)
        L = self.lib
        L.foldcp_cp_unique_id.argtypes = [ctypes.c_char_p]
        L.foldcp_cp_team_init.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_size_t,
                                          ctypes.c_int64]

    def unique_id(self):
        buf = ctypes.create_string_buffer(UID_BYTES)
        self.check(self.lib.foldcp_cp_unique_id(buf), "cp_unique_id")
        return buf.raw

    def join(self, rank, world, heap_bytes, timeout_ms=120_000):
        """Forms the team (collective over the torch.distributed group): rank 0's unique id goes to
        every rank, then each joins as PE `rank` on its GPU (Placement.gpu) with heap_bytes of
        symmetric heap."""
        uid = [self.unique_id() if rank == 0 else None]
        dist.broadcast_object_list(uid, src=0)
        self.check(self.lib.foldcp_cp_team_init(uid[0], rank, world, Placement.gpu(rank), heap_bytes, timeout_ms),
                   "cp_team_init")

    def heap_error(self, rc, what):
        """MemoryError for a plan the heap cannot hold (reported as oom), else check()."""
        if rc == ERR_HEAP_TOO_SMALL:
            raise MemoryError(self.lib.foldcp_last_error().decode())
        self.check(rc, what)


def slowest(seconds):
    """The largest of every rank's value (the sample of a distributed arm)."""
    return agree(seconds, dist.ReduceOp.MAX)


def agree(value, op):
    """value reduced over every rank with op, on the control plane (the same answer everywhere)."""
    t = torch.tensor([value], device=Placement.ctl, dtype=torch.float64)
    dist.all_reduce(t, op=op)
    return t.item()


def gather_to(t, world):
    """Every rank's tensor t (same shape), on t's device: over the control plane (through the host
    where that is gloo)."""
    src = t if Placement.ctl == "cuda" else t.cpu()
    parts = [torch.empty_like(src) for _ in range(world)]
    dist.all_gather(parts, src)
    return [p.to(t.device) for p in parts]


def spawn(worker, args, world):
    """Runs worker(rank, args, port) in `world` processes (one per GPU, or all on GPU 0 with
    args.shared_gpu); returns the rows rank 0
    saved with save_row (args.rows_path is set here) and whether every rank ended
    well. A rank that fails ends them all (mp.spawn); the rows saved before it stay."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        args.rows_path = os.path.join(tmp, "rows.jsonl")
        ok = True
        try:
            mp.spawn(worker, args=(args, port), nprocs=world, join=True)
        except Exception as e:  # a rank failed: say so, keep what was measured
            print(f"FAIL: a rank ended with an error: {e}", file=sys.stderr)
            ok = False
        rows = []
        if os.path.exists(args.rows_path):
            with open(args.rows_path) as f:
                rows = [json.loads(line) for line in f if line.strip()]
        return rows, ok


def start(rank, args, port, tag):
    """torch.distributed for this rank of args.world: over NCCL on GPU `rank`, or (args.shared_gpu)
    over gloo with every rank on GPU 0 and, where args.nccl_ok (nccl_probe accepted ranks sharing
    a GPU), an NCCL group for the NCCL arms. Returns rank 0's logger."""
    world, shared = args.world, args.shared_gpu
    Placement.shared = shared
    Placement.nccl_ok = args.nccl_ok
    gpu = Placement.gpu(rank)
    torch.cuda.set_device(gpu)
    init = f"tcp://127.0.0.1:{port}"
    if shared:
        Placement.ctl = "cpu"
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
        if args.nccl_ok:
            Placement.data_group = dist.new_group(backend="nccl")
    else:
        dist.init_process_group("nccl", init_method=init, rank=rank, world_size=world,
                                device_id=torch.device("cuda", gpu))
    return (lambda s: print(f"[{tag}] {s}", flush=True)) if rank == 0 else (lambda s: None)


def _probe_rank(rank, world, port, result):
    try:
        torch.cuda.set_device(0)
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                device_id=torch.device("cuda", 0))
        t = torch.ones(1, device="cuda")
        dist.all_reduce(t)
        torch.cuda.synchronize()
        result.put((rank, "ok" if t.item() == world else f"all_reduce gave {t.item()}, not {world}"))
        dist.destroy_process_group()
    except Exception as e:  # the refusal is the expected answer; say what NCCL said
        result.put((rank, " ".join(str(e).split())[:300]))


def nccl_probe(world, timeout_s=90):
    """Whether NCCL accepts `world` ranks on GPU 0, tried in processes of their own (a refused or
    hung communicator cannot touch the benchmark): (True, "ok") or (False, what NCCL said)."""
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [ctx.Process(target=_probe_rank, args=(r, world, port, result)) for r in range(world)]
    for p in procs:
        p.start()
    answers = {}
    try:
        for _ in range(world):
            r, what = result.get(timeout=timeout_s)
            answers[r] = what
    except Exception:
        pass
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
    if len(answers) < world:
        return False, f"no answer from {world - len(answers)} of {world} ranks within {timeout_s} s"
    bad = sorted({w for w in answers.values() if w != "ok"})
    return (not bad), ("ok" if not bad else bad[0])


def save_row(args, rank, row):
    """Rank 0 appends one row, closed at once, so that it outlives a rank that fails later."""
    if rank == 0:
        with open(args.rows_path, "a") as f:
            f.write(json.dumps(row) + "\n")



def write_csv(path, header, rows):
    """rows: tuples whose first fields follow date, commit, gpu; prints and writes the CSV."""
    gpu = torch.cuda.get_device_name(0)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    date = datetime.date.today().isoformat()
    lines = [header] + [",".join(str(v) for v in (date, commit, gpu) + tuple(r)) for r in rows]
    text = "# python3 " + " ".join(sys.argv) + "\n" + "\n".join(lines) + "\n"
    if path:
        with open(path, "w") as f:
            f.write(text)
    print(text, end="")


def enough_gpus(world, shared=False):
    n = torch.cuda.device_count()
    if shared:
        if n < 1:
            print("SKIP: --shared-gpu needs a GPU, this machine has none")
            return False
        return True
    if n < world:
        print(f"SKIP: {world} ranks need {world} GPUs, this machine has {n} (--shared-gpu runs them all on GPU 0)")
        return False
    return True


def placement_args(ap):
    """The --shared-gpu option both benchmarks take."""
    ap.add_argument("--shared-gpu", action="store_true",
                    help="every rank a process on GPU 0: every arm built, checked and timed; rows marked "
                         "shared_gpu, not speed figures")


def probe_if_shared(args, tag):
    """Sets args.nccl_ok: NCCL accepts the ranks (always, one per GPU), or the probe's answer."""
    args.nccl_ok, args.nccl_why = True, ""
    if args.shared_gpu:
        args.nccl_ok, args.nccl_why = nccl_probe(args.world)
        print(f"[{tag}] shared GPU: NCCL with {args.world} ranks on GPU 0: "
              + ("accepted, the NCCL arms run" if args.nccl_ok else f"refused ({args.nccl_why}); the NCCL arms "
                 "get status nccl_refused, the control plane runs over gloo"), flush=True)
