#!/usr/bin/env python3
"""compare.py — bwmoe23's H200 measurements (bench/bwmoe23_moe_pieces.py, call1/pieces.json)
beside what plan prices for the same pieces on the h200 preset (`plan estimate --ops`, the MoE
layer's items per micro-batch). Run from the repository root after building:
    python3 bench/results/bwmoe23_2026-11-29/compare.py [pieces.json] [build/cli/plan]
Analysis only.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PIECES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "call1", "pieces.json")
PLAN = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build", "cli", "plan")

# the layout whose MoE layer has the measured set's shapes: model, GPUs, EP, MBS
LAYOUT = {
    "qwen3-30b ep8 mbs4 (B200 26.04.01)": ("qwen3-30b-a3b", 8, 8, 4),
    "qwen3-30b ep8 mbs8 (B300/GB300 26.04.01)": ("qwen3-30b-a3b", 8, 8, 8),
    "qwen3-30b ep8 mbs1 (H100 pp2 26.02.01)": ("qwen3-30b-a3b", 8, 8, 1),
    "qwen3-30b ep16 mbs1 (H100 26.04.01)": ("qwen3-30b-a3b", 16, 16, 1),
    "deepseek-v3 ep8 mbs2 (B300)": ("deepseek-v3", 64, 8, 2),
    "deepseek-v3 ep64 mbs1 (H100)": ("deepseek-v3", 64, 64, 1),
}


def plan_ops(model, gpus, ep, mbs, fp8):
    args = [PLAN, "estimate", "--model", model, "--gpus", str(gpus), "--system", "h200",
            "--ep", str(ep), "--etp", "1", "--mbs", str(mbs), "--gbs", str(8 * mbs * gpus),
            "--seq", "4096", "--moe-dispatcher", "alltoall", "--grad-reduce-bf16", "--ops"]
    args += ["--precision", "fp8", "--fp8-recipe", "tensorwise"] if fp8 else ["--precision", "bf16"]
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT).stdout
    ops, in_moe = {}, False
    for line in out.splitlines():
        if line.startswith("MoE layer"):
            in_moe = True
        elif in_moe and line and not line.startswith(" "):
            break
        w = line.split()
        if in_moe and len(w) >= 5 and w[1] in ("gemm", "elementwise", "ep", "attention"):
            ops[w[0]] = (float(w[3]), float(w[4]))
    return ops


def main():
    j = json.load(open(PIECES))
    print("facts:", json.dumps(j["facts"]))
    print("\nExpert GEMMs per micro-batch (ms): measured torch on H200 vs plan's 'experts' op (h200)")
    print(f"{'set':42s} {'E':>3s} {'M':>6s} | {'loop1':>6s} {'loop4':>6s} {'dense':>6s} "
          f"{'grp':>6s} {'plan':>6s} {'l4/pl':>6s} | {'bwd4':>6s} {'plan':>6s} {'b/pl':>6s} | "
          f"{'fp8l4':>6s} {'fp8dn':>6s} {'plan8':>6s} {'8/pl':>6s} | {'q_loop':>6s} {'q_one':>6s}")
    for r in j["experts"]:
        if "error" in r:
            print(r["name"], r["error"])
            continue
        m = LAYOUT[r["name"]]
        pb, p8 = plan_ops(*m, False), plan_ops(*m, True)
        ms = lambda k: r.get(k, float("nan")) * 1e3  # noqa: E731
        ef, eb = pb["experts"]
        f8 = p8["experts"][0]
        print(f"{r['name']:42s} {r['E']:3d} {r['M']:6d} | {ms('loop1_s'):6.3f} {ms('loop4_s'):6.3f} "
              f"{ms('dense_s'):6.3f} {ms('grouped_s'):6.3f} {ef:6.3f} {ms('loop4_s') / ef:6.3f} | "
              f"{ms('bwd4_s'):6.3f} {eb:6.3f} {ms('bwd4_s') / eb:6.3f} | {ms('fp8loop4_s'):6.3f} "
              f"{ms('fp8dense_s'):6.3f} {f8:6.3f} {ms('fp8loop4_s') / f8:6.3f} | "
              f"{ms('q_loop_s'):6.3f} {ms('q_one_s'):6.3f}")
        per_exp_us = (r["loop4_s"] - r["dense_s"]) / r["E"] * 1e6
        q_us = (r["q_loop_s"] - r["q_one_s"]) / r["E"] * 1e6
        print(f"{'':42s}     per local expert: bf16 fwd loop - dense {per_exp_us:+.1f} us, "
              f"quantize loop - once {q_us:+.1f} us")
    print("\nGPU alone (each loop captured in a CUDA graph, replays timed), ms per micro-batch")
    print(f"{'set':42s} | {'l1_g':>6s} {'l4_g':>6s} {'dn_g':>6s} {'plan':>6s} {'l4/pl':>6s} | "
          f"{'b1_g':>6s} {'b4_g':>6s} {'dnb_g':>6s} {'plan':>6s} {'b4/pl':>6s} | {'f8l4g':>6s} "
          f"{'f8dng':>6s} {'plan8':>6s} {'8/pl':>6s} | per expert us: fwd bwd fp8 split")
    for r in j["experts"]:
        if "error" in r or "loop1_g_s" not in r:
            continue
        m = LAYOUT[r["name"]]
        pb, p8 = plan_ops(*m, False), plan_ops(*m, True)
        ms = lambda k: r.get(k, float("nan")) * 1e3  # noqa: E731
        ef, eb = pb["experts"]
        f8 = p8["experts"][0]
        E = r["E"]
        pe = lambda a, b: (r.get(a, float("nan")) - r.get(b, float("nan"))) / E * 1e6  # noqa: E731
        print(f"{r['name']:42s} | {ms('loop1_g_s'):6.3f} {ms('loop4_g_s'):6.3f} {ms('dense_g_s'):6.3f} "
              f"{ef:6.3f} {ms('loop4_g_s') / ef:6.3f} | {ms('bwd1_g_s'):6.3f} {ms('bwd4_g_s'):6.3f} "
              f"{ms('dense_bwd_g_s'):6.3f} {eb:6.3f} {ms('bwd4_g_s') / eb:6.3f} | "
              f"{ms('fp8loop4_g_s'):6.3f} {ms('fp8dense_g_s'):6.3f} {f8:6.3f} "
              f"{ms('fp8loop4_g_s') / f8:6.3f} | {pe('loop4_g_s', 'dense_g_s'):+6.1f} "
              f"{pe('bwd4_g_s', 'dense_bwd_g_s'):+6.1f} {pe('fp8loop4_g_s', 'fp8dense_g_s'):+6.1f} "
              f"{pe('split_e_g_s', 'split_1_g_s'):+5.2f}")
    print("\nPer-token pieces (ms per micro-batch)")
    for r in j["tokens"]:
        print(json.dumps({k: (round(v * 1e3, 4) if k.endswith("_s") else v) for k, v in r.items()}))
    print("host time per torch.mm in a per-expert loop (GPU busy): "
          f"{j['host_per_gemm_s'] * 1e6:.2f} us")


if __name__ == "__main__":
    main()
