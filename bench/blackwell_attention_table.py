#!/usr/bin/env python3
"""Writes the "attention_rates" tables of the Blackwell presets from NVIDIA's own cuDNN SDPA
training benchmark (NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training, results of
2026-04-24 at commit fb682ce761a2705e40f9b5d528737a3e0eb33cec, copied unchanged into
bench/published/cudnn_sdpa_training_2026-04-24/): cuDNN 9.22 (frontend 1.21.1), bf16,
non-deterministic backward, batch 2, sequence 2048..32768, on one NVIDIA GB200 and one NVIDIA
GB300; Llama 3.1 (64 query heads, 8 KV heads, head dim 128) and DeepSeek-V3 (128 heads, head dim
192 for QK and 128 for V) shapes, causal ("top_left") and no mask.

The rates are written as measured (burst: 10 iterations each, the benchmark's num_iterations);
the presets' gpu.sustained_ref_* fields derate them to the power cap at load
(costmodel/burst_sustain.h). B200 and B300 have no row there: B200 is GB200's die at a lower
clock and cap, so its table is GB200's times the ratio of the device-reported maximum SM clocks
(1965 / 2062 MHz, ml-engineering compute/accelerator/README.md at 744d01e; compute-bound
kernels scale with the clock), and B300 likewise GB300's times 1965 / 2070 (GB300's 2070 MHz:
facebookexperimental/triton PR #2023; B300's own maximum is not published: B200's taken, an
ASSUMPTION).

FLOPs as the benchmark counts them and as plan does (costmodel/flops.c
flops_attention_core_forward_layer): forward 2 b h s^2 (d_qk + d_v), half for causal; backward
2.5x. So the benchmark's tflops column is the table's fwd_tflops / bwd_tflops directly.

Usage: python3 bench/blackwell_attention_table.py [data/systems]   (rewrites the four presets'
"attention_rates" key in place, keeping every other key and its order)
"""
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "published", "cudnn_sdpa_training_2026-04-24")
COMMIT = "fb682ce761a2705e40f9b5d528737a3e0eb33cec"
MASKS = {"top_left": "causal", "no_mask": "none"}

# preset -> (measured GPU, clock ratio applied, note)
PRESETS = {
    "gb200-nvl72": ("gb200", 1.0, "measured on NVIDIA GB200"),
    "gb300-nvl72": ("gb300", 1.0, "measured on NVIDIA GB300"),
    "b200": ("gb200", 1965.0 / 2062.0,
             "GB200's rates x 1965/2062 (B200 / GB200 device-reported maximum SM clock, "
             "ml-engineering compute/accelerator/README.md at 744d01e)"),
    "b300": ("gb300", 1965.0 / 2070.0,
             "GB300's rates x 1965/2070 (GB300 2070 MHz: facebookexperimental/triton PR #2023; "
             "B300's maximum not published, B200's 1965 taken: ASSUMPTION)"),
}


def points(gpu, scale):
    pts = {}
    for model in ("llama3.1", "dsv3"):
        with open(os.path.join(SRC, f"{model}_{gpu}.csv")) as f:
            for r in csv.DictReader(f):
                if (r["data_type"] != "bfloat16" or r["deterministic_bwd"] != "False"
                        or r["success"] != "True" or r["sliding_window_size"]):
                    continue
                key = (int(r["head_dim_qk"]), MASKS[r["attn_mask"]],
                       int(r["batch_size"]) * int(r["num_q_heads"]), int(r["q_seqlen"]))
                pts.setdefault(key, {})[r["profile_pass"]] = float(r["tflops"]) * scale
    return [[hd, m, rows, s, round(v["fwd"], 1), round(v["bwd"], 1)]
            for (hd, m, rows, s), v in sorted(pts.items()) if "fwd" in v and "bwd" in v]


def write_section(path, section):
    """Puts "attention_rates" last in the file as text (the preset's other lines untouched,
    so a change elsewhere in the file merges cleanly), replacing an earlier one."""
    with open(path) as f:
        text = f.read()
    cut = text.find(',\n  "attention_rates": {')
    body = text[:cut] if cut >= 0 else text.rstrip()[:-1].rstrip()
    lines = [',\n  "attention_rates": {']
    for key in ("source", "columns", "flops"):
        lines.append(f'    {json.dumps(key)}: {json.dumps(section[key])},')
    lines.append('    "points": [')
    pts = [f"      {json.dumps(p)}" for p in section["points"]]
    lines.append(",\n".join(pts))
    lines.append("    ]\n  }\n}\n")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(body + "\n".join(lines))
    os.replace(tmp, path)


def main():
    sysdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "data", "systems")
    for preset, (gpu, scale, note) in PRESETS.items():
        path = os.path.join(sysdir, preset + ".json")
        with open(path) as f:
            d = json.load(f)
        d["attention_rates"] = {
            "source": (f"NVIDIA/cudnn-frontend {COMMIT} benchmark/sdpa_benchmark_training/"
                       f"results/{{llama3.1,dsv3}}/{gpu}/*_2026042*.csv (copied in "
                       "bench/published/cudnn_sdpa_training_2026-04-24/), tabulated by "
                       "bench/blackwell_attention_table.py: cuDNN 9.22 SDPA, bf16, batch 2, "
                       f"10 iterations (burst; derated at load, gpu.sustained_ref_*); {note}"),
            "columns": ["head_dim", "mask", "batch_x_heads", "seq", "fwd_tflops", "bwd_tflops"],
            "flops": "forward 2*b*h*s*s*(d_qk+d_v), x0.5 for causal; backward 2.5x the forward",
            "points": points(gpu, scale),
        }
        write_section(path, d["attention_rates"])
        print(f"{preset}: {len(d['attention_rates']['points'])} points")


if __name__ == "__main__":
    main()
