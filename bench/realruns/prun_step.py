"""One training step of bench/realruns/parallel_run.py, per layout: forward, loss, backward, gradient
clipping with the norm over the whole model, the optimizer step and zero_grad.

Why a module of its own: what a step *does* (the pipeline schedule's step, TP's loss_parallel,
CP's context_parallel buffers, the plain forward/backward) is the thing each real run is compared
with `plan estimate` on; keeping it apart from how it is built (prun_build.py) and how it is timed
(prun_measure.py) keeps that one place to read. make_step() returns the step as a closure over the
built namespace `b`; it reads b.inp / b.lab at each call (the CP loop re-slices them every step,
context_parallel shards them in place). The record_function regions (step.forward, step.backward,
step.clip, step.optimizer) name the parts in a --profile trace; STAMPS the host clock for
--host-split.
"""
import contextlib
import inspect
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.tensor import DTensor

from prun_build import GLOBAL_TOKENS
from prun_measure import STAMPS


def grad_norm_sq(params):
    """Squared norm of these gradients (DTensor parts reduced over their mesh). Gradients on
    different meshes are normed apart and their squares added: Qwen3's q_norm / k_norm weights
    stay on the data-parallel mesh under TP while the TP parameters are on dp x tp, and torch
    2.11 refuses to stack norms of two meshes (bench/results/ho11_2026-11-28). With one mesh
    this is the single get_total_norm call it always was."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return None
    by_mesh = {}
    for g in grads:
        by_mesh.setdefault(g.device_mesh if isinstance(g, DTensor) else None, []).append(g)
    total = None
    for gs in by_mesh.values():
        n = torch.nn.utils.get_total_norm(gs, foreach=True)
        if isinstance(n, DTensor):
            n = n.full_tensor()
        sq = n.float() ** 2
        total = sq if total is None else total + sq
    return total


def clip(params_groups, max_norm, dev, sum_groups=None):
    """Gradient clipping with the norm over the whole model: the groups keyed in sum_groups (index
    -> process group, None for the world) hold different parameters on different ranks (pipeline
    stages over pp, experts over ep) and their squared norms are summed over that process group
    (torchtitan distributed/utils.py clip_grad_norm_: over the pp mesh, b5bcd76); the other groups
    are already global (DTensor norms). Groups sharing a process group share one all-reduce."""
    sum_groups = sum_groups or {}
    total = torch.zeros((), device=dev)
    summed = {}
    for i, ps in enumerate(params_groups):
        sq = grad_norm_sq(ps)
        if i in sum_groups:  # this rank joins the all-reduce even without gradients
            key = id(sum_groups[i])
            prev = summed.get(key, (sum_groups[i], torch.zeros((), device=dev)))
            summed[key] = (prev[0], prev[1] + (sq if sq is not None else 0.0))
        elif sq is not None:
            total = total + sq
    for grp, sq in summed.values():
        dist.all_reduce(sq, group=grp)
        total = total + sq
    norm = total.sqrt()
    coef = min(1.0, max_norm / (float(norm) + 1e-6))
    if coef < 1.0:
        for ps in params_groups:
            for prm in ps:
                if prm.grad is not None:
                    prm.grad.mul_(coef)
    return norm


def make_step(ctx, b, dev):
    """The step of ctx.args.layout over the built model b (prun_build.build)."""
    args, rec = ctx.args, ctx.rec
    if args.layout == "cp":
        from torch.distributed.tensor.experimental import context_parallel
        from torch.nn.attention import SDPBackend, sdpa_kernel
        rot = None
        for modname in ("torch.distributed.tensor.experimental._attention",
                        "torch.distributed.tensor.experimental._context_parallel._attention"):
            try:
                mod = __import__(modname, fromlist=["set_rotate_method"])
                mod.set_rotate_method(args.cp_rotate)
                rot = modname + ".set_rotate_method('%s')" % args.cp_rotate
                break
            except Exception:
                continue
        rec["cp_rotate_method"] = rot or "default (set_rotate_method not found)"
        rec["attention"] = "sdpa flash/efficient under context_parallel"


    # loss_parallel for TP beside pp or cp (the tp layout's own branch below has its own)
    lp = args.layout in ("pp", "cp") and args.tp > 1 and not args.no_loss_parallel
    if lp:  # its own name: step()'s tp branch imports loss_parallel as a local of step()
        from torch.distributed.tensor.parallel import loss_parallel as lp_context

    def step():
        if args.layout == "pp":
            losses = []
            kw = {}
            if b.has_last:
                kw = {"target": b.lab, "losses": losses}
            # torchtitan's trainer does not keep the last stage's outputs (trainer.py
            # pp_schedule.step(..., return_outputs=False), b5bcd76c6); torch's default keeps
            # every micro-batch's logits until the step ends. Runs before 2026-11-27 20:00
            # UTC kept them.
            if "return_outputs" in inspect.signature(b.sched.step).parameters:
                kw["return_outputs"] = False
            rec["pp_keep_outputs"] = "return_outputs" not in kw
            if ctx.composed:  # torchtitan's train_step: the global token count, all-reduced over dp
                gt = torch.tensor(b.lab.numel(), device=dev, dtype=torch.int64)
                if b.dp_group is not None:
                    dist.all_reduce(gt, group=b.dp_group)
                GLOBAL_TOKENS[0] = gt
            with (lp_context() if lp else contextlib.nullcontext()):
                if b.has_first:
                    b.sched.step(b.inp, **kw)
                else:
                    b.sched.step(**kw)
            losses = [x.full_tensor() if isinstance(x, DTensor) else x for x in losses]
            loss = torch.stack(losses).mean().detach() if losses else torch.zeros((), device=dev)
            if ctx.composed and losses:  # the sum of token sums / global tokens -> this rank's mean
                loss = (torch.stack(losses).sum() * GLOBAL_TOKENS[0] / b.lab.numel()).detach()
        elif args.layout == "tp" and args.tp > 1 and not args.no_loss_parallel:
            from torch.distributed.tensor.parallel import loss_parallel
            from torch.profiler import record_function as rf
            STAMPS.append(("start", time.perf_counter()))
            with rf("step.forward"):
                logits = b.model(b.inp)
                STAMPS.append(("logits", time.perf_counter()))
            with loss_parallel():
                with rf("step.forward"):
                    loss = F.cross_entropy(logits.flatten(0, 1).float(), b.lab.flatten(0, 1))
                STAMPS.append(("loss", time.perf_counter()))
                with rf("step.backward"):
                    loss.backward()
                STAMPS.append(("backward_end", time.perf_counter()))
            loss = loss.detach()
            if isinstance(loss, DTensor):
                loss = loss.full_tensor()
        elif args.layout == "cp":
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
                with context_parallel(b.cp_mesh, buffers=[b.inp, b.lab, b.model.freqs_cis],
                                      buffer_seq_dims=[1, 1, 0], no_restore_buffers={b.inp, b.lab}):
                    with (lp_context() if lp else contextlib.nullcontext()):  # cp x tp
                        STAMPS.append(("start", time.perf_counter()))
                        logits = b.model(b.inp)
                        STAMPS.append(("logits", time.perf_counter()))
                        loss = F.cross_entropy(logits.flatten(0, 1).float(), b.lab.flatten(0, 1))
                        STAMPS.append(("loss", time.perf_counter()))
                        loss.backward()
                        STAMPS.append(("backward_end", time.perf_counter()))
            loss = loss.detach()
            if isinstance(loss, DTensor):
                loss = loss.full_tensor()
        else:
            from torch.profiler import record_function as rf
            STAMPS.append(("start", time.perf_counter()))
            with rf("step.forward"):
                logits = b.model(b.inp)
                STAMPS.append(("logits", time.perf_counter()))
                loss = F.cross_entropy(logits.flatten(0, 1).float(), b.lab.flatten(0, 1))
                STAMPS.append(("loss", time.perf_counter()))
            with rf("step.backward"):
                loss.backward()
            STAMPS.append(("backward_end", time.perf_counter()))
            loss = loss.detach()
        from torch.profiler import record_function as rf
        with rf("step.clip"):
            if args.clip:
                clip(b.groups, args.clip, dev, b.world_groups)
        STAMPS.append(("clip_end", time.perf_counter()))
        with rf("step.optimizer"):
            for opt in b.opts:
                opt.step()
                opt.zero_grad(set_to_none=True)
        STAMPS.append(("opt_end", time.perf_counter()))
        return loss

    return step
