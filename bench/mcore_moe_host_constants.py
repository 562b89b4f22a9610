#!/usr/bin/env python3
"""mcore_moe_host_constants.py — the system constants host.mcore_moe_* and host.te_gemm_s
(costmodel/mcore_moe_host.h) from the measured files of bench/results/mcore_moe_host_2026-11-27
(bench/mcore_moe_host.py, bench/mcore_moe_sync_check.py, bench/te_gemm_host.cu; run by
bench/mcore_moe_host_run1.sh and _run2.sh). Rank 0's medians; prints each constant with the
values it is the median of. Usage: bench/mcore_moe_host_constants.py [results dir]
"""
import json
import os
import re
import statistics
import sys

D = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "results", "mcore_moe_host_2026-11-27")
runs = json.load(open(os.path.join(D, "rank0.json")))["runs"]
sync = json.load(open(os.path.join(D, "sync_check.json")))["runs"]


def pick(key, eps):
    v = [r[key] for r in runs if r["variant"] == "fused" and r["nle"] == 8 and r["ep"] in eps
         and not r.get("err")]
    return statistics.median(v), v


for name, key, eps in (("mcore_moe_fwd_s", "host_fwd_s", (1,)),
                       ("mcore_moe_fwd_ep_s", "host_fwd_s", (2, 4)),
                       ("mcore_moe_bwd_s", "host_bwd_s", (1,)),
                       ("mcore_moe_bwd_ep_s", "host_bwd_s", (2, 4))):
    m, v = pick(key, eps)
    print(f"{name:26s} {m:.3e}  median of {[round(x * 1e3, 3) for x in v]} ms")
for name, ep in (("mcore_moe_post_sync_s", 1), ("mcore_moe_post_sync_ep_s", 4)):
    r = [x for x in sync if x["ep"] == ep and x["nle"] == 8 and x["delay_ms"] == 4][0]
    print(f"{name:26s} {r['fwd_wall_s'] - 4e-3:.3e}  forward per layer {r['fwd_wall_s']*1e3:.3f}"
          f" ms - D 4 ms (EP {ep}, 8 local experts)")
per = [float(m.group(1)) for m in re.finditer(r"grouped_call_host_us N (?:8|16|32|64|128) "
                                             r"[\d.]+  per_gemm ([\d.]+)",
                                             open(os.path.join(D, "te_gemm_host.txt")).read())]
print(f"{'te_gemm_s':26s} {statistics.median(per) * 1e-6:.3e}  median of {per} us")
