"""Runs issue 24's multi-GPU jobs on one machine: phases one after another, and inside a phase one
lane per disjoint GPU set, the lanes at the same time (never two timed jobs on one GPU).

Jobs file: `phase NAME` starts a phase; every other line (# comments) is
    LABEL  GPUS  TIMEOUT_S  COMMAND...
GPUS is a CUDA_VISIBLE_DEVICES list ("0,1"); jobs with the same GPUS form a lane and run in file
order. In COMMAND, {port} becomes a free rendezvous port for this job, {out} the output folder,
{n} the number of GPUs. Each job's output goes to OUT/logs/LABEL.log; a realrun.py /
parallel_run.py line ("REALRUN {...}") is summarized on stdout. A job that would start after
--deadline seconds is skipped and listed. The environment keeps NVLink multicast off
(NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1).

Usage: python3 bench/realruns/mgpu_driver.py jobs.txt --out DIR --deadline 500
"""
import argparse
import json
import os
import signal
import subprocess
import threading
import time

p = argparse.ArgumentParser()
p.add_argument("jobs")
p.add_argument("--out", required=True)
p.add_argument("--deadline", type=float, default=500.0)
p.add_argument("--only-phase", default="")
args = p.parse_args()
os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
ENV = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
           NVSHMEM_DISABLE_NVLS="1", PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false",
           HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

phases = []
for ln in open(args.jobs):
    ln = ln.split("#", 1)[0].strip()
    if not ln:
        continue
    if ln.startswith("phase "):
        phases.append((ln.split(None, 1)[1], []))
        continue
    label, gpus, tmo, cmd = ln.split(None, 3)
    if not phases:
        phases.append(("main", []))
    phases[-1][1].append((label, gpus, float(tmo), cmd))

T0 = time.perf_counter()
lock = threading.Lock()
port = [29700]
skipped = []


def say(s):
    with lock:
        print("[%6.1f s] %s" % (time.perf_counter() - T0, s), flush=True)


def run_job(label, gpus, tmo, cmd):
    with lock:
        port[0] += 1
        pt = port[0]
    cmd = cmd.replace("{port}", str(pt)).replace("{out}", args.out).replace(
        "{n}", str(len(gpus.split(","))))
    left = args.deadline - (time.perf_counter() - T0)
    if left < 15:
        with lock:
            skipped.append(label)
        say("%-26s SKIPPED (deadline)" % label)
        return
    env = dict(ENV, CUDA_VISIBLE_DEVICES=gpus)
    t0 = time.perf_counter()
    logf = os.path.join(args.out, "logs", label + ".log")
    with open(logf, "w") as lf:
        lf.write("# %s\n# CUDA_VISIBLE_DEVICES=%s\n" % (cmd, gpus))
        lf.flush()
        pr = subprocess.Popen(cmd, shell=True, env=env, stdout=lf, stderr=subprocess.STDOUT,
                              start_new_session=True)
        try:
            rc = pr.wait(timeout=min(tmo, max(left, 15)))
        except subprocess.TimeoutExpired:  # the whole job (torchrun and its ranks) goes
            rc = "timeout"
            try:
                os.killpg(pr.pid, signal.SIGKILL)
            except OSError:
                pass
            pr.wait()
    dt = time.perf_counter() - t0
    rec = None
    text = open(logf, errors="replace").read()
    for ln in text.splitlines():
        if ln.startswith("REALRUN "):
            try:
                r = json.loads(ln[8:])
            except ValueError:
                continue
            if rec is None or r.get("error") or r.get("oom"):
                rec = r
    if rec is None:
        say("%-26s rc %s (%.0f s) %s" % (label, rc, dt, " | ".join(text.strip().splitlines()[-3:])[-400:]))
    elif rec.get("error"):
        say("%-26s ERROR (%.0f s) %s" % (label, dt, rec["error"][:400]))
    elif rec.get("oom"):
        say("%-26s OOM in %s (%.0f s)" % (label, rec.get("oom_phase"), dt))
    else:
        say("%-26s step %.4f s [%.4f-%.4f] alloc %.2f res %.2f GiB (max over ranks) (%.0f s)" % (
            label, rec["step_s_median"], rec["step_s_min"], rec["step_s_max"],
            rec["peak_allocated_bytes"] / 2**30, rec["peak_reserved_bytes"] / 2**30, dt))


for name, jobs in phases:
    if args.only_phase and name not in args.only_phase.split(","):
        continue
    lanes = {}
    for j in jobs:
        lanes.setdefault(j[1], []).append(j)
    say("phase %s: %d jobs in %d lanes (%s)" % (name, len(jobs), len(lanes), " ".join(lanes)))

    def lane(js):
        for j in js:
            run_job(*j)

    th = [threading.Thread(target=lane, args=(js,)) for js in lanes.values()]
    for t in th:
        t.start()
    for t in th:
        t.join()
say("done; skipped: %s" % (", ".join(skipped) or "none"))
