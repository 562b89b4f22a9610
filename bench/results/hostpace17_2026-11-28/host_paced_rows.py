#!/usr/bin/env python3
"""The host-paced share (plan estimate's time.host_paced_fraction, costmodel/host_paced.h) of each
real multi-GPU run that bench/realruns/mgpu_fidelity.py prices, beside the row's step error, the
GPU-only step and the step on a host 1.5x slower (time.slow_host_step_s) with its error against
the real step.

mgpu_fidelity.py runs `plan estimate --format json` once or twice a row; this runs it with --plan
pointing at a wrapper that keeps each estimate's JSON, and joins them to the rows on the predicted
step (the one that mgpu_fidelity.py kept). No GPU; standard library only.
Usage (repository root, after building build/): python3 bench/results/hostpace17_2026-11-28/
host_paced_rows.py DIR ... > OUT.txt   (--single [results.jsonl ...]: the one-GPU table,
bench/realruns/fidelity.py, instead)
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def main():
    dirs = sys.argv[1:]
    single = "--single" in dirs
    dirs = [d for d in dirs if d != "--single"]
    script = "fidelity.py" if single else "mgpu_fidelity.py"
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "estimates.jsonl")
        wrap = os.path.join(tmp, "plan")
        with open(wrap, "w") as f:
            f.write("#!/bin/sh\nout=$(%s \"$@\")\nrc=$?\nprintf '%%s\\n' \"$out\"\n"
                    "printf '%%s\\n' \"$out\" | tr -d '\\n' >> %s\necho >> %s\nexit $rc\n"
                    % (os.path.join(ROOT, "build", "cli", "plan"), log, log))
        os.chmod(wrap, 0o755)
        res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "realruns", script)]
                             + dirs + ["--plan", wrap, "--format", "json"],
                             capture_output=True, text=True, cwd=ROOT, check=True)
        rows = json.loads(res.stdout)
        by_step = {}
        for line in open(log):
            line = line.strip()
            if line.startswith("{"):
                j = json.loads(line)
                if j.get("time", {}).get("step_s") is not None:
                    by_step[round(j["time"]["step_s"], 9)] = j["time"]
    print("%-32s %-5s %-4s %-10s %8s %8s %8s %7s %9s %9s %8s" % (
        "run", "gpu", "par", "fw", "real_s", "pred_s", "err", "host%", "gpu_only", "slow_1.5x",
        "err_1.5x"))
    for r in rows:
        if r.get("status") != "ok" or r.get("pred_step_s") is None:
            continue
        if not (r.get("real_step_s") or r.get("meas_step_s")):
            continue
        if single:  # fidelity.py's names for the same figures
            r = dict(r, real_step_s=r["meas_step_s"], par="1gpu", fw=r.get("impl") or "",
                     gpu=r.get("gpu") or "")
        t = by_step.get(round(r["pred_step_s"], 9))
        hp = "%6.0f%%" % (100 * t["host_paced_fraction"]) if t else "      ?"
        go = "%9.4f" % t["gpu_only_step_s"] if t else "        ?"
        sl = "%9.4f %+7.1f%%" % (t["slow_host_step_s"],
                                 100 * (t["slow_host_step_s"] / r["real_step_s"] - 1)) if t else ""
        print("%-32s %-5s %-4s %-10s %8.4f %8.4f %+7.1f%% %s %s %s" % (
            r["run"][:32], r["gpu"], r["par"], r["fw"], r["real_step_s"], r["pred_step_s"],
            100 * r["step_err"], hp, go, sl))


if __name__ == "__main__":
    main()
