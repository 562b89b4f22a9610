/*
 * mcore_unfused.c — Megatron-Core's eager kernels for YaRN (or unfused) RoPE, MLA's unfused RoPE
 * with its splits and concatenations, and the experts' output bias
 * (mcore_unfused.h says where they come from). Bytes per launch, e the elements of the tensor a
 * kernel runs over (bf16 2 bytes, fp32 4; broadcast operands and [rows, 1] tensors left out, as
 * in elementwise.c):
 *
 * RoPE, per call of _apply_rotary_pos_emb_bshd (one for q, one for k; e = tokens x heads x d):
 *   table: cos(freqs) 8, * mscale 8, .to(bf16) 6, the same for sin: 6 launches over s x d
 *     fp32 elements (36 bytes per table element in all);
 *   t[..., :d], chunk: views; neg(x2) 2 (half the width); cat(-x2, x1) 4; t * cos 4;
 *     rotate_half(t) * sin 4; add 6; cat((t, t_pass)) with the empty t_pass, a copy 4:
 *     24e in 6 launches.
 *   Backward: cat and add pass views and the gradient through; grad * cos 4, grad * sin 4;
 *     neg 2; chunk's backward cats the halves' gradients 4; t_'s two gradients accumulate 6;
 *     slice_backward of t_ (zeros 2, copy 4) and of the empty t_pass (zeros 2); t's two
 *     gradients accumulate 6: 34e in 9 launches.
 * MLA RoPE, unfused (--no-rope-fusion; Megatron-LM d98e8a6 multi_latent_attention.py 931-981
 *   qkv_up_proj_and_rope_apply without apply_rope_fusion, rope_utils.py 92-160). q [T, n, dn +
 *   dr] and kv [T, n, dn + dv] (n = heads / tp) are split into views; each of q_pos_emb (e =
 *   T n dr, a strided view) and k_pos_emb (e = T dr, one head) goes through
 *   _apply_rotary_pos_emb_bshd with mla_rotary_interleaved: cat(t[..., 0::2], t[..., 1::2]) 4
 *   (read and write e), the table as above, then the same 24e in 6 launches as the plain call;
 *   backward the plain call's 34e in 9 launches plus the two strided slices' slice_backward
 *   (zeros 2, copy of the half 2, each) and their sum 6: 48e in 14 launches.
 *   query = cat(q_no_pe, q_pos_emb): 4 bytes per element of the query; key = cat(k_no_pe,
 *   k_pos_emb.expand(n heads)): k_no_pe read (2 a nope element), key written (2 an element);
 *   value.contiguous() copies the strided value 4 (query and key are contiguous already).
 *   Backward: the cats' gradients are views; expand's is a sum over the heads (read T n dr);
 *   torch.split's backward concatenates q's two gradients (4 an element of q) and kv's (4 an
 *   element of kv). This replaces the fused lump's 4 bytes per element of q and k
 *   (elementwise.c); under the mla_up_proj recompute module the forward kernels run again
 *   (the checkpointed qkv_up_proj_and_rope_apply, recompute_modules.c).
 * Bias (_apply_bias; e = local x rows x h, L local experts):
 *   per expert b * p (fp32 result) 4 and t + b * p (bf16 and fp32 in, fp32 out) 10; torch.cat
 *     of the fp32 pieces 8; .to(bf16) 6: 28e in 2L + 2 launches.
 *   Backward: _to_copy's gradient to fp32 6; cat's is views; per expert the add's gradient cast
 *     to t's bf16 6 (the engine's validate_outputs), mul's for b: grad * p 8, cast to bf16 6
 *     (mul_tensor_backward), sum_to [h] 2; for p: grad * b 8, sum_to [rows, 1] 4; split's
 *     backward cats t's bf16 gradients 4: 44e in 6L + 2 launches.
 * Clamped GLU (weighted_bias_quick_geglu_impl; e = rows x f, one half of fc1's output):
 *   x_glu.clamp(max) 4 (a strided half in, contiguous out), x_linear.clamp(min, max) 4,
 *   torch.cat of the two into [rows, 2f] 8: 16e in 3 launches.
 *   Backward: the gate half's mask self <= max 3 (bf16 in, bool out), where(mask, grad, 0) 5;
 *   the linear half's self >= min 3, self <= max 3, logical_and_ 3, where 5; chunk's backward
 *   cats the two gradients 8: 30e in 7 launches.
 */
#include "mcore_unfused.h"

#include <string.h>

#include "hf_experts.h"

bool mcore_unfused_rope_applies(const model_spec *m, const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && !m->mla && !m->learned_positions &&
           (l->rope_unfused || !strcmp(m->rope_scaling_type, "yarn"));
}

bool mcore_unfused_mla_rope_applies(const model_spec *m, const layout *l)
{
    /* MLA's fused path takes yarn only: with plain RoPE Megatron refuses the fusion
     * (transformer_config.py 3345, d98e8a6) and plan emits --no-rope-fusion (emit_megatron.c) */
    return l->framework == FRAMEWORK_MEGATRON && m->mla &&
           (l->rope_unfused || strcmp(m->rope_scaling_type, "yarn") != 0);
}

bool mcore_expert_bias_applies(const model_spec *m, const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && m->expert_bias && m->experts > 0;
}

bool mcore_clamped_glu_applies(const model_spec *m, const layout *l)
{
    /* a full-iteration CUDA graph cannot hold the activation's synchronising copy
     * (mcore_moe_host.h): the recipes that capture one run TE's fused grouped MLP instead
     * (Megatron-Bridge v0.5.0 gpt_oss_workload_base_configs.py *_FP8_MX_V2
     * cutedsl_fused_grouped_mlp=True -> NVTE_CUTEDSL_FUSED_GROUPED_MLP, perf_plugins.py 308),
     * whose clamped GEGLU is one fused op (experts.py _is_fused_impl_supported) */
    return l->framework == FRAMEWORK_MEGATRON && m->glu_limit > 0 && m->experts > 0 &&
           !l->cuda_graph_full_iteration;
}

static void list_start(const layout *l, elementwise_list *out)
{
    out->eager = true;
    out->inductor = false;
    out->alone = layout_gpus(l) == 1;
    out->n_fwd = out->n_bwd = 0;
}

/* One call of _apply_rotary_pos_emb_bshd over e elements, its table of `table` elements. */
static void rope_call(moe_kernel_pass f, moe_kernel_pass b, bool is_q, double e, double table)
{
#define N(s) (is_q ? "rope.yarn.q." s : "rope.yarn.k." s)
    moe_kernel_add(f, N("table"), 36 * table / 6, 6);
    moe_kernel_add(f, N("neg"), 2 * e, 1);
    moe_kernel_add(f, N("cat"), 4 * e, 1);
    moe_kernel_add(f, N("mul"), 4 * e, 2);
    moe_kernel_add(f, N("add"), 6 * e, 1);
    moe_kernel_add(f, N("cat_pass"), 4 * e, 1);
    moe_kernel_add(b, N("bwd.mul"), 4 * e, 2);
    moe_kernel_add(b, N("bwd.neg"), 2 * e, 1);
    moe_kernel_add(b, N("bwd.chunk_cat"), 4 * e, 1);
    moe_kernel_add(b, N("bwd.accumulate"), 6 * e, 2);
    moe_kernel_add(b, N("bwd.slice_zeros"), 2 * e, 2);
    moe_kernel_add(b, N("bwd.slice_copy"), 4 * e, 1);
#undef N
}

void mcore_unfused_rope(const model_spec *m, const layout *l, double tokens, double seq,
                        elementwise_list *out)
{
    list_start(l, out);
    if (!mcore_unfused_rope_applies(m, l)) return;
    moe_kernel_pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double tp = l->tp > 0 ? l->tp : 1, d = m->head_dim;
    rope_call(f, b, true, tokens * m->heads * d / tp, seq * d);
    rope_call(f, b, false, tokens * m->kv_heads * d / tp, seq * d);
}

/* One call of _apply_rotary_pos_emb_bshd with mla_rotary_interleaved over e elements (the
 * rope part of q, or of k), its table of `table` elements (header comment). */
static void mla_rope_call(moe_kernel_pass f, moe_kernel_pass b, bool is_q, double e, double table)
{
#define N(s) (is_q ? "rope.mla.q." s : "rope.mla.k." s)
    moe_kernel_add(f, N("interleave"), 4 * e, 1);
    moe_kernel_add(f, N("table"), 36 * table / 6, 6);
    moe_kernel_add(f, N("mul"), 4 * e, 2);
    moe_kernel_add(f, N("neg"), 2 * e, 1);
    moe_kernel_add(f, N("cat"), 4 * e, 1);
    moe_kernel_add(f, N("add"), 6 * e, 1);
    moe_kernel_add(f, N("cat_pass"), 4 * e, 1);
    moe_kernel_add(b, N("bwd.mul"), 4 * e, 2);
    moe_kernel_add(b, N("bwd.neg"), 2 * e, 1);
    moe_kernel_add(b, N("bwd.chunk_cat"), 4 * e, 1);
    moe_kernel_add(b, N("bwd.accumulate"), 6 * e, 2);
    moe_kernel_add(b, N("bwd.slice_zeros"), 2 * e, 2);
    moe_kernel_add(b, N("bwd.slice_copy"), 4 * e, 1);
    moe_kernel_add(b, N("bwd.interleave_zeros"), 2 * e, 2);
    moe_kernel_add(b, N("bwd.interleave_copy"), 2 * e, 2);
    moe_kernel_add(b, N("bwd.interleave_accumulate"), 6 * e, 1);
#undef N
}

void mcore_unfused_mla_rope(const model_spec *m, const layout *l, double tokens, double seq,
                            elementwise_list *out)
{
    list_start(l, out);
    if (!mcore_unfused_mla_rope_applies(m, l)) return;
    moe_kernel_pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double tp = l->tp > 0 ? l->tp : 1;
    double tn = tokens * m->heads / tp; /* (token, head) pairs on this GPU */
    double dn = m->qk_nope_dim, dr = m->qk_rope_dim, dv = m->v_head_dim;
    mla_rope_call(f, b, true, tn * dr, seq * dr);
    mla_rope_call(f, b, false, tokens * dr, seq * dr); /* k_pos_emb: one head */
    moe_kernel_add(f, "rope.mla.query_cat", 4 * tn * (dn + dr), 1);
    moe_kernel_add(f, "rope.mla.key_cat", 2 * tn * dn + 2 * tn * (dn + dr), 1);
    moe_kernel_add(f, "rope.mla.value_copy", 4 * tn * dv, 1);
    moe_kernel_add(b, "rope.mla.bwd.expand_sum", 2 * tn * dr, 1);
    moe_kernel_add(b, "rope.mla.bwd.q_split_cat", 4 * tn * (dn + dr), 1);
    moe_kernel_add(b, "rope.mla.bwd.kv_split_cat", 4 * tn * (dn + dv), 1);
}

void mcore_clamped_glu(const model_spec *m, const layout *l, double rows, elementwise_list *out)
{
    list_start(l, out);
    if (!mcore_clamped_glu_applies(m, l) || rows <= 0) return;
    moe_kernel_pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double e = rows * (double)m->expert_ffn / layout_etp(l); /* one half's elements */
    moe_kernel_add(f, "moe_act.clamp", 4 * e, 2);
    moe_kernel_add(f, "moe_act.clamp_cat", 8 * e, 1);
    moe_kernel_add(b, "moe_act.clamp.bwd.mask", 3 * e, 4);
    moe_kernel_add(b, "moe_act.clamp.bwd.where", 5 * e, 2);
    moe_kernel_add(b, "moe_act.clamp.bwd.chunk_cat", 8 * e, 1);
}

void mcore_expert_bias(const model_spec *m, const layout *l, int local, double rows,
                       elementwise_list *out)
{
    list_start(l, out);
    if (!mcore_expert_bias_applies(m, l) || local <= 0 || rows <= 0) return;
    moe_kernel_pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double one = rows * m->hidden; /* one expert's elements */
    double e = local * one;
    moe_kernel_add(f, "moe_bias.mul", 4 * one, local);
    moe_kernel_add(f, "moe_bias.add", 10 * one, local);
    moe_kernel_add(f, "moe_bias.cat", 8 * e, 1);
    moe_kernel_add(f, "moe_bias.to_bf16", 6 * e, 1);
    moe_kernel_add(b, "moe_bias.bwd.to_fp32", 6 * e, 1);
    moe_kernel_add(b, "moe_bias.bwd.grad_t", 6 * one, local);
    moe_kernel_add(b, "moe_bias.bwd.grad_b.mul", 8 * one, local);
    moe_kernel_add(b, "moe_bias.bwd.grad_b.cast", 6 * one, local);
    moe_kernel_add(b, "moe_bias.bwd.grad_b.sum", 2 * one, local);
    moe_kernel_add(b, "moe_bias.bwd.grad_p.mul", 8 * one, local);
    moe_kernel_add(b, "moe_bias.bwd.grad_p.sum", 4 * one, local);
    moe_kernel_add(b, "moe_bias.bwd.split_cat", 4 * e, 1);
}
