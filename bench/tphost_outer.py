#!/usr/bin/env python3
"""Host time of a DTensor tensor-parallel step outside its decoder layers (issues 19, 14).

bench/realruns/parallel_run.py --layout tp --host-split stamps rank 0's host clock at each block's
forward start / end, at the logits and the loss, at each block input's gradient, at the end of
backward, of clipping and of the optimizer (bench/results/tphost_2026-11-27/README.md). Per run this
splits the step's host time outside the layers into pieces (ms, medians over the timed steps):

  pre      start->fwd0 + fwd[L-1]->fwd_end[L-1] - median(fwd block): FSDP2's root pre-forward, the
           root unit's all-gather and the embedding under RowwiseParallel (its own FSDP2 pre-forward
           hook of layer 0 taken back out: every block's median carries the next one's, the last
           block none, so L blocks are priced as L medians)
  head_f   fwd_end[L-1]->logits + logits->loss: the final norm, the output layer and the loss
  head_b   loss->bwd[L-1] - median(bwd block): the loss head's backward
  tail     bwd0->backward_end: layer 0's FSDP2 post-backward, the embedding's backward and FSDP2's
           root post-backward callback (the root unit's reduce with chunk_cat)
  opt      clip_end->opt_end: fused AdamW over the DTensor parameters and zero_grad

and prices them in the model's units: the DTensor dispatch host time of the preset (host.
eager_dtensor_{fwd,bwd}_s + _rank_s x tp, data/systems/h100.json), the head's dispatches the model
already counts (11 forward, 17 backward: host_dispatch.c's head branch for these models), the root
unit's chunk_cat (host.chunk_cat_block_s per 2 KiB block of its fp32 gradient per rank: embedding +
output, both untied in these runs), and the optimizer per parameter tensor. The pieces that do not
grow with tp (pre, head_f) are also given in plain launches (host.eager_launch_s): pre_plain = (pre -
4 DTensor dispatches of the embedding's RowwiseParallel) / c, head_f_plain = (head_f - the 11 counted
dispatches) / c. Prints one row per run
and the medians over the rows of the folders given as fitting runs (--fit); --check folders are
printed beside them and not used. Standard library only.

Usage: tphost_outer.py --fit DIR [DIR ...] [--check DIR ...]
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
H100 = json.load(open(os.path.join(ROOT, "data", "systems", "h100.json")))["host"]
HEAD_FWD, HEAD_BWD = 11, 17  # dispatches the model prices for the loss head (host_dispatch.c)
EMBED_DTENSOR = 4  # the embedding's RowwiseParallel: from_local, embedding, redistribute, to_local
CHUNK_BLOCK_BYTES = 2048


def dt(tp):
    return (H100["eager_dtensor_fwd_s"] + H100["eager_dtensor_fwd_rank_s"] * tp,
            H100["eager_dtensor_bwd_s"] + H100["eager_dtensor_bwd_rank_s"] * tp)


def tensors(cfg, layers):
    """Parameter tensors: per layer q, k, v, o, two norms (+ Qwen3's q/k norms), gate, up, down;
    the root's embedding, final norm and output layer (untied in every run here)."""
    per = 9 + (2 if cfg.get("model_type") == "qwen3" else 0)
    return layers * per + 3


def row(r):
    hs = r.get("host_split")
    if not hs:
        return None
    p = hs["parts_s"]
    L = r["layers"]
    tp = r["tp"]
    cfg = json.load(open(os.path.join(ROOT, r["config"])))
    fb = statistics.median([x for x in hs["fwd_block_s"] if x is not None])
    bb = statistics.median([x for x in hs["bwd_block_s"] if x is not None])
    df, db = dt(tp)
    ms = 1e3
    pre = p["start->fwd0"] + p["fwd%d->fwd_end%d" % (L - 1, L - 1)] - fb
    head_f = p["fwd_end%d->logits" % (L - 1)] + p["logits->loss"]
    head_b = p["loss->bwd%d" % (L - 1)] - bb
    tail = p["bwd0->backward_end"]
    opt = p["clip_end->opt_end"]
    # per rank and per output chunk: 1/tp of each weight, over the dp ranks FSDP2 shards it on
    # (the model's fsdp_rs_copy_in_host_s, costmodel/fsdp_copies.h)
    root_grad_bytes = 4.0 * 2 * cfg["vocab_size"] * cfg["hidden_size"] / tp / r.get("dp", 1)
    chunk = H100["chunk_cat_block_s"] * root_grad_bytes / CHUNK_BLOCK_BYTES
    n = tensors(cfg, L)
    c = H100["eager_launch_s"]
    return {"run": r["label"], "tp": tp, "dp": r.get("dp", 1), "L": L, "tensors": n,
            "pre_ms": pre * ms, "pre_units": pre / df, "pre_plain": (pre - EMBED_DTENSOR * df) / c,
            "head_f_ms": head_f * ms, "head_f_extra_units": head_f / df - HEAD_FWD,
            "head_f_plain": (head_f - HEAD_FWD * df) / c,
            "head_b_ms": head_b * ms, "head_b_extra_units": head_b / db - HEAD_BWD,
            "tail_ms": tail * ms, "chunk_ms": chunk * ms, "tail_units": (tail - chunk) / db,
            "opt_ms": opt * ms, "opt_us_per_tensor": opt / n * 1e6}


def load(dirs):
    out = []
    for d in dirs:
        for ln in open(os.path.join(d, "results.jsonl")):
            if ln.strip():
                x = row(json.loads(ln))
                if x:
                    out.append(x)
    return out


KEYS = ("pre_units", "pre_plain", "head_f_extra_units", "head_f_plain", "head_b_extra_units", "tail_units",
        "opt_us_per_tensor")


def show(rows, title):
    print("== " + title)
    print("%-30s %2s %2s %4s | %6s %6s | %6s %6s | %6s %6s | %6s %6s %6s | %6s %7s" % (
        "run", "tp", "dp", "tens", "pre", "units", "headf", "+units", "headb", "+units",
        "tail", "chunk", "units", "opt", "us/tens"))
    for x in rows:
        print("%-30s %2d %2d %4d | %6.2f %6.1f | %6.2f %6.1f | %6.2f %6.1f | %6.2f %6.2f %6.1f | %6.2f %7.1f" % (
            x["run"][:30], x["tp"], x["dp"], x["tensors"], x["pre_ms"], x["pre_units"], x["head_f_ms"],
            x["head_f_extra_units"], x["head_b_ms"], x["head_b_extra_units"], x["tail_ms"], x["chunk_ms"],
            x["tail_units"], x["opt_ms"], x["opt_us_per_tensor"]))
    if rows:
        print("median: " + "  ".join("%s %.1f" % (k, statistics.median(x[k] for x in rows)) for k in KEYS))
        for tp in sorted({x["tp"] for x in rows}):
            sub = [x for x in rows if x["tp"] == tp]
            print("  tp %d (n=%d): " % (tp, len(sub)) +
                  "  ".join("%s %.1f" % (k, statistics.median(x[k] for x in sub)) for k in KEYS))


# What costmodel/dtensor_step_host.c prices with the medians of the fitting runs (rounded there).
PRICED = {"pre_plain": 45.1, "head_f_plain": 64.9, "tail_units": 64.9, "opt_us_per_tensor": 46.9}


def priced(rows, title):
    """Measured vs priced per piece (ms): forward outside the layers (pre + head_f, the head's 11
    counted dispatches included), the tail, the optimizer."""
    print("== priced vs measured, ms: " + title)
    c = H100["eager_launch_s"]
    for x in rows:
        df, db = dt(x["tp"])
        f_p = (EMBED_DTENSOR + HEAD_FWD) * df + (PRICED["pre_plain"] + PRICED["head_f_plain"]) * c
        t_p = PRICED["tail_units"] * db + x["chunk_ms"] / 1e3
        o_p = x["tensors"] * PRICED["opt_us_per_tensor"] * 1e-6
        f_m = (x["pre_ms"] + x["head_f_ms"]) / 1e3
        print("%-30s fwd %5.2f / %5.2f   tail %5.2f / %5.2f   opt %5.2f / %5.2f   sum %5.2f / %5.2f" % (
            x["run"][:30], f_m * 1e3, f_p * 1e3, x["tail_ms"], t_p * 1e3, x["opt_ms"], o_p * 1e3,
            f_m * 1e3 + x["tail_ms"] + x["opt_ms"], (f_p + t_p + o_p) * 1e3))


if __name__ == "__main__":
    a = sys.argv[1:]
    if "--fit" not in a:
        sys.exit("usage: tphost_outer.py --fit DIR [DIR ...] [--check DIR ...]")
    fit, check, cur = [], [], None
    for x in a:
        if x in ("--fit", "--check"):
            cur = fit if x == "--fit" else check
        else:
            cur.append(x)
    show(load(fit), "fitting runs: " + " ".join(fit))
    if check:
        show(load(check), "check runs (not used): " + " ".join(check))
    priced(load(fit), "fitting runs (measured / priced)")
    if check:
        priced(load(check), "check runs (measured / priced)")
