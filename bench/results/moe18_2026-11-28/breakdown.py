#!/usr/bin/env python3
"""Per-op breakdown of one profiled Hugging Face FSDP2 step (phase_profile.py --trace-dir), to set
beside plan estimate --ops (plan_ops_sum.py). Standard library only.

Each GPU activity (kernel, memcpy, memset) is tied to its launch on the host (the trace's
correlation ids), and the launch to:
  phase    the phase_* range (fwd, bwd, clip, opt, zero) holding the launch
  part     which decoder layer (FSDP::pre_forward / pre_backward (model.layers.i) ranges on the
           host: a layer's forward runs from its pre_forward to the next one's) or "head" (the
           embedding before layer 0, the final norm, lm_head and loss after the last layer)
  owner    "fsdp" when an FSDP:: range encloses the launch (copy-in casts and copy-outs,
           post_backward_reduce's chunk_cat), else the outermost aten op (forward) or autograd
           node (backward) enclosing it
  cls      by kernel name: grouped_gemm (CUTLASS grouped GEMM + prepare_grouped_gemm_data),
           gemm (nvjet / cuBLAS), attention (cuDNN SDPA), chunk_cat, memcpy_dtod, memcpy_htod,
           memset, multi_tensor, other
It prints, per phase: GPU time by class; per layer pass (layers 1..n-1 averaged: layer 0 runs the
embedding's hand-off) GPU time by owner and class; the compute stream's idle time with the host op
that was running when the late kernel was launched; host time of the longest host ops.
Usage: breakdown.py TRACE.json.gz [--owners N]"""
import bisect
import collections
import gzip
import json
import re
import sys

path = sys.argv[1]
NOWN = int(sys.argv[sys.argv.index("--owners") + 1]) if "--owners" in sys.argv else 25
ev = json.load(gzip.open(path))["traceEvents"]


def cls(n):
    if n.startswith("Memcpy DtoD"):
        return "memcpy_dtod"
    if n.startswith("Memcpy HtoD"):
        return "memcpy_htod"
    if n.startswith("Memcpy"):
        return "memcpy_other"
    if n.startswith("Memset"):
        return "memset"
    if "chunk_cat" in n:
        return "chunk_cat"
    if "multi_tensor_apply" in n:
        return "multi_tensor"
    if "prepare_grouped_gemm" in n or ("cutlass" in n and "GemmUniversal" in n):
        return "grouped_gemm"
    if re.search(r"nvjet|cublas|gemm|splitKreduce", n, re.I):
        return "gemm"
    if re.search(r"sdpa|fmha|flash|cudnn", n, re.I):
        return "attention"
    if "bfloat16_copy" in n:
        return "cast_to_bf16"
    if re.search(r"radix|Radix|sort|Sort|Histogram|Scan|scan|histogram|gather|index|topk|TopK|"
                 r"arange|fill_reverse|scatter", n):
        return "routing_index_sort"
    return "other"


gpu = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
rt = {e["args"]["correlation"]: e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")
      and "correlation" in e.get("args", {})}
ops = collections.defaultdict(list)  # tid -> [(ts, end, name, cat)]
for e in ev:
    if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
        ops[e["tid"]].append((e["ts"], e["ts"] + e["dur"], e["name"], e["cat"]))
for t in ops:
    ops[t].sort()
starts = {t: [o[0] for o in v] for t, v in ops.items()}
phase = {e["name"][6:]: (e["ts"], e["ts"] + e["dur"]) for e in ev
         if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("phase_")}
lay_f, lay_b = [], []
for e in ev:
    n = str(e.get("name", ""))
    if e.get("cat") != "user_annotation":
        continue
    m = re.match(r"FSDP::pre_forward \(model\.layers\.(\d+)\)", n)
    if m:
        lay_f.append((e["ts"], int(m.group(1)), e["ts"] + e["dur"]))
    m = re.match(r"FSDP::pre_backward \(model\.layers\.(\d+)\)", n)
    if m:
        lay_b.append((e["ts"], int(m.group(1)), e["ts"] + e["dur"]))
post_f = max((e["ts"] for e in ev if e.get("cat") == "user_annotation"
              and re.match(r"FSDP::post_forward \(model\.layers\.\d+\)", str(e.get("name", "")))), default=0)
post_b = max((e["ts"] + e["dur"] for e in ev if e.get("cat") == "user_annotation"
              and re.match(r"FSDP::post_backward_reduce \(model\.layers\.\d+\)", str(e.get("name", "")))), default=0)
lay_f.sort()
lay_b.sort()
L = len(lay_f)


def stack(tid, ts):
    """enclosing host ranges on thread tid at ts, outermost first"""
    v = ops.get(tid, [])
    i = bisect.bisect_right(starts.get(tid, []), ts)
    out = [o for o in v[max(0, i - 4000):i] if o[1] >= ts]
    return out


def part_of(ph, ts):
    if ph == "fwd":
        if not lay_f or ts < lay_f[0][0] or ts > post_f + 1e9 and False:
            return "head"
        if ts >= post_f:  # after the last layer's post_forward: norm, lm_head, loss
            # the last layer's post_forward is the boundary
            return "head"
        i = bisect.bisect_right([x[0] for x in lay_f], ts) - 1
        return "layer%d" % lay_f[i][1]
    if ph == "bwd":
        if not lay_b or ts < lay_b[0][0]:
            return "head"
        if ts >= post_b:
            return "head"
        i = bisect.bisect_right([x[0] for x in lay_b], ts) - 1
        return "layer%d" % lay_b[i][1]
    return ph


rows = []
for g in gpu:
    c = g["args"].get("correlation")
    r = rt.get(c)
    if r is None:
        continue
    ts = r["ts"]
    ph = next((p for p, (a, b) in phase.items() if a <= ts <= b), None)
    if ph is None:
        continue
    st = stack(r["tid"], ts)
    own = None
    for o in st:
        if o[3] == "user_annotation" and o[2].startswith("FSDP::"):
            own = "fsdp:" + re.sub(r" \(.*\)$", "", o[2][6:])
            break
    if own is None:
        top = [o for o in st if o[3] == "cpu_op"]
        own = top[0][2] if top else "?"
        own = own.replace("autograd::engine::evaluate_function: ", "bwd:")
    rows.append({"ph": ph, "part": part_of(ph, ts), "own": own, "cls": cls(g["name"]),
                 "dur": g["dur"] * 1e-3, "ts": g["ts"], "end": g["ts"] + g["dur"],
                 "stream": g["args"].get("stream"), "launch": ts, "ltid": r["tid"], "name": g["name"]})

print("trace", path.split("/")[-1], "layers", L)
for p in ("fwd", "bwd", "clip", "opt", "zero"):
    rs = [x for x in rows if x["ph"] == p]
    if not rs:
        continue
    a, b = phase[p]
    by = collections.Counter()
    for x in rs:
        by[x["cls"]] += x["dur"]
    print("\n== %s  host range %.2f ms, %d GPU ops, GPU %.2f ms: %s" % (
        p, (b - a) * 1e-3, len(rs), sum(by.values()),
        ", ".join("%s %.2f" % kv for kv in by.most_common())))
    if p not in ("fwd", "bwd"):
        continue
    for part in ["head"] + ["layer%d" % i for i in range(L)]:
        q = [x for x in rs if x["part"] == part]
        by = collections.Counter()
        for x in q:
            by[x["cls"]] += x["dur"]
        print("  %-7s GPU %6.2f ms  %s" % (part, sum(by.values()),
                                          ", ".join("%s %.2f" % kv for kv in by.most_common(8))))
    # steady layers: 1..L-1 averaged, by owner
    q = [x for x in rs if x["part"] in ["layer%d" % i for i in range(1, L)]]
    n = max(1, L - 1)
    own = collections.defaultdict(lambda: collections.Counter())
    cnt = collections.Counter()
    for x in q:
        own[x["own"]][x["cls"]] += x["dur"] / n
        cnt[x["own"]] += 1.0 / n
    tot = sorted(own.items(), key=lambda kv: -sum(kv[1].values()))
    print("  per steady layer (layers 1..%d averaged), GPU ms by owner (launches):" % (L - 1))
    for k, c in tot[:NOWN]:
        print("    %-58s %7.3f (%5.1f)  %s" % (k[:58], sum(c.values()), cnt[k],
                                            ", ".join("%s %.3f" % kv for kv in c.most_common(3))))
    print("    %-58s %7.3f (%5.1f)" % ("(all)", sum(sum(c.values()) for c in own.values()),
                                       sum(cnt.values())))
    # the compute stream's idle time in this phase, by what the host was in when it launched
    # the kernel that ended the idle
    cs = collections.Counter(x["stream"] for x in rs).most_common(1)[0][0]
    ks = sorted((x for x in rs if x["stream"] == cs), key=lambda x: x["ts"])
    idle = collections.Counter()
    gaps = 0.0
    end = ks[0]["ts"]
    for x in ks:
        if x["ts"] > end:
            gap = (x["ts"] - end) * 1e-3
            if x["launch"] > end:  # launched after the stream went idle: waiting for the host
                st = stack(x["ltid"], end)
                h = [o[2] for o in st if o[3] == "cpu_op" or o[2].startswith("FSDP::")]
                key = (h[0] if h else "?").replace("autograd::engine::evaluate_function: ", "bwd:")
                inner = [o[2] for o in st if o[3] == "cpu_op"]
                if inner:
                    key += " > " + inner[-1]
                idle[key[:90]] += gap
            else:
                idle["(launched before: dependency / other stream)"] += gap
            gaps += gap
        end = max(end, x["end"])
    print("  compute stream %s idle %.2f ms inside the phase's kernels; by the host op at the idle's start:" % (cs, gaps))
    for k, v in idle.most_common(10):
        print("    %7.2f  %s" % (v, k))
# longest host ops (cpu_op), by name
host = collections.Counter()
hn = collections.Counter()
for t, v in ops.items():
    for o in v:
        if o[3] == "cpu_op" and o[2] in ("aten::_chunk_cat", "aten::_grouped_mm", "aten::sort",
                                         "aten::argsort", "aten::index", "aten::index_put_",
                                         "aten::histc", "aten::nonzero", "aten::item",
                                         "aten::_local_scalar_dense", "aten::copy_"):
            host[o[2]] += (o[1] - o[0]) * 1e-3
            hn[o[2]] += 1
print("\nhost time of selected aten ops over the profiled step (ms, calls):")
for k, v in host.most_common():
    print("  %-28s %8.2f  %d" % (k, v, hn[k]))
