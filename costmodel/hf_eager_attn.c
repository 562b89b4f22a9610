/*
 * hf_eager_attn.c — transformers' eager attention under --impl hf (hf_eager_attn.h): the
 * kernels over the scores, what autograd keeps of them, and the transient peak, derived op by op
 * from the eager functions of transformers 5.17.0 and PyTorch's autograd formulas
 * (tools/autograd/derivatives.yaml), and priced at the rates of the kernels PyTorch launches
 * for them, measured at the scores' shapes on one H200 (bench/realruns/odd_stride_probe.py,
 * eager_attn_probe.py, eager_attn_attribution.py; bench/results/oss22_2026-11-29): GPT-OSS's
 * sink column makes every view over the scores rows of s + 1 (odd), which sends P @ V to
 * cuBLAS's 2-byte-aligned GEMMs and the copies and scales of slices to the offset path.
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

#include <math.h>
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
    /* Beyond the layer's saved bytes, GPT-OSS's peak is in its backward: three bf16 s x (s + 1)
     * gradients beside the saved softmax output, 6 bytes a score. Measured on one H200
     * (bench/realruns/odd_stride_probe.py and memory_peak_owners.py, bench/results/
     * oss22_2026-11-29): the allocator trace of transformers' own eager_attention_forward
     * (b 2, s 4096) peaks 3.03 score tensors above its start in the forward (the masked scores
     * of line 249, the cat of 252 and the max-subtracted logits of 257, before the softmax's
     * output exists: two beyond the one it keeps) and 4.05 in the backward (the softmax output
     * of line 258 and three s x (s + 1) tensors the autograd engine allocated: three beyond);
     * in a GPT-OSS-20B L2 s8k b1 FSDP2 step the first block's backward holds both layers'
     * softmax outputs and three such gradients (80.47 GiB, the step's peak). hfeager21 had
     * two (4 bytes a score): the L2 s8k b2 run went out of memory allocating a 16 GiB one.
     * Llama's backward peaks inside _softmax_backward_data, after PV's node has released the
     * bf16 probabilities: the saved fp32 softmax output, the fp32 gradient .to(bf16)'s backward
     * made (derivatives.yaml _to_copy), the structured kernel's fp32 result and the fp32
     * `Tensor tmp = grad * output` of softmax_backward_cuda_out (torch aten/src/ATen/native/
     * cuda/SoftMax.cu at 000cace5 and e9865f53): 16 bytes a score, 10 beyond the 6 saved (its
     * forward: 10 at the softmax, the masked scores, the fp32 copy and the output). Measured
     * under full checkpointing, where this is the step's peak (bench/results/eagerck23_
     * 2026-11-29: the allocator replay with this list is within 0.7 GiB of both runs). Dropout
     * adds its backward's bf16 product. */
    double per_score = (m->attention_sinks ? 6.0 : 10.0) + (m->dropout ? 2.0 : 0.0);
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

/* A 2-byte [rows, w] slice whose rows lie `so` (output) and `sa` (input) elements apart: the
 * copy into the cat's output or slice_backward's padded gradient, the scale of the cat
 * gradient's slice (elementwise_kernel<128, 4>: a strided operand) */
static ew_access strided(double rows, double w, double so, double sa)
{
    ew_access a = {.pattern = EW_OFFSETS, .esize = {2, 2, 0}, .n = {1, L(rows), L(w)}};
    a.stride[0][1] = L(so), a.stride[0][2] = 1;
    a.stride[1][1] = L(sa), a.stride[1][2] = 1;
    return a;
}

/* The softmax over [rows, w] contiguous rows (eb: the backward's second input) */
static ew_access rows_of(ew_pattern p, int e, int eb, double rows, double w)
{
    ew_access a = {.pattern = p, .esize = {e, e, eb}, .n = {1, L(rows), L(w)}};
    for (int k = 0; k < 3; k++)
        if (a.esize[k]) a.stride[k][1] = L(w), a.stride[k][2] = 1;
    return a;
}

/* A row of w elements of e bytes starts 16-byte aligned on every row: the condition for
 * 16-byte vector loads of each row (PyTorch's vectorized paths check the pointer they load
 * from, at::native::memory::can_vectorize_up_to; cuBLASLt picks its kernels by the alignment
 * of the leading dimension's bytes). GPT-OSS's rows of s + 1 bf16 columns are 2-byte aligned. */
static bool rows_aligned_16(double w, int e) { return fmod(w * e, 16.0) == 0; }

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
    double heads = (double)m->heads / l->tp;
    /* bytes read + written per element: bf16 2, fp32 4; each operand once (the mask
     * [b, 1, s, s] once, not once per head: bench/realruns/odd_stride_probe.py's convention,
     * with which gpu.score_* are measured) */
    add(f, "eager.scale", 4 * sc, 1, vec(2, 2, 0, sc));
    if (m->attn_logit_softcap > 0) { /* Gemma 2: / softcap, tanh, * softcap */
        add(f, "eager.softcap", 12 * sc, 1, vec(2, 2, 0, sc));
        add(b, "eager.softcap.bwd", 14 * sc, 1, vec(2, 2, 2, sc)); /* tanh_backward reads 2 */
    }
    add(f, "eager.mask_add", 4 * sc + 2 * sc / heads, 1, bcast(2, rows, s, false));
    if (m->attention_sinks) {
        /* torch.cat with the expanded sinks (Shape.cu cat_out_cuda): CatArrayBatchedCopy while
         * the output is 32-bit indexable, else a copy_ of each input into its narrow of the
         * output; priced apart by name (hf_eager_kernel_s) */
        add(f, HF_EAGER_CAT, 2 * sc + 2 * sk, 1, strided(rows, s, k, s));
        add(f, "eager.max", 2 * sk, 1, reduce(EW_REDUCE_ROW, 2, 2, rows, k));
        add(f, "eager.sub_max", 4 * sk, 1, bcast(2, rows, k, true));
        add(f, "eager.softmax", 4 * sk, 1, rows_of(EW_SOFTMAX_FWD, 2, 0, rows, k));
        /* backward: slice_backward (zeros of the padded shape, then the copy into its slice),
         * the softmax's, sub's gradient of the max (neg, then sum_to [rows, 1]), max's (zeros,
         * scatter) and the sum of the two gradients of the cat's output; the scale's gradient
         * reads the cat gradient's slice (rows of s + 1) */
        add(b, "eager.slice.bwd.zeros", 2 * sk, 1, vec(2, 0, 0, sk));
        add(b, "eager.slice.bwd.copy", 4 * sc, 1, strided(rows, s, k, s));
        /* _softmax_backward_data: a vectorized grad * output, then the backward kernel (the
         * profiler's op tree, bench/results/oss22_2026-11-29 device/attribution.jsonl) */
        add(b, "eager.softmax.bwd.mul", 6 * sk, 1, vec(2, 2, 2, sk));
        add(b, "eager.softmax.bwd", 6 * sk, 1, rows_of(EW_SOFTMAX_BWD, 2, 2, rows, k));
        add(b, "eager.sub.bwd.neg", 4 * sk, 1, vec(2, 2, 0, sk));
        add(b, "eager.sub.bwd.sum", 2 * sk, 1, reduce(EW_REDUCE_ROW, 2, 2, rows, k));
        add(b, "eager.max.bwd", 2 * sk, 1, vec(2, 0, 0, sk));
        add(b, "eager.grad_sum", 6 * sk, 1, vec(2, 2, 2, sk));
        add(b, "eager.scale.bwd", 4 * sc, 1, strided(rows, s, s, k));
    } else {
        add(b, "eager.scale.bwd", 4 * sc, 1, vec(2, 2, 0, sc));
        /* softmax(x, dtype=float32) of a bf16 x converts x first: only Half takes the fused
         * half_to_float kernel (aten/src/ATen/native/SoftMax.cpp softmax(input_, dim_, dtype)),
         * so an fp32 copy, the fp32 softmax and .to(bf16); backward the copies' casts around an
         * fp32 softmax backward */
        add(f, "eager.softmax.to_fp32", 6 * sc, 1, contig(EW_UNROLLED, 4, 2, 0, sc));
        add(f, "eager.softmax", 8 * sc, 1, rows_of(EW_SOFTMAX_FWD, 4, 0, rows, s));
        add(f, "eager.to_bf16", 6 * sc, 1, vec(2, 4, 0, sc));
        add(b, "eager.to_bf16.bwd", 6 * sc, 1, contig(EW_UNROLLED, 4, 2, 0, sc));
        add(b, "eager.softmax.bwd.mul", 12 * sc, 1, vec(4, 4, 4, sc));
        add(b, "eager.softmax.bwd", 12 * sc, 1, rows_of(EW_SOFTMAX_BWD, 4, 4, rows, s));
        add(b, "eager.softmax.to_fp32.bwd", 6 * sc, 1, vec(2, 4, 0, sc));
    }
    if (m->dropout) { /* native_dropout: output and a 1-byte mask; backward grad * mask * scale */
        add(f, "eager.dropout", 5 * sc, 1, vec(2, 2, 0, sc));
        add(b, "eager.dropout.bwd", 5 * sc, 1, vec(2, 2, 0, sc));
    }
}

double hf_eager_kernel_s(const system_spec *sys, const elementwise_list *e,
                         const elementwise_kernel *k)
{
    const ew_access *a = &k->access;
    double eff = 0;
    if (!strcmp(k->name, HF_EAGER_CAT)) {
        /* canUse32BitIndexMath(result): the output's highest offset fits an int32 */
        double out_elems = (double)a->n[1] * a->stride[0][1];
        eff = out_elems <= 2147483647.0 ? sys->score_cat_array_efficiency
                                        : sys->score_offsets_efficiency;
    } else {
        switch (a->pattern) {
        case EW_VECTORIZED: eff = sys->score_vectorized_efficiency; break;
        case EW_OFFSETS: eff = sys->score_offsets_efficiency; break;
        case EW_UNROLLED: eff = sys->score_unrolled_efficiency; break;
        case EW_REDUCE_ROW: eff = sys->score_reduce_row_efficiency; break;
        case EW_SOFTMAX_FWD: /* measured: bf16 over rows of s + 1, fp32 over rows of s */
        case EW_SOFTMAX_BWD: {
            bool fwd = a->pattern == EW_SOFTMAX_FWD;
            bool aligned = rows_aligned_16((double)a->n[2], a->esize[1]);
            if (a->esize[1] == 2 && !aligned)
                eff = fwd ? sys->score_softmax_unaligned_fwd_efficiency
                          : sys->score_softmax_unaligned_bwd_efficiency;
            else if (a->esize[1] == 4 && aligned)
                eff = fwd ? sys->score_softmax_fp32_fwd_efficiency
                          : sys->score_softmax_fp32_bwd_efficiency;
            break;
        }
        default: break;
        }
    }
    if (eff <= 0) return -1.0;
    /* measured alone on one GPU; beside NCCL and FSDP2's copies the eager kernels' measured
     * ratio (gpu.eager_elementwise_efficiency over its _alone figure) */
    if (!e->alone && sys->eager_elementwise_efficiency_alone > 0)
        eff *= sys->eager_elementwise_efficiency / sys->eager_elementwise_efficiency_alone;
    return k->bytes / (sys->hbm_bandwidth_bytes_per_s * eff) + sys->eager_kernel_gap_s;
}

void hf_eager_pv_gemm_s(const system_spec *sys, const model_spec *m, const training_spec *t,
                        double rows, double vd, double aligned_s, double *fwd_s, double *dv_s)
{
    *fwd_s = *dv_s = aligned_s;
    /* P @ V (modeling_gpt_oss.py line 261) reads the probabilities as probs[..., :-1] (line
     * 259): a slice whose rows are keys elements apart, the GEMM's leading dimension. An odd
     * one leaves cuBLAS the 2-byte-aligned kernels (cutlass_75 ..._align1: measured, gpu.
     * gemm_align1_*); dV = P^T @ dO reads the same slice transposed. Leading dimensions even
     * but not a multiple of 8 run between (measured at one shape, not priced). */
    double keys = hf_eager_keys(m, t);
    if (fmod(keys, 2.0) == 0) return;
    double flops = 2.0 * rows * vd * t->seq_len;
    if (sys->gemm_align1_nn_flops_per_s > 0)
        *fwd_s = flops / sys->gemm_align1_nn_flops_per_s + sys->gemm_overhead_s;
    if (sys->gemm_align1_tn_flops_per_s > 0)
        *dv_s = flops / sys->gemm_align1_tn_flops_per_s + sys->gemm_overhead_s;
}
