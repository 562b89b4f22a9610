#!/usr/bin/env python3
"""Jobs file of `plan measure` for the real multi-GPU runs (meas10: issues 14 and 19).

For every real run of the given results folders whose label is asked for, one line:
  LABEL NGPU NPROC CONFIG ARGS...
CONFIG is the run's config.json cut to its layer count (written into OUTDIR/cfg/), ARGS the
`plan estimate` flags bench/realruns/mgpu_fidelity.py prices that row with (its --format json
`plan_args`, so plan measure runs the layout the fidelity table estimates) and --system of the GPU
the real run used. NPROC: processes under mpirun (one per GPU, as torchrun starts them: the
backend paces the host per process, and a process driving several pipeline stages is not paced).
Standard library only.

Usage: python3 bench/meas10_jobs.py OUTDIR LABEL... [--dirs DIR ...]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))

ap = argparse.ArgumentParser()
ap.add_argument("outdir")
ap.add_argument("labels", nargs="+")
ap.add_argument("--dirs", nargs="+", required=True)
ap.add_argument("--plan", default=os.path.join(ROOT, "build", "cli", "plan"))
a = ap.parse_args()

fid = json.loads(subprocess.run(
    [sys.executable, os.path.join(ROOT, "bench", "realruns", "mgpu_fidelity.py"), "--format", "json",
     "--plan", a.plan] + a.dirs, capture_output=True, text=True, check=True).stdout)
args_of = {r["run"]: r for r in fid if r.get("plan_args")}
recs = {}
for d in a.dirs:
    for ln in open(os.path.join(d, "results.jsonl")):
        if ln.strip():
            r = json.loads(ln)
            recs[r["label"]] = r
os.makedirs(os.path.join(a.outdir, "cfg"), exist_ok=True)
for label in a.labels:
    r, f = recs[label], args_of[label]
    cfg = json.load(open(os.path.join(ROOT, r["config"])))
    name = os.path.splitext(os.path.basename(r["config"]))[0]
    if r.get("layers") and r["layers"] != cfg["num_hidden_layers"]:
        cfg["num_hidden_layers"] = r["layers"]
        if "max_window_layers" in cfg:
            cfg["max_window_layers"] = min(cfg["max_window_layers"], r["layers"])
        name += "-L%d" % r["layers"]
    if "untied" in (f.get("note") or "") or "two stages" in (f.get("note") or ""):
        cfg["tie_word_embeddings"] = False
        name += "-untied"
    out = os.path.join(a.outdir, "cfg", name + ".json")
    with open(out, "w") as fh:
        json.dump(cfg, fh)
    ws = r.get("world_size", 1)
    print(label, ws, ws, "cfg/%s.json" % name, "--system", f["gpu"], f["plan_args"])
