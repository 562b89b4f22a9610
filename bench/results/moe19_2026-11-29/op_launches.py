#!/usr/bin/env python3
"""op_launches.py TRACE [OP ...] — host time per call of selected aten ops in one profiled step
(moe_host_probe.py --trace) beside the kernel launches (cudaLaunchKernel / cudaMemsetAsync /
cudaMemcpyAsync / cuLaunchKernel... runtime and driver calls) made inside each call on the same
thread: how many kernels one op dispatch issues and the host time per launch inside it.
Forward + backward only (before the first multi_tensor_apply kernel's launch). Standard library
only (helper moe19)."""
import bisect, collections, gzip, json, statistics, sys
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
ops = sys.argv[2:] or ["aten::sort", "aten::_index_put_impl_", "aten::index_put_", "aten::histc",
                       "aten::cumsum", "aten::topk", "aten::_grouped_mm", "aten::index", "aten::_chunk_cat",
                       "aten::add", "aten::mul", "aten::copy_", "aten::masked_fill_"]
rt = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"
      and any(s in e["name"] for s in ("LaunchKernel", "Memset", "Memcpy", "cuLaunch"))]
t_opt = min((e["ts"] for e in rt if False), default=None)
kern = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "kernel" and "correlation" in e.get("args", {})}
opt_launch = min((r["ts"] for r in rt if "multi_tensor" in kern.get(r.get("args", {}).get("correlation"), {}).get("name", "")), default=1e30)
by_tid = collections.defaultdict(list)
for r in rt:
    by_tid[r["tid"]].append(r)
for t in by_tid:
    by_tid[t].sort(key=lambda r: r["ts"])
starts = {t: [r["ts"] for r in v] for t, v in by_tid.items()}
res = collections.defaultdict(list)
for e in ev:
    if e.get("cat") != "cpu_op" or e.get("ph") != "X" or e["name"] not in ops or e["ts"] >= opt_launch:
        continue
    s = starts.get(e["tid"], [])
    i, j = bisect.bisect_left(s, e["ts"]), bisect.bisect_right(s, e["ts"] + e["dur"])
    res[e["name"]].append((e["dur"], j - i))
print("%-24s %6s %10s %12s %12s" % ("op", "calls", "launches", "host_us/call", "launches/call"))
for op in ops:
    v = res.get(op)
    if not v: continue
    by_n = collections.defaultdict(list)
    for d, n in v: by_n[n].append(d)
    for n, ds in sorted(by_n.items()):
        print("%-24s %6d %10d %12.1f %12d" % (op, len(ds), n * len(ds), statistics.median(ds), n))
