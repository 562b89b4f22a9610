#!/usr/bin/env python3
"""Which aten op launches each kernel of transformers' GPT-OSS eager attention, and which ops
allocated the score-sized blocks alive at its backward peak (issue 14, branch oss22; follows
odd_stride_probe.py, whose allocator replay found the softmax output and three s x (s + 1)
gradients alive there, allocated by the autograd engine's thread with no Python frame).

One forward + backward of models/gpt_oss/modeling_gpt_oss.py eager_attention_forward
(transformers 5.17.0 lines 235-263) on random bf16 inputs at GPT-OSS's attention shape:
  ops     torch.profiler: per CPU op (the autograd node's evaluate_function and the aten ops
          under it), the CUDA kernels it launched itself, their count and time
  blocks  torch.cuda.memory._record_memory_history(stacks="all"): the live blocks of at least
          1/8 of a score tensor at the backward's peak, with the first at::native / autograd
          C++ frames of their allocation
Usage: python3 bench/realruns/eager_attn_attribution.py --out $OUT/attribution.jsonl [--b 1 --s 4096]
"""
import argparse
import json

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--b", type=int, default=1)
ap.add_argument("--s", type=int, default=4096)
args = ap.parse_args()
from transformers.models.gpt_oss import modeling_gpt_oss as mg  # noqa: E402

H, KV, D, BF = 64, 8, 64, torch.bfloat16
b, s = args.b, args.s


class Mod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.num_key_value_groups = H // KV
        self.sinks = torch.nn.Parameter(torch.randn(H, device="cuda", dtype=BF))
        self.train()


mod = Mod()
q = torch.randn(b, H, s, D, device="cuda", dtype=BF, requires_grad=True)
k = torch.randn(b, KV, s, D, device="cuda", dtype=BF, requires_grad=True)
v0 = torch.randn(b, s, KV, D, device="cuda", dtype=BF, requires_grad=True)
mask = torch.where(torch.ones(s, s, device="cuda", dtype=torch.bool).tril(), 0.0,
                   torch.finfo(BF).min).to(BF).expand(b, 1, s, s).contiguous()
g = torch.randn(b, s, H, D, device="cuda", dtype=BF)


def step():
    out, w = mg.eager_attention_forward(mod, q, k, v0.transpose(1, 2), mask, scaling=D ** -0.5,
                                        dropout=0.0)
    del w
    out.backward(g)


def emit(rec):
    line = json.dumps(rec, sort_keys=True)
    print(line[:3000], flush=True)
    with open(args.out, "a") as f:
        f.write(line + "\n")


for _ in range(2):
    step()
torch.cuda.synchronize()
from torch.profiler import ProfilerActivity, profile  # noqa: E402
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    step()
    torch.cuda.synchronize()
rows = []
for e in prof.events():
    ks = getattr(e, "kernels", None) or []
    if not ks:
        continue
    parent = e.cpu_parent
    chain = []
    while parent is not None and len(chain) < 3:
        chain.append(parent.name)
        parent = parent.cpu_parent
    rows.append({"op": e.name, "parents": chain, "shapes": str(e.input_shapes)[:200],
                 "kernels": sorted({kk.name[:100] for kk in ks}), "n": len(ks),
                 "ms": round(sum(kk.duration for kk in ks) / 1e3, 3)})
emit({"section": "ops", "b": b, "s": s, "rows": rows})

q.grad = k.grad = v0.grad = mod.sinks.grad = None
torch.cuda.synchronize()
torch.cuda.empty_cache()
torch.cuda.memory._record_memory_history(max_entries=100000, stacks="all")
out, w = mg.eager_attention_forward(mod, q, k, v0.transpose(1, 2), mask, scaling=D ** -0.5,
                                    dropout=0.0)
del w
torch.cuda.synchronize()
n_fwd = len(torch.cuda.memory._snapshot()["device_traces"][0])
out.backward(g)
torch.cuda.synchronize()
snap = torch.cuda.memory._snapshot()
torch.cuda.memory._record_memory_history(enabled=None)
trace = snap["device_traces"][0]
unit = 2.0 * b * H * s * s


def frames(fr):
    keep = [x.get("name", "") for x in fr
            if ("at::native" in x.get("name", "") or "autograd" in x.get("name", ""))
            and "alloc" not in x.get("name", "").lower()]
    py = ["%s:%d" % (x.get("filename", "").split("/")[-1], x.get("line", 0)) for x in fr
          if "modeling_gpt_oss" in x.get("filename", "")]
    return (py[:1] + keep[:6])


live, cur, best, best_live = {}, 0, 0, {}
timeline = []
for i, e in enumerate(trace):
    if e["action"] == "alloc":
        live[e["addr"]] = (e["size"], i)
        cur += e["size"]
        if i >= n_fwd and cur > best:
            best, best_live = cur, dict(live)
        if e["size"] > unit / 8:
            timeline.append(["alloc", i, e["size"], frames(e.get("frames", []))])
    elif e["action"] == "free_completed" and e["addr"] in live:
        sz, i0 = live.pop(e["addr"])
        cur -= sz
        if sz > unit / 8:
            timeline.append(["free", i, sz, i0])
peak_blocks = [[sz, i0, frames(trace[i0].get("frames", []))] for sz, i0 in best_live.values()
               if sz > unit / 8]
emit({"section": "blocks", "b": b, "s": s, "unit_bytes": unit, "n_fwd_events": n_fwd,
      "bwd_peak_bytes": best, "peak_blocks": peak_blocks, "timeline": timeline})
