/*
 * mcore_unfused.h — the eager PyTorch kernels Megatron-Core runs where a model defeats its fused
 * ones (issues 15 and 20: GPT-OSS 120B's published Megatron-Bridge runs are ~2x slower than
 * plan priced them on every system). Everything else under Megatron is Transformer Engine's
 * fused kernels (elementwise.c's one lump); these two are not:
 *
 *  - YaRN RoPE, unfused. Megatron-Bridge maps GPT-OSS's rope_scaling {rope_type: yarn} to
 *    position_embedding_type "yarn" (src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py at
 *    v0.4.2 c810129), and its provider turns apply_rope_fusion off for any position embedding
 *    other than "rope" (src/megatron/bridge/utils/fusions.py validate_rope_fusion_compatibility,
 *    called from models/gpt_provider.py provide(); the same at v0.2.0, v0.3.0 and v0.5.0), over
 *    the perf scripts' apply_rope_fusion = True (scripts/performance/utils/overrides.py). q and
 *    k then go through Megatron-LM's rope_utils._apply_rotary_pos_emb_bshd (2edffadb, the
 *    v0.4.2 submodule; unchanged at 0d8e071, b0cc270, d0b3b77): cos/sin of the frequency table
 *    times mscale cast to bf16, t * cos + rotate_half(t) * sin (rotate_half: chunk, cat(-x2,
 *    x1)), then cat((t, t_pass)) with the empty pass-through part: eager kernels over q and k.
 *    Applies to Megatron with rope_scaling yarn and no MLA (DeepSeek's MLA RoPE is another
 *    path: the next item). ASSUMPTION for other yarn models than GPT-OSS: the bridge maps them
 *    the same way. Any other RoPE takes this path under --no-rope-fusion (layout.h
 *    rope_unfused).
 *  - MLA's RoPE without the fusion (moe12, 2026-11-28). Megatron-Bridge's DeepSeek provider
 *    sets apply_rope_fusion = False (src/megatron/bridge/models/deepseek/deepseek_provider.py
 *    108 at fa0315ae2, the 25.09 perf scripts, which do not override it; from v0.2.0 on
 *    scripts/performance/utils/helpers.py / overrides.py set it True). Megatron-LM's
 *    MultiLatentAttention then runs qkv_up_proj_and_rope_apply's unfused branch (d98e8a6
 *    multi_latent_attention.py 931-981): torch.split of q and kv, the interleaved RoPE on the
 *    rope parts of q and k, torch.cat of query and of key (k's rope part expanded over the
 *    heads), value.contiguous(). Kernels and bytes: mcore_unfused.c.
 *  - The experts' output bias. Megatron-LM TEGroupedMLP builds linear_fc2 with skip_bias_add
 *    and adds the bias in _apply_bias (megatron/core/transformer/moe/experts.py, 2edffadb
 *    251-265; the same at 0d8e071, b0cc270, d0b3b77): for every local expert t + b * p over
 *    its rows (p the fp32 routing probabilities, so b * p and the sum are fp32), torch.cat of
 *    the pieces, .to(bf16). Applies to Megatron with expert biases (gpt-oss add_bias_linear;
 *    fc1's bias is fused: TE GroupedLinear's epilogue, then weighted_bias_quick_geglu).
 *
 *  - The experts' clamped GLU (moe11, 2026-11-28). GPT-OSS's swiglu_limit maps to Megatron's
 *    activation_func_clamp_value 7.0 with quick_gelu and glu_linear_offset 1.0 (Megatron-Bridge
 *    v0.4.2 src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py provider_bridge; v0.2.0 and
 *    v0.3.0 gpt_oss_provider.py activation_func_clamp_value 7.0), and TEGroupedMLP's
 *    bias_act_func (bias_activation_fusion on) calls weighted_bias_quick_geglu_impl
 *    (Megatron-LM d98e8a6 megatron/core/fusions/fused_bias_geglu.py 410-440; the same at
 *    0d8e071, b0cc270, 2edffadb, d0b3b77), which clamps outside the fused kernel: chunk the
 *    fc1 output [rows, 2f] into its halves (views), x_glu.clamp(max=limit),
 *    x_linear.clamp(-limit, limit), torch.cat of the two: three eager kernels over the routed
 *    rows before the compiled weighted quick-GEGLU (elementwise.c's lump). Their backward
 *    (PyTorch FunctionsManual.cpp clamp_backward: where(self <= max, grad, 0) for the gate
 *    half, where((self >= min).logical_and_(self <= max), grad, 0) for the linear half, each
 *    mask a kernel of its own; cat's backward is views; chunk's backward cats the two halves'
 *    gradients). Under the "moe_act" recompute module the three forward kernels run again
 *    before the backward (experts.py activation_checkpoint). Not under a full-iteration CUDA
 *    graph: the recipes that capture one run TE's fused grouped MLP (its clamped GEGLU one
 *    op; mcore_unfused.c), and a capture could not hold the path's synchronising copy.
 *
 * Bytes per kernel (bf16 2, fp32 4, read plus written; PyTorch tools/autograd/derivatives.yaml
 * and FunctionsManual.cpp for the backward), e the elements of the tensor: see mcore_unfused.c.
 * Priced as eager kernels (elementwise_list.eager: eager_elementwise_efficiency and the gap per
 * launch). Checked on one H100 at the published H100 row's shapes (bench/gptoss_layer_parts.py,
 * bench/results/gptoss_2026-11-27), priced alone as the bench ran (eager efficiency 0.59): the
 * bias loop forward 0.73 ms measured, 0.72 priced; its backward 1.69 ms measured (less the leaf
 * gradient's accumulation the bench adds), 1.20 priced; RoPE forward + backward 0.94 ms
 * measured, 0.63 priced (its strided halves run the slower offsets path). Both on the low side.
 */
#ifndef PLAN_MCORE_UNFUSED_H
#define PLAN_MCORE_UNFUSED_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"

/* Megatron with rope_scaling yarn or --no-rope-fusion, no MLA, rotary positions. */
bool mcore_unfused_rope_applies(const model_spec *m, const layout *l);

/* Megatron, MLA, and --no-rope-fusion (or a RoPE other than yarn, which MLA's fused kernel
 * does not take). */
bool mcore_unfused_mla_rope_applies(const model_spec *m, const layout *l);

/* MLA's unfused RoPE, splits and concatenations of one layer over `tokens` per GPU (q's heads
 * / tp), the table over `seq` positions. Ops are named "rope.mla.*" (recompute_modules.c re-runs
 * the forward ones under mla_up_proj). */
void mcore_unfused_mla_rope(const model_spec *m, const layout *l, double tokens, double seq,
                            elementwise_list *out);

/* Megatron with biases on the experts' matrices (model_spec.expert_bias). */
bool mcore_expert_bias_applies(const model_spec *m, const layout *l);

/* The unfused RoPE kernels of one layer over `tokens` per GPU (q's heads / tp), the
 * frequency table over `seq` positions (the sequence per rank). */
void mcore_unfused_rope(const model_spec *m, const layout *l, double tokens, double seq,
                        elementwise_list *out);

/* Megatron with the experts' GLU clamped (model_spec.glu_limit > 0). */
bool mcore_clamped_glu_applies(const model_spec *m, const layout *l);

/* The clamp kernels of weighted_bias_quick_geglu_impl over `rows` routed rows on this GPU (all
 * local experts), each of width m->expert_ffn / etp per half. Forward ops are named
 * "moe_act.clamp*" (recompute_modules.c re-runs them under the moe_act module). */
void mcore_clamped_glu(const model_spec *m, const layout *l, double rows, elementwise_list *out);

/* _apply_bias over `local` experts of `rows` routed rows each, width h. */
void mcore_expert_bias(const model_spec *m, const layout *l, int local, double rows,
                       elementwise_list *out);

#endif
