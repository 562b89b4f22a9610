#!/usr/bin/env python3
"""Where a torch.distributed.pipelining step spends its time, from parallel_run.py --timeline.

For each run line with a `timeline` (per rank, per timed step, [kind, stage, micro-batch, start ms,
end ms] measured with CUDA events from the step's start), this prints per stage the median forward
and backward time of one micro-batch, per rank the busy and idle time of the step, and the step the
pipeline formula gives from those measured stage times (costmodel/estimate.c, estimate_worst_stage
and estimate_time_assemble): for one stage per rank, when the last stage is the slowest, the first
micro-batch's forward through the stages before it, m x (f + b) on the last, and the last micro-
batch's backward back through them; otherwise (p - 1 + m) x the slowest stage. The last column
is the measured step (the slowest rank's last backward end), so a gap between the two is the
formula's, not the stage costs'.

Usage: python3 bench/realruns/pp_timeline.py RESULTS.jsonl [...]
"""
import json
import statistics
import sys


def med(xs):
    return statistics.median(xs) if xs else 0.0


def analyse(r):
    tl = r["timeline"]  # [rank][step][action]
    pp, vpp, m = r["pp"], r.get("vpp", 1), r["microbatches"]
    S = pp * vpp
    f = {s: [] for s in range(S)}
    b = {s: [] for s in range(S)}
    busy, end = [], []
    for rank, steps in enumerate(tl):
        rb, re_ = [], []
        for acts in steps:
            rb.append(sum(e - s for _, _, _, s, e in acts))
            re_.append(max(e for _, _, _, s, e in acts))
            for k, st, mb, s, e in acts:
                (f if k == "F" else b)[st].append(e - s)
        busy.append(med(rb))
        end.append(med(re_))
    print("%s: pp %d vpp %d m %d, step median %.1f ms (all ranks, incl. clip + optimizer)" % (
        r["label"], pp, vpp, m, 1e3 * r["step_s_median"]))
    print("  stage  rank  F ms    B ms   F+B ms")
    for s in range(S):
        print("  %5d %5d %6.2f %7.2f %7.2f" % (s, s % pp, med(f[s]), med(b[s]), med(f[s]) + med(b[s])))
    for rank in range(len(tl)):
        print("  rank %d: busy %.1f ms, last backward ends at %.1f ms, idle %.1f ms" % (
            rank, busy[rank], end[rank], end[rank] - busy[rank]))
    if vpp == 1:
        fs = [med(f[s]) for s in range(S)]
        bs = [med(b[s]) for s in range(S)]
        t = [fs[s] + bs[s] for s in range(S)]
        if t[-1] >= max(t):
            formula = sum(fs[:-1]) + m * t[-1] + sum(bs[:-1])
            how = "fill through stages 0..p-2 + m x last + drain"
        else:
            formula = (pp - 1 + m) * max(t)
            how = "(p - 1 + m) x slowest"
        print("  formula with these stage times: %.1f ms (%s); measured pipeline end %.1f ms" % (
            formula, how, max(end)))


for fn in sys.argv[1:]:
    for ln in open(fn):
        if ln.strip():
            rec = json.loads(ln)
            if rec.get("timeline"):
                analyse(rec)
                print()
