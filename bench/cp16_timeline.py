#!/usr/bin/env python3
"""Reads the per-rank timelines of bench/realruns/cp_timeline.py (cp16, issue 19) and prints where
each timed step's time goes, on both ranks, host and GPU on one clock.

Usage: python3 bench/cp16_timeline.py DIR [--steps N] [--json OUT]
  DIR holds timeline_rank<r>.json (one job). Timed steps: the last N "start" stamps (8).

Per step and rank (ms): the host's issue of the forward blocks and the backward blocks (from
the --host-split stamps), the GPU's time between the same stamps (their CUDA events), the GPU's
lag behind the host at backward_end (the clip's float(norm) waits that long), the clip and the
optimizer, and the step (step start to the sync that ends it). For the ring (CP): every
next_buffer() wait's GPU time (event after minus event before: the compute stream's wait on the
exchange), summed per pass, and the other rank's host issue of the same exchange against this
rank's (the skew the wait absorbs). Garbage collections inside the timed steps, per rank.
"""
import json
import os
import statistics
import sys


def load(d):
    out = {}
    for f in sorted(os.listdir(d)):
        if f.startswith("timeline_rank") and f.endswith(".json"):
            t = json.load(open(os.path.join(d, f)))
            out[t["rank"]] = t
    return out


def steps_of(t, n):
    """Split entries into steps at the 'start' stamps; the last n; each step's end = the first
    anchor after its opt_end stamp."""
    ents = sorted(t["entries"], key=lambda e: e[2])
    starts = [i for i, e in enumerate(ents) if e[0] == "stamp" and e[1] == "start"]
    anchors = t["anchors_host_s"]
    steps = []
    for k, i0 in enumerate(starts):
        i1 = starts[k + 1] if k + 1 < len(starts) else len(ents)
        es = ents[i0:i1]
        opt = [e for e in es if e[0] == "stamp" and e[1] == "opt_end"]
        end = None
        if opt:
            end = min((a for a in anchors if a > opt[-1][2]), default=None)
        prev = max((a for a in anchors if a < es[0][2]), default=None)
        steps.append({"entries": es, "end": end, "sync_before": prev})
    return steps[-n:]


def stamp(es, name):
    for e in es:
        if e[0] == "stamp" and e[1] == name:
            return e
    return None


def analyse(step, L):
    es = step["entries"]
    s0 = stamp(es, "start")
    r = {"host_start": s0[2], "gpu_start": s0[3]}
    f0, fl = stamp(es, "fwd0"), stamp(es, "fwd%d" % (L - 1))
    b_last, b0 = stamp(es, "bwd%d" % (L - 1)), stamp(es, "bwd0")
    be, ce, oe = stamp(es, "backward_end"), stamp(es, "clip_end"), stamp(es, "opt_end")
    ms = 1e3
    if f0 and fl:
        r["host_fwd_blocks"] = (fl[2] - f0[2]) * ms / (L - 1)
        r["gpu_fwd_blocks"] = (fl[3] - f0[3]) * ms / (L - 1)
    if b_last and b0:
        r["host_bwd_blocks"] = (b0[2] - b_last[2]) * ms / (L - 1)
        r["gpu_bwd_blocks"] = (b0[3] - b_last[3]) * ms / (L - 1)
    if be:
        r["host_to_backward_end"] = (be[2] - s0[2]) * ms
        r["gpu_to_backward_end"] = (be[3] - s0[2]) * ms
        r["gpu_lag_at_backward_end"] = (be[3] - be[2]) * ms
    if be and ce:
        r["clip_host"] = (ce[2] - be[2]) * ms
    if ce and oe:
        r["opt_host"] = (oe[2] - ce[2]) * ms
    if step["end"]:
        r["step"] = (step["end"] - s0[2]) * ms
        if oe:
            r["after_opt_wait"] = (step["end"] - oe[2]) * ms
    if step["sync_before"]:
        r["sync_to_start"] = (s0[2] - step["sync_before"]) * ms
    # ring waits: pair wpre / wpost in order per ring kind
    waits = {"ring.fwd": [], "ring.bwd": []}
    xs = {"ring.fwd": [], "ring.bwd": []}
    pend = None
    for e in es:
        if e[0] == "wpre":
            pend = e
        elif e[0] == "wpost" and pend is not None:
            waits.setdefault(e[1], []).append(((e[3] - pend[3]) * ms, pend[2], pend[3]))
            pend = None
        elif e[0] == "x":
            xs.setdefault(e[1], []).append((e[2], e[3]))
    r["waits"] = waits
    r["xs"] = xs
    for k, v in waits.items():
        r["wait_sum_" + k] = sum(w[0] for w in v)
    r["gc"] = []
    return r


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def main():
    a = sys.argv[1:]
    d = a[0]
    n = int(a[a.index("--steps") + 1]) if "--steps" in a else 8
    tl = load(d)
    L = 0
    for t in tl.values():
        for e in t["entries"]:
            if e[0] == "stamp" and e[1].startswith("fwd") and not e[1].startswith("fwd_end"):
                L = max(L, int(e[1][3:]) + 1)
    res = {}
    for rank, t in sorted(tl.items()):
        st = steps_of(t, n)
        res[rank] = [analyse(s, L) for s in st]
        # garbage collections inside the timed steps
        t0 = st[0]["entries"][0][2]
        t1 = st[-1]["end"] or st[-1]["entries"][-1][2]
        gcs, open_ = [], {}
        for ph, gen, h in t["gc"]:
            if ph == "start":
                open_[0] = (gen, h)
            elif 0 in open_:
                g, hs = open_.pop(0)
                if t0 <= hs <= t1:
                    gcs.append((g, hs, (h - hs) * 1e3))
        print("rank %d: %d layers, gc enabled at exit %s, %d collections in the timed steps, gen2: %s, longest %.1f ms" % (
            rank, L, t["gc_enabled"], len(gcs), sum(1 for g in gcs if g[0] == 2),
            max((g[2] for g in gcs), default=0)))
        for g in gcs:
            if g[2] > 5:
                k = max(i for i, s in enumerate(res[rank]) if s["host_start"] <= g[1])
                print("   gc gen %d at step %d +%.1f ms, %.1f ms" % (g[0], k, (g[1] - res[rank][k]["host_start"]) * 1e3, g[2]))
    keys = ["step", "host_to_backward_end", "gpu_to_backward_end", "gpu_lag_at_backward_end", "clip_host",
            "opt_host", "after_opt_wait", "sync_to_start", "host_fwd_blocks", "gpu_fwd_blocks",
            "host_bwd_blocks", "gpu_bwd_blocks", "wait_sum_ring.fwd", "wait_sum_ring.bwd"]
    print("%-26s" % "ms (per step; blocks per block)" + "".join(" | r%d med   [steps]" % r for r in res))
    for k in keys:
        row = "%-26s" % k
        for rank in res:
            v = [s.get(k) for s in res[rank]]
            row += " | %7.2f [%s]" % (med(v), " ".join("%.1f" % x if x is not None else "-" for x in v))
        print(row)
    # cross-rank skew at each exchange: this rank's host issue minus the other rank's, and the wait
    if len(res) == 2 and res[0][0]["xs"]["ring.fwd"]:
        print("ring exchanges (all timed steps): host issue skew r1-r0 (ms) and GPU waits per rank")
        for kind in ("ring.fwd", "ring.bwd"):
            sk, w0, w1, g0, g1 = [], [], [], [], []
            for s0, s1 in zip(res[0], res[1]):
                for (h0, gx0), (h1, gx1) in zip(s0["xs"][kind], s1["xs"][kind]):
                    sk.append((h1 - h0) * 1e3)
                    g0.append((gx0 - h0) * 1e3)
                    g1.append((gx1 - h1) * 1e3)
                w0 += [w[0] for w in s0["waits"][kind]]
                w1 += [w[0] for w in s1["waits"][kind]]
            q = lambda xs, p: sorted(xs)[int(p * (len(xs) - 1))] if xs else float("nan")  # noqa: E731
            print("  %s: %d exchanges; skew med %.2f p10 %.2f p90 %.2f; |skew| med %.2f; GPU-minus-host at issue r0 med %.2f r1 %.2f" % (
                kind, len(sk), med(sk), q(sk, .1), q(sk, .9), med([abs(x) for x in sk]), med(g0), med(g1)))
            for nm, w in (("r0", w0), ("r1", w1)):
                print("    waits %s: n %d med %.3f p90 %.3f max %.1f sum/step %.2f ms" % (
                    nm, len(w), med(w), q(w, .9), max(w) if w else 0, sum(w) / max(1, len(res[0]))))
    # the backward's waits by place in the ring call (CP 2: the K/V for step 1, the dK/dV of
    # step 0 at step 1, the last dK/dV before the call returns)
    for rank, t in sorted(tl.items()):
        es = [e for s in steps_of(t, n) for e in s["entries"]]
        pos, pend, k = {}, None, 0
        for e in es:
            if e[0] == "ring.bwd" and e[1] == "start":
                k = 0
            elif e[0] == "wpre" and e[1] == "ring.bwd":
                pend = e
            elif e[0] == "wpost" and e[1] == "ring.bwd" and pend is not None:
                pos.setdefault(k, []).append((e[3] - pend[3]) * 1e3)
                k += 1
                pend = None
        if pos:
            print("rank %d ring.bwd waits by place: " % rank + " | ".join(
                "#%d n %d med %.3f mean %.3f ms" % (i, len(v), med(v), sum(v) / len(v)) for i, v in sorted(pos.items())))
    # the forward block's host time in four parts (block start -> ring call, the ring call,
    # ring -> block end, block end -> next block), medians over blocks 1..L-2 per step: a slower
    # host shows as every part slower alike, a specific cost as one part
    for rank, t in sorted(tl.items()):
        for k, s in enumerate(steps_of(t, n)):
            es = s["entries"]
            st = {e[1]: e[2] for e in es if e[0] == "stamp"}
            rs = [e[2] for e in es if e[0] == "ring.fwd" and e[1] == "start"]
            re_ = [e[2] for e in es if e[0] == "ring.fwd" and e[1] == "end"]
            if len(rs) < L or len(re_) < L:
                continue
            parts = [[], [], [], []]
            for b in range(1, L - 1):
                parts[0].append(rs[b] - st["fwd%d" % b])
                parts[1].append(re_[b] - rs[b])
                parts[2].append(st["fwd_end%d" % b] - re_[b])
                parts[3].append(st["fwd%d" % (b + 1)] - st["fwd_end%d" % b])
            print("rank %d step %d forward block parts (ms): pre-ring %.2f ring %.2f post-ring %.2f between %.2f" % (
                rank, k, *(1e3 * med(p) for p in parts)))
    if "--json" in a:
        out = a[a.index("--json") + 1]
        for rank in res:
            for s in res[rank]:
                s.pop("xs", None)
                s["waits"] = {k: [round(w[0], 4) for w in v] for k, v in s["waits"].items()}
        with open(out + ".tmp", "w") as f:
            json.dump(res, f, indent=0)
        os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
