#!/usr/bin/env python3
"""mcore_layer_host.py — the host (CPU) time of a Megatron-Core transformer layer's attention
block, beside its MoE block (issue 20, moe7; bench/README.md "The attention block's host time
in a Megatron MoE layer").

costmodel/mcore_moe_host.c prices a Megatron MoE layer's forward as at least the host time the
MoE block issues (router, dispatcher, permute, combine, experts: measured on Megatron-Core's
MoELayer alone by bench/mcore_moe_host.py), because the dispatcher's device-to-host sync takes
the host's lead away once per layer. Between two such syncs the host issues the rest of the MoE
block AND the next layer's attention block (input norm, QKV projection, core attention, output
projection, bias-dropout-add, the MLP's norm, the residual adds); that part was not measured.
This script measures it on one GPU with Megatron-Core's own TransformerLayer (local spec, no
Transformer Engine on the device machines), tiny shapes so the GPU is never the bottleneck:

  moe         the MoELayer alone (get_moe_module_spec(use_te=False)), the experts replaced by
              one SwiGLU over all routed tokens (bench/mcore_moe_host.py's "fused" variant)
  layer       a whole TransformerLayer (get_gpt_layer_local_spec(num_experts=E), RMSNorm) with
              the same MoE block; core attention replaced by one torch SDPA call (the launches
              of a fused attention kernel, as TE's FusedAttention issues one cuDNN call), no
              rotary embedding (plan prices an unfused RoPE's ops on their own)
  layer_qkln  the same with qk_layernorm (Qwen3)

The attention block's host time is layer - moe (forward and backward). A stack of L layers runs
L times per pass; times are per layer. Then a stack of `layer`s with a pure GPU delay of D ms
before each layer (torch.cuda._sleep, one launch; its backward sleeps 2D): the forward per
layer against the pricing's max(host total, D + host after the sync).
Usage: python3 bench/mcore_layer_host.py --mlm PATH --out DIR   (one GPU, world size 1)
"""
import argparse
import json
import os
import statistics
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mlm", required=True, help="Megatron-LM tree holding megatron/ (2a75ac1)")
ap.add_argument("--out", required=True)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--iters", type=int, default=12)
args = ap.parse_args()
sys.path.insert(0, args.mlm)
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29531")
os.environ.setdefault("RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")
os.environ.setdefault("LOCAL_RANK", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

torch.cuda.set_device(0)
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
t_imp = time.perf_counter()
from megatron.core import parallel_state, tensor_parallel  # noqa: E402
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec  # noqa: E402
from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec  # noqa: E402
from megatron.core.transformer.transformer_config import TransformerConfig  # noqa: E402
t_imp = time.perf_counter() - t_imp

H, FFN, TOK, HEADS, GROUPS = 512, 256, 256, 8, 2


class FusedExperts(torch.nn.Module):
    """All routed tokens through one SwiGLU: a fused grouped MLP's constant launches."""

    def __init__(self, h, f):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(h, 2 * f, device="cuda", dtype=torch.bfloat16) * 0.02)
        self.w2 = torch.nn.Parameter(torch.randn(f, h, device="cuda", dtype=torch.bfloat16) * 0.02)

    def forward(self, x, tokens_per_expert, probs, *a, **k):
        g, u = (x @ self.w1).chunk(2, dim=-1)
        y = (F.silu(g) * u * probs.unsqueeze(-1).to(x.dtype)) @ self.w2
        return y, None


class SdpaCore(torch.nn.Module):
    """Core attention as one fused kernel: [s, b, heads, d] in, [s, b, heads*d] out."""

    def forward(self, q, k, v, attention_mask, attn_mask_type=None, attention_bias=None,
                packed_seq_params=None, **kw):
        s, b, n, d = q.shape
        q, k, v = (t.permute(1, 2, 0, 3) for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return o.permute(2, 0, 1, 3).reshape(s, b, n * d)


class Sleep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, cycles):
        ctx.cycles = cycles
        if cycles:
            torch.cuda._sleep(cycles)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        if ctx.cycles:
            torch.cuda._sleep(2 * ctx.cycles)
        return g, None


def config(nle, topk, qkln):
    return TransformerConfig(
        num_layers=args.layers, hidden_size=H, ffn_hidden_size=4 * H, num_attention_heads=HEADS,
        num_query_groups=GROUPS, num_moe_experts=nle, moe_router_topk=topk, moe_ffn_hidden_size=FFN,
        moe_token_dispatcher_type="alltoall", moe_grouped_gemm=False, moe_permute_fusion=False,
        moe_router_fusion=False, moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=1e-3,
        gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
        bias_activation_fusion=False, bf16=True, params_dtype=torch.bfloat16,
        pipeline_dtype=torch.bfloat16, expert_model_parallel_size=1,
        gradient_accumulation_fusion=False, apply_rope_fusion=False, masked_softmax_fusion=False,
        bias_dropout_fusion=False, persist_layer_norm=False, normalization="RMSNorm",
        qk_layernorm=qkln, hidden_dropout=0.0, attention_dropout=0.0)


def build(variant, nle, topk):
    qkln = variant == "layer_qkln"
    cfg = config(nle, topk, qkln)
    layers = []
    for i in range(args.layers):
        if variant == "moe":
            spec = get_moe_module_spec(use_te=False, num_experts=nle, moe_grouped_gemm=False)
            lay = spec(config=cfg, layer_number=i + 1).cuda().to(torch.bfloat16)
            lay.experts = FusedExperts(H, FFN)
        else:
            spec = get_gpt_layer_local_spec(num_experts=nle, moe_grouped_gemm=False,
                                            qk_layernorm=qkln, normalization="RMSNorm")
            lay = spec.module(config=cfg, submodules=spec.submodules, layer_number=i + 1)
            lay = lay.cuda().to(torch.bfloat16)
            lay.self_attention.core_attention = SdpaCore()
            lay.mlp.experts = FusedExperts(H, FFN)
        lay.train()
        layers.append(lay)
    return layers


def run(layers, cycles=0):
    x0 = torch.randn(TOK, 1, H, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(TOK, 1, H, device="cuda", dtype=torch.bfloat16)
    rows = []
    for it in range(3 + args.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        x = x0
        for lay in layers:
            if cycles:
                x = Sleep.apply(x, cycles)
            out = lay(x)
            x = out[0] if isinstance(out, tuple) else out
        th = time.perf_counter()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        x.backward(dy)
        tb = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        for lay in layers:
            lay.zero_grad(set_to_none=True)
        x0.grad = None
        if it >= 3:
            rows.append(dict(fwd_wall_s=t1 - t0, fwd_host_s=th - t0, bwd_wall_s=t2 - t1,
                             bwd_host_s=tb - t1))
    n = len(layers)
    return {k: statistics.median(r[k] for r in rows) / n for k in rows[0]}


def cycles_per_ms():
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    torch.cuda._sleep(20_000_000)
    e1.record()
    torch.cuda.synchronize()
    return 20_000_000 / e0.elapsed_time(e1)


def main():
    parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=1)
    tensor_parallel.model_parallel_cuda_manual_seed(1234)
    out = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, import_s=t_imp,
               layers=args.layers, iters=args.iters, hidden=H, tokens=TOK, runs=[], delay=[])
    print(f"import {t_imp:.1f}s {out['gpu']} torch {torch.__version__}", flush=True)
    for nle, topk in ((8, 8), (32, 8)):
        for variant in ("moe", "layer", "layer_qkln"):
            r = run(build(variant, nle, topk))
            r.update(variant=variant, local_experts=nle, topk=topk)
            out["runs"].append(r)
            print(f"{variant:10s} nle {nle:3d} topk {topk}: fwd host {1e3*r['fwd_host_s']:.3f} "
                  f"wall {1e3*r['fwd_wall_s']:.3f} | bwd host {1e3*r['bwd_host_s']:.3f} "
                  f"wall {1e3*r['bwd_wall_s']:.3f} ms/layer", flush=True)
    cpm = cycles_per_ms()
    out["cycles_per_ms"] = cpm
    layers = build("layer", 8, 8)
    for d in (0.0, 0.5, 1.0, 2.0, 4.0):
        r = run(layers, int(d * cpm))
        r.update(delay_ms=d)
        out["delay"].append(r)
        print(f"layer + delay {d:.1f} ms: fwd wall {1e3*r['fwd_wall_s']:.3f} host "
              f"{1e3*r['fwd_host_s']:.3f} | bwd wall {1e3*r['bwd_wall_s']:.3f} ms/layer", flush=True)
    with open(os.path.join(args.out, "layer_host.json"), "w") as f:
        json.dump(out, f, indent=1)
    dist.destroy_process_group()


main()
