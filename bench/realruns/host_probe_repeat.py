"""The host-speed probe against the block host time of one job, many times in one process
(issue 14, 19; bench/results/host18_2026-11-28/README.md).

Why: an eager DTensor TP step on an H200 is paced by the host, and the host's speed moves 1.4-1.7x
a minute apart on one machine (bench/results/tphosts17_2026-11-28). To relate host_speed_probe.py's
two figures (one DTensor op, one plain op) to the --host-split block host times, the same job is
measured --rounds times in a row, each round between two probes. A fresh torchrun per round costs
~15 s of start-up (a device budget's worth for ten rounds); here the model is built once and the
rounds cost only their steps.

Same flags as parallel_run.py plus --rounds N (default 10) or --per-step N (below). Each round runs parallel_run.py's
measurement (prun_measure.timed_steps: --warmup + --steps steps, --host-split stamps) into the record
skeleton (refilled each round), with `host_probe_before` / `host_probe_after` (host_speed_probe.py)
and `round`; rank 0 appends one JSON line per round to --out. Memory fields and the profiled step
are left out (parallel_run.py has them).

--per-step N: the host speed moved 28 -> 56 us within two seconds (the first call's rounds), so a
round's two probes bracket it poorly; instead, after --warmup steps, N single steps, each between
two probes, with that step's steady block host times, the CPU rank 0's main thread ran on and the
busy fraction of that CPU's hyperthread sibling over the step (is a slow moment a shared core?);
one record with `per_step`.

Usage (repository root, on the GPU machine):
  torchrun --nproc_per_node 2 bench/realruns/host_probe_repeat.py --rounds 10 --layout tp --tp 2 \
      --clip 0 --host-split --config llama-3.1-8b --layers 8 --seq 256 --mbs 1 --warmup 3 --steps 8 \
      --out results.jsonl --label rep
"""
import copy
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _own_flag(name, default):
    """--rounds / --per-step N, taken out before prun_cli parses parallel_run.py's flags."""
    if name not in sys.argv:
        return default
    i = sys.argv.index(name)
    try:
        v = int(sys.argv[i + 1])
    except (IndexError, ValueError):
        v = 0
    if v < 1:
        sys.exit("host_probe_repeat: %s needs a positive integer" % name)
    del sys.argv[i:i + 2]
    return v


ROUNDS = _own_flag("--rounds", 10)
PER_STEP = _own_flag("--per-step", 0)

import prun_cli  # noqa: E402

ctx = prun_cli.parse()
T0 = time.perf_counter()
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from native_llama import Args  # noqa: E402
from prun_build import build  # noqa: E402
from prun_measure import STAMPS, host_split_summary, memory_fields, timed_steps, versions  # noqa: E402
from host_speed_probe import host_speed_probe  # noqa: E402
from prun_step import make_step  # noqa: E402


def _cpu_of_this_thread():
    """The CPU the calling thread last ran on (/proc/thread-self/stat field 39)."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except Exception:
        return -1


def _proc_stat():
    """{cpu: (busy, total)} jiffies from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for ln in f:
            if ln.startswith("cpu") and ln[3].isdigit():
                p = ln.split()
                v = [int(x) for x in p[1:]]
                idle = v[3] + v[4]
                out[int(p[0][3:])] = (sum(v) - idle, sum(v))
    return out


def _siblings(cpu):
    try:
        with open("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % cpu) as f:
            txt = f.read().strip()
    except Exception:
        return []
    res = []
    for part in txt.split(","):
        a, _, b = part.partition("-")
        res += list(range(int(a), int(b or a) + 1))
    return [c for c in res if c != cpu]


def per_step(args, rec, b, step, dev, RANK):
    """--per-step N: after --warmup steps, N steps each between two host_speed_probe calls, with the
    steady block host times of that one step (blocks 1..L-2, as tphost_hosts.py reads them), the
    CPU rank 0's main thread ran on before and after, and how busy that CPU's hyperthread sibling
    was over the step (/proc/stat)."""
    import statistics
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    rows, times = [], []
    for k in range(PER_STEP):
        pb = host_speed_probe(dev)
        c0, s0 = _cpu_of_this_thread(), _proc_stat()
        del STAMPS[:]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        t_host = time.perf_counter() - t0
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        s1, c1 = _proc_stat(), _cpu_of_this_thread()
        hs = host_split_summary([list(STAMPS)], b.hooked_layers)
        del STAMPS[:]
        pa = host_speed_probe(dev)
        sib = {}
        for c in set([c0, c1]):
            for s in _siblings(c):
                if s in s0 and s in s1 and s1[s][1] > s0[s][1]:
                    sib[s] = round((s1[s][0] - s0[s][0]) / (s1[s][1] - s0[s][1]), 3)
        busy_all = [(s1[c][0] - s0[c][0]) / max(1, s1[c][1] - s0[c][1]) for c in s0 if c in s1]
        f = [x for x in hs["fwd_block_s"][1:-1] if x]
        bw = [x for x in hs["bwd_block_s"][1:-1] if x]
        rows.append({"k": k, "step_s_rank0": round(dt, 5), "host_issue_s_rank0": round(t_host, 5),
                     "fwd_block_s": statistics.median(f) if f else None,
                     "bwd_block_s": statistics.median(bw) if bw else None,
                     "probe_before": {x: pb[x] for x in pb if x != "note"},
                     "probe_after": {x: pa[x] for x in pa if x != "note"},
                     "cpu_before": c0, "cpu_after": c1, "sibling_busy": sib,
                     "cpus_busy_sum": round(sum(busy_all), 2)})
        times.append(dt)
    tt = torch.tensor(times, device=dev, dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    times = tt.tolist()
    rec["per_step"] = rows
    rec["step_times_s"] = [round(x, 5) for x in times]
    rec["step_s_median"], rec["step_s_min"], rec["step_s_max"] = (statistics.median(times),
                                                                    min(times), max(times))
    rec["warmup"], rec["steps"] = args.warmup, PER_STEP


def emit(rec, out, rank):
    """Rank 0 prints the record as mgpu_driver.py reads it (REALRUN line) and appends it to out."""
    if rank != 0:
        return
    line = json.dumps(rec, sort_keys=True)
    print("REALRUN " + line, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")


def main():
    args, CFG, RANK = ctx.args, ctx.CFG, ctx.RANK
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    torch.zeros(1, device=dev)
    dist.init_process_group("nccl", device_id=dev)
    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    torch.manual_seed(0)
    b = build(ctx, Args(CFG, args.layers or None), dev)
    step = make_step(ctx, b, dev)
    rec = ctx.rec  # the same dict each round (build and make_step hold it), refilled
    if PER_STEP:
        rec["gpu"] = torch.cuda.get_device_name(dev)
        rec["versions"] = versions()
        per_step(args, rec, b, step, dev, RANK)
        ctx.phase = "done"
        memory_fields(ctx, dev)
        emit(rec, args.out, RANK)
        dist.destroy_process_group()
        return 0
    skeleton = copy.deepcopy(rec)
    for r in range(ROUNDS):
        rec.clear()
        rec.update(copy.deepcopy(skeleton))
        rec["gpu"] = torch.cuda.get_device_name(dev)
        rec["versions"] = versions() if r == 0 else None
        rec["round"], rec["rounds"] = r, ROUNDS
        rec["t_start_s"] = round(time.perf_counter() - T0, 2)
        rec["host_probe_before"] = host_speed_probe(dev)
        timed_steps(ctx, b, step, dev)
        rec["host_probe_after"] = host_speed_probe(dev)
        memory_fields(ctx, dev)  # mgpu_driver.py's summary line reads the peaks
        rec["t_end_s"] = round(time.perf_counter() - T0, 2)
        rec["label"] = "%s-r%d" % (args.label, r)
        emit(rec, args.out, RANK)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
