#!/usr/bin/env python3
"""per_token.py — is what plan misses on the one-node Qwen3-30B-A3B MXFP8 rows (EP 8, 16 local
experts, every system) a cost per local expert (the same per layer and micro-batch whatever the
micro-batch holds) or a cost per token? Reads bench/published_moe_gap.py's output (gap/lmb: the
published minus the predicted step per layer and micro-batch, ms) for the 26.04.01 rows, which
run MBS 4 (B200, GB200: 16,384 tokens a micro-batch) and MBS 8 (B300, GB300: 32,768), and fits
gap/lmb = fixed + per_ktok x ktokens by least squares. A per-local-expert cost at 16 local
experts would show up in `fixed`. Caveat: the MBS 4 and MBS 8 rows are different chips
(Blackwell, Blackwell Ultra). Usage: per_token.py GAPFILE"""
import sys

pts = []
for line in open(sys.argv[1]):
    w = line.split()
    if len(w) > 13 and w[0].startswith("qwen3-30b-a3b-mxfp8-") and w[0].endswith("-8gpu") and w[1] == "26.04.01":
        pts.append((int(w[5]) / 1000, float(w[12]), w[0]))
for k, g, n in pts:
    print(f"{n:36s} ktok {k:6.3f} gap/lmb {g:5.2f} ms  gap/ktok {g / k:.3f}")
n = len(pts)
mx = sum(p[0] for p in pts) / n
my = sum(p[1] for p in pts) / n
b = sum((p[0] - mx) * (p[1] - my) for p in pts) / sum((p[0] - mx) ** 2 for p in pts)
print(f"least squares: gap/lmb = {my - b * mx:+.2f} ms + {b:.3f} ms per 1000 tokens")
