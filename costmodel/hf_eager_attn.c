/*
 * hf_eager_attn.c — transformers' eager attention under --impl hf (hf_eager_attn.h): the
 * kernels over the scores, what autograd keeps of them, and the transient peak, derived op by op
 * from the eager functions of transformers 5.17.0 and PyTorch's autograd formulas
 * (tools/autograd/derivatives.yaml); bench/realruns/eager_attn_probe.py measures them on a GPU
 * (not yet run: bench/results/hfeager21_2026-11-29 says why).
 *
 * Two variants. Llama's (models/llama/modeling_llama.py lines 204-211; Gemma 2's lines 201-214
 * add the soft-cap): matmul(q, repeat_kv(k)^T) * scaling; [/ softcap, tanh, * softcap]; + mask;
 * softmax(dtype=float32).to(bf16); dropout; matmul(., repeat_kv(v)). GPT-OSS's
 * (models/gpt_oss/modeling_gpt_oss.py lines 245-261): the same through the mask add, then
 * cat([scores, sinks], -1) (a column per head), x - x.max(-1, keepdim).values,
 * softmax(dtype=bf16), [..., :-1], dropout, matmul.
 * Saved for the backward (derivatives.yaml): mul/div by a Python scalar and add nothing;
 * _softmax its result; _to_copy nothing; tanh its result; cat only sizes; max.dim its int64
 * indices; sub nothing; matmul (bmm) both operands, here the repeated k and v copies and the
 * probabilities (bf16: the .to copy, or GPT-OSS's slice, a view of the softmax output); dropout
 * at p = 0 returns its input (aten/src/ATen/native/Dropout.cpp), at p > 0 native_dropout
 * keeps its 1-byte mask.
 */
#include "hf_eager_attn.h"

#include <string.h>
#include <strings.h>

#include "elementwise_internal.h"
#include "memory.h"

static const char *const no_sdpa_types[] = {
    "gpt_oss", "deepseek_v4", "granite_swa", "granitemoe_swa", "hy_v4", "mimo_v2_flash",
};

bool hf_eager_refuses_sdpa(const model_spec *m)
{
    for (size_t i = 0; i < sizeof no_sdpa_types / sizeof *no_sdpa_types; i++)
        if (!strcasecmp(m->hf_model_type, no_sdpa_types[i])) return true;
    return m->attention_sinks; /* SDPA has no sink term (mimo_v2_flash's comment, line 470) */
}

static bool hf_layout(const layout *l)
{
    return layout_is_pytorch(l) && layout_impl_of(l) == IMPL_HF;
}

training_attention layout_attention_of(const model_spec *m, const training_spec *t,
                                       const layout *l)
{
    if (t->attention == ATTENTION_FLASH && !t->attention_set && hf_layout(l) &&
        hf_eager_refuses_sdpa(m))
        return ATTENTION_UNFUSED;
    return t->attention;
}

bool hf_eager_flash_refused(const model_spec *m, const training_spec *t, const layout *l)
{
    return t->attention == ATTENTION_FLASH && t->attention_set && hf_layout(l) &&
           hf_eager_refuses_sdpa(m);
}

bool hf_eager_attn_applies(const model_spec *m, const training_spec *t, const layout *l)
{
    return hf_layout(l) && !m->mla && layout_attention_of(m, t, l) == ATTENTION_UNFUSED;
}

double hf_eager_keys(const model_spec *m, const training_spec *t)
{
    return t->seq_len + (m->attention_sinks ? 1.0 : 0.0);
}

/* Bytes kept per score (per head and key column of a query row). */
static double saved_per_score(const model_spec *m)
{
    double b;
    if (m->attention_sinks)
        b = 2.0 + (m->dropout ? 3.0 : 0.0); /* bf16 softmax output; dropout: output + mask */
    else
        b = 4.0 + 2.0 + (m->dropout ? 1.0 : 0.0); /* fp32 softmax output, bf16 copy (or
                                                     dropout's output) for PV; its mask */
    if (m->attn_logit_softcap > 0) b += 2.0; /* tanh's output */
    return b;
}

double hf_eager_saved_bytes_per_token(const model_spec *m, const training_spec *t,
                                      const layout *l)
{
    if (!hf_eager_attn_applies(m, t, l)) return 0;
    double a = m->heads, kv = m->kv_heads, d = m->head_dim;
    double bytes = saved_per_score(m) * a * hf_eager_keys(m, t);
    if (m->attention_sinks) bytes += 8.0 * a; /* max.dim's int64 indices, one a row */
    /* repeat_kv (expand + reshape): a copy of k and of v at every query head, which matmul
     * saves where the base counts kv heads; a view at one KV head (elementwise.h) */
    if (kv > 1 && kv < a) bytes += 2.0 * (a - kv) * 2.0 * d;
    return bytes;
}

double hf_eager_transient_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    if (!hf_eager_attn_applies(m, t, l)) return 0;
    double rows = (double)l->mbs * t->seq_len / (l->cp > 0 ? l->cp : 1) * m->heads / l->tp;
    double scores = rows * hf_eager_keys(m, t);
    /* Beyond the layer's saved bytes, two bf16 score tensors at the peak of each variant:
     * GPT-OSS's forward holds the masked scores (the variable attn_weights, until it is
     * reassigned after the softmax) and the max-subtracted logits (combined_logits, until the
     * function returns) beside the saved softmax output; its backward, slice_backward's padded
     * gradient and PV's dP, then the softmax gradient, beside the same: 4 bytes a score.
     * Llama's backward, once PV's node has released the bf16 probabilities, holds the fp32
     * softmax output, the fp32 gradient of .to(bf16) and the fp32 softmax gradient: 12 bytes
     * a score against the 6 saved, 6 more (its forward: 10 at the softmax, the masked scores,
     * the fp32 copy and the output). Dropout adds its backward's bf16 product. */
    double per_score = (m->attention_sinks ? 4.0 : 6.0) + (m->dropout ? 2.0 : 0.0);
    double transient = per_score * scores;
    /* The additive masks the model builds once per forward, bf16 [b, 1, s, s] (masking_utils.py
     * eager_mask, lines 539-605: never skipped for eager, allow_is_causal_skip=False), one per
     * kind of layer (full, sliding); held by the decoder layers' calls (under checkpointing until
     * their backward) */
    double s = t->seq_len;
    int kinds = m->sliding_window > 0 && model_sliding_layers(m) > 0 &&
                        model_sliding_layers(m) < m->layers
                    ? 2
                    : 1;
    transient += kinds * 2.0 * l->mbs * (s / (l->cp > 0 ? l->cp : 1)) * s;
    return transient;
}

void hf_eager_score_kernels(const model_spec *m, const training_spec *t, const layout *l,
                            double rows, elementwise_list *out)
{
    out->eager = true;
    out->alone = layout_gpus(l) == 1;
    out->inductor = false;
    out->n_fwd = out->n_bwd = 0;
    if (!hf_eager_attn_applies(m, t, l)) return;
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double s = t->seq_len, k = hf_eager_keys(m, t);
    double sc = rows * s, sk = rows * k; /* scores, and with the sink column */
    /* bytes read + written per element: bf16 2, fp32 4; the mask [b, 1, s, s] is read once per
     * head (broadcast), counted as a read of the scores' size */
    add(f, "eager.scale", 4 * sc, 1, vec(2, 2, 0, sc));
    add(b, "eager.scale.bwd", 4 * sc, 1, vec(2, 2, 0, sc));
    if (m->attn_logit_softcap > 0) { /* Gemma 2: / softcap, tanh, * softcap */
        add(f, "eager.softcap", 12 * sc, 1, vec(2, 2, 0, sc));
        add(b, "eager.softcap.bwd", 14 * sc, 1, vec(2, 2, 2, sc)); /* tanh_backward reads 2 */
    }
    add(f, "eager.mask_add", 6 * sc, 1, bcast(2, rows, s, false));
    if (m->attention_sinks) {
        add(f, "eager.sinks_cat", 4 * sk, 1, vec(2, 2, 0, sk));
        add(f, "eager.max", 2 * sk, 1, reduce(EW_REDUCE_ROW, 2, 2, rows, k));
        add(f, "eager.sub_max", 4 * sk, 1, bcast(2, rows, k, true));
        add(f, "eager.softmax", 4 * sk, 1, contig(EW_SOFTMAX_FWD, 2, 2, 0, sk));
        /* backward: slice_backward (zeros of the padded shape, then the copy), the softmax's,
         * sub's gradient of the max (neg, then sum_to [rows, 1]), max's (zeros, scatter) and
         * the sum of the two gradients of the cat's output */
        add(b, "eager.slice.bwd", 2 * sk + 4 * sc, 1, vec(2, 2, 0, sc));
        add(b, "eager.softmax.bwd", 6 * sk, 1, contig(EW_SOFTMAX_BWD, 2, 2, 2, sk));
        add(b, "eager.sub.bwd", 6 * sk, 1, vec(2, 2, 0, sk));
        add(b, "eager.max.bwd", 2 * sk, 1, vec(2, 0, 0, sk));
        add(b, "eager.grad_sum", 6 * sk, 1, vec(2, 2, 2, sk));
    } else {
        /* softmax(x, dtype=float32) of a bf16 x converts x first: only Half takes the fused
         * half_to_float kernel (aten/src/ATen/native/SoftMax.cpp softmax(input_, dim_, dtype)),
         * so an fp32 copy, the fp32 softmax and .to(bf16); backward the copies' casts around an
         * fp32 softmax backward */
        add(f, "eager.softmax.to_fp32", 6 * sc, 1, contig(EW_UNROLLED, 4, 2, 0, sc));
        add(f, "eager.softmax", 8 * sc, 1, contig(EW_SOFTMAX_FWD, 4, 4, 0, sc));
        add(f, "eager.to_bf16", 6 * sc, 1, vec(2, 4, 0, sc));
        add(b, "eager.to_bf16.bwd", 6 * sc, 1, contig(EW_UNROLLED, 4, 2, 0, sc));
        add(b, "eager.softmax.bwd", 12 * sc, 1, contig(EW_SOFTMAX_BWD, 4, 4, 4, sc));
        add(b, "eager.softmax.to_fp32.bwd", 6 * sc, 1, vec(2, 4, 0, sc));
    }
    if (m->dropout) { /* native_dropout: output and a 1-byte mask; backward grad * mask * scale */
        add(f, "eager.dropout", 5 * sc, 1, vec(2, 2, 0, sc));
        add(b, "eager.dropout.bwd", 5 * sc, 1, vec(2, 2, 0, sc));
    }
}
