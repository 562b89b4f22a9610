#!/usr/bin/env python3
"""The tables of bench/results/tpck27_2026-11-29/README.md from this folder's two device calls
(x2: bench/tpck27_run.sh, x2b: bench/tpck27_run2.sh): per model x shape x mode and rank, the steady
blocks' host clock (forward, backward), the step's host issue time, the host probe over the
rounds, plan's host issue floor per block (`plan estimate --ops`, the flags mgpu_fidelity.py
passes), the ckpt - none increments against plan's, the op counts per steady block, and the timed
checkpoint hooks. Standard library only.

Usage (repository root, after building build/): python3 bench/results/tpck27_2026-11-29/analyze.py
"""
import json
import os
import re
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
RC = {"none": "none", "ckpt": "full", "sac": "selective", "ckpt-noes": "full", "ckpt-nodet": "full"}


def steady(xs):
    xs = [x for x in xs[1:-1] if x is not None]
    return statistics.median(xs) * 1e3


def plan_floor(rec, mode, tmp):
    cfg = json.load(open(os.path.join(ROOT, rec["config"])))
    cfg["num_hidden_layers"] = rec["layers"]
    fn = os.path.join(tmp, "m.json")
    json.dump(cfg, open(fn, "w"))
    a = [os.path.join(ROOT, "build/cli/plan"), "estimate", "--model", fn, "--system", "h200",
         "--framework", "torchtitan", "--gpus", "2", "--tp", "2", "--seq", str(rec["seq"]),
         "--mbs", str(rec["mbs"]), "--gbs", str(rec["mbs"]), "--impl", "native",
         "--optimizer-impl", "fused", "--no-cuda-graphs", "--ops", "--recompute", RC[mode]]
    env = dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data"))
    out = subprocess.run(a, capture_output=True, text=True, env=env).stdout
    m = re.search(r"host issue floor: fwd ([0-9.]+) bwd ([0-9.]+)", out)
    j = json.loads(subprocess.run(a[:-3] + ["--recompute", RC[mode], "--format", "json"],
                                  capture_output=True, text=True, env=env).stdout)
    return float(m.group(1)), float(m.group(2)), j["time"]["step_s"]


def main():
    recs = []
    for d in ("x2", "x2b"):
        for ln in open(os.path.join(HERE, d, "results.jsonl")):
            recs.append(json.loads(ln))
    print("## Per steady block (blocks 1..L-2, medians over the timed steps), every rank, ms; "
          "step host issue ms (median); plan's host issue floor per block")
    print("%-44s %4s %7s %7s %7s | %7s %7s | %s" % ("run", "rank", "fwd", "bwd", "issue", "planF",
                                                     "planB", "probe us (rounds)"))
    with tempfile.TemporaryDirectory() as tmp:
        base = {}
        for r in recs:
            mode = r["label"].rsplit("-", 1)[1]
            if r["label"].endswith("noes") or r["label"].endswith("nodet"):
                mode = "-".join(r["label"].rsplit("-", 2)[1:])
            pf, pb, _ = plan_floor(r, mode, tmp)
            for i, x in enumerate(r["host_split_ranks"]):
                hs = x["host_split"]
                iss = statistics.median(x["host_issue_s"]) * 1e3
                pr = [p[i]["dtensor_op_us"] for p in r["host_probe_rounds"]]
                print("%-44s %4d %7.2f %7.2f %7.1f | %7.2f %7.2f | %s" % (
                    r["label"], i, steady(hs["fwd_block_s"]), steady(hs["bwd_block_s"]), iss, pf, pb,
                    " ".join("%.0f" % v for v in pr)))
                key = r["label"][: -len(mode) - 1]
                base.setdefault(key, {}).setdefault(mode, []).append(iss)
            base.setdefault(r["label"][: -len(mode) - 1], {}).setdefault("_plan", {})[mode] = \
                plan_floor(r, mode, tmp)[2]
            base[r["label"][: -len(mode) - 1]]["_layers"] = r["layers"]
        print()
        print("## Step host issue increment over none, per block (ms): measured (rank 0, rank 1) "
              "against plan's step increment / layers")
        for key, d in base.items():
            L = d["_layers"]
            for mode in ("ckpt", "sac", "ckpt-noes", "ckpt-nodet"):
                if mode not in d:
                    continue
                meas = [(a - b) / L for a, b in zip(d[mode], d["none"])]
                pl = (d["_plan"][mode] - d["_plan"]["none"]) * 1e3 / L
                print("%-36s %-10s measured %s  plan %.2f  ratio %s" % (
                    key, mode, " ".join("%.2f" % v for v in meas), pl,
                    " ".join("%.2f" % (v / pl) for v in meas)))
    print()
    print("## aten ops per steady block (counting TorchDispatchMode, one untimed step, rank 0)")
    for fn in sorted(os.listdir(os.path.join(HERE, "x2"))):
        if not fn.startswith("counts-"):
            continue
        c = json.load(open(os.path.join(HERE, "x2", fn)))
        for mode, d in sorted(c.items()):
            n = d["steady_blocks"]
            agg = {}
            for k, v in d["ops"].items():
                reg, kind, op = k.split("|")
                if reg == "other":
                    continue
                agg[reg + "/" + kind] = agg.get(reg + "/" + kind, 0) + v / n
                if "detach" in op:
                    agg[reg + "/" + kind + " detach"] = agg.get(reg + "/" + kind + " detach", 0) + v / n
            print("%-32s %-5s %s" % (fn[7:-5], mode, ", ".join("%s %.0f" % kv for kv in sorted(agg.items()))))
    print()
    print("## torch.utils.checkpoint's hooks and recompute, timed (x2b, 3 ckpt steps per rank, ms per "
          "step of 8 blocks; counts per step)")
    h = json.load(open(os.path.join(HERE, "x2b", "hooks-llama-3.1-8b-L8.json")))
    for i, steps in enumerate(h):
        for s in steps:
            own = s["fwd_pack"] + s["bwd_unpack"] - s["recompute_fn"]
            print("rank %d: issue %.1f  recompute_fn %.1f (%d)  of it recompute pack hooks %.1f (%d)  "
                  "unpack hooks less recompute %.1f (%d)  forward pack hooks %.1f (%d)  -> per block: "
                  "replay %.2f, hooks outside it %.2f" % (
                      i, s["host_issue_ms"], s["recompute_fn"], s["recompute_fn_n"], s["recompute_pack"],
                      s["recompute_pack_n"], s["bwd_unpack"] - s["recompute_fn"], s["bwd_unpack_n"],
                      s["fwd_pack"], s["fwd_pack_n"], s["recompute_fn"] / 8, own / 8))


if __name__ == "__main__":
    main()
