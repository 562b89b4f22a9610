"""tpck27 (issues 19, 14): a matched measurement of what full activation checkpointing and op-level
SAC add to the host of a DTensor tensor-parallel step, on one lease, in one process.

Why: the TP rows with --ckpt / --sac op priced 8-22% fast (bench/results/tpck26_2026-11-29), and
the runs that showed it were on separate leases, at separate moments of a host whose speed moves
1.6-1.9x (host18), so "the recompute costs more host than plan prices" and "the host was slow"
could not be told apart. Here one torchrun process per rank builds the model once (parallel_run.py's
own build: bench/realruns/prun_build.py, torchtitan's TP plan, FSDP2 on the one-rank dp mesh, fused
AdamW, clip 1.0) with each decoder block behind a wrapper that runs it plainly, under
torch.utils.checkpoint (non-reentrant, preserve_rng_state=False: checkpoint_wrapper's call) or under
it with torchtitan's op-SAC context (bench/realruns/sac_policy.py), chosen per step. The three modes
are then stepped interleaved (rounds of --per steps each, the order rotated every round), so they
see the same host; every rank's host clock per block (parallel_run.py's --host-split stamps) is
kept per step, with the host probe (host_speed_probe.py's DTensor op loop, and a DTensor detach loop)
every round.

Two shapes per model: a GPU-free one (short sequence: each block's GPU work is far below its host
issue, so the block clock is host time alone) and the real row's shape (step times priced by
mgpu_fidelity.py from the records this writes, one results.jsonl line per model x shape x mode in
parallel_run.py's schema). After the timed rounds, one more step per mode at the GPU-free shape is
run under a counting TorchDispatchMode (untimed): the aten ops each phase dispatches, DTensor or
plain, per steady block (blocks 1..L-2), the backward's split into the recompute (grad mode on)
and the backward proper (grad mode off), and SAC's policy calls: the op counts that price the
mechanism.

Usage (device, repository root; 2 GPUs):
  torchrun --nproc_per_node 2 bench/tpck27_matched.py --case llama-3.1-8b:8:256x1,4096x2 \
      --case smollm2-1.7b:24:256x1,8192x1 --out DIR
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "realruns"))

p = argparse.ArgumentParser()
p.add_argument("--case", action="append", required=True, help="config:layers:SEQxMBS,SEQxMBS")
p.add_argument("--modes", default="none,ckpt,sac")
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--per", type=int, default=3, help="steps per mode per round")
p.add_argument("--warmup", type=int, default=2, help="steps per mode before the rounds")
p.add_argument("--out", required=True)
p.add_argument("--label", default="tpck27")
p.add_argument("--timed-hooks", action="store_true", help="time checkpoint's hooks and recompute")
p.add_argument("--no-count", dest="count", action="store_false", help="skip the op-count steps")
p.add_argument("--deadline", type=float, default=1e9, help="seconds: no new shape after this")
A = p.parse_args()
T_START = time.perf_counter()

import prun_cli  # noqa: E402
import prun_build  # noqa: E402
import prun_measure  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from native_llama import Args  # noqa: E402
from prun_measure import STAMPS, host_split_summary, used, versions  # noqa: E402
from prun_step import make_step  # noqa: E402
from host_speed_probe import _per_op_us as per_op_us  # noqa: E402  (the record probe's timer)

MODE = ["none"]


class ModeBlock(nn.Module):
    """One decoder block run as MODE[0] says: plainly, or as checkpoint_wrapper runs it
    (torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py: torch.utils.checkpoint with
    use_reentrant=False, preserve_rng_state=False, and torchtitan's SAC context_fn for op SAC)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *a, **kw):
        m = MODE[0]
        if m == "none":
            return self.inner(*a, **kw)
        from torch.utils.checkpoint import checkpoint
        if m == "ckpt":
            return checkpoint(self.inner, *a, use_reentrant=False, preserve_rng_state=False, **kw)
        if m == "ckpt-noes":  # diagnostic: no early stop (the whole forward recomputed)
            from torch.utils.checkpoint import set_checkpoint_early_stop
            with set_checkpoint_early_stop(False):
                return checkpoint(self.inner, *a, use_reentrant=False, preserve_rng_state=False, **kw)
        if m == "ckpt-nodet":  # diagnostic: no metadata check of the recomputed tensors
            return checkpoint(self.inner, *a, use_reentrant=False, preserve_rng_state=False,
                              determinism_check="none", **kw)
        from sac_policy import sac_context_fn
        return checkpoint(self.inner, *a, use_reentrant=False, preserve_rng_state=False,
                          context_fn=sac_context_fn, **kw)


def wrap_blocks(model, args):
    for k in list(model.layers.keys()):
        model.layers.register_module(k, ModeBlock(model.layers[k]))


prun_build.wrap_blocks = wrap_blocks  # build() looks it up at call time


def probe(dev, mesh):
    """host_speed_probe.py's two loops (the same tensors and op) plus detach loops, every rank."""
    from torch.distributed.tensor import Shard, distribute_tensor
    ws = dist.get_world_size()
    x = torch.randn(64 * ws, 256, device=dev, dtype=torch.bfloat16)
    loc = x[:64].clone()
    dx = distribute_tensor(x, mesh, [Shard(0)])
    dxg = dx.detach().requires_grad_()
    locg = loc.detach().requires_grad_()

    def plain(n):
        y = loc
        for _ in range(n):
            y = y.mul(1.0001)

    def dtens(n):
        y = dx
        for _ in range(n):
            y = y.mul(1.0001)

    def dt_detach(n):
        for _ in range(n):
            dxg.detach()

    def pl_detach(n):
        for _ in range(n):
            locg.detach()

    r = {"plain_op_us": per_op_us(plain), "dtensor_op_us": per_op_us(dtens),
         "dtensor_detach_us": per_op_us(dt_detach), "plain_detach_us": per_op_us(pl_detach)}
    every = [None] * ws
    dist.all_gather_object(every, {k: round(v, 2) for k, v in r.items()})
    return every


def make_counter(L):
    """A counting TorchDispatchMode; the region comes from the last --host-split stamp: block i's
    forward is what runs after stamp fwd<i> / fwd_end<i>, its backward what runs after bwd<i+1>;
    steady blocks 1..L-2."""
    from torch.distributed.tensor import DTensor
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves
    fwd_blk = set(["fwd%d" % i for i in range(1, L - 1)] + ["fwd_end%d" % i for i in range(1, L - 1)])
    bwd_blk = set("bwd%d" % i for i in range(2, L))

    class C(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.c = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            last = STAMPS[-1][0] if STAMPS else ""
            if last in fwd_blk:
                reg = "fwd"
            elif last in bwd_blk:
                reg = "recompute" if torch.is_grad_enabled() else "bwd"
            else:
                reg = "other"
            dt = any(isinstance(x, DTensor) for x in tree_leaves((args, kwargs)))
            key = "%s|%s|%s" % (reg, "dt" if dt else "plain", func)
            self.c[key] = self.c.get(key, 0) + 1
            return func(*args, **kwargs)

    return C()


def count_step(step, L, mode):
    """One untimed step under the counter, and SAC's policy calls per region."""
    import torch.utils.checkpoint as ck
    pol = {}
    orig = ck.create_selective_checkpoint_contexts

    def wrapped(policy_fn, *a, **kw):
        def counted(ctx, func, *pa, **pk):
            last = STAMPS[-1][0] if STAMPS else ""
            key = "%s|%s" % ("recompute" if ctx.is_recompute else "forward", last.rstrip("0123456789"))
            pol[key] = pol.get(key, 0) + 1
            return policy_fn(ctx, func, *pa, **pk)
        return orig(counted, *a, **kw)

    ck.create_selective_checkpoint_contexts = wrapped
    MODE[0] = mode
    cm = make_counter(L)
    try:
        del STAMPS[:]
        with cm:
            step()
        torch.cuda.synchronize()
    finally:
        ck.create_selective_checkpoint_contexts = orig
        del STAMPS[:]
    return {"ops": cm.c, "sac_policy_calls": pol, "steady_blocks": L - 2}


def timed_ckpt_steps(step, n=3):
    """n untimed ckpt steps with torch.utils.checkpoint's hooks and recompute timed (perf_counter
    sums per step): the forward's pack hooks, the backward's unpack hooks (the first of each block
    runs the recompute), the recompute function itself (its early stop's exception included) and
    the recompute's pack hooks."""
    import torch.utils.checkpoint as ck
    acc = {}

    def timed(name, fn):
        def w(*a, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                acc[name] = acc.get(name, 0.0) + time.perf_counter() - t0
                acc[name + "_n"] = acc.get(name + "_n", 0) + 1
        return w

    orig_ck, orig_rc, orig_fr = ck._checkpoint_hook.__init__, ck._recomputation_hook.__init__, \
        ck._CheckpointFrame.__init__

    def ck_init(self, frame):
        orig_ck(self, frame)
        self.pack_hook = timed("fwd_pack", self.pack_hook)
        self.unpack_hook = timed("bwd_unpack", self.unpack_hook)

    def rc_init(self, *a, **kw):
        orig_rc(self, *a, **kw)
        self.pack_hook = timed("recompute_pack", self.pack_hook)

    def fr_init(self, recompute_fn, *a, **kw):
        orig_fr(self, timed("recompute_fn", recompute_fn), *a, **kw)

    ck._checkpoint_hook.__init__, ck._recomputation_hook.__init__, ck._CheckpointFrame.__init__ = \
        ck_init, rc_init, fr_init
    MODE[0] = "ckpt"
    out = []
    try:
        for _ in range(n):
            acc.clear()
            del STAMPS[:]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            th = time.perf_counter() - t0
            torch.cuda.synchronize()
            d = {k: (round(v * 1e3, 3) if not k.endswith("_n") else v) for k, v in acc.items()}
            d["host_issue_ms"] = round(th * 1e3, 2)
            out.append(d)
    finally:
        ck._checkpoint_hook.__init__, ck._recomputation_hook.__init__, ck._CheckpointFrame.__init__ = \
            orig_ck, orig_rc, orig_fr
        del STAMPS[:]
    return out


def main():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    WS, RANK = dist.get_world_size(), dist.get_rank()
    modes = A.modes.split(",")
    os.makedirs(A.out, exist_ok=True)
    for case in A.case:
        cfg, L, shapes = case.split(":")
        L = int(L)
        shapes = [tuple(int(v) for v in s.split("x")) for s in shapes.split(",")]
        maxseq = max(s for s, _ in shapes)
        ctx = prun_cli.parse(["--layout", "tp", "--tp", str(WS), "--config", cfg, "--layers", str(L),
                              "--seq", str(maxseq), "--mbs", "1", "--host-split", "--label", "x"])
        ctx.rec["gpu"] = torch.cuda.get_device_name(dev)
        ctx.rec["versions"] = versions()
        u, total = used(dev)
        ctx.rec["device_total_bytes"] = total
        torch.manual_seed(0)
        a = Args(ctx.CFG, L)
        b = prun_build.build(ctx, a, dev)
        step = make_step(ctx, b, dev)
        gc.disable()
        gc.collect()
        tp_mesh = b.mesh["tp"]
        counts = {}
        for si, (seq, mbs) in enumerate(shapes):
            if time.perf_counter() - T_START > A.deadline:
                break
            gen = torch.Generator(device=dev).manual_seed(1234)
            ids = torch.randint(0, a.vocab, (mbs, seq + 1), device=dev, generator=gen)
            b.inp, b.lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
            data = {m: {"dt": [], "host": [], "stamps": []} for m in modes}
            peaks = {}
            for m in modes:  # warm-up, and each mode's own peak memory
                MODE[0] = m
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(dev)
                for _ in range(A.warmup):
                    del STAMPS[:]
                    step()
                torch.cuda.synchronize()
                st = torch.cuda.memory_stats(dev)
                uu, _ = used(dev)
                peaks[m] = [st.get("allocated_bytes.all.peak", 0), st.get("reserved_bytes.all.peak", 0),
                            uu - torch.cuda.memory_reserved(dev)]
                gc.collect()
            probes = [probe(dev, tp_mesh)]
            t_rounds = time.perf_counter()
            for r in range(A.rounds):
                order = modes[r % len(modes):] + modes[:r % len(modes)]
                for m in order:
                    MODE[0] = m
                    for _ in range(A.per):
                        del STAMPS[:]
                        torch.cuda.synchronize()
                        t0 = time.perf_counter()
                        step()
                        th = time.perf_counter() - t0
                        torch.cuda.synchronize()
                        dt = time.perf_counter() - t0
                        data[m]["dt"].append(dt)
                        data[m]["host"].append(th)
                        data[m]["stamps"].append(list(STAMPS))
                    del STAMPS[:]
                    gc.collect()
                probes.append(probe(dev, tp_mesh))
            rounds_s = time.perf_counter() - t_rounds
            # every rank's per-mode block clock; step times max over ranks
            mine = {m: {"host_split": host_split_summary(data[m]["stamps"], L),
                        "host_issue_s": [round(x, 5) for x in data[m]["host"]],
                        "step_s": [round(x, 5) for x in data[m]["dt"]]} for m in modes}
            every = [None] * WS
            dist.all_gather_object(every, mine)
            allpk = [None] * WS
            dist.all_gather_object(allpk, peaks)
            tt = {}
            for m in modes:
                t = torch.tensor(data[m]["dt"], device=dev, dtype=torch.float64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                tt[m] = t.tolist()
            if RANK == 0:
                with open(os.path.join(A.out, "results.jsonl"), "a") as f:
                    for m in modes:
                        rec = dict(ctx.rec)
                        rec.pop("host_split", None)
                        tag = "%s-%s-L%d-s%d-b%d-%s" % (A.label, cfg, L, seq, mbs, m)
                        rec.update({"label": tag, "seq": seq, "mbs": mbs, "gbs": mbs * ctx.DP,
                                    "grad_ckpt": m.startswith("ckpt"), "sac": "op" if m == "sac" else None,
                                    "warmup": A.warmup, "steps": len(tt[m]),
                                    "step_times_s": [round(x, 5) for x in tt[m]],
                                    "step_s_median": statistics.median(tt[m]),
                                    "step_s_min": min(tt[m]), "step_s_max": max(tt[m]),
                                    "tokens_per_s": mbs * ctx.DP * seq / statistics.median(tt[m]),
                                    "host_split": every[0][m]["host_split"],
                                    "host_split_ranks": [{"host_split": e[m]["host_split"],
                                                          "host_issue_s": e[m]["host_issue_s"],
                                                          "step_s": e[m]["step_s"]} for e in every],
                                    "host_probe_rounds": probes, "rounds": A.rounds, "per": A.per,
                                    "rounds_wall_s": round(rounds_s, 2),
                                    "matched": "tpck27: modes %s interleaved in one process" % A.modes,
                                    "command": "torchrun --nproc_per_node %d bench/tpck27_matched.py %s"
                                               % (WS, " ".join(sys.argv[1:]))})
                        pk = [x[m] for x in allpk]
                        rec["peak_allocated_per_rank_bytes"] = [x[0] for x in pk]
                        rec["peak_reserved_per_rank_bytes"] = [x[1] for x in pk]
                        rec["peak_allocated_bytes"] = max(x[0] for x in pk)
                        rec["peak_reserved_bytes"] = max(x[1] for x in pk)
                        rec["nonalloc_end_bytes"] = max(x[2] for x in pk)
                        rec["measured_peak_bytes"] = rec["peak_allocated_bytes"] + rec["nonalloc_end_bytes"]
                        rec["measured_peak_reserved_bytes"] = rec["peak_reserved_bytes"] + rec["nonalloc_end_bytes"]
                        hp = probes[-1]
                        rec["host_probe"] = {"dtensor_op_us": hp[0]["dtensor_op_us"],
                                             "dtensor_op_us_max": max(x["dtensor_op_us"] for x in hp),
                                             "plain_op_us": hp[0]["plain_op_us"],
                                             "plain_op_us_max": max(x["plain_op_us"] for x in hp),
                                             "note": "tpck27_matched.py probe (host_speed_probe.py's loops)"}
                        f.write(json.dumps(rec, sort_keys=True) + "\n")
                print("tpck27 %s L%d s%d b%d: " % (cfg, L, seq, mbs) + ", ".join(
                    "%s %.4f" % (m, statistics.median(tt[m])) for m in modes) + " (%.1f s)" % rounds_s,
                    flush=True)
            if si == 0 and A.timed_hooks:
                try:
                    th = timed_ckpt_steps(step)
                except Exception as e:
                    th = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
                every_th = [None] * WS
                dist.all_gather_object(every_th, th)
                if RANK == 0:
                    with open(os.path.join(A.out, "hooks-%s-L%d.json" % (cfg, L)), "w") as f:
                        json.dump(every_th, f, sort_keys=True)
            if si == 0 and A.count:  # the GPU-free shape: op counts per mode (after its records are out)
                for m in modes:
                    try:
                        counts[m] = count_step(step, L, m)
                    except Exception as e:
                        counts[m] = {"error": "%s: %s" % (type(e).__name__, str(e)[:300])}
                    if RANK == 0:
                        with open(os.path.join(A.out, "counts-%s-L%d.json" % (cfg, L)), "w") as f:
                            json.dump(counts, f, sort_keys=True)
        gc.enable()
        del b, step
        gc.collect()
        torch.cuda.empty_cache()
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
