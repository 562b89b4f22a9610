"""Every rank's host clock per decoder block (parallel_run.py --host-split records carry
host_split_ranks since tpck26): per rank, the median steady block's forward and backward host time
(blocks 1..L-2), the host's issue time of each timed step, and the CPUs its threads last ran on.

Usage: python3 bench/realruns/rank_host_split.py results.jsonl [LABEL_SUBSTRING]
"""
import json
import statistics
import sys


def steady(xs):
    xs = [x for x in xs[1:-1] if x is not None] or [x for x in xs if x is not None]
    return statistics.median(xs) * 1e3 if xs else float("nan")


for ln in open(sys.argv[1]):
    r = json.loads(ln)
    if len(sys.argv) > 2 and sys.argv[2] not in r["label"]:
        continue
    print("%s: step median %.4f s, steps %s%s" % (r["label"], r["step_s_median"], r.get("step_times_s"),
                                                   " (pinned)" if r.get("pinned") else ""))
    for i, x in enumerate(r.get("host_split_ranks") or []):
        hs = x["host_split"]
        cpu = x.get("cpu", {})
        th = cpu.get("threads", {})
        busy = sorted(th.values(), key=lambda v: -v[2])[:3]
        print("  rank %d: block fwd %.2f ms bwd %.2f ms; host issue %s; affinity %d cpus; busiest threads %s" % (
            i, steady(hs["fwd_block_s"]), steady(hs["bwd_block_s"]), x.get("host_issue_s"),
            len(cpu.get("affinity", [])), busy))
        print("          parts %s" % {k: round(v * 1e3, 2) for k, v in hs["parts_s"].items() if v is not None})
