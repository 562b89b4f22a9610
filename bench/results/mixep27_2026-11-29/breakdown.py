#!/usr/bin/env python3
"""mixep27: plan's step terms for the EP 2 grouped-expert rows ho27b-ep2-grp-mixtralL4-s4k-b1,
ho11-ep2-grp-mixtralL2-s4k (the same command at 2 layers) and ho27-ep2-grp-q15moeL6-s4k-b2,
beside what their records measured (step, host issue time up to the clip norm's .item()).
Sensitivity only, not a model: the same estimates with FSDP2's chunk_cat host rates set to 0
(a copy of data/systems/h200.json), to show how much of each estimate is the host pacing of the
experts' reduce-scatter copy-in. Run from the repository root after building build/.
Usage: python3 bench/results/mixep27_2026-11-29/breakdown.py
"""
import json, os, re, subprocess, sys, tempfile
ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
from native_config import native_config  # noqa: E402

PLAN = os.path.join(ROOT, "build", "cli", "plan")
ROWS = [  # (label, results.jsonl, plan_args as mgpu_fidelity.py --format json gives them)
    ("ho27b-ep2-grp-mixtralL4-s4k-b1", "bench/results/ho27b_2026-11-29/x2all/results.jsonl"),
    ("ho11-ep2-grp-mixtralL2-s4k", "bench/results/ho11_2026-11-28/h200x2/jobs/results.jsonl"),
    ("ho27-ep2-grp-q15moeL6-s4k-b2", "bench/results/ho27_2026-11-29/x2all/results.jsonl"),
]
ARGS = ("--framework torchtitan --gpus 2 --seq {seq} --mbs {mbs} --gbs {gbs} --impl native --ep 2 "
        "--optimizer-impl fused --no-cuda-graphs --hold-logits --moe-pad-index-copy "
        "--moe-gather-routing")
KEYS = ["step_s", "fwd_pass_s", "bwd_pass_s", "host_paced_bwd_s", "gpu_only_step_s", "dp_s",
        "ep_s", "optimizer_s"]

tmp = tempfile.mkdtemp()
sysfile = open(os.path.join(ROOT, "data", "systems", "h200.json")).read()
cc0 = re.sub(r'"chunk_cat_block(_large)?_s": [0-9.e-]+', lambda m: m.group(0).split(":")[0] + ": 0",
             sysfile)
cc0_path = os.path.join(tmp, "h200_chunk_cat0.json")
open(cc0_path, "w").write(cc0)
for label, path in ROWS:
    rec = next(r for r in map(json.loads, open(path)) if r["label"] == label)
    cfg = native_config(json.load(open(os.path.join(ROOT, rec["config"]))))
    cfg["num_hidden_layers"] = rec["layers"]
    mpath = os.path.join(tmp, label + ".json")
    json.dump(cfg, open(mpath, "w"))
    a = ARGS.format(seq=rec["seq"], mbs=rec["mbs"], gbs=rec["mbs"] * 2).split()
    hosts = sorted(rec["host_issue_times_rank0_s"])
    print("%s: measured step %.4f s, host issue to the clip norm (median) %.4f s, tail %.4f s" % (
        label, rec["step_s_median"], hosts[len(hosts) // 2],
        rec["step_s_median"] - hosts[len(hosts) // 2]))
    for name, system in (("h200", "h200"), ("chunk_cat 0", cc0_path)):
        out = subprocess.run([PLAN, "estimate", "--model", mpath, "--system", system, "--format",
                              "json"] + a, capture_output=True, text=True, check=True).stdout
        t = json.loads(out)["time"]
        print("  plan %-12s " % name + " ".join("%s %.4f" % (k, t[k]) for k in KEYS) +
              "  err %+.1f%%" % (100 * (t["step_s"] / rec["step_s_median"] - 1)))
