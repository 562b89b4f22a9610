#!/usr/bin/env python3
"""The H100 preset's optimizer host constants (costmodel/optimizer_host.h) from call1: the
unsynced host clock per phase (gap_profile.json host_phase_s_median, 12 steps) and the launches
per phase in the profiled step (trace_summary.json regions). Standard library.
clip_grad_norm_: two models, two unknowns (per parameter tensor a, per launch b):
  SmolLM2-360M 290 tensors, Mixtral-8x7B cut to 2 layers 21 tensors (9 a layer + embedding,
  final norm, lm_head). AdamW foreach: SmolLM2-360M's host time less its launches at b, per
  tensor (Mixtral's AdamW host clock is not used: its host waited on a full launch queue,
  'Command Buffer Full' 28 ms in the trace: the GPU set the pace there).
Usage: python3 optimizer_host_fit.py [CALLDIR]
  CALLDIR: a folder with prof/gap_profile.json and trace_summary.json of the same two runs
  (default: call1 here, the H100 figures; bench/results/meas13_2026-11-28/gap holds the H200 ones)"""
import json
import os
import sys

H = (sys.argv[1] if len(sys.argv) > 1
     else os.path.join(os.path.dirname(os.path.abspath(__file__)), "call1"))
g = json.load(open(os.path.join(H, "prof", "gap_profile.json")))
ts = json.load(open(os.path.join(H, "trace_summary.json")))
TENSORS = {"smollm2-360m": 290, "mixtral-8x7b": 21}
rows = {}
for r, t in zip(g["runs"], ts):
    rows[r["model"]] = {"tensors": TENSORS[r["model"]], "params": r["params"],
                        "clip_s": r["host_phase_s_median"]["clip"],
                        "opt_s": r["host_phase_s_median"]["opt"],
                        "clip_launches": t["regions"]["step.clip"]["launches"],
                        "opt_launches": t["regions"]["step.opt"]["launches"]}
    print(r["model"], rows[r["model"]])
s, x = rows["smollm2-360m"], rows["mixtral-8x7b"]
# s.clip = a Ts + b Ls ; x.clip = a Tx + b Lx
det = s["tensors"] * x["clip_launches"] - x["tensors"] * s["clip_launches"]
a = (s["clip_s"] * x["clip_launches"] - x["clip_s"] * s["clip_launches"]) / det
b = (s["tensors"] * x["clip_s"] - x["tensors"] * s["clip_s"]) / det
adam = (s["opt_s"] - b * s["opt_launches"]) / s["tensors"]
print("host.clip_tensor_s %.3g  host.multi_tensor_launch_s %.3g  host.adamw_foreach_tensor_s %.3g"
      % (a, b, adam))
for n, r in rows.items():
    print("  %-13s ops per chunk of 20,971,520: clip %.2f, AdamW %.2f" % (
        n, r["clip_launches"] / -(-r["params"] // 20971520), r["opt_launches"] / -(-r["params"] // 20971520)))
