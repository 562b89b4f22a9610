/*
 * alloc_step_falcon.c — Hugging Face Falcon-7B's attention (multi_query: one K/V head, fused
 * query_key_value, SDPA's math backend), and Falcon-40B's (new_decoder_architecture: k and v
 * copied to every query head, the masked cuDNN attention; below the first) as the allocator
 * replay lists it (alloc_step.h,
 * alloc_step_internal.h); the rest of its layer is alloc_step_forms.c's parallel block with one
 * nn.LayerNorm and the plain MLP (dense_h_to_4h, GELU, dense_4h_to_h). Its own file because the
 * math backend's fp32 s x s tensors are a list no other attention of the replay has
 * (bench/results/replay26_2026-11-29).
 *
 * Falcon's side: transformers 5.17.0 models/falcon/modeling_falcon.py as installed on the
 * device (the copy arch24's device call took; line numbers are that file's), FalconAttention:
 *  - fused_qkv = query_key_value(x), bf16 [T, (a + 2) d] (FalconLinear: x @ W^T, which saves x);
 *    the name lives to the return;
 *  - _split_heads, multi_query (280-283): q = fused[..., :-2, :] (a view), k = fused[..., [-2],
 *    :] and v = fused[..., [-1], :]: advanced indexing, copies [b, s, 1, d] (index saves only
 *    its indices); transpose and reshape to the same shape are views;
 *  - apply_rotary_pos_emb (Llama's rotate_half RoPE, lines 69-99) of q and k: fresh tensors
 *    (the products save cos and sin, not q or k); k's copy dies when key_layer is rebound;
 *  - SDPA(q, k, v, attn_mask=the boolean causal mask, which create_causal_mask always builds
 *    with allow_is_causal_skip=False, 763-770) without enable_gqa: only the math backend takes
 *    it (falcon25's probe, hf_sdpa_math.h);
 *  - attn_output.view, permute(0, 2, 1, 3), reshape: a copy [T, a d], which dense saves.
 * torch's side (torch 2.11; aten/src/ATen/native/transformers/attention.cpp): the top-level
 * scaled_dot_product_attention converts the boolean mask (convert_boolean_attn_mask:
 * zeros_like in q's dtype, bf16 [b, 1, s, s] (the expanded boolean is not dense, so zeros_like
 * is full size), logical_not's bool temporary, masked_fill_ in place; a local of the call); then
 * _scaled_dot_product_attention_math, the composite (its C++ locals live to its return):
 * q, k, v .to(float) (allowFP16BF16ReductionMathSDP false), query = q32 * sqrt(scale),
 * key.transpose(-2, -1) * sqrt(scale), matmul (expand + reshape to [b a, s, d] / [b a, d, s]:
 * a copy of q (its layout follows RoPE's q * cos, [b, s, a, d]) and of the broadcast k once
 * b > 1; at b = 1 both fold into views), bmm to fp32 [b a, s, s], the mask added in place,
 * _safe_softmax (softmax's fp32 output, isneginf's bool, the row reduction; the output saved),
 * matmul(attn, v) (v's broadcast copy once b > 1), bmm's fp32 [b a, s, d], .to(bf16), and
 * attn.to(bf16), a bf16 copy of the scores the tuple returns and the caller drops.
 * derivatives.yaml: bmm saves both operands, _safe_softmax its result, _to_copy and the scalar
 * products nothing. falcon25 measured the saved set on one H200 (4.375 bytes a score at b 2,
 * s 2048; 4.064 at b 1, s 4096) and the peaks (forward 5.0-5.2 bytes a score above what it
 * keeps: the pre-softmax scores and isneginf's bool; backward 11.9-12.0 above its start).
 * Backward, the ready node made last first (alloc_step_eager.c's rules; a node's saved tensors
 * freed once it ran): dense's; .to(bf16)'s to fp32; the output's reshape (a copy once b > 1);
 * PV's bmm (grad @ V^T, P^T @ grad); v's expand (a sum over the heads) and cast; the softmax's
 * (its result, `grad * output` inside the kernel: 12 bytes a score with the incoming
 * gradient); QK^T's bmm (grad @ K, grad^T @ Q); k's expand, scale and cast; q's scale and cast;
 * each RoPE's; then the split's: v's and k's index backward (zeros of fused_qkv's shape,
 * index_put_ with accumulate) and q's slice backward (zeros, the copy), summed in place;
 * query_key_value's input and weight gradients.
 */
#include "alloc_step_internal.h"

enum { FALCON_SAVED = 6 }; /* n1, then the math path's q, k, the probabilities, v; dense's input */

/* From the input norm's output n1 (kept here) to dense's output. */
int alloc_step_falcon_attn_fwd(ctx *c, const dims *d, int n1, saved *sv)
{
    double t = d->T, q = d->q, hd = d->hd, b = d->T / d->s, S = t * d->a * d->s;
    bool copies = b > 1; /* matmul's expand + reshape copies q, k, v (one sequence: views) */
    int fused = A(c, 2.0 * t * (q + 2.0 * hd));
    int kx = A(c, 2.0 * t * hd), vx = A(c, 2.0 * t * hd); /* the index copies */
    int qe = alloc_step_rope_fwd(c, d, q);
    int ke = alloc_step_rope_fwd(c, d, hd);
    F(c, kx);
    /* scaled_dot_product_attention: the boolean mask's additive bf16 copy */
    int am = A(c, 2.0 * t * d->s), nm = A(c, 1.0 * t * d->s);
    F(c, nm);
    /* _scaled_dot_product_attention_math */
    int q32 = A(c, 4.0 * t * q), k32 = A(c, 4.0 * t * hd), v32 = A(c, 4.0 * t * hd);
    int qs = A(c, 4.0 * t * q);  /* q32 * sqrt(scale) */
    int kt = A(c, 4.0 * t * hd); /* k^T * sqrt(scale) */
    int qm = copies ? A(c, 4.0 * t * q) : qs;
    int km = copies ? A(c, 4.0 * t * q) : kt;
    int sc = A(c, 4.0 * S);      /* bmm: the scores; the mask added in place */
    int p = A(c, 4.0 * S);       /* _safe_softmax's output, saved */
    int ni = A(c, 1.0 * S), nr = A(c, 1.0 * S / d->s);
    F(c, ni);
    F(c, nr);
    F(c, sc);
    int vm = copies ? A(c, 4.0 * t * q) : v32;
    int o32 = A(c, 4.0 * t * q);
    int ob = A(c, 2.0 * t * q);  /* .to(bf16): SDPA's output */
    F(c, o32);
    int pb = A(c, 2.0 * S);      /* attn.to(bf16), dropped with the tuple */
    F(c, pb);
    F(c, q32);
    F(c, k32);
    if (vm != v32) F(c, v32);
    if (qm != qs) F(c, qs);
    if (km != kt) F(c, kt);
    F(c, am);
    int cc = A(c, 2.0 * t * q);  /* view, permute, reshape: dense's input */
    F(c, ob);
    int o = A(c, 2.0 * t * d->h);
    F(c, fused);
    F(c, qe);
    F(c, ke);
    F(c, vx);
    if (sv) sv->eager_at = sv->n; /* where the backward finds them (never eager here) */
    keep(c, sv, n1);
    keep(c, sv, qm);
    keep(c, sv, km);
    keep(c, sv, p);
    keep(c, sv, vm);
    keep(c, sv, cc);
    return o;
}

/* The RoPE's backward of a [T, w] gradient g (consumed), as alloc_step_attn_bwd's */
static int rope_bwd(ctx *c, const dims *d, double w, int g)
{
    int a1 = A(c, 2.0 * d->T * w), a2 = A(c, 2.0 * d->T * w);
    F(c, g);
    int gx = A(c, 2.0 * d->T * w);
    F(c, a1);
    F(c, a2);
    return gx;
}

/* The split's backward from the gradients of v's and k's index copies and of q's slice (each
 * consumed): each into zeros of fused_qkv's shape [T, q + 2 kv] (index_put_ with accumulate,
 * the slice's copy), summed in place into the first; then query_key_value's input and weight
 * gradients. Returns n1's. */
static int split_bwd(ctx *c, const dims *d, int gv, int gk, int gq, int *wg, int *nwg)
{
    double t = d->T, fw = 2.0 * t * (d->q + 2.0 * d->kv);
    int gf = alloc_step_index_bwd(c, fw, t);
    F(c, gv);
    int g2 = alloc_step_index_bwd(c, fw, t);
    F(c, gk);
    F(c, g2);
    int g3 = A(c, fw);
    F(c, gq);
    F(c, g3);
    int gn1 = A(c, 2.0 * t * d->h);
    wg[(*nwg)++] = A(c, 2.0 * d->h * (d->q + 2.0 * d->kv));
    F(c, gf);
    return gn1;
}

/* From dense's input gradient go (consumed) to n1's. */
int alloc_step_falcon_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg)
{
    double t = d->T, q = d->q, hd = d->hd, b = d->T / d->s, S = t * d->a * d->s;
    bool copies = b > 1;
    saved *sv = c->layer_saved;
    int at = sv->eager_at;
    int qm = sv->h[at + 1], km = sv->h[at + 2], p = sv->h[at + 3], vm = sv->h[at + 4];
    int cc = sv->h[at + 5];
    /* the MLP's saved tensors, after these: its nodes ran first (made last) */
    for (int i = at + FALCON_SAVED; i < sv->n; i++) F(c, sv->h[i]);
    sv->n = at + FALCON_SAVED;
    alloc_step_drop_saved(c, sv, cc); /* dense's node has run */
    int g32 = A(c, 4.0 * t * q);      /* .to(bf16)'s backward */
    F(c, go);
    int gr = copies ? A(c, 4.0 * t * q) : -1; /* the output's reshape to [b a, s, d] */
    int gp = A(c, 4.0 * S);           /* PV's bmm: grad @ V^T */
    int gvm = A(c, 4.0 * t * q);      /* P^T @ grad */
    F(c, gr);
    F(c, g32);
    alloc_step_drop_saved(c, sv, vm);
    int gv32 = A(c, 4.0 * t * hd);    /* v's expand: the sum over the heads */
    F(c, gvm);
    int gv = A(c, 2.0 * t * hd);      /* its cast */
    F(c, gv32);
    int gx = A(c, 4.0 * S), prod = A(c, 4.0 * S); /* _softmax_backward_data */
    F(c, prod);
    F(c, gp);
    alloc_step_drop_saved(c, sv, p);
    int gqm = A(c, 4.0 * t * q), gkm = A(c, 4.0 * t * q); /* QK^T's bmm */
    F(c, gx);
    alloc_step_drop_saved(c, sv, qm);
    alloc_step_drop_saved(c, sv, km);
    int gk32 = A(c, 4.0 * t * hd);    /* k's expand: the sum over the heads */
    F(c, gkm);
    int gks = A(c, 4.0 * t * hd);     /* * sqrt(scale) */
    F(c, gk32);
    int gk = A(c, 2.0 * t * hd);      /* the cast */
    F(c, gks);
    int gqs = A(c, 4.0 * t * q);      /* q's * sqrt(scale) */
    F(c, gqm);
    int gq = A(c, 2.0 * t * q);       /* the cast */
    F(c, gqs);
    gk = rope_bwd(c, d, hd, gk);
    gq = rope_bwd(c, d, q, gq);
    return split_bwd(c, d, gv, gk, gq, wg, nwg);
}

/*
 * Falcon-40B (new_decoder_architecture, g = num_kv_heads groups of a / g query heads) under
 * SDPA, the same file (bench/results/falcon27_2026-11-29/falcon40b_source.txt, lines of
 * modeling_falcon.py 5.17.0), kv = g d:
 *  - fused_qkv [T, q + 2 kv] (323), held by the name to the return; _split_heads (265-275): q
 *    a slice (a view), k and v `qkv[:, :, :, [-2]]`, `[[-1]]`: index copies [T, kv];
 *    broadcast_to views; flatten(2, 3) of the slice and of the broadcasts: three copies
 *    [T, q], made in the list's order; the list rebinds the names, so the index copies die
 *    at the return (the index and expand nodes save no tensor);
 *  - transpose + reshape to the same shape (330-332): views; apply_rotary_pos_emb (336) of q
 *    and of the a-head k: fresh tensors, the flatten copies dying as the names are rebound;
 *  - SDPA(q, k, v, attn_mask=the boolean mask, is_causal False; 349-357): the cuDNN attention
 *    with the additive bf16 copy of the mask (alloc_step_mask_sdpa), as alloc_step.c's masked
 *    layers (falcon27 measured cuDNN's kernels on this call); it saves q, k, v, the output,
 *    the fp32 log-sum-exp [T, a] and the mask copy; the output matches q's [b, s, a, d]
 *    layout, so view, permute and reshape (367-369) are views and dense saves the output.
 * Backward (the node made last first): dense's (the caller's); SDPA's: the q, k, v gradients
 * [T, q], its saved set freed; k's RoPE (made after q's), q's; then the copies' backward
 * (views), v's and k's expand (a sum over the a / g heads of a group: [T, kv]), their index
 * backward (zeros of fused_qkv's shape, index_put_ with accumulate), q's slice backward
 * (zeros, the copy), summed in place into the first; query_key_value's input and weight.
 */
enum { FALCON_NDA_SAVED = 7 }; /* n1, q, k, v, the output, the log-sum-exp, the mask copy */

int alloc_step_falcon_nda_attn_fwd(ctx *c, const dims *d, int n1, saved *sv)
{
    double t = d->T, q = d->q, kv = d->kv;
    int fused = A(c, 2.0 * t * (q + 2.0 * kv));
    int kx = A(c, 2.0 * t * kv), vx = A(c, 2.0 * t * kv); /* the index copies */
    int qc = A(c, 2.0 * t * q), kc = A(c, 2.0 * t * q), vc = A(c, 2.0 * t * q);
    F(c, kx);
    F(c, vx);
    int qe = alloc_step_rope_fwd(c, d, q);
    int ke = alloc_step_rope_fwd(c, d, q);
    F(c, qc);
    F(c, kc);
    int mb = alloc_step_mask_sdpa(c, d);
    int out = A(c, 2.0 * t * q), lse = A(c, 4.0 * t * d->a);
    int o = A(c, 2.0 * t * d->h);
    F(c, fused);
    if (sv) sv->eager_at = sv->n; /* where the backward finds them */
    keep(c, sv, n1);
    keep(c, sv, qe);
    keep(c, sv, ke);
    keep(c, sv, vc);
    keep(c, sv, out);
    keep(c, sv, lse);
    keep(c, sv, mb);
    return o;
}

int alloc_step_falcon_nda_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg)
{
    double t = d->T, q = d->q, kv = d->kv;
    saved *sv = c->layer_saved;
    int at = sv->eager_at;
    /* the MLP's saved tensors, after these: its nodes ran first (made last) */
    for (int i = at + FALCON_NDA_SAVED; i < sv->n; i++) F(c, sv->h[i]);
    sv->n = at + FALCON_NDA_SAVED;
    int gq = A(c, 2.0 * t * q), gk = A(c, 2.0 * t * q), gv = A(c, 2.0 * t * q);
    F(c, go);
    for (int i = FALCON_NDA_SAVED - 1; i >= 1; i--) alloc_step_drop_saved(c, sv, sv->h[at + i]);
    gk = rope_bwd(c, d, q, gk);
    gq = rope_bwd(c, d, q, gq);
    int gvs = A(c, 2.0 * t * kv); /* v's expand: the sum over a group's heads */
    F(c, gv);
    int gks = A(c, 2.0 * t * kv);
    F(c, gk);
    return split_bwd(c, d, gvs, gks, gq, wg, nwg);
}
