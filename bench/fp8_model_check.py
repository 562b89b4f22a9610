"""The cost model's GEMM time (costmodel/compute.c compute_gemm_s / compute_gemm_lp_s with the
H100 preset and the ratios of costmodel/precision.c) against the FP8 measurements of
bench/fp8_gemm.py, shape by shape. Runs anywhere (no GPU): it reads the TSV.

Usage: python3 bench/fp8_model_check.py [bench/results/fp8_h100/fp8_gemm_graph_h100.tsv]
"""
import statistics
import sys

PEAK_FP8, PEAK_BF16 = 1978.9e12, 989.4e12          # data/systems/h100.json
EFF, OVERHEAD_S, HBM = 0.70, 2.5e-6, 3.35e12 * 0.91  # gemm_efficiency_max, gemm_overhead_s, hbm
RATIOS = {"tensorwise": 0.9135, "blockwise": 0.8265}  # costmodel/precision.c


def model_s(m, n, k, ratio=None):
    flops = 2 * m * n * k
    if ratio is None:
        t_math, nbytes = flops / (PEAK_BF16 * EFF), 2 * (m * k + k * n + m * n)
    else:
        t_math, nbytes = flops / (PEAK_FP8 * EFF * ratio), (m * k + k * n) + 2 * m * n
    return max(t_math, nbytes / HBM) + OVERHEAD_S


path = sys.argv[1] if len(sys.argv) > 1 else "bench/results/fp8_h100/fp8_gemm_graph_h100.tsv"
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.startswith("gemm\t")]
print("shape\tm\tn\tk\tbf16_err\ttensorwise_err\tblockwise_err")
errs = {"bf16": [], "tensorwise": [], "blockwise": []}
for r in rows:
    m, n, k = float(r[2]), float(r[3]), float(r[4])
    meas = {"bf16": float(r[5]), "tensorwise": float(r[7]), "blockwise": float(r[11])}
    e = {"bf16": (model_s(m, n, k) - meas["bf16"]) / meas["bf16"]}
    for name, ratio in RATIOS.items():
        e[name] = (model_s(m, n, k, ratio) - meas[name]) / meas[name]
    for name in errs:
        errs[name].append((e[name], 2 * m * n * k))
    print(f"{r[1]}\t{m:.0f}\t{n:.0f}\t{k:.0f}\t{e['bf16']:+.3f}\t{e['tensorwise']:+.3f}\t{e['blockwise']:+.3f}")
for name, v in errs.items():
    a = [abs(x) for x, _ in v]
    big = [abs(x) for x, f in v if f >= 1e12]
    print(f"# {name}: {len(v)} shapes, median |err| {statistics.median(a) * 100:.1f}%, "
          f"range {min(x for x, _ in v) * 100:+.1f}% .. {max(x for x, _ in v) * 100:+.1f}%; "
          f"shapes >= 1 TFLOP: median |err| {statistics.median(big) * 100:.1f}%")
