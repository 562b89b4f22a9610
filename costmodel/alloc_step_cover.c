/*
 * alloc_step_cover.c — which layouts the allocator replay of one FSDP2 step (alloc_step.c)
 * covers: the layer kinds whose tensors it lists (Llama-style Hugging Face and native layers,
 * Phi-3's fused projections, Gemma 2/3, sliding-window masks, transformers' eager attention,
 * Hugging Face MoE blocks, Qwen2-MoE's shared expert, GLM-4.5's and ERNIE-4.5's blocks,
 * DeepSeek-V2/V3's MLA, GPT-OSS, native blocks under torch.compile, the layer forms of
 * alloc_step_forms.c with PhiMoE's block and Falcon-7B's and Falcon-40B's attention, dots.llm1 as
 * GLM-4.5), one GPU, bf16, no or full recompute. Outside it memory.c prices reserved memory without the replay.
 * Its own file because each family added to the replay adds a rule here. Also one layer's
 * saved bytes by the replay's list (alloc_step_layer_saved_bytes), which the tests hold
 * memory_activations.c's analytic figure to (memforms25).
 */
#include "alloc_step.h"
#include "alloc_step_internal.h"

#include "hf_eager_attn.h"
#include "hf_experts.h"
#include "hf_sdpa_math.h"
#include "impl.h"

#include <string.h>

bool alloc_step_glm_block(const model_spec *m)
{
    /* dots.llm1 (transformers 5.17.0 models/dots1/modeling_dots1.py, the copy arch24 took off
     * the device): Dots1TopkRouter, Dots1Experts, Dots1MoE and Dots1DecoderLayer (279-430) are
     * modeling_glm4_moe.py's Glm4MoeTopkRouter, Glm4MoeExperts, Glm4MoeMoE and
     * Glm4MoeDecoderLayer line for line but for the name and e_score_correction_bias's dtype
     * (the default, bf16 under a bf16 load, against fp32: the sum with the fp32 sigmoid is fp32
     * either way); its attention is Qwen3's (per-head q/k norms, whole-head RoPE, no biases:
     * alloc_step_forms.c's default form) */
    return !strcmp(m->hf_model_type, "glm4_moe") || !strcmp(m->hf_model_type, "dots1");
}

bool alloc_step_covered(const model_spec *m, const training_spec *t, const layout *l)
{
    if (!layout_is_pytorch(l) || l->sharding != SHARDING_FSDP) return false;
    if (l->tp * l->pp * l->dp * l->cp != 1 || l->offload) return false;
    /* torch.compile'd native blocks (alloc_step_compiled.c): the graph read is the Llama-style
     * GQA block without q/k norms, no recompute, the loss eager */
    if (l->compile &&
        (layout_impl_of(l) != IMPL_NATIVE || l->recompute != RECOMPUTE_NONE || m->qk_norm ||
         model_q_dim(m) <= model_kv_dim(m) || layout_loss_compiled(l) || model_is_moe(m) ||
         m->mla || m->hf_fused_qkv || m->sandwich_norm || m->norm_fp32_scale ||
         m->attention_sinks || m->rotary_fraction < 1))
        return false;
    if (layout_microbatches(l, t) > 1 || l->precision != PRECISION_BF16) return false;
    if (l->recompute != RECOMPUTE_NONE && l->recompute != RECOMPUTE_FULL) return false;
    if (l->recompute == RECOMPUTE_FULL && l->recompute_layers != 0) return false;
    /* a native loop that held its logits (training_spec.hold_logits): alloc_step.c keeps them */
    if (t->hold_logits && layout_impl_of(l) != IMPL_NATIVE) return false;
    /* transformers' eager attention (alloc_step_eager.c): Llama's function, one causal mask;
     * Gemma 2/3's soft-cap and second (sliding) mask; around HF MoE blocks too (replay25:
     * ho24b's OLMoE row), not MLA's */
    bool eager = hf_eager_attn_applies(m, t, l);
    /* GPT-OSS (alloc_step_gptoss.c): its eager function with sinks, its two masks, biased
     * router and experts on the grouped_mm path, clamped GLU; Hugging Face code, MoE in every
     * layer (transformers' GptOssModel) */
    if (m->attention_sinks)
        return eager && strcmp(m->hf_model_type, "gpt_oss") == 0 && layout_impl_of(l) == IMPL_HF &&
               hf_experts_applies(l) && model_moe_layers(m) == m->layers && !m->mla &&
               m->shared_experts == 0 && !m->dropout && m->ffn > 0 && m->expert_ffn > 0;
    /* Gemma 2/3 under eager: Llama's function plus Gemma 2's soft-cap and the sliding layers'
     * mask (alloc_step_eager.c) */
    bool gemma_eager = eager && m->sandwich_norm && m->norm_fp32_scale;
    if (layout_attention_of(m, t, l) != ATTENTION_FLASH &&
        (!eager || m->hf_fused_qkv ||
         (!gemma_eager && (m->sliding_window > 0 || m->attn_logit_softcap > 0)) ||
         (model_is_moe(m) && m->mla)))
        return false;
    /* Phi-3's fused projections: Hugging Face code only (the native block has its own) */
    if (m->hf_fused_qkv && layout_impl_of(l) != IMPL_HF) return false;
    /* the layer forms beyond Llama's (alloc_step_forms.c): Hugging Face code, SDPA when there
     * is dropout; the others' op lists are not listed */
    dims form = {.rf = m->rotary_fraction};
    if (alloc_step_form_of(m, &form) != 0) return false;
    bool formed = form.block != ALLOC_BLOCK_LLAMA || form.norm_form != ALLOC_NORM_LLAMA ||
                  form.qk_full || form.qk_wfull || form.drop || form.rope32 || form.plain;
    if (formed && (layout_impl_of(l) != IMPL_HF || (form.drop && eager))) return false;
    /* Falcon's attention: Falcon-7B's multi_query under SDPA's math backend, Falcon-40B's new
     * architecture under SDPA (alloc_step_falcon.c) */
    if (!strcmp(m->hf_model_type, "falcon") &&
        !(form.falcon ? hf_sdpa_math_applies(m, t, l)
                      : form.falcon_nda && layout_attention_of(m, t, l) == ATTENTION_FLASH))
        return false;
    /* partial rotary: Phi-3's apply_rotary_pos_emb and StableLM's only (Llama's rotates the
     * whole head) */
    if (m->rotary_fraction < 1 && !m->hf_fused_qkv && !form.rope_part) return false;
    /* Gemma 2/3 (sandwich GemmaRMSNorms; the attention soft-cap is a keyword SDPA ignores,
     * bench/results/gemma19_2026-11-29): Hugging Face code only */
    bool gemma = m->sandwich_norm && m->norm_fp32_scale;
    if (gemma != (m->sandwich_norm || m->norm_fp32_scale)) return false;
    if (gemma && layout_impl_of(l) != IMPL_HF) return false;
    if ((m->final_logit_softcap > 0 || m->attn_logit_softcap > 0) && !gemma) return false;
    /* DeepSeek-V2/V3's MLA (alloc_step_mla.c): Hugging Face code; V2's softmax router without
     * groups (DeepseekV2Moe, topk_method greedy); V3's sigmoid router is not listed */
    bool ds = strcmp(m->hf_model_type, "deepseek_v2") == 0 ||
              strcmp(m->hf_model_type, "deepseek_v3") == 0;
    if (m->mla && (!ds || layout_impl_of(l) != IMPL_HF || m->moe_layer_freq > 1 || eager))
        return false;
    if (m->mla && model_moe_layers(m) > 0 &&
        (m->router_scoring != MODEL_ROUTER_SOFTMAX || m->router_groups > 1 || m->router_bias ||
         m->norm_topk_prob || m->shared_experts <= 0 || m->shared_ffn != m->expert_ffn))
        return false;
    if ((m->dropout && !form.drop) || m->learned_positions ||
        (m->activation != MODEL_ACT_SWIGLU && !form.plain) || m->attention_sinks || m->ffn <= 0)
        return false;
    /* MoE: Hugging Face's softmax-routed blocks in every layer, experts alone (Qwen3-MoE,
     * Mixtral; alloc_step_moe.c) or with Qwen2-MoE's one sigmoid-gated shared expert
     * (shared_expert_intermediate_size), eager (the grouped_mm experts: hf_experts.h) */
    bool qwen2_shared = strcmp(m->hf_model_type, "qwen2_moe") == 0 && m->shared_experts == 1 &&
                        layout_impl_of(l) == IMPL_HF;
    /* GLM-4.5 (Glm4MoeMoE, alloc_step_moe.c): dense first layers, then the fp32 sigmoid router
     * with the correction bias in one group and an ungated shared expert */
    bool glm = alloc_step_glm_block(m) && layout_impl_of(l) == IMPL_HF &&
               m->router_scoring == MODEL_ROUTER_SIGMOID && m->router_bias &&
               m->router_groups <= 1 && m->shared_experts > 0 && m->moe_layer_freq <= 1;
    /* ERNIE-4.5 (Ernie4_5_MoeSparseMoeBlock, alloc_step_moe.c): dense first layers, the fp32
     * softmax router with moe_statics' bias, ungated shared experts first */
    bool ernie = strcmp(m->hf_model_type, "ernie4_5_moe") == 0 && layout_impl_of(l) == IMPL_HF &&
                 m->router_scoring == MODEL_ROUTER_SOFTMAX && m->shared_experts > 0 &&
                 m->moe_layer_freq <= 1;
    glm = glm || ernie;
    if (model_is_moe(m) && (!m->mla || model_moe_layers(m) > 0) &&
        (!hf_experts_applies(l) ||
         (!m->mla && (model_moe_layers(m) != m->layers - (glm ? m->dense_first : 0) ||
                      (m->shared_experts > 0 && !qwen2_shared && !glm))) ||
         (!glm && (m->router_scoring != MODEL_ROUTER_SOFTMAX || m->router_bias)) ||
         (ernie && m->router_groups > 0) ||
         m->router_linear_bias || m->expert_bias || m->router_groups > (m->mla || glm ? 1 : 0) ||
         m->glu_limit > 0))
        return false;
    int impl = layout_impl_of(l);
    return impl == IMPL_HF || impl == IMPL_NATIVE;
}

double alloc_step_layer_saved_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                    int layer)
{
    dims d;
    if (alloc_step_dims_of(m, t, l, &d) != 0) return -1;
    d.ckpt = false;
    ctx c = {.a = alloc_replay_new()};
    if (!c.a) return -1;
    int x = A(&c, 2.0 * d.T * d.h);
    double x_bytes = (double)alloc_replay_allocated_bytes(c.a);
    saved sv = {.n = 0};
    c.layer_saved = &sv;
    int y = alloc_step_any_layer_fwd(&c, &d, layer, x, &sv);
    F(&c, y);
    bool kept = d.native; /* native's attention_norm saves x (alloc_step.c replay_steps) */
    for (int i = 0; i < sv.n; i++) kept = kept || sv.h[i] == x;
    double bytes = (double)alloc_replay_allocated_bytes(c.a) - (kept ? 0 : x_bytes);
    release(&c, &sv);
    alloc_replay_delete(c.a);
    return c.fail ? -1 : bytes;
}
