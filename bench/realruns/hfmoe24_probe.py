#!/usr/bin/env python3
"""One profiled Hugging Face FSDP2 step per spec, with or without gradient checkpointing (helper
hfmoe24, bench/results/hfmoe24_2026-11-29; host23_probe.py without the seq-64 floor, plus --ckpt).

For each spec NAME:SEQ:MBS:LAYERS[:ckpt] (configs/NAME.json built by fsdp2_model.py as realrun.py
--impl hf builds it; ckpt = realrun.py --ckpt): warm-up 2, `--steps` timed steps with CUDA
events at the forward's start, after the forward call, after the backward call (per pass GPU
span and host call time, step wall time between syncs), then one step under torch.profiler (CPU
+ CUDA), its Chrome trace gzipped for host23_layers.py. Also copies the installed transformers
files named by --copy (the source this step ran) into OUT/src/.
Under torchrun (helper moe25: the two-GPU Phi-3.5-MoE row) each rank uses GPU LOCAL_RANK and its
own data (seed 1234 + rank, as realrun.py), FSDP2 shards over all ranks, and every rank writes its
own probe-rR.json and trace-...-rR.json.gz (one process: probe.json and trace-... as before).
Usage: NCCL_NVLS_ENABLE=0 python3 bench/realruns/hfmoe24_probe.py --out DIR \
           --runs olmoe-1b-7b:4096:2:3,qwen1.5-moe-a2.7b:4096:1:3:ckpt [--steps 4]
"""
import argparse
import datetime
import gzip
import json
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--runs", required=True)
ap.add_argument("--steps", type=int, default=4)
ap.add_argument("--deadline", type=float, default=0, help="skip runs after this many seconds")
ap.add_argument("--realruns", default=HERE, help="folder holding fsdp2_model.py and configs/")
ap.add_argument("--copy", default="models/olmoe/modeling_olmoe.py,models/qwen2_moe/modeling_qwen2_moe.py,"
                "integrations/moe.py")
args = ap.parse_args()
for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29541"), ("RANK", "0"),
             ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("NCCL_NVLS_ENABLE", "0")):
    os.environ.setdefault(k, v)
sys.path.insert(0, args.realruns)
T0 = time.time()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from fsdp2_model import build_fsdp2_model  # noqa: E402

dev = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
torch.cuda.set_device(dev)
RANK, WS = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
SUFFIX = "-r%d" % RANK if WS > 1 else ""  # one file per rank under torchrun
os.makedirs(args.out, exist_ok=True)
out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
       "command": "python3 " + " ".join(sys.argv), "cpu_count": os.cpu_count(), "world_size": WS,
       "rank": RANK, "runs": []}
import transformers  # noqa: E402
out["transformers"] = transformers.__version__
src = os.path.dirname(transformers.__file__)
os.makedirs(os.path.join(args.out, "src"), exist_ok=True)
for rel in (args.copy.split(",") if RANK == 0 else []):
    try:
        shutil.copy(os.path.join(src, rel), os.path.join(args.out, "src", rel.replace("/", "__")))
    except OSError as e:
        out.setdefault("copy_errors", []).append(repr(e))
dist.init_process_group("nccl", device_id=dev)


def sync_timed(fn):
    torch.cuda.synchronize()
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - t


for spec in args.runs.split(","):
    if args.deadline and time.time() - T0 > args.deadline:
        out["runs"].append({"spec": spec, "skipped": "deadline"})
        continue
    name, seq, mbs, layers, *rest = spec.split(":")
    seq, mbs, layers = int(seq), int(mbs), int(layers)
    ckpt = "ckpt" in rest
    r = {"spec": spec, "model": name, "seq": seq, "mbs": mbs, "layers": layers, "ckpt": ckpt}
    tag = "%s-s%d-b%d-L%d%s" % (name, seq, mbs, layers, "-ckpt" if ckpt else "")
    try:
        model, V, ei = build_fsdp2_model(name, dev, layers, ckpt=ckpt)
        r["experts_implementation"] = ei
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        g = torch.Generator(device=dev).manual_seed(1234)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]

        def step(inp, rec=None):
            opt.zero_grad(set_to_none=True)
            ev[0].record()
            h0 = time.perf_counter()
            loss = model(input_ids=inp, labels=inp).loss
            h1 = time.perf_counter()
            ev[1].record()
            loss.backward()
            h2 = time.perf_counter()
            ev[2].record()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if rec is not None:
                rec.append((h1 - h0, h2 - h1))

        inp = torch.randint(0, V, (mbs, seq), device=dev, generator=g) if WS == 1 else \
            torch.randint(0, V, (mbs, seq), device=dev,
                          generator=torch.Generator(device=dev).manual_seed(1234 + RANK))
        for _ in range(2):
            step(inp)
        hs, ws, gf, gb = [], [], [], []
        for _ in range(args.steps):
            ws.append(sync_timed(lambda: step(inp, hs)))
            gf.append(ev[0].elapsed_time(ev[1]) / 1e3)
            gb.append(ev[1].elapsed_time(ev[2]) / 1e3)
        r["real"] = {"step_s": [round(v, 5) for v in ws], "step_s_median": statistics.median(ws),
                     "fwd_host_s": statistics.median(h[0] for h in hs),
                     "bwd_host_s": statistics.median(h[1] for h in hs),
                     "fwd_gpu_s": statistics.median(gf), "bwd_gpu_s": statistics.median(gb)}
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step(inp)
            torch.cuda.synchronize()
        tp = os.path.join(args.out, "trace-" + tag + SUFFIX + ".json")
        prof.export_chrome_trace(tp)
        with open(tp, "rb") as fi, gzip.open(tp + ".gz", "wb", compresslevel=6) as fo:
            shutil.copyfileobj(fi, fo)
        os.remove(tp)
        r["trace"] = os.path.basename(tp) + ".gz"
        del model, opt
    except Exception as e:  # noqa: BLE001
        r["error"] = repr(e)[:300]
    torch.cuda.empty_cache()
    print(json.dumps(r), flush=True)
    out["runs"].append(r)
    with open(os.path.join(args.out, "probe%s.json" % SUFFIX), "w") as f:
        json.dump(out, f, indent=1)
dist.destroy_process_group()
