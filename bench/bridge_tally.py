#!/usr/bin/env python3
"""Tallies a bench/bridge_execute.py results file by cause (bench/BRIDGE.md): each failure is
matched, in order, against the patterns below, which say whose fault it is -- the emitted
script's ("plan"), the machine's ("env": software missing there), the checking harness's
("harness"), or a test fixture's ("fixture"). A failure no pattern matches is "unexplained".
Usage: bench/bridge_tally.py results.json
"""
import collections
import json
import re
import sys

CAUSES = [
    ("plan", "stated value overwritten by Bridge: cfg.model.pipeline_dtype (MixedPrecisionConfig)",
     r"changed by Bridge: cfg\.model\.pipeline_dtype None -> torch\.bfloat16$"),
    ("plan", "recipe's TP comm overlap left on (plan has none): fails validation",
     r"Cannot defer embedding wgrad compute"),
    ("plan", "no AutoBridge bridge for the architecture (Mixtral, Phi-3)", r"is not yet supported"),
    ("plan", "checkpoint needs trust_remote_code (Kimi-K2's custom model_type)", r"trust_remote_code"),
    ("env", "no TE: TP comm overlap turned off by Bridge", r"TP overlap needs TE"),
    ("env", "no TE: apply_rope_fusion", r"apply_rope_fusion is not available"),
    ("env", "no TE: MoE permute fusion", r"fused permutation is not available"),
    ("env", "no TE: NVFP4 recipe", r"fp4 requires Transformer Engine"),
    ("env", "no TE: precision-aware optimizer's FusedAdam", r"requires FusedAdam from TransformerEngine"),
    ("harness", "recipe pins a Hub revision the offline cache lacked (Qwen3-30B-A3B)",
     r"Failed to load configuration from Qwen/Qwen3-30B-A3B"),
    ("harness", "recipe asks CUDA in a forked child (DeepSeek-V3's apply_flex_dispatcher_backend)",
     r"Cannot re-initialize CUDA in forked subprocess"),
    ("fixture", "test config abbreviates rope factor lists; transformers 5.17 rejects it",
     r"short_factor field must have length"),
]

d = json.load(open(sys.argv[1]))
by = collections.defaultdict(collections.Counter)
for r in d["results"]:
    if r["step"] == "ok":
        key = ("passed", "passed without TE fusions" if r.get("adapted") else "every step")
    else:
        key = ("unexplained", f"{r['step']}: {(r.get('error') or '')[:100]}")
        for whose, what, pat in CAUSES:
            if re.search(pat, r.get("error") or ""):
                key = (whose, what)
                break
    by[r.get("folder", "")][key] += 1
for folder, c in by.items():
    print(f"{folder}: {sum(c.values())} cases")
    for (whose, what), n in sorted(c.items(), key=lambda x: (x[0][0] != "passed", x[0][0], -x[1])):
        print(f"  {n:4d}  {whose:8s} {what}")
