#!/usr/bin/env python3
"""The attention calls of each run of runs.tsv, as the real step makes them (issue 14, meas22):
one row per (run, kind of layer) with the SDPA call's shape, for attn_probe.py.

Hugging Face (transformers 5.17, attn_implementation="sdpa"): a full-attention layer calls SDPA
with is_causal and no mask (GQA through enable_gqa); a sliding-window layer whose sequence is
longer than its window gets an explicit boolean mask [b, 1, s, s] (masking_utils.sdpa_mask) and
K/V repeated to the query heads (repeat_kv) first. Which layers slide: config `layer_types` when
present; Gemma 2 every other layer from the first (transformers' Gemma2Config default); Gemma 3
all but every sliding_window_pattern-th; otherwise every layer when sliding_window is set.
The native Llama (bench/realruns/native_llama.py) repeats K/V and calls SDPA with is_causal over
the whole sequence (fidelity.py drops its window). Writes TSV: label b heads kv_heads seq head_dim
kind(causal|window) window layers recompute(0/1: full activation checkpointing reruns the forward).

Usage: python3 attn_shapes.py RUNS_TSV > attn_shapes.tsv
"""
import json
import os
import sys

runs = sys.argv[1]
base = os.path.dirname(os.path.abspath(runs))
for ln in open(runs):
    lab, args = ln.rstrip("\n").split("\t")
    a = args.split()
    g = lambda k: a[a.index(k) + 1]  # noqa: E731
    cfg = json.load(open(os.path.join(base, "configs", os.path.basename(g("--model")))))
    b, s = int(g("--mbs")), int(g("--seq"))
    heads = cfg["num_attention_heads"]
    kvh = cfg.get("num_key_value_heads") or heads
    d = cfg.get("head_dim") or cfg["hidden_size"] // heads
    if cfg.get("kv_lora_rank"):  # MLA (DeepSeek-V2): q/k head dim nope+rope, v head dim
        continue
    L = cfg["num_hidden_layers"]
    win = cfg.get("sliding_window")
    if cfg.get("use_sliding_window") is False:
        win = None
    native = g("--impl") == "native"
    types = cfg.get("layer_types")
    if native or not win or s <= win:
        sliding = [False] * L
    elif isinstance(types, list):
        sliding = [t == "sliding_attention" for t in types[:L]]
    elif cfg.get("model_type") == "gemma2" or "gemma-2" in g("--model"):
        sliding = [bool((i + 1) % 2) for i in range(L)]
    elif cfg.get("sliding_window_pattern"):
        p = cfg["sliding_window_pattern"]
        sliding = [bool((i + 1) % p) for i in range(L)]
    else:
        sliding = [True] * L
    rc = 1 if g("--recompute") == "full" else 0
    nw = sum(sliding)
    for kind, n in (("causal", L - nw), ("window", nw)):
        if n:
            print("\t".join(map(str, (lab, b, heads, kvh, s, d, kind, win or 0, n, rc))))
