#!/usr/bin/env python3
"""Does the host issue a Hugging Face FSDP2 step more slowly when another model ran before it in
the same process? (helper host23, bench/results/host23_2026-11-29; issue 14)

host.eager_launch_s (data/systems/h200.json) is launch_overhead.py's forward + backward floor at
seq 64 over the profiler's kernel count, SmolLM2-360M and then Llama-3.2-1B in one process
(42 and 64 us a kernel); the real runs (realrun.py, driver.py) build one model per process.
Each spec below runs in a fresh Python process (subprocess) and times launch_overhead.py's floor
(fwd + bwd at mbs 1, seq 64, synchronize around each, median of 7) for each model of the spec in
order, building each as launch_overhead.py does (fsdp2_model.py: transformers from config, fp32
params, SDPA, FSDP2 per layer + root, bf16 / fp32); the kernels of one floor step are counted
with torch.profiler (CUDA activity) once per model.
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/host23_order.py --out DIR \
           --specs llama-3.2-1b/smollm2-360m,llama-3.2-1b
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(models, port):
    for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", str(port)), ("RANK", "0"),
                 ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
        os.environ.setdefault(k, v)
    import statistics
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile
    sys.path.insert(0, HERE)
    from fsdp2_model import build_fsdp2_model
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rows = []
    for name in models:
        t0 = time.perf_counter()
        model, V, _ = build_fsdp2_model(name, dev, 0)
        ids = torch.randint(0, V, (1, 65), device=dev)
        inp, lab = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

        def fb():
            model(input_ids=inp, labels=lab).loss.backward()

        for _ in range(3):
            fb()
        ts = []
        for _ in range(7):
            torch.cuda.synchronize()
            t = time.perf_counter()
            fb()
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fb()
            torch.cuda.synchronize()
        n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        r = {"model": name, "fwd_bwd_floor_s": statistics.median(ts), "floor_s": ts,
             "kernels": n, "per_kernel_s": statistics.median(ts) / n,
             "build_and_time_s": time.perf_counter() - t0}
        print(json.dumps(r), flush=True)
        rows.append(r)
        del model
        torch.cuda.empty_cache()
    dist.destroy_process_group()
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--specs", required=True, help="comma-separated; each a /-separated model order")
    ap.add_argument("--child", default="")
    ap.add_argument("--port", type=int, default=29541)
    a = ap.parse_args()
    if a.child:
        json.dump(child(a.child.split("/"), a.port), sys.stdout)
        return
    os.makedirs(a.out, exist_ok=True)
    res = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": " ".join(sys.argv),
           "runs": []}
    for i, spec in enumerate(a.specs.split(",")):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--out", a.out, "--specs", spec,
                            "--child", spec, "--port", str(a.port + i)], capture_output=True, text=True)
        rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith('{"model"')]
        res["runs"].append({"spec": spec, "process": i, "rows": rows, "rc": p.returncode,
                            "stderr_tail": p.stderr[-400:] if p.returncode else ""})
        print(json.dumps(res["runs"][-1]), flush=True)
        with open(os.path.join(a.out, "host23_order.json"), "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
