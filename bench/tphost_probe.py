#!/usr/bin/env python3
"""Host speed probe of a device machine (issue 19): the same bare-launch probe that
bench/cp_ring_micro.py records as plain_launch_host_s (2000 in-place adds on a 1024-element
tensor, median of 5 rounds, perf_counter, the GPU finishing each add in microseconds), so two
machines' hosts can be compared on one number. One GPU, no process group.
Usage: python3 bench/tphost_probe.py --out FILE.json
"""
import argparse
import json
import statistics
import sys
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
a = ap.parse_args()
dev = torch.device("cuda", 0)


def plain_launch_host_s(n=2000):
    x = torch.zeros(1024, device=dev)
    for _ in range(200):
        x.add_(1.0)
    torch.cuda.synchronize()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        ts.append((time.perf_counter() - t0) / n)
        torch.cuda.synchronize()
    return statistics.median(ts), ts


reps = [plain_launch_host_s() for _ in range(3)]
cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), None)
rec = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": torch.cuda.get_device_name(dev),
       "cpu_model": cpu, "torch": torch.__version__, "command": " ".join(sys.argv),
       "plain_launch_host_s": statistics.median(r[0] for r in reps), "repeats": [r[1] for r in reps]}
json.dump(rec, open(a.out, "w"), indent=1)
print("PROBE", json.dumps(rec))
