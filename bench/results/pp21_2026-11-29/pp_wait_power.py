#!/usr/bin/env python3
"""pp_wait_power.py PLAN — what a pipelined rank does while it waits, and the GEMM rate it gets.

The GEMM-headroom model (costmodel/gemm_headroom.h) gives GEMMs a higher clock where the rest of
the step draws less than the power cap; by default (--gemm-headroom bubble) the pipeline bubble
is the only such time, counted at gpu.idle_power_w. This script checks that against the two
torch.profiler traces of the H100 pipeline step (bench/results/pp_timeline_2026-11-27, profile/
= rank 0, profile_rank3/ = rank 3; PP 4 1F1B, Llama-3.1-8B cut to 16 layers, 8 micro-batches):
  1. the rank's wait: the profiled step's span less the union of its non-NCCL kernels, and the
     share of it during which an NCCL kernel runs (a receive, or the clip's all-reduce, spinning);
  2. the GEMM rate: plan's GEMM time for the rank's work at the sustained rate (estimate --ops,
     per micro-batch rows x layers x micro-batches, as ew21's rank_accounting.py) over the
     trace's GEMM kernel time (trace_summary.py's class 'gemm');
  3. the rate the headroom formula gives each rank with the wait at gpu.idle_power_w and at
     gpu.comm_power_w, and the wait power the rank's measured rate implies (the formula solved
     for it), from the preset's exponent, burst ratio and cap.
Usage: python3 pp_wait_power.py build/cli/plan [DATA_DIR]   (from the repository root)"""
import gzip
import json
import os
import re
import subprocess
import sys

plan = sys.argv[1]
data = sys.argv[2] if len(sys.argv) > 2 else "data"
sys.argv = sys.argv[:1]
sys.path.insert(0, "bench/realruns")
import mgpu_fidelity as mf  # noqa: E402

B = "bench/results/pp_timeline_2026-11-27/"
rec = next(json.loads(x) for x in open(B + "profile/results.jsonl") if '"pp4-1f1b-8bL16-prof"' in x)
fw, args, note = mf.layout(rec)
tmp = "/tmp/pp21_wait_power"
os.makedirs(tmp, exist_ok=True)
out = subprocess.run([plan, "estimate", "--model", mf.config_for(rec, tmp), "--system", "h100"] + args +
                     ["--ops"], capture_output=True, text=True, env=dict(os.environ, PLAN_DATA_DIR=data)).stdout
sec, gemm = None, {"layer": 0.0, "head": 0.0}
for line in out.splitlines():
    if line.startswith("dense layer"):
        sec = "layer"
    elif line.startswith("loss head"):
        sec = "head"
    m = re.match(r"\s+(\S+)\s+gemm\s+compute\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
    if m and sec:
        gemm[sec] += sum(float(m.group(i)) for i in (2, 3, 4)) * 1e-3
micro, per_stage = rec["microbatches"], rec["layers"] // rec["pp"]
g_sust = {0: gemm["layer"] * per_stage * micro, 3: (gemm["layer"] * per_stage + gemm["head"]) * micro}

sysj = json.load(open(os.path.join(data, "systems", "h100.json")))["gpu"]
cap, beta, burst = sysj["tdp_w"], sysj["gemm_power_exponent"], sysj["gemm_burst_ratio"]
p_idle, p_comm = sysj["idle_power_w"], sysj["comm_power_w"]


def rate(u):
    """root of r^(1/beta) = 1 + u r, capped at the burst ratio (gemm_headroom_rate_comm)"""
    r = 1.0
    for _ in range(200):
        n = (1 + u * r) ** beta
        if n >= burst:
            return burst
        r = n
    return r


def union(iv):
    tot, end = 0.0, None
    for a, b in sorted(iv):
        if end is None or a > end:
            tot += b - a
            end = b
        elif b > end:
            tot += b - end
            end = b
    return tot


def intersect_len(iv, jv):
    """length of (union iv) within (union jv)"""
    def merge(x):
        out = []
        for a, b in sorted(x):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return out
    A, Bm, i, j, tot = merge(iv), merge(jv), 0, 0, 0.0
    while i < len(A) and j < len(Bm):
        lo, hi = max(A[i][0], Bm[j][0]), min(A[i][1], Bm[j][1])
        if hi > lo:
            tot += hi - lo
        if A[i][1] < Bm[j][1]:
            i += 1
        else:
            j += 1
    return tot


print("plan %s, data %s; preset h100: cap %g W, exponent %g, burst %g, idle %g W, comm %g W"
      % (plan, data, cap, beta, burst, p_idle, p_comm))
for rank, f in ((0, "profile/prof-pp4"), (3, "profile_rank3/prof-pp4-rank3")):
    summ = json.load(open(B + f + ".json"))
    tr = json.load(gzip.open(B + f + ".trace.json.gz"))
    ev = tr["traceEvents"] if isinstance(tr, dict) else tr
    ks = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    t0 = min(e["ts"] for e in ks)
    t1 = max(e["ts"] + e["dur"] for e in ks)
    span = (t1 - t0) * 1e-6
    work = [(e["ts"], e["ts"] + e["dur"]) for e in ks if "nccl" not in e["name"].lower()]
    nccl = [(e["ts"], e["ts"] + e["dur"]) for e in ks if "nccl" in e["name"].lower()]
    busy = union(work) * 1e-6
    wait = span - busy
    # the wait covered by NCCL kernels: NCCL time not under any non-NCCL kernel
    nccl_all = union(nccl) * 1e-6
    nccl_in_work = intersect_len(nccl, work) * 1e-6
    nccl_wait = nccl_all - nccl_in_work
    g_meas = summ["class_s"]["gemm"]
    r_meas = g_sust[rank] / g_meas
    u_idle = (1 - p_idle / cap) * wait / g_sust[rank]
    u_comm = (1 - p_comm / cap) * wait / g_sust[rank]
    # implied wait power: r^(1/beta) = 1 + u r  ->  u = (r^(1/beta) - 1) / r
    u_meas = (r_meas ** (1 / beta) - 1) / r_meas
    p_impl = cap * (1 - u_meas * g_sust[rank] / wait)
    print("rank %d: span %.4f s, non-NCCL kernels %.4f s, wait %.4f s of which NCCL kernels run %.4f s (%.0f%%)"
          % (rank, span, busy, wait, nccl_wait, 100 * nccl_wait / wait))
    print("        GEMMs: plan at the sustained rate %.4f s, trace %.4f s: measured rate x%.3f"
          % (g_sust[rank], g_meas, r_meas))
    print("        headroom formula over this rank's own wait: at idle %.0f W x%.3f, at comm %.0f W x%.3f;"
          " burst cap x%.3f; wait power the measured rate implies: %s"
          % (p_idle, rate(u_idle), p_comm, rate(u_comm), burst,
             "%.0f W" % p_impl if r_meas < burst else "none (at or over the burst cap)"))
