#!/usr/bin/env python3
"""Launches per decoder layer and pass: what plan's host issue queue counts (costmodel/
host_dispatch.c) against what torch.profiler saw in the seq-64 steps of call1 (host23_probe.py,
host23_layers.py: CUDA runtime calls that put work on a stream, FSDP2's unshard, copies and
reduce-scatter included). No GPU.

plan's count: `plan estimate --ops` at seq 64, mbs 1 (the queue is host-bound there, so each
layer's "host issue floor" is its host time) on a copy of data/ whose h200 preset charges every
launch 1 ms (host.eager_launch_s = host.eager_inner_launch_s = 1e-3) and no chunk_cat host time
(host.chunk_cat_block_s = _large_s = 0): the floor in ms is the number of launches.
Also plan's host time per layer with the preset as shipped, against the measured host time of
the steady layers (profiled, so a little slow) and the unprofiled pass totals of call1.
Usage: python3 bench/results/host23_2026-11-29/compare_counts.py   (from the repository root)
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.getcwd()
HERE = os.path.dirname(os.path.abspath(__file__))
PLAN = os.path.join(ROOT, "build", "cli", "plan")
CASES = (  # config, layers cut, --attention, call1 trace tag, probe spec
    ("llama-3.2-1b", 0, "flash", "llama-3.2-1b-s2048-b2-sdpa", "llama-3.2-1b:2048:2"),
    ("qwen3-1.7b", 0, "unfused", "qwen3-1.7b-s2048-b2-eager", "qwen3-1.7b:2048:2:0:eager"),
    ("deepseek-v2-lite", 8, "flash", "deepseek-v2-lite-s2048-b4-L8-sdpa", "deepseek-v2-lite:2048:4:8"),
)


def floors(data_dir, cfg):
    """{'dense'|'moe': (fwd ms, bwd ms)} from plan estimate --ops at seq 64"""
    a = [PLAN, "estimate", "--model", cfg[0], "--system", "h200", "--framework", "fsdp2",
         "--gpus", "1", "--seq", "64", "--mbs", "1", "--gbs", "1", "--recompute", "none",
         "--impl", "hf", "--no-cuda-graphs", "--optimizer-impl", "foreach", "--attention", cfg[2],
         "--ops"]
    out = subprocess.run(a, capture_output=True, text=True,
                         env=dict(os.environ, PLAN_DATA_DIR=data_dir)).stdout
    res, kind = {}, None
    for ln in out.splitlines():
        if ln.startswith("dense layer"):
            kind = "dense"
        elif ln.startswith("MoE layer"):
            kind = "moe"
        elif ln.startswith("loss head"):
            kind = None
        m = re.search(r"host issue floor: fwd ([\d.]+) bwd ([\d.]+)", ln)
        if m and kind:
            res[kind] = (float(m.group(1)), float(m.group(2)))
    return res


def measured(tag, moe_cut):
    """median launches and host ms of the steady layers (not the first, not the last)"""
    with open(os.path.join(HERE, "call1", "layers-trace64-%s.json" % tag)) as f:
        rows = json.load(f)["layers"]
    n = max(r["layer"] for r in rows)
    out = {}
    for kind, keep in (("dense", lambda k: 0 < k < n and not moe_cut),
                       ("moe", lambda k: 0 < k < n and moe_cut)):
        for ph in ("fwd", "bwd"):
            sel = [r for r in rows if r["pass"] == ph and keep(r["layer"])]
            if sel:
                out.setdefault(kind, {})[ph] = (statistics.median(r["launches"] for r in sel),
                                                1e3 * statistics.median(r["host_s"] for r in sel))
    if moe_cut:  # DeepSeek-V2-Lite's layer 0 is dense (first_k_dense_replace 1)
        d = {r["pass"]: r for r in rows if r["layer"] == 0}
        out["dense"] = {ph: (d[ph]["launches"], 1e3 * d[ph]["host_s"]) for ph in ("fwd", "bwd")}
    return out


def main():
    tmp = tempfile.mkdtemp()
    try:
        cnt = os.path.join(tmp, "data")
        shutil.copytree(os.path.join(ROOT, "data"), cnt)
        p = os.path.join(cnt, "systems", "h200.json")
        with open(p) as f:
            s = json.load(f)
        s["host"].update(eager_launch_s=1e-3, eager_inner_launch_s=1e-3, chunk_cat_block_s=0,
                         chunk_cat_block_large_s=0)
        with open(p, "w") as f:
            json.dump(s, f)
        with open(os.path.join(HERE, "call1", "host23_probe.json")) as f:
            probe = {r["spec"]: r for r in json.load(f)["runs"]}
        print("%-18s %-5s %-4s %9s %9s %6s %12s %12s" % (
            "model", "layer", "pass", "plan_n", "meas_n", "ratio", "plan_host_ms", "meas_host_ms"))
        for cfg in CASES:
            name, cut = cfg[0], cfg[1]
            with open(os.path.join(ROOT, "bench", "realruns", "configs", name + ".json")) as f:
                c = json.load(f)
            if cut:
                c["num_hidden_layers"] = cut
            mp = os.path.join(tmp, "%s-L%d.json" % (name, cut))
            with open(mp, "w") as f:
                json.dump(c, f)
            cfgp = (mp,) + cfg[1:]
            n_plan = floors(cnt, cfgp)
            t_plan = floors(os.path.join(ROOT, "data"), cfgp)
            meas = measured(cfg[3], bool(cut))
            for kind in ("dense", "moe"):
                if kind not in n_plan or kind not in meas:
                    continue
                for i, ph in enumerate(("fwd", "bwd")):
                    pn, (mn, mh) = n_plan[kind][i], meas[kind][ph]
                    print("%-18s %-5s %-4s %9.0f %9.0f %6.2f %12.2f %12.2f" % (
                        name, kind, ph, pn, mn, pn / mn, t_plan[kind][i], mh))
            fl = probe[cfg[4]]["floor"]
            print("%-18s whole step at seq 64, unprofiled: forward %.1f ms, backward %.1f ms" % (
                name, 1e3 * fl["fwd_host_s"], 1e3 * fl["bwd_host_s"]))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
