#!/usr/bin/env python3
"""moe12_mla_rope.py — times Megatron-Core's unfused multi-latent-attention RoPE path (apply_rope_fusion
off: the split of q and kv, the interleaved rotary embedding of the rope parts, the
concatenation of query and key, value.contiguous()) forward and backward on one GPU, at the shape
of NVIDIA's DeepSeek-V3 H100 row (seq 4096, mbs 1, TP 2: 64 heads per GPU; nope 128, rope 64,
v 128), beside a device-to-device copy for the HBM ceiling.

The ops follow Megatron-LM d98e8a6 megatron/core/transformer/multi_latent_attention.py 931-981
and megatron/core/models/common/embeddings/rope_utils.py 92-160 (written here from that
description, pure PyTorch; no Megatron or Transformer Engine needed). Checked against a float64
reference of the same function. Prints one table; JSON under $OUT (or the current directory).

Usage: python3 bench/moe12_mla_rope.py [--tokens 4096] [--heads 64]
"""
import argparse
import json
import os

import torch


def rope_bshd_mla(t, freqs, mscale):
    """The interleaved MLA RoPE of rope_utils._apply_rotary_pos_emb_bshd (no t_pass part)."""
    t = torch.cat((t[..., 0::2], t[..., 1::2]), dim=-1)
    cos_ = (torch.cos(freqs) * mscale).to(t.dtype)
    sin_ = (torch.sin(freqs) * mscale).to(t.dtype)
    x1, x2 = torch.chunk(t, 2, dim=-1)
    rot = torch.cat((-x2, x1), dim=-1)
    t = t * cos_ + rot * sin_
    return torch.cat((t, t[..., :0]), dim=-1)


def unfused(q, kv, k_pos_emb, freqs, dn, dr, dv, n, mscale=1.0):
    q_no_pe, q_pos_emb = torch.split(q, [dn, dr], dim=-1)
    k_no_pe, value = torch.split(kv, [dn, dv], dim=-1)
    q_pos_emb = rope_bshd_mla(q_pos_emb, freqs, mscale)
    k_pos_emb = rope_bshd_mla(k_pos_emb, freqs, mscale)
    query = torch.cat([q_no_pe, q_pos_emb], dim=-1)
    k_pos_emb = k_pos_emb.expand(-1, -1, n, -1)
    key = torch.cat([k_no_pe, k_pos_emb], dim=-1)
    return query.contiguous(), key.contiguous(), value.contiguous()


def events_median_ms(fn, reps=30, warm=5):
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
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=64)
    a = ap.parse_args()
    T, n, dn, dr, dv = a.tokens, a.heads, 128, 64, 128
    dev = "cuda"
    torch.manual_seed(0)
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "tokens": T, "heads": n}

    def inputs():
        q = torch.randn(T, 1, n, dn + dr, device=dev, dtype=torch.bfloat16, requires_grad=True)
        kv = torch.randn(T, 1, n, dn + dv, device=dev, dtype=torch.bfloat16, requires_grad=True)
        kp = torch.randn(T, 1, 1, dr, device=dev, dtype=torch.bfloat16, requires_grad=True)
        return q, kv, kp

    pos = torch.arange(T, device=dev, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, dr, 2, device=dev, dtype=torch.float32) / dr))
    f = torch.outer(pos, inv)
    freqs = torch.cat((f, f), dim=-1)[:, None, None, :]

    # correctness against float64 on fresh random inputs
    q, kv, kp = inputs()
    outs = unfused(q, kv, kp, freqs, dn, dr, dv, n, 0.7)
    ref = unfused(q.double(), kv.double(), kp.double(), freqs.double(), dn, dr, dv, n, 0.7)
    errs = [float((o.double() - r).norm() / r.norm()) for o, r in zip(outs, ref)]
    out["rel_err_fwd"] = errs
    assert all(e < 1e-2 for e in errs) and all(torch.isfinite(o).all() for o in outs), errs

    sets = [inputs() for _ in range(3)]
    grads = [tuple(torch.randn_like(o) for o in unfused(*s, freqs, dn, dr, dv, n))
             for s in sets]
    i = [0]

    def fwd():
        s = sets[i[0] % 3]
        i[0] += 1
        with torch.no_grad():
            unfused(*s, freqs, dn, dr, dv, n)

    def fwd_bwd():
        k = i[0] % 3
        i[0] += 1
        o = unfused(*sets[k], freqs, dn, dr, dv, n)
        torch.autograd.backward(o, grads[k])

    out["fwd_ms"] = events_median_ms(fwd)
    out["fwd_bwd_ms"] = events_median_ms(fwd_bwd)
    out["bwd_ms"] = out["fwd_bwd_ms"] - out["fwd_ms"]
    big = torch.randn(256 * 1024 * 1024 // 2, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(big)
    cms = events_median_ms(lambda: dst.copy_(big))
    out["copy_tb_per_s"] = 2 * big.numel() * 2 / (cms * 1e-3) / 1e12
    # bytes of the fused path this replaces: 4 per element of q and k (plan's lump)
    out["fused_equiv_bytes"] = 4.0 * 2 * T * n * (dn + dr)
    path = os.path.join(os.environ.get("OUT", "."), "moe12_mla_rope.json")
    with open(path + ".tmp", "w") as fh:
        json.dump(out, fh, indent=1)
    os.replace(path + ".tmp", path)
    print(f"{'gpu':28s} {'tokens':>6s} {'heads':>5s} {'fwd_ms':>7s} {'bwd_ms':>7s} {'copy_TB/s':>9s}")
    print(f"{out['gpu'][:28]:28s} {T:6d} {n:5d} {out['fwd_ms']:7.3f} {out['bwd_ms']:7.3f} "
          f"{out['copy_tb_per_s']:9.2f}")
    print("rel err fwd", " ".join(f"{e:.2e}" for e in errs))


if __name__ == "__main__":
    main()
