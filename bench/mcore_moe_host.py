#!/usr/bin/env python3
"""mcore_moe_host.py — the host (CPU) issue time of one Megatron-Core MoE layer's forward and
backward per micro-batch (issue 20; bench/README.md "Megatron-Core MoE host cost").

Megatron-Core's own MoELayer (megatron/core/transformer/moe/moe_layer.py at 2a75ac1) with the
local (non-Transformer-Engine) spec (models/gpt/moe_module_specs.py get_moe_module_spec(use_te=
False): SequentialMLP of ColumnParallelLinear/RowParallelLinear experts, a Python loop per local
expert), the all-to-all dispatcher (MoEAlltoAllTokenDispatcher, its tokens_per_expert
device-to-host copy and the stream sync once per forward), TopKRouter with the aux loss, permute
fusion off (TE-only). Tiny tokens so the GPU is never the bottleneck: the wall time of a pass
is the host's. Variants:
  seq    experts as the local spec builds them (SequentialMLP)
  fused  the layer's experts replaced by one SwiGLU over all routed tokens (3 GEMMs + the
         activation: a constant number of launches, as a fused grouped MLP issues), so the
         time is the router + dispatcher + permute + combine part of the layer
Grid: EP 1/2/4 (4 ranks under torchrun; EP 1 and 2 run as 4 and 2 independent groups),
num_local_experts 8/32/128, top-k 2/8. Per config: 3 warm-up + 12 timed iterations, each after
a barrier and a device sync; host time from time.perf_counter around forward and backward,
GPU time from CUDA events; medians over iterations (rank 0 printed, all ranks in the JSON).
Then (rank 0) the host cost of single calls: torch.mm, an autograd Linear forward+backward,
torch._grouped_mm at G groups, a .tolist() device-to-host sync.
Usage: torchrun --nproc-per-node 4 bench/mcore_moe_host.py --mlm PATH --out DIR
"""
import argparse
import json
import os
import statistics
import sys
import time
import traceback

ap = argparse.ArgumentParser()
ap.add_argument("--mlm", required=True, help="Megatron-LM tree holding megatron/ (2a75ac1)")
ap.add_argument("--out", required=True)
ap.add_argument("--hidden", type=int, default=512)
ap.add_argument("--ffn", type=int, default=256)
ap.add_argument("--tokens", type=int, default=256)
ap.add_argument("--iters", type=int, default=12)
ap.add_argument("--eps", default="1,2,4")
ap.add_argument("--nles", default="8,32,128")
ap.add_argument("--topks", default="2,8")
args = ap.parse_args()
sys.path.insert(0, args.mlm)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))

t_imp = time.perf_counter()
from megatron.core import parallel_state, tensor_parallel  # noqa: E402
from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec  # noqa: E402
from megatron.core.transformer.transformer_config import TransformerConfig  # noqa: E402
t_imp = time.perf_counter() - t_imp


def log(*a):
    if rank == 0:
        print(*a, flush=True)


class FusedExperts(torch.nn.Module):
    """All routed tokens through one SwiGLU (gate/up, activation, down): the launches of a
    fused grouped MLP, constant in the number of local experts."""

    def __init__(self, h, f):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(h, 2 * f, device="cuda", dtype=torch.bfloat16) * 0.02)
        self.w2 = torch.nn.Parameter(torch.randn(f, h, device="cuda", dtype=torch.bfloat16) * 0.02)

    def forward(self, x, tokens_per_expert, probs, *a, **k):
        g, u = (x @ self.w1).chunk(2, dim=-1)
        y = (F.silu(g) * u * probs.unsqueeze(-1).to(x.dtype)) @ self.w2
        return y, None


PHASES = {"router": None, "dispatch_preprocess": None, "token_dispatch": None,
          "dispatch_postprocess": None, "experts": None, "combine_preprocess": None,
          "token_combine": None, "combine_postprocess": None}


def wrap(obj, name, key, acc):
    f = getattr(obj, name)

    def w(*a, **k):
        t = time.perf_counter()
        r = f(*a, **k)
        acc[key] = acc.get(key, 0.0) + time.perf_counter() - t
        return r
    setattr(obj, name, w)


def measure(ep, nle, topk, variant):
    E = nle * ep
    cfg = TransformerConfig(
        num_layers=1, hidden_size=args.hidden, ffn_hidden_size=4 * args.hidden,
        num_attention_heads=8, num_moe_experts=E, moe_router_topk=topk,
        moe_ffn_hidden_size=args.ffn, moe_token_dispatcher_type="alltoall",
        moe_grouped_gemm=False, moe_permute_fusion=False, moe_router_fusion=False,
        moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3,
        gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
        bias_activation_fusion=False, bf16=True, params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16, expert_model_parallel_size=ep,
        gradient_accumulation_fusion=False, apply_rope_fusion=False,
        masked_softmax_fusion=False, bias_dropout_fusion=False, persist_layer_norm=False)
    spec = get_moe_module_spec(use_te=False, num_experts=E, moe_grouped_gemm=False)
    layer = spec(config=cfg, layer_number=1).cuda().to(torch.bfloat16)
    layer.train()
    if variant == "fused":
        layer.experts = FusedExperts(args.hidden, args.ffn)
    acc = {}
    wrap(layer.router, "forward", "router", acc)
    td = layer.token_dispatcher
    for n in ("dispatch_preprocess", "token_dispatch", "dispatch_postprocess",
              "combine_preprocess", "token_combine", "combine_postprocess"):
        wrap(td, n, n, acc)
    wrap(layer.experts, "forward", "experts", acc)
    g = torch.Generator(device="cuda").manual_seed(1234 + rank)
    x = torch.randn(args.tokens, 1, args.hidden, device="cuda", dtype=torch.bfloat16,
                    generator=g).requires_grad_(True)
    dy = torch.randn(args.tokens, 1, args.hidden, device="cuda", dtype=torch.bfloat16, generator=g)
    rows = []
    for it in range(3 + args.iters):
        dist.barrier()
        torch.cuda.synchronize()
        acc.clear()
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        e0.record()
        t0 = time.perf_counter()
        out, _ = layer(x)
        t1 = time.perf_counter()
        e1.record()
        out.backward(dy)
        t2 = time.perf_counter()
        e2.record()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        if not torch.isfinite(out.float()).all():
            raise RuntimeError("non-finite output")
        if it >= 3:
            rows.append(dict(host_fwd_s=t1 - t0, host_bwd_s=t2 - t1, wall_s=t3 - t0,
                             gpu_fwd_s=e0.elapsed_time(e1) / 1e3,
                             gpu_bwd_s=e1.elapsed_time(e2) / 1e3,
                             **{"phase_" + k: v for k, v in acc.items()}))
        layer.zero_grad(set_to_none=True)
        x.grad = None
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    del layer
    torch.cuda.empty_cache()
    return med


def call_costs():
    """Host seconds per call of single ops on tiny shapes (rank 0 alone)."""
    res = {}
    a = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16)

    def per_call(fn, n=400, reps=15):
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        v = []
        for _ in range(reps):
            t = time.perf_counter()
            for _ in range(n):
                fn()
            v.append((time.perf_counter() - t) / n)
            torch.cuda.synchronize()
        return statistics.median(v)
    res["torch_mm_s"] = per_call(lambda: torch.mm(a, b))
    w = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    xi = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def lin():
        y = F.linear(xi, w)
        y.backward(a)
    res["linear_fwd_bwd_s"] = per_call(lin, n=200)
    for G in (8, 32, 128):
        xg = torch.randn(G * 16, 128, device="cuda", dtype=torch.bfloat16)
        wg = torch.randn(G, 128, 128, device="cuda", dtype=torch.bfloat16)
        offs = torch.arange(16, G * 16 + 1, 16, device="cuda", dtype=torch.int32)
        try:
            res[f"grouped_mm_G{G}_s"] = per_call(lambda: torch._grouped_mm(xg, wg, offs=offs))
        except Exception as e:  # noqa: BLE001
            res[f"grouped_mm_G{G}_s"] = repr(e)[:200]
    t = torch.randint(0, 100, (64,), device="cuda")
    res["tolist_sync_s"] = per_call(lambda: t.tolist(), n=100)
    return res


def main():
    os.makedirs(args.out, exist_ok=True)
    result = dict(rank=rank, world=world, import_s=t_imp, torch=torch.__version__,
                  cuda=torch.version.cuda, gpu=torch.cuda.get_device_name(local),
                  hidden=args.hidden, ffn=args.ffn, tokens=args.tokens, iters=args.iters,
                  runs=[])
    log(f"import megatron.core {t_imp:.1f}s torch {torch.__version__} {result['gpu']}")
    for ep in [int(e) for e in args.eps.split(",")]:
        if world % ep:
            continue
        parallel_state.destroy_model_parallel()
        parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=ep)
        tensor_parallel.model_parallel_cuda_manual_seed(1234)
        for variant in ("fused", "seq"):
            for nle in [int(n) for n in args.nles.split(",")]:
                for topk in [int(k) for k in args.topks.split(",")]:
                    if topk > nle * ep:
                        continue
                    t = time.perf_counter()
                    try:
                        med = measure(ep, nle, topk, variant)
                        err = None
                    except Exception:  # noqa: BLE001
                        med, err = {}, traceback.format_exc()[-1500:]
                    row = dict(ep=ep, nle=nle, topk=topk, variant=variant, err=err, **med)
                    result["runs"].append(row)
                    if err:
                        log(f"ep {ep} nle {nle:3d} topk {topk} {variant:5s} ERROR {err}")
                    else:
                        log(f"ep {ep} nle {nle:3d} topk {topk} {variant:5s} host fwd "
                            f"{med['host_fwd_s']*1e3:7.3f} bwd {med['host_bwd_s']*1e3:7.3f} ms "
                            f"gpu fwd {med['gpu_fwd_s']*1e3:7.3f} bwd {med['gpu_bwd_s']*1e3:7.3f} "
                            f"wall {med['wall_s']*1e3:7.3f}  ({time.perf_counter()-t:.1f}s) "
                            + " ".join(f"{k[6:]}={v*1e3:.3f}" for k, v in med.items()
                                       if k.startswith("phase_")))
    dist.barrier()
    if rank == 0:
        try:
            result["calls"] = call_costs()
        except Exception:  # noqa: BLE001
            result["calls"] = traceback.format_exc()[-1500:]
        log("calls", json.dumps(result["calls"]))
    with open(os.path.join(args.out, f"rank{rank}.json"), "w") as f:
        json.dump(result, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
