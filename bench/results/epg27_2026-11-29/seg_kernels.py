#!/usr/bin/env python3
"""Kernels of one segment of a profiled EP step (ep_trace_breakdown.py's segments: f1.moe, b2, ...)
grouped by the innermost autograd node / aten op that launched them, standard library only.
Usage: seg_kernels.py TRACE.json.gz SEGMENT [SEGMENT ...]
Prints, per segment, GPU time by (launching op, kernel class) on every stream, largest first."""
import bisect
import collections
import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "realruns"))
from trace_summary import klass  # noqa: E402


def main():
    tr, segs = sys.argv[1], sys.argv[2:]
    with gzip.open(tr) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    rt = {e["args"].get("correlation"): e for e in ev
          if e.get("cat") in ("cuda_runtime", "cuda_driver") and "args" in e}
    ann = sorted([e for e in ev if e.get("cat") == "user_annotation"], key=lambda e: e["ts"])
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    by_tid = collections.defaultdict(list)
    for o in ops:
        by_tid[o["tid"]].append(o)
    for t in by_tid:
        by_tid[t].sort(key=lambda e: e["ts"])
    end = lambda e: e["ts"] + e["dur"]  # noqa: E731
    first = lambda n: [e for e in ann if e["name"] == n][0]  # noqa: E731
    routers = [e for e in ann if e["name"] == "moe.router"]
    unp = [e for e in ann if e["name"] == "moe.unpermute"]
    pre = [e for e in ann if re.match(r"FSDP::pre_backward \(layers\.\d+\)$", e["name"])]
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
    b.sort(key=lambda x: x[1])
    names, ts = [x[0] for x in b], [x[1] for x in b] + [end(first("step.optimizer"))]

    def seg(t):
        i = bisect.bisect_right(ts, t) - 1
        return names[i] if 0 <= i < len(names) else None

    def launcher(c):
        lst = by_tid.get(c["tid"], [])
        best = None
        for o in lst:  # innermost op (latest start) containing the launch
            if o["ts"] > c["ts"]:
                break
            if end(o) >= c["ts"] and not o["name"].startswith(("cuda", "aten::empty")):
                best = o
        return best["name"] if best else "?"

    for s in segs:
        tab = collections.Counter()
        n = collections.Counter()
        for g in gpu:
            c = rt.get(g["args"].get("correlation"))
            if not c or seg(c["ts"]) != s:
                continue
            key = (launcher(c), klass(g["name"]), g["args"].get("stream"))
            tab[key] += g["dur"]
            n[key] += 1
        tot = sum(tab.values())
        print("== %s %s: %.3f ms GPU (all streams)" % (os.path.basename(tr), s, tot / 1e3))
        for k, v in tab.most_common():
            print("  %8.1f us x%-3d  s%-3s %-22s %s" % (v, n[k], k[2], k[1][:22], k[0][:80]))


if __name__ == "__main__":
    main()
