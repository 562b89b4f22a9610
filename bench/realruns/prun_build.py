"""The model-building part of bench/realruns/parallel_run.py: the device mesh of each layout, the
model on the meta device, its parallelization in torchtitan's order (TP plan, activation
checkpointing, torch.compile, FSDP2), materialization and N(0, 0.02) initialization, the
optimizers and the batch.

Why a module of its own: this is the part that decides *what* runs (which parallel styles, in
which order, over which mesh), apart from how a step is driven (prun_step.py) and how it is timed
(prun_measure.py). build() returns a namespace the other two read: model / modules / stages, the
parameter groups for clipping (world_groups: index -> the process group over which that group's
parameters differ, None for the world: its squared norm is summed over it), the optimizers, the
batch (ids, inp, lab), the pipeline schedule and mesh. The composed meshes (pp x dp x tp,
dp x cp x tp, ep inside dp) follow torchtitan b5bcd76's parallel_dims.py / fsdp.py /
pipeline_parallel.py (bench/results/compose26_2026-11-29/README.md).
"""
import inspect
import time
import types

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

from native_llama import Transformer
from prun_measure import add_host_split_hooks
from prun_moe import MoEBlock

MP = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
GLOBAL_TOKENS = [1]  # composed pp: this step's global token count (a device tensor), prun_step.py


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
    top = {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1),
                                  output_layouts=Shard(-1) if loss_parallel else Replicate(),
                                  use_local_output=not loss_parallel),
    }
    # a pipeline stage holds the embedding (first), norm and output (last) or none of them
    # (prun_build's pp layout sets the others to None, as torchtitan's split drops them)
    top = {k: v for k, v in top.items() if getattr(model, k, None) is not None}
    if top:
        parallelize_module(model, tp_mesh, top)
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


def retie(model, a, tp):
    """parallelize_module registers a new DTensor parameter on each module, so the embedding and
    the output layer would train two weights; torchtitan points the embedding back at the output's
    weight after parallelizing (Decoder.init_states, torchtitan/models/common/decoder.py at
    b5bcd76c6). Both are Shard(0) on the vocab (RowwiseParallel of an Embedding, ColwiseParallel
    of a Linear). Runs before 2026-11-27 18:50 UTC lacked this: their `params` count both
    (mgpu_fidelity.py)."""
    if a.tied and tp > 1 and model.tok_embeddings is not None and model.output is not None:
        model.tok_embeddings.weight = model.output.weight


def no_grad_division(modules):
    """torchtitan's disable_fsdp_gradient_division (torchtitan/distributed/fsdp.py at b5bcd76): the
    gradients are summed, the loss divided by the global token count instead."""
    from torch.distributed.fsdp import FSDPModule
    for root in modules:
        for mod in root.modules():
            if isinstance(mod, FSDPModule):
                mod.set_gradient_divide_factor(1.0)


def wrap_blocks(model, args):
    """--ckpt or --sac op / --compile on every decoder block, in torchtitan's order (TP, then activation
    checkpointing, then compile, then FSDP2): torchtitan/distributed/activation_checkpoint.py
    (ptd_checkpoint_wrapper, preserve_rng_state=False) and apply_compile."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    for k in list(model.layers.keys()):
        blk = model.layers[k]
        if args.ckpt:
            blk = checkpoint_wrapper(blk, preserve_rng_state=False)
        elif args.sac == "op":
            from sac_policy import sac_context_fn
            blk = checkpoint_wrapper(blk, context_fn=sac_context_fn, preserve_rng_state=False)
        if args.compile:
            blk = torch.compile(blk, fullgraph=True)
        model.layers.register_module(k, blk)


def shard_blocks(model, mesh, reshard=True):
    for blk in model.layers.values():
        fully_shard(blk, mesh=mesh, mp_policy=MP, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, mp_policy=MP, reshard_after_forward=reshard)


def build(ctx, a, dev):
    """Mesh, parallelized model, optimizers and batch of this rank for ctx.args.layout."""
    args, rec, CFG, RANK, DP, schedule = ctx.args, ctx.rec, ctx.CFG, ctx.RANK, ctx.DP, ctx.schedule
    V = a.vocab
    sched, stages, has_first, has_last, hooked_layers, model = None, [], False, False, 0, None
    t_build = time.perf_counter()
    world_groups = {}
    data_rank = RANK
    dp_group = None
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
        retie(model, a, args.tp)
        wrap_blocks(model, args)
        shard_blocks(model, mesh["rep", "dp"] if R > 1 else mesh["dp"])
        init_weights(model, dev)
        if args.host_split or (args.profile and not args.compile):  # hooks stay off compiled blocks
            add_host_split_hooks(model)
            hooked_layers = len(model.layers)
        groups = [list(model.parameters())]
        modules = [model]
    elif args.layout == "cp":
        if ctx.composed:
            # torchtitan's dense mesh (parallel_dims.py build_mesh, b5bcd76): dp, cp, tp innermost;
            # FSDP2 over dp_shard x cp flattened (its "fsdp" mesh), context parallel over cp, TP
            # (with sequence parallel and loss parallel) over tp
            mesh = init_device_mesh("cuda", (DP, args.cp, args.tp), mesh_dim_names=("dp", "cp", "tp"))
            cp_mesh, fsdp_mesh = mesh["cp"], mesh["dp", "cp"]._flatten("dp_cp")
            data_rank = mesh.get_local_rank("dp")
        else:
            mesh = init_device_mesh("cuda", (args.cp,), mesh_dim_names=("cp",))
            cp_mesh, fsdp_mesh = mesh, mesh["cp"]
            data_rank = 0
        with torch.device("meta"):
            model = Transformer(a, args.seq)
        if args.tp > 1:
            tp_plan(model, mesh["tp"], not args.no_loss_parallel)
            retie(model, a, args.tp)
        wrap_blocks(model, args)
        shard_blocks(model, fsdp_mesh)
        init_weights(model, dev)
        if args.host_split:  # the same clock marks as tp's (prun_measure.add_host_split_hooks)
            add_host_split_hooks(model)
            hooked_layers = len(model.layers)
        groups = [list(model.parameters())]
        modules = [model]
    elif args.layout == "ep":
        if ctx.composed:
            # torchtitan's sparse mesh (parallel_dims.py build_mesh, b5bcd76): (efsdp, ep), ep
            # innermost, efsdp = dp_shard x cp x tp / ep; the experts FSDP2 over efsdp, every
            # other parameter over all dp_shard ranks (fsdp.py apply_fsdp_to_decoder's per-param
            # mesh: routed experts on edp_mesh, the rest on dp_mesh)
            # (the dense mesh a mesh of its own over the world: no flattening of a whole root mesh)
            mesh = init_device_mesh("cuda", (ctx.WS // args.ep, args.ep), mesh_dim_names=("efsdp", "ep"))
            edp_mesh = mesh["efsdp"]
            dense_mesh = init_device_mesh("cuda", (ctx.WS,), mesh_dim_names=("dp_shard",))
        else:
            mesh = init_device_mesh("cuda", (args.ep, 1), mesh_dim_names=("ep", "edp"))
            edp_mesh, dense_mesh = mesh["edp"], mesh["ep"]
        group = mesh.get_group("ep")
        with torch.device("meta"):
            model = Transformer(a, args.seq)
            for k in list(model.layers.keys()):
                model.layers[k] = MoEBlock(a, CFG, group, args.ep, args)
        for blk in model.layers.values():
            fully_shard(blk.moe.experts, mesh=edp_mesh, mp_policy=MP, reshard_after_forward=True)
        wrap_blocks(model, args)
        shard_blocks(model, dense_mesh)
        init_weights(model, dev)
        expert = [prm for n, prm in model.named_parameters() if ".experts." in n]
        other = [prm for n, prm in model.named_parameters() if ".experts." not in n]
        # each ep rank holds other experts: their squares summed over the ep group (the world when
        # ep = world size; over the world at ep < world size the efsdp copies would count twice)
        groups, world_groups = [other, expert], {1: group if ctx.composed else None}
        modules = [model]
    else:  # pp
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleInterleaved1F1B
        from torch.distributed.pipelining import ScheduleZBVZeroBubble
        if ctx.composed:
            # torchtitan's mesh order (parallel_dims.py build_mesh, b5bcd76): pp outermost, then
            # dp, tp innermost; each stage TP'd over tp, then FSDP2 over dp (llama3/parallelize.py,
            # applied per model part by pipeline_parallel.py pipeline_llm)
            mesh = init_device_mesh("cuda", (args.pp, DP, args.tp), mesh_dim_names=("pp", "dp", "tp"))
        else:
            mesh = init_device_mesh("cuda", (args.pp, 1), mesh_dim_names=("pp", "dp"))
        data_rank = mesh.get_local_rank("dp")
        pp_rank = mesh.get_local_rank("pp")
        S = args.pp * args.vpp
        L = a.n_layers
        if L % S:
            raise SystemExit("parallel_run: %d layers do not split into %d stages" % (L, S))
        per = L // S
        stage_ids = [pp_rank + i * args.pp for i in range(args.vpp)]
        if schedule == "zbv":  # V shape: rank 0 holds the first and the last stage
            stage_ids = [pp_rank, 2 * args.pp - 1 - pp_rank]
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
            if args.tp > 1:
                tp_plan(m, mesh["tp"], not args.no_loss_parallel)
            wrap_blocks(m, args)
            # torchtitan fsdp.py get_fsdp_reshard_after_forward_policy: "default" is not
            # pp_enabled, so False under PP (no all-gather per micro-batch)
            shard_blocks(m, mesh["dp"], reshard=False)
            init_weights(m, dev)
            modules.append(m)
            stages.append(PipelineStage(m, sid, S, dev, group=mesh.get_group("pp")))
        kw = {}
        if ctx.composed:
            # torchtitan's pipelined trainer (trainer.py train_step / pp_forward_backward_step,
            # pipeline_parallel.py _build_pipeline_schedule, b5bcd76): each micro-batch's loss is
            # its token sum over the global token count (all-reduced over the batch ranks every
            # step: prun_step.py), the schedule does not rescale the gradients (scale_grads=False)
            # and FSDP2 does not divide them
            no_grad_division(modules)
            if "scale_grads" in inspect.signature(Schedule1F1B.__init__).parameters:
                kw["scale_grads"] = False
            rec["pp_scale_grads"] = kw.get("scale_grads", True)

            def loss_fn(out, target):
                # the mean of this micro-batch times its share of the global tokens: the token
                # sum / global tokens, through the same kernels as the mean (loss_parallel's too)
                ce = F.cross_entropy(out.flatten(0, 1).float(), target.flatten(0, 1))
                share = target.numel() / GLOBAL_TOKENS[0]
                if isinstance(ce, DTensor):  # loss_parallel's replicated loss (pp x tp)
                    share = DTensor.from_local(share, ce.device_mesh, ce.placements, run_check=False)
                return ce * share
        else:
            def loss_fn(out, target):
                return F.cross_entropy(out.flatten(0, 1).float(), target.flatten(0, 1))

        if schedule == "zbv":
            sched = ScheduleZBVZeroBubble(stages, n_microbatches=args.microbatches, loss_fn=loss_fn, **kw)
        elif args.vpp > 1:
            sched = ScheduleInterleaved1F1B(stages, n_microbatches=args.microbatches, loss_fn=loss_fn, **kw)
        else:
            sched = Schedule1F1B(stages[0], n_microbatches=args.microbatches, loss_fn=loss_fn, **kw)
        groups = [[prm for m in modules for prm in m.parameters()]]
        # stage parameters differ along pp only: squares summed over the pp group (torchtitan
        # distributed/utils.py clip_grad_norm_ pp_mesh); over the world at dp > 1 they would
        # count dp times
        world_groups = {0: mesh.get_group("pp") if ctx.composed else None}
        dp_group = mesh.get_group("dp") if ctx.composed and DP > 1 else None
        has_first, has_last = 0 in stage_ids, (S - 1) in stage_ids
    # DTensor.numel() is the global count; a one-rank mesh's is this rank's part
    counts = [sum(prm.numel() for prm in g) for g in groups]
    for i, grp in world_groups.items():  # different parameters per rank: sum over that group
        pt = torch.tensor([counts[i]], device=dev, dtype=torch.int64)
        dist.all_reduce(pt, group=grp)
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
    return types.SimpleNamespace(mesh=mesh, model=model, modules=modules, stages=stages, sched=sched,
                                 has_first=has_first, has_last=has_last, groups=groups,
                                 world_groups=world_groups, opts=opts, ids=ids, inp=inp, lab=lab,
                                 hooked_layers=hooked_layers, dp_group=dp_group,
                                 cp_mesh=cp_mesh if args.layout == "cp" else None,
                                 loss_group=world_groups.get(0) if args.layout == "pp" else None)
