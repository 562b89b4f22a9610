#!/usr/bin/env python3
"""gemma19: adds the head-dim 256 points measured on one H200 (attention-h200-d256.json, written by
bench/attention_sweep.py --table from call1/attn256.jsonl) to the attention_rates tables of the
system presets that carry the H100-measured table (h200, h200-x4: the same GPU; h100, h100-gt500:
the same GH100 die, as the table's own H100 points are carried to H200). Text edit, so the files
keep their layout: the points go after the last head-dim-128 point and a sentence is appended to
the table's source. Run once from the repository root; it refuses to add them twice."""
import json
import sys

NEW = json.load(open("bench/results/gemma19_2026-11-29/attention-h200-d256.json"))
pts = NEW["points"]
NOTE = (" Head dim 256 (Gemma 2/3): measured on one NVIDIA H200 (kind nvidia-h200, driver 580.159.04,"
        " torch 2.11.0+cu130, cuDNN 9.19.0, 2026-11-29; bench/attention_sweep.py --dims 256 --masks"
        " causal,window --heads 8,16,32,64,128, bench/results/gemma19_2026-11-29): cuDNN's sm90 flash"
        " fprop/bprop kernels for both masks (sdpa_probe.json); the masked path runs 40-137 TFLOP/s"
        " forward, 26-111 backward, against 92-687 / 58-410 causal.")
for name in sys.argv[1:]:
    path = "data/systems/%s.json" % name
    text = open(path).read()
    if '[256, "causal"' in text:
        sys.exit("%s: head dim 256 points already there" % path)
    last = '      [128, "window", 256, 16384, 149.1, 147.8]\n    ]'
    if text.count(last) != 1:
        sys.exit("%s: the last head-dim-128 point is not where expected" % path)
    rows = ",\n".join("      [%d, \"%s\", %d, %d, %s, %s]" % (p[0], p[1], p[2], p[3], p[4], p[5])
                      for p in pts)
    text = text.replace(last, last[:-6] + ",\n" + rows + "\n    ]")
    doc = json.loads(text)
    src = doc["attention_rates"]["source"]
    if NOTE.strip() in src:
        sys.exit("%s: note already there" % path)
    old = json.dumps(src)[1:-1]
    if text.count(old) != 1:
        sys.exit("%s: source string not found once" % path)
    add = json.dumps(NOTE + ("" if name.startswith("h200") else
                             " ASSUMPTION on H100: the H200's rates (same GH100 die and clocks)."))[1:-1]
    text = text.replace(old, old + add)
    json.loads(text)
    tmp = path + ".tmp"
    open(tmp, "w").write(text)
    import os
    os.replace(tmp, path)
    print(path, "+", len(pts), "points")
