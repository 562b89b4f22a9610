#!/usr/bin/env python3
"""moe_expert_gemm_model.py — bench/moe_expert_gemm.cu's measurements against the cost model's
pricing of Megatron-Core's expert GEMMs (costmodel/mcore_expert_gemm.h, issues 15 and 20).

For every group of G per-expert GEMMs timed on 4 streams (TE's multi_stream_cublas_gemm) it
prints the measured time and three models, all at the rate the card showed in the same run
(the 8192^3 bf16 reference at the start, burst clocks; FP8 x 1.827, the measured tensorwise
speedup of costmodel/precision.c):
  old     plan before: G x math + one kernel's fixed cost for the group (a grouped kernel)
  roof    G x (math + fixed cost): a GEMM per expert, output hidden
  model   G x (fixed cost + math less the reference's own output share + output bytes at HBM
          bandwidth), output bytes 2 per element (bf16 D), 4 (bf16 main_grad read+written),
          8 (fp32 main_grad): costmodel/mcore_expert_gemm.c, no fitted constant
with the h100 preset's HBM 3.35e12 x 0.91 and fixed cost 2.5 us (data/systems/h100.json).
Then each layer's six groups run back-to-back for 4 s at the power cap ("sustained"), against
the same models at the preset's sustained rate (0.70 x 989.4e12).
Errors are (model - measured) / measured. Standard library only.
Usage: python3 bench/moe_expert_gemm_model.py bench/results/moegemm_2026-11-28/run*/moe_expert_gemm.tsv
"""
import csv
import statistics
import sys

HBM = 3.35e12 * 0.91
FIXED = 2.5e-6
FP8 = 1.827
SUSTAINED = 989.4e12 * 0.70
OUT_BYTES = {"out_bf16": 2, "bf16_beta0": 2, "bf16_acc": 4, "fp32_acc": 8}


def models(G, m, n, k, ob, rate):
    math = 2.0 * m * n * k / rate
    share = rate / (8192 * HBM)
    old = G * math + FIXED
    roof = G * (math + FIXED)
    model = G * (FIXED + math * (1 - share) + m * n * ob / HBM)
    return old, roof, model


def layer_shapes(G, T, h, f, acc):
    """(m, n, k, out_bytes) of the six GEMMs (fc1 h -> 2f, fc2 f -> h), wgrads into main_grad"""
    return [(2 * f, T, h, 2), (h, T, f, 2), (f, T, h, 2), (f, h, T, acc), (h, T, 2 * f, 2),
            (h, 2 * f, T, acc)]


CASES = {  # name: G, T, h, f (bench/moe_expert_gemm.cu)
    "gptoss_h100_ep8": (16, 1024, 2880, 2880), "gptoss_T512": (16, 512, 2880, 2880),
    "gptoss_T2048": (16, 2048, 2880, 2880), "gptoss_T4096": (16, 4096, 2880, 2880),
    "qwen30b_ep16_fp8": (8, 4096, 2048, 768), "qwen30b_ep16_bf16": (8, 4096, 2048, 768),
    "qwen30b_pp2ep8_fp8": (16, 2048, 2048, 768), "dsv3_tp2ep64_fp8": (4, 4096, 7168, 2048),
    "qwen235b_tp2ep32_fp8": (4, 4096, 4096, 1536), "dense_like_8b_mlp": (1, 8192, 4096, 14336),
}


def main():
    errs = {}
    layer_rows = []
    for path in sys.argv[1:]:
        ref = None
        seen = set()
        for r in csv.reader(open(path), delimiter="\t"):
            if not r:
                continue
            if r[0].startswith("# ref 8192^3 bf16 start"):
                ref = float(r[0].split(":")[1].split()[0]) * 1e12
                continue
            if r[0].startswith("#") or r[0] == "case" or len(r) < 12:
                continue
            name, gemm, variant, G, streams = r[0], r[1], r[2], int(r[3]), r[4]
            fp8 = "fp8" in name
            if gemm == "layer6":
                if variant.startswith("sustained"):
                    layer_rows.append((path, name, float(r[8]) * 1e-6))
                continue
            key = (name, gemm, variant, streams)
            if streams != "4" or variant == "dense_all_rows" or key in seen:
                continue  # TE's 4 streams, the first pass of each
            seen.add(key)
            m, n, k, t = int(r[5]), int(r[6]), int(r[7]), float(r[8]) * 1e-6
            rate = ref * (FP8 if fp8 else 1)
            old, roof, model = models(G, m, n, k, OUT_BYTES[variant], rate)
            kind = "fp8" if fp8 else "bf16"
            for lab, v in (("old", old), ("roof", roof), ("model", model)):
                errs.setdefault((path, kind, lab), []).append(v / t - 1)
            print(f"{name:22s} {gemm:10s} {variant:10s} G {G:2d} measured {t * 1e6:8.1f} us  "
                  f"old {100 * (old / t - 1):+6.1f}%  roof {100 * (roof / t - 1):+6.1f}%  "
                  f"model {100 * (model / t - 1):+6.1f}%")
    print()
    for (path, kind, lab), e in sorted(errs.items()):
        a = sorted(abs(x) for x in e)
        print(f"{path}: {kind:4s} {lab:5s} groups {len(e):3d}  median |err| "
              f"{100 * statistics.median(a):5.1f}%  max {100 * a[-1]:5.1f}%  "
              f"median signed {100 * statistics.median(e):+5.1f}%")
    print()
    for path, name, t in layer_rows:
        G, T, h, f = CASES[name]
        rate = SUSTAINED * (FP8 if "fp8" in name else 1)
        tot = [0.0, 0.0, 0.0]
        for m, n, k, ob in layer_shapes(G, T, h, f, 4):
            for i, v in enumerate(models(G, m, n, k, ob, rate)):
                tot[i] += v
        print(f"{path}: {name:22s} layer sustained {t * 1e3:6.3f} ms  old {tot[0] * 1e3:6.3f} "
              f"({100 * (tot[0] / t - 1):+5.1f}%)  roof {tot[1] * 1e3:6.3f} "
              f"({100 * (tot[1] / t - 1):+5.1f}%)  model {tot[2] * 1e3:6.3f} "
              f"({100 * (tot[2] / t - 1):+5.1f}%)")


if __name__ == "__main__":
    main()
