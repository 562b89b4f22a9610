"""Runs a list of real training runs (bench/realruns/realrun.py), one process each, so that a run
that goes out of memory (on purpose or not) leaves the next one a clean GPU and allocator.

Each line of the runs file holds realrun.py's arguments (# starts a comment). Every run appends
one JSON line to OUT/results.jsonl (realrun.py writes it; a run that dies without writing one gets
a line with "error" written here). All output goes to OUT/runs.log; a one-line summary per run is
printed. Runs that would start after --deadline seconds are skipped and listed.

Usage (on the GPU machine, from the repository root):
  NCCL_NVLS_ENABLE=0 python3 bench/realruns/driver.py bench/realruns/runs_h100_a.txt --out $OUT \
      --deadline 520
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

p = argparse.ArgumentParser()
p.add_argument("runs")
p.add_argument("--out", required=True)
p.add_argument("--deadline", type=float, default=520.0, help="start no run after this many seconds")
p.add_argument("--only", default="", help="comma-separated labels to run (default all)")
args = p.parse_args()

os.makedirs(args.out, exist_ok=True)
results = os.path.join(args.out, "results.jsonl")
log = open(os.path.join(args.out, "runs.log"), "a")
env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
           NVSHMEM_DISABLE_NVLS="1", PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false",
           HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

lines = []
for ln in open(args.runs):
    ln = ln.split("#", 1)[0].strip()
    if ln:
        lines.append(shlex.split(ln))
only = set(x for x in args.only.split(",") if x)

t_start = time.perf_counter()
hard_failures = done = 0
skipped = []
for i, a in enumerate(lines):
    label = a[a.index("--label") + 1] if "--label" in a else "run%d" % i
    if only and label not in only:
        continue
    est = 90 if "--compile" in a else 30
    if time.perf_counter() - t_start + est > args.deadline:
        skipped.append(label)
        continue
    if done >= 2 and hard_failures == done:
        print("driver: the first %d runs all failed (not OOM); stopping" % done, flush=True)
        skipped.append(label)
        continue
    cmd = [sys.executable, os.path.join("bench", "realruns", "realrun.py")] + a + ["--out", results]
    e = dict(env, MASTER_PORT=str(int(os.environ.get("DRIVER_PORT_BASE", "29600")) + i))  # lanes differ
    t0 = time.perf_counter()
    log.write("\n===== %s: %s\n" % (label, " ".join(shlex.quote(c) for c in cmd)))
    log.flush()
    timeout = 300 if "--compile" in a else 200
    try:
        r = subprocess.run(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout)
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as te:
        out = (te.stdout or b"").decode() if isinstance(te.stdout, bytes) else (te.stdout or "")
        rc = "timeout"
    log.write(out)
    log.flush()
    dt = time.perf_counter() - t0
    rec = None
    for ln in out.splitlines():
        if ln.startswith("REALRUN "):
            rec = json.loads(ln[8:])
    done += 1
    if rec is None:
        tail = out[-1500:]
        oom = "out of memory" in out.lower()
        rec = {"label": label, "command": " ".join(shlex.quote(c) for c in cmd), "oom": oom,
               "error": "no result line; rc %s; tail: %s" % (rc, tail)}
        with open(results, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")
        if not oom:
            hard_failures += 1
        print("driver: %-28s FAILED rc %s (%.0f s) %s" % (label, rc, dt, tail[-300:].replace("\n", " | ")),
              flush=True)
        continue
    if "error" in rec:
        hard_failures += 1
        print("driver: %-28s ERROR %s (%.0f s)" % (label, rec["error"][:300], dt), flush=True)
    elif rec["oom"]:
        print("driver: %-28s OOM in %s, peak alloc %.1f GiB (%.0f s)" % (
            label, rec.get("oom_phase"), rec["peak_allocated_bytes"] / 2**30, dt), flush=True)
    else:
        print("driver: %-28s step %.4f s [%.4f-%.4f] alloc %.2f res %.2f ctx %.2f GiB (%.0f s)" % (
            label, rec["step_s_median"], rec["step_s_min"], rec["step_s_max"],
            rec["peak_allocated_bytes"] / 2**30, rec["peak_reserved_bytes"] / 2**30,
            rec["nonalloc_end_bytes"] / 2**30, dt), flush=True)
print("driver: %d runs in %.0f s; skipped (deadline): %s" % (
    done, time.perf_counter() - t_start, ", ".join(skipped) or "none"), flush=True)
