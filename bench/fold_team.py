"""What the multi-GPU benchmarks share (bench/cp_peers.py, bench/a2a_peers.py): libfoldcp_cp.so
through ctypes (the trimul API of bench/torch_peers.py plus the NVSHMEM team), one process per GPU
with torch.distributed over NCCL beside the team, the slowest-rank timing of a sample, and the CSV
with the command in its first line. Needs torch; imports nothing of the benchmarks themselves.
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
        every rank, then each joins as PE `rank` on GPU `rank` with heap_bytes of symmetric heap."""
        uid = [self.unique_id() if rank == 0 else None]
        dist.broadcast_object_list(uid, src=0)
        self.check(self.lib.foldcp_cp_team_init(uid[0], rank, world, rank, heap_bytes, timeout_ms), "cp_team_init")

    def heap_error(self, rc, what):
        """MemoryError for a plan the heap cannot hold (reported as oom), else check()."""
        if rc == ERR_HEAP_TOO_SMALL:
            raise MemoryError(self.lib.foldcp_last_error().decode())
        self.check(rc, what)


def slowest(seconds):
    """The largest of every rank's value (the sample of a distributed arm)."""
    t = torch.tensor([seconds], device="cuda", dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def spawn(worker, args, world):
    """Runs worker(rank, args, port) in `world` processes, one per GPU; returns the rows rank 0
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


def start(rank, world, port, tag):
    """torch.distributed over NCCL for this rank (GPU `rank`); returns rank 0's logger."""
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    return (lambda s: print(f"[{tag}] {s}", flush=True)) if rank == 0 else (lambda s: None)


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


def enough_gpus(world):
    n = torch.cuda.device_count()
    if n < world:
        print(f"SKIP: {world} ranks need {world} GPUs, this machine has {n}")
        return False
    return True
