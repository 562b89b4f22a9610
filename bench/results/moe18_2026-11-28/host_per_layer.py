#!/usr/bin/env python3
"""Host time per decoder layer and pass in a profiled step (phase_profile.py --trace-dir), against
the launches the host issued in it (moe18, issue 20). A layer's forward on the host runs from its
FSDP::pre_forward to the next layer's; its backward from its FSDP::pre_backward to the next
(lower) layer's, the post_backward_reduce's aten::_chunk_cat inside it listed apart. Launches:
cudaLaunchKernel / cuLaunchKernel(Ex) / cudaMemcpyAsync / cudaMemsetAsync on the launching
thread in that window. The profiler's own cost per op inflates these host times (the unprofiled
phase walls of the same run are in ph_moe.json). Usage: host_per_layer.py TRACE.json.gz"""
import gzip
import json
import re
import sys

ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
LAUNCH = re.compile(r"^(cudaLaunchKernel|cudaLaunchKernelExC|cuLaunchKernel|cuLaunchKernelEx|"
                    r"cudaMemcpyAsync|cudaMemsetAsync)$")
ann = [e for e in ev if e.get("cat") == "user_annotation"]
pf = sorted((e["ts"], int(m.group(1)), e["tid"]) for e in ann
            for m in [re.match(r"FSDP::pre_forward \(model\.layers\.(\d+)\)", e["name"])] if m)
pb = sorted((e["ts"], int(m.group(1)), e["tid"]) for e in ann
            for m in [re.match(r"FSDP::pre_backward \(model\.layers\.(\d+)\)", e["name"])] if m)
launch = [e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver") and LAUNCH.match(e["name"])]
cc = [e for e in ev if e.get("name") == "aten::_chunk_cat"]
print("pass layer  host_ms  launches  chunk_cat_ms  (host-chunk_cat)/launch_us")
for name, marks in (("fwd", pf), ("bwd", pb)):
    for j in range(len(marks) - 1):
        a, i, tid = marks[j]
        b = marks[j + 1][0]
        n = sum(1 for e in launch if e["tid"] == tid and a <= e["ts"] < b)
        c = sum(e["dur"] for e in cc if e["tid"] == tid and a <= e["ts"] < b)
        print("%s  %5d  %7.2f  %8d  %12.2f  %8.1f" % (name, i, (b - a) / 1e3, n, c / 1e3,
                                                        (b - a - c) / max(n, 1)))
