#!/usr/bin/env python3
"""mcore_layer_host_constants.py — the system constants host.mcore_attn_{fwd,bwd}_s and
host.mcore_qk_norm_{fwd,bwd}_s (costmodel/mcore_moe_host.h) from bench/mcore_layer_host.py's
layer_host.json (bench/results/moe7_2026-11-28/layerhost): per layer, a whole Megatron-Core
TransformerLayer's host time minus its MoELayer's alone (8 local experts, top-k 8: the
configuration of host.mcore_moe_*), and the q/k-norm layer's minus the plain layer's. Prints
the 32-local-expert differences beside them (the spread of the measurement) and checks the
delay runs against the pricing's forward, max(host total, D + host after the sync).
Usage: bench/mcore_layer_host_constants.py [layer_host.json]
"""
import json
import os
import sys

P = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "results", "moe7_2026-11-28", "layerhost",
    "layer_host.json")
d = json.load(open(P))
runs = {(r["variant"], r["local_experts"]): r for r in d["runs"]}


def diff(a, b, nle, key):
    return runs[(a, nle)][key] - runs[(b, nle)][key]


for name, a, b, key in (("mcore_attn_fwd_s", "layer", "moe", "fwd_host_s"),
                        ("mcore_attn_bwd_s", "layer", "moe", "bwd_host_s"),
                        ("mcore_qk_norm_fwd_s", "layer_qkln", "layer", "fwd_host_s"),
                        ("mcore_qk_norm_bwd_s", "layer_qkln", "layer", "bwd_host_s")):
    v8, v32 = diff(a, b, 8, key), diff(a, b, 32, key)
    print(f"{name:22s} {v8:.2e}  ({a} - {b}, 8 local experts; 32: {v32 * 1e3:.3f} ms)")
moe = runs[("moe", 8)]["fwd_host_s"]
total = runs[("layer", 8)]["fwd_host_s"]
post = 0.60e-3  # host.mcore_moe_post_sync_s (EP 1), bench/results/mcore_moe_host_2026-11-27
print(f"delay check (forward per layer, ms): D, measured, max(total {total*1e3:.3f}, D + post "
      f"{post*1e3:.2f}), without the attention block max(moe {moe*1e3:.3f}, D + post)")
for r in d["delay"]:
    D = r["delay_ms"] * 1e-3
    print(f"  {r['delay_ms']:.1f} {r['fwd_wall_s']*1e3:7.3f} {max(total, D + post)*1e3:7.3f} "
          f"{max(moe, D + post)*1e3:7.3f}")
