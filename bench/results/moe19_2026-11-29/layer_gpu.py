#!/usr/bin/env python3
"""layer_gpu.py TRACE — GPU kernel time per decoder layer and pass of one profiled Hugging Face FSDP2
step (moe_host_probe.py --trace), each kernel put in the segment where the host launched it (the
trace's correlation ids; segments start at FSDP::pre_forward / pre_backward (model.layers.i)).
The last forward segment also holds the loss head's forward and backward; the last backward
segment the embedding's backward and the root's post-backward. Kernels after the first
multi_tensor_apply kernel (clip, optimizer) are left out. Standard library only (helper moe19)."""
import bisect, collections, gzip, json, re, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
launch = {}
for e in ev:
    if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
        launch[e["args"]["correlation"]] = e["ts"]
marks = []
for e in ev:
    m = re.match(r"FSDP::pre_(forward|backward) \(model\.layers\.(\d+)\)", str(e.get("name", "")))
    if m and e.get("cat") in ("cpu_op", "user_annotation"):
        marks.append((e["ts"], "%s L%s" % ("fwd" if m.group(1) == "forward" else "bwd", m.group(2))))
marks.sort()
seen, uniq = set(), []
for t, n in marks:  # a range can appear twice (cpu_op and user_annotation): keep the first
    if n not in seen:
        seen.add(n); uniq.append((t, n))
ts = [t for t, _ in uniq]
k = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
t_opt = min((e["ts"] for e in k if "multi_tensor" in e["name"]), default=1e30)
gpu = collections.Counter(); grp = collections.Counter(); n = collections.Counter(); cc = collections.Counter()
for e in k:
    if e["ts"] >= t_opt: continue
    lt = launch.get(e.get("args", {}).get("correlation"))
    if lt is None: continue
    i = bisect.bisect_right(ts, lt) - 1
    seg = uniq[i][1] if i >= 0 else "pre"
    gpu[seg] += e["dur"]; n[seg] += 1
    if "GroupProblem" in e["name"]: grp[seg] += e["dur"]
    if "chunk_cat" in e["name"]: cc[seg] += e["dur"]
print("segment   kernels  gpu_ms  grouped_gemm_ms  chunk_cat_kernel_ms")
for _, s in uniq:
    print("%-8s %7d %8.2f %8.3f %8.3f" % (s, n[s], gpu[s] / 1e3, grp[s] / 1e3, cc[s] / 1e3))
if n["pre"]: print("%-8s %7d %8.2f" % ("pre", n["pre"], gpu["pre"] / 1e3))
