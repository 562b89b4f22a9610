#!/usr/bin/env python3
"""What Apertus's xIELU MLP costs beside a plain GeLU MLP of the same shape, on one GPU, as
realrun.py --impl hf trains it: transformers' ApertusMLP (up_proj, act_fn, down_proj) built from
bench/realruns/configs/apertus-8b.json in fp32, wrapped by fully_shard with
MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) on a one-rank NCCL group (so alpha_p and
alpha_n are bf16 in the forward, the beta/eps buffers stay fp32, as in the real run), eager.

For hidden_act "xielu" and "gelu" (the same MLP with nn.functional.gelu), over a bf16 input
[mbs, seq, hidden] that requires grad:
  - whether the fused CUDA xIELU package is importable and what the module chose
    (_xielu_cuda_obj), and where the installed XIELUActivation lives (file, lines);
  - every tensor autograd saves in the forward (saved_tensors_hooks), deduplicated by storage,
    parameters and the input excluded, with shape, dtype, bytes and the saving source line;
  - torch.cuda.memory_allocated() held after the forward less the output;
  - forward and backward times (CUDA events, median of --iters after --warmup);
  - the kernels of one forward and one backward (torch.profiler): name, count, GPU time.

  NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0 python3 bench/realruns/xielu_probe.py --out DIR
Writes DIR/xielu_probe.json.
"""
import argparse
import inspect
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--config", default=os.path.join(HERE, "configs", "apertus-8b.json"))
ap.add_argument("--seq", type=int, default=4096)
ap.add_argument("--mbs", type=int, default=2)
ap.add_argument("--warmup", type=int, default=2)
ap.add_argument("--iters", type=int, default=5)
ap.add_argument("--out", required=True)
args = ap.parse_args()
os.makedirs(args.out, exist_ok=True)

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29617")
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1)
dev = torch.device("cuda", 0)

import transformers  # noqa: E402
import transformers.activations as acts  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402
from transformers import AutoConfig  # noqa: E402
from transformers.models.apertus.modeling_apertus import ApertusMLP  # noqa: E402

rec = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": torch.cuda.get_device_name(),
       "torch": torch.__version__, "cuda": torch.version.cuda, "transformers": transformers.__version__,
       "seq": args.seq, "mbs": args.mbs, "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
try:
    import xielu  # noqa: F401
    rec["xielu_package"] = "importable"
except Exception as e:  # the fused kernel's package (github nickjbrowning/XIELU)
    rec["xielu_package"] = "not importable: " + repr(e)[:200]
src, first = inspect.getsourcelines(acts.XIELUActivation)
rec["xielu_class_file"] = acts.__file__.split("site-packages/")[-1]
rec["xielu_class_lines"] = [first, first + len(src) - 1]
for i, ln in enumerate(src):
    if "def _xielu_python" in ln:
        rec["xielu_python_line"] = first + i
msrc, mfirst = inspect.getsourcelines(ApertusMLP)
rec["apertus_mlp_lines"] = [mfirst, mfirst + len(msrc) - 1]

with open(args.config) as f:
    CFG = json.load(f)
d = {k: v for k, v in CFG.items() if not k.startswith("_") and k not in ("torch_dtype", "dtype")}
d["num_hidden_layers"] = 1


def site():
    f = sys._getframe(2)
    out = []
    while f is not None and len(out) < 2:
        fn = f.f_code.co_filename
        if "/transformers/" in fn:
            out.append("%s:%d %s" % (fn.split("/transformers/")[-1], f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return out


def measure(act):
    dd = dict(d, hidden_act=act)
    cfg = AutoConfig.for_model(dd.pop("model_type"), **dd)
    cfg.dtype = torch.float32
    torch.manual_seed(0)
    with torch.device(dev):
        mlp = ApertusMLP(cfg).float()
    r = {"act": act, "act_class": type(mlp.act_fn).__name__}
    if hasattr(mlp.act_fn, "_xielu_cuda_obj"):
        r["xielu_cuda_obj"] = repr(mlp.act_fn._xielu_cuda_obj)
        r["buffers"] = {n: str(b.dtype) for n, b in mlp.act_fn.named_buffers()}
    fully_shard(mlp, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32),
                reshard_after_forward=True)
    h = cfg.hidden_size
    x = torch.randn(args.mbs, args.seq, h, device=dev, dtype=torch.bfloat16, requires_grad=True)
    gy = torch.randn(args.mbs, args.seq, h, device=dev, dtype=torch.bfloat16)
    for _ in range(args.warmup):
        mlp(x).backward(gy)
    torch.cuda.synchronize()
    # saved tensors and the held bytes of one forward
    # FSDP2's parameters are DTensors; the forward's unsharded bf16 copies are what gets
    # saved: told apart by shape (a weight or its transpose; alpha_p/alpha_n are [1])
    pshapes = set()
    for p in mlp.parameters():
        pshapes.add(tuple(p.shape))
        pshapes.add(tuple(reversed(p.shape)))
    saved = {}

    def pack(t):
        if not isinstance(t, torch.Tensor) or t.device.type != "cuda":
            return t
        st = t.untyped_storage()
        key = st.data_ptr()
        kind = "input" if key == x.untyped_storage().data_ptr() else (
            "param" if tuple(t.shape) in pshapes or t.numel() <= 1 else "act")
        e = saved.setdefault(key, {"storage_bytes": st.nbytes(), "kind": kind, "saves": []})
        e["saves"].append({"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                           "site": site()})
        return t

    m0 = torch.cuda.memory_allocated()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = mlp(x)
    torch.cuda.synchronize()
    r["held_bytes"] = torch.cuda.memory_allocated() - m0 - y.numel() * y.element_size()
    torch.cuda.reset_peak_memory_stats()
    mb = torch.cuda.memory_allocated()
    y.backward(gy)
    torch.cuda.synchronize()
    r["backward_peak_above_start_bytes"] = torch.cuda.max_memory_allocated() - mb
    del y
    acts_saved = [e for e in saved.values() if e["kind"] == "act"]
    r["saved_act_storage_bytes"] = sum(e["storage_bytes"] for e in acts_saved)
    r["saved"] = sorted(saved.values(), key=lambda e: -e["storage_bytes"])
    # timing
    fw, bw = [], []
    for _ in range(args.iters):
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        e0.record()
        y = mlp(x)
        e1.record()
        y.backward(gy)
        e2.record()
        torch.cuda.synchronize()
        fw.append(e0.elapsed_time(e1) / 1e3)
        bw.append(e1.elapsed_time(e2) / 1e3)
        del y
    r["fwd_s"] = statistics.median(fw)
    r["bwd_s"] = statistics.median(bw)
    # kernels of one forward and one backward
    from torch.profiler import ProfilerActivity, profile
    ks = {}
    for phase in ("fwd", "bwd"):
        if phase == "bwd":
            y = mlp(x)
            torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            if phase == "fwd":
                y = mlp(x)
            else:
                y.backward(gy)
            torch.cuda.synchronize()
        lst = []
        for ev in prof.key_averages():
            if ev.device_type.name == "CUDA":
                dt = getattr(ev, "device_time_total", None)
                if dt is None:
                    dt = ev.cuda_time_total
                if dt > 0 and ev.count > 0:
                    lst.append({"name": ev.key[:160], "count": ev.count, "us": round(dt, 2)})
        ks[phase] = sorted(lst, key=lambda k: -k["us"])
        del y
    r["kernels"] = ks
    del mlp, x, gy
    torch.cuda.empty_cache()
    return r


rec["runs"] = [measure("xielu"), measure("gelu")]
with open(os.path.join(args.out, "xielu_probe.json"), "w") as f:
    json.dump(rec, f, indent=1)
for r in rec["runs"]:
    print(r["act"], r.get("xielu_cuda_obj"), "held %.1f MB saved %.1f MB fwd %.3f ms bwd %.3f ms" % (
        r["held_bytes"] / 1e6, r["saved_act_storage_bytes"] / 1e6, r["fwd_s"] * 1e3, r["bwd_s"] * 1e3))
print({k: v for k, v in rec.items() if k != "runs"})
dist.destroy_process_group()
