/*
 * alloc_step_gemma.c — Hugging Face Gemma 2 / Gemma 3 decoder layers as the allocator replay
 * lists them (alloc_step.h, alloc_step_internal.h; bench/results/rep23_2026-11-29). What differs
 * from Llama's layer (transformers 5.17.0, the lines bench/results/gemma19_2026-11-29 cites):
 *  - GemmaRMSNorm (modeling_gemma2.py 49-63, modeling_gemma3.py 136-150): `_norm(x.float())`,
 *    then `output * (1.0 + weight.float())` in fp32, then `type_as(x)`: it saves the fp32 upcast,
 *    rstd and the fp32 normalized x (gemma19's owners at the peak: lines 146 and 143 of
 *    modeling_gemma3.py, 56 and 59 of modeling_gemma2.py), no bf16 copy; four a layer (input,
 *    post-attention, pre-feedforward, post-feedforward), the post norms' outputs added to the
 *    residual; Gemma 3's q_norm / k_norm are GemmaRMSNorms over head_dim.
 *  - The sliding layers take the boolean mask (SDPA's bf16 copy saved, repeat_kv's copies: a
 *    view at one KV head, gemma19 item 5); the full-attention layers pass is_causal with
 *    enable_gqa and save what Llama's do.
 *  - The MLP is gated (gelu_pytorch_tanh(gate) * up): GELU saves its input as silu does, so the
 *    saved set is Llama's.
 * The embedding's scaling, Gemma 3's second rotary table and Gemma 2's final-logit soft-capping
 * are in the program (alloc_step.c).
 */
#include "alloc_step_internal.h"

int alloc_step_gemma_norm_fwd(ctx *c, double rows, double width, saved *sv)
{
    double n = rows * width;
    int x32 = A(c, 4.0 * n); /* x.float(), saved by pow and by the mul with rstd */
    int p = A(c, 4.0 * n);
    int v = A(c, 4.0 * rows);
    F(c, p);
    int ve = A(c, 4.0 * rows);
    F(c, v);
    int r = A(c, 4.0 * rows);
    F(c, ve);
    int xh = A(c, 4.0 * n); /* x * rstd, saved by the mul with (1 + weight) */
    if (!sv) { /* the upcast dies when _norm returns */
        F(c, x32);
        F(c, r);
    }
    int prod = A(c, 4.0 * n); /* output * (1 + weight.float()): the name rebound */
    if (sv) {
        keep(c, sv, x32);
        keep(c, sv, r);
        keep(c, sv, xh);
    } else {
        F(c, xh);
    }
    int out = A(c, 2.0 * n); /* type_as(x) */
    F(c, prod);
    return out;
}

int alloc_step_gemma_norm_bwd(ctx *c, double rows, double width, int g, bool consume)
{
    double n = rows * width;
    int g32 = A(c, 4.0 * n); /* type_as's backward: the gradient in fp32 */
    if (consume) F(c, g);
    int gxh = A(c, 4.0 * n); /* grad * (1 + weight) */
    int gw = A(c, 4.0 * n);  /* grad * x_hat, summed to the weight's shape */
    F(c, gw);
    F(c, g32);
    int gxa = A(c, 4.0 * n); /* x * rstd: grad * rstd */
    int tmp = A(c, 4.0 * n); /* grad * x, summed for rstd */
    int gr = A(c, 4.0 * rows);
    F(c, tmp);
    F(c, gxh);
    int gve = A(c, 4.0 * rows); /* rsqrt's backward */
    F(c, gr);
    int gp = A(c, 4.0 * n);     /* mean's backward (expand) */
    F(c, gve);
    int gxb = A(c, 4.0 * n);    /* pow's backward */
    F(c, gp);
    F(c, gxb);                  /* accumulated into gxa */
    int gi = A(c, 2.0 * n);     /* x.float()'s backward */
    F(c, gxa);
    return gi;
}

int alloc_step_gemma_layer_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h;
    int n1 = alloc_step_gemma_norm_fwd(c, t, h, sv);
    int o = alloc_step_attn_fwd(c, d, n1, sv);
    int pa = alloc_step_gemma_norm_fwd(c, t, h, sv); /* post_attention_layernorm */
    F(c, o);
    int hs = A(c, 2.0 * t * h); /* residual + hidden_states */
    F(c, pa);
    int n2 = alloc_step_gemma_norm_fwd(c, t, h, sv); /* pre_feedforward_layernorm */
    int dn = alloc_step_mlp_fwd(c, d, sv);
    keep(c, sv, n2);
    int pf = alloc_step_gemma_norm_fwd(c, t, h, sv); /* post_feedforward_layernorm */
    F(c, dn);
    int y = A(c, 2.0 * t * h);
    F(c, pf);
    F(c, hs);
    return y;
}

int alloc_step_gemma_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->q;
    int gdn = alloc_step_gemma_norm_bwd(c, t, h, dy, false); /* dy also flows to the residual */
    int gn2 = alloc_step_mlp_bwd(c, d, gdn, true, wg, nwg);
    int gh = alloc_step_gemma_norm_bwd(c, t, h, gn2, true);
    int gsum = A(c, 2.0 * t * h);     /* the residual's sum of gradients */
    F(c, gh);
    F(c, dy);
    int gpa = alloc_step_gemma_norm_bwd(c, t, h, gsum, false); /* post-attention norm */
    int go = A(c, 2.0 * t * q);
    wg[(*nwg)++] = A(c, 2.0 * h * q); /* o */
    F(c, gpa);
    int gn1 = alloc_step_attn_bwd(c, d, go, wg, nwg);
    int gx = alloc_step_gemma_norm_bwd(c, t, h, gn1, true);
    int gin = A(c, 2.0 * t * h);
    F(c, gx);
    F(c, gsum);
    return gin;
}
