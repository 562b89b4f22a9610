#!/usr/bin/env python3
"""meas22: how much of plan measure's error on each run is its attention stand-in (issue 14).

For each run measured in DIR (LABEL.json of meas22_run.sh) and probed in PROBE (attn_probe.py's
JSON lines): the attention component plan measure ran (its cuBLAS batched GEMMs standing in for
the fused kernel: sum over the `attention` items of measured time alone x launches per step),
the recipe's prediction of it (the same items' predicted_s), and the real kernel (torch SDPA as
the real step calls it, attn_shapes.py: per kind of layer, layers x (forward+backward, plus a
forward when full checkpointing reruns it)). `measure, real attention` = plan measure's step -
the stand-in + the real kernel: an analysis (what plan measure would give if it ran the real
kernel in the stand-in's place, the attention being on the compute stream between the same
items), not a measurement. error = (x - real) / real.

Usage: python3 attn_table.py DIR PROBE.jsonl [--markdown]
"""
import collections
import json
import lzma
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
d, probe = sys.argv[1], sys.argv[2]
md = "--markdown" in sys.argv
FILES = [os.path.join(ROOT, p) for p in (
    "bench/realruns/results/h200-2026-11-24.jsonl",
    "bench/results/ho19_2026-11-29/results.jsonl",
    "bench/results/ho20_2026-11-29/results.jsonl",
    "bench/results/ho21_2026-11-29/results.jsonl")]
real = {}
for fn in FILES:
    for ln in open(fn):
        if ln.strip():
            r = json.loads(ln)
            if "step_s_median" in r and r.get("world_size", 1) == 1 and "H200" in r.get("gpu", ""):
                real[r["label"]] = r["step_s_median"]
kern = collections.defaultdict(float)
kinds = collections.defaultdict(list)
for ln in open(probe):
    p = json.loads(ln)
    kern[p["label"]] += p["layers"] * (p["fwd_bwd_s"] + p["recompute"] * p["fwd_s"])
    kinds[p["label"]].append("%s%s" % (p["kind"], "" if p["kind"] == "causal" else
                                       " w%d" % p["window"]))


def per_step(j, it):
    """Launches per step of an item. The files of this folder were written before this branch's
    fix of cmd_measure.c (the JSON gave the dense list, phases fwd and bwd, micro x ALL layers;
    it runs on micro x (layers - MoE layers), as bk_time_items counts it into the components):
    the dense count is the difference of the two lists' counts."""
    moe = [i["per_step"] for i in j["items"] if i["phase"] == "moe_" + it["phase"]]
    return it["per_step"] - moe[0] if it["phase"] in ("fwd", "bwd") and moe else it["per_step"]


rows = []
for lab in sorted(kern, key=lambda x: list(kern).index(x)):
    f = os.path.join(d, lab + ".json")
    op = open
    if not os.path.exists(f):
        f, op = f + ".xz", lzma.open
    if not os.path.exists(f) or lab not in real:
        continue
    with op(f, "rt") as fh:
        j = json.load(fh)
    att = [(i, per_step(j, i)) for i in j["items"] if i["component"] == "attention"]
    stand = sum((i["measured_s"] or 0) * n for i, n in att)
    pred = sum(i["predicted_s"] * n for i, n in att)
    m = j["measured"]["step_s"]
    sub = m - stand + kern[lab]
    rows.append((lab, "+".join(sorted(set(kinds[lab]))), real[lab], m, stand, pred, kern[lab], sub))
e = lambda x, r: (x - r) / r  # noqa: E731
hdr = ["run", "attention", "real s", "measure s", "err", "stand-in ms", "recipe ms", "real kernel ms",
       "stand-in / kernel", "recipe / kernel", "measure, real attention s", "err"]
out = [[lab, k, "%.4f" % r, "%.4f" % m, "%+.1f%%" % (100 * e(m, r)), "%.1f" % (1e3 * s),
        "%.1f" % (1e3 * p), "%.1f" % (1e3 * kr), "%.2f" % (s / kr), "%.2f" % (p / kr),
        "%.4f" % sub, "%+.1f%%" % (100 * e(sub, r))] for lab, k, r, m, s, p, kr, sub in rows]
if md:
    print("| " + " | ".join(hdr) + " |\n|" + "---|" * len(hdr))
    for c in out:
        print("| " + " | ".join(c) + " |")
else:
    w = [max(len(h), *(len(c[i]) for c in out)) for i, h in enumerate(hdr)]
    print("  ".join(h.rjust(w[i]) for i, h in enumerate(hdr)))
    for c in out:
        print("  ".join(x.rjust(w[i]) for i, x in enumerate(c)))
print()
for name, xs in (("step, plan measure", [e(m, r) for _, _, r, m, _, _, _, _ in rows]),
                 ("step, plan measure with the real attention kernel",
                  [e(sub, r) for _, _, r, _, _, _, _, sub in rows]),
                 ("attention, stand-in vs real kernel", [e(s, kr) for *_, s, _, kr, _ in rows]),
                 ("attention, recipe vs real kernel", [e(p, kr) for *_, p, kr, _ in rows])):
    a = [abs(x) for x in xs]
    if a:
        print("- %-50s n %2d  median |err| %5.1f%%  max %5.1f%%  within 5%%: %d" % (
            name, len(a), 100 * statistics.median(a), 100 * max(a), sum(x <= 0.05 for x in a)))
