#!/usr/bin/env python3
"""bwmoe23_moe_pieces.py — what a Megatron-Core MoE layer's pieces cost per local expert on one
Hopper GPU, with torch only (no Transformer Engine or Megatron on the device machine; issue 20).

For each shape set (local experts E, rows per expert M, hidden h, expert FFN f; Qwen3-30B-A3B and
DeepSeek-V3 as the published Megatron-Bridge rows run them) it times, with CUDA events (median of
REPS after WARM warm-ups, random data, every expert its own weights):
  loop1 / loop4   fc1 + fc2 forward as one torch.mm per expert, on 1 stream and round-robin on 4
                  (what TE's GroupedLinear does: multi_stream_cublas_gemm, expert i on stream i % 4)
  bwd4            dgrad + wgrad of fc1 and fc2 per expert on 4 streams, wgrad accumulated into a
                  bf16 main_grad (addmm_, beta 1: gradient-accumulation fusion)
  dense           the same flops as ONE torch.mm per layer (all rows, one weight): no per-expert cost
  grouped         torch._grouped_mm forward (one kernel per projection)
  fp8loop4        fc1 + fc2 forward as torch._scaled_mm per expert (e4m3, per-tensor scales), 4 streams
  q_loop / q_one  per-tensor current-scaling quantize (amax, scale, cast: TE's FP8-CS quantizer
                  does one amax and one cast kernel per tensor) per expert vs once over all rows
and per micro-batch of S tokens (E_all experts, top-k): the router (gating GEMM, softmax or
sigmoid, top-k, the aux loss's per-expert sums), Megatron's unfused permute / unpermute
(index_select, probs multiply, index_add_), a sort of the routed indices, the token-count
device-to-host copy (.tolist()) with the GPU idle, and the host time to issue one torch.mm in a
per-expert loop while the GPU is busy. Writes JSON to --out and prints a table.
"""
import argparse
import json
import platform
import statistics
import time

import torch

WARM, REPS = 3, 10


def ev_time(fn, reps=REPS, warm=WARM):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(ts)


def graph_time(fn, reps=REPS):
    """GPU time alone: fn captured once in a CUDA graph, its replays timed (no host issue)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return ev_time(g.replay, reps=reps)


def relerr(x, ref):
    x, ref = x.double(), ref.double()
    return float((x - ref).norm() / ref.norm())


def expert_set(name, E, M, h, f, streams):
    dev = "cuda"
    bf = torch.bfloat16
    f2 = 2 * f  # fc1 = gate and up (SwiGLU)
    x = torch.randn(E * M, h, device=dev, dtype=bf)
    a1 = torch.randn(E * M, f, device=dev, dtype=bf)  # fc2's input (the activation)
    w1 = torch.randn(E, f2, h, device=dev, dtype=bf) * 0.02  # TE: weight [out, in]
    w2 = torch.randn(E, h, f, device=dev, dtype=bf) * 0.02
    dy2 = torch.randn(E * M, h, device=dev, dtype=bf)
    dy1 = torch.randn(E * M, f2, device=dev, dtype=bf)
    g1 = torch.zeros(E, f2, h, device=dev, dtype=bf)
    g2 = torch.zeros(E, h, f, device=dev, dtype=bf)
    y1 = torch.empty(E * M, f2, device=dev, dtype=bf)
    y2 = torch.empty(E * M, h, device=dev, dtype=bf)
    dx1 = torch.empty(E * M, h, device=dev, dtype=bf)
    dx2 = torch.empty(E * M, f, device=dev, dtype=bf)
    xs, a1s = x.split(M), a1.split(M)
    dy1s, dy2s = dy1.split(M), dy2.split(M)
    y1s, y2s, dx1s, dx2s = y1.split(M), y2.split(M), dx1.split(M), dx2.split(M)
    def on_streams(n, body):
        main = torch.cuda.current_stream()
        if n == 1:
            for i in range(E):
                body(i)
            return
        for s in streams[:n]:
            s.wait_stream(main)
        for i in range(E):
            with torch.cuda.stream(streams[i % n]):
                body(i)
        for s in streams[:n]:
            main.wait_stream(s)

    def fwd_body(i):
        torch.mm(xs[i], w1[i].t(), out=y1s[i])
        torch.mm(a1s[i], w2[i].t(), out=y2s[i])

    def bwd_body(i):
        torch.mm(dy2s[i], w2[i], out=dx2s[i])  # fc2 dgrad
        g2[i].addmm_(dy2s[i].t(), a1s[i])  # fc2 wgrad into main_grad
        torch.mm(dy1s[i], w1[i], out=dx1s[i])  # fc1 dgrad
        g1[i].addmm_(dy1s[i].t(), xs[i])  # fc1 wgrad

    r = {"name": name, "E": E, "M": M, "h": h, "f": f}
    fl_fwd = 2.0 * E * M * h * (f2 + f)
    r["flops_fwd"] = fl_fwd
    r["loop1_s"] = ev_time(lambda: on_streams(1, fwd_body))
    r["loop4_s"] = ev_time(lambda: on_streams(4, fwd_body))
    r["bwd4_s"] = ev_time(lambda: on_streams(4, bwd_body))
    r["loop1_g_s"] = graph_time(lambda: on_streams(1, fwd_body))
    r["loop4_g_s"] = graph_time(lambda: on_streams(4, fwd_body))
    r["bwd1_g_s"] = graph_time(lambda: on_streams(1, bwd_body))
    r["bwd4_g_s"] = graph_time(lambda: on_streams(4, bwd_body))
    # correctness of one expert's fc1 (poisoned first)
    y1.fill_(float("nan"))
    on_streams(4, fwd_body)
    torch.cuda.synchronize()
    r["check_loop_fc1"] = relerr(y1s[E - 1], xs[E - 1].float() @ w1[E - 1].float().t())
    # dense: one GEMM of all rows against one weight, same flops
    dense = lambda: (torch.mm(x, w1[0].t(), out=y1), torch.mm(a1, w2[0].t(), out=y2))  # noqa: E731
    r["dense_s"] = ev_time(dense)
    r["dense_g_s"] = graph_time(dense)

    def dense_bwd():
        torch.mm(dy2, w2[0], out=dx2)
        g2[0].addmm_(dy2.t(), a1)
        torch.mm(dy1, w1[0], out=dx1)
        g1[0].addmm_(dy1.t(), x)

    r["dense_bwd_g_s"] = graph_time(dense_bwd)
    # grouped_mm (weights as [E, in, out] views)
    offs = torch.arange(M, E * M + 1, M, device=dev, dtype=torch.int32)
    w1t, w2t = w1.transpose(1, 2), w2.transpose(1, 2)
    try:
        r["grouped_s"] = ev_time(lambda: (torch._grouped_mm(x, w1t, offs=offs),
                                          torch._grouped_mm(a1, w2t, offs=offs)))
        out = torch._grouped_mm(x, w1t, offs=offs)
        r["check_grouped_fc1"] = relerr(out[-M:], xs[E - 1].float() @ w1[E - 1].float().t())
    except Exception as e:  # noqa: BLE001
        r["grouped_error"] = repr(e)[:200]
    # FP8 (e4m3, per-tensor scales) per expert, 4 streams
    f8 = torch.float8_e4m3fn
    x8, a8 = x.to(f8), a1.to(f8)
    w18, w28 = w1.mul(32).to(f8), w2.mul(32).to(f8)
    one = torch.ones((), device=dev, dtype=torch.float32)
    inv = torch.full((), 1 / 32, device=dev, dtype=torch.float32)
    x8s, a8s = x8.split(M), a8.split(M)

    def fwd8_body(i):
        torch._scaled_mm(x8s[i], w18[i].t(), scale_a=one, scale_b=inv, out_dtype=bf)
        torch._scaled_mm(a8s[i], w28[i].t(), scale_a=one, scale_b=inv, out_dtype=bf)

    try:
        r["fp8loop4_s"] = ev_time(lambda: on_streams(4, fwd8_body))
        r["fp8loop4_g_s"] = graph_time(lambda: on_streams(4, fwd8_body))
        r["fp8dense_g_s"] = graph_time(lambda: (
            torch._scaled_mm(x8, w18[0].t(), scale_a=one, scale_b=inv, out_dtype=bf),
            torch._scaled_mm(a8, w28[0].t(), scale_a=one, scale_b=inv, out_dtype=bf)))
        r["fp8dense_s"] = ev_time(lambda: (
            torch._scaled_mm(x8, w18[0].t(), scale_a=one, scale_b=inv, out_dtype=bf),
            torch._scaled_mm(a8, w28[0].t(), scale_a=one, scale_b=inv, out_dtype=bf)))
        o = torch._scaled_mm(x8s[0], w18[0].t(), scale_a=one, scale_b=inv, out_dtype=bf)
        r["check_fp8_fc1"] = relerr(o, x8s[0].float() @ (w18[0].float() / 32).t())
    except Exception as e:  # noqa: BLE001
        r["fp8_error"] = repr(e)[:200]

    # current-scaling quantize of fc1's input: per expert vs once
    def quant(t):
        s = 448.0 / t.abs().amax().float().clamp(min=1e-12)
        return (t.float() * s).to(f8), s

    r["q_loop_s"] = ev_time(lambda: [quant(t) for t in xs])
    r["q_one_s"] = ev_time(lambda: quant(x))
    r["q_bytes"] = E * M * h * (2 + 2 + 1)  # amax read, cast read + write
    r["q_loop_g_s"] = graph_time(lambda: [quant(t) for t in xs])
    r["q_one_g_s"] = graph_time(lambda: quant(x))
    # one bandwidth kernel (in-place scale of fc1's input) per expert vs once: the GPU's fixed
    # cost of splitting a bandwidth-bound kernel into E launches (TE quantizes per expert)
    r["split_e_g_s"] = graph_time(lambda: [t.mul_(1.0) for t in xs])
    r["split_1_g_s"] = graph_time(lambda: x.mul_(1.0))
    r["split_bytes"] = E * M * h * 4
    return r


def per_token(name, S, h, E_all, topk, score):
    dev = "cuda"
    bf = torch.bfloat16
    r = {"name": name, "S": S, "h": h, "E_all": E_all, "topk": topk, "score": score}
    x = torch.randn(S, h, device=dev, dtype=bf, requires_grad=True)
    wg = (torch.randn(E_all, h, device=dev, dtype=torch.float32) * 0.02).requires_grad_()

    def router():
        logits = torch.mm(x.float(), wg.t())  # moe_router_dtype fp32
        scores = torch.softmax(logits, -1) if score == "softmax" else torch.sigmoid(logits)
        probs, idx = torch.topk(scores, topk, dim=-1)
        if score == "sigmoid":
            probs = probs / probs.sum(-1, keepdim=True)
        rmap = torch.zeros_like(scores, dtype=torch.bool).scatter(1, idx, True)
        tpe = rmap.sum(0)
        aux = (scores.sum(0) * tpe).sum() * (E_all / (S * S * topk))
        return probs, idx, rmap, tpe, aux

    def router_fb():
        probs, _, _, _, aux = router()
        (probs.sum() + aux).backward()

    r["router_fwd_s"] = ev_time(lambda: router())
    r["router_fwdbwd_s"] = ev_time(router_fb)
    with torch.no_grad():
        probs, idx, rmap, tpe, _ = router()
    # Megatron's unfused permute (moe_utils.permute): indices from the routing map, index_select
    xd = x.detach()

    def perm_idx():
        m = rmap.t().contiguous()
        tok = torch.arange(S, device=dev).unsqueeze(0).expand(E_all, -1)
        return tok.masked_select(m)

    sorted_idx = perm_idx()
    r["permute_index_s"] = ev_time(perm_idx)
    r["permute_s"] = ev_time(lambda: xd.index_select(0, sorted_idx))
    perm = xd.index_select(0, sorted_idx)
    pw = torch.rand(perm.shape[0], 1, device=dev, dtype=bf)
    out = torch.zeros(S, h, device=dev, dtype=bf)

    def unpermute():
        out.zero_()
        out.index_add_(0, sorted_idx, perm * pw)

    r["unpermute_s"] = ev_time(unpermute)
    r["routed_rows"] = int(perm.shape[0])
    r["permute_bytes"] = 2 * 2 * perm.shape[0] * h  # read + write bf16 of the routed rows
    r["sort_s"] = ev_time(lambda: torch.sort(idx.flatten(), stable=True))
    # token counts to the host with the GPU idle (the dispatcher's / TEGroupedMLP's sync)
    tpe_local = tpe[: max(1, E_all // 8)].contiguous()
    torch.cuda.synchronize()
    ts = []
    for _ in range(50):
        t0 = time.perf_counter()
        tpe_local.tolist()
        ts.append(time.perf_counter() - t0)
    r["tolist_idle_s"] = statistics.median(ts)
    return r


def host_per_gemm(E, M, h, f):
    """Host time of a per-expert torch.mm loop (2 GEMMs an expert) with the GPU busy."""
    dev = "cuda"
    bf = torch.bfloat16
    x = torch.randn(E * M, h, device=dev, dtype=bf)
    w = torch.randn(E, 2 * f, h, device=dev, dtype=bf)
    big = torch.randn(8192, 8192, device=dev, dtype=bf)
    xs = x.split(M)
    ys = torch.empty(E * M, 2 * f, device=dev, dtype=bf).split(M)
    res = []
    for _ in range(7):
        for _ in range(6):
            torch.mm(big, big)  # ~10 ms of queued work: the host runs ahead
        t0 = time.perf_counter()
        for i in range(E):
            torch.mm(xs[i], w[i].t(), out=ys[i])
            torch.mm(xs[i], w[i].t(), out=ys[i])
        res.append((time.perf_counter() - t0) / (2 * E))
        torch.cuda.synchronize()
    return statistics.median(res[2:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    streams = [torch.cuda.Stream() for _ in range(4)]
    p = torch.cuda.get_device_properties(0)
    facts = {"gpu": p.name, "sms": p.multi_processor_count, "torch": torch.__version__,
             "cuda": torch.version.cuda, "cpu": platform.processor() or platform.machine(),
             "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    # reference rates
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    facts["mm8192_bf16_flops_per_s"] = 2 * 8192 ** 3 / ev_time(lambda: torch.mm(big, big))
    buf = torch.empty(2 ** 30, device="cuda", dtype=torch.uint8)
    buf2 = torch.empty_like(buf)
    facts["copy_bytes_per_s"] = 2 * 2 ** 30 / ev_time(lambda: buf2.copy_(buf))
    del buf, buf2
    sets = [  # name, local experts, rows per expert, hidden, expert ffn
        ("qwen3-30b ep8 mbs4 (B200 26.04.01)", 16, 8192, 2048, 768),
        ("qwen3-30b ep8 mbs8 (B300/GB300 26.04.01)", 16, 16384, 2048, 768),
        ("qwen3-30b ep8 mbs1 (H100 pp2 26.02.01)", 16, 2048, 2048, 768),
        ("qwen3-30b ep16 mbs1 (H100 26.04.01)", 8, 4096, 2048, 768),
        ("deepseek-v3 ep8 mbs2 (B300)", 32, 2048, 7168, 2048),
        ("deepseek-v3 ep64 mbs1 (H100)", 4, 8192, 7168, 2048),
    ]
    res = {"facts": facts, "experts": [], "tokens": []}
    for s in sets:
        try:
            res["experts"].append(expert_set(*s, streams))
        except Exception as e:  # noqa: BLE001
            res["experts"].append({"name": s[0], "error": repr(e)[:300]})
        torch.cuda.empty_cache()
        json.dump(res, open(a.out, "w"), indent=1)
    for t in (("qwen3-30b mbs4", 16384, 2048, 128, 8, "softmax"),
              ("deepseek-v3 mbs2", 8192, 7168, 256, 8, "sigmoid")):
        try:
            res["tokens"].append(per_token(*t))
        except Exception as e:  # noqa: BLE001
            res["tokens"].append({"name": t[0], "error": repr(e)[:300]})
        torch.cuda.empty_cache()
    res["host_per_gemm_s"] = host_per_gemm(16, 2048, 2048, 768)
    with open(a.out, "w") as fh:
        json.dump(res, fh, indent=1)
    print(json.dumps(facts))
    print(f"{'set':42s} {'loop1':>7s} {'loop4':>7s} {'bwd4':>7s} {'dense':>7s} {'grouped':>7s} "
          f"{'fp8l4':>7s} {'fp8dn':>7s} {'q_loop':>7s} {'q_one':>7s} (ms)")
    for r in res["experts"]:
        g = lambda k: r.get(k, float("nan")) * 1e3  # noqa: E731
        print(f"{r['name']:42s} {g('loop1_s'):7.3f} {g('loop4_s'):7.3f} {g('bwd4_s'):7.3f} "
              f"{g('dense_s'):7.3f} {g('grouped_s'):7.3f} {g('fp8loop4_s'):7.3f} "
              f"{g('fp8dense_s'):7.3f} {g('q_loop_s'):7.3f} {g('q_one_s'):7.3f}")
    for r in res["tokens"]:
        print({k: (round(v * 1e3, 4) if k.endswith("_s") else v) for k, v in r.items()})
    print("host per torch.mm in a loop (us):", round(res["host_per_gemm_s"] * 1e6, 2))


if __name__ == "__main__":
    main()
