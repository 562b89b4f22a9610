#!/usr/bin/env python3
"""Host time per eager op on plain tensors vs DTensors, one GPU (issues 19 and 24).

Eager PyTorch issues one kernel per op and the host's issue time per op sets the pace of a step
whose kernels are short (costmodel/host_dispatch.c: host.eager_launch_s). Under DTensor tensor
parallelism (torchtitan's TP: parallelize_module with ColwiseParallel / RowwiseParallel /
SequenceParallel) every op of a layer runs on DTensors, and each goes through DTensor's dispatch
(sharding propagation, cached, plus the wrapper's unwrap / rewrap) before its kernel. This script
measures the ratio of the two host times on the same op mix, so the model can scale its measured
per-op host cost for DTensor layouts; the GPU work is made negligible (tiny tensors) so the
host's issue time is what is timed.

Op mix, forward and backward through autograd (a Llama-block-like chain): rms_norm, mm against a
weight, silu, mul, add, view/transpose, softmax; tensors [64, 64] bf16; plain vs DTensor on a
one-rank mesh with the weights Replicate() and the activations Shard(0) (what the model's SP
regions hold), 3 warm-up rounds, 20 timed rounds of 50 chains each; median per-op host time over
rounds (perf_counter around the host's issue of a round, then a sync outside the timed span).

Usage (GPU machine): python3 bench/dtensor_dispatch.py --out $OUT/dtensor-dispatch.json
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F


def chain(x, w1, w2, g):
    """One block-like chain; returns (output, number of ops issued in the forward)."""
    h = F.rms_norm(x, (x.shape[-1],), g)          # 1
    a = h @ w1                                    # 2
    b = F.silu(a)                                 # 3
    c = b * a                                     # 4
    d = c @ w2                                    # 5
    e = d + x                                     # 6
    f = torch.softmax(e.float(), dim=-1)          # 7, 8
    out = (f.to(torch.bfloat16) * e).sum()        # 9, 10, 11
    return out, 11


def timed(fn, rounds, per_round):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(per_round):
            fn()
        ts.append(time.perf_counter() - t0)
        torch.cuda.synchronize()
    return statistics.median(ts) / per_round, min(ts) / per_round, max(ts) / per_round


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--per-round", type=int, default=50)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    mesh = init_device_mesh("cuda", (1,))
    n = 64
    torch.manual_seed(0)
    x = torch.randn(n, n, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w1 = torch.randn(n, n, device=dev, dtype=torch.bfloat16, requires_grad=True)
    w2 = torch.randn(n, n, device=dev, dtype=torch.bfloat16, requires_grad=True)
    g = torch.ones(n, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dx = distribute_tensor(x.detach(), mesh, [Shard(0)]).requires_grad_()
    dw1 = distribute_tensor(w1.detach(), mesh, [Replicate()]).requires_grad_()
    dw2 = distribute_tensor(w2.detach(), mesh, [Replicate()]).requires_grad_()
    dg = distribute_tensor(g.detach(), mesh, [Replicate()]).requires_grad_()
    res = {}
    for name, args in (("plain", (x, w1, w2, g)), ("dtensor", (dx, dw1, dw2, dg))):
        def fwd():
            with torch.no_grad():
                chain(*args)

        def fwd_bwd():
            out, _ = chain(*args)
            out.backward()
            for t in args:
                t.grad = None

        _, ops = chain(*args)
        f = timed(fwd, a.rounds, a.per_round)
        fb = timed(fwd_bwd, a.rounds, a.per_round)
        # check: the DTensor chain computes the plain one's value
        res[name] = {"fwd_chain_s": f[0], "fwd_chain_min_s": f[1], "fwd_chain_max_s": f[2],
                     "fwd_bwd_chain_s": fb[0], "fwd_bwd_chain_min_s": fb[1],
                     "fwd_bwd_chain_max_s": fb[2], "fwd_ops": ops,
                     "fwd_per_op_s": f[0] / ops}
    with torch.no_grad():
        p = chain(x, w1, w2, g)[0].float().item()
        q = chain(dx, dw1, dw2, dg)[0].full_tensor().float().item()
    rec = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "cpu_count": os.cpu_count(), "results": res,
        "check_plain_vs_dtensor": [p, q],
        "ratio_fwd": res["dtensor"]["fwd_chain_s"] / res["plain"]["fwd_chain_s"],
        "ratio_fwd_bwd": res["dtensor"]["fwd_bwd_chain_s"] / res["plain"]["fwd_bwd_chain_s"],
    }
    with open(a.out, "w") as f:
        json.dump(rec, f, indent=1)
    print(json.dumps({k: rec[k] for k in ("ratio_fwd", "ratio_fwd_bwd", "check_plain_vs_dtensor")}))
    print(json.dumps(res, indent=1))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
