"""frag18 (issue 14): what torch's caching allocator holds when the fp32 logits buffers are asked
for. Runs bench/realruns/realrun.py unchanged in this process, with three additions:
  FRAG_LIMIT_BYTES  torch.cuda.set_per_process_memory_fraction(limit / device total): the
                    allocator's cap on reserved memory (emulates a smaller GPU, e.g. the H100's
                    79.18 GiB less its 1.30 GiB outside torch, on an H200);
  at every torch.nn.functional.cross_entropy call (Hugging Face's ForCausalLMLoss calls it on
                    the fp32 logits; log_softmax's fp32 output is the next logits-sized request)
                    and at every allocator OOM (torch._C._cuda_attach_out_of_memory_observer,
                    called after the allocator released its lock): allocated, reserved, device
                    free, the largest free cached block, free bytes in wholly free segments (what
                    release_cached_blocks can return to CUDA) and in segments that still hold a
                    live block (what no request larger than their free blocks can use);
  FRAG_OUT          the JSON lines go there.
Usage: FRAG_OUT=o.jsonl [FRAG_LIMIT_BYTES=N] python3 frag_probe.py REALRUN_PATH realrun-args...
"""
import json
import os
import runpy
import sys

import torch

OUT = os.environ["FRAG_OUT"]
LABEL = os.environ.get("FRAG_LABEL", "")


def state(where, extra=None):
    dev = torch.cuda.current_device()
    free, total = torch.cuda.mem_get_info(dev)
    segs = torch.cuda.memory_snapshot()
    largest_free, whole_free, stranded, free_blocks = 0, 0, 0, []
    for s in segs:
        inact = [b["size"] for b in s["blocks"] if b["state"] == "inactive"]
        if s["allocated_size"] == 0 and s.get("active_size", 0) == 0:
            whole_free += s["total_size"]
        else:
            stranded += sum(inact)
        free_blocks += inact
        largest_free = max([largest_free] + inact)
    st = torch.cuda.memory_stats(dev)
    rec = {"label": LABEL, "where": where, "allocated_bytes": torch.cuda.memory_allocated(dev),
           "reserved_bytes": torch.cuda.memory_reserved(dev), "device_free_bytes": free,
           "device_total_bytes": total, "largest_free_cached_block_bytes": largest_free,
           "free_in_wholly_free_segments_bytes": whole_free,
           "free_in_partly_used_segments_bytes": stranded,
           "largest_free_blocks_bytes": sorted(free_blocks, reverse=True)[:6],
           "segments": len(segs), "num_alloc_retries": st.get("num_alloc_retries", 0),
           "peak_allocated_bytes": st.get("allocated_bytes.all.peak", 0)}
    if extra:
        rec.update(extra)
    with open(OUT, "a") as f:
        f.write(json.dumps(rec) + "\n")


lim = int(os.environ.get("FRAG_LIMIT_BYTES", "0"))
if lim:
    total = torch.cuda.mem_get_info(0)[1]
    torch.cuda.set_per_process_memory_fraction(lim / total, 0)


def on_oom(device, alloc, device_alloc, device_free):
    state("oom", {"oom_request_bytes": alloc, "oom_device_alloc_arg": device_alloc,
                  "oom_device_free_arg": device_free})


torch._C._cuda_attach_out_of_memory_observer(on_oom)
_ce = torch.nn.functional.cross_entropy
calls = [0]


def ce(inp, *a, **k):
    calls[0] += 1
    state("cross_entropy entry %d" % calls[0], {"input_bytes": inp.numel() * inp.element_size()})
    return _ce(inp, *a, **k)


torch.nn.functional.cross_entropy = ce
path = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(path, run_name="__main__")
