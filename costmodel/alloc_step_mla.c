/*
 * alloc_step_mla.c — DeepSeek-V2/V3's Hugging Face layers for the allocator replay (alloc_step.h,
 * alloc_step_internal.h): multi-head latent attention and DeepseekV2Moe (a softmax router in
 * fp32, the routed experts, the shared experts), with dense first layers. The op list is
 * transformers 5.x's code (huggingface/transformers 0233e509, models/deepseek_v2/
 * modeling_deepseek_v2.py DeepseekV2Attention.forward, apply_rotary_emb, DeepseekV2Moe;
 * models/deepseek_v3/modeling_deepseek_v3.py DeepseekV3Attention.forward,
 * apply_rotary_pos_emb_interleave; DeepseekV3Config's rope_interleave default True). T tokens,
 * a heads, qk = nope + rope head width (model head_dim), vd the value width, rkv / rq the ranks:
 *  - q = q_proj(x) [T, a qk] (V3: q_a_proj [T, rq], q_a_layernorm (saves as LlamaRMSNorm does),
 *    q_b_proj); views q_nope, q_pe;
 *  - compressed_kv = kv_a_proj_with_mqa(x) [T, rkv + rope]; kv_a_layernorm over its rkv view
 *    (its fp32 upcast copies the view); kv_b_proj [T, a (nope + vd)]: k_nope and value are its
 *    views, and SDPA saves value, so the whole output is kept;
 *  - RoPE of q_pe and k_pe (one head): V2 `.float()` copies, complex products, `type_as` back;
 *    V3's interleave reshape copies, then rotate_half's ops (alloc_step_rope_fwd);
 *  - query and key: torch.cat((nope, pe)) [T, a qk] each (k_pe expanded over heads), saved by
 *    SDPA with value, its output [T, a vd] (o_proj's saved input: already contiguous) and lse;
 *    the SDPA path pads nothing (the pad is flash-attention-2's only);
 *  - Python locals (q, compressed_kv, the rotated q_pe, k_pe) die when forward returns.
 * Backward, from derivatives.yaml: SDPA's gq, gk, gv; expand's sum for k_pe; each RoPE's;
 * split_with_sizes_backward's cat, transpose's view and view's reshape copy (the gradient is
 * transposed) for the kv_b and q outputs; the projections'; kv_a_layernorm's; the cat of
 * compressed_kv's two gradients. Autograd runs the k side (created later) first.
 */
#include "alloc_step_internal.h"

/* One layer's parameters in registration order (DeepseekV2DecoderLayer: self_attn q_proj or
 * q_a_proj, q_a_layernorm, q_b_proj; kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj; mlp:
 * DeepseekV2MLP's gate, up, down, or DeepseekV2Moe's experts (gate_up_proj, down_proj), gate,
 * shared_experts (gate, up, down); input and post-attention norms): lp an MoE layer's, lpd a
 * dense one's. */
void alloc_step_mla_params(dims *d)
{
    double h = d->h, a = d->a, qk = d->hd, nope = d->hd - d->rr;
    double attn[7];
    int na = 0;
    if (d->rq > 0) {
        attn[na++] = h * d->rq;
        attn[na++] = d->rq;
        attn[na++] = d->rq * a * qk;
    } else {
        attn[na++] = h * a * qk;
    }
    attn[na++] = h * (d->rkv + d->rr);
    attn[na++] = d->rkv;
    attn[na++] = d->rkv * a * (nope + d->vd);
    attn[na++] = a * d->vd * h;
    int n = 0, nd = 0;
    for (int i = 0; i < na; i++) d->lp[n++] = d->lpd[nd++] = attn[i];
    for (int i = 0; i < 3; i++) d->lpd[nd++] = d->f * h;
    d->lp[n++] = d->E * 2.0 * d->ef * h;
    d->lp[n++] = d->E * h * d->ef;
    d->lp[n++] = d->E * h;
    for (int i = 0; i < 3; i++) d->lp[n++] = d->sf * h;
    d->lp[n++] = d->lpd[nd++] = h;
    d->lp[n++] = d->lpd[nd++] = h;
    d->nlp = n;
    d->nlpd = nd;
}

/* V2's RoPE of a [T, w] slice (w = heads x rope dim): the `.float()` copy (the caller's local,
 * held by view_as_complex), the complex product, `type_as` back */
static int rope_fwd(ctx *c, const dims *d, double w, int *local)
{
    double t = d->T;
    *local = A(c, 4.0 * t * w);
    int p = A(c, 4.0 * t * w);
    int out = A(c, 2.0 * t * w);
    F(c, p);
    return out;
}

/* The RoPE's backward from the output's gradient g (consumed; -1: a view of SDPA's gradient,
 * the caller's): returns the input slice's gradient */
static int rope_bwd(ctx *c, const dims *d, double w, int g)
{
    double t = d->T;
    if (d->v3) { /* mul's two products, the rotate_half's slice gradients, then the reshape's */
        int a1 = A(c, 2.0 * t * w), a2 = A(c, 2.0 * t * w);
        if (g >= 0) F(c, g);
        int gx = A(c, 2.0 * t * w);
        F(c, a1);
        F(c, a2);
        int gi = A(c, 2.0 * t * w);
        F(c, gx);
        return gi;
    }
    int g32 = A(c, 4.0 * t * w); /* type_as's backward: to fp32 */
    if (g >= 0) F(c, g);
    int gc = A(c, 4.0 * t * w);  /* mul's: grad * conj(freqs_cis) */
    F(c, g32);
    int gi = A(c, 2.0 * t * w);  /* .float()'s backward: to bf16 */
    F(c, gc);
    return gi;
}

int alloc_step_mla_attn_fwd(ctx *c, const dims *d, int n1, saved *sv)
{
    double t = d->T, h = d->h, a = d->a, qk = d->hd, r = d->rr, vd = d->vd, rkv = d->rkv;
    double nope = qk - r;
    int q1;
    if (d->rq > 0) { /* q_b_proj(q_a_layernorm(q_a_proj(x))): the temporary dies with the call */
        int qa = A(c, 2.0 * t * d->rq);
        int qn = alloc_step_norm_fwd(c, d, t, d->rq, sv);
        F(c, qa);
        q1 = A(c, 2.0 * t * a * qk);
        keep(c, sv, qn);
    } else {
        q1 = A(c, 2.0 * t * a * qk);
    }
    int ckv = A(c, 2.0 * t * (rkv + r));
    int kn = alloc_step_norm_fwd(c, d, t, rkv, sv);
    int kvb = A(c, 2.0 * t * a * (nope + vd));
    keep(c, sv, kn);
    int lq, lk, qpe, kpe;
    if (d->v3) { /* apply_rotary_pos_emb_interleave: both reshape copies, then rotate_half's ops */
        lq = A(c, 2.0 * t * a * r);
        lk = A(c, 2.0 * t * r);
        qpe = alloc_step_rope_fwd(c, d, a * r);
        kpe = alloc_step_rope_fwd(c, d, r);
    } else {
        qpe = rope_fwd(c, d, a * r, &lq);
        kpe = rope_fwd(c, d, r, &lk);
    }
    F(c, lq);
    F(c, lk);
    int qs = A(c, 2.0 * t * a * qk), ks = A(c, 2.0 * t * a * qk);
    int out = A(c, 2.0 * t * a * vd), lse = A(c, 4.0 * t * a);
    int o = A(c, 2.0 * t * h);
    keep(c, sv, n1);
    keep(c, sv, qs);
    keep(c, sv, ks);
    keep(c, sv, kvb);
    keep(c, sv, out);
    keep(c, sv, lse);
    F(c, q1); /* the locals at the return */
    F(c, ckv);
    F(c, qpe);
    F(c, kpe);
    return o;
}

int alloc_step_mla_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg)
{
    double t = d->T, h = d->h, a = d->a, qk = d->hd, r = d->rr, vd = d->vd, rkv = d->rkv;
    double nope = qk - r, kvw = a * (nope + vd);
    int gq = A(c, 2.0 * t * a * qk), gk = A(c, 2.0 * t * a * qk), gv = A(c, 2.0 * t * a * vd);
    F(c, go);
    int gkpe = A(c, 2.0 * t * r);     /* k_pe.expand's backward: the sum over heads */
    int gkr = rope_bwd(c, d, r, gkpe);
    int gqr = rope_bwd(c, d, a * r, -1); /* from q_pe's slice of gq */
    /* kv_b's output: split's cat, the transposed view's reshape copy, kv_b_proj's backward */
    int gcat = A(c, 2.0 * t * kvw);
    F(c, gk);
    F(c, gv);
    int gkv = A(c, 2.0 * t * kvw);
    F(c, gcat);
    int gkn = A(c, 2.0 * t * rkv);
    wg[(*nwg)++] = A(c, 2.0 * kvw * rkv); /* kv_b_proj */
    F(c, gkv);
    int gki = alloc_step_norm_bwd(c, d, t, rkv, gkn);
    int gckv = A(c, 2.0 * t * (rkv + r)); /* compressed_kv's split: the cat */
    F(c, gki);
    F(c, gkr);
    int gn1 = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * (rkv + r)); /* kv_a_proj_with_mqa */
    F(c, gckv);
    /* q's: split's cat, the reshape copy, q_proj's (V3: q_b_proj's, the norm's, q_a_proj's) */
    int gqc = A(c, 2.0 * t * a * qk);
    F(c, gq);
    F(c, gqr);
    int gq2 = A(c, 2.0 * t * a * qk);
    F(c, gqc);
    if (d->rq > 0) {
        int gqa = A(c, 2.0 * t * d->rq);
        wg[(*nwg)++] = A(c, 2.0 * a * qk * d->rq); /* q_b_proj */
        F(c, gq2);
        gq2 = alloc_step_norm_bwd(c, d, t, d->rq, gqa);
    }
    int gin = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * (d->rq > 0 ? d->rq : a * qk)); /* q_a_proj or q_proj */
    F(c, gq2);
    F(c, gin); /* accumulated into gn1 */
    return gn1;
}

/* DeepseekV2Moe.forward: router_logits = F.linear(x.float(), gate.weight.float()) (both casts
 * saved by the linear; the logits named until the return), softmax(dtype=float32) (saved), topk
 * (sorted=False: fp32 values, int64 indices, saved), `* routed_scaling_factor` (a new tensor:
 * the experts' weights, named until the return), the experts (alloc_step_moe.c), the shared
 * experts' DeepseekV2MLP over the same input, the sum. */
int alloc_step_ds_moe_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h, E = d->E, S = t * d->topk;
    int x32 = A(c, 4.0 * t * h), w32 = A(c, 4.0 * E * h);
    int lg = A(c, 4.0 * t * E), sm = A(c, 4.0 * t * E);
    int tv = A(c, 4.0 * S), ti = A(c, 8.0 * S);
    int sw = A(c, 4.0 * S);
    F(c, tv); /* route_tokens_to_experts returns */
    int pre[4] = {x32, w32, sm, ti};
    int ex = alloc_step_moe_experts_fwd(c, d, sv, pre, 4);
    dims ds = *d;
    ds.f = d->sf;
    int sh = alloc_step_mlp_fwd(c, &ds, sv);
    int y = A(c, 2.0 * t * h);
    F(c, ex);
    F(c, sh);
    F(c, lg);
    F(c, sw);
    return y;
}

/* Its backward: the shared experts' (created last, run first), the experts', the router's
 * (the scale's, topk's zeros and scatter, softmax's, the fp32 linear's, both casts' back to
 * bf16); the input's gradients summed into the first. */
int alloc_step_ds_moe_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg)
{
    double t = d->T, h = d->h, E = d->E, S = t * d->topk;
    dims ds = *d;
    ds.f = d->sf;
    int gs = alloc_step_mlp_bwd(c, &ds, dy, false, wg, nwg);
    int gws;
    int gin = alloc_step_moe_experts_bwd(c, d, wg, nwg, &gws);
    F(c, gin); /* accumulated into gs */
    int gsw = A(c, 4.0 * S);
    F(c, gws);
    int gtk = A(c, 4.0 * t * E);
    F(c, gsw);
    int gsm = A(c, 4.0 * t * E);
    F(c, gtk);
    int gx32 = A(c, 4.0 * t * h), gw32 = A(c, 4.0 * E * h);
    F(c, gsm);
    wg[(*nwg)++] = A(c, 2.0 * E * h); /* gate.weight's cast back */
    F(c, gw32);
    int gxb = A(c, 2.0 * t * h);
    F(c, gx32);
    F(c, gxb); /* accumulated into gs */
    return gs;
}
