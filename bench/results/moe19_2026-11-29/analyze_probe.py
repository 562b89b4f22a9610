#!/usr/bin/env python3
"""analyze_probe.py — tables from moe_host_probe.py's probe.json (helper moe19, issue 20).
Standard library only. Usage: analyze_probe.py call1/probe.json"""
import json
import statistics as st
import sys

d = json.load(open(sys.argv[1]))
f = d["facts"]
print("host: %s | glibc %s | THP %s / defrag %s" % (f["cpu"].replace("\n", " "), f["glibc"],
                                                     f["thp_enabled"], f["thp_defrag"]))
print("torch %s, transformers %s" % (f.get("torch"), f.get("transformers")))
for k in ("fault_cost_default", "fault_cost_nohugepage", "fault_cost_hugepage"):
    if k in f:
        x = f[k]
        print("%-22s faults %6d of %d pages, %.2f us per fault" % (
            k, x["faults"], x["pages"], (x["s_per_fault"] or 0) * 1e6))


def per_step(rec):
    rows = []
    for i, s in enumerate(rec["step_s"]):
        cc = rec["chunk_cat"][i]
        lay = [c for c in cc if c[3] > 6]
        rows.append((s, rec["fwd_bwd_gpu_s"][i], rec["fwd_bwd_host_call_s"][i], sum(c[0] for c in cc),
                     sum(c[0] for c in lay) / max(1, sum(c[1] for c in lay)) * 1e9,
                     sum(c[2] for c in lay) / max(1, sum(c[1] for c in lay)) * 512, len(cc)))
    return rows


for r in d["runs"]:
    print("\n== %s (experts %s, %s)" % (r["spec"], r.get("experts_implementation"), r.get("experts_class")))
    for var in ("default", "mallopt"):
        if var not in r:
            continue
        print("  %s: step_s  fb_gpu  fb_host  chunk_cat_s  layer ns/block  faults/512 blocks  calls" % var)
        for row in per_step(r[var]):
            print("    %.4f  %.4f  %.4f  %.4f  %6.2f  %6.2f  %d" % row)
        s = r[var + "_summary"]
        print("    median step %.4f [%.4f-%.4f], fb_gpu %.4f, fb_host %.4f, chunk_cat %.4f s/step" % (
            s["step_med"], s["step_min"], s["step_max"], s["fb_gpu_med"], s["fb_host_med"], s["chunk_cat_s_med"]))
        cc = [c for c in r[var]["chunk_cat"][0]]
        print("    units (first step): " + ", ".join("%d t %d blk %.2f ms %d flt" % (c[3], c[1], c[0] * 1e3, c[2]) for c in cc))
    if r.get("routing"):
        mm = [q["max_over_mean"] for q in r["routing"]]
        print("  routing per layer: max/mean %s, min/mean %s, cv %s" % (
            [round(x, 2) for x in mm], [round(q["min_over_mean"], 2) for q in r["routing"]],
            [round(q["cv"], 3) for q in r["routing"]]))
    if r.get("grouped_mm"):
        a, b = r["grouped_mm"]["measured_rows"], r["grouped_mm"]["equal_rows"]
        print("  grouped_mm fwd (S %d, E %d): measured rows (max %d) %.3f + %.3f ms = %.0f TFLOP/s; "
              "equal rows (max %d) %.3f + %.3f ms = %.0f TFLOP/s; ratio %.3f" % (
                  a["S"], a["E"], a["max_rows"], a["gate_up_ms"], a["down_ms"], a["tflops"], b["max_rows"],
                  b["gate_up_ms"], b["down_ms"], b["tflops"],
                  (a["gate_up_ms"] + a["down_ms"]) / (b["gate_up_ms"] + b["down_ms"])))
print("\nwall %.1f s" % d.get("wall_s", 0))
