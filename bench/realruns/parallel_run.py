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
                choice under PP).
  --layout cp   context parallel: torch.distributed.tensor.experimental.context_parallel over
                the cp ranks (inputs, labels and RoPE table sharded on the sequence with the
                causal load balancer; ring attention, rotate method alltoall, flash/efficient
                SDPA), FSDP2 over the same ranks (torchtitan's dp_shard x cp).
  --layout ep   expert parallel: every decoder layer's MLP is a mixture of experts (the config's
                num_experts, num_experts_per_tok, moe_intermediate_size: Qwen3-MoE), softmax
                router, top-k, the experts split over the ep ranks (E/ep each, one SwiGLU per
                expert, looped), tokens dispatched and combined by all_to_all_single with the
                per-rank counts exchanged first (torch.distributed.nn.functional: autograd
                through both all-to-alls); the non-expert parameters FSDP2 over all ranks,
                each rank's experts FSDP2 on a one-rank mesh (torchtitan's ep = dp_shard layout).

Timing as realrun.py: wall time of each whole step (forward, backward, clip, optimizer step,
zero_grad) between torch.cuda.synchronize() calls, after --warmup steps; a step lasts as long as
its slowest rank (max over ranks per step). Memory: torch.cuda peak allocated / reserved per rank
over warm-up and timed steps (set-up excluded), the largest over ranks in the top-level fields,
every rank's in *_per_rank_bytes; nonalloc_end_bytes (device used minus reserved at the end: CUDA
context, NCCL, kernels, workspaces), the largest over ranks. Rank 0 writes the line (realrun.py's
schema plus dp, tp, pp, vpp, cp, ep, schedule, microbatches, world_size).

Usage (repository root, on the GPU machine):
  NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 2 bench/realruns/parallel_run.py --layout tp --tp 2 \
      --config llama-3.1-8b --layers 8 --seq 4096 --mbs 1 --out results.jsonl
"""
import argparse
import datetime
import inspect
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

p = argparse.ArgumentParser()
p.add_argument("--config", required=True, help="name in bench/realruns/configs or a path")
p.add_argument("--layout", choices=("tp", "pp", "cp", "ep"), required=True)
p.add_argument("--tp", type=int, default=1)
p.add_argument("--pp", type=int, default=1)
p.add_argument("--vpp", type=int, default=1, help="pp: stages per rank (interleaved 1F1B when > 1)")
p.add_argument("--cp", type=int, default=1)
p.add_argument("--ep", type=int, default=1)
p.add_argument("--microbatches", type=int, default=1, help="pp: micro-batches per step")
p.add_argument("--seq", type=int, default=4096)
p.add_argument("--mbs", type=int, default=1)
p.add_argument("--layers", type=int, default=0, help="cut the model to N decoder layers")
p.add_argument("--experts", choices=("loop", "grouped"), default="loop",
               help="ep: local experts one matmul each (loop) or torch._grouped_mm (grouped)")
p.add_argument("--route", choices=("topk", "balanced"), default="topk",
               help="ep: router top-k (counts exchanged, copied to the host every MoE layer) or "
                    "balanced: token copy j of token t goes to expert (t*k + j) %% E (router still run, "
                    "its weights gathered there), split sizes known on the host, index tensors built "
                    "once: no count exchange, no device-to-host copy, no host index building")
p.add_argument("--permute", choices=("device", "host"), default="device",
               help="ep, top-k routing: how the received rows are regrouped by local expert (and, "
                    "grouped, padded to 16 rows per expert). device (default since 2026-11-28): as "
                    "torchtitan's _token_dispatch/_permute (torchtitan/distributed/expert_parallel.py, "
                    "models/moe/utils.py generate_permute_indices): counts histogrammed on the GPU, one "
                    "blocking device-to-host copy of the split sizes per MoE layer, the permutation and "
                    "the grouped GEMMs' offsets computed on the GPU; the loop copies the per-expert "
                    "counts to the host (its .tolist()) and runs torch.split. host (every run before "
                    "2026-11-28, records without a `permute` field): torch.bincount, two .tolist() "
                    "copies, and the index and padding tensors built on the host per (rank, expert) "
                    "with torch.arange, sent to the GPU")
p.add_argument("--profile", default="",
               help="after the timed steps, one more step under torch.profiler; rank 0 writes a "
                    "summary JSON (bench/realruns/trace_summary.py) here, and the gzipped trace "
                    "beside it (PATH without .json + .trace.json.gz)")
p.add_argument("--timeline", action="store_true",
               help="pp: CUDA events around every stage's forward_one_chunk / backward_one_chunk "
                    "of the timed steps, on every rank; the record gets `timeline`: per rank, per "
                    "step, [kind, stage, micro-batch, start ms, end ms] from the step's start "
                    "(bench/realruns/pp_timeline.py reads it)")
p.add_argument("--profile-rank", type=int, default=0, help="--profile: the rank whose trace is written")
p.add_argument("--no-loss-parallel", action="store_true", help="tp: gather the logits instead")
p.add_argument("--host-split", action="store_true",
               help="tp: the host's clock at each block's forward start and at the gradient of each "
                    "block's input (a tensor hook: that block's backward has been issued), and around "
                    "the loss head, backward, clip and optimizer, every timed step (rank 0); medians per "
                    "block in host_split (bench/results/tphost_2026-11-27/README.md)")
p.add_argument("--ckpt", action="store_true",
               help="full activation checkpointing of every decoder block (checkpoint_wrapper, "
                    "non-reentrant, torchtitan's ac mode full), applied after TP and before FSDP2")
p.add_argument("--compile", action="store_true",
               help="torch.compile(block, fullgraph=True) per decoder block after TP / checkpointing and "
                    "before FSDP2 (torchtitan's apply_compile order); tp, cp and pp layouts")
p.add_argument("--async-tp", action="store_true",
               help="tp layout with --compile: torchtitan's async TP (torchtitan/distributed/"
                    "tensor_parallel.py maybe_enable_async_tp: torch._inductor.config._micro_pipeline_tp "
                    "= True, and enable_symm_mem_for_group on the TP group where this torch has it)")
p.add_argument("--replicate", type=int, default=1,
               help="tp layout: HSDP, the data-parallel ranks split into REPLICATE replica groups, FSDP2 "
                    "on the 2D (replicate, shard) mesh (torchtitan's data_parallel_replicate_degree); "
                    "with --tp 1 the model is plain FSDP2 / HSDP, no DTensor TP")
p.add_argument("--schedule", choices=("auto", "zbv"), default="auto",
               help="pp: auto = 1F1B (--vpp 1) / interleaved 1F1B (--vpp > 1); zbv = "
                    "ScheduleZBVZeroBubble (--vpp 2, V-shaped stages: rank r holds r and 2 pp - 1 - r)")
p.add_argument("--clip", type=float, default=1.0)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--label", default="")
p.add_argument("--out", default="")
args = p.parse_args()

cfg_path = args.config
if not os.path.exists(cfg_path):
    cfg_path = os.path.join(HERE, "configs", args.config + ".json")
with open(cfg_path) as f:
    CFG = json.load(f)
WS = int(os.environ.get("WORLD_SIZE", "1"))
RANK = int(os.environ.get("RANK", "0"))
model_par = args.tp * args.pp * args.cp
if WS % model_par:
    sys.exit("parallel_run: world size %d is not a multiple of tp*pp*cp = %d" % (WS, model_par))
DP = WS // model_par
if args.layout == "pp" and args.pp != WS:
    sys.exit("parallel_run: --layout pp runs pp = world size (no dp beside it)")
if args.layout == "ep" and args.ep != WS:
    sys.exit("parallel_run: --layout ep runs ep = world size (experts carved out of dp)")
if args.layout == "cp" and args.cp != WS:
    sys.exit("parallel_run: --layout cp runs cp = world size")
if args.replicate > 1 and (args.layout != "tp" or DP % args.replicate):
    sys.exit("parallel_run: --replicate R is for --layout tp with R dividing dp = %d" % DP)
if args.async_tp and not (args.compile and args.layout == "tp" and args.tp > 1):
    sys.exit("parallel_run: --async-tp needs --layout tp, --tp > 1 and --compile (torchtitan's rule)")
if args.compile and args.layout == "ep":
    sys.exit("parallel_run: --compile is for tp, cp and pp (the MoE dispatch syncs with the host)")
if args.layout == "pp":
    schedule = "interleaved1f1b" if args.vpp > 1 else "1f1b"
    if args.schedule == "zbv":
        if args.vpp != 2:
            sys.exit("parallel_run: --schedule zbv runs two stages per rank (--vpp 2)")
        schedule = "zbv"
else:
    schedule = None
    args.microbatches = 1

rec = {
    "label": args.label, "impl": "native",
    "model": os.path.splitext(os.path.basename(cfg_path))[0],
    "config": os.path.relpath(cfg_path, os.path.join(HERE, "..", "..")),
    "model_type": CFG.get("model_type"),
    "layers": args.layers or CFG["num_hidden_layers"], "layers_full": CFG["num_hidden_layers"],
    "framework": "torch-native",
    "parallelism": ("hsdp" if args.replicate > 1 else "fsdp") if args.layout == "tp" and args.tp == 1 else args.layout,
    "world_size": WS,
    "dp": DP if args.layout != "ep" else WS, "tp": args.tp, "pp": args.pp, "vpp": args.vpp,
    "cp": args.cp, "ep": args.ep, "schedule": schedule, "microbatches": args.microbatches,
    "seq": args.seq, "mbs": args.mbs, "gbs": args.mbs * args.microbatches * (DP if args.layout != "ep" else WS),
    "grad_ckpt": bool(args.ckpt), "compile": bool(args.compile), "async_tp": bool(args.async_tp),
    "dp_replicate": args.replicate, "dp_shard": (DP // args.replicate) if args.layout == "tp" else None, "optimizer": "AdamW", "optimizer_impl": "fused",
    "grad_clip": args.clip or None, "experts_impl": args.experts if args.layout == "ep" else None,
    "route": args.route if args.layout == "ep" else None,
    "permute": args.permute if args.layout == "ep" else None,
    "mixed_precision": "fp32 params, param_dtype bf16, reduce_dtype fp32", "attention": "sdpa",
    "command": "torchrun --nproc_per_node %d " % WS + " ".join(shlex.quote(a) for a in sys.argv),
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                              "NVSHMEM_DISABLE_NVLS", "PYTORCH_CUDA_ALLOC_CONF",
                                              "CUDA_VISIBLE_DEVICES")},
    "oom": False,
}
try:
    rec["cpu_model"] = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                            if ln.startswith("model name"))
except Exception:
    pass
T0 = time.perf_counter()
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # noqa: E402
from torch.distributed.tensor import DTensor  # noqa: E402

from native_llama import Args, Attention, Transformer  # noqa: E402

MP = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)


def versions():
    v = {"torch": torch.__version__, "cuda": torch.version.cuda,
         "cudnn": torch.backends.cudnn.version(), "python": sys.version.split()[0]}
    try:
        v["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
    except Exception:
        pass
    try:
        v["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=20).stdout.split()[0]
    except Exception:
        pass
    return v


def used(dev):
    free, total = torch.cuda.mem_get_info(dev)
    return total - free, total


# ---------------------------------------------------------------- expert parallel MoE layer
ROUTED = []  # --layout ep: routed rows received by this rank's experts, per MoE layer call


class Experts(nn.Module):
    """This rank's E_local experts, SwiGLU each: (silu(x w1) * (x w3)) w2, weights stored
    [experts, in, out] as torchtitan's GroupedExperts. --experts loop: one matmul per expert in a
    Python loop; grouped: torch._grouped_mm over all local experts at once (torchtitan's path), each
    expert's rows padded to a multiple of 16 (torchtitan's alignment for bf16 grouped GEMMs)."""

    def __init__(self, n, dim, ffn, mode):
        super().__init__()
        self.mode = mode
        self.w1 = nn.Parameter(torch.empty(n, dim, ffn))
        self.w3 = nn.Parameter(torch.empty(n, dim, ffn))
        self.w2 = nn.Parameter(torch.empty(n, ffn, dim))

    def forward(self, x, counts):  # x: rows grouped by local expert, counts: python ints
        if torch.is_tensor(counts):  # --permute device: counts on the GPU, nothing built on the host
            return self._forward_device(x, counts)
        if self.mode == "grouped" and args.route == "balanced":
            key = tuple(counts)
            if getattr(self, "_key", None) != key:
                self._key, self._pos_offs = key, None
        if self.mode == "grouped" and getattr(self, "_pos_offs", None) is not None:
            pos, offs, poff = self._pos_offs
            xp = x.new_zeros(poff, x.shape[1]).index_copy(0, pos, x)
            h = F.silu(torch._grouped_mm(xp, self.w1, offs=offs)) * torch._grouped_mm(xp, self.w3, offs=offs)
            return torch._grouped_mm(h, self.w2, offs=offs)[pos]
        if self.mode == "grouped":
            padded = [(c + 15) // 16 * 16 for c in counts]
            pos, off, poff = [], 0, 0
            for c, pc in zip(counts, padded):
                pos.append(torch.arange(poff, poff + c))
                off += c
                poff += pc
            pos = torch.cat(pos).to(x.device, non_blocking=True)
            offs, acc = [], 0
            for pc in padded:
                acc += pc
                offs.append(acc)
            offs = torch.tensor(offs, dtype=torch.int32).to(x.device, non_blocking=True)
            if args.route == "balanced":
                self._pos_offs = (pos, offs, poff)
            xp = x.new_zeros(poff, x.shape[1]).index_copy(0, pos, x)
            h = F.silu(torch._grouped_mm(xp, self.w1, offs=offs)) * torch._grouped_mm(xp, self.w3, offs=offs)
            return torch._grouped_mm(h, self.w2, offs=offs)[pos]
        outs, off = [], 0
        for e, c in enumerate(counts):
            xe = x[off:off + c]
            off += c
            outs.append((F.silu(xe @ self.w1[e]) * (xe @ self.w3[e])) @ self.w2[e])
        return torch.cat(outs, 0)

    def _forward_device(self, x, counts, w=None):
        """torchtitan's two paths with the counts on the GPU. grouped: each expert's rows padded to
        a multiple of 16 into a buffer of N + 16 E_local rows (torchtitan's max_len, no host
        size), the offsets a cumsum on the GPU (models/moe/utils.py _permute; moe.py
        _run_experts_grouped_mm). loop: counts.tolist() (a device-to-host sync, as torchtitan's
        _run_experts_for_loop) and torch.split. w: (w1, w3, w2), the parameters by default."""
        w1, w3, w2 = w if w is not None else (self.w1, self.w3, self.w2)
        N = x.shape[0]
        if self.mode != "grouped":
            outs = []
            for e, xe in enumerate(torch.split(x, counts.tolist(), dim=0)):
                outs.append((F.silu(xe @ w1[e]) * (xe @ w3[e])) @ w2[e])
            return torch.cat(outs, 0)
        padded = (counts + 15) // 16 * 16
        pad_end, end = torch.cumsum(padded, 0), torch.cumsum(counts, 0)
        shift = (pad_end - padded) - (end - counts)  # padded start - start, per expert
        pos = torch.arange(N, device=x.device) + torch.repeat_interleave(shift, counts, output_size=N)
        offs = pad_end.to(torch.int32)
        xp = x.new_zeros(N + 16 * counts.numel(), x.shape[1]).index_copy(0, pos, x)
        h = F.silu(torch._grouped_mm(xp, w1, offs=offs)) * torch._grouped_mm(xp, w3, offs=offs)
        return torch._grouped_mm(h, w2, offs=offs)[pos]


class MoE(nn.Module):
    def __init__(self, a, cfg, group, ep):
        super().__init__()
        # Qwen3-MoE names them num_experts / moe_intermediate_size, Mixtral num_local_experts /
        # intermediate_size
        self.E = cfg.get("num_experts") or cfg["num_local_experts"]
        self.k, self.ep, self.group = cfg["num_experts_per_tok"], ep, group
        self.El = self.E // ep
        self.norm_topk = bool(cfg.get("norm_topk_prob", True))
        self.router = nn.Linear(a.dim, self.E, bias=False)
        self.experts = Experts(self.El, a.dim, cfg.get("moe_intermediate_size") or cfg["intermediate_size"],
                               args.experts)
        self._cache = {}  # --route balanced: index tensors built once per token count

    def forward(self, x):
        from torch.distributed.nn.functional import all_to_all_single as a2a
        from torch.profiler import record_function as rf
        b, s, d = x.shape
        x = x.reshape(-1, d)
        T = x.shape[0]
        with rf("moe.router"):
            scores = self.router(x).float().softmax(-1)
            rc = None
            if args.route == "balanced":  # fixed equal assignment; the router's weights still used
                topi = self._balanced_topi(T, x.device)
                topw = scores.gather(1, topi)
            else:
                topw, topi = scores.topk(self.k, dim=-1)
            if self.norm_topk:
                topw = topw / topw.sum(-1, keepdim=True)
            flat = topi.reshape(-1)
            order = flat.argsort(stable=True)
            xs = x[order // self.k]
        with rf("moe.counts_sync"):
            if args.route == "balanced":
                per = T * self.k // self.E  # copies per expert from every rank
                rc = [[per] * self.El for _ in range(self.ep)]
                c_send = [per * self.El] * self.ep
            elif args.permute == "device":  # torchtitan's _token_dispatch: one blocking copy
                counts = torch.zeros(self.E, dtype=torch.int64, device=x.device).scatter_add_(
                    0, flat, torch.ones_like(flat))  # per global expert, no sync (histc's role)
                recv_counts = torch.empty_like(counts)
                dist.all_to_all_single(recv_counts, counts, group=self.group)  # [src rank, local expert]
                send_h = counts.view(self.ep, self.El).sum(1).to("cpu", non_blocking=True)
                recv_h = recv_counts.view(self.ep, self.El).sum(1).to("cpu")  # the sync
                c_send, rc = send_h.tolist(), None
                c_recv = recv_h.tolist()
            else:
                counts = torch.bincount(flat, minlength=self.E)  # token copies per global expert
                recv_counts = torch.empty_like(counts)
                dist.all_to_all_single(recv_counts, counts, group=self.group)  # [src rank, local expert]
                c_send = counts.view(self.ep, self.El).sum(1).tolist()
                rc = recv_counts.view(self.ep, self.El).tolist()  # host sync, as torchtitan's dispatch
            if rc is not None:
                c_recv = [sum(r) for r in rc]
            ROUTED.append(sum(c_recv))  # rows this rank's experts received (host ints already)
        with rf("moe.dispatch"):
            recv = a2a(xs.new_empty(sum(c_recv), d), xs, c_recv, c_send, group=self.group)
        with rf("moe.index"):
            key = (T, "idx")
            if rc is None:  # --permute device: regroup [src rank][local expert] -> [expert][rank]
                N = sum(c_recv)
                C = recv_counts.view(self.ep, self.El)
                seg = torch.repeat_interleave(torch.arange(self.ep * self.El, device=x.device),
                                              C.reshape(-1), output_size=N)  # r * El + e per row
                idx = ((seg % self.El) * self.ep + seg // self.El).argsort(stable=True)
                inv = torch.empty_like(idx)
                inv[idx] = torch.arange(N, device=idx.device)
                per_e = C.sum(0)  # rows per local expert, on the GPU
                if not getattr(self, "_checked", False):  # once, in the first warm-up step
                    self._checked = True
                    self._check_device_permute(C, idx)
            elif args.route == "balanced" and key in self._cache:
                idx, inv = self._cache[key]
            else:
                starts, o = [], 0  # regroup the received rows by local expert
                for r in range(self.ep):
                    row = []
                    for e in range(self.El):
                        row.append(o)
                        o += rc[r][e]
                    starts.append(row)
                idx = torch.cat([torch.arange(starts[r][e], starts[r][e] + rc[r][e])
                                 for e in range(self.El) for r in range(self.ep)]).to(x.device, non_blocking=True)
                inv = torch.empty_like(idx)
                inv[idx] = torch.arange(idx.numel(), device=idx.device)
                if args.route == "balanced":
                    self._cache[key] = (idx, inv)
            if rc is not None:
                per_e = [sum(rc[r][e] for r in range(self.ep)) for e in range(self.El)]
            xe = recv[idx]
        with rf("moe.experts"):
            out_local = self.experts(xe, per_e)
        with rf("moe.combine"):
            back = a2a(out_local.new_empty(sum(c_send), d), out_local[inv], c_send, c_recv, group=self.group)
        with rf("moe.unpermute"):
            unsort = torch.empty_like(order)
            unsort[order] = torch.arange(order.numel(), device=order.device)
            y = back[unsort].view(T, self.k, d)
            y = (y.float() * topw.unsqueeze(-1)).sum(1).to(x.dtype)
        return y.view(b, s, d)

    def _check_device_permute(self, C, idx):
        """The first call only (a warm-up step): the GPU-built permutation equals the host-built
        one of --permute host, and the grouped path's output equals the per-expert loop's."""
        rc = C.tolist()
        starts, o = [], 0
        for r in range(self.ep):
            row = []
            for e in range(self.El):
                row.append(o)
                o += rc[r][e]
            starts.append(row)
        ref = [i for e in range(self.El) for r in range(self.ep)
               for i in range(starts[r][e], starts[r][e] + rc[r][e])]
        if idx.tolist() != ref:
            raise RuntimeError("parallel_run: --permute device built a wrong permutation")
        with torch.no_grad():
            per_e = C.sum(0)
            x = torch.randn(int(per_e.sum()), self.experts.w1.shape[1], device=C.device,
                            dtype=torch.bfloat16)
            w = [p.full_tensor() if isinstance(p, DTensor) else p
                 for p in (self.experts.w1, self.experts.w3, self.experts.w2)]
            w = [t.to(torch.bfloat16) for t in w]
            outs, off = [], 0
            for e, c in enumerate(per_e.tolist()):
                xe = x[off:off + c]
                off += c
                outs.append((F.silu(xe @ w[0][e]) * (xe @ w[1][e])) @ w[2][e])
            ref_out = torch.cat(outs, 0).float()
            if self.experts.mode == "grouped":
                got = self.experts._forward_device(x, per_e, w).float()
                err = (got - ref_out).abs().max().item() / max(ref_out.abs().max().item(), 1e-6)
                if err > 0.05:
                    raise RuntimeError("parallel_run: grouped path differs from the loop (rel %.3g)" % err)

    def _balanced_topi(self, T, dev):
        key = (T, "topi")
        if key not in self._cache:
            if (T * self.k) % self.E:
                raise SystemExit("parallel_run: --route balanced needs tokens * top_k divisible by experts")
            self._cache[key] = (torch.arange(T * self.k, device=dev) % self.E).view(T, self.k)
        return self._cache[key]


class MoEBlock(nn.Module):
    def __init__(self, a, cfg, group, ep):
        super().__init__()
        self.attention = Attention(a)
        self.moe = MoE(a, cfg, group, ep)
        self.attention_norm = nn.RMSNorm(a.dim, eps=a.eps)
        self.ffn_norm = nn.RMSNorm(a.dim, eps=a.eps)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.moe(self.ffn_norm(h))


# ---------------------------------------------------------------- building
def init_weights(module, dev):
    module.to_empty(device=dev)
    with torch.no_grad():
        for n, prm in module.named_parameters():
            if "norm" in n:
                prm.fill_(1.0)
            else:
                prm.normal_(0.0, 0.02)
        for m in module.modules():
            if isinstance(m, Transformer):
                m.freqs_cis.copy_(m._freqs().to(dev))


def tp_plan(model, tp_mesh, loss_parallel):
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)
    parallelize_module(model, tp_mesh, {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1),
                                  output_layouts=Shard(-1) if loss_parallel else Replicate(),
                                  use_local_output=not loss_parallel),
    })
    for blk in model.layers.values():
        parallelize_module(blk, tp_mesh, {
            "attention_norm": SequenceParallel(),
            "attention": PrepareModuleInput(input_layouts=(Shard(1), None),
                                            desired_input_layouts=(Replicate(), None)),
            "attention.wq": ColwiseParallel(), "attention.wk": ColwiseParallel(),
            "attention.wv": ColwiseParallel(),
            "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
            "feed_forward.w1": ColwiseParallel(), "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
            "feed_forward.w3": ColwiseParallel(),
        })


def wrap_blocks(model):
    """--ckpt / --compile on every decoder block, in torchtitan's order (TP, then activation
    checkpointing, then compile, then FSDP2): torchtitan/distributed/activation_checkpoint.py
    (ptd_checkpoint_wrapper, preserve_rng_state=False) and apply_compile."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    for k in list(model.layers.keys()):
        blk = model.layers[k]
        if args.ckpt:
            blk = checkpoint_wrapper(blk, preserve_rng_state=False)
        if args.compile:
            blk = torch.compile(blk, fullgraph=True)
        model.layers.register_module(k, blk)


def shard_blocks(model, mesh, reshard=True):
    for blk in model.layers.values():
        fully_shard(blk, mesh=mesh, mp_policy=MP, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, mp_policy=MP, reshard_after_forward=reshard)


def grad_norm_sq(params):
    """Squared norm of the local view of these gradients (DTensor parts reduced over their mesh)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return None
    n = torch.nn.utils.get_total_norm(grads, foreach=True)
    if isinstance(n, DTensor):
        n = n.full_tensor()
    return n.float() ** 2


def clip(params_groups, max_norm, dev, world_sum_groups=()):
    """Gradient clipping with the norm over the whole model: groups listed in world_sum_groups
    hold different parameters on each rank (pipeline stages, experts) and their squared norms are
    summed over all ranks; the other groups are already global (DTensor norms)."""
    total = torch.zeros((), device=dev)
    summed = torch.zeros((), device=dev)
    for i, ps in enumerate(params_groups):
        sq = grad_norm_sq(ps)
        if sq is None:
            continue
        if i in world_sum_groups:
            summed = summed + sq
        else:
            total = total + sq
    if world_sum_groups:
        dist.all_reduce(summed)
    norm = (total + summed).sqrt()
    coef = min(1.0, max_norm / (float(norm) + 1e-6))
    if coef < 1.0:
        for ps in params_groups:
            for prm in ps:
                if prm.grad is not None:
                    prm.grad.mul_(coef)
    return norm

STAMPS = []          # --host-split: (name, perf_counter) of the step being run, rank 0
PROFILING = [False]  # under profile_step: each block's forward is also a record_function region


def add_host_split_hooks(model):
    """--host-split / --profile: the host's clock where each block's forward starts and where the
    gradient of its input is ready (its backward has been issued by the autograd engine); under the
    profiler the forward of each block is a record_function region "tp.block" and each gradient a
    zero-length region "tp.bwd_mark", so the trace's host ops can be split per block."""
    from torch.profiler import record_function
    ctx = {}

    def pre(mod, inp):
        i = mod._hs_index
        STAMPS.append(("fwd%d" % i, time.perf_counter()))
        x = inp[0]
        if isinstance(x, torch.Tensor) and x.requires_grad:
            def on_grad(g, i=i):
                STAMPS.append(("bwd%d" % i, time.perf_counter()))
                if PROFILING[0]:
                    with record_function("tp.bwd_mark"):
                        pass
            x.register_hook(on_grad)
        if PROFILING[0]:
            r = record_function("tp.block")
            r.__enter__()
            ctx[i] = r

    def post(mod, inp, out):
        i = mod._hs_index
        STAMPS.append(("fwd_end%d" % i, time.perf_counter()))
        r = ctx.pop(i, None)
        if r is not None:
            r.__exit__(None, None, None)

    for i, blk in enumerate(model.layers.values()):
        blk._hs_index = i
        blk.register_forward_pre_hook(pre)
        blk.register_forward_hook(post)


def host_split_summary(steps):
    """Per block and per part medians over the timed steps of the --host-split stamps."""
    def med(xs):
        return statistics.median(xs) if xs else None
    L = len(model_layers_count)
    fwd = [[] for _ in range(L)]
    bwd = [[] for _ in range(L)]
    parts = {}
    for st in steps:
        d = dict(st)
        for i in range(L - 1):
            if "fwd%d" % i in d and "fwd%d" % (i + 1) in d:
                fwd[i].append(d["fwd%d" % (i + 1)] - d["fwd%d" % i])
            if "bwd%d" % i in d and "bwd%d" % (i + 1) in d:
                bwd[i].append(d["bwd%d" % i] - d["bwd%d" % (i + 1)])
        def gap(a, b):
            if a in d and b in d:
                parts.setdefault(a + "->" + b, []).append(d[b] - d[a])
        gap("start", "fwd0")
        gap("fwd%d" % (L - 1), "fwd_end%d" % (L - 1))
        gap("fwd_end%d" % (L - 1), "logits")
        gap("logits", "loss")
        gap("loss", "bwd%d" % (L - 1))
        gap("bwd0", "backward_end")
        gap("backward_end", "clip_end")
        gap("clip_end", "opt_end")
        gap("start", "opt_end")
    return {"fwd_block_s": [med(x) for x in fwd], "bwd_block_s": [med(x) for x in bwd],
            "parts_s": {k: med(v) for k, v in parts.items()}, "steps": len(steps),
            "note": "fwd_block_s[i]: block i+1's forward start minus block i's (block i's host "
                    "issue, FSDP2's pre-forward hook of block i+1 included); bwd_block_s[i]: the "
                    "clock when the gradient of block i's input is ready minus when block i+1's "
                    "is (block i's backward issue); the last block's are in parts_s"}


model_layers_count = []


def profile_step(step, dev):
    """One step under torch.profiler (CPU + CUDA activity); rank 0 writes the gzipped Chrome trace
    (PATH.trace.json.gz) and its summary (bench/realruns/trace_summary.py) to PATH. Its step time
    is recorded apart (profiling slows the host)."""
    import gzip
    import shutil
    from torch.profiler import ProfilerActivity, profile
    from trace_summary import summarize
    step()  # one more unprofiled step right before
    torch.cuda.synchronize()
    PROFILING[0] = True
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        step()
        t_host = time.perf_counter() - t0
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    PROFILING[0] = False
    rec["profiled_step_s_rank0"], rec["profiled_host_issue_s_rank0"] = round(dt, 5), round(t_host, 5)
    if RANK != args.profile_rank:
        return
    stem = args.profile[:-5] if args.profile.endswith(".json") else args.profile
    tmp = stem + ".trace.json"
    prof.export_chrome_trace(tmp)
    try:
        summ = summarize(tmp)
    except Exception as e:  # the trace is kept; the summary can be redone from it
        summ = {"error": "%s: %s" % (type(e).__name__, e)}
    with open(tmp, "rb") as fi, gzip.open(tmp + ".gz", "wb") as fo:
        shutil.copyfileobj(fi, fo)
    os.remove(tmp)
    summ["profiled_step_s"], summ["host_issue_s"] = dt, t_host
    summ["label"], summ["route"] = args.label, args.route
    with open(args.profile, "w") as f:
        json.dump(summ, f, indent=1, sort_keys=True)


def main():
    local = int(os.environ["LOCAL_RANK"])
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
    V = a.vocab
    phase = "build"
    try:
        t_build = time.perf_counter()
        world_groups = ()
        data_rank = RANK
        if args.layout == "tp":
            R = args.replicate
            mesh = init_device_mesh("cuda", (R, DP // R, args.tp), mesh_dim_names=("rep", "dp", "tp"))
            data_rank = mesh.get_local_rank("rep") * (DP // R) + mesh.get_local_rank("dp")
            with torch.device("meta"):
                model = Transformer(a, args.seq)
            if args.tp > 1:
                tp_plan(model, mesh["tp"], not args.no_loss_parallel)
            if args.async_tp:
                import torch._inductor.config as ind_cfg
                ind_cfg._micro_pipeline_tp = True
                rec["async_tp_setup"] = "torch._inductor.config._micro_pipeline_tp = True"
                try:
                    from torch.distributed._symmetric_memory import enable_symm_mem_for_group
                    enable_symm_mem_for_group(mesh["tp"].get_group().group_name)
                    rec["async_tp_setup"] += "; enable_symm_mem_for_group(tp group)"
                except Exception as e:  # newer torch: symmetric memory needs no enabling
                    rec["async_tp_setup"] += "; enable_symm_mem_for_group: %s" % type(e).__name__
            if a.tied and args.tp > 1:
                # parallelize_module registers a new DTensor parameter on each module, so the
                # embedding and the output layer would train two weights; torchtitan points the
                # embedding back at the output's weight after parallelizing (Decoder.init_states,
                # torchtitan/models/common/decoder.py at b5bcd76c6). Both are Shard(0) on the vocab
                # (RowwiseParallel of an Embedding, ColwiseParallel of a Linear). Runs before
                # 2026-11-27 18:50 UTC lacked this: their `params` count both (mgpu_fidelity.py).
                model.tok_embeddings.weight = model.output.weight
            wrap_blocks(model)
            shard_blocks(model, mesh["rep", "dp"] if R > 1 else mesh["dp"])
            init_weights(model, dev)
            if args.host_split or (args.profile and not args.compile):  # hooks stay off compiled blocks
                add_host_split_hooks(model)
                model_layers_count.extend(range(len(model.layers)))
            groups = [list(model.parameters())]
            modules = [model]
        elif args.layout == "cp":
            mesh = init_device_mesh("cuda", (args.cp,), mesh_dim_names=("cp",))
            data_rank = 0
            with torch.device("meta"):
                model = Transformer(a, args.seq)
            wrap_blocks(model)
            shard_blocks(model, mesh["cp"])
            init_weights(model, dev)
            groups = [list(model.parameters())]
            modules = [model]
        elif args.layout == "ep":
            mesh = init_device_mesh("cuda", (args.ep, 1), mesh_dim_names=("ep", "edp"))
            group = mesh.get_group("ep")
            with torch.device("meta"):
                model = Transformer(a, args.seq)
                for k in list(model.layers.keys()):
                    model.layers[k] = MoEBlock(a, CFG, group, args.ep)
            for blk in model.layers.values():
                fully_shard(blk.moe.experts, mesh=mesh["edp"], mp_policy=MP, reshard_after_forward=True)
            wrap_blocks(model)
            shard_blocks(model, mesh["ep"])
            init_weights(model, dev)
            expert = [prm for n, prm in model.named_parameters() if ".experts." in n]
            other = [prm for n, prm in model.named_parameters() if ".experts." not in n]
            groups, world_groups = [other, expert], (1,)
            modules = [model]
        else:  # pp
            from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleInterleaved1F1B
            from torch.distributed.pipelining import ScheduleZBVZeroBubble
            mesh = init_device_mesh("cuda", (args.pp, 1), mesh_dim_names=("pp", "dp"))
            data_rank = 0
            S = args.pp * args.vpp
            L = a.n_layers
            if L % S:
                raise SystemExit("parallel_run: %d layers do not split into %d stages" % (L, S))
            per = L // S
            stage_ids = [RANK + i * args.pp for i in range(args.vpp)]
            if schedule == "zbv":  # V shape: rank 0 holds the first and the last stage
                stage_ids = [RANK, 2 * args.pp - 1 - RANK]
            stages, modules = [], []
            for sid in stage_ids:
                with torch.device("meta"):
                    m = Transformer(a, args.seq)
                for k in list(m.layers.keys()):
                    if not (sid * per <= int(k) < (sid + 1) * per):
                        del m.layers[k]
                if sid != 0:
                    m.tok_embeddings = None
                if sid != S - 1:
                    m.norm = None
                    m.output = None
                wrap_blocks(m)
                shard_blocks(m, mesh["dp"], reshard=False)
                init_weights(m, dev)
                modules.append(m)
                stages.append(PipelineStage(m, sid, S, dev, group=mesh.get_group("pp")))

            def loss_fn(out, target):
                return F.cross_entropy(out.flatten(0, 1).float(), target.flatten(0, 1))

            if schedule == "zbv":
                sched = ScheduleZBVZeroBubble(stages, n_microbatches=args.microbatches, loss_fn=loss_fn)
            elif args.vpp > 1:
                sched = ScheduleInterleaved1F1B(stages, n_microbatches=args.microbatches, loss_fn=loss_fn)
            else:
                sched = Schedule1F1B(stages[0], n_microbatches=args.microbatches, loss_fn=loss_fn)
            groups = [[prm for m in modules for prm in m.parameters()]]
            world_groups = (0,)
            has_first, has_last = 0 in stage_ids, (S - 1) in stage_ids
        # DTensor.numel() is the global count; a one-rank mesh's is this rank's part
        counts = [sum(prm.numel() for prm in g) for g in groups]
        for i in world_groups:  # different parameters on each rank: sum over ranks
            pt = torch.tensor([counts[i]], device=dev, dtype=torch.int64)
            dist.all_reduce(pt)
            counts[i] = int(pt.item())
        rec["params"] = sum(counts)
        # one AdamW per group: fused AdamW over DTensors of one mesh at a time
        opts = [torch.optim.AdamW(g, lr=1e-5, fused=True) for g in groups if g]
        gen = torch.Generator(device=dev).manual_seed(1234 + data_rank)
        nb = args.mbs * args.microbatches
        ids = torch.randint(0, V, (nb, args.seq + 1), device=dev, generator=gen)
        inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
        torch.cuda.synchronize()
        rec["setup_s"] = round(time.perf_counter() - t_build, 2)
        cp_ctx = None
        if args.layout == "cp":
            from torch.distributed.tensor.experimental import context_parallel
            from torch.nn.attention import SDPBackend, sdpa_kernel
            rot = None
            for modname in ("torch.distributed.tensor.experimental._attention",
                            "torch.distributed.tensor.experimental._context_parallel._attention"):
                try:
                    mod = __import__(modname, fromlist=["set_rotate_method"])
                    mod.set_rotate_method("alltoall")
                    rot = modname + ".set_rotate_method('alltoall')"
                    break
                except Exception:
                    continue
            rec["cp_rotate_method"] = rot or "default (set_rotate_method not found)"
            rec["attention"] = "sdpa flash/efficient under context_parallel"

        def step():
            if args.layout == "pp":
                losses = []
                kw = {}
                if has_last:
                    kw = {"target": lab, "losses": losses}
                # torchtitan's trainer does not keep the last stage's outputs (trainer.py
                # pp_schedule.step(..., return_outputs=False), b5bcd76c6); torch's default keeps
                # every micro-batch's logits until the step ends. Runs before 2026-11-27 20:00
                # UTC kept them.
                if "return_outputs" in inspect.signature(sched.step).parameters:
                    kw["return_outputs"] = False
                rec["pp_keep_outputs"] = "return_outputs" not in kw
                if has_first:
                    sched.step(inp, **kw)
                else:
                    sched.step(**kw)
                loss = torch.stack(losses).mean().detach() if losses else torch.zeros((), device=dev)
            elif args.layout == "tp" and args.tp > 1 and not args.no_loss_parallel:
                from torch.distributed.tensor.parallel import loss_parallel
                from torch.profiler import record_function as rf
                STAMPS.append(("start", time.perf_counter()))
                with rf("step.forward"):
                    logits = model(inp)
                    STAMPS.append(("logits", time.perf_counter()))
                with loss_parallel():
                    with rf("step.forward"):
                        loss = F.cross_entropy(logits.flatten(0, 1).float(), lab.flatten(0, 1))
                    STAMPS.append(("loss", time.perf_counter()))
                    with rf("step.backward"):
                        loss.backward()
                    STAMPS.append(("backward_end", time.perf_counter()))
                loss = loss.detach()
                if isinstance(loss, DTensor):
                    loss = loss.full_tensor()
            elif args.layout == "cp":
                with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
                    with context_parallel(mesh, buffers=[inp, lab, model.freqs_cis],
                                          buffer_seq_dims=[1, 1, 0], no_restore_buffers={inp, lab}):
                        logits = model(inp)
                        loss = F.cross_entropy(logits.flatten(0, 1).float(), lab.flatten(0, 1))
                        loss.backward()
                loss = loss.detach()
            else:
                from torch.profiler import record_function as rf
                with rf("step.forward"):
                    logits = model(inp)
                    loss = F.cross_entropy(logits.flatten(0, 1).float(), lab.flatten(0, 1))
                with rf("step.backward"):
                    loss.backward()
                loss = loss.detach()
            from torch.profiler import record_function as rf
            with rf("step.clip"):
                if args.clip:
                    clip(groups, args.clip, dev, world_groups)
            STAMPS.append(("clip_end", time.perf_counter()))
            with rf("step.optimizer"):
                for opt in opts:
                    opt.step()
                    opt.zero_grad(set_to_none=True)
            STAMPS.append(("opt_end", time.perf_counter()))
            return loss

        marks = []  # --timeline: (kind, stage, micro-batch, start event, end event) this step
        if args.timeline and args.layout == "pp":
            def timed(stage, kind, fn):
                def run(mb, *a, **kw):
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    out = fn(mb, *a, **kw)
                    e1.record()
                    marks.append((kind, stage.stage_index, mb, e0, e1))
                    return out
                return run
            for stg in stages:
                stg.forward_one_chunk = timed(stg, "F", stg.forward_one_chunk)
                stg.backward_one_chunk = timed(stg, "B", stg.backward_one_chunk)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
        times, losses = [], []
        tl = []
        split_steps = []
        for i in range(args.warmup + args.steps):
            del STAMPS[:]
            if args.layout == "cp":  # context_parallel shards inp/lab in place (not restored)
                inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
            phase = "warmup step %d" % i if i < args.warmup else "timed step %d" % (i - args.warmup)
            torch.cuda.synchronize()
            del marks[:]
            start = torch.cuda.Event(enable_timing=True)
            start.record()
            t0 = time.perf_counter()
            loss = step()
            t_host = time.perf_counter() - t0  # the host has issued the step (with --clip, the
            torch.cuda.synchronize()           # norm's .item() waited for the backward first)
            dt = time.perf_counter() - t0
            losses.append(loss)
            if i < args.warmup:
                rec.setdefault("warmup_times_s", []).append(round(dt, 5))
            else:
                times.append(dt)
                rec.setdefault("host_issue_times_rank0_s", []).append(round(t_host, 5))
                if marks:
                    tl.append([[k, st_i, mb, round(start.elapsed_time(a), 3), round(start.elapsed_time(b), 3)]
                               for k, st_i, mb, a, b in marks])
                if args.host_split:
                    split_steps.append(list(STAMPS))
        if args.host_split and split_steps:
            rec["host_split"] = host_split_summary(split_steps)
        del STAMPS[:]
        if args.profile:
            phase = "profiled step"
            try:
                profile_step(step, dev)
            except Exception as e:  # the timed steps stay valid without the trace
                rec["profile_error"] = "%s: %s" % (type(e).__name__, str(e)[:400])
                torch.cuda.synchronize()
        phase = "done"
        tt = torch.tensor(times, device=dev, dtype=torch.float64)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        rec["step_times_rank0_s"] = [round(x, 5) for x in times]
        if tl:  # every rank's timeline, gathered to rank 0
            every = [None] * WS
            dist.all_gather_object(every, tl)
            rec["timeline"] = every
        times = tt.tolist()
        rec["warmup"], rec["steps"] = args.warmup, args.steps
        rec["step_times_s"] = [round(x, 5) for x in times]
        med = statistics.median(times)
        rec["step_s_median"], rec["step_s_min"], rec["step_s_max"] = med, min(times), max(times)
        rec["tokens_per_s"] = rec["gbs"] * args.seq / med
        lt = torch.stack([losses[0].float(), losses[-1].float()])
        if args.layout == "pp":  # only the rank holding the last stage has the loss
            dist.all_reduce(lt)
        rec["loss_first"], rec["loss_last"] = float(lt[0]), float(lt[1])
        if args.layout == "ep" and ROUTED:  # the routed load per rank over every MoE call
            rt = torch.tensor([float(sum(ROUTED)), float(len(ROUTED))], device=dev, dtype=torch.float64)
            allr = [torch.zeros_like(rt) for _ in range(WS)]
            dist.all_gather(allr, rt)
            per = [float(x[0]) / max(1.0, float(x[1])) for x in allr]
            rec["ep_routed_rows_per_rank"] = [round(x, 1) for x in per]
            rec["ep_load_max_over_mean"] = round(max(per) / (sum(per) / len(per)), 4)
    except Exception as e:
        import traceback
        traceback.print_exc()
        if isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower():
            rec["oom"], rec["oom_phase"], rec["oom_message"] = True, phase, str(e)[:800]
        else:
            rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:1500])
            rec["error_phase"] = phase
    st = torch.cuda.memory_stats(dev)
    u, _ = used(dev)
    mem = [st.get("allocated_bytes.all.peak", 0), st.get("reserved_bytes.all.peak", 0),
           st.get("active_bytes.all.peak", 0), st.get("num_alloc_retries", 0), st.get("num_ooms", 0),
           u, u - torch.cuda.memory_reserved(dev)]
    if phase == "done":
        mt = torch.tensor(mem, device=dev, dtype=torch.int64)
        allm = [torch.zeros_like(mt) for _ in range(WS)]
        dist.all_gather(allm, mt)
        rec["peak_allocated_per_rank_bytes"] = [int(x[0]) for x in allm]
        rec["peak_reserved_per_rank_bytes"] = [int(x[1]) for x in allm]
        rec["nonalloc_end_per_rank_bytes"] = [int(x[6]) for x in allm]
        mem = [max(int(x[i]) for x in allm) for i in range(len(mem))]
    (rec["peak_allocated_bytes"], rec["peak_reserved_bytes"], rec["peak_active_bytes"],
     rec["alloc_retries"], rec["allocator_ooms"], rec["device_used_end_bytes"],
     rec["nonalloc_end_bytes"]) = mem
    if not rec["oom"] and "error" not in rec:
        rec["measured_peak_bytes"] = rec["peak_allocated_bytes"] + rec["nonalloc_end_bytes"]
        rec["measured_peak_reserved_bytes"] = rec["peak_reserved_bytes"] + rec["nonalloc_end_bytes"]
    rec["wall_s"] = round(time.perf_counter() - T0, 2)
    if RANK == 0 or "error" in rec or rec["oom"]:
        line = json.dumps(rec, sort_keys=True)
        print("REALRUN " + line, flush=True)
        if args.out and RANK == 0:
            with open(args.out, "a") as f:
                f.write(line + "\n")
    if phase == "done":
        try:
            dist.destroy_process_group()
        except Exception:
            pass
    else:
        os._exit(1)  # a failed rank must not wait in a collective
    return 1 if "error" in rec else 0


if __name__ == "__main__":
    sys.exit(main())
