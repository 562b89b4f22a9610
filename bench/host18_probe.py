#!/usr/bin/env python3
"""The host-speed probe (bench/realruns/host_speed_probe.py) against the eager DTensor TP block host
time, the probe's distribution over moments and machines, and the witness block at the median
lease against the h200 preset (issues 14, 19; bench/results/host18_2026-11-28/README.md).

Sections of the output:
 1. relation: tp11's witness job (hs-tp2-8bL8-s256, Llama-3.1-8B cut to 8 layers, TP 2, seq 256:
    GPU work negligible) with its probe: tphosts17's two records (probe after the steps), host18
    call 1 (10 rounds of 8 steps, a probe before and after each round) and call 2 (32 single
    steps, a probe before and after each). Steady block host time (median of blocks 1..L-2, as
    tphost_hosts.py) against the mean of the probes around it: least squares line, correlation,
    the ratio block / probe, and the blocks of the fast and slow probe states.
 2. distribution: every probe in the repository (rank 0's DTensor op, and the slowest rank's):
    per record of parallel_run.py (one probe after the timed steps), per lease, pooled.
    HANDED: the probe values of ho18's 2 x H200 records the lead handed to this task (held-out
    records: their files are not read here).
 3. the median lease: per lease, the median ratio of the steady block host time of every eager TP
    --host-split record on an H200 (tphost_hosts.py's set plus tphosts17's and host18's) to plan's
    host issue floor of the same block (`plan estimate --ops` with the h200 preset, as
    tphost_hosts.py); the median over leases, the quantity the preset should carry.
 4. the backward figures re-derived at the median lease. Sections 3 and 4 price with the h200
    preset as it is: run before host18's change they give the change (probe_relation_before.txt);
    after it, section 3's backward median reads ~1.00 (probe_relation_after.txt).
Standard library only; run from the repository root after building build/ (section 3 runs plan).
Usage: python3 bench/host18_probe.py
"""
import json
import math
import os
import statistics as st
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from tphost_hosts import eager_tp_blocks, floor_ms, steady  # noqa: E402


R = "bench/results/"
P17 = R + "tphosts17_2026-11-28/probe17_h200x2/jobs/results.jsonl"
MEM17 = R + "memphase17_2026-11-28/memtp17_h200x4/jobs/results.jsonl"
C1 = R + "host18_2026-11-28/call1_h200x2/jobs/results.jsonl"
C2 = R + "host18_2026-11-28/call2_h200x2/jobs/results.jsonl"
# ho18's 2 x H200 records in run order (DTensor op us, plain op us), handed by the lead; the two
# FSDP2 records have none. Rank 0's figures (the record's dtensor_op_us, plain_op_us).
HANDED = [(55.8, 12.3), (59.6, 12.7), (35.4, 8.8), (33.5, 8.3), (31.7, 7.6), (65.6, 17.0),
          (33.9, 7.9), (56.3, 12.8)]
# the leases of tphost_hosts.py (bench/results/tphosts17_2026-11-28), each file one machine
HOSTS = [R + "tp11_2026-11-28/call1_h200x4/jobs/results.jsonl",
         R + "tp11_2026-11-28/call2_h200x4/jobs/results.jsonl",
         R + "sactp16_2026-11-28/x2/jobs/results.jsonl",
         R + "tpck14_2026-11-28/call1_h200x2/results.jsonl"]


def recs(fn):
    return [json.loads(ln) for ln in open(os.path.join(ROOT, fn)) if ln.strip()]


def line(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    b = sxy / sxx
    return my - b * mx, b, sxy / math.sqrt(sxx * syy)


def quart(xs):
    q = st.quantiles(xs, n=4, method="inclusive")
    return min(xs), q[0], q[1], q[2], max(xs)


def witness_pairs():
    """(source, probe before, probe after, fwd ms, bwd ms) of the witness job."""
    out = []
    for r in recs(P17):
        if r["label"].startswith("hs-tp2-8bL8-s256"):
            p = r["host_probe"]["dtensor_op_us"]
            out.append(("tphosts17", p, p, steady(r["host_split"]["fwd_block_s"]) * 1e3,
                        steady(r["host_split"]["bwd_block_s"]) * 1e3))
    for r in recs(C1):
        out.append(("host18 call 1 (rounds)", r["host_probe_before"]["dtensor_op_us"],
                    r["host_probe_after"]["dtensor_op_us"],
                    steady(r["host_split"]["fwd_block_s"]) * 1e3,
                    steady(r["host_split"]["bwd_block_s"]) * 1e3))
    for r in recs(C2):
        for s in r["per_step"]:
            out.append(("host18 call 2 (steps)", s["probe_before"]["dtensor_op_us"],
                        s["probe_after"]["dtensor_op_us"], s["fwd_block_s"] * 1e3,
                        s["bwd_block_s"] * 1e3))
    return out


def relation():
    pts = witness_pairs()
    print("1. The probe against the witness job's steady block host time (hs-tp2-8bL8-s256)")
    print("   block ms = a + b x probe us (probe: the mean of the probes before and after)")
    print("   %-26s %4s %8s | %-34s | %-34s" % ("source", "n", "probe", "forward: a, b, r, block/probe",
                                              "backward: a, b, r, block/probe"))
    groups = sorted(set(p[0] for p in pts)) + ["all"]
    for g in groups:
        P = [p for p in pts if g == "all" or p[0] == g]
        x = [(p[1] + p[2]) / 2 for p in P]
        cols = []
        for i in (3, 4):
            y = [p[i] for p in P]
            if len(P) > 2:
                a, b, r = line(x, y)
                cols.append("%5.2f %6.3f %5.2f  %6.3f" % (a, b, r, st.median(yy / xx for xx, yy in zip(x, y))))
            else:
                cols.append("(%d records) %s" % (len(P), " ".join("%.2f@%.1f" % (yy, xx) for xx, yy in zip(x, y))))
        print("   %-26s %4d %8.1f | %-34s | %-34s" % (g, len(P), st.median(x), cols[0], cols[1]))
    # the two states of the probe (call 1 and tphosts17 flip between ~30 and ~50 us)
    print("\n   by the probe's state (both probes of the pair on one side of 40 us):")
    for nm, sel in (("fast (< 40 us)", lambda p: max(p[1], p[2]) < 40),
                    ("slow (>= 40 us)", lambda p: min(p[1], p[2]) >= 40),
                    ("mixed (one each side)", lambda p: min(p[1], p[2]) < 40 <= max(p[1], p[2]))):
        S = [p for p in pts if sel(p)]
        if S:
            print("   %-22s %3d pairs: probe %5.1f us, forward %5.2f ms [%.2f-%.2f], backward %5.2f ms [%.2f-%.2f]" % (
                nm, len(S), st.median((p[1] + p[2]) / 2 for p in S), st.median(p[3] for p in S),
                min(p[3] for p in S), max(p[3] for p in S), st.median(p[4] for p in S),
                min(p[4] for p in S), max(p[4] for p in S)))
    c2 = [p for p in pts if p[0].startswith("host18 call 2")]
    h1, h2 = c2[:len(c2) // 2], c2[len(c2) // 2:]
    print("\n   call 2 halves (steps 0-15, 16-31): probe %.1f / %.1f us, forward %.2f / %.2f ms, backward %.2f / %.2f ms"
          % (st.median((p[1] + p[2]) / 2 for p in h1), st.median((p[1] + p[2]) / 2 for p in h2),
             st.median(p[3] for p in h1), st.median(p[3] for p in h2), st.median(p[4] for p in h1),
             st.median(p[4] for p in h2)))


def distribution():
    print("\n2. The probe's distribution (DTensor op us; rank 0 and the slowest rank)")
    leases = {}
    per_record = []
    for fn, name in ((P17, "tphosts17 2 x H200 19:00"), (MEM17, "memphase17 4 x H200 19:08")):
        for r in recs(fn):
            p = r.get("host_probe")
            if p:
                leases.setdefault(name, []).append((p["dtensor_op_us"], p["dtensor_op_us_max"], p["plain_op_us"]))
                per_record.append(p["dtensor_op_us"])
    leases["ho18 2 x H200 21:47 (handed)"] = [(d, None, pl) for d, pl in HANDED]
    per_record += [d for d, _ in HANDED]
    for fn, name in ((C1, "host18 call 1 2 x H200 22:03"), (C2, "host18 call 2 2 x H200 22:06")):
        for r in recs(fn):
            ps = ([r["host_probe_before"], r["host_probe_after"]] if "host_probe_before" in r else
                  [s[k] for s in r["per_step"] for k in ("probe_before", "probe_after")])
            leases.setdefault(name, []).extend((p["dtensor_op_us"], p["dtensor_op_us_max"], p["plain_op_us"]) for p in ps)
    print("   %-32s %4s  %-36s %-36s %s" % ("lease", "n", "rank 0: min Q1 median Q3 max",
                                          "slowest rank: min Q1 median Q3 max", "plain op median"))
    meds = []
    for k, v in leases.items():
        d = [x[0] for x in v]
        mx = [x[1] for x in v if x[1] is not None]
        meds.append(st.median(d))
        print("   %-32s %4d  %-36s %-36s %5.1f" % (k, len(v), " ".join("%5.1f" % q for q in quart(d)),
                                                   " ".join("%5.1f" % q for q in quart(mx)) if len(mx) > 1 else "-",
                                                   st.median(x[2] for x in v)))
    allp = [x[0] for v in leases.values() for x in v]
    print("   every probe pooled (n %d): min %.1f Q1 %.1f median %.1f Q3 %.1f max %.1f" % ((len(allp),) + quart(allp)))
    q = quart(per_record)
    print("   one per parallel_run.py record (n %d; tphosts17, memphase17, ho18): min %.1f Q1 %.1f median %.1f Q3 %.1f max %.1f"
          % ((len(per_record),) + q))
    print("     Q3 / Q1 %.2f, max / min %.2f, Q3 / median %.2f, median / Q1 %.2f" % (q[3] / q[1], q[4] / q[0], q[3] / q[2], q[2] / q[1]))
    print("   median over the %d leases' medians: %.1f us" % (len(meds), st.median(meds)))
    slow = sum(1 for x in per_record if x >= 40)
    print("   records in the slow state (>= 40 us): %d of %d" % (slow, len(per_record)))


def median_lease():
    print("\n3. Eager TP block host time against the h200 preset's floor, per lease (ratio = measured / plan)")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fn in HOSTS + [P17]:
            for r, f, mf, b, mb in eager_tp_blocks(recs(fn), tmp):
                rows.setdefault(os.path.dirname(fn), []).append((r["label"], f / mf, b / mb))
        w = recs(C1)[0]
        mf, mb = floor_ms(w, tmp)
    for fn, name in ((C1, "host18 call 1 (10 rounds)"), (C2, "host18 call 2 (32 single steps)")):
        for r in recs(fn):
            if "per_step" in r:
                for s in r["per_step"]:
                    rows.setdefault(name, []).append(("step %d" % s["k"], s["fwd_block_s"] * 1e3 / mf, s["bwd_block_s"] * 1e3 / mb))
            else:
                rows.setdefault(name, []).append((r["label"], steady(r["host_split"]["fwd_block_s"]) * 1e3 / mf,
                                                  steady(r["host_split"]["bwd_block_s"]) * 1e3 / mb))
    print("   the witness job's floor: forward %.2f ms, backward %.2f ms" % (mf, mb))
    fm, bm = [], []
    for k, v in rows.items():
        f, b = st.median(x[1] for x in v), st.median(x[2] for x in v)
        fm.append(f)
        bm.append(b)
        print("   %-58s %3d runs: forward %.2f [%.2f-%.2f], backward %.2f [%.2f-%.2f]" % (
            k[-58:], len(v), f, min(x[1] for x in v), max(x[1] for x in v), b, min(x[2] for x in v), max(x[2] for x in v)))
    print("   median over the %d leases: forward %.2f (quartiles %.2f-%.2f), backward %.2f (quartiles %.2f-%.2f)" % (
        len(fm), st.median(fm), quart(fm)[1], quart(fm)[3], st.median(bm), quart(bm)[1], quart(bm)[3]))
    return st.median(fm), st.median(bm)


def model_counts(tp, tmp):
    """(P_bwd, N_bwd) of one Llama-3.1-8B layer at tp, seq 256, on the h200 preset
    (tphost_layer_cost.py's model_counts)."""
    from tphost_layer_cost import model_counts as counts
    _, _, p_bwd, n_bwd = counts(tp, tmp, "h200")
    return p_bwd, n_bwd


def rederive(r_bwd):
    """4. The backward DTensor dispatch figures re-derived as tp11 derived them (tphost_layer_cost.py:
    d = (block - P) / N, the line through TP 2 and 4), with the block at the median lease: r_bwd
    times the block the preset prices now. The plain launches P stay at host.eager_launch_s."""
    h = json.load(open(os.path.join(ROOT, "data", "systems", "h200.json")))["host"]
    print("\n4. Backward figures at the median lease (block x %.3f, P kept)" % r_bwd)
    d_new = {}
    with tempfile.TemporaryDirectory() as tmp:
        for tp in (2, 4):
            pb, nb = model_counts(tp, tmp)
            d = h["eager_dtensor_bwd_s"] + h["eager_dtensor_bwd_rank_s"] * tp
            blk = pb + nb * d
            d_new[tp] = (r_bwd * blk - pb) / nb
            print("   TP %d: P %.2f ms + %.0f dispatches x %.1f us = %.2f ms -> %.2f ms: %.1f us a dispatch" % (
                tp, pb * 1e3, nb, d * 1e6, blk * 1e3, r_bwd * blk * 1e3, d_new[tp] * 1e6))
    rank = (d_new[4] - d_new[2]) / 2
    print("   host.eager_dtensor_bwd_s %.3g + eager_dtensor_bwd_rank_s %.3g x tp (were %.3g + %.3g x tp)" % (
        d_new[2] - 2 * rank, rank, h["eager_dtensor_bwd_s"], h["eager_dtensor_bwd_rank_s"]))


if __name__ == "__main__":
    relation()
    distribution()
    _, rb = median_lease()
    rederive(rb)
