#!/usr/bin/env python3
"""Writes the calibration profiles data/systems/calibration/{b200,gb200-nvl72,gb300-nvl72}-
cudnn-9.13.json: the attention core as cuDNN 9.13 runs it on B200 and GB300, measured by NVIDIA
(GB200 derived from B200, below), for runs made
with that cuDNN (the NeMo 25.11 container's rows of tests/data/published_megatron_bridge_
blackwell.csv).

Why a profile and not the preset: the presets' tables (bench/blackwell_attention_table.py) are
cuDNN 9.22's (2026-04). cuDNN's Blackwell SDPA kernels got faster between releases; NVIDIA's
own benchmark at 9.13.1, 9.17, 9.19 and 9.22 (NVIDIA/cudnn-frontend benchmark/
sdpa_benchmark_training, history) gives for Llama-3.1 shapes (128 query / 8 KV heads, head dim
128, causal) at sequence 8192, forward / backward TFLOP/s:
    B200  9.13.1 1384 / 995                          (9.22: no B200 row)
    GB300 9.13.1 1716 / 1150, 9.17 1899 / 1292, 9.19 1887 / 1385, 9.22 1856 / 1435
    GB200 9.17 1584 / 1211, 9.19 1598 / 1311, 9.22 1574 / 1332      (9.13: no GB200 row)
so from 9.19 on the rates agree within a few percent (the presets hold for the 26.04.01 and
26.06 rows: Megatron-Bridge v0.4.2 / v0.5.0 build on nvcr.io/nvidia/pytorch:26.02 / 26.04),
while 9.13's backward is 0.78-0.80 of 9.22's. Megatron-Bridge v0.2.0 (the 25.11 rows' recipes)
builds on nvcr.io/nvidia/pytorch:25.09-py3 (docker/Dockerfile.ci at tag v0.2.0), the container
the 9.13.1 benchmark ran in (its README: "nvcr.io/nvidia/pytorch:25.09-py3, where cuDNN 9.13.1
was used"). ASSUMPTION: the NeMo 25.11 container carries that base's cuDNN.

Source: NVIDIA/cudnn-frontend commit bb37575d103b9974bc619a193dc1a96d835dc117 (2025-10-07),
benchmark/sdpa_benchmark_training/artifacts/sdpa_fp8_benchmark_results_NVIDIA_{B200,GB300}.csv,
the "bf16" rows: cuDNN frontend graphs called directly (the path Transformer Engine's fused
attention takes; the bf16 file's pyt_cudnn rows go through torch SDPA and run a few percent
slower in the backward), batch 1, 128 query heads, 8 KV heads, head dim 128, causal, sequence
512..131072, CUDA events, median of 10 after 5 warm-ups, free clock (burst: derated at load like
the presets' tables, costmodel/burst_sustain.h). Not copied into the tree: fetch the repository
at that commit and pass the two files.

FLOPs as the benchmark counts them and as plan does: forward 4 b h s^2 d / 2 (causal), backward
2.5x (checked: B200 s 8192 forward 2.199e12 / 1.589 ms = 1384 TFLOP/s as the file says).

GB200 has no 9.13 row: its profile is B200's measurement x 2062/1965 (GB200 / B200
device-reported maximum SM clock, ml-engineering compute/accelerator/README.md at 744d01e), the
rule bench/blackwell_attention_table.py applies the other way (B200 from GB200), an ASSUMPTION.
Cross-check: GB200's own 9.17 measurement (cudnn-frontend b372d39, 1584 / 1211 at s 8192) times
GB300's 9.13.1 / 9.17 ratio (1716 / 1899, 1150 / 1292) gives 1431 / 1078, against
1384.2 x 2062 / 1965 = 1452.5 and 994.9 x 2062 / 1965 = 1044.0 from B200 (within 2% / 4%).

Only the (causal, head dim 128) group is measured; the profile replaces that group of the preset
and keeps the others (no-mask and head dim 192 stay cuDNN 9.22's: costmodel/profile.c).

Usage: python3 bench/blackwell_attention_cudnn913.py B200.csv GB300.csv [data/systems/calibration]
"""
import csv
import json
import os
import sys

COMMIT = "bb37575d103b9974bc619a193dc1a96d835dc117"
SRC = ("NVIDIA/cudnn-frontend " + COMMIT + " benchmark/sdpa_benchmark_training/artifacts/"
       "sdpa_fp8_benchmark_results_NVIDIA_{gpu}.csv")


def points(path, scale=1.0):
    pts = []
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["precision"] != "bf16" or r["is_causal"] != "True":
                continue
            rows = int(r["batch_size"]) * int(r["num_q_heads"])
            pts.append([int(r["head_dim"]), "causal", rows, int(r["q_seqlen"]),
                        round(float(r["fwd_tflops_per_sec"]) * scale, 1),
                        round(float(r["bwd_tflops_per_sec"]) * scale, 1)])
    pts.sort(key=lambda p: p[3])
    return pts


GB200_OVER_B200 = 2062.0 / 1965.0
SCALED = (" x 2062/1965: GB200 has no cuDNN 9.13 measurement; B200's times the ratio of the "
          "device-reported maximum SM clocks (ml-engineering compute/accelerator/README.md at "
          "744d01e), the rule bench/blackwell_attention_table.py applies the other way: "
          "ASSUMPTION (cross-check against GB200's own cuDNN 9.17 rates times GB300's 9.13/9.17 "
          "ratio: within 2% forward, 4% backward at s 8192)")


# Transformer Engine 2.9's scale swizzles, the same container's (bench/results/bw12_2026-11-28,
# costmodel/precision.c "Scale swizzles"): one GB200 measurement, used for all three systems.
SWIZZLE_GPU = {"scale_swizzle_kernel_s": 1.1e-6, "scale_swizzle_bytes_per_s": 9.83e11}


def swizzle_source(base):
    where = "measured on GB200." if base == "gb200-nvl72" else (
        "B200 and GB300 as GB200 (no other measurement).")
    return ("Megatron-Bridge v0.2.0 pins transformer-engine release_v2.9 (pyproject.toml lines "
            "83, 119), whose GEMM swizzles each MXFP8/NVFP4 operand's scales in a kernel of its "
            "own (transformer_engine/pytorch/csrc/extensions/gemm.cpp lines 237-240, "
            "csrc/util.cpp lines 12-76 at v2.9; GEMM-ready scales from TE 99df881, v2.12). "
            "Duration: NVIDIA/TransformerEngine PR #3519 (2026-09-15), GB200, CUDA-graph-captured "
            "microbenchmarks of the direct swizzle: 1.1-4.3 us over shapes 64x64 to 16384x4128 in "
            "both orientations: scale_swizzle_kernel_s = 1.1 us (the small shapes); "
            "scale_swizzle_bytes_per_s = 2 x 16384 x 129 B (read + write of the 16384x4128 MXFP8 "
            "operand's scales) / 4.3 us = 9.83e11 B/s. ASSUMPTIONS: the range's ends belong to "
            "its smallest and largest shape; TE 2.9's kernel (the one the PR keeps for padded "
            "scales) moves the same bytes as fast; " + where +
            " Why: bench/results/bw12_2026-11-28/README.md.")


def profile(base, gpu, pts, scaled=False):
    src = SRC.format(gpu=gpu)
    how = f"NVIDIA's measurement on one {gpu}" + (SCALED if scaled else "")
    return {
        "calibration_of": base,
        "description": (f"{base} with the attention core as cuDNN 9.13.1 runs it ({how}): for "
                        "runs in containers built on nvcr.io/nvidia/pytorch:25.09 (NeMo 25.11 / "
                        "Megatron-Bridge v0.2.0); and Transformer Engine 2.9's scale swizzle "
                        "before every block-scaled GEMM (gpu.scale_swizzle_*), the same "
                        "container's TE."),
        "sources": {
            "attention_rates": (
                f"{src}{SCALED if scaled else ''}, bf16 rows (cuDNN frontend graphs, the path of Transformer Engine's "
                "fused attention), cuDNN 9.13.1 in nvcr.io/nvidia/pytorch:25.09-py3 (the "
                "benchmark's README at that commit), batch 1, 128 query / 8 KV heads, head dim "
                "128, causal, CUDA events, median of 10 after 5 warm-ups, free clock: burst "
                "figures, derated at load with the base preset's gpu.sustained_ref_* "
                "(costmodel/burst_sustain.h). Replaces the preset's (causal, head dim 128) "
                "group, cuDNN 9.22's; the other groups stay. Written by "
                "bench/blackwell_attention_cudnn913.py; why: bench/results/bw10_2026-11-28/"
                "README.md."),
            "scale_swizzle": swizzle_source(base),
        },
        "gpu": dict(SWIZZLE_GPU),
        "attention_rates": {
            "source": src + " (cuDNN 9.13.1, bf16, cuDNN frontend)" + (
                " x 2062/1965 (GB200 from B200: ASSUMPTION)" if scaled else ""),
            "columns": ["head_dim", "mask", "batch_x_heads", "seq", "fwd_tflops",
                        "bwd_tflops"],
            "flops": "forward 4*b*h*s*s*d, x0.5 for causal; backward 2.5x the forward",
            "points": pts,
        },
    }


def write(path, obj):
    # one point a line, as the presets write them
    text = json.dumps({k: v for k, v in obj.items() if k != "attention_rates"}, indent=2)
    text = text[:text.rstrip().rfind("}")].rstrip()
    att = obj["attention_rates"]
    body = [',\n  "attention_rates": {']
    for key in ("source", "columns", "flops"):
        body.append(f'    {json.dumps(key)}: {json.dumps(att[key])},')
    body.append('    "points": [')
    body.append(",\n".join(f"      {json.dumps(p)}" for p in att["points"]))
    body.append("    ]\n  }\n}\n")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text + "\n".join(body))
    os.replace(tmp, path)


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: blackwell_attention_cudnn913.py B200.csv GB300.csv [outdir]: the two "
                 "sdpa_fp8_benchmark_results_NVIDIA_*.csv of NVIDIA/cudnn-frontend at " + COMMIT)
    out = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "data", "systems", "calibration")
    for csv_path, base, gpu, scale in ((sys.argv[1], "b200", "B200", 1.0),
                                       (sys.argv[1], "gb200-nvl72", "B200", GB200_OVER_B200),
                                       (sys.argv[2], "gb300-nvl72", "GB300", 1.0)):
        pts = points(csv_path, scale)
        if len(pts) < 2:
            sys.exit(f"{csv_path}: no bf16 causal rows; pass the sdpa_fp8_benchmark_results file")
        write(os.path.join(out, f"{base}-cudnn-9.13.json"),
              profile(base, gpu, pts, scaled=scale != 1.0))


if __name__ == "__main__":
    main()
