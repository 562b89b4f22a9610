"""One real multi-GPU training run with PyTorch's own model parallelism, measured, one JSON line.

Issue 24's ground truth for the layouts FSDP2 alone does not cover (realrun.py does FSDP2 data
parallel, HF and native). Started by torchrun, one process per GPU. The model is always
bench/realruns/native_llama.py (torchtitan's Llama, built from a Hugging Face config.json, cut to
--layers), built on the meta device, parallelized, then materialized and initialized N(0, 0.02),
as torchtitan orders it. Mixed precision everywhere as realrun.py: fp32 parameters, FSDP2's
MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) on the data-parallel mesh dimension
(fully_shard per block and on the root; a one-rank dimension when dp = 1, so the compute is bf16
in every layout), fused AdamW, gradient clipping at 1.0 (the norm reduced over every rank that
holds a different part of the model), loss F.cross_entropy(logits.float()).

  --layout tp   DTensor tensor parallel with sequence parallel, torchtitan's plan for Llama
                (parallelize_module: embedding RowwiseParallel -> Shard(1), norms SequenceParallel,
                wq/wk/wv/w1/w3 ColwiseParallel, wo/w2 RowwiseParallel -> Shard(1), output
                ColwiseParallel -> Shard(-1) with loss_parallel), times FSDP2 over --dp ranks
                (mesh dp x tp, tp innermost).
  --layout pp   torch.distributed.pipelining: the model split into pp x vpp stages of equal layers
                (stage 0 also the embedding, the last also norm + output), PipelineStage per
                stage, Schedule1F1B (--vpp 1) or ScheduleInterleaved1F1B (--vpp > 1, rank r holds
                stages r, r + pp, ...), --microbatches micro-batches of --mbs sequences per step;
                FSDP2 per stage on a one-rank mesh, reshard_after_forward=False (torchtitan's
                choice under PP). Composed (since 2026-11-29): world = pp x dp x --tp, the mesh
                (pp, dp, tp) in torchtitan's order; each stage TP'd (the tp layout's plan, without
                the modules the stage lacks), then FSDP2 over dp (reshard_after_forward=False);
                each dp rank its own data; torchtitan's pipelined loss (token sum / global tokens
                all-reduced over dp, scale_grads=False, FSDP2's gradient division off); the
                clipping norm's stage squares summed over the pp group only.
  --layout cp   context parallel: torch.distributed.tensor.experimental.context_parallel over
                the cp ranks (inputs, labels and RoPE table sharded on the sequence with the
                causal load balancer; ring attention, rotate method alltoall, flash/efficient
                SDPA), FSDP2 over the same ranks (torchtitan's dp_shard x cp). Composed: world =
                dp x cp x --tp, mesh (dp, cp, tp); FSDP2 over dp x cp flattened, context parallel
                over cp, TP (with loss_parallel) over tp; each dp rank its own data.
  --layout ep   expert parallel: every decoder layer's MLP is a mixture of experts (the config's
                num_experts, num_experts_per_tok, moe_intermediate_size: Qwen3-MoE), softmax
                router, top-k, the experts split over the ep ranks (E/ep each, one SwiGLU per
                expert, looped), tokens dispatched and combined by all_to_all_single with the
                per-rank counts exchanged first (torch.distributed.nn.functional: autograd
                through both all-to-alls); the non-expert parameters FSDP2 over all ranks,
                each rank's experts FSDP2 on a one-rank mesh (torchtitan's ep = dp_shard layout).
                Composed: --ep below the world size, torchtitan's sparse mesh (efsdp, ep), ep
                innermost: the all-to-alls over the ep group, the experts FSDP2 over efsdp
                (world / ep ranks), the rest FSDP2 over all ranks; expert squares of the
                clipping norm summed over the ep group.

Timing as realrun.py: wall time of each whole step (forward, backward, clip, optimizer step,
zero_grad) between torch.cuda.synchronize() calls, after --warmup steps; a step lasts as long as
its slowest rank (max over ranks per step). Memory: torch.cuda peak allocated / reserved per rank
over warm-up and timed steps (set-up excluded), the largest over ranks in the top-level fields,
every rank's in *_per_rank_bytes; nonalloc_end_bytes (device used minus reserved at the end: CUDA
context, NCCL, kernels, workspaces), the largest over ranks. Rank 0 writes the line (realrun.py's
schema plus dp, tp, pp, vpp, cp, ep, schedule, microbatches, world_size).

The script is split by concept (each module's header says why it exists): prun_cli.py the command
line, its checks and the record skeleton (no torch: --help answers anywhere); prun_build.py the
mesh, the parallelized model, optimizers and batch; prun_moe.py the expert-parallel MoE layer;
prun_step.py one training step per layout; prun_measure.py the timed steps, host clock marks,
profiled step and memory fields. This file only runs them in order and writes the record.

Usage (repository root, on the GPU machine):
  NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 2 bench/realruns/parallel_run.py --layout tp --tp 2 \
      --config llama-3.1-8b --layers 8 --seq 4096 --mbs 1 --out results.jsonl
"""
import gc
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import prun_cli  # noqa: E402  (no torch: --help and bad flags answer before torch loads)

ctx = prun_cli.parse()
T0 = time.perf_counter()
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from native_llama import Args  # noqa: E402
from prun_build import build  # noqa: E402
from prun_measure import memory_fields, pin_rank, timed_steps, used, versions  # noqa: E402
from host_speed_probe import host_speed_probe  # noqa: E402
from prun_step import make_step  # noqa: E402


def main():
    args, rec, CFG, RANK = ctx.args, ctx.rec, ctx.CFG, ctx.RANK
    local = int(os.environ["LOCAL_RANK"])
    if os.environ.get("PRUN_PIN") == "1":  # diagnostic: each rank on its own share of the CPUs
        pin_rank(local, int(os.environ["LOCAL_WORLD_SIZE"]))
        rec["pinned"] = True
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    torch.zeros(1, device=dev)
    torch.cuda.synchronize()
    rec["gpu"] = torch.cuda.get_device_name(dev)
    rec["versions"] = versions()
    u, total = used(dev)
    rec["device_total_bytes"] = total
    rec["cuda_context_bytes"] = u - torch.cuda.memory_reserved(dev)
    dist.init_process_group("nccl", device_id=dev)
    t = torch.ones(1, device=dev)
    dist.all_reduce(t)
    torch.cuda.synchronize()
    u, _ = used(dev)
    rec["context_after_nccl_bytes"] = u - torch.cuda.memory_reserved(dev)
    torch.manual_seed(0)
    a = Args(CFG, args.layers or None)
    ctx.phase = "build"
    try:
        b = build(ctx, a, dev)
        step = make_step(ctx, b, dev)
        if args.gc == "torchtitan":  # torchtitan's GarbageCollection (prun_cli.py --gc)
            gc.disable()
            gc.collect()
        timed_steps(ctx, b, step, dev)
    except Exception as e:
        import traceback
        traceback.print_exc()
        if isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower():
            rec["oom"], rec["oom_phase"], rec["oom_message"] = True, ctx.phase, str(e)[:800]
        else:
            rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:1500])
            rec["error_phase"] = ctx.phase
    memory_fields(ctx, dev)
    if ctx.phase == "done":
        try:  # the machine's host speed (host_speed_probe.py), after the timed steps and memory
            rec["host_probe"] = host_speed_probe(dev)
        except Exception as e:  # the run's figures stay valid without it
            rec["host_probe_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    rec["wall_s"] = round(time.perf_counter() - T0, 2)
    if RANK == 0 or "error" in rec or rec["oom"]:
        line = json.dumps(rec, sort_keys=True)
        print("REALRUN " + line, flush=True)
        if args.out and RANK == 0:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    if ctx.phase == "done":
        try:
            dist.destroy_process_group()
        except Exception:
            pass
    else:
        os._exit(1)  # a failed rank must not wait in a collective
    return 1 if "error" in rec else 0


if __name__ == "__main__":
    sys.exit(main())
