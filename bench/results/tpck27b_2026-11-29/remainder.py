#!/usr/bin/env python3
"""What of the checkpointed DTensor TP block's host time plan still does not price, from tpck27's
recorded data only (bench/results/tpck27_2026-11-29: x2, x2b; no new measurement).

1. Per case and rank (every ckpt-like mode against none, same process, interleaved rounds): the
   step host issue increment per block (medians of host_split_ranks[].host_issue_s), plan's step
   increment per block (plan estimate, the flags tpck27's analyze.py passes), and plan's increment
   at that rank's host moment (x the rank's DTensor probe median / 33.9 us, the moment the h200
   preset's host figures sit at; an analysis scale, not a model input): the remainder in ms a block.
2. x2b (the call with torch.utils.checkpoint's hooks timed, Llama-3.1-8B L8 s256, TP 2), per rank:
   the backward block clock's ckpt - none (host_split bwd_block_s, steady blocks 1..L-2) less the
   timed replay (recompute_fn, early stop included), less the unpack hooks outside it, less the
   unpack's DTensor detaches (18 a block at the rank's measured detach probe); the forward's ckpt -
   none less the forward pack hooks.

Usage (repository root, after building build/): python3 bench/results/tpck27b_2026-11-29/remainder.py"""
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SRC = os.path.join(HERE, "..", "tpck27_2026-11-29")
sys.path.insert(0, SRC)
from analyze import plan_floor  # noqa: E402  (tpck27's plan estimate call)
PRESET_PROBE_US = 33.9
UNPACK_DETACHES = 18  # host_dispatch.c ckpt_saved_tensors(dt_inputs) for a Llama block


def mode_of(label):
    for m in ("ckpt-noes", "ckpt-nodet", "ckpt", "none", "sac"):
        if label.endswith("-" + m):
            return m
    raise ValueError(label)


def plan_step_s(rec, mode, tmp):
    """plan's step time for rec's shape under mode (tpck27's analyze.py, the same flags)."""
    return plan_floor(rec, mode, tmp)[2]


def steady(xs):
    return statistics.median([x for x in xs[1:-1] if x is not None]) * 1e3


def main():
    recs = []
    for d in ("x2", "x2b"):
        for ln in open(os.path.join(SRC, d, "results.jsonl")):
            recs.append((d, json.loads(ln)))
    cases = {}
    for d, r in recs:
        m = mode_of(r["label"])
        if m == "sac":
            continue
        cases.setdefault(r["label"][: -len(m) - 1], {})[m] = r
    print("## 1. ckpt - none, step host issue per block (ms), every rank; plan's increment at the "
          "preset and at the rank's probe; remainder")
    print("%-34s %-10s %4s %6s %8s %6s %8s %9s" % ("case", "mode", "rank", "probe", "measured", "plan",
                                                  "plan@rk", "remainder"))
    rems = []
    with tempfile.TemporaryDirectory() as tmp:
        for key, d in cases.items():
            L = d["none"]["layers"]
            pn = plan_step_s(d["none"], "none", tmp)
            for m in ("ckpt", "ckpt-noes", "ckpt-nodet"):
                if m not in d:
                    continue
                pl = (plan_step_s(d[m], m, tmp) - pn) * 1e3 / L
                for rk in range(len(d[m]["host_split_ranks"])):
                    probe = statistics.median(p[rk]["dtensor_op_us"] for p in d[m]["host_probe_rounds"])
                    meas = (statistics.median(d[m]["host_split_ranks"][rk]["host_issue_s"]) -
                            statistics.median(d["none"]["host_split_ranks"][rk]["host_issue_s"])) * 1e3 / L
                    at = pl * probe / PRESET_PROBE_US
                    print("%-34s %-10s %4d %6.1f %8.2f %6.2f %8.2f %9.2f" % (key, m, rk, probe, meas, pl, at,
                                                                           meas - at))
                    if m == "ckpt":
                        rems.append(meas - at)
    print("ckpt rows: remainder median %.2f ms a block (min %.2f, max %.2f)" % (
        statistics.median(rems), min(rems), max(rems)))
    print()
    print("## 2. x2b, Llama-3.1-8B L8 s256 TP 2: the block clock's ckpt - none less what is timed, ms a block")
    hooks = json.load(open(os.path.join(SRC, "x2b", "hooks-llama-3.1-8b-L8.json")))
    x2b = cases["tpck27b-llama-3.1-8b-L8-s256-b1"]
    for rk, steps in enumerate(hooks):
        hs_c = x2b["ckpt"]["host_split_ranks"][rk]["host_split"]
        hs_n = x2b["none"]["host_split_ranks"][rk]["host_split"]
        dbwd = steady(hs_c["bwd_block_s"]) - steady(hs_n["bwd_block_s"])
        dfwd = steady(hs_c["fwd_block_s"]) - steady(hs_n["fwd_block_s"])
        replay = statistics.median(s["recompute_fn"] for s in steps) / 8
        unpack = statistics.median(s["bwd_unpack"] - s["recompute_fn"] for s in steps) / 8
        fpack = statistics.median(s["fwd_pack"] for s in steps) / 8
        det = statistics.median(p[rk]["dtensor_detach_us"] for p in x2b["ckpt"]["host_probe_rounds"])
        dets = UNPACK_DETACHES * det / 1e3
        print("rank %d: bwd ckpt - none %.2f = replay %.2f + unpack hooks %.2f + %d detaches x %.1f us %.2f "
              "+ remainder %.2f; fwd ckpt - none %.2f = pack hooks %.2f + remainder %.2f" % (
                  rk, dbwd, replay, unpack, UNPACK_DETACHES, det, dets, dbwd - replay - unpack - dets,
                  dfwd, fpack, dfwd - fpack))


if __name__ == "__main__":
    main()
