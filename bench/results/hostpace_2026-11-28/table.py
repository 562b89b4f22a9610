#!/usr/bin/env python3
"""Issue 14's backend table: `plan measure` of each single-GPU real run against the real step.

Reads BEFORE/<label>.json and AFTER/<label>.json (plan measure --format json, hostpace_run.sh;
BEFORE: call1, the backend as it was plus host pacing; AFTER: call2, with FSDP2's copies at
world size 1 and the optimizer's bytes too) and the real runs (bench/realruns/results/
h100*.jsonl). Per run: the real step (median of its timed steps) and peak memory (peak
allocated + what the process held outside the allocator: fidelity.py's measured memory);
plan measure's step issued as fast as CUDA takes it (measured.step_unpaced_s: BEFORE's is the
backend before this work, checked against the planner before the change, base-*.json) and at the
host's pace (measured.step_s when host_paced); its peak memory (total - free after the steps);
the estimate's step and memory. error = (measure - real) / real. Standard library only.

Usage: python3 table.py BEFORE AFTER [--markdown]
"""
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
GIB = float(1 << 30)
dirs = [a for a in sys.argv[1:] if not a.startswith("--")]
md = "--markdown" in sys.argv

real = {}
for fn in glob.glob(os.path.join(ROOT, "bench", "realruns", "results", "h100*.jsonl")):
    for ln in open(fn):
        if ln.strip():
            r = json.loads(ln)
            real[r["label"]] = r


def load(d, lab):
    """(unpaced s, paced s or None, peak bytes, estimate s, estimate bytes) or the error line."""
    try:
        j = json.load(open(os.path.join(d, lab + ".json")))
    except (OSError, ValueError):
        fn = os.path.join(d, lab + ".err")
        err = open(fn).read().strip().splitlines() if os.path.exists(fn) else []
        msg = err[-1] if err else "not run (time limit)"
        if "does not fit" in msg:
            return "does not fit (" + msg.rsplit(": ", 1)[-1] + ")"
        return msg.replace("plan: error: ", "")[:60]
    me = j["measured"]
    paced = me["step_s"] if j.get("host_paced") else None
    return (me.get("step_unpaced_s", me["step_s"]), paced, me["peak_memory_bytes"],
            j["predicted"]["step_s"], j["predicted"]["memory_bytes"])


def e(a, b):
    return None if a is None or not b else (a - b) / b


def pct(x):
    return "" if x is None else "%+.1f%%" % (100 * x)


order = [ln.split("\t")[0] for ln in open(os.path.join(dirs[0], "runs.tsv")) if ln.strip()]
cols = ["run", "impl", "ckpt", "real s", "before s", "err", "paced only s", "err",
        "GPU work fixed s", "err", "after s", "err", "estimate s", "err", "real GiB",
        "before GiB", "err", "after GiB", "err", "estimate GiB", "err"]
out, errs = [], {k: [] for k in ("before", "paced", "fixed", "after", "est", "mb", "ma", "me",
                                  "vs_est")}
for lab in order:
    r = real[lab]
    rs, rm = r["step_s_median"], r["measured_peak_bytes"]
    b, a = load(dirs[0], lab), load(dirs[1], lab)
    row = [lab, r.get("impl", "hf") + ("+compile" if r.get("compile") else ""),
           "yes" if r.get("grad_ckpt") else "", "%.4f" % rs]
    vals = {}
    if isinstance(b, tuple):
        vals["before"], vals["paced"], vals["mb"] = e(b[0], rs), e(b[1], rs), e(b[2], rm)
        row += ["%.4f" % b[0], pct(vals["before"]),
                "%.4f" % b[1] if b[1] else "not paced", pct(vals["paced"])]
    else:
        row += [b, "", "", ""]
    if isinstance(a, tuple):
        vals["fixed"], vals["after"] = e(a[0], rs), e(a[1] if a[1] else a[0], rs)
        vals["est"], vals["ma"], vals["me"] = e(a[3], rs), e(a[2], rm), e(a[4], rm)
        vals["vs_est"] = e(a[1] if a[1] else a[0], a[3])
        row += ["%.4f" % a[0], pct(vals["fixed"]), "%.4f" % (a[1] if a[1] else a[0]),
                pct(vals["after"]), "%.4f" % a[3], pct(vals["est"])]
    else:
        row += [a, "", "", "", "", ""]
    row += ["%.1f" % (rm / GIB)]
    row += ["%.1f" % (b[2] / GIB), pct(vals.get("mb"))] if isinstance(b, tuple) else ["", ""]
    row += (["%.1f" % (a[2] / GIB), pct(vals["ma"]), "%.1f" % (a[4] / GIB), pct(vals["me"])]
            if isinstance(a, tuple) else ["", "", "", ""])
    for k, v in vals.items():
        if v is not None:
            errs[k].append(v)
    out.append(row)
if md:
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for o in out:
        print("| " + " | ".join(o) + " |")
else:
    wid = [max(len(c), *(len(str(o[i])) for o in out)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(wid[i]) for i, c in enumerate(cols)))
    for o in out:
        print("  ".join(str(x).ljust(wid[i]) for i, x in enumerate(o)))
print()
names = {"before": "step, plan measure before (call1 unpaced)",
         "paced": "step, host pacing alone (call1 paced)",
         "fixed": "step, GPU work fixed, unpaced (call2)",
         "after": "step, plan measure after (call2 paced)",
         "est": "step, plan estimate", "mb": "memory, plan measure before",
         "ma": "memory, plan measure after", "me": "memory, plan estimate",
         "vs_est": "step, plan measure after vs the estimate"}
for k, xs in errs.items():
    if not xs:
        continue
    a = [abs(x) for x in xs]
    line = "%-44s n %2d  median |err| %5.1f%%  max |err| %5.1f%%  median signed %+5.1f%%  " \
           "within 5%%: %d" % (names[k], len(xs), 100 * statistics.median(a), 100 * max(a),
                               100 * statistics.median(xs), sum(1 for x in a if x <= 0.05))
    print(("- " if md else "") + line)
for lab in order:
    p = os.path.join(dirs[0], "base-" + lab + ".json")
    b = load(dirs[0], lab)
    if os.path.exists(p) and isinstance(b, tuple):
        bs = json.load(open(p))["measured"]["step_s"]
        print(("- " if md else "") + "cross-check %s: planner before the change %.4f s, "
              "call1 unpaced %.4f s (%+.1f%%)" % (lab, bs, b[0], 100 * e(b[0], bs)))
