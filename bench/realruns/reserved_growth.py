#!/usr/bin/env python3
"""Why torch.cuda's peak *reserved* exceeds its peak *allocated* in a Hugging Face FSDP2 step on
one GPU (issue 14, memory truth: plan's memory.reserved_bytes is 6.7% under the measured peak
reserved over the 71 single-GPU runs, up to 20% on checkpointed ones). Records the allocator's
trace (torch.cuda.memory._record_memory_history) from before the first step through `--steps`
steps and replays it: allocated bytes move at alloc / free_completed, reserved bytes at
segment_alloc / segment_free (and segment_map / segment_unmap under expandable segments). For
every reservation it writes the request that caused it (the alloc event that follows: its size,
stream and owner frame), the step and phase it came in, and the allocated and reserved bytes then;
at the step's allocated peak it writes how much reserved memory was free and in which segments.
PYTORCH_CUDA_ALLOC_CONF is read from the environment (record it; run once per setting).

Usage (one GPU): NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 1 bench/realruns/reserved_growth.py
                     --out $OUT/reserved.jsonl --runs llama-3.2-3b:4096:2:0:ckpt
spec: name:seq:mbs[:layers[:mode]] (configs/NAME.json, as memory_peak_owners.py); mode: ckpt
(Hugging Face, every layer checkpointed), native (native_llama.py as realrun.py --impl native
builds it: fused AdamW, the loss as torchtitan's cross_entropy_loss), native-compile (the same
with each block torch.compile'd, fullgraph, before fully_shard), native-sac (realrun.py --sac op:
torchtitan's per-op selective checkpointing, sac_policy.py), or empty (Hugging Face).
native-full (each block under torch's checkpoint wrapper with no policy: torchtitan's full AC,
9dec370 parallelize_llama.py _apply_ac_to_transformer_block), native-sac-compile (native-sac with each checkpointed block torch.compile'd, fullgraph: torchtitan's
order, checkpoint wrapper then compile then fully_shard).
--compile-loss: the native loss torch.compile'd (torchtitan since 2025, components/loss.py
build_cross_entropy_loss at e7c0cae). --fp8 tensorwise|tensorwise-fsdp: torchao float8 on the
blocks' linears before checkpointing (realrun.py fp8_convert's filter: the output layer stays bf16);
tensorwise-fsdp also all-gathers the float8 weights (enable_fsdp_float8_all_gather=True,
force_recompute_fp8_weight_in_bwd=True) and precomputes their scales after the optimizer step
(precompute_float8_dynamic_scale_for_fsdp), as the trainy runs' overrides of torchtitan e7c0cae set
(torchtitan/components/quantization/float8.py lines 79-128 at e7c0cae). torchao from PYTHONPATH.
--foreach: the native modes' AdamW as torchtitan 9dec370 built it (foreach=True, fused=False;
torchtitan/optimizer.py build_optimizers) instead of fused.
--dump DIR: also writes DIR/trace_<n>.jsonl.gz, the allocator trace itself, one event a line
([action, addr, size, stream, phase, owner]; owner only for alloc), to find where the free bytes
sit at the peak *reserved* (bench/results/ttmem21_2026-11-29/holes.py); an alloc made inside
Inductor's generated code also names that code's file and line (" @file.py:call:line";
TORCHINDUCTOR_CACHE_DIR keeps the files: bench/results/ccomp24_2026-11-29).
Run ONE spec per process (several work, but a process that built and compiled one model is not
the clean state the real runs started from).
"""
import argparse
import gc
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", required=True)
ap.add_argument("--steps", type=int, default=3)
ap.add_argument("--foreach", action="store_true")
ap.add_argument("--dump", default="")
ap.add_argument("--compile-loss", action="store_true")
ap.add_argument("--fp8", default="", choices=["", "tensorwise", "tensorwise-fsdp"])
args = ap.parse_args()

SEG_UP = ("segment_alloc", "segment_map")
SEG_DOWN = ("segment_free", "segment_unmap")


def replay(trace, marks, owner):
    """Walk the trace once: the reservations with their cause, and the allocated peak's state."""
    alloc = reserved = 0
    live = {}            # addr -> (size, stream)
    segs = []            # reservations in order
    mark_at = dict((i, lab) for lab, i in marks)
    phase = "(start)"
    peak = {"allocated": -1}
    pending = []         # reservations waiting for the alloc that caused them
    phases = {}          # phase -> [allocated peak, reserved at its end] (the step's shape)
    for k, e in enumerate(trace):
        if k in mark_at:
            phase = mark_at[k]
        ph = phases.setdefault(phase, [0, 0])
        a = e["action"]
        if a == "alloc":
            live[e["addr"]] = (e["size"], e.get("stream", 0))
            alloc += e["size"]
            for s in pending:
                s["request_bytes"] = e["size"]
                s["request_owner"] = owner(e.get("frames", []))
                s["allocated_before_request"] = alloc - e["size"]
            pending = []
            ph[0] = max(ph[0], alloc)
            if alloc > peak["allocated"]:
                peak = {"allocated": alloc, "reserved": reserved, "index": k, "phase": phase,
                        "live": dict(live)}
        elif a == "free_completed" and e["addr"] in live:
            alloc -= live.pop(e["addr"])[0]
        elif a in SEG_UP:
            reserved += e["size"]
            ph[1] = reserved
            s = {"index": k, "action": a, "bytes": e["size"], "stream": e.get("stream", 0),
                 "addr": e["addr"], "phase": phase, "reserved_after": reserved}
            segs.append(s)
            pending.append(s)
        elif a in SEG_DOWN:
            reserved -= e["size"]
            ph[1] = reserved
            segs.append({"index": k, "action": a, "bytes": e["size"], "phase": phase,
                         "reserved_after": reserved})
    last = 0
    for lab in phases:  # a phase that reserved nothing ends at the reserved of the one before
        phases[lab][1] = phases[lab][1] or last
        last = phases[lab][1]
    peak["phases"] = [{"phase": lab, "allocated_peak_bytes": v[0], "reserved_end_bytes": v[1]}
                      for lab, v in phases.items()]
    return segs, peak


def build_native(name, dev, layers, compile_blocks, sac=False, full=False):
    """(model, vocab, step factory) for native_llama.py's Transformer as realrun.py --impl native
    builds it (N(0, 0.02) init, per-block torch.compile before fully_shard, fully_shard per block
    and on the root, reshard after forward, fp32 params, bf16 compute, fp32 reduce)."""
    import torch
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from native_llama import Args, Transformer
    with open(os.path.join(HERE, "configs", name + ".json")) as f:
        cfg = json.load(f)
    a = Args(cfg, layers or None)
    seq = int(args.runs.split(",")[0].split(":")[1])
    with torch.device(dev):
        model = Transformer(a, seq)
    with torch.no_grad():
        for n, prm in model.named_parameters():
            if "norm" in n:
                prm.fill_(1.0)
            else:
                prm.normal_(0.0, 0.02)
    if args.fp8:
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
        fsdp8 = args.fp8 == "tensorwise-fsdp"
        cfg8 = Float8LinearConfig(enable_fsdp_float8_all_gather=fsdp8,
                                  force_recompute_fp8_weight_in_bwd=fsdp8)

        def keep(mod, fqn):
            return (isinstance(mod, torch.nn.Linear) and mod.in_features % 16 == 0
                    and mod.out_features % 16 == 0 and "output" not in fqn)

        convert_to_float8_training(model, config=cfg8, module_filter_fn=keep)
    keys = list(model.layers.keys())
    for k in keys:
        blk = model.layers[k]
        if full:
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import \
                checkpoint_wrapper
            blk = checkpoint_wrapper(blk, preserve_rng_state=False)
        if sac:
            from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import \
                checkpoint_wrapper
            from sac_policy import sac_context_fn
            blk = checkpoint_wrapper(blk, context_fn=sac_context_fn, preserve_rng_state=False)
        if compile_blocks:
            blk = torch.compile(blk, fullgraph=True)
        model.layers.register_module(k, blk)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for k in keys:
        fully_shard(model.layers[k], mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mp_policy=mp, reshard_after_forward=True)
    return model, cfg["vocab_size"]


def native_step(model, x, y, opt, mark):
    """realrun.py --impl native's step (zero_grad(set_to_none), logits, torchtitan's loss:
    cross_entropy of the fp32 upcast, backward, clip 1.0, fused AdamW step) with
    marked_step's phase marks."""
    import torch
    import torch.nn.functional as F

    def loss_fn(pred, labels):
        return F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))

    if args.compile_loss:
        loss_fn = torch.compile(loss_fn)
    precompute = None
    if args.fp8 == "tensorwise-fsdp":
        from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp as precompute

    def step():
        opt.zero_grad(set_to_none=True)
        mark("zero_grad")
        logits = model(x)
        loss = loss_fn(logits, y)
        del logits
        mark("forward + loss")
        loss.backward()
        mark("root tail of backward")
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        mark("clip")
        opt.step()
        if precompute is not None:
            precompute(model)
        mark("optimizer step")

    return step, []


def dump_trace(trace, marks, owner, spec):
    """The trace itself, compact: one [action, addr, size, stream, phase, owner] a line."""
    import gzip
    os.makedirs(args.dump, exist_ok=True)
    mark_at = dict((i, lab) for lab, i in marks)
    phase = "(start)"
    path = os.path.join(args.dump, "trace_%s.jsonl.gz" % spec.replace(":", "_"))
    with gzip.open(path + ".tmp", "wt") as f:
        for k, e in enumerate(trace):
            phase = mark_at.get(k, phase)
            own = owner(e.get("frames", [])) if e["action"] == "alloc" else ""
            if own:  # a compiled graph's buffer: also the generated code's line (ccomp24)
                gen = [fr for fr in e.get("frames", []) if "torchinductor" in fr.get("filename", "")
                       or "inductor_cache" in fr.get("filename", "")]
                if gen:
                    own += " @%s:%s:%d" % (os.path.basename(gen[0]["filename"]),
                                           gen[0].get("name", ""), gen[0].get("line", 0))
            f.write(json.dumps([e["action"], e["addr"], e["size"], e.get("stream", 0), phase,
                                own]) + "\n")
    os.replace(path + ".tmp", path)


def main():
    import torch
    import torch.distributed as dist
    from fsdp2_model import build_fsdp2_model, marked_step
    from memory_trace import owner
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    for spec in args.runs.split(","):
        parts = spec.split(":")
        name, seq, mbs = parts[0], int(parts[1]), int(parts[2])
        layers = int(parts[3]) if len(parts) > 3 and parts[3] else 0
        mode = parts[4] if len(parts) > 4 else ""
        if mode not in ("", "ckpt", "native", "native-compile", "native-sac",
                        "native-sac-compile", "native-full"):
            sys.exit("reserved_growth: unknown mode %r in %s" % (mode, spec))
        ckpt = mode == "ckpt"
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        rec = {"spec": spec, "compile_loss": args.compile_loss, "fp8": args.fp8,
               "alloc_conf": conf, "gpu": torch.cuda.get_device_name(dev),
               "torch": torch.__version__}
        torch.cuda.memory._record_memory_history(max_entries=4000000, stacks="python")
        native = mode.startswith("native")
        if native:
            model, vocab = build_native(name, dev, layers,
                                        mode in ("native-compile", "native-sac-compile"),
                                        mode in ("native-sac", "native-sac-compile"),
                                        mode == "native-full")
            if args.foreach:
                opt = torch.optim.AdamW(model.parameters(), lr=1e-5, foreach=True, fused=False)
            else:
                opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
        else:
            model, vocab, _ = build_fsdp2_model(name, dev, layers, ckpt)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        g = torch.Generator(device=dev).manual_seed(1234)
        ids = torch.randint(0, vocab, (mbs, seq + 1), device=dev, generator=g)
        x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
        del ids
        marks = []
        step_no = [0]

        def mark(label):
            if label.startswith("block"):  # a snapshot copies the whole trace: phases only
                return
            snap = torch.cuda.memory._snapshot()
            marks.append(("step %d: %s" % (step_no[0], label), len(snap["device_traces"][local])))

        if native:
            step, hooks = native_step(model, x, y, opt, mark)
        else:
            step, hooks = marked_step(model, x, opt, mark)
        for i in range(args.steps):
            step_no[0] = i
            step()
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        for h in hooks:
            h.remove()
        trace = snap["device_traces"][local]
        st = torch.cuda.memory_stats()
        rec["max_allocated_bytes"] = st["allocated_bytes.all.peak"]
        rec["max_reserved_bytes"] = st["reserved_bytes.all.peak"]
        rec["trace_events"] = len(trace)
        segs, peak = replay(trace, marks, owner)
        if args.dump:
            dump_trace(trace, marks, owner, spec)
        rec["replayed_peak_allocated_bytes"] = peak["allocated"]
        rec["reserved_at_allocated_peak_bytes"] = peak["reserved"]
        rec["allocated_peak_phase"] = peak["phase"]
        rec["phases"] = peak["phases"]
        rec["reservations"] = segs
        # the segments at the end (nothing is released without empty_cache): size, bytes in use
        # at the allocated peak inside each, stream, the largest block in use then
        live = peak["live"]
        out = []
        for seg in snap["segments"]:
            lo, size = seg["address"], seg["total_size"]
            used = [s for a, (s, _) in live.items() if lo <= a < lo + size]
            out.append({"addr": lo, "bytes": size, "stream": seg.get("stream", 0),
                        "pool": seg.get("segment_type", ""),
                        "used_at_peak_bytes": sum(used), "blocks_at_peak": len(used)})
        out.sort(key=lambda s: -(s["bytes"] - s["used_at_peak_bytes"]))
        rec["segments"] = out
        print(json.dumps({"spec": spec, "conf": conf,
                          "max_alloc_GiB": round(rec["max_allocated_bytes"] / 2**30, 2),
                          "max_res_GiB": round(rec["max_reserved_bytes"] / 2**30, 2),
                          "reservations": len([s for s in segs if s["action"] in SEG_UP]),
                          "peak_phase": peak["phase"]}), flush=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        # the step closure and the hooks hold the model: drop them before the next spec, or its
        # segments stay reserved and inflate the next spec's peak reserved (the first data were
        # taken without this: bench/results/reserved19_2026-11-29/README.md)
        del step, hooks, model, opt, x, y
        gc.collect()
        torch.cuda.empty_cache()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
