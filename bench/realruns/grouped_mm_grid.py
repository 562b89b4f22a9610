"""torch._grouped_mm's rate over a grid of expert shapes, forward and both backward forms.

Why: plan priced every grouped expert GEMM at its one large-GEMM rate (gemm_efficiency_max of
the bf16 peak); helper epg27 measured the grouped kernels at 560-660 TFLOP/s in real EP steps
where dense GEMMs ran ~800 (bench/results/epg27_2026-11-29). This probe measures the rate by
shape so the cost model can price grouped experts from a table (data/systems/h200.json
"grouped_gemm_rates", costmodel/grouped_rate.h). Helper grpmm27, bench/results/grpmm27_2026-11-29.

Shapes: for each expert (hidden h, expert ffn f) of the MoE configs in bench/realruns/configs,
G local experts x m rows each (balanced groups), both projections of the SwiGLU experts:
  up   x[G m, h] @ w[G, h, f]      (k = h, n = f)
  down y[G m, f] @ w[G, f, h]      (k = f, n = h)
and for each the three GEMMs autograd runs (pytorch aten/src/ATen/native/cuda/Blas.cpp
_grouped_mm; tools/autograd/derivatives.yaml: mat_a's gradient is grad @ mat_b^T grouped by the
same offsets, mat_b's is mat_a^T @ grad, grouped along K):
  fwd   _grouped_mm(a[M, k], b[G, k, n], offs)            -> [M, n]      (M-grouped)
  dgrad _grouped_mm(g[M, n], b[G, k, n].transpose(-2, -1)) -> [M, k]      (M-grouped)
  wgrad _grouped_mm(a[M, k].t(), g[M, n], offs)            -> [G, k, n]   (K-grouped)
Each point's rate is its FLOPs (2 G m k n) over the median time; "ratio" is that over the rate
of the dense reference (torch.mm 8192^3 bf16, the shape plan's gemm_efficiency_max was measured
at) timed the same way in the same process, so burst-vs-sustained clocks cancel.

Method (/work/.library/device/METHOD.md): random bf16 (weights x 0.02), CUDA events around each
call, warm-ups, the median of --reps; inputs rotated over up to 4 sets when a set is under
~200 MB (L2 50 MB); every form checked once per (h, f) against per-group float matmuls.

Usage (one GPU): python3 grouped_mm_grid.py --out OUT.jsonl [--graph] [--reps 10] [--quick]
--graph (the table's data): each form captured as a CUDA graph of up to 20 calls (about 2 ms of
work), 7 replays timed with events, the median over the calls; without it each call is timed
eagerly, and a small GEMM's time is then the host's launch (~40 us), not the GPU's.
"""
import argparse
import json
import statistics
import sys
import time

import torch

# the EP tables' experts first (OLMoE, Qwen3-30B-A3B, PhiMoE, Mixtral 8x7B), then the others
PAIRS = [(2048, 1024), (2048, 768), (4096, 6400), (4096, 14336), (2048, 1408), (2880, 2880),
         (1024, 512), (4096, 1408), (2560, 1536), (6144, 16384)]
GROUPS = [2, 4, 8, 16, 32, 64]
ROWS = [64, 256, 1024, 4096, 8192]


def gmax(f):
    return 64 if f <= 1536 else 32 if f <= 2880 else 16 if f <= 6400 else 8


def ev_median(fns, reps, warm):
    """median ms of fns[i % len(fns)]() over reps calls after warm calls"""
    for i in range(warm):
        fns[i % len(fns)]()
    ts = []
    for i in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fns[i % len(fns)]()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def graph_median(fns, reps, n_calls):
    """median ms per call of a CUDA graph of n_calls calls (fns rotated) over reps replays: the
    GPU time alone (an eager call of a small GEMM waits on the host's ~40 us launch)"""
    for fn in fns:  # eager warm-up (workspaces, the kernel's first load) before the capture
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(n_calls):
            fns[i % len(fns)]()
    g.replay()
    g.replay()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / n_calls)
    del g
    return statistics.median(ts)


GRAPH = [False]


def dense_ref(dev, gen, reps):
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16, generator=gen)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16, generator=gen)
    ms = graph_median([lambda: a @ b], reps, 10) if GRAPH[0] else ev_median([lambda: a @ b], reps, 3)
    return 2.0 * 8192 ** 3 / (ms * 1e-3)


def check_forms(h, f, dev, gen):
    """rel. Frobenius error of each form against float per-group matmuls (G 3, m 64/128/192)"""
    counts = [64, 128, 192]
    offs = torch.tensor(counts, device=dev).cumsum(0).to(torch.int32)
    M = sum(counts)
    a = torch.randn(M, h, device=dev, dtype=torch.bfloat16, generator=gen)
    w = torch.randn(3, h, f, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02
    g = torch.randn(M, f, device=dev, dtype=torch.bfloat16, generator=gen)
    outs = {"fwd": torch._grouped_mm(a, w, offs=offs).float(),
            "dgrad": torch._grouped_mm(g, w.transpose(-2, -1), offs=offs).float(),
            "wgrad": torch._grouped_mm(a.t(), g, offs=offs).float()}
    refs = {"fwd": [], "dgrad": [], "wgrad": []}
    s = 0
    for i, c in enumerate(counts):
        refs["fwd"].append(a[s:s + c].float() @ w[i].float())
        refs["dgrad"].append(g[s:s + c].float() @ w[i].float().t())
        refs["wgrad"].append((a[s:s + c].float().t() @ g[s:s + c].float())[None])
        s += c
    err = {}
    for k in outs:
        r = torch.cat(refs[k], 0)
        err[k] = float((outs[k] - r).norm() / r.norm())
    return err


def point(h, f, G, m, dev, gen, reps):
    M = G * m
    offs = torch.arange(1, G + 1, device=dev, dtype=torch.int32) * m
    set_bytes = 2 * (M * (h + f) * 2 + G * h * f * 2)
    nsets = max(1, min(4, int(2e8 // max(set_bytes, 1))))
    rec = {"h": h, "f": f, "groups": G, "rows_per_group": m, "sets": nsets}
    for proj, k, n in (("up", h, f), ("down", f, h)):
        sets = []
        for _ in range(nsets):
            a = torch.randn(M, k, device=dev, dtype=torch.bfloat16, generator=gen)
            w = torch.randn(G, k, n, device=dev, dtype=torch.bfloat16, generator=gen) * 0.02
            g = torch.randn(M, n, device=dev, dtype=torch.bfloat16, generator=gen)
            sets.append((a, w, g))
        fl = 2.0 * M * k * n
        big = fl / 6e14 > 2e-3
        r, wu = (max(5, reps // 2), 2) if big else (reps, 3)
        forms = {
            "fwd": [lambda s=s: torch._grouped_mm(s[0], s[1], offs=offs) for s in sets],
            "dgrad": [lambda s=s: torch._grouped_mm(s[2], s[1].transpose(-2, -1), offs=offs)
                      for s in sets],
            "wgrad": [lambda s=s: torch._grouped_mm(s[0].t(), s[2], offs=offs) for s in sets],
        }
        for form, fns in forms.items():
            try:
                if GRAPH[0]:
                    try:
                        ms = graph_median(fns, 7, max(1, min(20, int(2e-3 / (fl / 6e14 + 5e-6)))))
                    except Exception as e:  # recorded; timed eagerly instead
                        rec["%s_%s_graph_error" % (proj, form)] = str(e)[:200]
                        torch.cuda.synchronize()
                        ms = ev_median(fns, r, wu)
                else:
                    ms = ev_median(fns, r, wu)
            except Exception as e:  # recorded, the other forms still run
                rec["%s_%s_error" % (proj, form)] = "%s: %s" % (type(e).__name__, str(e)[:200])
                continue
            rec["%s_%s_ms" % (proj, form)] = round(ms, 5)
            rec["%s_%s_tflops" % (proj, form)] = round(fl / (ms * 1e-3) / 1e12, 1)
        del sets, forms
    return rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--graph", action="store_true",
                    help="time CUDA-graph replays of several calls (GPU time without launch gaps)")
    ap.add_argument("--quick", action="store_true", help="two pairs, a few points (a local check)")
    a = ap.parse_args()
    GRAPH[0] = a.graph
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(2711)
    pairs = PAIRS[1:3] if a.quick else PAIRS
    t0 = time.time()
    meta = {"graph": a.graph, "torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(), "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}
    refs = [dense_ref(dev, gen, 10)]
    meta["dense_ref_tflops_start"] = round(refs[0] / 1e12, 1)
    with open(a.out, "w") as fo:
        fo.write(json.dumps({"meta": meta}) + "\n")
        for h, f in pairs:
            try:
                chk = check_forms(h, f, dev, gen)
            except Exception as e:
                chk = "%s: %s" % (type(e).__name__, str(e)[:300])
            fo.write(json.dumps({"check": [h, f], "rel_err": chk}) + "\n")
            for G in GROUPS:
                if G > gmax(f) or (a.quick and G not in (4, 32)):
                    continue
                for m in ROWS:
                    if a.quick and m not in (256, 4096):
                        continue
                    rec = point(h, f, G, m, dev, gen, a.reps)
                    fo.write(json.dumps(rec) + "\n")
                    fo.flush()
                    print("h%5d f%6d G%3d m%5d " % (h, f, G, m) + " ".join(
                        "%s %s" % (k[:-7], rec[k]) for k in rec if k.endswith("_tflops")), flush=True)
            torch.cuda.empty_cache()
            refs.append(dense_ref(dev, gen, 10))
        fo.write(json.dumps({"dense_ref_tflops": [round(r / 1e12, 1) for r in refs],
                             "wall_s": round(time.time() - t0, 1)}) + "\n")
    print("dense 8192^3 refs TF/s:", [round(r / 1e12, 1) for r in refs], "wall", round(time.time() - t0, 1))


if __name__ == "__main__":
    sys.exit(main())
