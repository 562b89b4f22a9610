"""How bench/realruns/parallel_run.py measures: the timed steps, the host-side clock marks, the
profiled step and the memory fields of the record.

Why a module of its own: the measurement method (realrun.py's: wall time of each whole step
between torch.cuda.synchronize() calls after --warmup steps, the slowest rank's time per step;
peak allocated / reserved per rank over warm-up and timed steps; /work/.library/device/METHOD.md)
must be the same for every layout and must not change when a layout's model or step changes.
  timed_steps     warm-up and timed steps, host issue time (rank 0), --timeline CUDA events
                  (pp), --host-split stamps, one --profile step after the timed ones, the medians
  add_host_split_hooks / host_split_summary   the host's clock per block (--host-split)
  profile_step    one step under torch.profiler, the trace and its summary (trace_summary.py)
  memory_fields   peak memory per rank and the non-allocator part of the device's use
  versions, used  the software versions of the record; the device memory in use
"""
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.distributed as dist

from prun_moe import COUNTS_LOG, COUNTS_ON, LOOP_TALLY, ROUTED


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


def host_split_summary(steps, L):
    """Per block and per part medians over the timed steps of the --host-split stamps (L blocks)."""
    def med(xs):
        return statistics.median(xs) if xs else None
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



def cpu_placement():
    """This process's CPU affinity and the CPU each of its threads last ran on (/proc)."""
    out = {"affinity": sorted(os.sched_getaffinity(0)), "threads": {}}
    try:
        for tid in os.listdir("/proc/self/task"):
            with open("/proc/self/task/%s/stat" % tid) as f:
                st = f.read()
            name = st[st.index("(") + 1:st.rindex(")")]
            fields = st[st.rindex(")") + 2:].split()
            # field 39 (processor) is index 36 after the comm; utime+stime (14, 15) in ticks
            out["threads"][tid] = [name, int(fields[36]), int(fields[11]) + int(fields[12])]
    except (OSError, ValueError, IndexError):
        pass
    return out


def pin_rank(rank, ws):
    """PRUN_PIN=1: restrict this rank to the ws-th part of the CPUs it may use (a diagnostic)."""
    cpus = sorted(os.sched_getaffinity(0))
    n = len(cpus) // ws
    if n >= 1:
        os.sched_setaffinity(0, cpus[rank * n:(rank + 1) * n])


def profile_step(step, ctx):
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
    args, rec = ctx.args, ctx.rec
    rec["profiled_step_s_rank0"], rec["profiled_host_issue_s_rank0"] = round(dt, 5), round(t_host, 5)
    if args.profile_rank >= 0 and ctx.RANK != args.profile_rank:
        return
    stem = args.profile[:-5] if args.profile.endswith(".json") else args.profile
    if args.profile_rank < 0:  # --profile-rank -1: every rank writes its own trace and summary
        stem += ".r%d" % ctx.RANK
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
    with open(stem + ".json" if args.profile_rank < 0 else args.profile, "w") as f:
        json.dump(summ, f, indent=1, sort_keys=True)


def counts_dump(ctx, steps):
    """PRUN_COUNTS_OUT=PATH: this rank's routing counts of every MoE call of the warm-up and timed
    steps (prun_moe.py COUNTS_LOG, in call order: step-major, layer-minor) as PATH.rN.json."""
    COUNTS_ON[0] = False
    calls = [(c.tolist(), r.tolist()) for c, r in COUNTS_LOG]
    del COUNTS_LOG[:]
    out = {"rank": ctx.RANK, "steps": steps, "warmup": ctx.args.warmup, "layers": ctx.args.layers,
           "ep": ctx.args.ep, "label": ctx.args.label,
           "note": "per call: [token copies of this rank per global expert, copies sent here "
                   "per (source rank, local expert) flattened]",
           "calls": calls}
    with open("%s.r%d.json" % (os.environ["PRUN_COUNTS_OUT"], ctx.RANK), "w") as f:
        json.dump(out, f)


def memory_owners_step(step, ctx, dev):
    """One more step with the allocator's history recorded (--memory-owners): this rank's peak
    allocated bytes over the step and who holds them (memory_trace.py), into rank 0's record."""
    from memory_trace import live_blocks, replay_peaks
    torch.cuda.synchronize()
    live = live_blocks(torch.cuda.memory._snapshot())
    torch.cuda.memory._record_memory_history(max_entries=2000000, stacks="python")
    step()
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    trace = snap["device_traces"][torch.cuda.current_device()]
    start = sum(s for s, _ in live.values())
    res = replay_peaks(trace, live, [0, len(trace)], ["", "step"], top=20)[0]
    ctx.rec["memory_owners"] = {"start_bytes": start, "peak_bytes": res["peak_bytes"],
                                "max_memory_allocated": torch.cuda.max_memory_allocated(dev),
                                "owners": res["owners"], "trace_events": len(trace)}


def timed_steps(ctx, b, step, dev):
    """Runs --warmup + --steps steps of `step` (and the --profile step), fills ctx.rec; ctx.phase
    names the step being run for an error's record."""
    args, rec, WS = ctx.args, ctx.rec, ctx.WS
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
        for stg in b.stages:
            stg.forward_one_chunk = timed(stg, "F", stg.forward_one_chunk)
            stg.backward_one_chunk = timed(stg, "B", stg.backward_one_chunk)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)
    COUNTS_ON[0] = bool(os.environ.get("PRUN_COUNTS_OUT")) and args.layout == "ep"
    times, losses = [], []
    tl = []
    split_steps = []
    for i in range(args.warmup + args.steps):
        del STAMPS[:]
        if args.layout == "cp":  # context_parallel shards inp/lab in place (not restored)
            b.inp, b.lab = b.ids[:, :-1].contiguous(), b.ids[:, 1:].contiguous()
        ctx.phase = "warmup step %d" % i if i < args.warmup else "timed step %d" % (i - args.warmup)
        torch.cuda.synchronize()
        del marks[:]
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        tally0 = list(LOOP_TALLY)
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
            if LOOP_TALLY[1] > tally0[1]:  # --experts loop: the step's share of new row counts
                rec.setdefault("loop_new_count_share_rank0", []).append(round(
                    (LOOP_TALLY[0] - tally0[0]) / (LOOP_TALLY[1] - tally0[1]), 4))
            if marks:
                tl.append([[k, st_i, mb, round(start.elapsed_time(e0), 3), round(start.elapsed_time(e1), 3)]
                           for k, st_i, mb, e0, e1 in marks])
            if args.host_split:
                split_steps.append(list(STAMPS))
    if args.host_split and split_steps:
        rec["host_split"] = host_split_summary(split_steps, b.hooked_layers)
        # every rank's summary too: host-paced ranks meet at every collective, so the step goes
        # at the slowest rank's host, not rank 0's (bench/results/tpck26_2026-11-29)
        every = [None] * WS
        dist.all_gather_object(every, {"host_split": rec["host_split"], "cpu": cpu_placement(),
                                       "host_issue_s": rec.get("host_issue_times_rank0_s")})
        rec["host_split_ranks"] = every
    del STAMPS[:]
    if COUNTS_ON[0]:
        counts_dump(ctx, args.warmup + args.steps)
    if args.profile:
        ctx.phase = "profiled step"
        try:
            profile_step(step, ctx)
        except Exception as e:  # the timed steps stay valid without the trace
            rec["profile_error"] = "%s: %s" % (type(e).__name__, str(e)[:400])
            torch.cuda.synchronize()
    if args.memory_owners:
        ctx.phase = "memory-owners step"
        memory_owners_step(step, ctx, dev)
    ctx.phase = "done"
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
    if args.layout == "pp":  # only the rank holding the last stage has the loss (over pp)
        dist.all_reduce(lt, group=b.loss_group)
    rec["loss_first"], rec["loss_last"] = float(lt[0]), float(lt[1])
    if args.layout == "ep" and ROUTED:  # the routed load per rank over every MoE call
        rt = torch.tensor([float(sum(ROUTED)), float(len(ROUTED))], device=dev, dtype=torch.float64)
        allr = [torch.zeros_like(rt) for _ in range(WS)]
        dist.all_gather(allr, rt)
        per = [float(x[0]) / max(1.0, float(x[1])) for x in allr]
        rec["ep_routed_rows_per_rank"] = [round(x, 1) for x in per]
        rec["ep_load_max_over_mean"] = round(max(per) / (sum(per) / len(per)), 4)
        # every all-to-all waits for the busiest rank of that call: the pace is the mean over
        # calls of each call's max / mean (bench/results/epg27_2026-11-29: 1.10 against the
        # aggregate's 1.05 for OLMoE at EP 2, the hot rank changing from layer to layer)
        calls = [None] * WS
        dist.all_gather_object(calls, list(ROUTED))
        n = min(len(c) for c in calls)
        if n:
            pc = [max(c[i] for c in calls) / (sum(c[i] for c in calls) / WS) for i in range(n)]
            rec["ep_load_per_call_max_over_mean"] = round(sum(pc) / n, 4)


def memory_fields(ctx, dev):
    """Peak memory of this rank (the largest over ranks where the run is done), into ctx.rec."""
    rec, WS = ctx.rec, ctx.WS
    st = torch.cuda.memory_stats(dev)
    u, _ = used(dev)
    mem = [st.get("allocated_bytes.all.peak", 0), st.get("reserved_bytes.all.peak", 0),
           st.get("active_bytes.all.peak", 0), st.get("num_alloc_retries", 0), st.get("num_ooms", 0),
           u, u - torch.cuda.memory_reserved(dev)]
    if ctx.phase == "done":
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
