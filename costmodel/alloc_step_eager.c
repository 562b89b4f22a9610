/*
 * alloc_step_eager.c — the allocator replay (alloc_step.c) of transformers' eager attention
 * (attn_implementation="eager", hf_eager_attn.h) in a Llama-style Hugging Face layer: the
 * explicit b x heads x s x s scores, their fp32 softmax and bf16 copy, and the s x s transients
 * of the backward. The replay's SDPA covered everything else of such a layer; the eager step ran
 * 3-5% over its reserved figure before (bench/results/cmp23_2026-11-29).
 *
 * The forward is transformers 5.17.0 models/llama/modeling_llama.py eager_attention_forward
 * (lines 191-213, the function hf_eager_attn.h cites; Qwen2/Qwen3 share it):
 *   key_states = repeat_kv(key), value_states = repeat_kv(value)    (copies under GQA)
 *   attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
 *   attn_weights = attn_weights + causal_mask
 *   attn_weights = softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
 *   attn_weights = dropout(attn_weights, p=0.0)                      (returns its input)
 *   attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
 * What each op saves and what its derivative allocates is torch's tools/autograd/
 * derivatives.yaml (bmm saves both operands; mul by a Python scalar and add save nothing;
 * _softmax saves its result; _to_copy saves nothing); softmax(x, dtype=float32) of a bf16 x
 * converts x first (aten/src/ATen/native/SoftMax.cpp), the converted copy a temporary of the
 * call. Python rebinding attn_weights frees the previous value once the right side is done.
 * Autograd frees a node's saved tensors once it has run (retain_graph False); the engine runs
 * the ready node created last first, so the scores' chain runs down to QK^T's backward before
 * repeat_kv's backward of v.
 *
 * Gemma 2 / Gemma 3 (bench/results/gemeager23_2026-11-29): transformers 5.17.0
 * models/gemma2/modeling_gemma2.py eager_attention_forward (lines 201-214, as hf_eager_attn.c
 * cites; Gemma 3's modeling_gemma3.py has the same function, its softcap None) is Llama's with
 * the scale query_pre_attn_scalar**-0.5 (the same mul by a Python scalar) and, between the scale
 * and the mask add, Gemma 2's soft-cap:
 *   attn_weights = attn_weights / softcap; torch.tanh(attn_weights); attn_weights * softcap
 * derivatives.yaml: div and mul by a wrapped scalar save only the 0-dim scalar; tanh saves its
 * result (tanh_backward(grad, result)); each backward allocates one gradient of the scores'
 * shape and dtype. The sliding layers take their own additive mask (below).
 */
#include "alloc_step_internal.h"

/* The additive mask transformers builds once per forward for eager (masking_utils.py
 * eager_mask, lines 539-605: sdpa_mask with allow_is_causal_skip=False, then torch.where(mask,
 * 0, dtype min)): the boolean causal mask [b, 1, s, s] and the bf16 result, the boolean
 * dropped when eager_mask returns. Models with sliding layers (Gemma 2/3, GPT-OSS) get a second
 * from create_sliding_window_causal_mask, built in alloc_step.c as the boolean window mask
 * (alloc_step_mask_build's temporaries) and then its bf16 copy; hf_eager_attn.c counts the
 * same two. */
int alloc_step_eager_mask(ctx *c, const dims *d)
{
    int mb = A(c, d->T * d->s);
    int mask = A(c, 2.0 * d->T * d->s);
    F(c, mb);
    return mask;
}

/* The forward from the rotated q (qe), the keys and the values (after repeat_kv) to o_proj's
 * output (returned); qe, keys and values are saved by the two matmuls, the context by o_proj. */
int alloc_step_eager_attn_fwd(ctx *c, const dims *d, int qe, int keys, int values, saved *sv)
{
    double S = d->T * d->a * d->s; /* scores: b x heads x s x s */
    int w = A(c, 2.0 * S);         /* matmul(q, k^T) */
    int sw = A(c, 2.0 * S);        /* * scaling */
    F(c, w);
    int th = -1;
    if (d->attn_softcap > 0) { /* Gemma 2: / softcap, tanh (its result saved), * softcap */
        int dv = A(c, 2.0 * S);
        F(c, sw);
        th = A(c, 2.0 * S);
        F(c, dv);
        sw = A(c, 2.0 * S);
    }
    int am = A(c, 2.0 * S);        /* + causal_mask */
    F(c, sw);
    int x32 = A(c, 4.0 * S);       /* softmax's conversion of its input */
    int p32 = A(c, 4.0 * S);       /* _softmax's result, saved */
    F(c, x32);
    int pb = A(c, 2.0 * S);        /* .to(bf16), saved by matmul(P, V) */
    F(c, am);
    int out = A(c, 2.0 * d->T * d->q); /* P @ V, [b, heads, s, d] */
    int ctxo = A(c, 2.0 * d->T * d->q); /* transpose(1, 2).contiguous(), saved by o_proj */
    F(c, out);
    if (sv) sv->eager_at = sv->n; /* the backward finds them there */
    keep(c, sv, qe);
    keep(c, sv, keys);
    keep(c, sv, values);
    keep(c, sv, p32);
    keep(c, sv, pb);
    keep(c, sv, ctxo);
    if (th >= 0) keep(c, sv, th); /* the seventh */
    return A(c, 2.0 * d->T * d->h); /* o_proj's output */
}

/* frees what a node saved, taking it off the layer's saved set (released after the layer) */
void alloc_step_drop_saved(ctx *c, saved *sv, int h)
{
    for (int i = 0; i < sv->n; i++)
        if (sv->h[i] == h) {
            sv->h[i] = sv->h[--sv->n];
            F(c, h);
            return;
        }
}

/* The backward from the context's gradient go (consumed) to the gradients of the rotated q
 * and of k and v before repeat_kv (returned in gq, gk, gv). */
void alloc_step_eager_attn_bwd(ctx *c, const dims *d, int go, int *gq, int *gk, int *gv)
{
    double t = d->T, q = d->q, kv = d->kv, S = t * d->a * d->s;
    saved *sv = c->layer_saved;
    /* the six alloc_step_eager_attn_fwd kept, where it kept them (cmp23's version read the
     * set's last six: the MLP's and the post-attention norm's, which the rest of the layer's
     * forward had appended since, so the probabilities and the softmax output stayed to the
     * layer's end) */
    int at = sv->eager_at;
    int qe = sv->h[at], keys = sv->h[at + 1], values = sv->h[at + 2];
    int p32 = sv->h[at + 3], pb = sv->h[at + 4], ctxo = sv->h[at + 5];
    int ne = d->attn_softcap > 0 ? 7 : 6, th = ne == 7 ? sv->h[at + 6] : -1;
    /* what the layer's forward saved after them: the post-attention RMSNorm's and the MLP's
     * tensors, released as their nodes ran (the MLP's backward and that norm's, before this) */
    for (int i = at + ne; i < sv->n; i++) F(c, sv->h[i]);
    sv->n = at + ne;
    bool rep = q > kv && kv > d->hd; /* repeat_kv copied k and v (one KV head: a view) */
    alloc_step_drop_saved(c, sv, ctxo);               /* o_proj's node has run */
    /* PV's bmm: grad @ V^T, then P^T @ grad */
    int gpb = A(c, 2.0 * S);
    int gvr = A(c, 2.0 * t * (rep ? q : kv));
    F(c, go);
    alloc_step_drop_saved(c, sv, pb);
    alloc_step_drop_saved(c, sv, values);
    int g32 = A(c, 4.0 * S); /* .to(bf16)'s backward: to fp32 */
    F(c, gpb);
    /* _softmax_backward_data: the structured kernel's result, then `Tensor tmp = grad * output`
     * inside softmax_backward_cuda_out (torch aten/src/ATen/native/cuda/SoftMax.cu at 000cace5;
     * oss22_2026-11-29 profiled the vectorized mul), both alive with the input gradient and the
     * saved output: 16 bytes a score */
    int gx = A(c, 4.0 * S);
    int prod = A(c, 4.0 * S);
    F(c, prod);
    F(c, g32);
    alloc_step_drop_saved(c, sv, p32);
    int gb = A(c, 2.0 * S); /* the conversion's backward: to bf16 */
    F(c, gx);
    if (th >= 0) { /* the soft-cap's (the mask add passes its gradient on): * softcap's, */
        int gm = A(c, 2.0 * S);
        F(c, gb);
        int gt = A(c, 2.0 * S); /* tanh_backward(grad, result), then the node releases tanh's */
        F(c, gm);
        alloc_step_drop_saved(c, sv, th);
        gb = A(c, 2.0 * S); /* / softcap's */
        F(c, gt);
    }
    int gs = A(c, 2.0 * S); /* the scale's (the mask add passes its gradient on) */
    F(c, gb);
    *gq = A(c, 2.0 * t * q); /* QK^T's bmm: grad @ K, then grad^T @ Q */
    int gkr = A(c, 2.0 * t * (rep ? q : kv));
    F(c, gs);
    alloc_step_drop_saved(c, sv, qe);
    alloc_step_drop_saved(c, sv, keys);
    if (rep) { /* repeat_kv's backward (expand's: the sum over the repeats), v then k */
        *gv = A(c, 2.0 * t * kv);
        F(c, gvr);
        *gk = A(c, 2.0 * t * kv);
        F(c, gkr);
    } else {
        *gv = gvr;
        *gk = gkr;
    }
}
