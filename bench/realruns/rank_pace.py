"""Which rank sets the pace of a host-paced multi-GPU step (bench/results/tpck26_2026-11-29)?

Reads the per-rank traces of one profiled step (parallel_run.py --profile PATH --profile-rank -1:
PATH.rN.trace.json.gz) and prints, per rank: when the host finished issuing the backward (the
last kernel launch before step.clip, ms from the rank's first GPU event), when its GPU finished the
backward's last compute kernel, the host's lead over the GPU at the end of the backward, the
compute stream's idle time until then, and the time its NCCL kernels spent (a collective's kernel
runs until every rank has reached it: long kernels on one rank are waits for another).

Usage: python3 bench/realruns/rank_pace.py TRACE.r0.trace.json.gz TRACE.r1.trace.json.gz ...
"""
import gzip
import json
import sys


def rank_pace(fn):
    t = json.load(gzip.open(fn))
    ev = t["traceEvents"]
    launch = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            launch[e["args"].get("correlation")] = e
    gpu = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    t0 = min(e["ts"] for e in gpu)
    ann = {e["name"]: e for e in ev if e.get("cat") == "user_annotation" and e["name"].startswith("step.")}
    clip = ann.get("step.clip")
    clip_ts = clip["ts"] if clip else max(e["ts"] for e in gpu)
    streams = {}
    for e in gpu:
        streams.setdefault(str(e["args"].get("stream")), []).append(e)
    nccl = lambda s: all("nccl" in e["name"].lower() for e in streams[s])  # noqa: E731
    comp = max((s for s in streams if not nccl(s)), key=lambda s: len(streams[s]))
    ks = sorted(streams[comp], key=lambda e: e["ts"])
    # the backward's last compute kernel: the last one launched before step.clip began
    bw = [e for e in ks if launch.get(e["args"].get("correlation")) and
          launch[e["args"]["correlation"]]["ts"] < clip_ts]
    host_end = max(launch[e["args"]["correlation"]]["ts"] for e in bw)
    gpu_end = max(e["ts"] + e["dur"] for e in bw)
    busy = 0.0
    for e in bw:
        busy += e["dur"]
    nccl_s = sum(e["dur"] for s in streams if nccl(s) for e in streams[s] if e["ts"] < gpu_end)
    return {"host_issue_end_ms": (host_end - t0) / 1e3, "gpu_bwd_end_ms": (gpu_end - t0) / 1e3,
            "host_lead_ms": (gpu_end - host_end) / 1e3,
            "compute_idle_ms": ((gpu_end - t0) - busy) / 1e3, "nccl_kernel_ms": nccl_s / 1e3}


if __name__ == "__main__":
    for fn in sys.argv[1:]:
        r = rank_pace(fn)
        print("%-40s " % fn.split("/")[-1] + "  ".join("%s %.1f" % (k, v) for k, v in r.items()))
