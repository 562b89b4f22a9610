/*
 * alloc_step_phi3.c — Hugging Face Phi-3's decoder layer (fused qkv_proj and gate_up_proj,
 * partial rotary) as the allocator replay lists it (alloc_step.h, alloc_step_internal.h):
 * bench/results/cov22_2026-11-29.
 */
#include "alloc_step_internal.h"

/* ---- Hugging Face Phi-3 (fused qkv_proj and gate_up_proj) ----
 * The saved set is hfsav20's, measured on transformers 5.17.0 (bench/results/hfsav20_2026-11-29,
 * saved_hf_phi-3-mini-4k_L1.json: each saved storage with its modeling_phi3.py line): the norms
 * as Llama's (lines 279-281); qkv_proj's whole output (line 229; SDPA saves v, a view of it, and a
 * view keeps its base); q and k after RoPE (line 240), fresh [b, heads, s, d] tensors; the SDPA
 * output and its log-sum-exp (sdpa_attention.py line 158); o_proj's own input (line 262), the
 * contiguous copy of the output, which follows q's layout; gate_up_proj's whole output (line 59;
 * silu's input and mul's `up` are its chunk views, line 62), silu's output (activations.py line
 * 103) and the product down_proj saves (line 64). The temporaries and their order follow the
 * module's code (transformers modeling_phi3.py at 00d4b3d2, the version read: Phi3MLP.forward,
 * apply_rotary_pos_emb, Phi3Attention.forward; its RoPE ends in torch.cat([rotated, q_pass]),
 * a copy even with the full rotary dimension, q_pass empty). */

/* Phi-3's rotary embedding of a [T, w] slice: on its first rf x w columns (q_rot, a view)
 * q_rot * cos, rotate_half's neg and cat, rotate_half(q_rot) * sin, their sum; then the cat with
 * the pass-through part (empty at rf = 1, Phi-4-mini's last quarter at 0.75): a full-width copy.
 * StableLM's and GPT-NeoX's RoPE is the same (alloc_step_forms.c). */
int alloc_step_partial_rope_fwd(ctx *c, const dims *d, double width)
{
    double t = d->T, w = width * d->rf;
    int xc = A(c, 2.0 * t * w);
    int neg = A(c, 1.0 * t * w);
    int cat = A(c, 2.0 * t * w);
    F(c, neg);
    int xs = A(c, 2.0 * t * w);
    F(c, cat);
    int sum = A(c, 2.0 * t * w);
    F(c, xc);
    F(c, xs);
    int out = A(c, 2.0 * t * width);
    F(c, sum);
    return out;
}

int alloc_step_phi3_layer_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h, q = d->q, kv = d->kv, f = d->f;
    int n1 = alloc_step_norm_fwd(c, d, t, h, sv);
    int qkv = A(c, 2.0 * t * (q + 2.0 * kv));
    int qe = alloc_step_partial_rope_fwd(c, d, q), ke = alloc_step_partial_rope_fwd(c, d, kv);
    int mb = d->lmask ? alloc_step_mask_sdpa(c, d) : -1;
    int out = A(c, 2.0 * t * q), lse = A(c, 4.0 * t * d->a);
    int cc = A(c, 2.0 * t * q); /* the transpose's contiguous copy, o_proj's input */
    int o = A(c, 2.0 * t * h);
    keep(c, sv, n1);
    keep(c, sv, qkv);
    keep(c, sv, qe);
    keep(c, sv, ke);
    keep(c, sv, out);
    keep(c, sv, lse);
    if (mb >= 0) keep(c, sv, mb);
    keep(c, sv, cc);
    int hs = A(c, 2.0 * t * h); /* resid_attn_dropout at p = 0 returns its input */
    F(c, o);
    int n2 = alloc_step_norm_fwd(c, d, t, h, sv);
    int gu = A(c, 4.0 * t * f); /* gate_up_proj */
    int s = A(c, 2.0 * t * f);  /* silu(gate) */
    int p = A(c, 2.0 * t * f);  /* up * silu(gate) */
    keep(c, sv, gu);
    keep(c, sv, s);
    int dn = A(c, 2.0 * t * h);
    keep(c, sv, p);
    keep(c, sv, n2);
    int y = A(c, 2.0 * t * h);
    F(c, dn);
    F(c, hs);
    return y;
}

/* The backward: down_proj, mul, silu, chunk's backward (split_backward: one cat of both
 * gradients, derivatives.yaml split.Tensor), gate_up_proj; o_proj, SDPA, each RoPE's backward
 * then slice_backward's zero-filled full-size gradient for q_rot and for the empty q_pass
 * (derivatives.yaml slice.Tensor: slice_backward_wrapper), summed; each q/k/v slice of the fused
 * output likewise a full-size gradient, summed in place into the first; qkv_proj. */
int alloc_step_phi3_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->q, kv = d->kv, f = d->f, qkv = q + 2.0 * kv;
    int gp = A(c, 2.0 * t * f);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* down */
    int gup = A(c, 2.0 * t * f), gs = A(c, 2.0 * t * f);
    F(c, gp);
    int gg = A(c, 2.0 * t * f); /* silu backward */
    F(c, gs);
    int ggu = A(c, 4.0 * t * f); /* chunk backward */
    F(c, gg);
    F(c, gup);
    int gn2 = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 4.0 * h * f); /* gate_up */
    F(c, ggu);
    int gh = alloc_step_norm_bwd(c, d, t, h, gn2);
    int gsum = A(c, 2.0 * t * h);
    F(c, gh);
    F(c, dy);
    int go = A(c, 2.0 * t * q);
    wg[(*nwg)++] = A(c, 2.0 * h * q); /* o */
    int gq = A(c, 2.0 * t * q), gk = A(c, 2.0 * t * kv), gv = A(c, 2.0 * t * kv);
    F(c, go);
    int gqkv = A(c, 2.0 * t * qkv); /* v's slice backward */
    F(c, gv);
    double w[2] = {kv, q};
    int gr[2] = {gk, gq};
    for (int i = 0; i < 2; i++) {
        double wr = w[i] * d->rf; /* the rotated columns */
        int a1 = A(c, 2.0 * t * wr), a2 = A(c, 2.0 * t * wr);
        F(c, gr[i]);
        int gx = A(c, 2.0 * t * wr);
        F(c, a1);
        F(c, a2);
        int grot = A(c, 2.0 * t * w[i]); /* q_rot's slice backward */
        F(c, gx);
        int gpass = A(c, 2.0 * t * w[i]); /* q_pass's slice backward (of an empty slice at rf
                                           * = 1), summed */
        F(c, gpass);
        int gfull = A(c, 2.0 * t * qkv); /* the fused output's slice backward, summed */
        F(c, grot);
        F(c, gfull);
    }
    int gn1 = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * qkv); /* qkv */
    F(c, gqkv);
    int gx = alloc_step_norm_bwd(c, d, t, h, gn1);
    int gin = A(c, 2.0 * t * h);
    F(c, gx);
    F(c, gsum);
    return gin;
}
