#!/usr/bin/env python3
"""fwdbwd14: plan's per-op prices (plan estimate --ops, text) summed by kind against the kernel
time by class of one profiled H200 step (phase_profile_k.py's JSON: user annotations left out).
Per run: forward and backward, GEMM / attention / the rest (elementwise, loss, FSDP2 copies and
casts, memcpy) in ms per step. Standard library.
Usage: python3 compare_classes.py [--plan build/cli/plan] (from the repository root)
"""
import json, os, re, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PLAN = sys.argv[sys.argv.index("--plan") + 1] if "--plan" in sys.argv else os.path.join(ROOT, "build/cli/plan")
RUNS = [("ph_q3-4b.json", "qwen3-4b", 4096, 1), ("ph_l3b.json", "llama-3.2-3b", 2048, 8),
        ("ph_phi3.json", "phi-3-mini-4k", 2048, 4)]


def cls(name):
    n = name.lower()
    if "memcpy" in n or "memset" in n:
        return "other"
    if "sdpa" in n or "fmha" in n or "flash" in n or "cudnn" in n:
        return "attention"
    if "nvjet" in n or "gemm" in n or "cublas" in n or "cutlass" in n or "splitk" in n:
        return "gemm"
    return "other"


def plan_ops(cfg, seq, mbs):
    out = subprocess.run([PLAN, "estimate", "--model", os.path.join(ROOT, "bench/realruns/configs", cfg + ".json"),
                          "--system", "h200", "--framework", "fsdp2", "--gpus", "1", "--seq", str(seq),
                          "--mbs", str(mbs), "--gbs", str(mbs), "--recompute", "none", "--impl", "hf",
                          "--no-cuda-graphs", "--optimizer-impl", "foreach", "--ops"],
                         capture_output=True, text=True, check=True).stdout
    layers = json.load(open(os.path.join(ROOT, "bench/realruns/configs", cfg + ".json")))["num_hidden_layers"]
    tot = {}
    mult = 0
    for line in out.splitlines():
        if line.startswith("dense layer"):
            mult = layers
        elif line.startswith("loss head"):
            mult = 1
        m = re.match(r"\s+(\S+)\s+(\S+)\s+(compute|comm)\s+([\d.]+)\s+([\d.]+)", line)
        if m and mult:
            op, kind, stream, f, b = m.group(1), m.group(2), m.group(3), float(m.group(4)), float(m.group(5))
            c = kind if kind in ("gemm", "attention") else ("other" if stream == "compute" else "side")
            for ph, v in (("fwd", f), ("bwd", b)):
                tot[(ph, c)] = tot.get((ph, c), 0) + v * mult
        m = re.search(r"optimizer ([\d.]+) s", line)
        if m:
            tot["opt"] = float(m.group(1)) * 1e3
    return tot


print("%-16s %-4s %-10s %9s %9s %7s" % ("run", "pass", "class", "plan ms", "meas ms", "err"))
for fn, cfg, seq, mbs in RUNS:
    d = json.load(open(os.path.join(HERE, fn)))
    r = d["runs"][0]
    pl = plan_ops(cfg, seq, mbs)
    for ph in ("fwd", "bwd"):
        meas = {}
        for k, t, n in r["phases"][ph]["top"]:
            meas[cls(k)] = meas.get(cls(k), 0) + t * 1e3
        for c in ("gemm", "attention", "other"):
            p, mm = pl.get((ph, c), 0), meas.get(c, 0)
            print("%-16s %-4s %-10s %9.1f %9.1f %+6.1f%%" % (cfg, ph, c, p, mm, 100 * (p / mm - 1)))
        print("%-16s %-4s %-10s %9.1f %9s   (plan's FSDP2 copy-in on its own stream)" % (cfg, ph, "side", pl.get((ph, "side"), 0), "-"))
        print("%-16s %-4s %-10s %9s %9.1f   (measured wall, unprofiled, synced)" % (cfg, ph, "wall", "-", r["phase_wall_s"][ph] * 1e3))
    clipopt = sum(r["phases"][p]["kernel_s_by_class"].get("optimizer", 0) for p in ("clip", "opt")) * 1e3
    print("%-16s %-4s %-10s %9.1f %9.1f %+6.1f%%  (clip+opt multi_tensor kernels; walls %.1f)" % (
        cfg, "opt", "optimizer", pl["opt"], clipopt, 100 * (pl["opt"] / clipopt - 1),
        (r["phase_wall_s"]["clip"] + r["phase_wall_s"]["opt"]) * 1e3))
