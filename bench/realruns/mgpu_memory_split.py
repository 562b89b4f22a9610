#!/usr/bin/env python3
"""Issue 14: where the multi-GPU memory error sits. Splits each row's (predicted - real) memory
into the caching allocator's part and the part outside it (CUDA context, NCCL, library
workspaces), from mgpu_fidelity.py's JSON rows.

  real alloc      peak_allocated_bytes (the largest over ranks)
  real nonalloc   nonalloc_end_bytes: device used minus torch's reserved at the end of the run
                  (the largest over ranks; prun_measure.py memory_fields)
  pred nonalloc   memory.framework_bytes (CUDA context + NCCL + library workspaces, memory.c)
  pred alloc      memory.total_bytes - framework_bytes
  world           context_after_nccl_bytes - cuda_context_bytes: the world communicator after one
                  all_reduce (parallel_run.py / realrun.py set-up)
  later           nonalloc_end - context_after_nccl: what the run added outside the allocator
                  after that (further communicators, p2p connections, library workspaces)
Errors in GiB, predicted - real (the project's sign). Rows on one GPU are skipped.

Usage: python3 bench/realruns/mgpu_fidelity.py DIR... --format json > rows.json
       python3 bench/realruns/mgpu_memory_split.py NAME=rows.json ...  (standard library only)
"""
import json
import statistics
import sys

GIB = float(1 << 30)


def layout_name(w):
    parts = []
    for k in ("tp", "pp", "cp", "ep"):
        if (w.get("rec_" + k) or 1) > 1:
            parts.append("%s%d" % (k, w["rec_" + k]))
    dp = w.get("rec_dp") or 1
    if dp > 1:
        parts.append("dp%d" % dp)
    return "".join(parts) or "?"


def main():
    allrows = []
    print("%-10s %-34s %-4s %2s %-10s | %6s %6s %6s | %6s %6s %6s | %5s %5s | %6s" % (
        "table", "run", "par", "ws", "layout", "alloc", "pred", "d", "nonal", "pred", "d",
        "world", "later", "d_tot%"))
    for arg in sys.argv[1:]:
        name, fn = arg.split("=", 1)
        for w in json.load(open(fn)):
            if w.get("status") != "ok" or w.get("ws", 1) < 2 or w.get("real_alloc_bytes") is None:
                continue
            if w.get("real_nonalloc_bytes") is None or w.get("pred_framework_bytes") is None:
                continue
            pa = w["pred_mem_bytes"] - w["pred_framework_bytes"]
            d_alloc = (pa - w["real_alloc_bytes"]) / GIB
            d_non = (w["pred_framework_bytes"] - w["real_nonalloc_bytes"]) / GIB
            world = later = None
            if w.get("real_after_nccl_bytes") and w.get("real_context_bytes") is not None:
                world = (w["real_after_nccl_bytes"] - w["real_context_bytes"]) / GIB
                later = (w["real_nonalloc_bytes"] - w["real_after_nccl_bytes"]) / GIB
            w["table"], w["d_alloc"], w["d_non"], w["layout"] = name, d_alloc, d_non, layout_name(w)
            allrows.append(w)
            print("%-10s %-34s %-4s %2d %-10s | %6.2f %6.2f %+6.2f | %6.2f %6.2f %+6.2f | %5s %5s | %+5.1f%%" % (
                name, w["run"][:34], w["par"], w["ws"], w["layout"], w["real_alloc_bytes"] / GIB,
                pa / GIB, d_alloc, w["real_nonalloc_bytes"] / GIB, w["pred_framework_bytes"] / GIB,
                d_non, "%.2f" % world if world is not None else "-",
                "%.2f" % later if later is not None else "-", 100 * w["mem_err"]))
    print()
    print("%-12s %3s  %-28s %-28s %s" % ("par", "n", "allocated: median (min..max)",
                                         "outside: median (min..max)", "median signed total"))
    groups = {}
    for w in allrows:
        groups.setdefault(w["par"], []).append(w)
    groups["all"] = allrows
    for k, ws in groups.items():
        a = [w["d_alloc"] for w in ws]
        n = [w["d_non"] for w in ws]
        print("%-12s %3d  %+5.2f GiB (%+5.2f..%+5.2f)    %+5.2f GiB (%+5.2f..%+5.2f)    %+5.1f%%" % (
            k, len(ws), statistics.median(a), min(a), max(a), statistics.median(n), min(n), max(n),
            100 * statistics.median(w["mem_err"] for w in ws)))


if __name__ == "__main__":
    main()
