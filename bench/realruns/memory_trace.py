"""Replaying torch.cuda's allocator trace to find a step's peak and who holds it (issue 14, memory
truth; bench/results/memphase17_2026-11-28). Shared by memory_peak_owners.py (Hugging Face FSDP2 on
one GPU, phase by phase) and parallel_run.py --memory-owners (any layout, rank 0's whole step).
The trace of torch.cuda.memory._record_memory_history is replayed in order: an `alloc` adds a block,
a `free_completed` removes it (the allocator's allocated-bytes counter moves there); the live blocks
at the largest total are summed by their owner, the first stack frame in torch.distributed,
transformers, torch.optim, torch.autograd, torch.nn or a realruns script.
"""

KEYS = ("torch/distributed", "transformers", "torch/optim", "autograd", "nn/functional", "nn/modules",
        "realruns/")


def owner(frames):
    """The block's owner: file:function:line of the first frame that names a source of interest."""
    for fr in frames:
        fn = fr.get("filename", "")
        if any(k in fn for k in KEYS):
            return "%s:%s:%d" % (fn.split("site-packages/")[-1], fr.get("name", ""), fr.get("line", 0))
    return "(no python frame)" if not frames else "%s:%d" % (frames[0].get("filename", "?"),
                                                            frames[0].get("line", 0))


def live_blocks(snapshot):
    """{address: (bytes, owner)} of the blocks allocated in a snapshot taken before recording."""
    live = {}
    for seg in snapshot["segments"]:
        for b in seg["blocks"]:
            if b["state"] == "active_allocated":
                live[b.get("address", seg["address"])] = (b["size"], "(alive at step start)")
    return live


def replay_peaks(trace, live, bounds, labels, top=14, largest=0):
    """Per interval [bounds[k-1], bounds[k]) of the trace: {"phase_until": labels[k], "peak_bytes",
    "owners": [[owner, bytes], ...] at that interval's peak}, largest owners first. `live` is the
    {address: (bytes, owner)} at the trace's start and is updated in place. largest > 0: also
    "largest": the `largest` biggest blocks alive at the peak, [bytes, owner] each."""
    cur = sum(s for s, _ in live.values())
    ev, out = 0, []
    for k in range(1, len(bounds)):
        best, best_live = cur, dict(live)
        while ev < min(bounds[k], len(trace)):
            e = trace[ev]
            ev += 1
            if e["action"] == "alloc":
                live[e["addr"]] = (e["size"], owner(e.get("frames", [])))
                cur += e["size"]
                if cur > best:
                    best, best_live = cur, dict(live)
            elif e["action"] == "free_completed" and e["addr"] in live:
                cur -= live.pop(e["addr"])[0]
        by = {}
        for s, o in best_live.values():
            by[o] = by.get(o, 0) + s
        owners = sorted(by.items(), key=lambda kv: -kv[1])[:top]
        out.append({"phase_until": labels[k], "peak_bytes": best, "owners": [[o, s] for o, s in owners]})
        if largest:
            out[-1]["largest"] = sorted(([s, o] for s, o in best_live.values()),
                                        key=lambda r: -r[0])[:largest]
    return out
