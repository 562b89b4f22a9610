"""A real PyTorch FSDP2 training step of a Llama-style model, to set beside `plan measure` of the
same layout (issue 3's benchmark): step time and peak GPU memory.

Model: Llama-3.1-8B's shapes (32 layers, hidden 4096, FFN 14336, 32 heads, 8 KV heads, head dim
128, vocab 128256, untied embeddings, RMSNorm, SwiGLU, RoPE), in eager PyTorch (bench/hf_llama.py)
the way Hugging Face's modeling_llama.py computes it (fp32 RMSNorm, rotate_half RoPE, SDPA with
a causal mask), so the script needs nothing beyond torch. Parameters: 8,030,261,248.

Layout: torch FSDP2 (fully_shard on every decoder layer and on the root), MixedPrecisionPolicy
(bf16 params, fp32 gradient reduction), reshard_after_forward=True, no activation checkpointing,
AdamW (fused) over the fp32 shards; micro-batch 1 sequence of --seq tokens per GPU, one
micro-batch per step (gbs = GPUs).

Usage: NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 4 bench/fsdp2_step.py [--seq 4096]
       [--layers 32] [--steps 5]
Compare: plan measure --model 8b --system h200-x4 --framework fsdp2 --gpus 4 --gbs 4
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

p = argparse.ArgumentParser()
p.add_argument("--seq", type=int, default=4096)
p.add_argument("--layers", type=int, default=32)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--profile", type=int, default=1, help="profile one more step: GPU time by kind")
p.add_argument("--kernels", default="", help="with --profile: write every kernel of the profiled "
               "step (calls, total ms, name) to this file, rank 0")
args = p.parse_args()

from hf_llama import V, Llama  # noqa: E402 (the model, bench/hf_llama.py)


def profile_step(step, rank):
    """GPU kernel time of one step by kind (rank 0), to set beside plan measure's components."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        if rank != 0:
            return
        kinds = {}
        for e in prof.key_averages():
            t = getattr(e, "self_device_time_total", None)
            if t is None:
                t = getattr(e, "self_cuda_time_total", 0)
            n = e.key.lower()
            if "nccl" in n:
                k = "nccl (overlapped or not)"
            elif any(s in n for s in ("flash", "fmha", "sdpa", "attention", "cudnn")):
                k = "attention"
            elif any(s in n for s in ("gemm", "nvjet", "cutlass", "sm90_xmma", "cublas")):
                k = "gemm"
            elif "adam" in n:
                k = "optimizer"
            else:
                k = "elementwise/copies/other"
            kinds[k] = kinds.get(k, 0) + t / 1e6
        if args.kernels:
            with open(args.kernels, "w") as f:
                f.write("calls\ttotal_ms\tname\n")
                for e in sorted(prof.key_averages(),
                                key=lambda e: -getattr(e, "self_device_time_total", 0)):
                    t = getattr(e, "self_device_time_total", 0)
                    if t > 0:
                        f.write(f"{e.count}\t{t/1e3:.3f}\t{e.key}\n")
        for k, t in sorted(kinds.items(), key=lambda kv: -kv[1]):
            print(f"fsdp2_step: profile rank 0 {k:26s} {t:.4f} s")
        top = sorted(prof.key_averages(), key=lambda e: -getattr(e, "self_device_time_total", 0))
        for e in top[:12]:
            print(f"fsdp2_step:   {getattr(e, 'self_device_time_total', 0)/1e3:9.2f} ms  {e.key[:90]}")
    except Exception as exc:  # profiling is an aid, never a failure
        if rank == 0:
            print(f"fsdp2_step: profile failed: {exc}")


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    torch.manual_seed(0)
    with torch.device("meta"):
        model = Llama(args.layers)
    nparams = sum(p.numel() for p in model.parameters())
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.layers:
        fully_shard(layer, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    model.to_empty(device=dev)
    with torch.no_grad():
        for name, prm in model.named_parameters():
            shard = prm.to_local() if hasattr(prm, "to_local") else prm
            if "norm" in name:
                shard.fill_(1.0)
            else:
                shard.normal_(0.0, 0.02)
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    except Exception:  # older torch without fused DTensor support
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    g = torch.Generator(device=dev).manual_seed(1234 + rank)
    ids = torch.randint(0, V, (1, args.seq + 1), device=dev, generator=g)
    inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        logits = model(inp)
        loss = F.cross_entropy(logits.float().view(-1, V), lab.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    times = []
    torch.cuda.reset_peak_memory_stats()
    for i in range(args.warmup + args.steps):
        dist.barrier()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        t = torch.tensor([time.perf_counter() - t0], device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        if i >= args.warmup:
            times.append(t.item())
    if args.profile:
        profile_step(step, rank)
    st = torch.cuda.memory_stats()
    if rank == 0:  # where the caching allocator's reserve over the tensors' peak goes
        gib = 1 << 30
        print("fsdp2_step: allocator peaks (GiB): "
              + ", ".join(f"{k} {st.get(k, 0)/gib:.2f}" for k in (
                  "allocated_bytes.all.peak", "active_bytes.all.peak",
                  "inactive_split_bytes.all.peak", "reserved_bytes.all.peak",
                  "reserved_bytes.large_pool.peak", "reserved_bytes.small_pool.peak"))
              + f"; segments peak {st.get('segment.all.peak', 0)}, "
              f"cudaMalloc retries {st.get('num_alloc_retries', 0)}")
    free, total = torch.cuda.mem_get_info()
    mem = torch.tensor([torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(),
                        total - free], device=dev, dtype=torch.float64)
    dist.all_reduce(mem, op=dist.ReduceOp.MAX)
    if rank == 0:
        med = statistics.median(times)
        print(f"fsdp2_step: torch {torch.__version__}, {world} x {torch.cuda.get_device_name(dev)}, "
              f"params {nparams:,}, seq {args.seq}, mbs 1, layers {args.layers}")
        print(f"fsdp2_step: step times {', '.join(f'{x:.4f}' for x in times)} s; median {med:.4f} s "
              f"(spread {(max(times)-min(times))/med*100:.1f}%), loss {loss.item():.3f}")
        print(f"fsdp2_step: tokens/s/GPU {args.seq/med:.0f}, MFU "
              f"{6*nparams*args.seq/med/989.4e12*100:.1f}% (6N only, no attention)")
        gib = 1 << 30
        print(f"fsdp2_step: peak allocated {mem[0].item()/gib:.2f} GiB, peak reserved "
              f"{mem[1].item()/gib:.2f} GiB, device used (total - free) {mem[2].item()/gib:.2f} GiB")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
