"""torch._grouped_mm at the expert-parallel rows' shapes, balanced against routed group sizes.

Why: plan prices a rank's grouped expert GEMMs as E_local GEMMs of the mean rows per expert at
its large-GEMM rate (costmodel/recipe_moe.c rb_moe_experts_s). An untrained router's groups are
far from equal (per-expert max/mean ~4); this probe times what the GPU does with both, forward
and backward, as parallel_run.py's grouped experts run them (bench/realruns/prun_moe.py
Experts._forward_device: rows padded to multiples of 16 into a buffer of N + 16 E_local rows,
offsets the padded cumsum, SwiGLU of three torch._grouped_mm), plus one dense torch.mm of the
same rows as the rate reference. Helper epg27, bench/results/epg27_2026-11-29.

Usage (one GPU): python3 grouped_mm_probe.py --out OUT.jsonl [--counts DIR] [--reps 20]
--counts: the PRUN_COUNTS_OUT dumps of real runs (prun_measure.py counts_dump): per MoE call,
the copies per global expert of each rank; their sum over ranks is the global per-expert load
of that call, which sliced into E / ep experts is a rank's groups at ep (times the ratio of the
ranks' token counts when the probe's shape has another world size).

Method (/work/.library/device/METHOD.md): random bf16 data (weights x 0.02), CUDA events,
5 warm-ups, the median of --reps; every grouped GEMM checked once against a per-group torch.mm.
"""
import argparse
import glob
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

# (name, config, E, top_k, hidden, expert ffn, ep, tokens per rank): the rows of the EP tables
# the key names the real runs (their labels) whose routed counts stand for the shape's groups
SHAPES = [
    ("olmoe-ep4", "olmoe", 64, 8, 2048, 1024, 4, 8192),     # ho26-ep4-grp-olmoeL8-s4k-b2
    ("olmoe-ep2", "olmoe", 64, 8, 2048, 1024, 2, 8192),
    ("q3moe-ep2", "q3moe", 128, 8, 2048, 768, 2, 8192),     # ho18/ho25b/ho26b s4k b2
    ("q3moe-ep4", "q3moe", 128, 8, 2048, 768, 4, 8192),     # ho17 (b4: 16384), ho10 (b1)
    ("phimoe-ep2", "phimoe", 16, 2, 4096, 6400, 2, 8192),   # ho26-ep2-grp-phimoeL4
    ("mixtral-ep2", "mixtral", 8, 2, 4096, 14336, 2, 8192),
]


def ev_time(fn, reps, warm=5):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts), min(ts), max(ts)


def load_counts(d):
    """{config: [(ep of the run, tokens per rank, [global per-expert copies of one call])]}"""
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "*.r0.json"))):
        ranks = [json.load(open(g)) for g in sorted(glob.glob(f[:-len("r0.json")] + "r*.json"))]
        r0 = ranks[0]
        warm_calls = r0["warmup"] * r0["layers"]
        for i in range(warm_calls, len(r0["calls"])):  # the timed steps' calls
            tot = [sum(r["calls"][i][0][e] for r in ranks) for e in range(len(r0["calls"][i][0]))]
            out.setdefault(r0["label"], []).append((len(ranks), tot))
    return out


def groups_from(tot, ep, ranks_run, rank):
    """rank's local groups at ep from one call's global per-expert load of a run on ranks_run
    ranks of the same tokens per rank: the load scales with the tokens, ep / ranks_run."""
    El = len(tot) // ep
    return [int(round(c * ep / ranks_run)) for c in tot[rank * El:(rank + 1) * El]]


def build(counts, h, f, dev, gen):
    G = len(counts)
    N = sum(counts)
    c = torch.tensor(counts, device=dev)
    padded = (c + 15) // 16 * 16
    offs = torch.cumsum(padded, 0).to(torch.int32)
    rows = N + 16 * G
    x = torch.randn(rows, h, device=dev, dtype=torch.bfloat16, generator=gen)
    w1 = (torch.randn(G, h, f, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02).requires_grad_()
    w3 = (torch.randn(G, h, f, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02).requires_grad_()
    w2 = (torch.randn(G, f, h, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02).requires_grad_()
    return x, (w1, w3, w2), offs, int(padded.sum())


def check(x, w, offs):
    """one grouped GEMM against per-group torch.mm (rel. Frobenius error)"""
    y = torch._grouped_mm(x, w, offs=offs).float()
    o = offs.tolist()
    err, ref_n, s = 0.0, 0.0, 0
    for g, e in enumerate(o):
        if e > s:
            r = (x[s:e].float() @ w[g].float())
            err += float(((y[s:e] - r) ** 2).sum())
            ref_n += float((r ** 2).sum())
        s = e
    return (err / max(ref_n, 1e-30)) ** 0.5


KSEQ = []


def kernel_table(block, gy, params, iters=3):
    """{kernel name: [us per iteration, launches per iteration]} of `iters` forward + backward"""
    from torch.profiler import ProfilerActivity, profile
    for p in params:
        p.grad = None
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as pr:
        for _ in range(iters):
            block().backward(gy)
        torch.cuda.synchronize()
    ks = {}
    seq = [e.time_range.elapsed_us() for e in sorted(
        (e for e in pr.events() if str(e.device_type).endswith("CUDA") and "cutlass" in e.name),
        key=lambda e: e.time_range.start)]
    KSEQ[:] = [round(x, 1) for x in seq[-9:]]  # the last iteration's 3 forward, 6 backward GEMMs
    for e in pr.events():
        if not str(e.device_type).endswith("CUDA"):
            continue
        k = e.name[:140]
        ks.setdefault(k, [0.0, 0])
        ks[k][0] += e.time_range.elapsed_us() / iters
        ks[k][1] += 1
    return {k: [round(v[0], 1), v[1] // iters] for k, v in sorted(ks.items(), key=lambda kv: -kv[1][0])[:24]}


def case(name, counts, h, f, dev, gen, reps, prof):
    x, (w1, w3, w2), offs, pad_rows = build(counts, h, f, dev, gen)
    N = sum(counts)
    xg = x.detach().clone().requires_grad_()
    rec = {"case": name, "groups": len(counts), "rows": N, "padded_rows": pad_rows,
           "hidden": h, "ffn": f, "max_over_mean": round(max(counts) / (N / len(counts)), 3),
           "min": min(counts), "zeros": sum(1 for c in counts if c == 0), "counts": counts}
    rec["rel_err_up"] = round(check(x, w1.detach(), offs), 6)
    rec["rel_err_down"] = round(check(torch.randn(x.shape[0], f, device=dev, dtype=torch.bfloat16,
                                                  generator=gen), w2.detach(), offs), 6)
    hh = torch.randn(x.shape[0], f, device=dev, dtype=torch.bfloat16, generator=gen)
    with torch.no_grad():
        rec["fwd_up_ms"] = ev_time(lambda: torch._grouped_mm(x, w1, offs=offs), reps)[0]
        rec["fwd_down_ms"] = ev_time(lambda: torch._grouped_mm(hh, w2, offs=offs), reps)[0]

    def block():
        a = torch._grouped_mm(xg, w1, offs=offs)
        b = torch._grouped_mm(xg, w3, offs=offs)
        return torch._grouped_mm(F.silu(a) * b, w2, offs=offs)

    gy = torch.randn(x.shape[0], h, device=dev, dtype=torch.bfloat16, generator=gen)
    rec["block_fwd_ms"] = ev_time(lambda: block(), reps)[0]
    st = {}

    def fb():
        out = block()
        st["out"] = out

    def bw():
        st["out"].backward(gy)
    # backward alone: the forward outside the events
    ts = []
    for i in range(reps + 5):
        for p in (xg, w1, w3, w2):
            p.grad = None
        fb()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        bw()
        b.record()
        b.synchronize()
        if i >= 5:
            ts.append(a.elapsed_time(b))
    rec["block_bwd_ms"] = statistics.median(ts)
    # dense reference: one torch.mm of the same rows (the preset's large-GEMM rate)
    wd = torch.randn(h, f, device=dev, dtype=torch.bfloat16, generator=gen)
    wdd = torch.randn(f, h, device=dev, dtype=torch.bfloat16, generator=gen)
    xd = x[:N]
    hd = hh[:N]
    with torch.no_grad():
        rec["dense_up_ms"] = ev_time(lambda: xd @ wd, reps)[0]
        rec["dense_down_ms"] = ev_time(lambda: hd @ wdd, reps)[0]
    if prof:  # per-kernel time of one forward + backward (the grouped GEMMs' three forms)
        try:
            rec["kernels_us_per_iter"] = kernel_table(block, gy, (xg, w1, w3, w2))
            rec["grouped_kernels_us_last_iter"] = list(KSEQ)
        except Exception as e:  # the timings above stand without it
            rec["kernels_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    fl = 2.0 * N * h * f
    rec["fwd_up_tflops"] = round(fl / rec["fwd_up_ms"] / 1e9, 1)
    rec["fwd_down_tflops"] = round(fl / rec["fwd_down_ms"] / 1e9, 1)
    rec["dense_up_tflops"] = round(fl / rec["dense_up_ms"] / 1e9, 1)
    rec["block_fwd_tflops"] = round(3 * fl / rec["block_fwd_ms"] / 1e9, 1)
    rec["block_bwd_tflops"] = round(6 * fl / rec["block_bwd_ms"] / 1e9, 1)
    del x, w1, w3, w2, xg, hh, gy, st
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--counts", default="")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--shapes", default="")
    ap.add_argument("--real-calls", type=int, default=3, help="routed calls per shape and rank")
    ap.add_argument("--last-calls", action="store_true",
                    help="the last --real-calls calls (every layer of the last timed step)")
    ap.add_argument("--all-profiles", action="store_true", help="a kernel table for every case")
    a = ap.parse_args()
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(27)
    real = load_counts(a.counts) if a.counts else {}
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(),
            "cublas_backend": str(torch.backends.cuda.preferred_blas_library())}
    with open(a.out, "w") as fo:
        fo.write(json.dumps({"meta": meta}) + "\n")
        for name, cfg, E, k, h, f, ep, T in SHAPES:
            if a.shapes and name not in a.shapes.split(","):
                continue
            El = E // ep
            N = T * k  # the mean rank's received copies
            recs = [case(name + ":balanced", [N // El] * El, h, f, dev, gen, a.reps, True)]
            src = [(lab, v) for lab, v in real.items() if cfg in lab]
            n = 0
            for lab, calls in src:
                pick = calls[-a.real_calls:] if a.last_calls else calls[::max(1, len(calls) // a.real_calls)]
                for ranks_run, tot in pick:
                    if n >= a.real_calls:
                        break
                    g = groups_from(tot, ep, ranks_run, n % ep)
                    # the same total rows as the balanced case (the per-rank load is another
                    # mechanism): scaled to N
                    s = sum(g)
                    if s <= 0:
                        continue
                    g = [int(round(c * N / s)) for c in g]
                    recs.append(case("%s:routed:%s:%d" % (name, lab, n), g, h, f, dev, gen, a.reps,
                                     n == 0 or a.all_profiles))
                    n += 1
            for r in recs:
                fo.write(json.dumps(r) + "\n")
                fo.flush()
                print("%-44s G%3d max/mean %5.2f fwd up %.3f down %.3f ms (dense up %.3f) block fwd %.3f bwd %.3f ms  %s/%s TF/s" % (
                    r["case"][:44], r["groups"], r["max_over_mean"], r["fwd_up_ms"], r["fwd_down_ms"],
                    r["dense_up_ms"], r["block_fwd_ms"], r["block_bwd_ms"], r["block_fwd_tflops"],
                    r["block_bwd_tflops"]), flush=True)


if __name__ == "__main__":
    sys.exit(main())
