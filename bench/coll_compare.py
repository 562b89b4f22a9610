#!/usr/bin/env python3
"""plan calibrate's collective busbw against nccl-tests and torch.distributed, same GPUs, same call.

Issue 24: `plan calibrate` must report the bandwidth a user's NCCL calls get (target >= 0.97x at
>= 64 MiB). bench/mgpu_run.sh writes, into one folder (one machine, one call):
  calib_1proc.csv   plan calibrate --ops collectives, one process driving every GPU
  calib_Nproc.csv   the same under mpirun -np N, one process per GPU
  nt_OP_nK.txt      nccl-tests OP_perf -g K -d bfloat16 -b 1K -e 1G -f 4 (one process, K GPUs)
  torch_nK.csv      bench/coll_torch.py under torchrun, K processes
Sizes are nccl-tests' sizes in every file (plan calibrate and coll_torch.py use its definition),
so rows are joined on (op, ranks, bytes). nccl-tests' out-of-place busbw is the reference (plan
calibrate times out of place); its in-place column is shown for all-reduce and broadcast, which
torch runs in place. Standard library only.

Usage: python3 bench/coll_compare.py bench/results/mgpu_2026-11-27/extra_h100x4/coll [--min-bytes 64M]
"""
import argparse
import csv
import glob
import os
import re
import statistics

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--min-bytes", default="64M", help="sizes summarized against the 0.97 target")
ap.add_argument("--all", action="store_true", help="print every size, not only >= 1 MiB")
args = ap.parse_args()
UNIT = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
MINB = int(args.min_bytes[:-1]) * UNIT[args.min_bytes[-1]] if args.min_bytes[-1] in UNIT else int(args.min_bytes)
NT_OP = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
         "alltoall": "all_to_all", "broadcast": "broadcast", "sendrecv": "send_recv"}


def read_calib(fn):
    out = {}
    if not os.path.exists(fn):
        return out
    for r in csv.DictReader(open(fn)):
        if r["op"] == "gemm":
            continue
        out[(r["op"], int(r["group_size"]), int(r["bytes"]))] = float(r["busbw_bytes_per_s"]) / 1e9
    return out


def read_nt(d):
    oop, inp = {}, {}
    for fn in glob.glob(os.path.join(d, "nt_*_n*.txt")):
        m = re.match(r"nt_(\w+)_n(\d+)\.txt", os.path.basename(fn))
        op, n = NT_OP[m.group(1)], int(m.group(2))
        for ln in open(fn):
            f = ln.split()
            if ln.startswith("#") or len(f) < 13 or not f[0].isdigit():
                continue
            size = int(f[0])  # size count type redop root time algbw busbw #wrong time algbw busbw #wrong
            oop[(op, n, size)] = float(f[7])
            inp[(op, n, size)] = float(f[11])
    return oop, inp


def read_torch(d):
    out = {}
    for fn in glob.glob(os.path.join(d, "torch_n*.csv")):
        for r in csv.DictReader(open(fn)):
            out[(r["op"], int(r["group_size"]), int(r["bytes"]))] = float(r["busbw_bytes_per_s"]) / 1e9
    return out


def near(table, op, n, size):
    """The row of (op, n) whose size is within 1% of size (sizes are rounded to whole chunks)."""
    for (o, k, s), v in table.items():
        if o == op and k == n and abs(s - size) <= 0.01 * size + 64:
            return v
    return None


def main():
    c1 = read_calib(os.path.join(args.dir, "calib_1proc.csv"))
    cn = {}
    for fn in glob.glob(os.path.join(args.dir, "calib_*proc.csv")):
        if not fn.endswith("calib_1proc.csv"):
            cn = read_calib(fn)
            mpi_name = os.path.basename(fn)
    nt, nti = read_nt(args.dir)
    th = read_torch(args.dir)
    keys = sorted(set((o, n, s) for (o, n, s) in nt), key=lambda k: (k[0], k[1], k[2]))
    print("busbw in GB/s; ratios are plan calibrate (one process) / reference, and plan under mpirun"
          " (%s) / reference" % (mpi_name if cn else "none"))
    hdr = "%-14s %2s %11s %8s %8s %8s %8s %8s | %6s %6s %6s %6s" % (
        "op", "n", "bytes", "plan", "plan-mpi", "nccl-t", "nt-inpl", "torch", "p/nt", "pm/nt", "p/tor", "pm/tor")
    print(hdr)
    print("-" * len(hdr))
    summ = {}
    for op, n, s in keys:
        if s < (1 << 20) and not args.all:
            continue
        p, pm, r, ri, t = near(c1, op, n, s), near(cn, op, n, s), nt[(op, n, s)], nti[(op, n, s)], near(th, op, n, s)
        rat = lambda a, b: (a / b) if (a and b) else None  # noqa: E731
        f = lambda x: "%8.1f" % x if x is not None else "%8s" % "-"  # noqa: E731
        g = lambda x: "%6.3f" % x if x is not None else "%6s" % "-"  # noqa: E731
        # the reference for torch's in-place all-reduce/broadcast is nccl-tests' in-place column
        tref = ri if op in ("all_reduce", "broadcast") else r
        row = (rat(p, r), rat(pm, r), rat(p, t), rat(pm, t))
        print("%-14s %2d %11d %s %s %s %s %s | %s %s %s %s   torch/nt %s" % (
            op, n, s, f(p), f(pm), f(r), f(ri), f(t), *(g(x) for x in row), g(rat(t, tref))))
        if s >= MINB:
            for name, x in zip(("plan/nccl-tests", "plan-mpi/nccl-tests", "plan/torch", "plan-mpi/torch"), row):
                if x is not None:
                    summ.setdefault(name, []).append((x, op, n, s))
    print()
    print("sizes >= %s: target plan / reference >= 0.97" % args.min_bytes)
    for name, xs in summ.items():
        v = [x[0] for x in xs]
        lo = min(xs)
        below = [x for x in xs if x[0] < 0.97]
        print("  %-20s median %.3f  min %.3f (%s n=%d %d B)  below 0.97: %d of %d%s" % (
            name, statistics.median(v), lo[0], lo[1], lo[2], lo[3], len(below), len(xs),
            (": " + ", ".join("%s n=%d %dM %.3f" % (o, n, s >> 20, x) for x, o, n, s in below)) if below else ""))


if __name__ == "__main__":
    main()
