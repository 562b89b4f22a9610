#!/usr/bin/env python3
"""What is alive at a Hugging Face FSDP2 step's peaks, by owner (issue 14, memory truth; follows
memory_phase_peaks.py, bench/results/memphase17_2026-11-28). One step (after 3 warm-up steps) runs
under torch.cuda.memory._record_memory_history; the allocator's trace is replayed in order
(alloc adds a block, free_completed removes it: the allocator's allocated-bytes counter moves there) to find, per phase, the moment of the most bytes
allocated, and the blocks alive then are summed by the first stack frame that names a source file
of torch.distributed, transformers, torch.optim, torch.autograd or torch.nn (memory_trace.py), with the phase boundaries marked as in memory_phase_peaks.py (forward end, each block's
backward end, root tail, clip, optimizer step).

Per spec name:seq:mbs[:layers[:ckpt[:eager]]] (eager: transformers' eager attention, realrun.py
--attn eager), one JSON line: per phase the peak bytes (replayed) and the
owners' bytes at that moment (largest first), plus the bytes alive at the step's start.
Usage (one GPU): NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 1 bench/realruns/memory_peak_owners.py
                     --out $OUT/peak_owners.jsonl --runs mixtral-8x7b:4096:4:2
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", required=True)
ap.add_argument("--warmup", type=int, default=3)
ap.add_argument("--largest", type=int, default=0, help="also list the N largest blocks at each peak")
args = ap.parse_args()

def main():
    import torch
    import torch.distributed as dist
    from fsdp2_model import build_fsdp2_model, marked_step
    from memory_trace import live_blocks, replay_peaks
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    for spec in args.runs.split(","):
        parts = spec.split(":")
        name, seq, mbs = parts[0], int(parts[1]), int(parts[2])
        layers = int(parts[3]) if len(parts) > 3 and parts[3] else 0
        ckpt = len(parts) > 4 and parts[4] == "ckpt"
        attn = "eager" if len(parts) > 5 and parts[5] == "eager" else "sdpa"
        rec = {"spec": spec, "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__}
        model, vocab, _ = build_fsdp2_model(name, dev, layers, attn=attn)
        if ckpt:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        g = torch.Generator(device=dev).manual_seed(1234)
        x = torch.randint(0, vocab, (mbs, seq), device=dev, generator=g)
        marks = []  # (label, index into the trace at the mark)
        on = [False]

        def mark(label):
            if on[0]:  # the trace's length now (a snapshot while recording keeps recording)
                snap = torch.cuda.memory._snapshot()
                marks.append((label, len(snap["device_traces"][local])))

        step, hooks = marked_step(model, x, opt, mark)

        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        # the blocks alive at the step's start, from a snapshot before recording
        live = live_blocks(torch.cuda.memory._snapshot())
        torch.cuda.memory._record_memory_history(max_entries=2000000, stacks="python")
        torch.cuda.reset_peak_memory_stats()
        on[0] = True
        step()
        on[0] = False
        torch.cuda.synchronize()
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        for h in hooks:
            h.remove()
        trace = snap["device_traces"][local]
        rec["trace_events"] = len(trace)
        rec["max_allocated_bytes"] = torch.cuda.max_memory_allocated()
        rec["start_bytes"] = sum(s for s, _ in live.values())
        bounds = [0] + [i for _, i in marks]
        labels = ["(before zero_grad)"] + [lab for lab, _ in marks]
        phases = replay_peaks(trace, live, bounds, labels, largest=args.largest)
        rec["phases"] = phases
        print(json.dumps({"spec": spec, "peaks_GiB": [(p["phase_until"], round(p["peak_bytes"] / 2**30, 2))
                                                      for p in phases]}), flush=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        del model, opt, x
        torch.cuda.empty_cache()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
