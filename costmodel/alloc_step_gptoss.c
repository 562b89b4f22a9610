/*
 * alloc_step_gptoss.c — Hugging Face GPT-OSS's decoder layer (transformers 5.x
 * models/gpt_oss/modeling_gpt_oss.py) as the allocator replay (alloc_step.c) lists it: its
 * RMSNorm (the weight multiplies the fp32 normalised rows), q/k/v/o with biases, its rotary
 * embedding (chunk, two products a half, cat), transformers' eager attention with the per-head
 * sink column, and the MoE block (a biased router, softmax over the top-k logits in bf16, the
 * grouped_mm experts with gathered expert biases and the clamped GLU). Its own file: every part
 * but the residual adds differs from the Llama-style layer, and the eager function is GPT-OSS's
 * own (alloc_step_eager.c is Llama's). Before it, GPT-OSS was outside the replay and its eager
 * rows' reserved figures ran 7-16% under (bench/results/oss23_2026-11-29).
 *
 * Sources (read at huggingface/transformers, the gpt_oss modeling file; the installed 5.17.0 as
 * bench/results/oss22_2026-11-29 traced it): GptOssRMSNorm.forward: x.to(fp32), pow(2).mean,
 * rsqrt, x * rstd, (weight * that).to(bf16) — the weight's product is fp32, saved operand the
 * fp32 rows; _apply_rotary_emb: first, second = chunk(x, 2); first * cos - second * sin,
 * second * cos + first * sin, cat; eager_attention_forward: repeat_kv copies, matmul * scaling,
 * + mask, cat([weights, sinks.expand]), - max(-1).values, softmax(dtype=bf16) over s + 1,
 * probs[..., :-1], dropout(p 0) returning its input, matmul(P, V), transpose.contiguous; the
 * router: F.linear with bias, topk of the bf16 logits, softmax(dtype=bf16) of the k values; the
 * experts: integrations/moe.py grouped_mm path as alloc_step_moe.c lists it, plus the bias
 * gathers gate_up_proj_bias[expert_ids_g] and down_proj_bias[expert_ids_g] added in place
 * (refit23_2026-11-29), the routing weights bf16 (so the weighted rows and their sum are bf16
 * and the final .to(bf16) returns its input); _apply_gate: gate_up[..., ::2], [..., 1::2], gate
 * clamp(max 7), up clamp(-7, 7), glu = gate * sigmoid(gate * 1.702), (up + 1) * glu. What each
 * op saves and its backward allocates: torch tools/autograd/derivatives.yaml (mul saves both
 * tensor operands, a Python scalar nothing; sigmoid and softmax their result; clamp its input;
 * max.dim its indices; index its indices; cat, add, sub nothing); oss22's op tree of the
 * attention's backward (slice_backward's zeros, _softmax_backward_data's result and grad *
 * output temporary, SubBackward0's neg, MaxBackward0's zeros). The autograd engine frees a
 * node's saved tensors once it ran and accumulates a second gradient in place.
 */
#include "alloc_step_internal.h"

/* the layer's parameters in registration order: self_attn (q, k, v, o with biases, sinks),
 * mlp (router weight and bias; experts gate_up_proj, its bias, down_proj, its bias), the two
 * norms (GptOssAttention, GptOssTopKRouter, GptOssExperts __init__) */
void alloc_step_gptoss_params(dims *d)
{
    int n = 0;
    double h = d->h, q = d->q, kv = d->kv, E = d->E, f = d->ef;
    d->lp[n++] = q * h;
    d->lp[n++] = q;
    d->lp[n++] = kv * h;
    d->lp[n++] = kv;
    d->lp[n++] = kv * h;
    d->lp[n++] = kv;
    d->lp[n++] = h * q;
    d->lp[n++] = h;
    d->lp[n++] = d->a; /* sinks */
    d->lp[n++] = E * h;
    d->lp[n++] = E;
    d->lp[n++] = E * h * 2.0 * f;
    d->lp[n++] = E * 2.0 * f;
    d->lp[n++] = E * f * h;
    d->lp[n++] = E * h;
    d->lp[n++] = h;
    d->lp[n++] = h;
    d->nlp = n;
}

/* GptOssRMSNorm's forward over rows x width; saves the fp32 input, rstd, the fp32 rows */
int alloc_step_gptoss_norm_fwd(ctx *c, double rows, double width, saved *sv)
{
    int x32 = A(c, 4.0 * rows * width);
    int p = A(c, 4.0 * rows * width);
    int v = A(c, 4.0 * rows);
    F(c, p);
    int ve = A(c, 4.0 * rows);
    F(c, v);
    int r = A(c, 4.0 * rows);
    F(c, ve);
    int n32 = A(c, 4.0 * rows * width);
    int prod = A(c, 4.0 * rows * width); /* weight (bf16) * fp32 rows: fp32 */
    int out = A(c, 2.0 * rows * width);
    F(c, prod);
    keep(c, sv, x32);
    keep(c, sv, r);
    keep(c, sv, n32);
    return out;
}

/* Its backward from the output's gradient g (consumed): returns the input's */
int alloc_step_gptoss_norm_bwd(ctx *c, double rows, double width, int g)
{
    int g32 = A(c, 4.0 * rows * width); /* .to(bf16)'s backward */
    F(c, g);
    int tw = A(c, 4.0 * rows * width);  /* the weight's: grad * rows, summed to [width] */
    F(c, tw);
    int gn = A(c, 4.0 * rows * width);  /* the rows': grad * weight */
    F(c, g32);
    int gxa = A(c, 4.0 * rows * width); /* x * rstd: grad * rstd */
    int tmp = A(c, 4.0 * rows * width); /* grad * x, summed for rstd */
    int gr = A(c, 4.0 * rows);
    F(c, tmp);
    F(c, gn);
    int gve = A(c, 4.0 * rows);
    F(c, gr);
    int gp = A(c, 4.0 * rows * width);
    F(c, gve);
    int gxb = A(c, 4.0 * rows * width);
    F(c, gp);
    F(c, gxb);
    int gi = A(c, 2.0 * rows * width);
    F(c, gxa);
    return gi;
}

/* _apply_rotary_emb of a [T, w] projection: returns the rotated tensor (the input is the
 * caller's); each half product t w bytes */
static int rope_fwd(ctx *c, double t, double w)
{
    double hb = t * w;
    int a = A(c, hb), b = A(c, hb);
    int f1 = A(c, hb);
    F(c, a);
    F(c, b);
    int cc = A(c, hb), e = A(c, hb);
    int f2 = A(c, hb);
    F(c, cc);
    F(c, e);
    int out = A(c, 2.0 * hb);
    F(c, f1);
    F(c, f2);
    return out;
}

/* its backward from g (consumed): the neg of the first half's gradient, the four products
 * (two accumulated in place), chunk's backward cat; returns the input's gradient */
static int rope_bwd(ctx *c, double t, double w, int g)
{
    double hb = t * w;
    int m1 = A(c, hb), m2 = A(c, hb); /* second * cos, first * sin: the second half's */
    int n = A(c, hb);                 /* sub's: -g1 */
    int m3 = A(c, hb), m4 = A(c, hb);
    F(c, n);
    F(c, m3); /* accumulated into m2 / m1 */
    F(c, m4);
    F(c, g);
    int gx = A(c, 2.0 * hb);
    F(c, m1);
    F(c, m2);
    return gx;
}

/* The eager attention with sinks from the rotated q, keys and values (after repeat_kv) to
 * o_proj's output (returned) */
static int sinks_fwd(ctx *c, const dims *d, int qe, int keys, int values, saved *sv)
{
    double t = d->T, S = t * d->a * d->s, S1 = t * d->a * (d->s + 1);
    int w = A(c, 2.0 * S);    /* matmul(q, k^T) */
    int sw = A(c, 2.0 * S);   /* * scaling */
    F(c, w);
    int am = A(c, 2.0 * S);   /* + mask: attn_weights until the dropout line rebinds it */
    F(c, sw);
    int cat = A(c, 2.0 * S1); /* combined_logits */
    int mv = A(c, 2.0 * t * d->a), mi = A(c, 8.0 * t * d->a); /* max(-1): values, indices */
    int sub = A(c, 2.0 * S1); /* the name rebound: the cat dropped */
    F(c, mv);
    F(c, cat);
    int probs = A(c, 2.0 * S1); /* softmax in bf16, saved; scores = probs[..., :-1] */
    F(c, am);                   /* attn_weights = dropout(scores) (its input) */
    int out = A(c, 2.0 * t * d->q);
    int ctxo = A(c, 2.0 * t * d->q);
    F(c, out);
    F(c, sub); /* combined_logits at the return */
    keep(c, sv, qe);
    keep(c, sv, keys);
    keep(c, sv, values);
    keep(c, sv, mi);
    keep(c, sv, probs);
    keep(c, sv, ctxo);
    return A(c, 2.0 * t * d->h); /* o_proj */
}

/* Its backward from the context's gradient go (consumed) to the gradients of the rotated q and
 * of k and v before repeat_kv; the saved parts freed as their nodes run (c->layer_saved) */
static void sinks_bwd(ctx *c, const dims *d, int go, int *gq, int *gk, int *gv)
{
    double t = d->T, q = d->q, kv = d->kv, S = t * d->a * d->s, S1 = t * d->a * (d->s + 1);
    saved *sv = c->layer_saved;
    int n = sv->n, qe = sv->h[n - 6], keys = sv->h[n - 5], values = sv->h[n - 4];
    int mi = sv->h[n - 3], probs = sv->h[n - 2], ctxo = sv->h[n - 1];
    bool rep = q > kv && kv > d->hd;
    alloc_step_drop_saved(c, sv, ctxo);
    int gp = A(c, 2.0 * S); /* PV's bmm: grad @ V^T, P^T @ grad */
    int gvr = A(c, 2.0 * t * (rep ? q : kv));
    F(c, go);
    alloc_step_drop_saved(c, sv, values);
    int gsl = A(c, 2.0 * S1); /* slice_backward: zeros [.., s + 1], the copy into the slice */
    F(c, gp);
    int gx = A(c, 2.0 * S1);   /* _softmax_backward_data's result */
    int prod = A(c, 2.0 * S1); /* its grad * output */
    F(c, prod);
    F(c, gsl);
    alloc_step_drop_saved(c, sv, probs);
    int ng = A(c, 2.0 * S1);   /* SubBackward0: -grad, summed to the max's [.., 1] */
    int ngs = A(c, 2.0 * t * d->a);
    F(c, ng);
    int gm = A(c, 2.0 * S1);   /* MaxBackward0: zeros, the scatter; added into gx in place */
    F(c, ngs);
    alloc_step_drop_saved(c, sv, mi);
    F(c, gm);
    int gs = A(c, 2.0 * S);    /* the scale's, over the cat gradient's slice (mask add: none) */
    F(c, gx);
    *gq = A(c, 2.0 * t * q);   /* QK^T's bmm */
    int gkr = A(c, 2.0 * t * (rep ? q : kv));
    F(c, gs);
    alloc_step_drop_saved(c, sv, qe);
    alloc_step_drop_saved(c, sv, keys);
    if (rep) { /* repeat_kv's backward: v, then k */
        *gv = A(c, 2.0 * t * kv);
        F(c, gvr);
        *gk = A(c, 2.0 * t * kv);
        F(c, gkr);
    } else {
        *gv = gvr;
        *gk = gkr;
    }
}

static int attn_fwd(ctx *c, const dims *d, int n1, saved *sv)
{
    double t = d->T, q = d->q, kv = d->kv;
    int xq = A(c, 2.0 * t * q), xk = A(c, 2.0 * t * kv), xv = A(c, 2.0 * t * kv);
    int qe = rope_fwd(c, t, q);
    int ke = rope_fwd(c, t, kv);
    F(c, xq);
    F(c, xk);
    int keys = ke, values = xv;
    if (q > kv && kv > d->hd) { /* repeat_kv's copies */
        keys = A(c, 2.0 * t * q);
        values = A(c, 2.0 * t * q);
        F(c, ke);
        F(c, xv);
    }
    keep(c, sv, n1);
    return sinks_fwd(c, d, qe, keys, values, sv);
}

/* from o_proj's input gradient go (consumed) to n1's; weight and bias gradients appended */
static int attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->q, kv = d->kv;
    int gq, gk, gv;
    sinks_bwd(c, d, go, &gq, &gk, &gv);
    int gn1 = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * kv); /* v */
    wg[(*nwg)++] = A(c, 2.0 * kv);
    F(c, gv);
    double w[2] = {kv, q};
    int gr[2] = {gk, gq};
    for (int i = 0; i < 2; i++) {
        int gx = rope_bwd(c, t, w[i], gr[i]);
        int gin = A(c, 2.0 * t * h);
        wg[(*nwg)++] = A(c, 2.0 * h * w[i]);
        wg[(*nwg)++] = A(c, 2.0 * w[i]);
        F(c, gx);
        F(c, gin); /* accumulated into gn1 */
    }
    return gn1;
}

/* the MoE block from the norm's output (the caller keeps it) to its output */
static int moe_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h, E = d->E, S = t * d->topk, f = d->ef;
    int rl = A(c, 2.0 * t * E); /* router logits, bf16 */
    int tv = A(c, 2.0 * S), ti = A(c, 8.0 * S);
    int sm = A(c, 2.0 * S);     /* softmax(dtype=bf16), saved */
    F(c, tv);
    int vals = A(c, 8.0 * S), perm = A(c, 8.0 * S); /* sort: expert_ids_g (saved by the bias
                                                     * gathers), the permutation */
    int tok = A(c, 8.0 * S);
    int xg = A(c, 2.0 * S * h);
    int wgt = A(c, 2.0 * S); /* sample_weights[perm], bf16 */
    int ids = A(c, 4.0 * S);
    int hist = A(c, 4.0 * E), offs = A(c, 4.0 * E);
    int mask = A(c, 1.0 * S);
    int gub = A(c, 4.0 * S * f); /* gate_up_proj_bias[expert_ids_g] */
    int gu = A(c, 4.0 * S * f);  /* grouped GEMM, the bias added in place */
    int gum = A(c, 4.0 * S * f); /* masked fill, out of place */
    F(c, gu);
    /* _apply_gate on the interleaved halves (views of gum, saved by the clamps) */
    int gc = A(c, 2.0 * S * f);  /* gate.clamp(max), saved by both muls */
    int uc = A(c, 2.0 * S * f);  /* up.clamp: the name `up` until the return */
    int ga = A(c, 2.0 * S * f);  /* gate * alpha */
    int sg = A(c, 2.0 * S * f);  /* sigmoid, saved */
    F(c, ga);
    int glu = A(c, 2.0 * S * f); /* saved by the product */
    int up1 = A(c, 2.0 * S * f); /* up + 1, saved by the product */
    int gated = A(c, 2.0 * S * f); /* saved by the down GEMM */
    F(c, uc);
    int dnb = A(c, 2.0 * S * h); /* down_proj_bias[expert_ids_g]; the gate_up one dropped */
    F(c, gub);
    int o = A(c, 2.0 * S * h);
    int om = A(c, 2.0 * S * h);
    F(c, o);
    int pw = A(c, 2.0 * S * h); /* bf16 x bf16 weights */
    int inv = A(c, 8.0 * S), ar = A(c, 8.0 * S);
    F(c, ar);
    int og = A(c, 2.0 * S * h);
    int out = A(c, 2.0 * t * h); /* the sum over k, bf16: .to(bf16) returns it */
    keep(c, sv, sm);
    keep(c, sv, ti);
    keep(c, sv, vals);
    keep(c, sv, perm);
    keep(c, sv, tok);
    keep(c, sv, xg);
    keep(c, sv, wgt);
    keep(c, sv, offs);
    keep(c, sv, mask);
    keep(c, sv, gum);
    keep(c, sv, gc);
    keep(c, sv, sg);
    keep(c, sv, glu);
    keep(c, sv, up1);
    keep(c, sv, gated);
    keep(c, sv, om);
    keep(c, sv, inv);
    F(c, ids);
    F(c, hist);
    F(c, dnb);
    F(c, pw);
    F(c, og);
    F(c, rl); /* the router logits, returned with the block's output, dropped by the layer */
    return out;
}

/* its backward from dy (not consumed): returns the input's gradient */
static int moe_bwd(ctx *c, const dims *d, int *wg, int *nwg)
{
    double t = d->T, h = d->h, E = d->E, S = t * d->topk, f = d->ef, Sf = S * f;
    int ge = A(c, 2.0 * S * h); /* sum's backward, materialised */
    int gpw = alloc_step_index_bwd(c, 2.0 * S * h, S); /* og = pw[inv]'s */
    F(c, ge);
    int gom = A(c, 2.0 * S * h); /* grad * w */
    int gx = A(c, 2.0 * S * h);  /* grad * om, summed over h */
    int gwt = A(c, 2.0 * S);
    F(c, gx);
    F(c, gpw);
    int gomm = A(c, 2.0 * S * h); /* the masked fill's */
    F(c, gom);
    int gg = A(c, 2.0 * Sf);      /* down GEMM: the input's, the weight's, the bias gather's */
    wg[(*nwg)++] = A(c, 2.0 * E * h * f);
    wg[(*nwg)++] = alloc_step_index_bwd(c, 2.0 * E * h, S);
    F(c, gomm);
    /* _apply_gate's backward: (up + 1) * glu, glu's product, sigmoid, the scale, the clamps,
     * the strided slices' (zeros [S, 2f], the copy; the second accumulated in place) */
    int gu1 = A(c, 2.0 * Sf), gglu = A(c, 2.0 * Sf);
    F(c, gg);
    int cm = A(c, 1.0 * Sf), cm2 = A(c, 1.0 * Sf); /* clamp(-7, 7): both bounds' masks */
    F(c, cm2);
    int gup = A(c, 2.0 * Sf);
    F(c, cm);
    F(c, gu1);
    int ggc = A(c, 2.0 * Sf), gsg = A(c, 2.0 * Sf);
    F(c, gglu);
    int gsi = A(c, 2.0 * Sf); /* sigmoid_backward */
    F(c, gsg);
    int gal = A(c, 2.0 * Sf); /* * alpha; added into ggc */
    F(c, gsi);
    F(c, gal);
    int gs1 = A(c, 4.0 * Sf); /* up's slice */
    F(c, gup);
    int cm3 = A(c, 1.0 * Sf); /* clamp(max) */
    int ggate = A(c, 2.0 * Sf);
    F(c, cm3);
    F(c, ggc);
    int gs2 = A(c, 4.0 * Sf); /* gate's slice; added into gs1 */
    F(c, ggate);
    F(c, gs2);
    int ggum = A(c, 4.0 * Sf); /* the masked fill's */
    F(c, gs1);
    int gxg = A(c, 2.0 * S * h); /* gate_up GEMM */
    wg[(*nwg)++] = A(c, 4.0 * E * f * h);
    wg[(*nwg)++] = alloc_step_index_bwd(c, 4.0 * E * f, S);
    F(c, ggum);
    int gxm = A(c, 2.0 * S * h);
    F(c, gxg);
    int gin = alloc_step_index_bwd(c, 2.0 * t * h, S);
    F(c, gxm);
    int gws = alloc_step_index_bwd(c, 2.0 * S, S); /* sample_weights[perm]'s */
    F(c, gwt);
    /* router: softmax over k (result, grad * output), topk's zeros and scatter, the linear */
    int gsm = A(c, 2.0 * S), tp = A(c, 2.0 * S);
    F(c, tp);
    F(c, gws);
    int gtk = A(c, 2.0 * t * E);
    F(c, gsm);
    int gr = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * E * h);
    wg[(*nwg)++] = A(c, 2.0 * E);
    F(c, gtk);
    F(c, gr);
    return gin;
}

int alloc_step_gptoss_layer_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h;
    int n1 = alloc_step_gptoss_norm_fwd(c, t, h, sv);
    int o = attn_fwd(c, d, n1, sv);
    int hs = A(c, 2.0 * t * h);
    F(c, o);
    int n2 = alloc_step_gptoss_norm_fwd(c, t, h, sv);
    int dn = moe_fwd(c, d, sv);
    keep(c, sv, n2);
    int y = A(c, 2.0 * t * h);
    F(c, dn);
    F(c, hs);
    return y;
}

/* the last k saved tensors freed (their nodes have run) */
static void pop(ctx *c, saved *sv, int k)
{
    for (int i = 0; i < k && sv->n > 0; i++) F(c, sv->h[--sv->n]);
}

/* The layer's saved set is the input norm's 3, the attention's 7 (n1, then sinks_fwd's six),
 * the second norm's 3, the MoE block's 17 and n2 (alloc_step_gptoss_layer_fwd's order); each
 * part is freed once its backward ran, so the attention's are the last seven in its backward. */
int alloc_step_gptoss_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->q;
    int gn2 = moe_bwd(c, d, wg, nwg);
    pop(c, c->layer_saved, 18);
    int gh = alloc_step_gptoss_norm_bwd(c, t, h, gn2);
    pop(c, c->layer_saved, 3);
    int gsum = A(c, 2.0 * t * h);
    F(c, gh);
    F(c, dy);
    int go = A(c, 2.0 * t * q);
    wg[(*nwg)++] = A(c, 2.0 * h * q); /* o and its bias */
    wg[(*nwg)++] = A(c, 2.0 * h);
    int gn1 = attn_bwd(c, d, go, wg, nwg);
    int gx = alloc_step_gptoss_norm_bwd(c, t, h, gn1);
    int gin = A(c, 2.0 * t * h);
    F(c, gx);
    F(c, gsum);
    return gin;
}
