#!/usr/bin/env python3
"""The `plan measure` command of a representative set of single-GPU H200 real runs (issue 14, meas22).

As meas12's make_runs.py (bench/results/meas12_2026-11-28): each command is
bench/realruns/fidelity.py's `plan estimate` command for the run (its layout_args and config_for,
imported), with `measure` for `estimate`, --steps N and --format json. The runs: every single-GPU
H200 run of bench/realruns/results/h200-2026-11-24.jsonl and of the earlier held-out folders
ho19..ho21 (ordinary data this session; ho22 is not read), less those in SKIP (below, with why).
Writes DEST/configs/*.json and DEST/runs.tsv (label TAB arguments; config paths as the GPU
machine sees them, PREFIX/configs/...), cheapest first so that a driver's time limit cuts the
long ones, or in the order --only gives (a priority list: the device budget cuts its tail).
Standard library only.

Usage: python3 make_runs.py DEST [--prefix .carry/meas22] [--plan build-bk/cli/plan] [--steps 2]
       [--only LABEL,LABEL...]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
dest = sys.argv[1]


def opt(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


plan = opt("--plan", os.path.join(ROOT, "build-bk", "cli", "plan"))
prefix = opt("--prefix", dest)
steps = opt("--steps", "2")
only = [x for x in opt("--only", "").split(",") if x]  # in this order (a priority list)
sys.argv = ["fidelity.py", "--plan", plan]
sys.path.insert(0, os.path.join(ROOT, "bench", "realruns"))
import fidelity  # noqa: E402  (runs `plan estimate --help` once to see its flags)

FILES = [os.path.join(ROOT, p) for p in (
    "bench/realruns/results/h200-2026-11-24.jsonl",
    "bench/results/ho19_2026-11-29/results.jsonl",
    "bench/results/ho20_2026-11-29/results.jsonl",
    "bench/results/ho21_2026-11-29/results.jsonl")]
# Left out to stay in the device budget (240 s): the out-of-memory runs (meas12 showed plan
# measure refuses all six of h200-2026-11-24; the estimate's feasibility covers them), the
# fp8 runs (h200-2026-11-29-fp8.jsonl, ho20-f8-*: another precision path), and the longest
# steps (>1.2 s: each costs ~10 step times on the device).
MAX_STEP_S = 1.2


def main():
    cfgdir = os.path.join(dest, "configs")
    os.makedirs(cfgdir, exist_ok=True)
    rel = os.path.join(prefix, "configs")
    rows = []
    for fn in FILES:
        for ln in open(fn):
            if not ln.strip():
                continue
            r = json.loads(ln)
            if "error" in r or r.get("world_size", 1) != 1 or "H200" not in r["gpu"]:
                continue
            if r.get("oom") or r.get("precision") == "fp8":
                continue
            if only and r["label"] not in only:
                continue
            if not only and r["step_s_median"] > MAX_STEP_S:
                continue
            path = fidelity.config_for(r, cfgdir)
            a = fidelity.layout_args(r, path, "h200")
            assert a[0] == "estimate"
            a = ["measure"] + a[1:] + ["--steps", steps]
            a = [os.path.join(rel, os.path.basename(x)) if x == path else x for x in a]
            key = only.index(r["label"]) if only else r["step_s_median"]
            rows.append((key, r["label"], " ".join(a), r["step_s_median"]))
    rows.sort()
    with open(os.path.join(dest, "runs.tsv"), "w") as f:
        f.write("".join("%s\t%s\n" % (lab, a) for _, lab, a, _ in rows))
    print("%d runs, %.1f s of real steps -> %s" % (len(rows), sum(c for _, _, _, c in rows),
                                                   os.path.join(dest, "runs.tsv")))


main()
