/*
 * hf_split_heads.h — how transformers' attention classes bring k and v to the query heads before
 * SDPA, as eager kernels of a layer: the generic integrations/sdpa_attention.py repeat_kv
 * (elementwise_hf_repeat_kv) or Falcon's own _split_heads under new_decoder_architecture.
 *
 * Why (issue 14, ho27): Falcon-40B (model_type falcon, new_decoder_architecture: 128 query
 * heads, 8 KV groups, head dim 64) was priced 5-11% fast, more at 4k and with checkpointing.
 * transformers 5.17.0 models/falcon/modeling_falcon.py (the installed file, lines read on the
 * device: bench/results/falcon27_2026-11-29/falcon40b_source.txt):
 *  - _split_heads (lines 265-275): the fused QKV output viewed [b, s, 8, 16 + 2, 64]; q its
 *    first 16 slots, k and v the slots [-2] and [-1] (advanced indexing: two gathers),
 *    broadcast_to the query shape and flatten(2, 3): three copies (q's slice is not dense;
 *    k's and v's are broadcasts), each [b, s, 128, 64];
 *  - forward (lines 330-336): RoPE over q and over the 128-head k (not 8);
 *  - forward (lines 349-357): F.scaled_dot_product_attention(q, k, v, attn_mask=
 *    attention_mask, is_causal=False) with FalconModel's mask, which create_causal_mask builds
 *    with allow_is_causal_skip=False (lines 763-769): a boolean [b, 1, s, s] on every layer.
 * Measured on one H200 (bench/realruns/falcon40b_attn_probe.py; bench/results/
 * falcon27_2026-11-29): flash refuses the mask; the default dispatch runs cuDNN's sm90 flash
 * fprop/bprop with the additive mask, which compute every block of s x s: 1.15 / 2.67 ms at
 * b 2, s 2048 and 2.18 / 5.50 ms at b 1, s 4096 (is_causal on the same tensors: 0.40 / 1.09 and
 * 0.72 / 1.81); the system's attention table prices it at its "window" (explicit mask) points
 * (memory_hf_window_mask_share is 1 for such a model). The kernels of one attention block add:
 * two index gathers and three copy_ of [b, s, 8, 16, 64] forward; backward, three zeros of the
 * fused shape (the slice's and the two index_puts' gradients), q's slice copy, two sums over
 * the broadcast (k and v), two index_put_ (indexing_backward_kernel) and two adds of the fused
 * shape; and RoPE's kernels at 128 heads for k.
 */
#ifndef PLAN_HF_SPLIT_HEADS_H
#define PLAN_HF_SPLIT_HEADS_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"

/* Appends to a layer's eager list (impl hf) the kernels that expand k and v to every query
 * head: Falcon's new-architecture _split_heads on every layer (hf_split_broadcast), else
 * transformers' repeat_kv on the layers SDPA gets an explicit mask (all of them under eager
 * attention, hf_eager). Nothing for other lists. */
void hf_split_heads_kernels(const model_spec *m, const training_spec *t, const layout *l,
                            double tokens, bool hf_eager, elementwise_list *out);

#endif
