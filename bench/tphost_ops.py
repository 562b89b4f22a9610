#!/usr/bin/env python3
"""Host ops of one DTensor tensor-parallel decoder layer, from a profiled step (issues 19, 14).

bench/realruns/parallel_run.py --layout tp --host-split --profile PATH writes the Chrome trace of
one step (PATH.trace.json.gz) in which each block's forward is a record_function region "tp.block"
and the moment each block's input gradient is ready a zero-length region "tp.bwd_mark" (on the
autograd thread). This script splits the host's work per block:
  forward   the top-level CPU ops (cpu_op events not inside another cpu_op of the same thread)
            inside each tp.block region, by name, with their count, their host time under the
            profiler, and the CUDA launches (cudaLaunchKernel & co.) they issued;
  backward  the same on the autograd thread between consecutive tp.bwd_mark regions (block i's
            backward: from block i+1's mark to block i's; the top-level events there are
            autograd::engine::evaluate_function nodes, each with its DTensor/aten ops inside).
The steady-state block is the median over the middle blocks (the first and last carry the embedding
/ head edges). Profiled host times are inflated by the profiler; the per-block host times to use are
the unprofiled ones of the same run (host_split in results.jsonl); this gives the counts.
Standard library only. Usage: tphost_ops.py TRACE.json.gz [--json OUT]
"""
import gzip
import json
import re
import statistics
import sys

LAUNCH = re.compile(r"^cuda(LaunchKernel|LaunchKernelExC|MemcpyAsync|MemsetAsync)|^cuLaunch")
NCCL = re.compile(r"nccl", re.I)


def top_level(evs):
    """cpu_op events of one thread not nested in another (sorted by start)."""
    out, end = [], -1.0
    for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
        if e["ts"] >= end:
            out.append(e)
            end = e["ts"] + e["dur"]
    return out


def inside(evs, s, e):
    return [x for x in evs if s <= x["ts"] < e]


def summarize(path):
    with gzip.open(path) if path.endswith(".gz") else open(path) as f:
        t = json.load(f)
    ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    rt = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and LAUNCH.search(e["name"])]
    kern = {(e.get("args") or {}).get("correlation"): e for e in ev if e.get("cat") == "kernel"}
    blocks = sorted([e for e in ev if e.get("cat") == "user_annotation" and e["name"] == "tp.block"],
                    key=lambda e: e["ts"])
    marks = sorted([e for e in ev if e.get("cat") == "user_annotation" and e["name"] == "tp.bwd_mark"],
                   key=lambda e: e["ts"])
    if not blocks:
        sys.exit("tphost_ops: no tp.block regions in %s (run with --host-split --profile)" % path)
    ftid = blocks[0]["tid"]
    btid = marks[0]["tid"] if marks else None
    by_tid = {}
    for e in ops:
        by_tid.setdefault(e["tid"], []).append(e)
    rt_by_tid = {}
    for e in rt:
        rt_by_tid.setdefault(e["tid"], []).append(e)

    def span(tid, s, e):
        top = top_level(inside(by_tid.get(tid, []), s, e))
        allops = inside(by_tid.get(tid, []), s, e)
        la = inside(rt_by_tid.get(tid, []), s, e)
        names = {}
        for o in top:
            n = names.setdefault(o["name"], [0, 0.0])
            n[0] += 1
            n[1] += o["dur"]
        nccl = sum(1 for x in la if NCCL.search((kern.get((x.get("args") or {}).get("correlation")) or {}).get("name", "")))
        dt = sum(1 for o in allops if o["name"].startswith("aten::") and "DTensor" not in o["name"])
        return {"host_us": e - s, "top_ops": len(top), "all_cpu_ops": len(allops), "aten_ops": dt,
                "launches": len(la), "nccl_launches": nccl,
                "top_by_name": {k: {"n": v[0], "us": round(v[1], 1)} for k, v in
                                sorted(names.items(), key=lambda x: -x[1][1])}}

    fwd = [span(ftid, b["ts"], b["ts"] + b["dur"]) for b in blocks]
    # marks come in backward order: block L-1's input gradient first, block 0's last
    bwd = []
    for i in range(1, len(marks)):
        bwd.append(span(btid, marks[i - 1]["ts"], marks[i]["ts"]))
    bwd = bwd[::-1]  # bwd[j]: block j's backward (j = 0 .. L-2)

    def steady(lst):
        mid = lst[1:-1] if len(lst) > 2 else lst
        keys = ("host_us", "top_ops", "all_cpu_ops", "aten_ops", "launches", "nccl_launches")
        return {k: statistics.median([x[k] for x in mid]) for k in keys}

    return {"trace": path.split("/")[-1], "blocks": len(blocks), "marks": len(marks),
            "fwd_steady": steady(fwd), "bwd_steady": steady(bwd) if bwd else None,
            "fwd_block_example": fwd[len(fwd) // 2], "bwd_block_example": bwd[len(bwd) // 2] if bwd else None,
            "fwd_per_block": [{k: x[k] for k in ("host_us", "top_ops", "launches")} for x in fwd],
            "bwd_per_block": [{k: x[k] for k in ("host_us", "top_ops", "launches")} for x in bwd]}


if __name__ == "__main__":
    a = sys.argv[1:]
    out = None
    if "--json" in a:
        i = a.index("--json")
        out = a[i + 1]
        del a[i:i + 2]
    res = [summarize(p) for p in a]
    for r in res:
        print(r["trace"], "blocks", r["blocks"], "fwd", json.dumps(r["fwd_steady"]), "bwd", json.dumps(r["bwd_steady"]))
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
