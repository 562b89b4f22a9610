#!/usr/bin/env python3
"""mlm14: the per-step fixed cost implied by pairs of published Megatron-Bridge runs that share a
layout (system, model, precision, GPUs, MBS, seq, TP, PP, CP, VP, EP) and differ in the global
batch. step = GBS x seq / (tokens/s/GPU x GPUs); with m = GBS / (DP x MBS) micro-batches per
pipeline, step = F + m x t: the pair gives t (per micro-batch) and F (per step, bubble included).
The same is done with plan estimate's step for the same two rows. Also prints the spread of
tokens/s/GPU across releases for rows of one layout AND one GBS (the release-to-release noise).
Usage: pairs.py PLAN_EXE CSV... (run from the repository root)."""
import collections, csv, itertools, json, shlex, subprocess, sys

plan, paths = sys.argv[1], sys.argv[2:]
rows = [r for p in paths for r in csv.DictReader(open(p)) if r.get("expressible", "yes") == "yes"]
key = lambda r: tuple(r[k] for k in ("system", "model", "precision", "gpus", "mbs", "seq",
                                     "tp", "pp", "cp", "vp", "ep"))

def step_pub(r):
    return float(r["gbs"]) * float(r["seq"]) / (float(r["tokens_per_s_per_gpu"]) * float(r["gpus"]))

def step_plan(r):
    alt = r["unknown_args"].split("|")[0] if r["unknown_args"] else ""
    args = (f"estimate --model {r['model']} --gpus {r['gpus']} --system {r['system']} --tp {r['tp']} "
            f"--pp {r['pp']} --cp {r['cp']} --vpp {r['vp']} --ep {r['ep']} --mbs {r['mbs']} "
            f"--gbs {r['gbs']} --seq {r['seq']} {r['plan_args']} {alt} --format json")
    p = subprocess.run([plan] + shlex.split(args), capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)["time"]["step_s"]

def micro(r):
    dp = int(r["gpus"]) // (int(r["tp"]) * int(r["pp"]) * int(r["cp"]))
    return int(r["gbs"]) // (dp * int(r["mbs"]))

groups = collections.defaultdict(list)
for r in rows:
    groups[key(r)].append(r)

print("pairs of one layout, different GBS: t = per micro-batch (ms), F = per step (s)")
print(f"{'run (small GBS)':40s} {'rel':8s} {'run (large GBS)':40s} {'rel':8s} {'m1':>4s} {'m2':>4s} "
      f"{'t pub':>7s} {'F pub':>6s} {'t plan':>7s} {'F plan':>6s} {'dF/d(eps)':>9s}")
for k, v in groups.items():
    for a, b in itertools.combinations(v, 2):
        if a["gbs"] == b["gbs"]:
            continue
        if int(a["gbs"]) > int(b["gbs"]):
            a, b = b, a
        m1, m2 = micro(a), micro(b)
        s1, s2 = step_pub(a), step_pub(b)
        t = (s2 - s1) / (m2 - m1); F = s1 - m1 * t
        p1, p2 = step_plan(a), step_plan(b)
        if p1 is None or p2 is None:
            tp = Fp = float("nan")
        else:
            tp = (p2 - p1) / (m2 - m1); Fp = p1 - m1 * tp
        # if the large-GBS release ran eps faster per micro-batch, F moves by eps * t * m1 m2/(m2-m1)
        sens = t * m1 * m2 / (m2 - m1)
        print(f"{a['run_id'][:40]:40s} {a['release']:8s} {b['run_id'][:40]:40s} {b['release']:8s} "
              f"{m1:4d} {m2:4d} {1e3*t:7.1f} {F:6.2f} {1e3*tp:7.1f} {Fp:6.2f} {sens:9.2f}")

print()
print("one layout and one GBS across releases: tokens/s/GPU, spread (max/min - 1)")
for k, v in groups.items():
    by_gbs = collections.defaultdict(list)
    for r in v:
        by_gbs[r["gbs"]].append(r)
    for g, rs in by_gbs.items():
        if len(rs) < 2:
            continue
        vals = [float(r["tokens_per_s_per_gpu"]) for r in rs]
        print(f"{rs[0]['system']:12s} {rs[0]['model'][-22:]:22s} {rs[0]['precision']:7s} gbs {g:>5s}: "
              + ", ".join(f"{r['release']} {r['tokens_per_s_per_gpu']}" for r in rs)
              + f"  spread {100 * (max(vals) / min(vals) - 1):.1f}%")
