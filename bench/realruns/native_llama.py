"""A PyTorch-native Llama written the way torchtitan's llama3 model writes it (torchtitan/models/llama3/
model/model.py): nn.RMSNorm (F.rms_norm), RoPE as a complex multiply on precomputed freqs_cis
(with Llama 3's frequency scaling when the config has it), K/V repeated to the query heads and
F.scaled_dot_product_attention(is_causal=True), SwiGLU feed-forward w2(silu(w1 x) * w3 x), untied
output projection unless the config ties it. Built from a Hugging Face config.json's values
(bench/realruns/configs/*.json) so the same file names the model for both implementations.

Qwen3 configs add its per-head q/k RMSNorm. Used by bench/realruns/realrun.py --impl native and
bench/realruns/parallel_run.py; needs only torch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Args:
    def __init__(self, cfg, layers=None):
        self.dim = cfg["hidden_size"]
        self.n_layers = layers or cfg["num_hidden_layers"]
        self.n_heads = cfg["num_attention_heads"]
        self.n_kv_heads = cfg.get("num_key_value_heads") or self.n_heads
        self.head_dim = cfg.get("head_dim") or self.dim // self.n_heads
        self.ffn = cfg["intermediate_size"]
        self.vocab = cfg["vocab_size"]
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        self.theta = float(cfg.get("rope_theta", 10000.0))
        self.rope_scaling = cfg.get("rope_scaling")
        self.tied = bool(cfg.get("tie_word_embeddings", False))
        # Qwen3 (dense and MoE) normalizes q and k per head before RoPE (RMSNorm over head_dim)
        self.qk_norm = cfg.get("model_type") in ("qwen3", "qwen3_moe")


def precompute_freqs_cis(head_dim, end, theta, scaling=None):
    """torchtitan's precompute_freqs_cis, with Llama 3.1's apply_scaling when scaling is llama3."""
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    if scaling and scaling.get("rope_type", scaling.get("type")) == "llama3":
        factor = scaling["factor"]
        lo, hi = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        lo_wl, hi_wl = old / lo, old / hi
        out = []
        for f in freqs.tolist():
            wl = 2 * math.pi / f
            if wl < hi_wl:
                out.append(f)
            elif wl > lo_wl:
                out.append(f / factor)
            else:
                s = (old / wl - lo) / (hi - lo)
                out.append((1 - s) * f / factor + s * f)
        freqs = torch.tensor(out, dtype=torch.float32)
    t = torch.arange(end, dtype=torch.float32)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    fc = freqs_cis[: xq.shape[1]].view(1, xq.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * fc).flatten(3)
    xk_out = torch.view_as_real(xk_ * fc).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv, hd = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv, n_rep, hd).reshape(bs, slen, n_kv * n_rep, hd)


class Attention(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = a.n_heads, a.n_kv_heads, a.head_dim
        self.wq = nn.Linear(a.dim, a.n_heads * a.head_dim, bias=False)
        self.wk = nn.Linear(a.dim, a.n_kv_heads * a.head_dim, bias=False)
        self.wv = nn.Linear(a.dim, a.n_kv_heads * a.head_dim, bias=False)
        self.wo = nn.Linear(a.n_heads * a.head_dim, a.dim, bias=False)
        self.q_norm = nn.RMSNorm(a.head_dim, eps=a.eps) if a.qk_norm else None
        self.k_norm = nn.RMSNorm(a.head_dim, eps=a.eps) if a.qk_norm else None

    def forward(self, x, freqs_cis):
        bs, seqlen, _ = x.shape
        xq = self.wq(x).view(bs, seqlen, -1, self.hd)
        xk = self.wk(x).view(bs, seqlen, -1, self.hd)
        xv = self.wv(x).view(bs, seqlen, -1, self.hd)
        if self.q_norm is not None:
            xq, xk = self.q_norm(xq), self.k_norm(xk)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        rep = self.n_heads // self.n_kv
        keys, values = repeat_kv(xk, rep), repeat_kv(xv, rep)
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        out = F.scaled_dot_product_attention(xq, keys, values, is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(bs, seqlen, -1))


class FeedForward(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.w1 = nn.Linear(a.dim, a.ffn, bias=False)
        self.w2 = nn.Linear(a.ffn, a.dim, bias=False)
        self.w3 = nn.Linear(a.dim, a.ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.attention = Attention(a)
        self.feed_forward = FeedForward(a)
        self.attention_norm = nn.RMSNorm(a.dim, eps=a.eps)
        self.ffn_norm = nn.RMSNorm(a.dim, eps=a.eps)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, a, max_seq):
        super().__init__()
        self.a = a
        self.max_seq = max_seq
        self.tok_embeddings = nn.Embedding(a.vocab, a.dim)
        self.layers = nn.ModuleDict({str(i): TransformerBlock(a) for i in range(a.n_layers)})
        self.norm = nn.RMSNorm(a.dim, eps=a.eps)
        self.output = nn.Linear(a.dim, a.vocab, bias=False)
        if a.tied:
            self.output.weight = self.tok_embeddings.weight
        # computed on the CPU (Llama 3.1's scaling reads values), then put where the model is built
        # (a meta-device build, bench/realruns/parallel_run.py, recomputes it after materializing)
        self.register_buffer("freqs_cis", self._freqs().to(torch.empty(0).device), persistent=False)

    def _freqs(self):
        with torch.device("cpu"):
            return precompute_freqs_cis(self.a.head_dim, self.max_seq, self.a.theta, self.a.rope_scaling)

    def forward(self, tokens):
        # a pipeline stage (bench/realruns/parallel_run.py) sets the modules it does not hold to
        # None, as torchtitan's pipeline split does: then it takes and returns hidden states
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            h = layer(h, self.freqs_cis)
        h = self.norm(h) if self.norm is not None else h
        return self.output(h) if self.output is not None else h
