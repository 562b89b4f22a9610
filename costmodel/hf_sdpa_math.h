/*
 * hf_sdpa_math.h — PyTorch SDPA's math backend where transformers' attention class sends it
 * arguments no fused kernel takes (--impl hf, attention flash = SDPA): what it costs a layer in
 * time and memory.
 *
 * Why (issue 14, ho25): Falcon-7B (model_type falcon, multi_query) splits its fused QKV output
 * into q with 71 heads and k, v with one (transformers 5.17.0 models/falcon/modeling_falcon.py
 * lines 280-283) and calls F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask, ...)
 * without enable_gqa (lines 344-357), the mask always materialized (create_causal_mask with
 * allow_is_causal_skip=False, line 763-770). torch's flash, memory-efficient and cuDNN kernels
 * all require as many K/V heads as query heads unless enable_gqa is set (and flash takes no
 * mask), so SDPA dispatches to _scaled_dot_product_attention_math: a composite of eager ops
 * over the whole b x heads x s x s scores, which upcasts bf16 inputs to fp32 (torch 2.5+,
 * unless allow_fp16_bf16_reduction_math_sdp), broadcasts the one K/V head through matmul
 * (expand + reshape: a copy per query head) and runs _safe_softmax. Measured on one H200 with
 * transformers' own call (bench/realruns/falcon_sdpa_probe.py, bench/results/
 * falcon25_2026-11-29). Pricing it as a flash kernel put Falcon-7B's step at a third of the
 * real one and its no-checkpointing runs feasible where they went out of memory.
 */
#ifndef PLAN_HF_SDPA_MATH_H
#define PLAN_HF_SDPA_MATH_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"
#include "system.h"

/* The layout runs transformers' SDPA call on the math backend (impl hf, SDPA asked, a model
 * whose attention passes fewer K/V heads than query heads without enable_gqa). */
bool hf_sdpa_math_applies(const model_spec *m, const training_spec *t, const layout *l);

/* Bytes autograd keeps per token of one layer for the math path, beyond the base list of
 * memory_activations.c (q, k, v, context in bf16; the fused kernels' log-sum-exp is not
 * there): the fp32 softmax output per score, the fp32 scaled query and the fp32 copies of k
 * and v at every query head that matmul's bmm saves. */
double hf_sdpa_math_saved_bytes_per_token(const model_spec *m, const training_spec *t,
                                          const layout *l);

/* What the layer in flight holds beyond its saved bytes at the call's forward or backward peak
 * (memory.c adds it once, as `working`). */
double hf_sdpa_math_transient_bytes(const model_spec *m, const training_spec *t,
                                    const layout *l);

/* The call's forward and backward time over `rows` query rows (tokens x heads / tp) of s keys:
 * the system's measured time a score (gpu.sdpa_math_*_s_per_score); false where it has none
 * (the caller keeps its flash pricing). */
bool hf_sdpa_math_s(const system_spec *sys, const model_spec *m, const training_spec *t,
                    double rows, double *fwd_s, double *bwd_s);

#endif
