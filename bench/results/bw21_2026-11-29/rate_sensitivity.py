#!/usr/bin/env python3
"""bw21: how much of each published dense Blackwell row's predicted step scales with the GPU's
sustained compute rate, and the rate multiplier that would make the row exact.

For every priced dense row of tests/data/published_megatron_bridge_blackwell.csv (a band row at
its first alternative) the row is priced twice: with the system preset as it is, and with a copy
whose gpu.sustained_ref_ratio is x0.9 (every GEMM and attention rate x0.9, nothing else).
e = ln(tput_0.9 / tput) / ln(0.9) is the row's elasticity to the compute rate; the multiplier on
the sustained rate that gives the published figure is m = (published / predicted)^(1/e).
Usage: rate_sensitivity.py PLAN_EXE [CSV]   (from the repository root; no GPU)."""
import csv, json, math, os, shlex, subprocess, sys, tempfile

plan = sys.argv[1]
path = sys.argv[2] if len(sys.argv) > 2 else "tests/data/published_megatron_bridge_blackwell.csv"
kind = os.environ.get("KIND", "dense")
tmp = tempfile.mkdtemp()
scaled = {}

def system_arg(name, k):
    if k == 1.0:
        return name
    key = (name, k)
    if key not in scaled:
        d = json.load(open(f"data/systems/{name}.json"))
        d["gpu"]["sustained_ref_ratio"] *= k
        p = os.path.join(tmp, f"{name}-{k}.json")
        json.dump(d, open(p, "w"))
        scaled[key] = p
    return scaled[key]

def price(r, k):
    alt = r["unknown_args"].split("|")[0] if r["unknown_args"] else ""
    args = (f"estimate --model {r['model']} --gpus {r['gpus']} --system {system_arg(r['system'], k)} "
            f"--tp {r['tp']} --pp {r['pp']} --cp {r['cp']} --vpp {r['vp']} --ep {r['ep']} "
            f"--mbs {r['mbs']} --gbs {r['gbs']} --seq {r['seq']} {r['plan_args']} {alt} --format json")
    p = subprocess.run([plan] + shlex.split(args), capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)["tokens_per_s"] / float(r["gpus"])

print(f"{'run':46s} {'rel':8s} {'system':12s} {'prec':6s} {'pub':>6s} {'pred':>6s} {'err':>7s} {'e':>5s} {'m':>6s}")
for r in csv.DictReader(open(path)):
    if r["kind"] != kind or r.get("expressible", "yes") != "yes":
        continue
    t1, t9 = price(r, 1.0), price(r, 0.9)
    if t1 is None or t9 is None:
        print(r["run_id"], "not priced"); continue
    pub = float(r["tokens_per_s_per_gpu"])
    e = math.log(t9 / t1) / math.log(0.9)
    m = (pub / t1) ** (1 / e) if e > 0 else float("nan")
    print(f"{r['run_id'][:46]:46s} {r['release']:8s} {r['system'][:12]:12s} {r['precision']:6s} "
          f"{pub:6.0f} {t1:6.0f} {100*(t1-pub)/pub:+6.1f}% {e:5.2f} {m:6.3f}")
