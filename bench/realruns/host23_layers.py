#!/usr/bin/env python3
"""Per decoder layer and pass of one profiled Hugging Face FSDP2 step (a Chrome trace of
torch.profiler with CPU + CUDA activities, from host23_probe.py or gap_profile.py): how many
launches the host issued, how long the host took, how long the GPU was busy, where it idled
(helper host23, bench/results/host23_2026-11-29).

A layer's forward runs from FSDP2's "FSDP::pre_forward (model.layers.K)" range to the next
layer's (the last: to the root's "FSDP::post_forward"); its backward from
"FSDP::pre_backward (model.layers.K)" to layer K-1's (layer 0: to the root's post-backward
callback). Launches are the CUDA runtime calls that put work on a stream (kernel launches,
cudaMemcpyAsync, cudaMemsetAsync) whose host timestamp falls in the range; the host syncs are
the runtime calls that wait (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
cudaMemcpy without Async). GPU busy: the union of kernels, copies and fills on every stream
whose start falls in the range of the layer's own launches (by correlation id).
With --kernels K: the GPU time of layer K's forward and backward by kernel name (the kernels
the layer's own launches started), and the CPU op each launch came from.
Usage: python3 bench/realruns/host23_layers.py TRACE.json.gz [--json] [--kernels K]
"""
import collections
import gzip
import json
import re
import sys

LAUNCH = ("cudaLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC", "cuLaunchKernel",
          "cudaMemcpyAsync", "cudaMemsetAsync")
SYNC = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")


def load(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return json.load(f)["traceEvents"]


def union(iv):
    s, end = 0.0, None
    for a, b in sorted(iv):
        if end is None or a > end:
            s += b - a
            end = b
        elif b > end:
            s += b - end
            end = b
    return s


def analyse(path):
    ev = [e for e in load(path) if e.get("ph") == "X"]
    ann = sorted((e for e in ev if e.get("cat") == "user_annotation"), key=lambda e: e["ts"])
    rt = sorted((e for e in ev if e.get("cat") in ("cuda_runtime", "cuda_driver")), key=lambda e: e["ts"])
    gpu = {}
    for e in ev:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            c = (e.get("args") or {}).get("correlation")
            if c is not None:
                gpu[c] = e
    fwd, bwd = {}, {}
    root_post_fwd = root_bwd_end = None
    for e in ann:
        m = re.match(r"FSDP::pre_forward \(.*layers\.(\d+)\)$", e["name"])
        if m:
            fwd.setdefault(int(m.group(1)), e["ts"])
        m = re.match(r"FSDP::pre_backward \(.*layers\.(\d+)\)$", e["name"])
        if m:
            bwd.setdefault(int(m.group(1)), e["ts"])
        if e["name"] == "FSDP::post_forward" and root_post_fwd is None and fwd:
            root_post_fwd = e["ts"]
        if e["name"] == "FSDP::root_post_backward_callback":
            root_bwd_end = e["ts"]
    L = sorted(fwd)
    rows = []
    for k in L:
        for ph, start, end in (("fwd", fwd[k], fwd.get(k + 1, root_post_fwd)),
                               ("bwd", bwd.get(k), bwd.get(k - 1, root_bwd_end))):
            if start is None or end is None:
                continue
            launches, syncs, sync_s, kinds = 0, 0, 0.0, collections.Counter()
            iv = []
            for e in rt:
                if e["ts"] < start or e["ts"] >= end:
                    continue
                if e["name"] in LAUNCH:
                    launches += 1
                    kinds[e["name"]] += 1
                    g = gpu.get((e.get("args") or {}).get("correlation"))
                    if g is not None:
                        iv.append((g["ts"], g["ts"] + g.get("dur", 0)))
                elif e["name"] in SYNC:
                    syncs += 1
                    sync_s += e.get("dur", 0) * 1e-6
            rows.append({"layer": k, "pass": ph, "host_s": (end - start) * 1e-6,
                         "launches": launches, "syncs": syncs, "sync_s": round(sync_s, 6),
                         "gpu_busy_s": round(union(iv) * 1e-6, 6),
                         "gpu_span_s": round((max(b for _, b in iv) - min(a for a, _ in iv)) * 1e-6, 6) if iv else 0,
                         "kinds": dict(kinds)})
    syncs = collections.Counter(e["name"] for e in rt if e["name"] in SYNC)
    return {"trace": path, "layers": rows, "step_syncs": dict(syncs)}


def kernels(path, k):
    """GPU time by kernel name and the outermost aten op of each launch, layer k's passes"""
    ev = [e for e in load(path) if e.get("ph") == "X"]
    ann = {}
    for e in ev:
        if e.get("cat") == "user_annotation":
            ann.setdefault(e["name"], e)
    gpu = {(e.get("args") or {}).get("correlation"): e for e in ev
           if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    ops = collections.defaultdict(list)
    for e in ev:
        if e.get("cat") == "cpu_op":
            ops[e["tid"]].append(e)
    for ph, a, b in (("fwd", "FSDP::pre_forward (model.layers.%d)" % k,
                      "FSDP::pre_forward (model.layers.%d)" % (k + 1)),
                     ("bwd", "FSDP::pre_backward (model.layers.%d)" % k,
                      "FSDP::pre_backward (model.layers.%d)" % (k - 1))):
        if a not in ann or b not in ann:
            continue
        t0, t1 = ann[a]["ts"], ann[b]["ts"]
        by = collections.defaultdict(lambda: [0, 0.0])
        for e in ev:
            if e.get("cat") not in ("cuda_runtime", "cuda_driver") or not t0 <= e["ts"] < t1:
                continue
            g = gpu.get((e.get("args") or {}).get("correlation"))
            if g is None:
                continue
            outer = [o["name"] for o in sorted(ops[e["tid"]], key=lambda o: o["ts"])
                     if o["ts"] <= e["ts"] <= o["ts"] + o["dur"] and o["name"].startswith("aten::")]
            name = re.sub(r"^void |at::native::|\(anonymous namespace\)::", "", g["name"])[:70]
            key = "%-70s s%s  %s" % (name, (g.get("args") or {}).get("stream"), outer[0] if outer else "")
            by[key][0] += 1
            by[key][1] += g.get("dur", 0) * 1e-3
        print("== layer %d %s: %.3f ms GPU" % (k, ph, sum(v[1] for v in by.values())))
        for key, (n, ms) in sorted(by.items(), key=lambda kv: -kv[1][1]):
            print("%8.3f ms %3d  %s" % (ms, n, key))


def main():
    if "--kernels" in sys.argv:
        kernels(sys.argv[1], int(sys.argv[sys.argv.index("--kernels") + 1]))
        return
    res = analyse(sys.argv[1])
    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
        return
    print("%-5s %-4s %9s %9s %9s %8s %6s %9s" % ("layer", "pass", "host_ms", "gpu_busy", "gpu_span",
                                                 "launches", "syncs", "sync_ms"))
    for r in res["layers"]:
        print("%-5d %-4s %9.3f %9.3f %9.3f %8d %6d %9.3f" % (
            r["layer"], r["pass"], r["host_s"] * 1e3, r["gpu_busy_s"] * 1e3, r["gpu_span_s"] * 1e3,
            r["launches"], r["syncs"], r["sync_s"] * 1e3))
    print("syncs in the step:", res["step_syncs"])


if __name__ == "__main__":
    main()
