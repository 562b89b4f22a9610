#!/usr/bin/env python3
"""host.ckpt_fwd_saved_tensor_s and host.ckpt_bwd_saved_tensor_s of data/systems/h200.json from the
timed checkpoint hooks of x2b (bench/tpck27_matched.py --timed-hooks: 3 checkpointed steps per rank
of Llama-3.1-8B cut to 8 layers, TP 2, seq 256, with torch.utils.checkpoint's pack hook, unpack hook,
recompute pack hook and recompute function timed). Per rank: the median over the steps of the
forward's pack hooks per call, and of the backward's (the unpack hooks less the recompute they run,
plus the recompute's pack hooks) per saved tensor; each normalized to the preset's host moment by
that rank's DTensor probe (median over the call's rounds) against 33.9 us, the median lease the
h200 preset's DTensor figures sit at (costmodel/host_paced.h); the mean over the two ranks.
Usage: python3 bench/results/tpck27_2026-11-29/ckpt_hook_constants.py"""
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
PRESET_PROBE_US = 33.9
hooks = json.load(open(os.path.join(HERE, "x2b", "hooks-llama-3.1-8b-L8.json")))
rec = json.loads(open(os.path.join(HERE, "x2b", "results.jsonl")).readline())
fw, bw = [], []
for rank, steps in enumerate(hooks):
    probe = statistics.median(r[rank]["dtensor_op_us"] for r in rec["host_probe_rounds"])
    f = statistics.median(s["fwd_pack"] / s["fwd_pack_n"] for s in steps)
    b = statistics.median((s["bwd_unpack"] - s["recompute_fn"] + s["recompute_pack"]) / s["bwd_unpack_n"]
                          for s in steps)
    k = PRESET_PROBE_US / probe
    print("rank %d: probe %.2f us; per saved tensor fwd %.2f us, bwd %.2f us; at %.1f us: %.2f, %.2f; "
          "saved tensors per block %.0f" % (rank, probe, f * 1e3, b * 1e3, PRESET_PROBE_US, f * 1e3 * k,
                                            b * 1e3 * k, steps[0]["fwd_pack_n"] / 8))
    fw.append(f * 1e3 * k)
    bw.append(b * 1e3 * k)
print("host.ckpt_fwd_saved_tensor_s %.2e, host.ckpt_bwd_saved_tensor_s %.2e" % (
    statistics.mean(fw) * 1e-6, statistics.mean(bw) * 1e-6))
