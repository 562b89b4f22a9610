#!/usr/bin/env python3
"""Attention-core time of PyTorch's scaled_dot_product_attention on one GPU, by shape (issue 14).

The cost model prices the attention core as its FLOPs over an achieved rate. One rate for every
shape is wrong at the shapes small models run (few heads x short sequences, head_dim 64 or 96),
and Hugging Face's explicit sliding-window mask (Phi-3, Mistral-style configs) runs a different
path than is_causal. This script measures the rate per shape so the model can read it from a
table (data/systems/calibration/attention-<gpu>.json, written by --table).

What runs, per shape (b batch, h heads, s sequence, d head dim, mask):
  q, k, v: bf16 [b, h, s, d] from torch.randn (random data), requires_grad
  F.scaled_dot_product_attention(q, k, v, is_causal=True)          mask "causal"
  F.scaled_dot_product_attention(q, k, v)                          mask "none"
  F.scaled_dot_product_attention(q, k, v, attn_mask=M) with M the boolean sliding-window causal
      mask Hugging Face builds (key j visible from query i iff i-w < j <= i), w = s - 1   mask "window"
  forward alone, and forward + backward (out.backward(grad) with a random grad), each timed with
  CUDA events around the call: 3 warm-ups, then 10 timed repeats; the median is kept, min and max
  are written too. SDPA picks its backend as it does inside transformers (no context manager).
  The forward output is checked against a float32 reference on a small slice (max abs error).

FLOPs (what the rates divide): forward 4*b*h*s*s*d, halved for causal (the window mask at
w = s-1 is causal up to one element); backward 2.5x the forward (FlashAttention-2: recompute
of the scores + dV, dP, dQ, dK), as costmodel/compute.c composes them.

Usage (on a GPU machine):
  python3 bench/attention_sweep.py --out $OUT/attention-h100.jsonl [--quick]
  python3 bench/attention_sweep.py --table data/systems/calibration/attention-h100.json \
      $OUT/attention-h100.jsonl          # (no GPU needed for --table)
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys


def measure(out_path, quick, deadline_s):
    import time
    import torch
    import torch.nn.functional as F

    dev = torch.device("cuda")
    torch.manual_seed(0)
    heads_x_batch = (8, 16, 32, 64, 128, 256)
    seqs = (1024, 2048, 4096, 8192, 16384)
    dims = (64, 96, 128)
    masks = ("causal", "none", "window")
    if ARGS.seqs:
        seqs = tuple(int(x) for x in ARGS.seqs.split(","))
    if ARGS.dims:
        dims = tuple(int(x) for x in ARGS.dims.split(","))
    if ARGS.heads:
        heads_x_batch = tuple(int(x) for x in ARGS.heads.split(","))
    if ARGS.masks:
        masks = tuple(ARGS.masks.split(","))
    if quick:
        heads_x_batch, seqs, dims = (16, 64), (1024, 2048), (64, 128)
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,power.limit",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except OSError:
        smi = ""
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": torch.cuda.get_device_name(0), "nvidia_smi": smi,
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
    }

    def timed(fn, reps=10, warm=3):
        for _ in range(warm):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) / 1e3)
        return statistics.median(ts), min(ts), max(ts)

    t0 = time.monotonic()
    with open(out_path, "w") as f:
        for d in dims:
            for s in seqs:
                for bh in heads_x_batch:
                    if deadline_s and time.monotonic() - t0 > deadline_s:
                        print("attention_sweep: deadline reached; stopped before d=%d s=%d bh=%d"
                              % (d, s, bh), file=sys.stderr)
                        return
                    # at most 32 heads per sequence: more heads x batch become batch
                    h = min(bh, 32)
                    b = bh // h
                    q = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
                    k = torch.randn_like(q, requires_grad=True)
                    v = torch.randn_like(q, requires_grad=True)
                    g = torch.randn_like(q)
                    for mask in masks:
                        kw = {}
                        if mask == "causal":
                            kw["is_causal"] = True
                        elif mask == "window":
                            w = s - 1
                            i = torch.arange(s, device=dev)
                            kw["attn_mask"] = ((i[None, :] <= i[:, None]) &
                                               (i[None, :] > i[:, None] - w))[None, None]
                        try:
                            def fwd():
                                return F.scaled_dot_product_attention(q, k, v, **kw)

                            def fwd_bwd():
                                o = F.scaled_dot_product_attention(q, k, v, **kw)
                                o.backward(g)
                                q.grad = k.grad = v.grad = None

                            with torch.no_grad():
                                tf = timed(fwd)
                            tfb = timed(fwd_bwd)
                            # check: a slice against float32 math
                            with torch.no_grad():
                                o = fwd()[:1, :1, :256].float()
                                qs, ks, vs = (x[:1, :1].float() for x in (q, k, v))
                                sc = qs[:, :, :256] @ ks.transpose(-1, -2) / d ** 0.5
                                if mask != "none":
                                    i = torch.arange(s, device=dev)
                                    vis = i[None, :] <= i[:256, None]
                                    if mask == "window":
                                        vis &= i[None, :] > i[:256, None] - (s - 1)
                                    sc = sc.masked_fill(~vis, float("-inf"))
                                ref = torch.softmax(sc, -1) @ vs
                                err = (o - ref).abs().max().item()
                            flops = 4.0 * b * h * s * s * d * (0.5 if mask != "none" else 1.0)
                            rec = dict(meta, b=b, h=h, s=s, d=d, mask=mask,
                                       fwd_s=tf[0], fwd_min_s=tf[1], fwd_max_s=tf[2],
                                       fwd_bwd_s=tfb[0], fwd_bwd_min_s=tfb[1], fwd_bwd_max_s=tfb[2],
                                       fwd_flops=flops,
                                       fwd_tflops=flops / tf[0] / 1e12,
                                       fwd_bwd_tflops=3.5 * flops / tfb[0] / 1e12,
                                       check_max_abs_err=err)
                        except torch.cuda.OutOfMemoryError as e:
                            rec = dict(meta, b=b, h=h, s=s, d=d, mask=mask, oom=str(e)[:200])
                        kw.clear()
                        f.write(json.dumps(rec) + "\n")
                        f.flush()
                    del q, k, v, g
                    torch.cuda.empty_cache()


def table(out_path, inputs):
    """The rates the cost model reads: per head dim and mask, fwd and bwd TFLOP/s by work
    (b*h*s, the rows of queries one launch covers) and sequence."""
    rows = []
    meta = None
    for p in inputs:
        for line in open(p):
            r = json.loads(line)
            if "oom" in r:
                continue
            meta = meta or {k: r[k] for k in ("date", "gpu", "torch", "cuda", "cudnn", "command")}
            bwd_s = r["fwd_bwd_s"] - r["fwd_s"]
            if bwd_s <= 0:
                continue
            rows.append([r["d"], r["mask"], r["b"] * r["h"], r["s"],
                         round(r["fwd_flops"] / r["fwd_s"] / 1e12, 1),
                         round(2.5 * r["fwd_flops"] / bwd_s / 1e12, 1)])
    doc = {"source": "bench/attention_sweep.py: torch SDPA (the backend it picks), bf16, random "
                     "data, CUDA events, median of 10 after 3 warm-ups",
           "measured": meta,
           "columns": ["head_dim", "mask", "batch_x_heads", "seq", "fwd_tflops", "bwd_tflops"],
           "flops": "forward 4*b*h*s*s*d, x0.5 for causal and window; backward 2.5x the forward",
           "points": sorted(rows, key=lambda x: (x[0], x[1], x[2], x[3]))}
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, out_path)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="measure; write one JSON line per shape here")
    ap.add_argument("--quick", action="store_true", help="a few shapes (smoke test)")
    ap.add_argument("--deadline", type=float, default=0, help="stop starting shapes after this many s")
    ap.add_argument("--table", help="write the cost model's table from the given JSONL files")
    ap.add_argument("--seqs", default="", help="sequence lengths, e.g. 32768,65536 (default: 1k-16k)")
    ap.add_argument("--dims", default="", help="head dims, e.g. 64,128")
    ap.add_argument("--heads", default="", help="batch x heads values, e.g. 8,16,32,64")
    ap.add_argument("--masks", default="", help="causal,none,window subset")
    ap.add_argument("inputs", nargs="*")
    a = ap.parse_args()
    ARGS = a
    if a.out:
        measure(a.out, a.quick, a.deadline)
    elif a.table:
        table(a.table, a.inputs)
    else:
        ap.error("give --out (measure) or --table (tabulate)")
