#!/usr/bin/env python3
"""Eager DTensor TP block host time on every H200 machine that measured it, against what the h200
preset prices (issues 14, 19: the H200 TP rows of every held-out set run 7-35% slower than priced).
For each parallel_run.py --host-split record of an eager TP layout (tp > 1, no compile, no SAC) in
the files given, the steady block host times (median over blocks 1..L-2 of the timed steps, as
bench/tphost_layer_cost.py takes them) beside plan's "host issue floor" of the same block
(`plan estimate --ops`, the record's model, tp, world size, seq, mbs, recompute). One file is one
lease, i.e. one machine. Standard library only; run from the repository root after building.
Usage: python3 bench/tphost_hosts.py FILE.jsonl ...
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def steady(xs):
    mid = [x for x in xs[1:-1] if x]
    return statistics.median(mid) if mid else None


def floor_ms(rec, tmp):
    cfg = json.load(open(os.path.join(ROOT, rec["config"])))
    if rec.get("layers"):
        cfg["num_hidden_layers"] = rec["layers"]
    fn = os.path.join(tmp, "m.json")
    json.dump(cfg, open(fn, "w"))
    w = rec.get("world_size") or rec["tp"]
    a = [os.path.join(ROOT, "build/cli/plan"), "estimate", "--model", fn, "--system", "h200",
         "--framework", "torchtitan", "--gpus", str(w), "--tp", str(rec["tp"]), "--seq",
         str(rec["seq"]), "--mbs", str(rec["mbs"]), "--gbs", str(rec["mbs"] * w // rec["tp"]),
         "--impl", "native", "--optimizer-impl", "fused", "--no-cuda-graphs", "--ops"]
    if rec.get("grad_ckpt"):
        a += ["--recompute", "full"]
    out = subprocess.run(a, capture_output=True, text=True,
                         env=dict(os.environ, PLAN_DATA_DIR=os.path.join(ROOT, "data"))).stdout
    m = re.search(r"host issue floor: fwd ([0-9.]+) bwd ([0-9.]+)", out)
    return (float(m.group(1)), float(m.group(2))) if m else (None, None)


def eager_tp_blocks(records, tmp):
    """(record, fwd block ms, plan's fwd floor ms, bwd block ms, plan's bwd floor ms) of every
    eager TP --host-split record on an H200 (no compile, no SAC) whose figures all exist."""
    for r in records:
        hs = r.get("host_split")
        if not hs or (r.get("tp") or 1) < 2 or r.get("compile") or r.get("sac"):
            continue
        if "H200" not in (r.get("gpu") or ""):
            continue
        f, b = steady(hs["fwd_block_s"]), steady(hs["bwd_block_s"])
        mf, mb = floor_ms(r, tmp)
        if f and b and mf and mb:
            yield r, f * 1e3, mf, b * 1e3, mb


def main():
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for fn in sys.argv[1:]:
            for r, f, mf, b, mb in eager_tp_blocks((json.loads(ln) for ln in open(fn)), tmp):
                rows.append((os.path.relpath(fn, ROOT), r["label"], f, mf, b, mb))
    print("%-58s %-30s %7s %7s %6s | %7s %7s %6s" % ("file (one machine)", "run", "fwd ms", "model",
                                                     "ratio", "bwd ms", "model", "ratio"))
    per = {}
    for fn, lab, f, mf, b, mb in rows:
        print("%-58s %-30s %7.2f %7.2f %6.2f | %7.2f %7.2f %6.2f" % (fn[-58:], lab[:30], f, mf, f / mf,
                                                                   b, mb, b / mb))
        per.setdefault(os.path.dirname(fn), []).append((f / mf, b / mb))
    print("\nper machine (median of its runs): fwd ratio, bwd ratio")
    for k, v in per.items():
        print("  %-60s %5.2f %5.2f  (%d runs)" % (k[-60:], statistics.median(x for x, _ in v),
                                                 statistics.median(y for _, y in v), len(v)))
    fm = [statistics.median(x for x, _ in v) for v in per.values()]
    bm = [statistics.median(y for _, y in v) for v in per.values()]
    print("median over machines: fwd %.2f, bwd %.2f (%d machines)" % (statistics.median(fm),
                                                                       statistics.median(bm), len(per)))


if __name__ == "__main__":
    main()
