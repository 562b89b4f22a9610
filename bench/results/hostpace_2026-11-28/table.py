#!/usr/bin/env python3
"""Issue 14's backend table: `plan measure` of each single-GPU real run against the real step.

Reads DIR/<label>.json (plan measure --format json, hostpace_run.sh) and the real runs
(bench/realruns/results/*.jsonl). For each run: the real step (median of its timed steps) and
peak memory (peak allocated + what the process held outside the allocator: fidelity.py's
measured memory), plan measure's step issued as fast as CUDA takes it (the GPU alone, before
this change: measured.step_unpaced_s) and at the host's pace (measured.step_s when
host_paced), its peak memory (total - free after the steps), and the estimate's step and
memory; error = (measure - real) / real. DIR/base-<label>.json: the planner before the change
(its step is the unpaced one). Standard library only.

Usage: python3 table.py DIR [--markdown]
"""
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
GIB = float(1 << 30)
d = sys.argv[1]
md = "--markdown" in sys.argv

real = {}
for fn in glob.glob(os.path.join(ROOT, "bench", "realruns", "results", "h100*.jsonl")):
    for ln in open(fn):
        if ln.strip():
            r = json.loads(ln)
            real[r["label"]] = r

order = [ln.split("\t")[0] for ln in open(os.path.join(d, "runs.tsv")) if ln.strip()] \
    if os.path.exists(os.path.join(d, "runs.tsv")) else []
rows = []
for lab in order:
    fn = os.path.join(d, lab + ".json")
    r = real[lab]
    row = {"run": lab, "impl": r.get("impl", "hf") + ("+compile" if r.get("compile") else ""),
           "ckpt": bool(r.get("grad_ckpt")), "real_s": r["step_s_median"],
           "real_mem": r["measured_peak_bytes"]}
    try:
        j = json.load(open(fn))
    except (OSError, ValueError):
        err = open(os.path.join(d, lab + ".err")).read().strip().splitlines() if os.path.exists(
            os.path.join(d, lab + ".err")) else ["not run"]
        row["status"] = (err[-1] if err else "no output")[:150]
        rows.append(row)
        continue
    me = j["measured"]
    row["status"] = "ok"
    row["paced"] = j.get("host_paced", False)
    row["unpaced_s"] = me.get("step_unpaced_s", me["step_s"])
    row["paced_s"] = me["step_s"] if row["paced"] else None
    row["meas_mem"] = me["peak_memory_bytes"]
    row["est_s"] = j["predicted"]["step_s"]
    row["est_mem"] = j["predicted"]["memory_bytes"]
    row["spread"] = me.get("step_spread")
    b = os.path.join(d, "base-" + lab + ".json")
    if os.path.exists(b):
        try:
            row["base_s"] = json.load(open(b))["measured"]["step_s"]
        except ValueError:
            pass
    rows.append(row)


def e(a, b):
    return None if a is None or not b else (a - b) / b


def pct(x):
    return "" if x is None else "%+.1f%%" % (100 * x)


cols = ["run", "impl", "ckpt", "real s", "unpaced s", "err", "paced s", "err", "estimate s", "err",
        "real GiB", "measure GiB", "err", "estimate GiB", "err"]
out = []
for w in rows:
    if w["status"] != "ok":
        out.append([w["run"], w["impl"], "yes" if w["ckpt"] else "", "%.4f" % w["real_s"], "", "",
                    "", "", "", "", "%.1f" % (w["real_mem"] / GIB), w["status"], "", "", ""])
        continue
    w["err_unpaced"] = e(w["unpaced_s"], w["real_s"])
    w["err_paced"] = e(w["paced_s"], w["real_s"])
    w["err_est"] = e(w["est_s"], w["real_s"])
    w["err_mem"] = e(w["meas_mem"], w["real_mem"])
    w["err_est_mem"] = e(w["est_mem"], w["real_mem"])
    out.append([w["run"], w["impl"], "yes" if w["ckpt"] else "", "%.4f" % w["real_s"],
                "%.4f" % w["unpaced_s"], pct(w["err_unpaced"]),
                "%.4f" % w["paced_s"] if w["paced_s"] else "not paced", pct(w["err_paced"]),
                "%.4f" % w["est_s"], pct(w["err_est"]), "%.1f" % (w["real_mem"] / GIB),
                "%.1f" % (w["meas_mem"] / GIB), pct(w["err_mem"]), "%.1f" % (w["est_mem"] / GIB),
                pct(w["err_est_mem"])])
if md:
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for o in out:
        print("| " + " | ".join(o) + " |")
else:
    wid = [max(len(str(c)), *(len(str(o[i])) for o in out)) if out else len(c)
           for i, c in enumerate(cols)]
    print("  ".join(c.ljust(wid[i]) for i, c in enumerate(cols)))
    for o in out:
        print("  ".join(str(x).ljust(wid[i]) for i, x in enumerate(o)))
ok = [w for w in rows if w["status"] == "ok"]
print()


def summ(name, xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return
    a = [abs(x) for x in xs]
    print("%-34s n %2d  median |err| %5.1f%%  max |err| %5.1f%%  median signed %+5.1f%%  "
          "within 5%%: %d" % (name, len(xs), 100 * statistics.median(a), 100 * max(a),
                             100 * statistics.median(xs), sum(1 for x in a if x <= 0.05)))


summ("step, plan measure unpaced (before)", [w["err_unpaced"] for w in ok])
summ("step, plan measure paced (after)", [w["err_paced"] if w["paced_s"] else w["err_unpaced"]
                                         for w in ok])
summ("step, estimate", [w["err_est"] for w in ok])
summ("memory, plan measure", [w["err_mem"] for w in ok])
summ("memory, estimate", [w["err_est_mem"] for w in ok])
for w in ok:
    if "base_s" in w:
        print("cross-check %-22s planner before the change %.4f s, unpaced now %.4f s (%+.1f%%)" % (
            w["run"], w["base_s"], w["unpaced_s"], 100 * e(w["unpaced_s"], w["base_s"])))
