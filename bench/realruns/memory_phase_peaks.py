#!/usr/bin/env python3
"""Where a real Hugging Face FSDP2 step reaches its peak allocated memory, phase by phase (issue 14,
memory truth: ho17's Mixtral-8x7B L2 s4k b4 was predicted 13% high). realrun.py reports one peak per
step; this splits that step's peak into the moments plan's memory model prices separately
(costmodel/memory.c stage_act_figures / stage_totals): the forward with the loss, the loss's backward
up to the last block, each decoder block's backward, the root's tail, clip_grad_norm_ and the
optimizer step. torch.cuda.reset_peak_memory_stats at each boundary (the allocator's counters are
kept on the host in allocation order, so no synchronize is needed inside the backward); a block's
boundary is its full backward hook, which runs once the block's input gradient exists.

The model and step are built as realrun.py --impl hf builds them (fsdp2_model.py: transformers from
config, fp32 params, bf16 compute, fp32 reduce, fully_shard per decoder layer + root, reshard after
forward; Hugging Face's own loss; torch's default AdamW, lr 1e-5; clip 1.0; zero_grad(set_to_none)
at the step's start). 3 warm-up steps, then one measured step; the measured step's whole peak is
checked against the largest phase peak (they must agree).

Per spec name:seq:mbs[:layers[:ckpt]], one JSON object: bytes allocated at each boundary
(`at_bytes`) and the peak since the previous boundary (`peak_bytes`), in step order, plus
params, the whole-step peak, versions and the GPU.
Usage (one GPU): NCCL_NVLS_ENABLE=0 torchrun --nproc_per_node 1 bench/realruns/memory_phase_peaks.py
                     --out $OUT/phase_peaks.jsonl --runs mixtral-8x7b:4096:4:2,llama-3.2-3b:4096:2
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
args = ap.parse_args()


def main():
    import torch
    import torch.distributed as dist
    import transformers
    from fsdp2_model import build_fsdp2_model, marked_step
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    for spec in args.runs.split(","):
        parts = spec.split(":")
        name, seq, mbs = parts[0], int(parts[1]), int(parts[2])
        layers = int(parts[3]) if len(parts) > 3 and parts[3] else 0
        ckpt = len(parts) > 4 and parts[4] == "ckpt"
        rec = {"spec": spec, "config": name, "seq": seq, "mbs": mbs, "layers": layers, "ckpt": ckpt,
               "gpu": torch.cuda.get_device_name(dev),
               "versions": {"torch": torch.__version__, "transformers": transformers.__version__}}
        try:
            model, vocab, _ = build_fsdp2_model(name, dev, layers)
            if ckpt:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            rec["params"] = sum(p.numel() for p in model.parameters())
            opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
            g = torch.Generator(device=dev).manual_seed(1234)
            x = torch.randint(0, vocab, (mbs, seq), device=dev, generator=g)
            marks = []
            on = [False]

            def mark(label):
                if on[0]:
                    marks.append((label, torch.cuda.memory_allocated(dev),
                                  torch.cuda.max_memory_allocated(dev)))
                    torch.cuda.reset_peak_memory_stats(dev)

            step, hooks = marked_step(model, x, opt, mark)

            for _ in range(args.warmup):
                step()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(dev)
            whole0 = torch.cuda.memory_allocated(dev)
            on[0] = True
            step()
            on[0] = False
            torch.cuda.synchronize()
            for h in hooks:
                h.remove()
            # "block i bwd" ends block i's backward; its peak is the peak since the previous mark
            rec["phases"] = [{"after": lab, "at_bytes": at, "peak_bytes": pk} for lab, at, pk in marks]
            rec["step_start_bytes"] = whole0
            rec["largest_phase_peak_bytes"] = max(pk for _, _, pk in marks)
            rec["peak_phase"] = max(marks, key=lambda m: m[2])[0]
            del model, opt, x
        except torch.OutOfMemoryError as e:
            rec["oom"] = str(e).splitlines()[0]
        torch.cuda.empty_cache()
        print(json.dumps(rec), flush=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
