#!/usr/bin/env python3
"""The law of indexing_backward_kernel over runs of duplicate indices, from device/sweep.jsonl
(bench/realruns/bias_gather_probe.py on one H200; README.md here).

ATen cuda/Indexing.cu launches a (32, 4) block per 4 sorted indices and a grid row per 128
features (32 lanes x 4); a warp whose index starts a run walks the run's duplicates serially,
each step reading the source row and reading + writing the destination row (128 features x e
bytes each). Law: time = longest run x (L0 + warps x 3 x 128 e / B), warps = distinct rows x
ceil(w / 128) (the warps in flight, each with a chain): L0 the step latency, B the rate their
steps share. Fitted on the sweep's rows with w >= 1024 (at w = 128 consecutive duplicates read
adjacent 256-byte rows and the step is faster: 0.59 us; GPT-OSS's widths are 2880 and 5760) by
least squares on the relative error; the longest run is the measured one. Also: the longest run
against moe_longest_run's u + sqrt(2 u (1 - k/E) ln E).

Usage: python3 bench/results/refit23_2026-11-29/fit_index_accum.py [OUT.txt]
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
K = 4


def main():
    rows = [json.loads(l) for l in open(os.path.join(HERE, "device", "sweep.jsonl"))]
    pts = [d for d in rows if d["kind"] != "hidden" and d["w"] >= 1024]
    out = []
    A = []
    for d in pts:
        n = d["rows"] * math.ceil(d["w"] / 128)
        t = d["kernel_us_median"] * 1e-6
        c = d["dup_max"]
        A.append((c / t, c * n * 768 / t))  # t = c L0 + c n 768 / B  -> (L0, 1/B)
    s11 = sum(a * a for a, _ in A)
    s12 = sum(a * b for a, b in A)
    s22 = sum(b * b for _, b in A)
    b1 = sum(a for a, _ in A)
    b2 = sum(b for _, b in A)
    det = s11 * s22 - s12 * s12
    L0 = (b1 * s22 - b2 * s12) / det
    invB = (s11 * b2 - s12 * b1) / det
    out.append(f"fit over {len(pts)} points: L0 = {L0 * 1e6:.3f} us a step, B = {1 / invB / 1e12:.3f} TB/s"
               " (a step moves 3 x 128 x 2 bytes)")
    out.append(f"{'kind':7s} {'E':>4s} {'w':>6s} {'T':>6s} {'warps':>6s} {'run':>5s} {'meas us':>8s}"
               f" {'law us':>8s} {'err':>6s}  {'run formula':>11s}")
    errs = []
    for d in rows:
        if d["kind"] == "hidden":
            continue
        n = d["rows"] * math.ceil(d["w"] / 128)
        c = d["dup_max"]
        p = c * (L0 + n * 3 * min(d["w"], 128) * 2 * invB)
        t = d["kernel_us_median"] * 1e-6
        u = d["S"] / d["rows"]
        runf = u + math.sqrt(2 * u * (1 - K / d["rows"]) * math.log(d["rows"]))
        e = p / t - 1
        if d["w"] >= 1024:
            errs.append(abs(e))
        out.append(f"{d['kind']:7s} {d['rows']:4d} {d['w']:6d} {d['T']:6d} {n:6d} {c:5d} {t * 1e6:8.1f}"
                   f" {p * 1e6:8.1f} {e * 100:+5.1f}%  {runf:7.0f} ({(runf / c - 1) * 100:+.1f}%)")
    errs.sort()
    out.append(f"|err| over the fitted points: median {errs[len(errs) // 2] * 100:.1f}%, max {errs[-1] * 100:.1f}%")
    for d in rows:
        if d["kind"] == "hidden":
            out.append(f"hidden-state gather backward (T {d['T']} rows of 2880, runs of exactly {K}):"
                       f" {d['kernel_us_median']:.1f} us; its bytes 3 S w 2 + 8 S at 0.62 x 4.8 TB/s:"
                       f" {(6 * d['S'] * 2880 + 8 * d['S']) / (0.62 * 4.8e12) * 1e6:.1f} us"
                       " (priced by bytes, unchanged)")
    text = "\n".join(out) + "\n"
    if len(sys.argv) > 1:
        open(sys.argv[1], "w").write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
