/*
 * hf_sdpa_math.c — SDPA's math backend under transformers' Falcon call (hf_sdpa_math.h): what
 * autograd keeps, the transient peak and the time, from torch's composite
 * (aten/src/ATen/native/transformers/attention.cpp _scaled_dot_product_attention_math: q, k, v
 * upcast to fp32 where half, q and k scaled by sqrt(scale), matmul(q, k^T), the additive copy
 * of the boolean mask added in place, _safe_softmax, matmul(attn, v), .to(bf16)) and its
 * autograd formulas (tools/autograd/derivatives.yaml: bmm saves both operands, _safe_softmax
 * its result), checked op by op on one H200 with torch 2.11.0+cu130 and transformers 5.17.0
 * (bench/realruns/falcon_sdpa_probe.py; bench/results/falcon25_2026-11-29):
 *  - only MATH accepts Falcon-7B's arguments (flash, memory-efficient and cuDNN: "No available
 *    kernel"), and the kernels are fp32 FFMA GEMMs (sm80_xmma_gemm_f32f32..._ffma: matmul's
 *    TF32 is off by default), fp32 softmax forward/backward, isneginf and an all-reduce
 *    (_safe_softmax), fp32 adds and bf16 copies;
 *  - autograd keeps 4 bytes a score (the fp32 softmax output, [b x 71, s, s]) and per token the
 *    fp32 scaled query (4 a d) and fp32 k and v broadcast to every query head (4 a d each:
 *    matmul's expand + reshape over the batch dims (b, heads) is a copy once b > 1; at b = 1
 *    the two dims fold into one of stride 0, a view of the fp32 k, v of 4 d each): 4.375
 *    bytes a score at b 2 and 4, s 2048, and 4.064 at b 1, s 4096, as counted here;
 *    the bf16 q, k, v the flash kernels would have saved are not kept (the upcast saves
 *    nothing; RoPE's products save cos and sin);
 *  - the backward peaks 11.88-12.0 bytes a score above its start (the fp32 gradient of the
 *    probabilities from the PV bmm's backward, _softmax_backward_data's result and the
 *    kernel's `grad * output` temporary: 12), the forward 5.0-5.2 above what it keeps.
 */
#include "hf_sdpa_math.h"

#include "hf_eager_attn.h"

bool hf_sdpa_math_applies(const model_spec *m, const training_spec *t, const layout *l)
{
    return m->sdpa_kv_broadcast && !m->mla && layout_is_pytorch(l) &&
           layout_impl_of(l) == IMPL_HF && layout_attention_of(m, t, l) == ATTENTION_FLASH;
}

double hf_sdpa_math_saved_bytes_per_token(const model_spec *m, const training_spec *t,
                                          const layout *l)
{
    if (!hf_sdpa_math_applies(m, t, l)) return 0;
    double a = (double)m->heads / l->tp, kv = m->kv_heads, d = m->head_dim;
    if (kv > a) kv = a;
    /* k and v at every query head: a copy when the micro-batch holds more than one sequence */
    double rep = l->mbs > 1 ? a : kv;
    double kept = 4.0 * a * t->seq_len + 4.0 * a * d + 2.0 * 4.0 * rep * d;
    /* the base list's bf16 q, k, v (memory_activations.c) are not kept on this path */
    return kept - 2.0 * (a * d + 2.0 * kv * d);
}

/* the backward's fp32 score tensors beyond the saved softmax output (above) */
#define MATH_BWD_TRANSIENT_BYTES_PER_SCORE 12.0

double hf_sdpa_math_transient_bytes(const model_spec *m, const training_spec *t,
                                    const layout *l)
{
    if (!hf_sdpa_math_applies(m, t, l)) return 0;
    double s = t->seq_len, cp = l->cp > 0 ? l->cp : 1;
    double scores = (double)l->mbs * (s / cp) * s * m->heads / l->tp;
    return MATH_BWD_TRANSIENT_BYTES_PER_SCORE * scores;
}

bool hf_sdpa_math_s(const system_spec *sys, const model_spec *m, const training_spec *t,
                    double rows, double *fwd_s, double *bwd_s)
{
    (void)m;
    if (sys->sdpa_math_fwd_s_per_score <= 0 || sys->sdpa_math_bwd_s_per_score <= 0) return false;
    double scores = rows * t->seq_len; /* the whole s x s: the mask is added, not skipped */
    *fwd_s = scores * sys->sdpa_math_fwd_s_per_score;
    *bwd_s = scores * sys->sdpa_math_bwd_s_per_score;
    return true;
}
