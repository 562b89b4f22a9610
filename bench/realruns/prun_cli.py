"""The command line of bench/realruns/parallel_run.py, its checks and the run's record skeleton.

Why a module of its own: everything here runs before torch is imported, so `--help` and a bad flag
answer in milliseconds on any machine (this one has no torch), and the checks that a layout's
degrees fit the world size live beside the flags they check. parse() returns the parsed flags and
the run's context: the model's config.json, world size, rank, the data-parallel degree, the
pipeline schedule's name, and `rec`, the JSON record that rank 0 prints and appends to --out
(realrun.py's schema plus the parallel degrees; the other modules add their fields to it).
"""
import argparse
import datetime
import json
import os
import shlex
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def parser():
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
    p.add_argument("--memory-owners", action="store_true",
                   help="after the timed steps, one more step under torch.cuda.memory."
                        "_record_memory_history; rank 0's record gets memory_owners: that step's peak "
                        "allocated bytes and who holds them (memory_trace.py, bench/results/"
                        "memphase17_2026-11-28)")
    p.add_argument("--profile-rank", type=int, default=0, help="--profile: the rank whose trace is written; -1: every rank writes its own (PATH.rN.json, PATH.rN.trace.json.gz)")
    p.add_argument("--no-loss-parallel", action="store_true", help="tp: gather the logits instead")
    p.add_argument("--host-split", action="store_true",
                   help="tp, cp: the host's clock at each block's forward start and at the gradient of each "
                        "block's input (a tensor hook: that block's backward has been issued), and around "
                        "the loss head, backward, clip and optimizer, every timed step (rank 0); medians per "
                        "block in host_split (bench/results/tphost_2026-11-27/README.md)")
    p.add_argument("--ckpt", action="store_true",
                   help="full activation checkpointing of every decoder block (checkpoint_wrapper, "
                        "non-reentrant, torchtitan's ac mode full), applied after TP and before FSDP2")
    p.add_argument("--sac", choices=("", "op"), default="",
                   help="op: torchtitan's op-level selective activation checkpointing of every decoder "
                        "block (sac_policy.py, the policy realrun.py --sac op applies), in --ckpt's place")
    p.add_argument("--compile", action="store_true",
                   help="torch.compile(block, fullgraph=True) per decoder block after TP / checkpointing and "
                        "before FSDP2 (torchtitan's apply_compile order); tp, cp and pp layouts")
    p.add_argument("--cp-rotate", choices=("alltoall", "allgather"), default="alltoall",
                   help="cp layout: torch's K/V rotate method (set_rotate_method). alltoall (the default, every "
                        "cp run before 2026-11-29); allgather: torch's own default and torchtitan 9dec370's "
                        "(config_manager.py experimental.context_parallel_rotate_method), the method of "
                        "torchtitan's 2024-12 published CP tables (bench/results/ttcp20_2026-11-29)")
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
    p.add_argument("--gc", choices=("torchtitan", "python"), default="torchtitan",
                   help="torchtitan (default since 2026-11-28): Python's automatic garbage collector off "
                        "and one collection before the steps, as torchtitan's trainer runs "
                        "(torchtitan/tools/utils.py GarbageCollection, b5bcd76 lines 100-130: gc.disable(), "
                        "then a collection every training.gc_freq = 50 steps, none inside a run this "
                        "short); python: the collector left on (every run before 2026-11-28: its "
                        "generation-2 collections stalled the other ranks 130-173 ms, "
                        "bench/results/cp16_2026-11-28)")
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--label", default="")
    p.add_argument("--out", default="")
    return p


def parse(argv=None):
    """Flags and context of this process's run (exits with one line on a layout that does not fit)."""
    args = parser().parse_args(argv)
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
    # the composed meshes (bench/results/compose26_2026-11-29/README.md): pp x dp x tp, dp x cp x tp,
    # ep inside dp (torchtitan's efsdp x ep); pp = world size, cp = world size, ep = world size are
    # the one-dimensional layouts every run before 2026-11-29 ran, unchanged
    if args.layout == "pp" and (args.pp < 2 or args.cp != 1 or args.ep != 1):
        sys.exit("parallel_run: --layout pp runs pp >= 2 (times --tp, dp the rest; no cp, no ep)")
    if args.layout == "ep" and (args.ep < 2 or WS % args.ep or model_par != 1):
        sys.exit("parallel_run: --layout ep runs ep >= 2 dividing the world size (experts carved out "
                 "of dp; no tp, pp, cp)")
    if args.layout == "cp" and (args.cp < 2 or args.pp != 1 or args.ep != 1):
        sys.exit("parallel_run: --layout cp runs cp >= 2 (times --tp, dp the rest; no pp, no ep)")
    if args.layout == "tp" and (args.pp != 1 or args.cp != 1 or args.ep != 1):
        sys.exit("parallel_run: --layout tp runs tp x dp (no pp, cp, ep: use those layouts)")
    if args.replicate > 1 and (args.layout != "tp" or DP % args.replicate):
        sys.exit("parallel_run: --replicate R is for --layout tp with R dividing dp = %d" % DP)
    if args.async_tp and not (args.compile and args.layout == "tp" and args.tp > 1):
        sys.exit("parallel_run: --async-tp needs --layout tp, --tp > 1 and --compile (torchtitan's rule)")
    if args.sac and args.ckpt:
        sys.exit("parallel_run: --sac op and --ckpt are two checkpointing modes: give one")
    if args.cp_rotate != "alltoall" and args.layout != "cp":
        sys.exit("parallel_run: --cp-rotate is for --layout cp")
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
    # a composed mesh: a layout's degree beside data parallelism or TP
    composed = ((args.layout in ("pp", "cp") and (DP > 1 or args.tp > 1)) or
                (args.layout == "ep" and args.ep < WS))
    if composed and (args.replicate > 1 or args.schedule == "zbv" or args.host_split):
        sys.exit("parallel_run: a composed pp / cp / ep mesh runs without --replicate, --schedule zbv "
                 "and --host-split")
    if args.layout == "tp":
        par = ("hsdp" if args.replicate > 1 else "fsdp") if args.tp == 1 else "tp"
    elif not composed:
        par = args.layout
    elif args.layout == "pp":  # torchtitan's mesh order, outermost first: pp, dp, cp, tp (ep apart)
        par = "+".join(n for n, d in (("pp", 2), ("dp", DP), ("tp", args.tp)) if d > 1)
    elif args.layout == "cp":
        par = "+".join(n for n, d in (("dp", DP), ("cp", 2), ("tp", args.tp)) if d > 1)
    else:
        par = "ep+efsdp"

    rec = {
        "label": args.label, "impl": "native",
        "model": os.path.splitext(os.path.basename(cfg_path))[0],
        "config": os.path.relpath(cfg_path, os.path.join(HERE, "..", "..")),
        "model_type": CFG.get("model_type"),
        "layers": args.layers or CFG["num_hidden_layers"], "layers_full": CFG["num_hidden_layers"],
        "framework": "torch-native",
        "parallelism": par,
        "world_size": WS,
        "dp": DP if args.layout != "ep" else WS, "tp": args.tp, "pp": args.pp, "vpp": args.vpp,
        "cp": args.cp, "ep": args.ep, "schedule": schedule, "microbatches": args.microbatches,
        "seq": args.seq, "mbs": args.mbs, "gbs": args.mbs * args.microbatches * (DP if args.layout != "ep" else WS),
        "grad_ckpt": bool(args.ckpt), "sac": args.sac or None, "gc": args.gc, "compile": bool(args.compile), "async_tp": bool(args.async_tp),
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
    if composed:  # fields a one-dimensional run's record never had (its bytes stay as they were)
        rec["layout"] = args.layout
        if args.tp > 1:
            rec["loss_parallel"] = not args.no_loss_parallel
        rec["dp_shard"] = WS if args.layout == "ep" else DP  # torchtitan: EP borrows from dp_shard
        if args.layout == "ep":
            rec["efsdp"] = WS // args.ep  # FSDP2 of the experts over the ranks holding the same ones
        if args.layout == "cp":
            rec["fsdp_mesh"] = "dp x cp flattened (torchtitan's dp_shard_cp)"
        if args.layout == "pp":
            rec["fsdp_reshard_after_forward"] = False
            rec["pp_loss"] = ("torchtitan: sum over tokens / global tokens (all-reduced over dp every "
                              "step), scale_grads=False, FSDP gradient division off")
    try:
        rec["cpu_model"] = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                                if ln.startswith("model name"))
    except Exception:
        pass
    return types.SimpleNamespace(args=args, CFG=CFG, cfg_path=cfg_path, WS=WS, RANK=RANK, DP=DP,
                                 schedule=schedule, rec=rec, composed=composed)
