/*
 * alloc_step_phimoe.c — Hugging Face PhiMoE's block (Phi-3.5-MoE: input jitter, the sparsemixer
 * top-2 router, the grouped_mm experts) as the allocator replay lists it (alloc_step.h,
 * alloc_step_internal.h). Its own file because the router is a list of its own: two
 * sampled passes, each with its own masks, softmax and custom autograd Function, none of which
 * Qwen3-MoE's softmax top-k router (alloc_step_moe.c) has.
 *
 * Source: transformers 5.17.0 models/phimoe/modeling_phimoe.py as installed on the device (the
 * copy arch24's device call took, bench/results/arch24_2026-11-29; line numbers are that file's).
 * T tokens, E experts, h the width; [T, E] tensors are bf16 unless said:
 *  - PhimoeSparseMoeBlock.forward (514-525): in training with input_jitter_noise > 0 (0.01 in
 *    Phi-3.5-MoE's config; PhimoeConfig's default 0.0: then neither jitter runs) `hidden_states *= torch.empty_like(hidden_states).uniform_(...)`, in
 *    place on the post-attention LayerNorm's output: mul_'s node saves the noise, bf16 [T, h]
 *    (derivatives.yaml mul: self's gradient is grad * other; other needs none). reshape(-1, h)
 *    is a view.
 *  - PhimoeTopKRouter.forward (480-489): the same jitter again, in place on that view (a second
 *    saved noise [T, h]; autograd rebases the view's base through CopySlices), then
 *    nn.Linear's router_logits bf16 [T, E] (the linear saves the jittered input, which the
 *    caller keeps, and its weight). The block's `_` holds the logits to its return.
 *  - sparsemixer (349-469), twice (the second pass on torch.scatter(scores, selected, -inf),
 *    412-417): under no_grad max(dim) (values [T, 1], int64 indices), abs, clamp (factor, a
 *    name that lives), the difference, the quotient, `> 2 eps` (bool [T, E]); masked_fill
 *    (saves the bool mask); the Gumbel sample: empty_like, exponential_ in place, log, the
 *    difference, max(dim)'s values and int64 indices [T] (selected, unsqueezed: a view, saved by
 *    gather and by the Function); softmax (its output saved by softmax and by the Function);
 *    gather [T, 1] (saved by the Function); max(keepdim) of the gates ([T, 1] and int64);
 *    `== max_ind` (bool), rand_like (bf16 [T, 1]), `> 0.75`, logical_or, torch.add with a
 *    Python float (fp32 [T, 1]), type_as (bf16); PhimoeMultiplier.apply (247-272: saves
 *    multiplier_o, selected_experts, masked_gates; returns multiplier * mask_for_one [T, 1]);
 *    then torch.concat of the two multipliers (bf16 [T, 2], the routing weights) and of the two
 *    selections (int64 [T, 2]). The function's locals die at its return.
 *  - the experts: grouped_mm_experts_forward (alloc_step_moe_experts_fwd) with **bf16** routing
 *    weights (the concat of bf16 multipliers), as ERNIE's: the weight product, the gather back
 *    and the sum over k are bf16, the final .to(bf16) returns its input (the run records say
 *    experts_implementation grouped_mm: bench/results/ho25_2026-11-29/single.jsonl).
 * Backward, autograd's node made last first: the experts' (alloc_step_moe_experts_bwd); cat's
 * (narrow views); each PhimoeMultiplier.backward (289-305, the top-2 pass's first): grad *
 * multiplier [T, 1], .mul(-1) [T, 1], masked_gates * that [T, E], scatter_add_ in place; the
 * gradient of multiplier_o is None, so gather's, softmax's and masked_fill's nodes get an
 * undefined gradient and allocate nothing; the two [T, E] gradients of the scores summed in
 * place; the router linear's input [T, h] and weight [E, h] gradients; the input's gradients
 * summed in place; the router's jitter through CopySlices (the base's gradient, the slice's
 * clone, grad * noise copied into it), the block's jitter (grad * noise).
 */
#include "alloc_step_internal.h"

/* One sparsemixer pass on scores sc (bf16 [T, E]): what the Function and the masked_fill save
 * goes to pre[], the multiplier [T, 1] (returned) and the selection (int64 [T, 1], *sel) live on. */
static int mixer_pass(ctx *c, const dims *d, int sc, int *pre, int *np, int *sel)
{
    double t = d->T, E = d->E, te = 2.0 * t * E;
    (void)sc;
    /* no_grad: the threshold mask */
    int mv = A(c, 2.0 * t), mi = A(c, 8.0 * t);
    int ab = A(c, te), fac = A(c, te);
    F(c, ab);
    int df = A(c, te), q = A(c, te);
    F(c, df);
    int mk = A(c, 1.0 * t * E);
    F(c, q);
    F(c, mv);
    int mg = A(c, te); /* masked_fill, saves mk */
    /* the Gumbel sample */
    int e = A(c, te), lg = A(c, te);
    F(c, e);
    int sb = A(c, te);
    F(c, lg);
    int sv = A(c, 2.0 * t), si = A(c, 8.0 * t);
    F(c, sb);
    F(c, sv);
    int sm = A(c, te); /* softmax */
    F(c, mg);
    int mo = A(c, 2.0 * t); /* gather */
    /* the midpoint mask */
    int xs = A(c, 2.0 * t), xi = A(c, 8.0 * t);
    F(c, mi);
    int eq = A(c, 1.0 * t), rn = A(c, 2.0 * t), gt = A(c, 1.0 * t);
    F(c, rn);
    int lo = A(c, 1.0 * t);
    F(c, eq);
    F(c, gt);
    int ad = A(c, 4.0 * t);
    F(c, lo);
    int ty = A(c, 2.0 * t);
    F(c, ad);
    int mult = A(c, 2.0 * t); /* PhimoeMultiplier: multiplier * mask_for_one */
    F(c, ty);
    F(c, xs);
    F(c, xi);
    F(c, fac);
    pre[(*np)++] = mk;
    pre[(*np)++] = sm;
    pre[(*np)++] = mo;
    pre[(*np)++] = si;
    *sel = si;
    return mult;
}

/* The block's output (bf16 [T, h]) from the post-attention norm's output, which the caller
 * keeps (the router's linear saves it, jittered in place). */
int alloc_step_phimoe_fwd(ctx *c, const dims *d, saved *sv)
{
    double t = d->T, h = d->h, E = d->E;
    int pre[12], np = 0, sel1, sel2;
    if (d->jitter) {
        pre[np++] = A(c, 2.0 * t * h); /* the block's jitter noise, saved by mul_ */
        pre[np++] = A(c, 2.0 * t * h); /* the router's */
    }
    int rl = A(c, 2.0 * t * E);    /* router_logits: the block's `_` */
    int m1 = mixer_pass(c, d, rl, pre, &np, &sel1);
    int ms = A(c, 2.0 * t * E); /* torch.scatter(scores, selected, -inf): lives to the return */
    int m2 = mixer_pass(c, d, ms, pre, &np, &sel2);
    int rw = A(c, 4.0 * t);  /* concat: the routing weights, bf16 [T, 2] */
    int se = A(c, 16.0 * t); /* and the selected experts, int64 [T, 2] */
    F(c, m1);
    F(c, m2);
    F(c, ms);
    (void)sel1;
    (void)sel2;
    int out = alloc_step_moe_experts_fwd(c, d, sv, pre, np);
    F(c, rw);
    F(c, se);
    F(c, rl);
    return out;
}

/* Its backward from dy (not consumed): the input's gradient returned, the weight gradients
 * (down, gate_up, the router) appended to wgr. */
int alloc_step_phimoe_bwd(ctx *c, const dims *d, int dy, int *wgr, int *nwg)
{
    double t = d->T, h = d->h, E = d->E;
    (void)dy;
    int gws;
    int gin = alloc_step_moe_experts_bwd(c, d, wgr, nwg, &gws);
    int gsc = -1;
    for (int i = 0; i < 2; i++) { /* PhimoeMultiplier.backward, the top-2 pass's first */
        int a = A(c, 2.0 * t), b = A(c, 2.0 * t);
        int gs = A(c, 2.0 * t * E);
        F(c, b);
        F(c, a);
        if (gsc < 0) gsc = gs;
        else F(c, gs); /* summed in place into the first */
    }
    F(c, gws);
    int gr = A(c, 2.0 * t * h);           /* the router linear's input gradient */
    wgr[(*nwg)++] = A(c, 2.0 * E * h);    /* and its weight's */
    F(c, gsc);
    F(c, gr);                             /* summed in place into the experts' */
    if (!d->jitter) return gin;
    int base = A(c, 2.0 * t * h);         /* CopySlices: the base's gradient */
    int cl = A(c, 2.0 * t * h);           /* the slice's clone */
    int mm = A(c, 2.0 * t * h);           /* grad * the router's noise */
    F(c, cl);
    F(c, mm);                             /* copied into base's slice */
    F(c, gin);
    int gx = A(c, 2.0 * t * h);           /* grad * the block's noise */
    F(c, base);
    return gx;
}
