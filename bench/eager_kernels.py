"""The eager PyTorch kernels of Llama decoder layers on one GPU: which op launches which kernel,
with the shapes, and the launch gap between back-to-back kernels (bench/BACKEND.md, "Eager
elementwise kernels"). The model is bench/hf_llama.py, as bench/fsdp2_step.py trains it
(Hugging Face modeling_llama.py in eager PyTorch), bf16 parameters as FSDP2's
MixedPrecisionPolicy unshards them, no FSDP: one forward, F.cross_entropy(logits.float()) and backward of --layers layers + final norm + lm_head.

Usage: python3 bench/eager_kernels.py [--seq 4096] [--layers 2] [--out DIR]
Writes DIR/eager_kernels.tsv (calls, total ms, kernel), DIR/eager_ops.tsv (op, input shapes,
kernel, us, in order) and prints the gap statistics.
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--seq", type=int, default=4096)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--out", default=".")
args = p.parse_args()

from hf_llama import V, Llama, rope  # noqa: E402 (bench/fsdp2_step.py's model, bench/hf_llama.py)


def main():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = Llama(args.layers).to(dev, torch.bfloat16)
    for prm in model.parameters():
        prm.data.normal_(0.0, 0.02)
    cos, sin = rope(args.seq, dev, torch.bfloat16)
    ids = torch.randint(0, V, (1, args.seq + 1), device=dev)
    inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def step():
        logits = model(inp, cos, sin)
        loss = F.cross_entropy(logits.float().view(-1, V), lab.view(-1))
        loss.backward()
        for prm in model.parameters():
            prm.grad = None

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    wall = statistics.median(times)

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    os.makedirs(args.out, exist_ok=True)
    trace = os.path.join(args.out, "eager_trace.json")
    prof.export_chrome_trace(trace)
    ev = json.load(open(trace))["traceEvents"]
    os.remove(trace)
    kern = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                  key=lambda e: e["ts"])
    ops = {}
    for e in ev:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            ops.setdefault(e["args"]["External id"], e)
    tot = {}
    with open(os.path.join(args.out, "eager_ops.tsv"), "w") as fo:
        fo.write("op\tinput_dims\tkernel\tus\n")
        for k in kern:
            o = ops.get(k.get("args", {}).get("External id"))
            nm = k["name"]
            c = tot.setdefault(nm, [0, 0.0])
            c[0] += 1
            c[1] += k["dur"]
            fo.write(f"{o['name'] if o else '?'}\t{o['args'].get('Input Dims') if o else ''}\t"
                     f"{nm[:140]}\t{k['dur']:.1f}\n")
    with open(os.path.join(args.out, "eager_kernels.tsv"), "w") as fk:
        fk.write("calls\ttotal_ms\tname\n")
        for nm, (n, us) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
            fk.write(f"{n}\t{us/1e3:.3f}\t{nm}\n")
    # Gaps between back-to-back kernels of the compute stream: the idle time from one kernel's
    # end to the next one's start, over the whole step (the GPU runs ahead of the host here).
    stream = statistics.mode(k["args"].get("stream", 0) for k in kern)
    ks = [k for k in kern if k["args"].get("stream", 0) == stream]
    gaps = [b["ts"] - (a["ts"] + a["dur"]) for a, b in zip(ks, ks[1:])]
    busy = sum(k["dur"] for k in ks) / 1e6
    print(f"eager_kernels: torch {torch.__version__}, {torch.cuda.get_device_name(dev)}, "
          f"seq {args.seq}, layers {args.layers}")
    print(f"eager_kernels: step wall (median of {args.steps}, no profiler) {wall*1e3:.3f} ms; "
          f"kernels on the compute stream {len(ks)}, busy {busy*1e3:.3f} ms; "
          f"(wall - busy) / kernels = {(wall-busy)/len(ks)*1e6:.2f} us")
    gs = sorted(gaps)
    q = lambda f: gs[min(len(gs) - 1, int(f * len(gs)))]
    print(f"eager_kernels: profiled gaps between back-to-back kernels: median {q(0.5):.2f} us, "
          f"p10 {q(0.1):.2f}, p90 {q(0.9):.2f}, mean {statistics.mean(gs):.2f} us")


if __name__ == "__main__":
    main()
