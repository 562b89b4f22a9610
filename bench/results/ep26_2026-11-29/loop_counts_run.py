"""ep26: bench/realruns/parallel_run.py --layout ep --experts loop, with the per-expert loop's forward
GEMMs timed on the host and every call's per-expert row counts recorded (rank by rank).

Why: to see, in the real row (prof26-ep4-loop-q3moeL4-s4k-b2's command without --profile), how
many of the loop's GEMMs meet a row count the process has not used before (a new GEMM shape for
cuBLAS's algorithm heuristic) and what each costs the host, unprofiled. The loop is
prun_moe.Experts._forward_device's (mode loop) op for op (split, select, mm, silu, mm, mul,
select, mm, cat), with time.perf_counter() read around each mm; nothing else changes.
Run as parallel_run.py is run (torchrun ... loop_counts_run.py <parallel_run.py flags>); writes
EP26_OUT/counts_r<rank>.json.
"""
import json
import os
import runpy
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RR = os.path.join(os.getcwd(), "bench", "realruns")
sys.path.insert(0, RR)
# a device call runs the main tree's bench/realruns: the changed prun_moe.py / prun_measure.py
# (prun_moe.loop_tally) travel beside this file and are imported first
if os.path.isdir(os.path.join(HERE, "realruns")):
    sys.path.insert(0, os.path.join(HERE, "realruns"))
import prun_moe  # noqa: E402
import torch.nn.functional as F  # noqa: E402

REC = []
LAYER = {}
_orig = prun_moe.Experts._forward_device


def _forward_device(self, x, counts, w=None):
    if self.mode == "grouped" or w is not None:
        return _orig(self, x, counts, w)
    w1, w3, w2 = self.w1, self.w3, self.w2
    li = LAYER.setdefault(id(self), len(LAYER))
    cl = counts.tolist()
    if hasattr(prun_moe, "loop_tally"):
        prun_moe.loop_tally(cl)
    outs, t = [], []
    pc = time.perf_counter
    for e, xe in enumerate(x.split(cl, dim=0)):
        t0 = pc(); a = xe @ w1[e]; t1 = pc()
        s = F.silu(a)
        t2 = pc(); b = xe @ w3[e]; t3 = pc()
        h = s * b
        t4 = pc(); o = h @ w2[e]; t5 = pc()
        outs.append(o)
        t.append((round((t1 - t0) * 1e6, 1), round((t3 - t2) * 1e6, 1), round((t5 - t4) * 1e6, 1)))
    REC.append({"layer": li, "counts": cl, "mm_us": t})
    return prun_moe.torch.cat(outs, 0)


prun_moe.Experts._forward_device = _forward_device
sys.argv = [os.path.join(RR, "parallel_run.py")] + sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    d = os.environ.get("EP26_OUT", ".")
    with open(os.path.join(d, "counts_r%s.json" % os.environ.get("RANK", "0")), "w") as f:
        json.dump(REC, f)
