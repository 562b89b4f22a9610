/*
 * hf_ernie_rope.h — ERNIE-4.5's rotary embedding under transformers (impl hf, model_type
 * ernie4_5 and ernie4_5_moe) as eager kernels of a layer: it rotates q and k in fp32 with
 * GLM-style interleaved halves, not in bf16 with Llama's rotate_half.
 *
 * Why (issue 14, ho27/ho27b): ERNIE-4.5-0.3B whole at seq 2048 mbs 16 was priced 6.6% fast and
 * ERNIE-4.5-21B-A3B cut to 4 layers on two ranks 10.6% fast, while plan priced their RoPE as
 * Llama's (elementwise.c rope: 20 bytes an element of q or k forward, 34 backward).
 * transformers' models/ernie4_5/modeling_ernie4_5.py (huggingface/transformers at 9243e99d, the
 * 5.x file; ernie4_5_moe's is the same copy) apply_rotary_pos_emb:
 *     cos = cos[..., : d // 2].repeat_interleave(2, dim=-1)          (and sin)
 *     q_embed = (q.float() * cos) + (rotate_half(q).float() * sin)   (and k)
 *     return q_embed.to(original_dtype), ...
 * with rotate_half(x) = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2) and the
 * tables fp32 (Ernie4_5RotaryEmbedding.forward: "keeping it in full precision"). Per element of
 * q (or k), bf16 2 and fp32 4 bytes, read plus written (the [1, s, d] tables left out, as
 * elementwise.c leaves Llama's out; position_ids is cache_position.unsqueeze(0), one row):
 *   forward  q.float() 6, * cos 8 (fp32), -x2 2 (half the width), stack 4, .float() 6,
 *            * sin 8, add 12 (fp32), .to(bf16) 6 = 52 (Llama's 20);
 *   backward _to_copy_backward to fp32 6, grad * cos and grad * sin 8 each, the two .float()
 *            backwards to bf16 6 each, neg 2, slice_backward's zeros 2 and copy 2 for each of
 *            x[..., 0::2] and x[..., 1::2], two bf16 adds of the three gradients of q 6 each,
 *            view backward's reshape copy 4 = 60 (Llama's 34)
 * (torch tools/autograd/derivatives.yaml: _to_copy, mul.Tensor, neg, slice.Tensor, stack,
 * view; FunctionsManual.cpp slice_backward_wrapper). Priced at the eager rates of the list
 * (elementwise.c elementwise_kernel_s); nothing measured for this model alone.
 */
#ifndef PLAN_HF_ERNIE_ROPE_H
#define PLAN_HF_ERNIE_ROPE_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"

/* True for a model whose transformers attention rotates q and k as ERNIE-4.5's does (impl
 * hf, model_type ernie4_5 / ernie4_5_moe). */
bool hf_ernie_rope(const model_spec *m, const layout *l);

/* Appends to a layer's eager list the rotary kernels of q (width qw per GPU) and k (kw) over
 * `tokens` rows, heads of d. */
void hf_ernie_rope_kernels(double tokens, double qw, double kw, double d, elementwise_list *out);

#endif
