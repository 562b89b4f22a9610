#!/usr/bin/env python3
"""res22: how close every single-GPU real run that the allocator replay covers comes to going out
of memory under the replay, against what happened. For each run: plan's verdict and need
(`plan estimate` through bench/realruns/fidelity.py --format json), the replay's verdict at the
device's usable memory (plan's capacity less framework_bytes: what cudaMalloc can give), and the
replay's threshold: the least usable memory (bisection, 0.01 GiB) at which no cudaMalloc fails
after release_cached_blocks (build/bench/reserved_replay ... CAPACITY_GIB). margin = usable -
threshold: negative means the replay goes out of memory on this device.

Usage (repository root, after building build/):
    python3 bench/results/res22_2026-11-29/margins.py FILE.jsonl ...
Standard library only.
"""
import json
import os
import subprocess
import sys

ROOT = os.getcwd()
REPLAY = os.path.join(ROOT, "build/bench/reserved_replay")
G = float(1 << 30)


def replay(rec, cap_gib):
    layers = rec.get("layers") if rec.get("layers") != rec.get("layers_full") else 0
    mode = ("native" if rec.get("impl") == "native" else "hf")
    if rec.get("grad_ckpt"):
        mode = "native-ckpt" if mode == "native" else "ckpt"
    opt = {"default": "foreach", "foreach": "foreach", "fused": "fused"}.get(rec.get("optimizer_impl", "default"))
    if opt is None:
        return None
    args = [REPLAY, os.path.join(ROOT, rec["config"]), str(rec["seq"]), str(rec["mbs"]), str(layers or 0),
            mode + "+" + opt]
    if cap_gib:
        args.append("%.4f" % cap_gib)
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return None
    p = out.stdout.split()
    d = dict(zip(p[0::2], p[1::2]))
    return d


def covered(rec):
    if rec.get("world_size", 1) != 1 or rec.get("compile") or rec.get("sac") or rec.get("precision") == "fp8":
        return False
    if rec.get("attention", "sdpa") != "sdpa" or rec.get("microbatches", 1) != 1:
        return False
    if "expandable_segments:True" in ((rec.get("env") or {}).get("PYTORCH_CUDA_ALLOC_CONF") or ""):
        return False
    return True


def main():
    rows = []
    for fn in sys.argv[1:]:
        recs = {}
        for ln in open(fn):
            ln = ln.strip()
            if ln.startswith("{"):
                r = json.loads(ln)
                recs[r.get("label")] = r
        fid = subprocess.run([sys.executable, "bench/realruns/fidelity.py", fn, "--format", "json"],
                             capture_output=True, text=True)
        try:
            fid_rows = json.loads(fid.stdout)
        except ValueError:
            print("margins: fidelity.py gave no table for %s: %s" % (fn, fid.stderr.strip()[-200:]),
                  file=sys.stderr)
            continue
        for row in fid_rows:
            rec = recs.get(row["run"])
            if rec is None or not covered(rec) or row.get("pred_capacity_bytes") is None:
                continue
            usable = (row["pred_capacity_bytes"] - row["pred_framework_bytes"]) / G
            full = replay(rec, 0)
            if full is None:
                continue
            at = replay(rec, usable)
            lo, hi = float(full["alloc"]), float(full["peak"]) + 0.01
            if replay(rec, lo)["oom"] == "no":
                hi = lo
            while hi - lo > 0.01:
                mid = (lo + hi) / 2
                if replay(rec, mid)["oom"] == "yes":
                    lo = mid
                else:
                    hi = mid
            rows.append((row["run"], row["gpu"], row["oom"], row["pred_feasible"], row["pred_need_bytes"] / G,
                         row["pred_capacity_bytes"] / G, usable, float(full["peak"]), at["oom"], hi, usable - hi))
    rows.sort(key=lambda r: r[-1])
    print("%-36s %4s %5s %5s %7s %7s %7s %8s %6s %7s %7s" % (
        "run", "gpu", "oom", "feas", "need", "cap", "usable", "replay", "r_oom", "thresh", "margin"))
    for r in rows:
        print("%-36s %4s %5s %5s %7.2f %7.2f %7.2f %8.2f %6s %7.2f %+7.2f" % (
            r[0], r[1], "yes" if r[2] else "no", "yes" if r[3] else "no", r[4], r[5], r[6], r[7], r[8], r[9], r[10]))


if __name__ == "__main__":
    main()
