/*
 * alloc_step_moe.c — a Hugging Face transformers 5.x MoE block (softmax top-k router and the
 * routed experts as fused 3-D parameters, run by the grouped_mm experts implementation the
 * realruns recorded: Qwen3-MoE, Mixtral) as the allocator replay lists it (alloc_step.h,
 * alloc_step_internal.h). The ops and their tensors are hf_experts.c's list (transformers 5.17.0
 * integrations/moe.py grouped_mm_experts_forward, read on the device there; the router
 * Qwen3MoeTopKRouter.forward), T tokens, S = T k routed copies, E experts, f the expert width:
 *  - router: F.linear's bf16 logits [T, E]; softmax(dtype=float): the fp32 cast and the fp32
 *    output (saved), the logits dropped with the name; topk's fp32 values and int64 indices;
 *    the row sum the in-place divide keeps; `.to(router_logits.dtype)` is fp32 to fp32;
 *  - experts: torch.sort of the expert ids (values and the permutation, int64 [S]); perm // k;
 *    the gathered rows hidden_states[perm // k] [S, h] (saved by the grouped GEMM); the sorted
 *    weights; the int32 ids, histc and cumsum (E-sized); the sentinel mask (bool [S], saved by
 *    the masked fills) and the in-place masked fill of the rows; the first grouped GEMM's
 *    [S, 2f] and its out-of-place masked fill (kept: silu's and mul's views); silu and the
 *    product (kept); the second grouped GEMM's [S, h] and its masked fill (kept by the weight
 *    product); the product with the fp32 weights, fp32 [S, h]; inv_perm and the arange
 *    scattered into it; the fp32 gather back; the sum over k, fp32 [T, h]; its bf16 cast,
 *    the block's output. The function's locals die when it returns.
 *  - backward, op by op as derivatives.yaml and hf_experts.c list them (each gather's backward an
 *    index_put_ with accumulate into zeros); each node's saved tensors freed once it has run
 *    (autograd releases them after the node's apply, retain_graph False), in the order the
 *    nodes run: inv, the masked down output and the weights, the product, silu's output, the
 *    masked gate_up output (silu's gate and mul's up are its views), the gathered rows and the
 *    offsets, the mask, the token index, the permutation (replay26: kept to the layer's end
 *    before, Mixtral's backward at 16k tokens peaked 0.7-0.8 GiB above the runs).
 * What the code does not say (lifetimes of locals inside the function) follows Python: a name
 * holds its tensor until it is rebound or the function returns.
 * Qwen2-MoE's block (Qwen2MoeSparseMoeBlock.forward, huggingface/transformers 8fb1742
 * src/transformers/models/qwen2_moe/modular_qwen2_moe.py lines 121-132; __init__ lines 114-119:
 * gate, experts, shared_expert, shared_expert_gate) adds a shared expert and its gate around
 * the same router and experts, in this order:
 *  - shared_expert(x): Qwen2MoeMLP, down(act(gate(x)) * up(x)) at width sf (alloc_step_mlp_fwd:
 *    gate's and up's [T, sf] outputs, silu's, the product, all saved; down's [T, h] output);
 *  - the router and the experts as above (5.17's router is Qwen3-MoE's, which inherits
 *    Qwen2MoeTopKRouter; 8fb1742's still scattered the weights into a [T, E] fp32 tensor);
 *  - shared_expert_gate(x) [T, 1] bf16, sigmoid (its [T, 1] output saved by sigmoid and by the
 *    mul), sigmoid * shared_output [T, h] (mul saves both operands: down's output stays until
 *    the backward), `expert_output += ...` in place; the product dies at the return.
 * Backward (autograd runs the node made last first): mul's (grad * shared_output [T, h], summed
 * to [T, 1] once made; grad * sigmoid [T, h], the shared output's gradient), sigmoid's [T, 1],
 * the gate's linear ([T, h] input gradient, [1, h] weight gradient); then the experts' and the
 * router's; the shared MLP's (made first, run last), consuming its output's gradient. The
 * input's gradients are summed into the first one made (the gate's).
 * GLM-4.5's block (transformers 5.17.0 models/glm4_moe/modeling_glm4_moe.py, the copy arch24
 * took off the device: Glm4MoeMoE.forward 395-402, Glm4MoeTopkRouter.forward 292-317; the
 * decoder layer's dense Glm4MoeMLP below first_k_dense_replace, 414-417):
 *  - router, in fp32: hidden_states.type(float32) [T, h] and weight.type(float32) [E, h], both
 *    saved by F.linear; the fp32 logits [T, E] (returned: the block's `_` holds them to its
 *    return); sigmoid, saved; + e_score_correction_bias; the group scores (topk(2) over one
 *    group's view, its sum), topk over the groups, zeros_like and scatter_; the mask's expand
 *    and reshape (a copy: the view has stride 0), .bool() and ~ (bool [T, E], saved by
 *    masked_fill while its output lives), masked_fill out of place; topk(k)'s values (dropped)
 *    and int64 indices (saved by gather); scores.gather, fp32 [T, k]; the denominator (sum
 *    + 1e-20) and the in-place divide (kept as Qwen3-MoE's); the product with
 *    routed_scaling_factor, the weights the experts take; the router's locals die at its return;
 *  - the experts as above; shared_experts(residuals) (a Glm4MoeMLP of width sf, no gate); the sum.
 * Backward: the shared MLP's (made last), the experts', the router's: the scalar product's, the
 * divide's two gradients and the sum's expanded one, gather's (fp32 zeros, scatter_add),
 * sigmoid's, the fp32 linear's input and weight gradients, the casts back to bf16 (the
 * weight's made last, run first); the input's gradients summed into the shared MLP's.
 * ERNIE-4.5-MoE's block (5.17.0 models/ernie4_5_moe/modeling_ernie4_5_moe.py, the same copy:
 * Ernie4_5_MoeSparseMoeBlock.forward 386-400, Ernie4_5_MoeTopKRouter.forward 354-370; dense
 * layers below moe_layer_start_index, 410-417) differs from GLM's in that:
 *  - the shared experts (one Ernie4_5_MoeMLP of moe_intermediate_size x moe_num_shared_experts,
 *    no gate) run first (391), their output held to the sum (397); in the backward they run
 *    last (made first);
 *  - the router (gate.weight kept fp32 by _keep_in_fp32_modules_strict, 474; under FSDP2's bf16
 *    parameters the weight arrives bf16 and .float() copies it) is F.linear in fp32 (both
 *    inputs saved), softmax in fp32 (no cast; its output saved), moe_statics' bias added (a
 *    temporary for topk), topk's values held by the router's `_` to its return, the indices
 *    saved by gather, the gathered weights and the clamped row sum saved by the divide (clamp
 *    saves the sum), the quotient cast **to bf16** (369): the experts' weight product, gather
 *    back and sum over k are bf16 (2 B, not 4), the experts' final .to(bf16) returns its input,
 *    and their backward has no casts (alloc_step_moe_experts_fwd/bwd's weight width);
 *  - the router's backward: the cast's, the divide's two, the clamp's, the sum's, then as GLM's.
 */
#include "alloc_step_internal.h"

static int shared_fwd(ctx *c, const dims *d, saved *sv);
static int glm_fwd(ctx *c, const dims *d, saved *sv);
static int glm_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg);

/* The block's output (bf16 [T, h]); the input's reference is the caller's (saved by the router's
 * linear: the caller keeps it). */
int alloc_step_moe_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, E = d->E, S = t * d->topk;
    if (d->shared_gate) return shared_fwd(c, d, sv);
    if (d->phimoe) return alloc_step_phimoe_fwd(c, d, sv);
    if (d->glm || d->ernie) return glm_fwd(c, d, sv);
    /* router */
    int rl = A(c, 2.0 * t * E);
    int c32 = A(c, 4.0 * t * E);
    int sm = A(c, 4.0 * t * E);
    F(c, c32);
    F(c, rl);
    int tv = A(c, 4.0 * S), ti = A(c, 8.0 * S);
    int rs = -1;
    if (d->norm_topk) rs = A(c, 4.0 * t);
    int pre[4] = {sm, ti, tv, rs};
    return alloc_step_moe_experts_fwd(c, d, sv, pre, rs >= 0 ? 4 : 3);
}

/* The experts from the router's outputs (sort, gather, offsets, mask, the grouped GEMMs, the
 * weighting and the gather back); the router's saved tensors pre[] kept first. */
int alloc_step_moe_experts_fwd(ctx *c, const dims *d, saved *sv, const int *pre, int npre)
{
    double t = d->T, h = d->h, E = d->E, k = d->topk, S = t * k, f = d->ef;
    double wb = d->ernie || d->phimoe ? 2.0 : 4.0; /* routing weights: ERNIE's, PhiMoE's bf16 */
    /* experts: sort, gather, offsets, mask */
    int vals = A(c, 8.0 * S), perm = A(c, 8.0 * S);
    int tok = A(c, 8.0 * S);
    int xg = A(c, 2.0 * S * h);
    int wg = A(c, wb * S);
    int ids = A(c, 4.0 * S);
    int hist = A(c, 4.0 * E), offs = A(c, 4.0 * E);
    int mask = A(c, 1.0 * S);
    int gu = A(c, 4.0 * S * f);
    int gum = A(c, 4.0 * S * f); /* masked fill, out of place: the name rebound */
    F(c, gu);
    int s = A(c, 2.0 * S * f), p = A(c, 2.0 * S * f);
    int o = A(c, 2.0 * S * h);
    int om = A(c, 2.0 * S * h);
    F(c, o);
    int pw = A(c, wb * S * h); /* bf16 x fp32 weights: fp32 (bf16 x bf16: bf16) */
    int inv = A(c, 8.0 * S), ar = A(c, 8.0 * S);
    F(c, ar);
    int og = A(c, wb * S * h);
    int sum = A(c, wb * t * h);
    int out = wb == 2.0 ? sum : A(c, 2.0 * t * h); /* .to(bf16): bf16 to bf16 returns it */
    /* saved for the backward */
    for (int i = 0; i < npre; i++) keep(c, sv, pre[i]);
    if (sv) sv->moe_at = sv->n + 1; /* the backward frees them node by node */
    keep(c, sv, perm);
    keep(c, sv, tok);
    keep(c, sv, xg);
    keep(c, sv, wg);
    keep(c, sv, offs);
    keep(c, sv, mask);
    keep(c, sv, gum);
    keep(c, sv, s);
    keep(c, sv, p);
    keep(c, sv, om);
    keep(c, sv, inv);
    /* the locals at the return */
    F(c, vals);
    F(c, ids);
    F(c, hist);
    F(c, pw);
    F(c, og);
    if (sum != out) F(c, sum);
    return out;
}

/* An index's backward (index_put_ with accumulate into zeros) over `rows` x w bytes: the zeros,
 * the sort of the indices and its temporaries; returns the gradient. */
int alloc_step_index_bwd(ctx *c, double bytes, double updates)
{
    int z = A(c, bytes);
    int k1 = A(c, 8.0 * updates), k2 = A(c, 8.0 * updates);
    F(c, k1);
    F(c, k2);
    return z;
}

static int shared_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg);

/* From the output's gradient dy (not consumed: the residual's too): returns the input's
 * gradient; the weight gradients (gate_up, down, router) appended to wgr in registration order
 * of their making. */
int alloc_step_moe_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg)
{
    double t = d->T, h = d->h, E = d->E, k = d->topk, S = t * k;
    if (d->shared_gate) return shared_bwd(c, d, dy, wgr, nwg);
    if (d->phimoe) return alloc_step_phimoe_bwd(c, d, dy, wgr, nwg);
    if (d->glm || d->ernie) return glm_bwd(c, d, dy, wgr, nwg);
    int gws;
    int gin = alloc_step_moe_experts_bwd(c, d, wgr, nwg, &gws);
    /* router: the divide's and sum's backward, topk's (zeros, scatter), softmax's, the cast's,
     * the linear's (its input gradient accumulated into gin) */
    int gd = A(c, 4.0 * S);
    F(c, gws);
    int gtk = A(c, 4.0 * t * E);
    F(c, gd);
    int gsm = A(c, 4.0 * t * E);
    F(c, gtk);
    int gl = A(c, 2.0 * t * E);
    F(c, gsm);
    int gr = A(c, 2.0 * t * h);
    wgr[(*nwg)++] = A(c, 2.0 * E * h); /* the router */
    F(c, gl);
    F(c, gr); /* accumulated into gin */
    return gin;
}

/* The experts' backward (the output's gradient is the caller's): returns the input's gradient,
 * the routing weights' in *gws; the weight gradients (down, gate_up) appended to wgr. */
int alloc_step_moe_experts_bwd(ctx *c, const dims *d, int *wgr, int *nwg, int *gws)
{
    double t = d->T, h = d->h, E = d->E, k = d->topk, S = t * k, f = d->ef;
    double wb = d->ernie || d->phimoe ? 2.0 : 4.0; /* bf16 weights: no casts, bf16 grads */
    /* what the forward saved (alloc_step_moe_experts_fwd's order), freed as the nodes that
     * saved it run (autograd releases a node's saved tensors after it ran) */
    saved *sv = c->layer_saved;
    int at = sv && sv->moe_at > 0 ? sv->moe_at - 1 : -1, h11[11];
    for (int i = 0; i < 11; i++) h11[i] = at >= 0 ? sv->h[at + i] : -1;
    int perm = h11[0], tok = h11[1], xg = h11[2], wgt = h11[3], mask = h11[5], gum = h11[6];
    int sl = h11[7], pr = h11[8], om = h11[9], inv = h11[10];
    if (sv) sv->moe_at = 0;
#define DROP(x)                                                                                    \
    do {                                                                                           \
        if (sv && (x) >= 0) alloc_step_drop_saved(c, sv, x);                                      \
    } while (0)
    int g32 = wb == 2.0 ? -1 : A(c, 4.0 * t * h); /* .to(bf16)'s backward */
    int ge = A(c, wb * S * h);  /* sum's backward, materialised by the view's */
    if (g32 >= 0) F(c, g32);
    int gpw = alloc_step_index_bwd(c, wb * S * h, S); /* og = pw[inv]'s backward */
    F(c, ge);
    DROP(inv);
    int gw32 = A(c, wb * S * h); /* grad * w */
    int gom = gw32;              /* to om's bf16 */
    if (wb != 2.0) {
        gom = A(c, 2.0 * S * h);
        F(c, gw32);
    }
    int gx = A(c, wb * S * h);   /* grad * om, summed over h */
    int gwt = A(c, wb * S);
    F(c, gx);
    F(c, gpw);
    DROP(om);
    DROP(wgt);
    int gomm = A(c, 2.0 * S * h); /* the masked fill's backward */
    F(c, gom);
    int gp = A(c, 2.0 * S * f);
    wgr[(*nwg)++] = A(c, 2.0 * E * h * f); /* down_proj */
    F(c, gomm);
    DROP(pr);
    int gs = A(c, 2.0 * S * f), gup = A(c, 2.0 * S * f);
    F(c, gp);
    DROP(sl);
    int gg = A(c, 2.0 * S * f); /* silu's backward */
    F(c, gs);
    DROP(gum); /* silu's gate and mul's up, its views */
    int ggu = A(c, 4.0 * S * f); /* chunk's backward: the cat */
    F(c, gg);
    F(c, gup);
    int ggum = A(c, 4.0 * S * f); /* the masked fill's backward */
    F(c, ggu);
    int gxg = A(c, 2.0 * S * h);
    wgr[(*nwg)++] = A(c, 4.0 * E * f * h); /* gate_up_proj */
    F(c, ggum);
    DROP(xg);
    DROP(h11[4]); /* offs, which both grouped GEMMs saved */
    int gxm = A(c, 2.0 * S * h); /* the in-place masked fill's backward */
    F(c, gxg);
    DROP(mask);
    int gin = alloc_step_index_bwd(c, 2.0 * t * h, S); /* hidden_states[perm // k]'s backward */
    F(c, gxm);
    DROP(tok);
    *gws = alloc_step_index_bwd(c, wb * S, S); /* sample_weights[perm]'s backward */
    F(c, gwt);
    DROP(perm);
#undef DROP
    return gin;
}

/* Qwen2-MoE's block (the file's header): the shared expert, the router and experts, the gate's
 * sigmoid times the shared output added in place to the experts' output, which is returned. */
static int shared_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h;
    dims ds = *d;
    ds.f = d->sf;
    ds.shared_gate = false;
    int sh = alloc_step_mlp_fwd(c, &ds, sv);
    int out = alloc_step_moe_fwd(c, &ds, sv);
    int gl = A(c, 2.0 * t); /* shared_expert_gate(x) */
    int sg = A(c, 2.0 * t); /* its sigmoid */
    F(c, gl);
    int pr = A(c, 2.0 * t * h);
    keep(c, sv, sg);
    keep(c, sv, sh);
    F(c, pr); /* added into out in place; the name dies at the return */
    return out;
}

/* Its backward from dy (not consumed): the input's gradient returned, the weight gradients
 * (shared_expert_gate; the experts', the router's; the shared MLP's down, up, gate) appended. */
static int shared_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg)
{
    double t = d->T, h = d->h;
    dims ds = *d;
    ds.f = d->sf;
    ds.shared_gate = false;
    int gfull = A(c, 2.0 * t * h); /* grad * shared_output, before sum_to_size */
    int gsh = A(c, 2.0 * t * h);   /* grad * sigmoid: the shared output's gradient */
    int gsg = A(c, 2.0 * t);
    F(c, gfull);
    int ggl = A(c, 2.0 * t);       /* sigmoid's backward */
    F(c, gsg);
    int gx = A(c, 2.0 * t * h);    /* the gate's linear: the input's gradient, then the weight's */
    wgr[(*nwg)++] = A(c, 2.0 * h);
    F(c, ggl);
    int gin = alloc_step_moe_bwd(c, &ds, dy, wgr, nwg);
    F(c, gin);                     /* accumulated into gx */
    int gm = alloc_step_mlp_bwd(c, &ds, gsh, true, wgr, nwg);
    F(c, gm);                      /* accumulated into gx */
    return gx;
}

/* GLM-4.5's and ERNIE-4.5's blocks (the file's header): the fp32 router (GLM's sigmoid, ERNIE's
 * softmax), the experts, the shared expert of width sf (ERNIE's before the router). */
static int glm_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h, E = d->E, S = t * d->topk;
    dims ds = *d;
    ds.f = d->sf;
    int sh = d->ernie ? alloc_step_mlp_fwd(c, &ds, sv) : -1; /* shared_experts(hidden_states) */
    int x32 = A(c, 4.0 * t * h); /* hidden_states.float(), saved by F.linear */
    int w32 = A(c, 4.0 * E * h); /* weight.float(), saved */
    int lg = A(c, 4.0 * t * E);  /* router_logits: the block's `_` holds it to its return */
    int sc = A(c, 4.0 * t * E);  /* sigmoid or softmax (fp32 in, no cast), saved */
    int sfc = A(c, 4.0 * t * E); /* + e_score_correction_bias (ERNIE's moe_statics) */
    int pre[7], np = 0, tws, tkv = -1, idx;
    pre[np++] = x32;
    pre[np++] = w32;
    pre[np++] = sc;
    if (d->ernie) { /* Ernie4_5_MoeTopKRouter.forward 362-369 */
        tkv = A(c, 4.0 * S); /* topk's values: the router's `_` holds them */
        idx = A(c, 8.0 * S); /* saved by gather */
        F(c, sfc);
        int tw = A(c, 4.0 * S); /* gather, saved by the divide */
        int sm = A(c, 4.0 * t), cl = A(c, 4.0 * t); /* the sum (saved by clamp), the clamp */
        int dv = A(c, 4.0 * S);
        tws = A(c, 2.0 * S); /* .to(bf16): the weights the experts take */
        F(c, dv);
        pre[np++] = idx;
        pre[np++] = tw;
        pre[np++] = sm;
        pre[np++] = cl;
    } else { /* Glm4MoeTopkRouter.forward 292-317 */
        int gv = A(c, 8.0 * t), gi = A(c, 16.0 * t); /* group topk(2) over [T, 1, E/1] */
        int gs = A(c, 4.0 * t);
        F(c, gv);
        F(c, gi);
        int g1v = A(c, 4.0 * t), g1i = A(c, 8.0 * t); /* topk over the groups */
        F(c, g1v);
        int gm = A(c, 4.0 * t);      /* zeros_like(group_scores), scatter_ in place */
        int smk = A(c, 4.0 * t * E); /* expand(...).reshape: a copy of the stride-0 view */
        int sb = A(c, 1.0 * t * E);  /* .bool() */
        int nb = A(c, 1.0 * t * E);  /* ~: saved by masked_fill while its output lives */
        F(c, sb);
        int sfm = A(c, 4.0 * t * E); /* masked_fill, out of place: the name rebound */
        F(c, sfc);
        int tv = A(c, 4.0 * S);
        idx = A(c, 8.0 * S); /* topk(k): values dropped ([1]) */
        F(c, tv);
        int tw = A(c, 4.0 * S); /* scores.gather(1, idx) */
        int den = -1;
        if (d->norm_topk) { /* sum + 1e-20; topk_weights /= denominator in place */
            int sm = A(c, 4.0 * t);
            den = A(c, 4.0 * t);
            F(c, sm);
        }
        tws = A(c, 4.0 * S); /* * routed_scaling_factor: the weights the experts take */
        /* the router's locals at its return (router_logits is returned) */
        F(c, gs);
        F(c, g1i);
        F(c, gm);
        F(c, smk);
        F(c, nb);
        F(c, sfm);
        pre[np++] = idx;
        pre[np++] = tw;
        if (den >= 0) pre[np++] = den;
    }
    if (tkv >= 0) F(c, tkv);
    int eo = alloc_step_moe_experts_fwd(c, d, sv, pre, np);
    if (!d->ernie) sh = alloc_step_mlp_fwd(c, &ds, sv); /* shared_experts(residuals) */
    int out = A(c, 2.0 * t * h);
    F(c, eo);
    F(c, sh);
    F(c, tws);
    F(c, lg);
    return out;
}

/* Its backward from dy (not consumed), autograd's node made last first: GLM's shared expert
 * first, then the experts' and the router's (GLM: the scalar product's, the divide's, the sum's;
 * ERNIE: the cast's, the divide's, the clamp's, the sum's; gather's into fp32 zeros, the
 * activation's, the fp32 linear's, the casts back to bf16), ERNIE's shared expert last; the
 * input's gradients summed into the first. Weight gradients in that order. */
static int glm_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg)
{
    double t = d->T, h = d->h, E = d->E, S = t * d->topk;
    dims ds = *d;
    ds.f = d->sf;
    int gx = d->ernie ? -1 : alloc_step_mlp_bwd(c, &ds, dy, false, wgr, nwg);
    int gws;
    int gin = alloc_step_moe_experts_bwd(c, d, wgr, nwg, &gws);
    if (gx >= 0) F(c, gin); /* accumulated into gx */
    else gx = gin;
    int g1 = A(c, 4.0 * S); /* GLM: * routed_scaling_factor; ERNIE: .to(bf16) */
    F(c, gws);
    int gtw = g1;
    if (d->norm_topk || d->ernie) { /* the divide's two gradients, the sum's expanded one added */
        int gself = A(c, 4.0 * S), tmp = A(c, 4.0 * S);
        int gden = A(c, 4.0 * t);
        F(c, tmp);
        F(c, g1);
        if (d->ernie) { /* clamp's backward */
            int gc = A(c, 4.0 * t);
            F(c, gden);
            gden = gc;
        }
        gtw = A(c, 4.0 * S);
        F(c, gself);
        F(c, gden);
    }
    int gsc = A(c, 4.0 * t * E); /* gather's backward: zeros, scatter_add */
    F(c, gtw);
    int gl = A(c, 4.0 * t * E); /* sigmoid's or softmax's */
    F(c, gsc);
    int gx32 = A(c, 4.0 * t * h), gw32 = A(c, 4.0 * E * h); /* the fp32 linear's */
    F(c, gl);
    wgr[(*nwg)++] = A(c, 2.0 * E * h); /* the weight's cast back (made last, run first) */
    F(c, gw32);
    int gxb = A(c, 2.0 * t * h);
    F(c, gx32);
    F(c, gxb); /* accumulated into gx */
    if (d->ernie) {
        int gm = alloc_step_mlp_bwd(c, &ds, dy, false, wgr, nwg);
        F(c, gm); /* accumulated into gx */
    }
    return gx;
}
