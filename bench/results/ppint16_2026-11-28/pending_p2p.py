#!/usr/bin/env python3
"""Are pipeline chunks slower while an NCCL send/recv of their rank is posted and waiting?

Issue 19 (ppint16). Reads parallel_run.py --timeline records (1F1B and interleaved 1F1B) and, per
rank and timed step, rebuilds torch's lowered action list (bench/pp_torch_order.py: torch_order,
lower; torch 2.11 _add_send_recv) and the window in which each SEND/RECV occupies its rank's one
NCCL stream, from the *measured* compute intervals:
  posted     after the compute placed before it on the rank has ended (ProcessGroupNCCL
             syncStream) and after the rank's previous p2p op has completed (one stream)
  completed  when both halves are posted (the transfer itself, ~0.1 ms for these sizes, ignored)
Ranks' clocks are the per-rank step-start events (each step starts after a synchronize; the ranks
are aligned to a few ms by the previous step's clip-norm all-reduce).
For every compute op it prints the share of the op's time during which at least one p2p op of
its rank was posted but not completed (an NCCL kernel resident on the GPU, waiting for its peer),
then per (stage, kind) the median duration of ops with that share <= 10% against >= 50%.

Usage: python3 pending_p2p.py RESULTS.jsonl [LABEL ...]
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from pp_torch_order import torch_order, lower  # noqa: E402


def windows(lowered, times, p, v):
    """{rank: [(post, done)]} of every p2p action from measured compute times {(k,st,mb): (t0,t1)}."""
    S = p * v
    rank_of = lambda s: s % p  # noqa: E731
    where = {a: (r, i) for r, acts in lowered.items() for i, a in enumerate(acts)}
    post, done = {}, {}

    def prev(r, i, comp):
        for j in range(i - 1, -1, -1):
            if (lowered[r][j][0] in ("F", "B")) == comp:
                return lowered[r][j]
        return None

    def partner(a):
        k, st, mb = a
        kind = k[1]
        if k[0] == "S":
            return ("R" + kind, st + 1 if kind == "F" else st - 1, mb)
        return ("S" + kind, st - 1 if kind == "F" else st + 1, mb)

    def p_of(a):
        if a in post:
            return post[a]
        r, i = where[a]
        t = 0.0
        pc = prev(r, i, True)
        if pc:
            t = times[pc][1]
        if a[0] == "S":
            t = max(t, times[(a[0][1], a[1], a[2])][1])
        pn = prev(r, i, False)
        if pn:
            t = max(t, d_of(pn))
        post[a] = t
        return t

    def d_of(a):
        if a in done:
            return done[a]
        done[a] = max(p_of(a), p_of(partner(a)))
        return done[a]

    out = {r: [] for r in lowered}
    for r, acts in lowered.items():
        for a in acts:
            if a[0] not in ("F", "B"):
                out[r].append((p_of(a), d_of(a), a))
    return out


def overlap(t0, t1, wins):
    iv = sorted((max(t0, a), min(t1, b)) for a, b, _ in wins if min(t1, b) > max(t0, a))
    tot, cur = 0.0, None
    for a, b in iv:
        if cur is None or a > cur[1]:
            if cur:
                tot += cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    if cur:
        tot += cur[1] - cur[0]
    return tot / (t1 - t0) if t1 > t0 else 0.0


def analyse(rec):
    p, v, m = rec["pp"], rec.get("vpp", 1), rec["microbatches"]
    if rec.get("schedule") not in ("1f1b", "interleaved1f1b"):
        return
    orders = [torch_order(p, v, m, r) for r in range(p)]
    low = lower(orders, p, v)
    tl = rec["timeline"]
    groups = {}
    nsteps = len(tl[0])
    for s in range(nsteps):
        times = {}
        for r in range(p):
            for k, st, mb, t0, t1 in tl[r][s]:
                times[(k, st, mb)] = (t0, t1)
        w = windows(low, times, p, v)
        for r in range(p):
            for k, st, mb, t0, t1 in tl[r][s]:
                f = overlap(t0, t1, w[r])
                groups.setdefault((st, k), []).append((f, t1 - t0, mb))
    print("%s (%s, pp %d vpp %d m %d, %s): step median %.1f ms" % (
        rec["label"], rec["gpu"], p, v, m, rec["schedule"], 1e3 * rec["step_s_median"]))
    print("  stage kind   n  share<=10%%: n  median ms | share>=50%%: n  median ms |  ratio")
    allr = []
    for (st, k), xs in sorted(groups.items()):
        lo = [d for f, d, _ in xs if f <= 0.1]
        hi = [d for f, d, _ in xs if f >= 0.5]
        ml = statistics.median(lo) if lo else float("nan")
        mh = statistics.median(hi) if hi else float("nan")
        ratio = mh / ml if lo and hi else float("nan")
        if lo and hi:
            allr.append(ratio)
        print("  %5d %4s %3d  %14d %9.2f | %13d %9.2f | %6.3f" % (st, k, len(xs), len(lo), ml, len(hi), mh, ratio))
    busy_hi = sum(d * f for xs in groups.values() for f, d, _ in xs) / nsteps
    busy = sum(d for xs in groups.values() for f, d, _ in xs) / nsteps
    print("  busy per step (all ranks) %.1f ms, of which under a waiting p2p op %.1f ms (%.0f%%)" % (
        busy, busy_hi, 100 * busy_hi / busy))
    if allr:
        print("  median ratio over (stage, kind) with both classes: %.3f" % statistics.median(allr))


def main():
    fn = sys.argv[1]
    labels = set(sys.argv[2:])
    for ln in open(fn):
        if not ln.strip():
            continue
        r = json.loads(ln)
        if "timeline" not in r or (labels and r["label"] not in labels):
            continue
        analyse(r)
        print()


if __name__ == "__main__":
    main()
