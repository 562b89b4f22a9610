#!/usr/bin/env python3
"""Adds the "sliding" points (the fused kernel's own 128-key sliding window) to the Blackwell
presets' "attention_rates" tables, from NVIDIA's cuDNN SDPA training benchmark of GPT-OSS's
attention (NVIDIA/cudnn-frontend fb682ce761a2705e40f9b5d528737a3e0eb33cec
benchmark/sdpa_benchmark_training/results/gpt_oss/{gb200,gb300}/gpt_oss_2026042*.csv, copied
unchanged into bench/published/cudnn_sdpa_training_2026-04-24/gpt_oss_{gb200,gb300}.csv): cuDNN
9.22 (frontend 1.21.1), bf16, non-deterministic backward, batch 2, 128 query and 128 KV heads,
head dim 64, "top_left" causal mask with sliding_window_size 128, sequence 2048..32768, 10
iterations (burst; the presets derate at load, as the table's other points).

Rates over the window's FLOPs, as the benchmark's tflops column and plan's flops.c count them:
forward 2 b h s (d_qk + d_v) (w - w^2 / (2 s)), backward 2.5x; computed here from time_ms (the
tflops column is rounded to integers; checked against it within 1%). B200 and B300 take GB200's
and GB300's rates times the clock ratios bench/blackwell_attention_table.py uses for their
other points. Run after bench/blackwell_attention_table.py, which rewrites the tables without
them. Why: bench/results/moe13_2026-11-28/README.md.

Usage: python3 bench/sliding_attention_points.py [data/systems]
"""
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "published", "cudnn_sdpa_training_2026-04-24")
WINDOW = 128  # costmodel/attention_rate.h ATTN_SLIDING_KEYS
PRESETS = {
    "gb200-nvl72": ("gb200", 1.0),
    "gb300-nvl72": ("gb300", 1.0),
    "b200": ("gb200", 1965.0 / 2062.0),
    "b300": ("gb300", 1965.0 / 2070.0),
}


def points(gpu, scale):
    pts = {}
    with open(os.path.join(SRC, f"gpt_oss_{gpu}.csv")) as f:
        for r in csv.DictReader(f):
            if (r["data_type"] != "bfloat16" or r["deterministic_bwd"] != "False"
                    or r["success"] != "True" or r["attn_mask"] != "top_left"
                    or int(r["sliding_window_size"]) != WINDOW):
                continue
            b, s, h = int(r["batch_size"]), int(r["q_seqlen"]), int(r["num_q_heads"])
            d = int(r["head_dim_qk"]) + int(r["head_dim_vo"])
            fl = 2.0 * b * h * s * d * (WINDOW - WINDOW * WINDOW / (2.0 * s))
            if r["profile_pass"] == "bwd":
                fl *= 2.5
            tf = fl / (float(r["time_ms"]) * 1e-3) / 1e12
            assert abs(tf / float(r["tflops"]) - 1) < 0.01, (r, tf)
            key = (int(r["head_dim_qk"]), b * h, s)
            pts.setdefault(key, {})[r["profile_pass"]] = tf * scale
    return [[hd, "sliding", rows, s, round(v["fwd"], 1), round(v["bwd"], 1)]
            for (hd, rows, s), v in sorted(pts.items()) if "fwd" in v and "bwd" in v]


def add(path, pts):
    with open(path) as f:
        lines = f.read().split("\n")
    lines = [x for x in lines if '"sliding"' not in x]
    # the table's points end at the first "    ]" after "    \"points\": ["
    start = next(i for i, x in enumerate(lines) if x.strip() == '"points": [')
    end = next(i for i in range(start, len(lines)) if lines[i] == "    ]")
    body = [x.rstrip(",") for x in lines[start + 1:end]]
    body += [f"      {json.dumps(p)}" for p in pts]
    text = "\n".join(lines[:start + 1] + [",\n".join(body)] + lines[end:])
    json.loads(text)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    sysdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "data", "systems")
    for preset, (gpu, scale) in PRESETS.items():
        pts = points(gpu, scale)
        add(os.path.join(sysdir, preset + ".json"), pts)
        print(f"{preset}: {len(pts)} sliding points", pts)


if __name__ == "__main__":
    main()
