#!/usr/bin/env python3
"""The SDPA calls one rank of PyTorch's ring attention makes, timed alone on one GPU.

Why: torch's context_parallel (torch/distributed/tensor/experimental/_context_parallel/
_attention.py, _templated_ring_attention and its backward) splits rank r's causal attention
under head-tail load balancing into c calls: step 0 the local causal block (q = k = s/c rows),
then for steps i = 1..c-1 either all local queries against the first half of the visiting keys
(i <= r: q = s/c, k = s/2c, no mask) or the second half of the queries against all visiting keys
(i > r: q = s/2c, k = s/c, no mask). Rank r runs r 'rowhalf' and c-1-r 'colhalf' calls; the
step ends with the slowest rank. bench/cp_ring_micro.py times the whole ring on 2 GPUs; this
script times each call shape alone (fwd, bwd, CUDA events, medians) for c = 2, 4, 8 on one GPU,
against full causal attention over s (whose 1/c is the ideal), so the chunk term can be priced
without 4 or 8 GPUs.

Usage: python3 bench/cp_chunk_shapes.py --out $OUT/chunks.jsonl
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--seqs", default="8192,16384,32768")
p.add_argument("--cps", default="2,4,8")
p.add_argument("--dims", default="64,128")
p.add_argument("--heads", type=int, default=32)
p.add_argument("--backends", default="flash,cudnn")
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--reps", type=int, default=10)
args = p.parse_args()
dev = torch.device("cuda")
BK = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def timed(sq, sk, d, causal, bk):
    h = args.heads
    g = torch.Generator(device=dev).manual_seed(sq * 7 + sk + d)
    q = torch.randn(1, h, sq, d, device=dev, dtype=torch.bfloat16, generator=g).requires_grad_()
    k = torch.randn(1, h, sk, d, device=dev, dtype=torch.bfloat16, generator=g).requires_grad_()
    v = torch.randn(1, h, sk, d, device=dev, dtype=torch.bfloat16, generator=g).requires_grad_()
    go = torch.randn(1, h, sq, d, device=dev, dtype=torch.bfloat16, generator=g)
    f, b = [], []
    with sdpa_kernel([BK[bk]]):
        for i in range(args.warmup + args.reps):
            e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            e[0].record()
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            e[1].record()
            o.backward(go)
            e[2].record()
            torch.cuda.synchronize()
            q.grad = k.grad = v.grad = None
            if i >= args.warmup:
                f.append(e[0].elapsed_time(e[1]) / 1e3)
                b.append(e[1].elapsed_time(e[2]) / 1e3)
    return statistics.median(f), statistics.median(b)


out = open(args.out, "a")
facts = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(dev),
         "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "heads": args.heads}
for bk in args.backends.split(","):
    for d in [int(x) for x in args.dims.split(",")]:
        for s in [int(x) for x in args.seqs.split(",")]:
            ff, fb = timed(s, s, d, True, bk)
            for c in [int(x) for x in args.cps.split(",")]:
                n = s // c
                diag = timed(n, n, d, True, bk)
                row = timed(n, n // 2, d, False, bk)
                col = timed(n // 2, n, d, False, bk)
                ideal = (ff + fb) / c
                worst = max(sum(diag) + r * sum(row) + (c - 1 - r) * sum(col) for r in range(c))
                rec = dict(facts, backend=bk, head_dim=d, seq=s, cp=c, full_fwd_s=ff, full_bwd_s=fb,
                           diag_fwd_s=diag[0], diag_bwd_s=diag[1], rowhalf_fwd_s=row[0],
                           rowhalf_bwd_s=row[1], colhalf_fwd_s=col[0], colhalf_bwd_s=col[1],
                           worst_rank_s=worst, ideal_s=ideal, worst_over_ideal=worst / ideal)
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print("%-5s d%-3d s %6d cp %d  full %.2f ms  /c %.2f  diag %.2f row %.2f col %.2f  "
                      "worst rank %.2f  x%.3f" % (bk, d, s, c, 1e3 * (ff + fb), 1e3 * ideal,
                                                  1e3 * sum(diag), 1e3 * sum(row), 1e3 * sum(col),
                                                  1e3 * worst, worst / ideal), flush=True)
