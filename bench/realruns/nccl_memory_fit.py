#!/usr/bin/env python3
"""NCCL memory per GPU in the multi-GPU real runs (bench/results/mgpu_2026-11-27/*/jobs/results.jsonl):
the numbers behind the framework.nccl_world_communicator_bytes, nccl_group_bytes and
nccl_p2p_peer_bytes of data/systems/h100.json and h200.json (costmodel/nccl_memory.h).

Per run: world = context_after_nccl_bytes - cuda_context_bytes (the world communicator, after one
all_reduce over every rank); extra = nonalloc_end_bytes - context_after_nccl_bytes - the library
workspaces (library_workspace_bytes, 157,286,400 B, measured on one GPU) = what the run's further
process groups and point-to-point connections hold. Each run's groups and peers, from the scripts
(bench/realruns/parallel_run.py): tp/pp/ep build a 2-D DeviceMesh, whose dimensions get their own
communicators (tp: the tp group, and the dp group when dp > 1; pp: the pp group; ep: the ep group);
cp and FSDP2 alone use a 1-D mesh over every rank (the default group); peers: pipelining sends to
the previous and next stage (1 peer at pp 2 or on an end stage of 1F1B, 2 otherwise; interleaved
wraps the last stage to the first), all-to-all (EP dispatch, CP's alltoall rotation) to every
other rank of its group. Then, with per-rank nonalloc maxima:
  P (per peer)  = mean of (pp4 middle - pp2) and (ep4 - ep2) / 2 and the cp2 run (1 peer, no group)
  G (per group) = mean over the tp, tp x dp, pp2 and ep2 runs of (extra - peers x P) / groups
Usage: python3 bench/realruns/nccl_memory_fit.py (standard library only)."""
import glob
import json
import os
import statistics

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WORKSPACE = 157286400
runs = []
for fn in sorted(glob.glob(os.path.join(ROOT, "bench/results/mgpu_2026-11-27/*/jobs/results.jsonl"))):
    for ln in open(fn):
        r = json.loads(ln)
        if r.get("world_size", 1) < 2 or "nonalloc_end_bytes" not in r:
            continue
        runs.append(r)


def groups_peers(r):
    tp, pp, ep, cp, dp = (r.get(k, 1) or 1 for k in ("tp", "pp", "ep", "cp", "dp"))
    par = r.get("parallelism") or "fsdp"
    if par == "tp":
        return 1 + (dp > 1), 0
    if par == "pp":
        peers = 1 if pp == 2 else 2  # the rank with the largest nonalloc: a middle or wrapping one
        return 1, peers
    if par == "ep":
        return 1, ep - 1
    if par == "cp":
        return 0, cp - 1
    return 0, 0


world = statistics.median(r["context_after_nccl_bytes"] - r["cuda_context_bytes"] for r in runs)
extra = {}
for r in runs:
    g, p = groups_peers(r)
    e = r["nonalloc_end_bytes"] - r["context_after_nccl_bytes"] - WORKSPACE
    extra.setdefault((r.get("parallelism") or "fsdp", r["world_size"], r.get("dp", 1), g, p), []).append(e)
ex = {k: statistics.median(v) for k, v in extra.items()}
for k, v in sorted(ex.items()):
    print("%-5s ws%d dp%s groups %d peers %d  extra %.3f GB" % (k[0], k[1], k[2], k[3], k[4], v / 1e9))
get = lambda par, ws: [v for k, v in ex.items() if k[0] == par and k[1] == ws][0]  # noqa: E731
p_pp = get("pp", 4) - get("pp", 2)
p_ep = (get("ep", 4) - get("ep", 2)) / 2
p_cp = get("cp", 2)
P = statistics.mean([p_pp, p_ep, p_cp])
gs = []
for k, v in ex.items():
    par, ws, dp, g, p = k
    if g and (par in ("tp",) or (par in ("pp", "ep") and ws == 2)):
        gs.append((v - p * P) / g)
G = statistics.mean(gs)
print("world communicator (median over %d runs): %.0f B" % (len(runs), world))
print("P per peer: pp %.0f, ep %.0f, cp %.0f -> %.0f B" % (p_pp, p_ep, p_cp, P))
print("G per group: %s -> %.0f B" % (", ".join("%.0f" % x for x in gs), G))
for k, v in sorted(ex.items()):
    print("  check %-5s ws%d: model %.3f GB, measured %.3f GB" % (k[0], k[1], (k[3] * G + k[4] * P) / 1e9, v / 1e9))

# One further one-rank group (framework.nccl_one_rank_group_bytes; issue 14, mem26): parallel_run.py's
# TP mesh went from (dp, tp) to (rep, dp, tp) in 6796bf1 (records since carry dp_replicate); at
# rep 1 that is one more size-1 dimension, an NCCL communicator split for it. The same layouts'
# median nonalloc_end - context_after_nccl before and after, over every multi-GPU folder of the
# fidelity tables (later runs: bench/results/ho1*, mgpu8, mgpu9, tpck14, sactp16, ...).
later = {}
for fn in sorted(glob.glob(os.path.join(ROOT, "bench/results/*/*/jobs/results.jsonl")) +
                 glob.glob(os.path.join(ROOT, "bench/results/*/*/results.jsonl")) +
                 glob.glob(os.path.join(ROOT, "bench/results/*/*/*/jobs/results.jsonl")) +
                 glob.glob(os.path.join(ROOT, "bench/realruns/results/*/results.jsonl"))):
    if "/ho26" in fn:  # held out
        continue
    for ln in open(fn):
        if not ln.strip():
            continue
        r = json.loads(ln)
        if (r.get("parallelism") != "tp" or r.get("async_tp") or "nonalloc_end_bytes" not in r or
                r.get("world_size", 1) < 2 or r.get("error") or r.get("oom") or
                "parallel_run" not in r.get("command", "")):
            continue
        era = "rep" if r.get("dp_replicate") is not None else "dp,tp"
        key = (r["tp"], r.get("dp", 1), era, r["label"], r["date"])
        later[key] = r["nonalloc_end_bytes"] - r["context_after_nccl_bytes"]
med = {}
for (tp, dp, era, _, _), v in later.items():
    med.setdefault((tp, dp, era), []).append(v)
for (tp, dp) in sorted({(k[0], k[1]) for k in med}):
    a, b = med.get((tp, dp, "dp,tp")), med.get((tp, dp, "rep"))
    if a and b:
        print("one-rank group: tp %d dp %d: (dp, tp) mesh %.0f B (n=%d), (rep, dp, tp) %.0f B (n=%d): +%.0f B" % (
            tp, dp, statistics.median(a), len(a), statistics.median(b), len(b),
            statistics.median(b) - statistics.median(a)))
