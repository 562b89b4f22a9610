#!/usr/bin/env python3
"""Diagnostic, not a model change: the TP-2 rows of this folder and of ho13 priced with every host
time figure of the h200 preset (host.*_s except pcie/memory) multiplied by k, to ask whether one
per-machine host-speed factor explains a machine's rows together. Why: the same job ran 0.197 s on
one 2 x H200 machine and 0.284-0.305 s on two others (README). Standard library only.
Usage (repository root, after building build/): python3 bench/results/tpck14_2026-11-28/host_scale_diag.py
"""
import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
KS = (1.0, 1.2, 1.4, 1.5, 1.6)
SRC = [("ho13 host", os.path.join(ROOT, "bench/results/ho13_2026-11-28/two_h200/jobs/results.jsonl")),
       ("host A (call 1)", os.path.join(HERE, "call1_h200x2/results.jsonl")),
       ("host B (call 2)", os.path.join(HERE, "call2_h200x2/results.jsonl"))]


def price(rec, system, tmp):
    cfg = json.load(open(os.path.join(ROOT, rec["config"])))
    cfg["num_hidden_layers"] = rec["layers"]
    fn = os.path.join(tmp, "m.json")
    json.dump(cfg, open(fn, "w"))
    a = [os.path.join(ROOT, "build/cli/plan"), "estimate", "--model", fn, "--system", system,
         "--framework", "torchtitan", "--gpus", "2", "--tp", "2", "--seq", str(rec["seq"]),
         "--mbs", str(rec["mbs"]), "--gbs", str(rec["mbs"]), "--impl", "native",
         "--optimizer-impl", "fused", "--no-cuda-graphs", "--format", "json"]
    if rec.get("grad_ckpt"):
        a += ["--recompute", "full"]
    out = subprocess.run(a, capture_output=True, text=True,
                         env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data"))).stdout
    return json.loads(out)["time"]["step_s"]


with tempfile.TemporaryDirectory() as tmp:
    base = json.load(open(os.path.join(ROOT, "data/systems/h200.json")))
    systems = {}
    for k in KS:
        s = json.loads(json.dumps(base))
        for key, v in s["host"].items():
            if key.endswith("_s") and isinstance(v, (int, float)):
                s["host"][key] = v * k
        s["name"] = "h200-host-x%.1f" % k
        systems[k] = os.path.join(tmp, "h200x%.1f.json" % k)
        json.dump(s, open(systems[k], "w"))
    print("%-16s %-32s %7s | %s" % ("machine", "run", "real_s", " ".join("err@x%.1f" % k for k in KS)))
    for mach, fn in SRC:
        for ln in open(fn):
            r = json.loads(ln)
            if r.get("parallelism") != "tp":
                continue
            errs = [(price(r, systems[k], tmp) - r["step_s_median"]) / r["step_s_median"] for k in KS]
            print("%-16s %-32s %7.4f | %s" % (mach, r["label"], r["step_s_median"],
                                             " ".join("%+8.1f%%" % (100 * e) for e in errs)))
