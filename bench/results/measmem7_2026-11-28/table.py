#!/usr/bin/env python3
"""Issue 14 (measmem7): `plan measure`'s peak memory and step against the real single-GPU steps,
before and after the backend's phased memory arena (backend/bk_pools.h).

Reads BEFORE/<label>.json (bench/results/hostpace_2026-11-28/call2/hostpace: the backend with
fixed pools for every phase at once) and AFTER/<label>.json from one or more folders (this
work's calls, measmem_run.sh), plan measure --format json each, and the real runs
(bench/realruns/results/h100*.jsonl). Per run: the real step (median of its timed steps) and
peak memory (peak allocated + what the process held outside the allocator: fidelity.py's
measured memory); plan measure's step (measured.step_s: host-paced where host_paced) and peak
(total - free after the steps); the estimate's peak; after: the arena's persistent part and
phase region and what the region holds beyond the estimate's tensors. error = (x - real) / real.
Summaries over the runs both sides measured, and over every run measured after. base-<label>
files in an AFTER folder: the BEFORE binaries run again in the same call (step cross-check on
one machine). Standard library only.

Usage: python3 table.py BEFORE AFTER [AFTER2 ...] [--markdown]
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
before_dir, after_dirs = dirs[0], dirs[1:]

real = {}
for fn in glob.glob(os.path.join(ROOT, "bench", "realruns", "results", "h100*.jsonl")):
    for ln in open(fn):
        if ln.strip():
            r = json.loads(ln)
            real[r["label"]] = r


def load(d, lab):
    """The run's JSON, or the line that says why there is none."""
    try:
        return json.load(open(os.path.join(d, lab + ".json")))
    except (OSError, ValueError):
        fn = os.path.join(d, lab + ".err")
        err = open(fn).read().strip().splitlines() if os.path.exists(fn) else []
        msg = err[-1] if err else "not run"
        if "does not fit" in msg:
            return "does not fit (" + msg.rsplit(": ", 1)[-1] + ")"
        return msg.replace("plan: error: ", "")[:60]


def after(lab):
    for d in after_dirs:
        j = load(d, lab)
        if isinstance(j, dict):
            return j, d
    return load(after_dirs[0], lab), None


def step(j):
    return j["measured"]["step_s"]


def e(a, b):
    return None if a is None or not b else (a - b) / b


def pct(x):
    return "" if x is None else "%+.1f%%" % (100 * x)


order = [ln.split("\t")[0] for ln in open(os.path.join(before_dir, "runs.tsv")) if ln.strip()]
cols = ["run", "ckpt", "real s", "before s", "err", "after s", "err", "real GiB", "before GiB",
        "err", "after GiB", "err", "estimate GiB", "err", "persistent GiB", "phase GiB",
        "touched GiB", "beyond GiB"]
out = []
errs = {k: [] for k in ("sb", "sa", "mb", "ma", "me", "sb2", "sa2", "mb2", "ma2", "me2")}
for lab in order:
    r = real[lab]
    rs, rm = r["step_s_median"], r["measured_peak_bytes"]
    b = load(before_dir, lab)
    a, _ = after(lab)
    row = [lab, "yes" if r.get("grad_ckpt") else "", "%.4f" % rs]
    both = isinstance(a, dict) and isinstance(b, dict)
    if isinstance(b, dict):
        row += ["%.4f" % step(b), pct(e(step(b), rs))]
    else:
        row += [b, ""]
    if isinstance(a, dict):
        row += ["%.4f" % step(a), pct(e(step(a), rs))]
    else:
        row += [a, ""]
    row += ["%.1f" % (rm / GIB)]
    if isinstance(b, dict):
        row += ["%.1f" % (b["measured"]["peak_memory_bytes"] / GIB),
                pct(e(b["measured"]["peak_memory_bytes"], rm))]
    else:
        row += ["", ""]
    if isinstance(a, dict):
        me_, pr = a["measured"], a["predicted"]
        row += ["%.1f" % (me_["peak_memory_bytes"] / GIB), pct(e(me_["peak_memory_bytes"], rm)),
                "%.1f" % (pr["memory_bytes"] / GIB), pct(e(pr["memory_bytes"], rm)),
                "%.1f" % (me_["persistent_bytes"] / GIB), "%.1f" % (me_["phase_region_bytes"] / GIB),
                "%.1f" % (me_["touched_bytes"] / GIB), "%.2f" % (me_["extra_bytes"] / GIB)]
        errs["sa2"].append(e(step(a), rs))
        errs["ma2"].append(e(me_["peak_memory_bytes"], rm))
        errs["me2"].append(e(pr["memory_bytes"], rm))
    else:
        row += [""] * 8
    if both:
        errs["sb"].append(e(step(b), rs))
        errs["sa"].append(e(step(a), rs))
        errs["mb"].append(e(b["measured"]["peak_memory_bytes"], rm))
        errs["ma"].append(e(a["measured"]["peak_memory_bytes"], rm))
        errs["me"].append(e(a["predicted"]["memory_bytes"], rm))
    if isinstance(b, dict):
        errs["sb2"].append(e(step(b), rs))
        errs["mb2"].append(e(b["measured"]["peak_memory_bytes"], rm))
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
names = {"sb": "step, before (hostpace call2), runs both measured",
         "sa": "step, after, runs both measured",
         "mb": "memory, before, runs both measured",
         "ma": "memory, after, runs both measured",
         "me": "memory, plan estimate, runs both measured",
         "sb2": "step, before, every run it measured",
         "sa2": "step, after, every run it measured",
         "mb2": "memory, before, every run it measured",
         "ma2": "memory, after, every run it measured",
         "me2": "memory, plan estimate, every run measured after"}
for k, xs in errs.items():
    if not xs:
        continue
    a = [abs(x) for x in xs]
    line = "%-52s n %2d  median |err| %5.1f%%  max |err| %5.1f%%  median signed %+5.1f%%  " \
           "within 5%%: %d" % (names[k], len(xs), 100 * statistics.median(a), 100 * max(a),
                               100 * statistics.median(xs), sum(1 for x in a if x <= 0.05))
    print(("- " if md else "") + line)
for lab in order:
    for d in after_dirs:
        p = os.path.join(d, "base-" + lab + ".json")
        a, _ = after(lab)
        if os.path.exists(p) and isinstance(a, dict):
            bj = json.load(open(p))
            bs, bm = step(bj), bj["measured"]["peak_memory_bytes"]
            print(("- " if md else "") + "same call, %s: before's binaries %.4f s %.1f GiB, after "
                  "%.4f s (%+.1f%%) %.1f GiB" % (lab, bs, bm / GIB, step(a), 100 * e(step(a), bs),
                                                  a["measured"]["peak_memory_bytes"] / GIB))
