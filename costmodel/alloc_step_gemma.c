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
    double t = d->T, h = d->h, q = d->q, kv = d->kv, f = d->f;
    int n1 = alloc_step_gemma_norm_fwd(c, t, h, sv);
    int xq = A(c, 2.0 * t * q), xk = A(c, 2.0 * t * kv), xv = A(c, 2.0 * t * kv);
    int qn = xq, kn = xk;
    if (d->qk_norm) { /* Gemma 3: per head, over head_dim; the projections die with the norm */
        qn = alloc_step_gemma_norm_fwd(c, t * d->a, d->hd, sv);
        F(c, xq);
        kn = alloc_step_gemma_norm_fwd(c, t * kv / d->hd, d->hd, sv);
        F(c, xk);
    }
    int qe = alloc_step_rope_fwd(c, d, q), ke = alloc_step_rope_fwd(c, d, kv);
    F(c, qn);
    F(c, kn);
    int keys = ke, values = xv;
    if (d->lmask && q > kv && kv > d->hd) { /* repeat_kv's copies (one KV head: a view) */
        keys = A(c, 2.0 * t * q);
        values = A(c, 2.0 * t * q);
        F(c, ke);
        F(c, xv);
    }
    int mb = d->lmask ? alloc_step_mask_sdpa(c, d) : -1;
    int out = A(c, 2.0 * t * q), lse = A(c, 4.0 * t * d->a);
    int o = A(c, 2.0 * t * h);
    keep(c, sv, n1);
    keep(c, sv, qe);
    keep(c, sv, keys);
    keep(c, sv, values);
    keep(c, sv, out);
    keep(c, sv, lse);
    if (mb >= 0) keep(c, sv, mb);
    int pa = alloc_step_gemma_norm_fwd(c, t, h, sv); /* post_attention_layernorm */
    F(c, o);
    int hs = A(c, 2.0 * t * h); /* residual + hidden_states */
    F(c, pa);
    int n2 = alloc_step_gemma_norm_fwd(c, t, h, sv); /* pre_feedforward_layernorm */
    int g = A(c, 2.0 * t * f), s = A(c, 2.0 * t * f);
    keep(c, sv, g);
    int u = A(c, 2.0 * t * f), p = A(c, 2.0 * t * f);
    keep(c, sv, s);
    keep(c, sv, u);
    int dn = A(c, 2.0 * t * h);
    keep(c, sv, p);
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
    double t = d->T, h = d->h, q = d->q, kv = d->kv, f = d->f;
    int gdn = alloc_step_gemma_norm_bwd(c, t, h, dy, false); /* dy also flows to the residual */
    int gp = A(c, 2.0 * t * f);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* down */
    F(c, gdn);
    int gs = A(c, 2.0 * t * f), gu = A(c, 2.0 * t * f);
    F(c, gp);
    int gn2 = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* up */
    F(c, gu);
    int gg = A(c, 2.0 * t * f);       /* gelu's backward */
    F(c, gs);
    int gn2b = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* gate */
    F(c, gg);
    F(c, gn2b);
    int gh = alloc_step_gemma_norm_bwd(c, t, h, gn2, true);
    int gsum = A(c, 2.0 * t * h);     /* the residual's sum of gradients */
    F(c, gh);
    F(c, dy);
    int gpa = alloc_step_gemma_norm_bwd(c, t, h, gsum, false); /* post-attention norm */
    int go = A(c, 2.0 * t * q);
    wg[(*nwg)++] = A(c, 2.0 * h * q); /* o */
    F(c, gpa);
    int gq, gk, gv;
    if (d->lmask && q > kv) { /* the repeated k, v's gradients; expand's backward sums them */
        gq = A(c, 2.0 * t * q);
        int gkr = A(c, 2.0 * t * q), gvr = A(c, 2.0 * t * q);
        F(c, go);
        gv = A(c, 2.0 * t * kv);
        F(c, gvr);
        gk = A(c, 2.0 * t * kv);
        F(c, gkr);
    } else {
        gq = A(c, 2.0 * t * q), gk = A(c, 2.0 * t * kv), gv = A(c, 2.0 * t * kv);
        F(c, go);
    }
    int gn1 = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * kv); /* v */
    F(c, gv);
    double w[2] = {kv, q};
    int gr[2] = {gk, gq};
    for (int i = 0; i < 2; i++) { /* rotary backward, the q/k norm's, the projection's */
        int a1 = A(c, 2.0 * t * w[i]), a2 = A(c, 2.0 * t * w[i]);
        F(c, gr[i]);
        int gx = A(c, 2.0 * t * w[i]);
        F(c, a1);
        F(c, a2);
        if (d->qk_norm) gx = alloc_step_gemma_norm_bwd(c, t * w[i] / d->hd, d->hd, gx, true);
        int gin = A(c, 2.0 * t * h);
        wg[(*nwg)++] = A(c, 2.0 * h * w[i]);
        F(c, gx);
        F(c, gin);                    /* accumulated into gn1 */
    }
    int gx = alloc_step_gemma_norm_bwd(c, t, h, gn1, true);
    int gin = A(c, 2.0 * t * h);
    F(c, gx);
    F(c, gsum);
    return gin;
}
