/*
 * alloc_step.c — plan's list of one GPU's FSDP2 steps, tensor by tensor, replayed through the
 * caching allocator (alloc_step.h). Each tensor is allocated where the program makes it and
 * freed where its last reference drops (a Python variable rebound, a function returning, the
 * backward consuming what autograd saved). Sizes from the model and the micro-batch; the saved
 * set per layer is bench/results/hfsav20_2026-11-29's (Hugging Face and native, to the byte);
 * the loss chain is memory_logits.c's; the backward's gradients follow each op's derivative
 * (torch tools/autograd/derivatives.yaml: what a formula reads and what it returns).
 */
#include "alloc_step.h"

#include "alloc_replay.h"
#include "alloc_step_internal.h"
#include "memory.h"
#include "hf_eager_attn.h"
#include "hf_experts.h"
#include "impl.h"
#include <string.h>

/* ---- forward ---- */
/* transformers' LlamaRMSNorm over rows x width (modeling_llama.py lines 63-67): x.to(fp32)
 * (saved by pow and by the mul), pow(2), mean, + eps, rsqrt (saved), x * rstd, .to(bf16)
 * (saved by the weight's mul), weight * that (the output). Native: F.rms_norm's fused kernel
 * saves its input (the caller's tensor, kept by the caller's `saved`) and the fp32 rstd. */
int alloc_step_norm_fwd(ctx *c, const dims *d, double rows, double width, saved *sv)
{
    if (d->norm_form != ALLOC_NORM_LLAMA) return alloc_step_form_norm_fwd(c, d, rows, width, sv);
    if (d->native) {
        keep(c, sv, A(c, 4.0 * rows));
        return A(c, 2.0 * rows * width);
    }
    int x32 = A(c, 4.0 * rows * width);
    int p = A(c, 4.0 * rows * width);
    int v = A(c, 4.0 * rows);
    F(c, p);
    int ve = A(c, 4.0 * rows);
    F(c, v);
    int r = A(c, 4.0 * rows);
    F(c, ve);
    int n32 = A(c, 4.0 * rows * width);
    keep(c, sv, x32); /* the variable is rebound to x * rstd */
    int nb = A(c, 2.0 * rows * width);
    int out = A(c, 2.0 * rows * width);
    keep(c, sv, r);
    keep(c, sv, nb);
    F(c, n32); /* the local holds x * rstd until the return (traced: res22's l1b s16k) */
    return out;
}

/* Rotary embedding of a [T, w] projection: HF's (x * cos) + (rotate_half(x) * sin), rotate_half
 * a cat of -x2 and x1; native's complex product on the fp32 view, cast back (type_as). Returns
 * the rotated tensor; the input is the caller's. */
int alloc_step_rope_fwd(ctx *c, const dims *d, double w)
{
    double t = d->T;
    if (d->rope32 || d->rope_part) return alloc_step_form_rope_fwd(c, d, w);
    if (d->native) {
        int f32 = A(c, 4.0 * t * w);
        int prod = A(c, 4.0 * t * w);
        int out = A(c, 2.0 * t * w);
        F(c, f32);
        F(c, prod);
        return out;
    }
    int xc = A(c, 2.0 * t * w);
    int neg = A(c, 1.0 * t * w);
    int cat = A(c, 2.0 * t * w);
    F(c, neg);
    int xs = A(c, 2.0 * t * w);
    F(c, cat);
    int out = A(c, 2.0 * t * w);
    F(c, xc);
    F(c, xs);
    return out;
}

/* SDPA's additive copy of the boolean mask, in every masked call (torch
 * aten/src/ATen/native/transformers/attention.cpp convert_boolean_attn_mask_cudnn: at::where over
 * the mask, giving the query dtype: bf16 [b, 1, s, s]; rep23's traces show no boolean temporary
 * before it, only two 2-byte scalars) saved by the cuDNN attention as attn_bias (hfsav20's
 * Phi-3-mini: sdpa_attention.py line 158). */
int alloc_step_mask_sdpa(ctx *c, const dims *d)
{
    return A(c, 2.0 * d->T * d->s);
}

/* HF's boolean window mask [b, 1, s, s], once per forward (masking_utils.sdpa_mask; rep23's
 * traces: inner_mask's sliding overlay, and_mask's result, causal_mask_function's, and_mask's
 * second result, the first three dropped as made) */
int alloc_step_mask_build(ctx *c, const dims *d)
{
    double ss = d->T * d->s;
    int overlay = A(c, ss), first = A(c, ss);
    F(c, overlay);
    int causal = A(c, ss), mask = A(c, ss);
    F(c, causal);
    F(c, first);
    return mask;
}

/* The attention's forward from the input norm's output n1 (saved here) to o_proj's output
 * (returned): the q, k, v projections, the q/k norms, RoPE, repeat_kv's copies (a masked layer
 * under GQA), the mask's copy, SDPA; what SDPA and the projections save is kept. */
int alloc_step_attn_fwd(ctx *c, const dims *d, int n1, saved *sv)
{
    double t = d->T, h = d->h, q = d->q, kv = d->kv;
    int xq = A(c, 2.0 * t * q), xk = A(c, 2.0 * t * kv), xv = A(c, 2.0 * t * kv);
    int qn = xq, kn = xk;
    double hq = d->qk_full ? 1 : d->a, hk = d->qk_full ? 1 : kv / d->hd; /* rows a token */
    if (d->qk_norm) { /* per head or over the projection (OLMo 2); HF's projections die with
                       * the norm's return */
        qn = d->gemma ? alloc_step_gemma_norm_fwd(c, t * d->a, d->hd, sv)
                      : alloc_step_norm_fwd(c, d, t * hq, q / hq, sv);
        if (!d->native) F(c, xq);
        kn = d->gemma ? alloc_step_gemma_norm_fwd(c, t * kv / d->hd, d->hd, sv)
                      : alloc_step_norm_fwd(c, d, t * hk, kv / hk, sv);
        if (!d->native) F(c, xk);
    }
    if (d->nope_l) { /* Cohere2's full-attention layers rotate nothing (alloc_step_forms.c) */
        xq = xk = -1;
    }
    int qe = d->nope_l ? qn : alloc_step_rope_fwd(c, d, q);
    int ke = d->nope_l ? kn : alloc_step_rope_fwd(c, d, kv);
    if (qn != xq && qn != qe) F(c, qn);
    if (kn != xk && kn != ke) F(c, kn);
    /* the projections: native F.rms_norm on q/k saved them (kept); else they die here */
    if (d->native && d->qk_norm) {
        keep(c, sv, xq);
        keep(c, sv, xk);
    } else if (!d->qk_norm) {
        F(c, xq);
        F(c, xk);
    }
    int keys = ke, values = xv;
    /* repeat_kv's expand + reshape copies: native_llama.py, and transformers when a mask is
     * passed (sdpa_attention.py use_gqa_in_sdpa: enable_gqa only with attention_mask None); at
     * one KV head transformers' reshape is a view (gemma19 item 5) */
    if ((d->native || ((d->lmask || d->eager) && kv > d->hd)) && q > kv) {
        keys = A(c, 2.0 * t * q);
        values = A(c, 2.0 * t * q);
        F(c, ke);
        F(c, xv);
    }
    if (d->eager) { /* eager_attention_forward (alloc_step_eager.c) */
        keep(c, sv, n1);
        return alloc_step_eager_attn_fwd(c, d, qe, keys, values, sv);
    }
    int mb = d->lmask ? alloc_step_mask_sdpa(c, d) : -1;
    int out = A(c, 2.0 * t * q), lse = A(c, 4.0 * t * d->a);
    /* StableLM's q is a cat's [b, heads, s, d] output, so SDPA's output is too and the
     * transpose's .contiguous() copies it: o_proj saves the copy (Phi-3's cc, cov22) */
    int cc = d->rope_part ? A(c, 2.0 * t * q) : -1;
    int o = A(c, 2.0 * t * h);
    if (cc >= 0) keep(c, sv, cc);
    keep(c, sv, n1);
    keep(c, sv, qe);
    keep(c, sv, keys);
    keep(c, sv, values);
    keep(c, sv, out);
    keep(c, sv, lse);
    if (mb >= 0) keep(c, sv, mb);
    return o;
}

/* The dense gated MLP, down(act(gate(x)) * up(x)) (SiLU or GELU: each saves its input), from
 * the norm's output (the caller keeps it) to down's output; operands die after the next op. */
int alloc_step_mlp_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, f = d->f;
    int g = A(c, 2.0 * t * f), s = A(c, 2.0 * t * f);
    keep(c, sv, g);
    int u = A(c, 2.0 * t * f), p = A(c, 2.0 * t * f);
    keep(c, sv, s);
    keep(c, sv, u);
    int dn = A(c, 2.0 * t * d->h);
    keep(c, sv, p);
    return dn;
}

/* Its backward from the output's gradient g (freed once down's backward ran when consume):
 * returns the input's gradient, the weight gradients appended to wg. */
int alloc_step_mlp_bwd(ctx *c, const dims *d, int g, bool consume, int *wg, int *nwg)
{
    double t = d->T, h = d->h, f = d->f;
    int gp = A(c, 2.0 * t * f);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* down */
    if (consume) F(c, g);
    int gs = A(c, 2.0 * t * f), gu = A(c, 2.0 * t * f);
    F(c, gp);
    int gn2 = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* up */
    F(c, gu);
    int gg = A(c, 2.0 * t * f);       /* the activation's backward */
    F(c, gs);
    int gn2b = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* gate */
    F(c, gg);
    F(c, gn2b);
    return gn2;
}

/* One decoder layer's forward on input x (the caller's; under a checkpoint, sv is NULL and
 * nothing is kept). Returns the output. */
static int layer_fwd(ctx *c, const dims *d, int x, saved *sv)
{
    double t = d->T, h = d->h;
    int n1 = alloc_step_norm_fwd(c, d, t, h, sv);
    int o = d->mla ? alloc_step_mla_attn_fwd(c, d, n1, sv) : alloc_step_attn_fwd(c, d, n1, sv);
    int hs = A(c, 2.0 * t * h);
    F(c, o);
    int n2 = alloc_step_norm_fwd(c, d, t, h, sv);
    int dn = d->moe && d->mla ? alloc_step_ds_moe_fwd(c, d, sv)
             : d->moe        ? alloc_step_moe_fwd(c, d, sv)
                             : alloc_step_mlp_fwd(c, d, sv);
    keep(c, sv, n2);
    int y = A(c, 2.0 * t * h);
    F(c, dn);
    /* the residual h: native's ffn_norm saved it; HF's dies on return */
    if (d->native) keep(c, sv, hs);
    else F(c, hs);
    /* x: native's attention_norm saved it (the caller's reference is dropped below) */
    (void)x;
    return y;
}

/* ---- backward ---- */

/* The RMSNorm's backward from the output's gradient g (consumed): returns the input's. */
int alloc_step_norm_bwd(ctx *c, const dims *d, double rows, double width, int g)
{
    if (d->norm_form != ALLOC_NORM_LLAMA) return alloc_step_form_norm_bwd(c, d, rows, width, g);
    if (d->native) {
        int gi = A(c, 2.0 * rows * width);
        F(c, g);
        return gi;
    }
    int gnb = A(c, 2.0 * rows * width); /* weight * nb: d/d nb */
    F(c, g);
    int g32 = A(c, 4.0 * rows * width); /* .to(bf16) backward */
    F(c, gnb);
    int gxa = A(c, 4.0 * rows * width); /* x * rstd: grad * rstd */
    int tmp = A(c, 4.0 * rows * width); /* grad * x, summed for rstd */
    int gr = A(c, 4.0 * rows);
    F(c, tmp);
    F(c, g32);
    int gve = A(c, 4.0 * rows);         /* rsqrt backward */
    F(c, gr);
    int gp = A(c, 4.0 * rows * width);  /* mean backward (expand) */
    F(c, gve);
    int gxb = A(c, 4.0 * rows * width); /* pow backward */
    F(c, gp);
    F(c, gxb);                          /* accumulated into gxa */
    int gi = A(c, 2.0 * rows * width);  /* .to(fp32) backward */
    F(c, gxa);
    return gi;
}

/* SDPA's backward from its output's gradient go (consumed) through repeat_kv's (a masked layer
 * under GQA), the rotary embedding's, the q/k norms' and the q, k, v projections': returns the
 * gradient of the projections' input, the weight gradients appended to wg. */
int alloc_step_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->q, kv = d->kv;
    int gq, gk, gv;
    if (d->eager) {
        alloc_step_eager_attn_bwd(c, d, go, &gq, &gk, &gv);
    } else if (d->lmask && q > kv) { /* SDPA's gradients of the repeated k, v; repeat_kv's backward
                              * (expand's: a sum over the repeats) */
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
        int a1 = d->nope_l ? -1 : A(c, 2.0 * t * w[i]), a2 = d->nope_l ? -1 : A(c, 2.0 * t * w[i]);
        if (!d->nope_l) F(c, gr[i]);
        int gx = d->nope_l ? gr[i] : A(c, 2.0 * t * w[i]);
        F(c, a1);
        F(c, a2);
        if (d->qk_norm && d->gemma)
            gx = alloc_step_gemma_norm_bwd(c, t * w[i] / d->hd, d->hd, gx, true);
        else if (d->qk_norm && d->qk_full)
            gx = alloc_step_norm_bwd(c, d, t, w[i], gx);
        else if (d->qk_norm)
            gx = alloc_step_norm_bwd(c, d, t * w[i] / d->hd, d->hd, gx);
        int gin = A(c, 2.0 * t * h);
        wg[(*nwg)++] = A(c, 2.0 * h * w[i]);
        F(c, gx);
        F(c, gin);                    /* accumulated into gn1 */
    }
    return gn1;
}

/* One layer's backward from the output's gradient dy (consumed); weight gradients (bf16)
 * appended to wg. Returns the input's gradient. */
static int layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->mla ? d->a * d->vd : d->q; /* o_proj's input width */
    int gn2 = d->moe && d->mla ? alloc_step_ds_moe_bwd(c, d, dy, wg, nwg)
              : d->moe        ? alloc_step_moe_bwd(c, d, dy, wg, nwg)
                              : alloc_step_mlp_bwd(c, d, dy, false, wg, nwg);
    int gh = alloc_step_norm_bwd(c, d, t, h, gn2);
    int gsum = A(c, 2.0 * t * h);     /* the residual's sum of gradients */
    F(c, gh);
    F(c, dy);
    int go = A(c, 2.0 * t * q);
    wg[(*nwg)++] = A(c, 2.0 * h * q); /* o */
    int gn1 = d->mla ? alloc_step_mla_attn_bwd(c, d, go, wg, nwg) : alloc_step_attn_bwd(c, d, go, wg, nwg);
    int gx = alloc_step_norm_bwd(c, d, t, h, gn1);
    int gin = A(c, 2.0 * t * h);
    F(c, gx);
    F(c, gsum);
    return gin;
}

/* ---- the program ---- */

/* Layer l's forward and backward, by the layer code; lmask: whether its SDPA takes the mask */
int alloc_step_any_layer_fwd(ctx *c, const dims *d, int l, int x, saved *sv)
{
    dims dl = *d;
    dl.lmask = d->mask && model_layer_is_sliding(d->m, l);
    dl.nope_l = d->nope2 && !model_layer_is_sliding(d->m, l);
    dl.moe = d->moe && l >= d->dense_first;
    if (d->fused) return alloc_step_phi3_layer_fwd(c, &dl, sv);
    if (d->gptoss) return alloc_step_gptoss_layer_fwd(c, &dl, sv);
    if (d->gemma) return alloc_step_gemma_layer_fwd(c, &dl, sv);
    if (d->block != ALLOC_BLOCK_LLAMA) return alloc_step_form_layer_fwd(c, &dl, x, sv);
    if (d->compiled) return alloc_step_compiled_layer_fwd(c, &dl, sv);
    return layer_fwd(c, &dl, x, sv);
}

static int any_layer_bwd(ctx *c, const dims *d, int l, int dy, int *wg, int *nwg)
{
    dims dl = *d;
    dl.lmask = d->mask && model_layer_is_sliding(d->m, l);
    dl.nope_l = d->nope2 && !model_layer_is_sliding(d->m, l);
    dl.moe = d->moe && l >= d->dense_first;
    if (d->fused) return alloc_step_phi3_layer_bwd(c, &dl, dy, wg, nwg);
    if (d->gptoss) return alloc_step_gptoss_layer_bwd(c, &dl, dy, wg, nwg);
    if (d->gemma) return alloc_step_gemma_layer_bwd(c, &dl, dy, wg, nwg);
    if (d->block != ALLOC_BLOCK_LLAMA) return alloc_step_form_layer_bwd(c, &dl, dy, wg, nwg);
    if (d->compiled) return alloc_step_compiled_layer_bwd(c, &dl, dy, wg, nwg);
    return layer_bwd(c, &dl, dy, wg, nwg);
}

/* A unit's parameters gathered (FSDPParamGroup.unshard at world size 1, torch 2.11.0
 * traced in bench/results/ho21_2026-11-29/reserved70b): per parameter the fp32 shard cast to
 * bf16 (_fsdp_common.py _to_dtype_if_needed, line 167), the all-gather output's storage
 * (_fsdp_param.py alloc_storage, line 931; init_all_gather_outputs the first time), the copy,
 * the cast dropped. */
static void unit_unshard(ctx *c, const double *params, int n, int *out)
{
    for (int i = 0; i < n; i++) {
        int cast = A(c, 2.0 * params[i]);
        out[i] = A(c, 2.0 * params[i]);
        F(c, cast);
    }
}

static void unit_reshard(ctx *c, int n, const int *params)
{
    for (int i = 0; i < n; i++) F(c, params[i]);
}

/* FSDP2's reduce-scatter input for a unit of `params` parameters (torch 2.11.0,
 * torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce: `reduce_scatter_input
 * = reduce_scatter_comm.allocate(...)`, DefaultAllocMixin.allocate's torch.empty at line 59 in
 * the traces of bench/results/ho21_2026-11-29/reserved70b), fp32 (reduce_dtype), on the
 * compute stream, made at world size 1 too (the copy to the output replaces the collective).
 * foreach_reduce returns it and the param group keeps it (its reduce-scatter state) until the
 * next unit's post-backward has waited on its event and dropped it, just before allocating
 * its own: the previous input `prev` (-1: none) is freed first. Returns the new input. */
static int rs_input_swap(ctx *c, int prev, double params)
{
    if (prev >= 0) F(c, prev);
    return A(c, 4.0 * params);
}

typedef struct {
    int *orig, *sharded; /* the fp32 parameters */
    int n;
} params;

/* Layer l's parameters: a dense first layer's or the others' (DeepSeek's first_k_dense_replace) */
static const double *layer_lp(const dims *d, int l, int *n)
{
    *n = l < d->dense_first ? d->nlpd : d->nlp;
    return l < d->dense_first ? d->lpd : d->lp;
}

static void unit_params(const dims *d, int unit, double *p, int *n)
{
    *n = 0;
    if (unit < d->layers) {
        int nl;
        const double *lp = layer_lp(d, unit, &nl);
        for (int i = 0; i < nl; i++) p[(*n)++] = lp[i];
        return;
    }
    p[(*n)++] = d->V * d->h; /* embedding */
    p[(*n)++] = d->h;        /* final norm */
    if (!d->tied) p[(*n)++] = d->V * d->h;
}

static void replay_steps(ctx *c, const dims *d, alloc_step_reserved *out)
{
    alloc_replay *a = c->a;
    int L = d->layers;
    /* build: transformers' from_config under torch.device(cuda), fp32: the embedding, the
     * layers, the final norm, the head (a tied head's own weight made, then dropped) */
    int emb = A(c, 4.0 * d->V * d->h);
    int lay[L > 0 ? L : 1][MAX_LAYER_PARAMS];
    for (int l = 0; l < L; l++) {
        int nl;
        const double *lp = layer_lp(d, l, &nl);
        for (int i = 0; i < nl; i++) lay[l][i] = A(c, 4.0 * lp[i]);
    }
    int fnorm = A(c, 4.0 * d->h);
    int head = A(c, 4.0 * d->V * d->h);
    if (d->tied) F(c, head);
    if (d->native) A(c, 8.0 * d->s * d->hd / 2); /* freqs_cis, complex64 */
    /* fully_shard per layer, then the root: each unit's sharded copies (FSDPParam
     * _init_sharded_param's new_zeros), the originals dropped with the unit's param list */
    int sh[L + 1][MAX_LAYER_PARAMS];
    double pu[MAX_LAYER_PARAMS];
    int npu;
    for (int u = 0; u <= L; u++) {
        unit_params(d, u, pu, &npu);
        for (int i = 0; i < npu; i++) sh[u][i] = A(c, 4.0 * pu[i]);
        if (u < L) {
            for (int i = 0; i < npu; i++) F(c, lay[u][i]);
        } else {
            F(c, emb);
            F(c, fnorm);
            if (!d->tied) F(c, head);
        }
    }
    A(c, 8.0 * d->T); /* the input ids (and labels: the same tensor) */
    out->build_bytes = (double)alloc_replay_stream_reserved_bytes(a, 0);

    int side[L + 1];
    bool have_side = false;
    int state[2 * (L + 1) * MAX_LAYER_PARAMS];
    for (int step = 0; step < 3; step++) {
        if (have_side) /* zero_grad(set_to_none): the sharded gradients */
            for (int u = 0; u <= L; u++) F(c, side[u]);
        /* root pre-forward: its bf16 parameters, until its post-forward (below) */
        int rootp[3], nroot;
        unit_params(d, L, pu, &nroot);
        unit_unshard(c, pu, nroot, rootp);
        int x = A(c, 2.0 * d->T * d->h); /* embedding output */
        int emask = -1, x0 = -1; /* StarCoder2's embedding dropout: its mask; its input, a
                                  * local of the model's forward (alloc_step_forms.c) */
        if (d->gemma || d->drop_emb) { /* times sqrt(hidden) (Gemma3TextScaledWordEmbedding,
                                        * Gemma2's normalizer), or the dropout */
            int xs = A(c, 2.0 * d->T * d->h);
            if (d->drop_emb) emask = A(c, 1.0 * d->T * d->h), x0 = x;
            else F(c, x);
            x = xs;
        }
        int mk = d->mask    ? alloc_step_mask_build(c, d)
                 : d->eager ? alloc_step_eager_mask(c, d)
                            : -1;
        int mk2 = -1;
        if (d->gptoss || d->eager_window) { /* the sliding layers' eager mask beside the causal
                                              * one (GPT-OSS; Gemma 2/3: alloc_step_eager.c) */
            int mb = alloc_step_mask_build(c, d);
            mk2 = A(c, 2.0 * d->T * d->s);
            F(c, mb);
        }
        int cosb[2] = {-1, -1}, sinb[2] = {-1, -1};
        for (int k = 0; !d->native && k < d->rotary_tables; k++) { /* HF's cos/sin [1, s, hd] */
            double r = d->s * d->hd * d->rf; /* [1, s, rotary dim] */
            int fr = A(c, 2.0 * r), em = A(c, 4.0 * r), c32 = A(c, 4.0 * r), s32 = A(c, 4.0 * r);
            cosb[k] = A(c, (d->ernie ? 4.0 : 2.0) * r); /* ERNIE's stay fp32 (alloc_step_moe.c) */
            sinb[k] = A(c, (d->ernie ? 4.0 : 2.0) * r);
            F(c, fr);
            F(c, em);
            F(c, c32);
            F(c, s32);
        }
        saved sv[L > 0 ? L : 1];
        int ckin[L > 0 ? L : 1];
        int rs_in = -1;
        for (int l = 0; l < L; l++) {
            int bp[MAX_LAYER_PARAMS], nl;
            const double *lp = layer_lp(d, l, &nl);
            unit_unshard(c, lp, nl, bp);
            sv[l].n = 0;
            int y = alloc_step_any_layer_fwd(c, d, l, x, d->ckpt ? NULL : &sv[l]);
            if (d->ckpt) ckin[l] = x;          /* the checkpoint keeps its input */
            else if (d->native) keep(c, &sv[l], x); /* attention_norm saved it */
            else if (d->block != ALLOC_BLOCK_POST && d->norm_form != ALLOC_NORM_LN) F(c, x);
            x = y;
            for (int i = 0; i < nl; i++) F(c, bp[i]); /* reshard after forward */
        }
        saved fs = {.n = 0};
        int nf = d->gemma    ? alloc_step_gemma_norm_fwd(c, d->T, d->h, &fs)
                 : d->gptoss ? alloc_step_gptoss_norm_fwd(c, d->T, d->h, &fs)
                             : alloc_step_norm_fwd(c, d, d->T, d->h, &fs);
        if (d->native || d->norm_form == ALLOC_NORM_LN) keep(c, &fs, x);
        else F(c, x);
        F(c, x0);
        /* the mask dies with the model's forward; a checkpoint's recompute keeps it (below) */
        if (mk >= 0 && !d->ckpt) F(c, mk);
        if (mk2 >= 0 && !d->ckpt) F(c, mk2);
        /* the loss chain (memory_logits.c): bf16 logits, the fp32 upcast, log_softmax's
         * output (saved); the upcast dies with the loss function, the bf16 logits with the
         * model's output (HF) or `del logits` (native) */
        double L2 = 2.0 * d->T * d->V, L4 = 2.0 * L2;
        /* the root's post-forward reshards it (fully_shard(model, reshard_after_forward=True),
         * bench/realruns/fsdp2_model.py): its bf16 parameters dropped when the model returns,
         * after the loss under HF (transformers computes it in forward), before it natively
         * (the loss is the caller's); they are gathered again by the pre-backward hook FSDP2
         * registers on the forward's outputs: at the backward's start under HF (the loss is an
         * output), once the logits' gradient is made natively */
        int lg = A(c, L2), th = -1;
        if (d->logit_scale) { /* Cohere: logits * logit_scale */
            int sc = A(c, L2);
            F(c, lg);
            lg = sc;
        }
        if (d->softcap > 0) { /* Gemma 2: logits / cap, tanh (saved), * cap (the logits) */
            int dv = A(c, L2);
            F(c, lg);
            th = A(c, L2);
            F(c, dv);
            lg = A(c, L2);
        }
        if (d->native) unit_reshard(c, nroot, rootp);
        int up = A(c, L4), ls = A(c, L4);
        F(c, up);
        if (!d->native) unit_reshard(c, nroot, rootp);
        if (!d->hold) F(c, lg); /* held: a local until the step function returns (below) */
        if (step == 0) out->fwd0_bytes = (double)alloc_replay_stream_reserved_bytes(a, 0);
        /* backward: nll_loss_backward's fp32 gradient, _log_softmax_backward_data's, the
         * upcast's backward to bf16; the head's input and weight gradients */
        if (!d->native) unit_unshard(c, pu, nroot, rootp);
        int gn = A(c, L4), gl = A(c, L4);
        F(c, gn);
        F(c, ls);
        int gb = A(c, L2);
        F(c, gl);
        if (d->logit_scale) {
            int gs = A(c, L2);
            F(c, gb);
            gb = gs;
        }
        if (th >= 0) { /* the soft-cap's backward: mul's, tanh's (its output dies), div's */
            int gm = A(c, L2);
            F(c, gb);
            int gt = A(c, L2);
            F(c, gm);
            F(c, th);
            gb = A(c, L2);
            F(c, gt);
        }
        if (d->native) unit_unshard(c, pu, nroot, rootp);
        int gnf = A(c, 2.0 * d->T * d->h);
        int ghead = A(c, 2.0 * d->V * d->h);
        F(c, gb);
        F(c, nf);
        int dy = d->gemma    ? alloc_step_gemma_norm_bwd(c, d->T, d->h, gnf, true)
                 : d->gptoss ? alloc_step_gptoss_norm_bwd(c, d->T, d->h, gnf)
                             : alloc_step_norm_bwd(c, d, d->T, d->h, gnf);
        release(c, &fs);
        for (int l = L - 1; l >= 0; l--) {
            int bp[MAX_LAYER_PARAMS], nl;
            const double *lp = layer_lp(d, l, &nl);
            unit_unshard(c, lp, nl, bp);
            if (d->ckpt) { /* recompute the layer's forward, saving */
                sv[l].n = 0;
                F(c, alloc_step_any_layer_fwd(c, d, l, ckin[l], &sv[l]));
            }
            int wg[MAX_LAYER_PARAMS], nwg = 0;
            c->layer_saved = &sv[l];
            int gx = any_layer_bwd(c, d, l, dy, wg, &nwg);
            release(c, &sv[l]);
            if (d->ckpt) F(c, ckin[l]);
            if (d->ckpt && l == 0 && mk >= 0) F(c, mk);
            if (d->ckpt && l == 0 && mk2 >= 0) F(c, mk2);
            dy = gx;
            /* post-backward (FSDPParamGroup.post_backward): reshard (the bf16 parameters
             * dropped), then foreach_reduce: the previous unit's reduce-scatter input released,
             * this unit's fp32 input on the compute stream, the unsharded gradients dropped
             * once copied in, the fp32 output on FSDP2's stream (rs_input_swap) */
            double units = 0;
            for (int i = 0; i < nl; i++) units += lp[i];
            for (int i = 0; i < nl; i++) F(c, bp[i]);
            rs_in = rs_input_swap(c, rs_in, units);
            for (int i = 0; i < nwg; i++) F(c, wg[i]);
            side[l] = alloc_replay_malloc(a, (uint64_t)(4.0 * units), SIDE_STREAM);
        }
        if (d->gemma || d->drop_emb) { /* the scaling's or the dropout's backward */
            int gs = A(c, 2.0 * d->T * d->h);
            F(c, dy);
            F(c, emask);
            dy = gs;
        }
        int gemb = A(c, 2.0 * d->V * d->h); /* embedding backward */
        F(c, dy);
        if (d->tied) F(c, gemb); /* summed into the head's */
        double root = 0;
        for (int i = 0; i < nroot; i++) root += pu[i];
        for (int i = 0; i < nroot; i++) F(c, rootp[i]);
        rs_in = rs_input_swap(c, rs_in, root);
        F(c, ghead);
        if (!d->tied) F(c, gemb);
        side[L] = alloc_replay_malloc(a, (uint64_t)(4.0 * root), SIDE_STREAM);
        have_side = true;
        /* the backward's final callback waits for the last reduce-scatter and drops its input */
        F(c, rs_in);
        rs_in = -1;
        for (int k = 0; k < 2; k++)
            if (cosb[k] >= 0) {
                F(c, cosb[k]);
                F(c, sinb[k]);
            }
        if (step == 0) out->bwd0_bytes = (double)alloc_replay_stream_reserved_bytes(a, 0);
        /* clip_grad_norm_: foreach norms (0-d fp32 each) and their stack */
        int total = (L + 1) * MAX_LAYER_PARAMS, np = 0;
        int nrm[total];
        for (int u = 0; u <= L; u++) {
            unit_params(d, u, pu, &npu);
            for (int i = 0; i < npu; i++) nrm[np++] = A(c, 4.0);
        }
        int stk = A(c, 4.0 * np);
        for (int i = 0; i < np; i++) F(c, nrm[i]);
        F(c, stk);
        /* AdamW, parameters in model.parameters() order (the embedding, the layers, the
         * final norm, an untied head): the state at the first step, exp_avg then exp_avg_sq
         * per parameter (adam.py _init_group); foreach's sqrt list (_multi_tensor_adam) */
        double order[total];
        int no = 0;
        unit_params(d, L, pu, &npu);
        order[no++] = pu[0];
        for (int l = 0; l < L; l++) {
            int nl;
            const double *lp = layer_lp(d, l, &nl);
            for (int i = 0; i < nl; i++) order[no++] = lp[i];
        }
        for (int i = 1; i < npu; i++) order[no++] = pu[i];
        if (step == 0)
            for (int i = 0; i < no; i++) {
                state[2 * i] = A(c, 4.0 * order[i]);
                state[2 * i + 1] = A(c, 4.0 * order[i]);
                if (!d->foreach) A(c, 4.0); /* fused: the step count on the device */
            }
        if (d->foreach) {
            int tmp[total];
            for (int i = 0; i < no; i++) tmp[i] = A(c, 4.0 * order[i]);
            for (int i = 0; i < no; i++) F(c, tmp[i]);
        }
        if (d->hold) F(c, lg); /* realrun.py before 7caf997: zero_grad, then the return */
        if (step == 0) out->opt0_bytes = (double)alloc_replay_stream_reserved_bytes(a, 0);
        if (step == 1) out->step1_bytes = (double)alloc_replay_stream_reserved_bytes(a, 0);
        if (step == 2) out->step2_bytes = (double)alloc_replay_stream_reserved_bytes(a, 0);
    }
    (void)state;
    (void)sh;
    out->side_bytes = (double)alloc_replay_stream_reserved_bytes(a, SIDE_STREAM);
    out->peak_bytes = (double)alloc_replay_peak_reserved_bytes(a);
    out->peak_allocated_bytes = (double)alloc_replay_peak_allocated_bytes(a);
}

int alloc_step_dims_of(const model_spec *m, const training_spec *t, const layout *l, dims *out)
{
    dims d = {.T = (double)l->mbs * t->seq_len, .s = t->seq_len, .h = m->hidden,
              .q = model_q_dim(m), .kv = model_kv_dim(m), .hd = m->head_dim, .f = m->ffn,
              .V = m->vocab, .a = m->heads, .native = layout_impl_of(l) == IMPL_NATIVE,
              .ckpt = l->recompute == RECOMPUTE_FULL, .compiled = l->compile,
              .hold = t->hold_logits,
              .qk_norm = m->qk_norm, .qkv_bias = m->qkv_bias, .o_bias = m->attn_out_bias,
              .tied = m->tied_embeddings, .layers = m->layers, .fused = m->hf_fused_qkv,
              .rf = m->rotary_fraction > 0 && m->rotary_fraction < 1 ? m->rotary_fraction : 1,
              .mask = memory_hf_window_mask_share(m, t, l) > 0, .m = m,
              .gemma = m->sandwich_norm && m->norm_fp32_scale, .softcap = m->final_logit_softcap,
              .rotary_tables = m->rope_local_theta > 0 ? 2 : 1, .moe = model_is_moe(m),
              .norm_topk = m->norm_topk_prob, .eager = hf_eager_attn_applies(m, t, l),
              .E = m->experts, .topk = m->top_k,
              .ef = (double)m->expert_ffn, .mla = m->mla,
              .v3 = strcmp(m->hf_model_type, "deepseek_v3") == 0, .rq = m->q_lora_rank,
              .rkv = m->kv_lora_rank, .rr = m->qk_rope_dim, .vd = m->v_head_dim,
              .sf = (double)m->shared_ffn * m->shared_experts,
              .dense_first = m->mla && model_is_moe(m) ? m->dense_first : 0};
    if (d.eager && d.gemma) { /* Gemma 2/3 under eager (alloc_step_eager.c) */
        d.attn_softcap = m->attn_logit_softcap;
        d.eager_window = m->sliding_window > 0 && model_sliding_layers(m) > 0 &&
                         model_sliding_layers(m) < m->layers;
    }
    if (m->attention_sinks) { /* GPT-OSS: its table is half a head wide (emb = freqs) */
        d.gptoss = true;
        d.mask = false;
        d.rf = 0.5;
    }
    d.shared_gate = d.moe && !m->mla && m->shared_experts > 0; /* Qwen2-MoE (alloc_step_cover.c) */
    d.ernie = strcmp(m->hf_model_type, "ernie4_5_moe") == 0; /* ERNIE-4.5 (alloc_step_moe.c) */
    if (d.moe && (alloc_step_glm_block(m) || d.ernie)) { /* and GLM-4.5's */
        d.glm = !d.ernie;
        d.shared_gate = false;
        d.dense_first = m->dense_first;
    }
    if (m->mla) { /* HF's rotary table is the rope dim wide */
        d.rf = m->qk_rope_dim / (double)m->head_dim;
        d.moe = model_moe_layers(m) > 0;
    }
    int opt = layout_optimizer_impl_of(l);
    d.foreach = opt == OPTIMIZER_IMPL_FOREACH;
    if (alloc_step_form_of(m, &d) != 0) return -1;
    alloc_step_layer_params(&d);
    *out = d;
    return 0;
}

int alloc_step_replay(const model_spec *m, const training_spec *t, const layout *l,
                      double allocator_capacity_bytes, alloc_step_reserved *out)
{
    memset(out, 0, sizeof *out);
    dims d;
    if (!alloc_step_covered(m, t, l) || m->layers > 512 || alloc_step_dims_of(m, t, l, &d) != 0)
        return -1;
    ctx c = {.a = alloc_replay_new()};
    if (!c.a) return -1;
    if (allocator_capacity_bytes > 0)
        alloc_replay_set_capacity(c.a, (uint64_t)allocator_capacity_bytes);
    replay_steps(&c, &d, out);
    out->out_of_memory = alloc_replay_out_of_memory(c.a);
    out->oom_need_bytes = (double)alloc_replay_oom_need_bytes(c.a);
    out->cache_released = alloc_replay_released(c.a);
    alloc_replay_delete(c.a);
    return c.fail ? -1 : 0;
}

alloc_step_key alloc_step_key_of(const model_spec *m, const training_spec *t, const layout *l,
                                 double allocator_capacity_bytes)
{
    alloc_step_key k;
    memset(&k, 0, sizeof k);
    k.seq_len = t->seq_len;
    k.mbs = l->mbs;
    k.recompute = (int)l->recompute;
    k.impl = layout_impl_of(l);
    k.optimizer_impl = layout_optimizer_impl_of(l);
    k.allocator_capacity_bytes = allocator_capacity_bytes;
    k.layers = m->layers;
    k.hidden = m->hidden;
    k.heads = m->heads;
    k.kv_heads = m->kv_heads;
    k.head_dim = m->head_dim;
    k.ffn = m->ffn;
    k.vocab = m->vocab;
    k.flags = (m->qk_norm ? 1 : 0) | (m->qkv_bias ? 2 : 0) | (m->attn_out_bias ? 4 : 0) |
              (m->tied_embeddings ? 8 : 0) | (m->hf_fused_qkv ? 16 : 0) |
              (m->sandwich_norm && m->norm_fp32_scale ? 32 : 0) |
              (m->final_logit_softcap > 0 ? 64 : 0) | (m->rope_local_theta > 0 ? 128 : 0) |
              (m->norm_topk_prob ? 256 : 0) | (hf_eager_attn_applies(m, t, l) ? 512 : 0) |
              (m->attn_logit_softcap > 0 ? 4096 : 0) | (m->sliding_window > 0 ? 8192 : 0) |
              (l->compile ? 16384 : 0) | (t->hold_logits ? 32768 : 0);
    k.experts = m->experts;
    k.top_k = m->top_k;
    k.expert_ffn = m->expert_ffn;
    k.rotary_ppm = (long)(m->rotary_fraction * 1e6 + 0.5);
    if (m->attention_sinks) k.flags |= 2048; /* GPT-OSS's layer (alloc_step_gptoss.c) */
    if (m->mla) { /* DeepSeek's MLA and MoE (alloc_step_mla.c) */
        k.flags |= 512 | (strcmp(m->hf_model_type, "deepseek_v3") == 0 ? 1024 : 0);
        k.q_lora_rank = m->q_lora_rank;
        k.kv_lora_rank = m->kv_lora_rank;
        k.qk_rope_dim = m->qk_rope_dim;
        k.v_head_dim = m->v_head_dim;
        k.dense_first = m->dense_first;
    }
    k.shared_ffn = (long)m->shared_ffn * m->shared_experts; /* MLA's, or Qwen2-MoE's gated one */
    if (!m->mla && m->shared_experts > 0) { /* (alloc_step_moe.c; GLM-4.5's its own) */
        k.flags |= 16384 | (alloc_step_glm_block(m) ? 65536 : 0) |
                   (strcmp(m->hf_model_type, "ernie4_5_moe") == 0 ? 131072 : 0);
        k.dense_first = m->dense_first;
    }
    k.mask = (long)(memory_hf_window_mask_share(m, t, l) * 1e6 + 0.5); /* sliding layers' share */
    dims fm = {.rf = m->rotary_fraction}; /* the layer form (alloc_step_forms.c) */
    if (alloc_step_form_of(m, &fm) == 0)
        k.flags |= (long)(fm.block | fm.norm_form << 2 | fm.qk_full << 4 | fm.qk_wfull << 5 |
                          fm.plain << 6 | fm.drop << 7 | fm.drop_emb << 8 | fm.rope32 << 9 |
                          fm.rope_part << 10 | fm.logit_scale << 11 | fm.ln_bias << 12 |
                          fm.mlp_bias << 13 | fm.norms << 14 | fm.neox << 17 | fm.nope2 << 18 |
                          fm.phimoe << 19 | fm.jitter << 20 | fm.falcon << 21 |
                          fm.falcon_nda << 22) << 20;
    return k;
}
