"""Llama-3.1-8B's decoder in eager PyTorch, written the way Hugging Face's modeling_llama.py
computes it (fp32 RMSNorm, rotate_half RoPE, SDPA with a causal mask, SwiGLU, untied embeddings),
so the benchmarks need nothing beyond torch. Shared by bench/fsdp2_step.py (the real FSDP2
training step) and bench/eager_kernels.py (its kernels, one GPU).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

H, FFN, HEADS, KV, HD, V = 4096, 14336, 32, 8, 128, 128256


class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dt)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope(seq, device, dtype, theta=500000.0):
    inv = 1.0 / (theta ** (torch.arange(0, HD, 2, device=device, dtype=torch.float32) / HD))
    t = torch.arange(seq, device=device, dtype=torch.float32)
    f = torch.outer(t, inv)
    emb = torch.cat((f, f), dim=-1)
    return emb.cos().to(dtype)[None, None], emb.sin().to(dtype)[None, None]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = RMSNorm(H)
        self.q_proj = nn.Linear(H, HEADS * HD, bias=False)
        self.k_proj = nn.Linear(H, KV * HD, bias=False)
        self.v_proj = nn.Linear(H, KV * HD, bias=False)
        self.o_proj = nn.Linear(HEADS * HD, H, bias=False)
        self.post_attention_layernorm = RMSNorm(H)
        self.gate_proj = nn.Linear(H, FFN, bias=False)
        self.up_proj = nn.Linear(H, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, H, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, s, HEADS, HD).transpose(1, 2)
        k = self.k_proj(h).view(b, s, KV, HD).transpose(1, 2)
        v = self.v_proj(h).view(b, s, KV, HD).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, s, HEADS * HD))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, H)
        self.layers = nn.ModuleList(Block() for _ in range(layers))
        self.norm = RMSNorm(H)
        self.lm_head = nn.Linear(H, V, bias=False)

    def forward(self, ids, cos=None, sin=None):
        """cos, sin: the rotary tables (rope()), computed here when not given."""
        x = self.embed_tokens(ids)
        if cos is None:
            cos, sin = rope(ids.shape[1], x.device, x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))
