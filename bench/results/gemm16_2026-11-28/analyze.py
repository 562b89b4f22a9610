#!/usr/bin/env python3
"""gemm16: what the one-H200 measurements of this folder say (standard library; run from anywhere).
1. eager_mix.json: per shape, GEMM rate inside the HF layer forward vs back to back, the SM clock
   and power of each mode, the eager elementwise kernels' time in the layer vs alone, and the rate
   costmodel/gemm_headroom.h predicts for that mix from data/systems/h200.json's fit.
2. ph_*.json (phase_profile.py --streams --power): per pass and CUDA stream the kernel time by
   class, the FSDP2 copy-in kernels' stream, the step's SM clock and power, and the optimizer's
   multi_tensor_apply rate (clip 12 B and foreach AdamW 80 B per parameter, as fwdbwd14 counted).
Usage: python3 analyze.py > analyze.txt"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
g = json.load(open(os.path.join(ROOT, "data/systems/h200.json")))["gpu"]
beta, pmem, pcap, rmax = g["gemm_power_exponent"], g["memory_bound_power_w"], g["tdp_w"], g["gemm_burst_ratio"]

print("1. HF decoder layer forward (eager_mix.py), one H200; rates: GEMM TFLOP/s, elementwise TB/s")
print("%-24s %6s %6s %7s %7s %6s %6s %8s %8s %7s %7s" % (
    "shape", "clkL", "clkG", "gemmL", "gemmG", "xmeas", "xmodel", "ewL ms", "ewA ms", "ewL/A", "duty"))
d = json.load(open(os.path.join(HERE, "eager_mix.json")))
for n, s in d["shapes"].items():
    m = s["modes"]
    G, M, A = m["gemm_alone"]["gemm_s"], m["elementwise_alone"]["elementwise_s"], m["layer"]["attention_s"]
    u = (1 - pmem / pcap) * M / G
    r = 1.0
    for _ in range(200):
        r = min(rmax, (1 + u * r) ** beta)
    for L in ("layer", "layer2"):
        x = m[L]["gemm_flops_per_s"] / m["gemm_alone"]["gemm_flops_per_s"]
        print("%-24s %6.0f %6.0f %7.1f %7.1f %6.3f %6.3f %8.3f %8.3f %7.3f %7.2f" % (
            n if L == "layer" else "  (repeat)", m[L]["power"]["sm_clock_mhz_median"],
            m["gemm_alone"]["power"]["sm_clock_mhz_median"], m[L]["gemm_flops_per_s"] / 1e12,
            m["gemm_alone"]["gemm_flops_per_s"] / 1e12, x, r, m[L]["elementwise_s"] * 1e3, M * 1e3,
            m[L]["elementwise_s"] / M, G / (G + M + A)))
    print("%-24s elementwise alone at %s MHz, %s W (energy); GEMMs alone %s W" % (
        "", m["elementwise_alone"]["power"]["sm_clock_mhz_median"],
        m["elementwise_alone"]["power"].get("power_w_energy"), m["gemm_alone"]["power"].get("power_w_energy")))

print()
print("2. Real Hugging Face FSDP2 steps, one H200 (phase_profile.py --streams --power)")
CLIP_B, ADAMW_B = 12, 80
NUMEL = {}
for f in sorted(os.listdir(HERE)):
    if not (f.startswith("ph_") and f.endswith(".json")):
        continue
    r = json.load(open(os.path.join(HERE, f)))["runs"][0]
    pw = r.get("power", {})
    print("%s s%d b%d: step %.4f s; SM clock median %s MHz, power %s W, SW power cap %s of samples" % (
        r["model"], r["seq"], r["mbs"], r["step_s"], pw.get("steps", {}).get("sm_clock_mhz_median"),
        pw.get("steps", {}).get("power_w_median"), pw.get("steps", {}).get("reason_sw_power_cap_frac")))
    for p in ("fwd", "bwd"):
        print("  %s: clock %s MHz, wall %.1f ms" % (p, pw.get(p, {}).get("sm_clock_mhz_median"),
                                                   r["phase_wall_s"][p] * 1e3))
        for st, q in sorted(r["by_stream"][p].items()):
            cast = sum(t for k, t, n in q["top"] if "bfloat16_copy" in k)
            ncast = sum(n for k, t, n in q["top"] if "bfloat16_copy" in k)
            dtod = sum(t for k, t, n in q["top"] if k.startswith("Memcpy DtoD"))
            ndtod = sum(n for k, t, n in q["top"] if k.startswith("Memcpy DtoD"))
            cc = sum(t for k, t, n in q["top"] if "chunk_cat" in k)
            print("    stream %-3s busy %6.1f ms, %5d kernels; %s; bfloat16_copy %d x %.1f ms, DtoD memcpy "
                  "%d x %.1f ms, chunk_cat %.1f ms" % (
                      st, q["busy_s"] * 1e3, q["kernels"],
                      ", ".join("%s %.1f" % (k, v * 1e3) for k, v in sorted(q["kernel_s_by_class"].items())),
                      ncast, cast * 1e3, ndtod, dtod * 1e3, cc * 1e3))
    kc = r["phases"]["clip"]["kernel_s_by_class"].get("optimizer", 0)
    ko = r["phases"]["opt"]["kernel_s_by_class"].get("optimizer", 0)
    print("  optimizer multi_tensor kernels: clip %.1f ms, AdamW %.1f ms (clock %s MHz)" % (
        kc * 1e3, ko * 1e3, pw.get("opt", {}).get("sm_clock_mhz_median")))
