#!/usr/bin/env python3
"""bw13: per-row step breakdown of the published Megatron-Bridge dense rows (Blackwell and H100)
as plan estimate prices them: step, compute, exposed TP / PP, bubble, and the error against the
published tokens/s/GPU. Usage: breakdown.py PLAN_EXE CSV [kind]  (run from the repository root).
A band row (unknown_args) is priced at its first alternative."""
import csv, json, shlex, subprocess, sys

plan, path = sys.argv[1], sys.argv[2]
kind = sys.argv[3] if len(sys.argv) > 3 else "dense"
print(f"{'run':44s} {'rel':8s} {'system':12s} {'pub':>6s} {'pred':>6s} {'err':>7s} "
      f"{'step':>7s} {'comp':>7s} {'tp':>6s} {'pp':>6s} {'bub':>6s} {'dp':>6s}")
for r in csv.DictReader(open(path)):
    if r["kind"] != kind or r.get("expressible", "yes") != "yes":
        continue
    alt = r["unknown_args"].split("|")[0] if r["unknown_args"] else ""
    model = r["model"] if "/" not in r["model"] else r["model"]
    args = (f"estimate --model {model} --gpus {r['gpus']} --system {r['system']} --tp {r['tp']} "
            f"--pp {r['pp']} --cp {r['cp']} --vpp {r['vp']} --ep {r['ep']} --mbs {r['mbs']} "
            f"--gbs {r['gbs']} --seq {r['seq']} {r['plan_args']} {alt} --format json")
    p = subprocess.run([plan] + shlex.split(args), capture_output=True, text=True)
    if p.returncode == 2:
        print(r["run_id"], "error", p.stderr.strip()[:200]); continue
    d = json.loads(p.stdout); t = d["time"]
    pred = d["tokens_per_s"] / float(r["gpus"]); pub = float(r["tokens_per_s_per_gpu"])
    print(f"{r['run_id'][:44]:44s} {r['release']:8s} {r['system'][:12]:12s} {pub:6.0f} {pred:6.0f} "
          f"{100*(pred-pub)/pub:+6.1f}% {t['step_s']:7.2f} {t['compute_s']:7.2f} {t['tp_s']:6.2f} "
          f"{t['pp_s']:6.2f} {t['bubble_s']:6.2f} {t['dp_s']:6.2f}")
