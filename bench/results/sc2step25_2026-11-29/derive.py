#!/usr/bin/env python3
"""Per-layer GPU time per aten op of StarCoder2-7B's Hugging Face FSDP2 step (sc2_step_probe.py's
JSON): (4-layer step - 2-layer step) / 2 per op (self device time), so the embedding, loss head
and optimizer cancel; and the step-time differences of the controlled variants (dropouts off,
biases off) at 4 layers. Standard library only. Usage: derive.py sc2_step_probe.json"""
import json
import sys

d = json.load(open(sys.argv[1]))
runs = {r["spec"]: r for r in d["runs"]}
print("torch %s, transformers %s, %s, %s UTC" % (d["torch"], d["transformers"], d["gpu"], d["date_utc"]))
for s, r in runs.items():
    print("%-72s step median %.4f s  kernels %.4f s  busy %.4f s" % (s, r["step_s_median"], r["kernel_s"],
                                                                      r["busy_s_non_nccl"]))
L2 = [r for r in runs.values() if r["layers"] == 2 and not r["overrides"]][0]
L4 = [r for r in runs.values() if r["layers"] == 4 and not r["overrides"]][0]


def table(r, key):
    return {k: (n, us) for k, n, us in r[key]}


for key in ("ops_self_device_us", "kernels_us"):
    a, b = table(L2, key), table(L4, key)
    rows = []
    for k in set(a) | set(b):
        na, ta = a.get(k, (0, 0.0))
        nb, tb = b.get(k, (0, 0.0))
        rows.append((k, (nb - na) / 2.0, (tb - ta) / 2.0 / 1000.0))
    rows.sort(key=lambda r: -r[2])
    print("\nper layer (L4 - L2) / 2, %s: calls, ms" % key)
    tot = 0.0
    for k, n, ms in rows:
        tot += ms
        if abs(ms) >= 0.01:
            print("  %-62s %6.1f %8.3f" % (k[:62], n, ms))
    print("  %-62s %6s %8.3f" % ("sum", "", tot))
print("\nper layer step time (L4 - L2) / 2: %.2f ms" % ((L4["step_s_median"] - L2["step_s_median"]) / 2 * 1e3))
for s, r in runs.items():
    if r["overrides"] and r["layers"] == 4:
        print("variant %s: step %+.2f ms vs L4 (%+.2f ms a layer); kernels %+.2f ms" % (
            r["overrides"], (r["step_s_median"] - L4["step_s_median"]) * 1e3,
            (r["step_s_median"] - L4["step_s_median"]) * 1e3 / 4, (r["kernel_s"] - L4["kernel_s"]) * 1e3))
        a, b = table(L4, "ops_self_device_us"), table(r, "ops_self_device_us")
        rows = sorted(((k, (b.get(k, (0, 0))[1] - a.get(k, (0, 0))[1]) / 1000.0) for k in set(a) | set(b)),
                      key=lambda x: x[1])
        for k, ms in rows:
            if abs(ms) >= 0.05:
                print("    %-62s %+8.3f ms" % (k[:62], ms))
