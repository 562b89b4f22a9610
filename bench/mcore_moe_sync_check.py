#!/usr/bin/env python3
"""mcore_moe_sync_check.py — does the host time after the MoE layer's device-to-host sync show
up even when the GPU has long work before it? (issue 20; bench/README.md "Megatron-Core MoE host
cost"). A stack of L Megatron-Core MoE layers (bench/mcore_moe_host.py's "fused" variant: the
local spec's router and all-to-all dispatcher, the experts one SwiGLU), each after a pure GPU
delay of D ms (torch.cuda._sleep: one launch, no host time; its backward sleeps 2D, as a
layer's backward is about twice its forward). Without a sync the host would issue ahead during
the delays and a layer's forward would take max(D, host); with the all-to-all dispatcher's
sync the host's lead is gone at every layer, and costmodel/mcore_moe_host.c prices the forward
as max(host total, D + host after the sync). The script prints the measured wall time per layer
of the forward and the backward for D in 0..4 ms, with the host split (before the sync: router
and dispatch_preprocess; after) measured at D = 0.
Usage: torchrun --nproc-per-node 4 bench/mcore_moe_sync_check.py --mlm PATH --out DIR
"""
import argparse
import json
import os
import statistics
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mlm", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--layers", type=int, default=4)
args = ap.parse_args()
sys.path.insert(0, args.mlm)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.argv = [sys.argv[0], "--mlm", args.mlm, "--out", args.out]
import mcore_moe_host as mh  # noqa: E402  (initialises the process group and imports megatron)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from megatron.core import parallel_state, tensor_parallel  # noqa: E402


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


def cycles_per_ms():
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    torch.cuda._sleep(20_000_000)
    e1.record()
    torch.cuda.synchronize()
    return 20_000_000 / e0.elapsed_time(e1)


def build(ep, nle, topk):
    E = nle * ep
    cfg = mh.TransformerConfig(
        num_layers=1, hidden_size=512, ffn_hidden_size=2048, num_attention_heads=8,
        num_moe_experts=E, moe_router_topk=topk, moe_ffn_hidden_size=256,
        moe_token_dispatcher_type="alltoall", moe_grouped_gemm=False, moe_permute_fusion=False,
        moe_router_fusion=False, moe_router_load_balancing_type="aux_loss",
        moe_aux_loss_coeff=1e-3, gated_linear_unit=True, activation_func=F.silu,
        add_bias_linear=False, bias_activation_fusion=False, bf16=True,
        params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
        expert_model_parallel_size=ep, gradient_accumulation_fusion=False,
        apply_rope_fusion=False, masked_softmax_fusion=False, bias_dropout_fusion=False,
        persist_layer_norm=False)
    spec = mh.get_moe_module_spec(use_te=False, num_experts=E, moe_grouped_gemm=False)
    layers = []
    for i in range(args.layers):
        lay = spec(config=cfg, layer_number=i + 1).cuda().to(torch.bfloat16)
        lay.experts = mh.FusedExperts(512, 256)
        lay.train()
        layers.append(lay)
    return layers


def run(layers, cyc, iters=10):
    x0 = torch.randn(256, 1, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn(256, 1, 512, device="cuda", dtype=torch.bfloat16)
    rows = []
    for it in range(3 + iters):
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        x = x0
        for lay in layers:
            x = Sleep.apply(x, cyc)
            x, _ = lay(x)
        th = time.perf_counter()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        x.backward(dy)
        tb = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        for lay in layers:
            lay.zero_grad(set_to_none=True)
        if it >= 3:
            rows.append(dict(fwd_wall_s=t1 - t0, fwd_host_s=th - t0, bwd_wall_s=t2 - t1,
                             bwd_host_s=tb - t1))
    return {k: statistics.median(r[k] for r in rows) / len(layers) for k in rows[0]}


def main():
    cpm = cycles_per_ms()
    out = dict(cycles_per_ms=cpm, gpu=torch.cuda.get_device_name(), layers=args.layers, runs=[])
    for ep in (1, 4):
        parallel_state.destroy_model_parallel()
        parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=ep)
        tensor_parallel.model_parallel_cuda_manual_seed(1234)
        for nle, topk in ((8, 8), (32, 8)):
            layers = build(ep, nle, topk)
            # host split at D = 0 (one layer's phases, as mcore_moe_host.py)
            for d_ms in (0, 0.5, 1, 2, 4):
                r = run(layers, int(d_ms * cpm))
                r.update(ep=ep, nle=nle, topk=topk, delay_ms=d_ms)
                out["runs"].append(r)
                mh.log(f"ep {ep} nle {nle} topk {topk} D {d_ms:3.1f} ms: per layer fwd wall "
                       f"{r['fwd_wall_s']*1e3:6.3f} (host {r['fwd_host_s']*1e3:6.3f}) bwd wall "
                       f"{r['bwd_wall_s']*1e3:6.3f} (host {r['bwd_host_s']*1e3:6.3f}) ms")
            del layers
    if mh.rank == 0:
        with open(os.path.join(args.out, "sync_check.json"), "w") as f:
            json.dump(out, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
