#!/usr/bin/env python3
"""calculon_best.py — reads `plan --format json --top 256` on stdin and prints the best plan
without Megatron-FSDP (the space Calculon models: ZeRO-1 at most) beside the best overall."""
import json
import sys

d = json.load(sys.stdin)
plans = d.get("plans", [])


def line(p):
    l, t = p["layout"], p["time"]
    off = []
    if l.get("optimizer_offload_pct"):
        off.append("optimizer offload %d%%" % l["optimizer_offload_pct"])
    if l.get("activation_offload"):
        off.append("activation offload")
    sim = p.get("time_simulated", {}).get("step_s")
    return ("tp%d pp%d dp%d cp%d vpp%d mbs%d gbs%d sp=%s %s recompute=%s%s %s | step %.2f s%s"
            % (l["tp"], l["pp"], l["dp"], l["cp"], l["vpp"], l["mbs"], l["gbs"], l["sp"],
               l["sharding"], l["recompute"],
               " (%d layers)" % l["recompute_layers"] if l.get("recompute_layers") else "",
               ", ".join(off), t["step_s"], ", simulated %.2f s" % sim if sim else ""))


if plans:
    print("best overall:       ", line(plans[0]))
nofsdp = [p for p in plans if p["layout"]["sharding"] != "fsdp"]
print("best without fsdp:  ", line(nofsdp[0]) if nofsdp else "none among the kept %d" % len(plans))
