#!/usr/bin/env python3
"""Per-layer breakdown of one profiled expert-parallel step (bench/realruns/parallel_run.py
--layout ep --profile), standard library only: what bench/results/epstep_2026-11-27/README.md
compares with `plan estimate --ops`.

The step is cut on the host at its record_function regions and FSDP2's annotations: each
forward layer's attention part (end of the previous moe.unpermute to moe.router) and MoE part
(moe.router to the end of moe.unpermute), the loss forward and backward, each layer's backward
(FSDP::pre_backward (layers.N) to the next), the tail after layer 0's reduce, clip and the
optimizer. Every GPU activity (kernel, memcpy, memset) is put in the segment whose host launch
(cuda runtime call with the same correlation id) lies in it. Per segment: host time, GPU ops,
compute-stream busy time (the stream with the most kernel time), its idle time split into
"host" (the next op was launched after the stream went idle: the GPU waited for the host) and
"other" (waiting for another stream or rank), kernel time by class (trace_summary.py's classes;
other streams prefixed). Then every aten::_chunk_cat of FSDP2's post-backward reduce with the
unit it belongs to and its host time per 2 KiB block of the fp32 output chunk (Qwen3-30B-A3B
unit sizes; --experts/--ep from the trace name or flags).

Usage: ep_trace_breakdown.py TRACE.json.gz --ep N [--model qwen3-30b-a3b] [--json]
"""
import argparse
import collections
import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_summary import klass  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("trace")
ap.add_argument("--ep", type=int, required=True)
ap.add_argument("--json", action="store_true")
args = ap.parse_args()

# Qwen3-30B-A3B (bench/realruns/configs/qwen3-30b-a3b.json): FSDP2 units as parallel_run.py wraps
# them under --layout ep: the experts of a layer on a one-rank mesh, the rest of the layer and
# the root (embedding + output, untied) over the ep ranks.
H, F, E, V, NH, NKV, HD = 2048, 768, 128, 151936, 32, 4, 128
ATTN = H * NH * HD * 2 + 2 * H * NKV * HD + H * E + 2 * H + 2 * HD  # q, o, k, v, router, norms
BLOCK = 2048


def blocks(params):
    return -(-4 * params // BLOCK)


def unit_params(name, ep):
    if "experts" in name:
        return E // ep * 3 * H * F
    if re.search(r"layers\.\d+\)", name):
        return -(-ATTN // ep)
    return -(-2 * V * H // ep)


def main():
    with gzip.open(args.trace) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    rt = {e["args"].get("correlation"): e for e in ev
          if e.get("cat") in ("cuda_runtime", "cuda_driver") and "args" in e}
    ann = sorted([e for e in ev if e.get("cat") == "user_annotation"], key=lambda e: e["ts"])
    first = lambda n: [e for e in ann if e["name"] == n][0]  # noqa: E731
    routers = [e for e in ann if e["name"] == "moe.router"]
    unp = [e for e in ann if e["name"] == "moe.unpermute"]
    pre = [e for e in ann if re.match(r"FSDP::pre_backward \(layers\.\d+\)$", e["name"])]
    end = lambda e: e["ts"] + e["dur"]  # noqa: E731
    b = []
    for i, (r, u) in enumerate(zip(routers, unp)):
        b.append(("f%d.attn" % i, first("step.forward")["ts"] if i == 0 else end(unp[i - 1])))
        b.append(("f%d.moe" % i, r["ts"]))
    b.append(("loss.fwd", end(unp[-1])))
    b.append(("loss.bwd", first("step.backward")["ts"]))
    for e in pre:
        b.append(("b" + re.search(r"layers\.(\d+)", e["name"]).group(1), e["ts"]))
    b.append(("bwd.tail", max(end(e) for e in ann if "post_backward_reduce (layers.0" in e["name"])))
    b.append(("clip", first("step.clip")["ts"]))
    b.append(("opt", first("step.optimizer")["ts"]))
    stop = end(first("step.optimizer"))
    b.sort(key=lambda x: x[1])
    names, ts = [x[0] for x in b], [x[1] for x in b] + [stop]

    def seg(t):
        k = None
        for i, x in enumerate(ts[:-1]):
            if t >= x:
                k = i
        return names[k] if k is not None else None

    sc = collections.Counter()
    for g in gpu:
        sc[g["args"].get("stream")] += g["dur"]
    cs = sc.most_common(1)[0][0]
    out = collections.OrderedDict((n, {"host_ms": (ts[i + 1] - ts[i]) / 1e3, "gpu_ops": 0,
                                       "compute_busy_ms": 0.0, "idle_host_ms": 0.0,
                                       "idle_other_ms": 0.0, "class_ms": collections.Counter()})
                                  for i, n in enumerate(names))
    on_cs = []
    for g in gpu:
        c = rt.get(g["args"].get("correlation"))
        s = seg(c["ts"]) if c else None
        if s is None:
            continue
        o = out[s]
        o["gpu_ops"] += 1
        cl = klass(g["name"])
        if g["args"].get("stream") == cs:
            o["compute_busy_ms"] += g["dur"] / 1e3
            on_cs.append((g["ts"], g["dur"], c["ts"], s))
        else:
            cl = "other_stream:" + cl
        o["class_ms"][cl] += g["dur"] / 1e3
    on_cs.sort()
    for (t0, d0, _, _), (t1, _, lt, s) in zip(on_cs, on_cs[1:]):
        gap = t1 - (t0 + d0)
        if gap <= 0:
            continue
        wait_host = min(gap, t1 - lt) if lt + 3 > t0 + d0 else 0.0
        out[s]["idle_host_ms"] += wait_host / 1e3
        out[s]["idle_other_ms"] += (gap - wait_host) / 1e3
    red = [e for e in ann if e["name"].startswith("FSDP::post_backward_reduce")]
    cc = []
    for c in (e for e in ev if e["name"] == "aten::_chunk_cat"):
        r = [e for e in red if e["ts"] <= c["ts"] < end(e)]
        unit = r[0]["name"].replace("FSDP::post_backward_reduce", "").strip() if r else "?"
        nb = blocks(unit_params(unit or "root", args.ep))
        cc.append({"unit": unit or "(root)", "host_ms": c["dur"] / 1e3, "blocks": nb,
                   "ns_per_block": c["dur"] * 1e3 / nb})
    regions = collections.Counter()
    for e in ann:
        if e["name"].startswith("moe."):
            regions[e["name"]] += e["dur"] / 1e3
    res = {"trace": os.path.basename(args.trace), "segments": out, "chunk_cat": cc,
           "moe_regions_host_ms": regions}
    if args.json:
        json.dump(res, sys.stdout, indent=1, default=dict)
        print()
        return
    print("== %s (ep %d)" % (res["trace"], args.ep))
    print("%-9s %8s %5s %9s %7s %7s | kernel ms by class" % ("segment", "host_ms", "ops", "gpu_cs_ms",
                                                             "idle_h", "idle_o"))
    for n, o in out.items():
        top = ", ".join("%s %.2f" % kv for kv in o["class_ms"].most_common(6))
        print("%-9s %8.2f %5d %9.2f %7.2f %7.2f | %s" % (n, o["host_ms"], o["gpu_ops"], o["compute_busy_ms"],
                                                       o["idle_host_ms"], o["idle_other_ms"], top))
    print("chunk_cat (FSDP2 post-backward reduce):")
    for c in cc:
        print("   %-26s %7.3f ms %8d blocks %6.1f ns/block" % (c["unit"], c["host_ms"], c["blocks"],
                                                             c["ns_per_block"]))
    print("moe.* regions, host ms over the step:", ", ".join("%s %.2f" % kv for kv in sorted(regions.items())))


if __name__ == "__main__":
    main()
