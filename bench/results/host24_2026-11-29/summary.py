#!/usr/bin/env python3
"""Tables of host24's probe (bench/realruns/host24_probe.py, call1/p*.json): per model and mode the
host's call time per pass, its launches (device activities of one profiled pass), the quotient,
the host per decoder layer (medians over layers of the per-step medians), the GPU's span, the host's
lead over the GPU at the layer starts, the collector's time, page faults and the lease's tiny-op
speed at the process's start and end. Standard library only. Usage: python3 summary.py [call1]"""
import glob
import json
import os
import sys

D = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "call1")
print("%-16s %-10s %7s %7s %6s %6s %6s %6s %6s %6s %7s %7s %6s %5s %5s" % (
    "model", "mode", "fwd_ms", "bwd_ms", "n_fwd", "n_bwd", "us/fwd", "us/bwd", "lay_f", "lay_b",
    "gpu_f", "gpu_b", "lead", "gc_ms", "flt"))
for f in sorted(glob.glob(os.path.join(D, "p*.json"))):
    d = json.load(open(f))
    m = d["model"] + ("-eager" if d["attn"] == "eager" else "")
    for mode in ("real", "floor", "floor_busy", "real2"):
        s = d.get(mode, {})
        if "fwd" not in s:
            continue
        lc = d["launches_floor" if mode.startswith("floor") else "launches_real"]
        fw, bw = s["fwd"]["wall_ms"], s["bwd"]["wall_ms"]
        print("%-16s %-10s %7.1f %7.1f %6d %6d %6.1f %6.1f %6.2f %6.2f %7.1f %7.1f %6.2f %5.2f %5.0f" % (
            m, mode, fw, bw, lc["fwd"], lc["bwd"], fw / lc["fwd"] * 1e3, bw / lc["bwd"] * 1e3,
            s["layer_fwd_host_ms_median"], s["layer_bwd_host_ms_median"], s["fwd_gpu_ms"], s["bwd_gpu_ms"],
            s["layer_fwd_lead_ms_median"], s["fwd"]["gc_ms"] + s["bwd"]["gc_ms"],
            s["fwd"]["minflt"] + s["bwd"]["minflt"]))
    print("%-16s step real %.1f ms (real2 %.1f), floor %.1f; floor fwd+bwd per launch %.1f us; "
          "tiny op fwd/bwd us start %.1f/%.1f end %.1f/%.1f; %s layers; pre-layer forward in floor_busy %.0f ms" % (
              m, d["real"]["step_ms_median"], d["real2"]["step_ms_median"], d["floor"]["step_ms_median"],
              (d["floor"]["fwd"]["wall_ms"] + d["floor"]["bwd"]["wall_ms"]) /
              (d["launches_floor"]["fwd"] + d["launches_floor"]["bwd"]) * 1e3,
              d["speed_start"]["tiny_fwd_op_us"], d["speed_start"]["tiny_bwd_op_us"],
              d["speed_end"]["tiny_fwd_op_us"], d["speed_end"]["tiny_bwd_op_us"], d["layers"],
              d["floor_busy"].get("pre_layers_fwd_ms", float("nan"))))
