#!/usr/bin/env python3
"""power_exponent.py — the exponent of kernel rate on kernel power (rate ~ P^beta) from the
H100 duty measurements already in the repository, per kernel class, and what it gives at a
500 W cap (torchtitan's Grand Teton H100s) against the rates measured at 700 W.

Data (one H100 80GB HBM3, 700 W cap, NVML energy counter, bench/gemm_power_mix.py):
  bench/results/duty_2026-11-27/points.jsonl       (bf16 GEMMs, 38 points; the fit of
                                                    bench/gemm_power_fit.py gives beta 0.39)
  bench/results/duty_2026-11-27/kinds/points.jsonl (bf16 GEMM, fp8 GEMM, SDPA forward)
Method, as bench/gemm_power_fit.py's model: a kernel alternating with GPU idle (121 W) at
time fraction d while the board holds the cap has x = (P_cap - (1-d) P_idle) / (d P_cap) of
the cap to itself; its rate over the back-to-back (capped) rate is r = x^beta, so
beta = ln r / ln x. Only points still at the cap (SW power cap reason in every sample).
A second form, the dynamic power only, ((P - P_idle) / (P_cap - P_idle))^beta', extrapolates
more steeply below the cap: printed as the other end of the band.
Run from the repository root: python3 bench/results/ttpub17_2026-11-28/power_exponent.py
"""
import json
import math

P_IDLE, P_CAP, P_GT = 121.0, 700.0, 500.0


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def rate(p):
    return p.get("tflops_median", p.get("tflops_mean"))


def betas(points, alone_label, prefix):
    alone = next(p for p in points if p["label"] == alone_label)
    out = []
    for p in points:
        if p.get("kind") != "pattern" or p.get("filler") != "idle":
            continue
        if not p["label"].startswith(prefix) or p["reason_sw_power_cap_frac"] < 1.0:
            continue
        d = p["duty_measured"]
        x = (P_CAP - (1 - d) * P_IDLE) / (d * P_CAP)
        xd = (P_CAP - (1 - d) * P_IDLE - d * P_IDLE) / (d * (P_CAP - P_IDLE))
        r = rate(p) / rate(alone)
        out.append((p["label"], d, x, r, math.log(r) / math.log(x), math.log(r) / math.log(xd)))
    return out


def main():
    duty = load("bench/results/duty_2026-11-27/points.jsonl")
    kinds = load("bench/results/duty_2026-11-27/kinds/points.jsonl")
    sets = [
        ("bf16 GEMM 4096x14336x4096 (call 1)", duty, "gemm_mlp_up_4096x14336x4096",
         "mlp_up_4096x14336x4096"),
        ("bf16 GEMM 8192^3 (call 1)", duty, "gemm_8192^3", "8192^3"),
        ("bf16 GEMM 4096x14336x4096 (kinds call)", kinds, "gemm_mlp_up_4096x14336x4096",
         "mlp_up_4096x14336x4096"),
        ("fp8 e4m3 GEMM 8192^3 (kinds call)", kinds, "gemm_fp8_e4m3_8192^3", "fp8_e4m3_8192^3"),
        ("SDPA forward, Llama 8B shape (kinds call)", kinds, "gemm_sdpa_fwd_l8b_t4096",
         "sdpa_fwd_l8b_t4096"),
    ]
    print("kernel | points at the cap | beta (total power) median | beta' (dynamic power) median")
    allb, alld = [], []
    for name, pts, alone, prefix in sets:
        b = betas(pts, alone, prefix)
        bs = sorted(v[4] for v in b)
        ds = sorted(v[5] for v in b)
        allb += bs
        alld += ds
        med = lambda v: v[len(v) // 2] if len(v) % 2 else 0.5 * (v[len(v) // 2 - 1] + v[len(v) // 2])
        print(f"{name} | {len(b)} | {med(bs):.3f} (range {bs[0]:.3f}-{bs[-1]:.3f}) | "
              f"{med(ds):.3f} (range {ds[0]:.3f}-{ds[-1]:.3f})")
        for v in b:
            print(f"    {v[0]}: d {v[1]:.3f} x {v[2]:.3f} r {v[3]:.4f} beta {v[4]:.3f} beta' {v[5]:.3f}")
    allb.sort()
    alld.sort()
    print()
    print(f"all {len(allb)} capped points: beta median {allb[len(allb) // 2]:.3f}, "
          f"beta' median {alld[len(alld) // 2]:.3f}")
    print()
    print("rate at a 500 W cap over the rate at the 700 W cap:")
    print(f"  (500/700)^(1/3)             = {(P_GT / P_CAP) ** (1 / 3):.4f}  (the rule before; an assumption)")
    print(f"  (500/700)^0.39              = {(P_GT / P_CAP) ** 0.39:.4f}  (bench/gemm_power_fit.py's fitted beta, kept)")
    for b in (0.52, 0.55):
        print(f"  (500/700)^{b:.2f}              = {(P_GT / P_CAP) ** b:.4f}  (H200's fitted beta 0.52 / kinds bf16 point)")
    bd = alld[len(alld) // 2]
    print(f"  ((500-121)/(700-121))^{bd:.3f} = {((P_GT - P_IDLE) / (P_CAP - P_IDLE)) ** bd:.4f}  "
          "(dynamic-power form, median beta')")


if __name__ == "__main__":
    main()
