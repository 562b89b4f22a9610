#!/usr/bin/env python3
"""host.ckpt_dtensor_detach_s of data/systems/h200.json: the host time of one DTensor `detach` at the
h200 preset's host moment, from tpck27's recorded host probes (bench/tpck27_matched.py probe():
host_speed_probe.py's DTensor op loop and, on the same rank in the same round, a loop of
`dxg.detach()` on a Shard(0) DTensor that requires grad; bench/results/tpck27_2026-11-29 x2 and x2b,
2 x H200, torch 2.11.0+cu130). Every (case, round, rank) probe: detach_us x 33.9 / dtensor_op_us
(33.9 us: the median lease the preset's DTensor figures sit at, costmodel/host_paced.h, as
tpck27's ckpt_hook_constants.py normalizes); the constant is the median of those. Also printed:
the plain detach, and the detach / op ratio spread (how well the op probe tracks the detach).
Usage: python3 bench/results/tpck27b_2026-11-29/detach_constant.py"""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "tpck27_2026-11-29")
PRESET_PROBE_US = 33.9
seen, norm, ratio, plain = set(), [], [], []
for sub in ("x2", "x2b"):
    for line in open(os.path.join(SRC, sub, "results.jsonl")):
        rec = json.loads(line)
        case = rec["label"].rsplit("-", 1)[0] if sub == "x2" else "x2b"
        rounds = json.dumps(rec["host_probe_rounds"])
        if (case, rounds) in seen:  # every mode's record of a case carries the same probes
            continue
        seen.add((case, rounds))
        for rnd in rec["host_probe_rounds"]:
            for p in rnd:
                norm.append(p["dtensor_detach_us"] * PRESET_PROBE_US / p["dtensor_op_us"])
                ratio.append(p["dtensor_detach_us"] / p["dtensor_op_us"])
                plain.append(p["plain_detach_us"] * PRESET_PROBE_US / p["dtensor_op_us"])
print("probes (case x round x rank): %d" % len(norm))
print("DTensor detach / DTensor op probe: median %.3f, min %.3f, max %.3f" % (
    statistics.median(ratio), min(ratio), max(ratio)))
print("DTensor detach at %.1f us: median %.2f us (min %.2f, max %.2f)" % (
    PRESET_PROBE_US, statistics.median(norm), min(norm), max(norm)))
print("plain detach at %.1f us: median %.2f us" % (PRESET_PROBE_US, statistics.median(plain)))
print("host.ckpt_dtensor_detach_s %.2e" % (statistics.median(norm) * 1e-6))
