#!/usr/bin/env python3
"""Predicted vs measured: one attention layer under PyTorch's context_parallel (issue 19, titanpub).

For each case of bench/results/titanpub_2026-11-28/{cp4,cp2}/results.jsonl with the Llama 3.1 8B
shape (h32kv8d128rep: 32 query heads, K/V repeated to 32, head dim 128), prices the same layer
with `plan estimate --framework torchtitan --ops` on the H100 preset whose attention table is
replaced by SDPA's FLASH rates (bench/published/sdpa_flash_h200.json, the backend measured) and
sums what runs on the compute stream for the attention: attn.core, the ring's merge kernels,
the exposed K/V all-gather and the last dK/dV exchange (cp.* ops on the compute stream),
forward + backward, no recompute. Measured: the slowest rank's forward + backward.

Usage (from the repository root, after ninja -C build):
  python3 bench/titanpub_cp_compare.py > bench/results/titanpub_2026-11-28/compare.txt
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RES = os.path.join(ROOT, "bench", "results", "titanpub_2026-11-28")
PLAN = os.path.join(ROOT, "build", "cli", "plan")


def system_file(tmp):
    d = json.load(open(os.path.join(ROOT, "data", "systems", "h100.json")))
    f = json.load(open(os.path.join(ROOT, "bench", "published", "sdpa_flash_h200.json")))
    d["attention_rates"] = f["attention_rates"]
    d["name"] = "h100-sdpa-flash"
    out = os.path.join(tmp, "h100-flash.json")
    json.dump(d, open(out, "w"))
    return out


def predicted_ms(sysf, cp, seq, rotate):
    a = [PLAN, "estimate", "--model", "8b", "--framework", "torchtitan", "--system", sysf,
         "--dp", "1", "--cp", str(cp), "--seq", str(seq), "--gbs", "1", "--mbs", "1",
         "--recompute", "none", "--sharding", "fsdp", "--cp-rotate", rotate, "--ops"]
    out = subprocess.run(a, capture_output=True, text=True,
                         env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data"))).stdout
    total, layer = 0.0, False
    for ln in out.splitlines():
        if ln.startswith("dense layer"):
            layer = True
            continue
        if ln.startswith("loss head"):
            break
        w = ln.split()
        if layer and len(w) >= 6 and w[2] == "compute" and (w[0] == "attn.core" or w[0].startswith("cp.")):
            total += float(w[3]) + float(w[4])
    return total


def main():
    with tempfile.TemporaryDirectory() as tmp:
        sysf = system_file(tmp)
        print("case                               measured ms  predicted ms   error")
        for d in ("cp4", "cp2"):
            for ln in open(os.path.join(RES, d, "results.jsonl")):
                r = json.loads(ln)
                if r["shape"] != "h32kv8d128rep":
                    continue
                cp = r["facts"]["world_size"]
                meas = 1e3 * max(a + b for a, b in zip(r["cp_fwd_s_ranks"], r["cp_bwd_s_ranks"]))
                pred = predicted_ms(sysf, cp, r["seq"], r["rotate"])
                print("CP %d seq %6d %-9s (%5d a GPU)  %8.1f  %12.1f  %+6.1f%%" % (
                    cp, r["seq"], r["rotate"], r["seq"] // cp, meas, pred, 100 * (pred / meas - 1)))


if __name__ == "__main__":
    sys.exit(main())
