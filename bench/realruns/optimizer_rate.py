#!/usr/bin/env python3
"""The streaming rate of torch's foreach (multi_tensor_apply) kernels in a real FSDP2 step:
clip_grad_norm_ (_foreach_norm reads 4 B per parameter, _foreach_mul_ reads and writes 8) and
AdamW's foreach path (80 B per parameter, costmodel/impl.h), from phase_profile.py's profiled
step (the multi_tensor_apply kernels' summed time in the clip and opt phases). Standard library.
Measured 0.80-0.82 of peak on one H100 (the model prices these bytes at hbm_efficiency 0.91);
not applied to the model alone: see bench/realruns/README.md, "2026-11-27 (sgpu)".
Usage: python3 bench/realruns/optimizer_rate.py [bench/results/sgpu_2026-11-27/phases.json]
           [--peak 3.35e12]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:] if not a.startswith("--")]
fn = args[0] if args else os.path.join(HERE, "..", "results", "sgpu_2026-11-27", "phases.json")
peak = float(sys.argv[sys.argv.index("--peak") + 1]) if "--peak" in sys.argv else 3.35e12
# parameters of the runs (the realruns' "params" field; Phi-3-mini cut to 16 layers:
# 16 x 113,246,208 per layer + 2 x 98,500,608 embedding / head + 3,072 final norm)
PARAMS = {("smollm2-360m", None): 361821120, ("llama-3.2-1b", None): 1235814400,
          ("phi-3-mini-4k", 16): 2008949760}
BYTES = {"clip": 12.0, "opt": 80.0}
d = json.load(open(fn))
print("gpu %s, torch %s" % (d["gpu"], d["torch"]))
rates = []
for r in d["runs"]:
    n = PARAMS.get((r["model"], r["layers"]))
    if n is None:
        continue
    for ph in ("clip", "opt"):
        t = sum(s for k, s, c in r["phases"][ph]["top"] if "multi_tensor_apply_kernel" in k)
        b = BYTES[ph] * n
        rates.append(b / t)
        print("%-14s seq %5d mbs %d %-4s %6.2f GB in %7.3f ms: %.2f TB/s = %.3f of %.2f TB/s" % (
            r["model"], r["seq"], r["mbs"], ph, b / 1e9, t * 1e3, b / t / 1e12, b / t / peak,
            peak / 1e12))
rates.sort()
m = rates[len(rates) // 2] if len(rates) % 2 else 0.5 * (rates[len(rates) // 2 - 1] + rates[len(rates) // 2])
print("median %.3f TB/s = %.3f of peak; range %.3f-%.3f" % (m / 1e12, m / peak, rates[0] / peak,
                                                              rates[-1] / peak))
