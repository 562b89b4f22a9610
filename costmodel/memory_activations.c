/*
 * memory_activations.c — activation bytes of one decoder layer (memory.h), moved out of
 * memory.c (speed12) so each file keeps one concept: this the per-layer figures, memory.c
 * the stages built from them.
 *
 * Activation bytes per token of one layer, split as Korthikanti et al. 2022 (Table 2) split
 * GPT's 34 s b h: the part every TP rank keeps whole unless sequence parallelism shards it
 * (norm inputs 2h+2h, QKV and FC1 inputs 2h+2h, two 1-byte dropout masks) = 10h for GPT, and
 * the part TP shards (Q, K, V, context 8h; MLP intermediates 16h for f = 4h) = 24h; plus
 * 5as per token for the unfused softmax/dropout, which selective recompute and flash
 * attention do not store. The tests check the GPT identity 34sbh + 5as^2b.
 */
#include "memory.h"
#include "alloc_step_internal.h"
#include "cp_allgather.h"
#include "hf_eager_attn.h"
#include "hf_experts.h"
#include "hf_sdpa_math.h"
#include "hf_xielu.h"
#include "memory_params.h"
#include "moe_dispatch.h"
#include "precision.h"
#include "recompute_modules.h"

#include <string.h>

/* Bytes per token kept whole on each TP rank (sharded by tp only under SP). */
static double replicated_bytes_per_token(const model_spec *m, int moe_layer)
{
    double h = m->hidden;
    double b = 8.0 * h;                  /* LN1 in, QKV in, LN2 in, FC1 (or router) in */
    /* a parallel block (model.h): attention and MLP read one layer input x, kept once; their
     * inputs are one shared norm's output (Cohere, Falcon-7B) or two norms' (GPT-NeoX) */
    if (m->parallel_block) b = m->shared_block_norm ? 4.0 * h : 6.0 * h;
    /* GLM-4's post-sublayer norms (sandwich norms without Gemma's fp32 scale, whose own terms
     * are memory_layer_activation_bytes') save their inputs, o_proj's and down_proj's outputs */
    if (m->sandwich_norm && !m->norm_fp32_scale) b += 4.0 * h;
    if (m->dropout) b += 2.0 * h;        /* attention-out and MLP-out dropout masks, 1 byte */
    if (m->mla) b += 4.0 * m->q_lora_rank + 4.0 * m->kv_lora_rank; /* latent norms' in/out */
    if (moe_layer) b += 4.0 * m->experts; /* fp32 router logits */
    /* PhiMoE's input jitter: two bf16 noises mul_ saves (model.h, alloc_step_phimoe.c) */
    if (moe_layer && m->input_jitter) b += 4.0 * h;
    return b;
}

static double mlp_intermediate_bytes(const model_spec *m, double width)
{
    /* SwiGLU keeps gate and up outputs (2+2 bytes) and the product (2); GeLU its input and
     * output (2+2). */
    return (m->activation == MODEL_ACT_SWIGLU ? 6.0 : 4.0) * width;
}

double memory_hf_window_mask_share(const model_spec *m, const training_spec *t, const layout *l)
{
    /* Hugging Face transformers builds an explicit boolean mask [b, 1, s, s] for its sliding
     * layers once the sequence reaches the window (transformers 5.17.0 masking_utils.py
     * _ignore_causal_mask_sdpa, line 263: no skip when kv_length >= local_attention_size, the
     * sliding_window create_sliding_window_causal_mask passes; the full-attention layers'
     * create_causal_mask is skipped, mask None, and sdpa_attention.py line 124 passes
     * is_causal). Measured on one H200 (bench/results/gemma19_2026-11-29): Gemma-2-9B cut to 4
     * layers at seq 6144 runs its sliding layers 0 and 2 through the masked cuDNN kernels
     * (4.6 ms forward) and 1 and 3 causal (0.95 ms).
     * Falcon materializes its causal mask for every layer (model.h hf_mask_always): all of
     * them run the masked kernels (hf_split_heads.h), unless SDPA's math backend takes the
     * call (Falcon-7B's multi_query, hf_sdpa_math.h, priced apart). */
    if (!layout_is_pytorch(l) || layout_impl_of(l) != IMPL_HF || m->layers <= 0 ||
        layout_attention_of(m, t, l) != ATTENTION_FLASH) /* eager: hf_eager_attn.h */
        return 0;
    if (m->hf_mask_always) return hf_sdpa_math_applies(m, t, l) ? 0 : 1;
    if (m->sliding_window <= 0 || m->sliding_window > t->seq_len) return 0;
    return (double)model_sliding_layers(m) / m->layers;
}

double memory_hf_window_mask_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    /* torch's scaled_dot_product_attention turns HF's boolean mask into an additive mask of the
     * query dtype in every call (aten/src/ATen/native/transformers/attention.cpp:
     * convert_boolean_attn_mask(_cudnn), at::where over the mask: a new bf16 tensor of the
     * mask's full shape, b s^2 x 2 bytes), and the attention op saves it for its backward
     * (attn_bias): one per sliding layer, averaged over the layers as the rest of this file is
     * (seen in bench/results/gemma19_2026-11-29 owners.jsonl: sdpa_attention.py line 158 holds
     * the outputs and 22 such masks of Gemma-3-1B, 2.19 GiB at seq 2048, mbs 8) */
    return memory_hf_window_mask_share(m, t, l) * 2.0 * l->mbs * ((double)t->seq_len / l->cp) *
           t->seq_len;
}

double memory_layer_routed_activation_bytes(const model_spec *m, const training_spec *t,
                                            const layout *l)
{
    double tokens = (double)l->mbs * t->seq_len / l->cp; /* per GPU */
    double h = m->hidden;
    precision_rules pr;
    precision_rules_of(l, &pr);
    /* Routed copies: top_k per token, spread evenly over the GPUs of the stage. Each copy
     * keeps its permuted input (2h, whole on each expert-TP rank), the expert's
     * intermediates (split by etp) and, where the combine weights it by its probability
     * (PyTorch), its output (2h); Megatron weights it in the activation (below). */
    double etp = layout_etp(l);
    /* the busiest EP rank holds its load factor times the mean (moe_dispatch.h) */
    /* with DeepEP's FP8 dispatch the permuted input arrives, and is kept, in e4m3 with its
     * scales (moe_dispatch_elem_bytes) */
    double in_bytes = moe_dispatch_elem_bytes(l) * h * etp;
    double per_copy = in_bytes + mlp_intermediate_bytes(m, m->expert_ffn) + 2.0 * h;
    /* Low precision (precision.h): Transformer Engine's GroupedLinear saves the experts'
     * inputs quantized as its Linear does (transformer_engine/pytorch/module/
     * grouped_linear.py, _GroupedLinear.forward: inputmats = tex.split_quantize(...),
     * saved for the backward): FC1's input (the permuted tokens) and FC2's (the
     * activation's product) take saved_input_bytes a element instead of 2 */
    if (pr.saved_input_bytes < 2.0 && !layout_is_pytorch(l)) {
        double se = pr.saved_input_bytes;
        if (moe_dispatch_elem_bytes(l) > se) per_copy -= (moe_dispatch_elem_bytes(l) - se) * h * etp;
        per_copy -= (2.0 - se) * m->expert_ffn;
    }
    if (!layout_is_pytorch(l)) {
        /* Megatron-Core (since core_r0.12.0) weights each copy by its router probability in
         * the experts' activation, not in the combine: TEGroupedMLP.forward passes
         * permuted_probs to bias_act_func (weighted_bias_swiglu_impl), whose
         * WeightedSwiGLUFunction saves the activation's input and the probs [copies, 1]
         * (megatron/core/fusions/fused_bias_swiglu.py), and every dispatcher's combine then
         * runs without probs: unpermute(..., probs absent) in the all-to-all and all-gather
         * dispatchers, HybridEPCombine / DeepEP's combine save no tensor (token_dispatcher.py,
         * fused_a2a.py; Megatron-LM 2edffad, the submodule of Megatron-Bridge v0.4.2). So no
         * copy keeps its expert output (the 2h above); it keeps its probability, 4 bytes: fp32,
         * as HybridEP and DeepEP require (_HybridEPManager.dispatch: token_probs.float()) */
        per_copy += 4.0 - 2.0 * h;
    }
    if (layout_impl_of(l) == IMPL_HF && hf_experts_applies(l) && !l->compile) {
        /* transformers' grouped_mm experts (hf_experts.h), as the allocator replay lists them
         * (alloc_step_moe.c, from integrations/moe.py grouped_mm_experts_forward of 5.17.0):
         * each copy keeps the first grouped GEMM's masked [S, 2f] output, silu's and the
         * product (8 bytes x expert_ffn: eager SwiGLU's four tensors, 2 more than the fused
         * six above) and its int64 sort permutation, token index and inverse permutation, its
         * fp32 routing weight and bool sentinel mask (8 + 8 + 8 + 4 + 1); per token the router
         * keeps topk's fp32 values and int64 indices (12 a copy) and, renormalised, the row sum
         * (4 a token) (memforms25) */
        per_copy += 2.0 * m->expert_ffn + 41.0 + (m->norm_topk_prob ? 4.0 / m->top_k : 0);
    }
    if (l->framework == FRAMEWORK_TORCHTITAN && !l->compile) {
        /* eager torchtitan MoE (torchtitan/models/moe.py): GroupedExperts' SwiGLU saves
         * silu's output too (8 bytes x expert_ffn, as the dense eager MLP), and the combine
         * scores the expert output in fp32, routed_output.to(torch.float32) * top_scores,
         * whose mul saves the fp32 copy: 4h a copy, not 2h */
        if (m->activation == MODEL_ACT_SWIGLU) per_copy += 2.0 * m->expert_ffn;
        per_copy += 2.0 * h;
    }
    if (t->moe_pad_index_copy && layout_is_pytorch(l)) {
        /* the experts' input padded per expert as x.new_zeros(...).index_copy(0, pos, x)
         * (bench/realruns/prun_moe.py, grouped): torch's derivative of index_copy for `source`
         * is grad.index_select(dim, index).expand_as(source) (tools/autograd/derivatives.yaml),
         * so the generated IndexCopyBackward0 holds `SavedVariable source_`: the unpadded
         * routed rows (2h a copy) stay alive beside the padded buffer the grouped GEMM saves
         * (in_bytes above). torchtitan permutes by a gather, routed_input_RD[permuted_indices]
         * (torchtitan/models/common/token_dispatcher.py _permute at b5bcd76), no copy kept. */
        per_copy += 2.0 * h;
    }
    return tokens * m->top_k * per_copy / l->tp * moe_load_factor(t);
}

/* torchao float8 (tensorwise or rowwise, FSDP2 / torchtitan) in a torch.compile'd dense block
 * without TP: torchao's matmul_with_hp_or_float8_args saves its bf16 input for the backward
 * (ctx.save_for_backward(input_hp, weight_hp_t), torchao/float8/float8_linear.py line 45 at
 * v0.18.0, 5f2baf9), but that backward reads the input only to cast it again (the wgrad
 * operand, line 185), so Inductor's partitioner recomputes an input that is a norm or a
 * product of saved tensors inside that cast kernel instead of keeping it; in bf16 the wgrad
 * GEMM reads the input itself and the graph keeps it. Measured (bench/fp8b19_probe.py,
 * bench/results/fp8b19_2026-11-29/probe.json: one compiled Llama-3.1-8B block, 8192 tokens,
 * what the forward saves through saved_tensors_hooks): bf16 keeps 1179.7 MB, rowwise and
 * tensorwise 810.6 MB; the two norm outputs (QKV and w1/w3 input, 8192 x 4096 bf16 each) and
 * the SwiGLU product (w2's input, 8192 x 14336) are gone, (2 x 2 x 4096 + 2 x 14336) B x 8192
 * = 369.1 MB, and the real 8-layer runs held 2.95 GB (= 8 x 369 MB) less at the peak
 * (f8-l8b-L8-s8k-b1-bf16 / -rw / -tw, 56.30 / 53.35 / 53.35 GB). With TP (Float8 TP casts
 * before the gather), under SAC (its own saved list) or in MoE layers it was not measured. */
bool memory_torchao_compiled_recompute(const model_spec *m, const layout *l, int moe_layer)
{
    if (!layout_is_pytorch(l) || !l->compile || l->precision != PRECISION_FP8 || l->tp > 1 ||
        moe_layer || m->mla || m->activation != MODEL_ACT_SWIGLU)
        return false;
    layout_fp8_recipe r = precision_fp8_recipe(l);
    return r == FP8_RECIPE_TENSORWISE || r == FP8_RECIPE_ROWWISE;
}

double memory_layer_activation_bytes(const model_spec *m, const training_spec *t,
                                     const layout *l, int moe_layer)
{
    double tokens = (double)l->mbs * t->seq_len / l->cp; /* per GPU */
    precision_rules pr; /* the Linears' saved-input format (precision.h) */
    precision_rules_of(l, &pr);
    double tp = l->tp, h = m->hidden, a = m->heads;
    double qk = m->mla ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim;
    double v = m->mla ? m->v_head_dim : m->head_dim;
    double kv_heads = m->mla ? m->heads : m->kv_heads;

    /* Sharded by TP: Q, K, V and the attention output (context). */
    double attn = 2.0 * (a * qk + kv_heads * qk + kv_heads * v + a * v);
    bool hf_eager = hf_eager_attn_applies(m, t, l);
    if (hf_sdpa_math_applies(m, t, l)) {
        /* SDPA's math backend (hf_sdpa_math.h): fp32 scores and copies, no log-sum-exp */
        attn += hf_sdpa_math_saved_bytes_per_token(m, t, l);
    } else if (layout_attention_of(m, t, l) == ATTENTION_FLASH) {
        attn += 4.0 * a; /* fp32 log-sum-exp per head */
    } else if (hf_eager) {
        /* transformers' eager attention (hf_eager_attn.h): its softmax output and copies, and
         * repeat_kv's k and v at every query head */
        attn += hf_eager_saved_bytes_per_token(m, t, l);
    } else if (l->recompute != RECOMPUTE_SELECTIVE) {
        /* softmax output (2), dropout mask (1) and dropout output (2) per score; without
         * dropout only the softmax output. Scores per token: a * s. */
        attn += (m->dropout ? 5.0 : 2.0) * a * t->seq_len;
    }
    if (!layout_is_pytorch(l) && m->qk_norm && !m->mla) {
        /* Megatron's q/k norms (qk_layernorm: TENorm, Transformer Engine's RMSNorm op) run on
         * the query (reshaped out of the fused QKV output: a copy) and the key (a strided view,
         * made contiguous by the op), and the op saves that input and its fp32 rstd per row,
         * a row being a head (transformer_engine/pytorch/ops/basic/rmsnorm.py, forward:
         * x = input_.contiguous() ..., ctx.save_for_backward(x, rstdevs); TE v2.14 f031cf8;
         * megatron/core/transformer/attention.py get_query_key_value_tensors, Megatron-LM
         * 2edffad): 2 (a + kv) d + 4 (a + kv) a token beside the normed, rotated q and k
         * attention keeps (counted above) */
        attn += 2.0 * (a + kv_heads) * qk + 4.0 * (a + kv_heads);
    }
    double sharded = attn;
    double moe_bytes = 0;
    if (!moe_layer) {
        sharded += mlp_intermediate_bytes(m, m->ffn);
    } else {
        sharded += m->shared_experts * mlp_intermediate_bytes(m, m->shared_ffn);
        moe_bytes = memory_layer_routed_activation_bytes(m, t, l);
    }
    if (l->framework == FRAMEWORK_TORCHTITAN && l->recompute == RECOMPUTE_SELECTIVE) {
        /* torchtitan's per-op SAC (layer_recipe.c titan_sac_recomputes: saved are the outputs
         * of the matmuls it does not recompute, of SDPA and of the reduce-scatters): per token
         * the block input x and the MLP output (2h each, sequence-sharded with SP), q and v
         * (wk's output is recomputed), the attention output and its fp32 log-sum-exp, the w1
         * output (w3's and the SiLU product are recomputed); MoE layers keep the fp32 router
         * logits, the shared experts' w1 outputs and the routed copies as above. The norms'
         * outputs, RoPE and the residual sums are recomputed.
         * Compiled, a dense block keeps no MLP output: eager SAC stores the output of every op
         * its policy saves when the forward runs (torch/utils/checkpoint.py
         * _CachingTorchDispatchMode; CheckpointPolicy's docstring: "save additional tensors not
         * limited to ones that are actually needed"), w2's among them (the 7th matmul: odd,
         * saved; torchtitan 9dec370 parallelisms/parallelize_llama.py lines 214-258), though the
         * backward needs it only to rebuild the block's output; under torch.compile the policy
         * becomes recompute tags of the joint graph and the partitioner saves only what the
         * backward graph reads. Measured (bench/results/tt12_2026-11-28): eager minus compiled
         * peak 1.00 / 2.00 GiB at 8 / 16 layers of 16,384 tokens (= 2h x tokens a layer), and
         * 0.50 GiB at 8 layers of 8,192 (mgpu_2026-11-27 sac-op-eager/cmp-8bL8). */
        double out_s = moe_layer || !l->compile ? 2.0 * h : 0;
        double repl_s = 2.0 * h + out_s + (moe_layer ? 4.0 * m->experts : 0);
        double shard_s = 2.0 * a * qk + 2.0 * kv_heads * v + 2.0 * a * v + 4.0 * a +
                         (moe_layer ? m->shared_experts * 2.0 * m->shared_ffn : 2.0 * m->ffn);
        /* Eager DTensor TP with sequence parallel (torchtitan's plan: wo and w2 RowwiseParallel
         * with output_layouts Shard(1), torch/distributed/tensor/parallel/style.py): a
         * row-parallel Linear's local matmul output is a Partial sum over the whole sequence,
         * [tokens, h] on every TP rank, which the output hook's reduce-scatter turns into the
         * rank's Shard(1) part. The caching dispatch mode stores the output of every op the
         * policy saves (above), and the policy saves reduce_scatter_tensor
         * (bench/realruns/sac_policy.py, torchtitan's list): w2, the 7th matmul (saved), keeps
         * its whole-sequence output (2h a token, not divided by TP) beside its reduce-scatter's
         * (the 2h above); wo, the 4th (recomputed), still keeps its reduce-scatter's output
         * (2h / tp). Measured: the TP + SAC runs of bench/results/sactp16_2026-11-28 and
         * ho15_2026-11-28 were 5-8% above this term's absence, their runs without
         * checkpointing within 2%. Compiled, the partitioner keeps only what the backward
         * reads (above). */
        double row_whole = 0;
        if (l->sp && l->tp > 1 && !l->compile) {
            repl_s += 2.0 * h;                    /* wo's reduce-scatter output */
            if (!moe_layer) row_whole = 2.0 * h;  /* w2's local Partial output */
        }
        return tokens * (repl_s / (l->sp ? tp : 1.0) + row_whole + shard_s / tp) + moe_bytes;
    }
    double repl = replicated_bytes_per_token(m, moe_layer);
    /* Low precision (precision.h): where the recipe saves a Linear's input quantized (TE,
     * DeepSeek-V3), the QKV and FC1 inputs (norm outputs) and the FC2 input (the activation's
     * product) take saved_input_bytes instead of 2, and the output projection keeps its own
     * quantized copy of the attention output beside the one flash attention saves. MoE expert
     * inputs are left in bf16 here. */
    if (pr.saved_input_bytes < 2.0) {
        double s = pr.saved_input_bytes;
        if (!m->mla) repl -= (2.0 - s) * h;   /* QKV input */
        if (!moe_layer) {
            repl -= (2.0 - s) * h;            /* FC1 input */
            sharded -= (2.0 - s) * m->ffn;    /* FC2 input */
        }
        sharded += s * a * v;                 /* attention output, quantized for the projection */
    }
    if (memory_torchao_compiled_recompute(m, l, moe_layer)) {
        /* torchao float8 under torch.compile: the QKV, FC1 and FC2 inputs are not saved (see
         * memory_torchao_compiled_recompute) */
        repl -= 4.0 * h;
        sharded -= 2.0 * m->ffn;
    }
    if (layout_is_pytorch(l) && !l->compile) {
        /* issue 14: what eager PyTorch code saves beyond Korthikanti's list.
         * Both: the attention output is transposed to [b, s, heads, d] and made contiguous
         * before o_proj, which saves that copy while SDPA keeps its own output: 2 a v more
         * where the transpose is not already contiguous (below).
         * Hugging Face: LlamaRMSNorm saves its fp32 upcast of the input (pow and x * rstd) and
         * the bf16 normalized tensor weight * (.) multiplies, where a fused norm keeps only the
         * bf16 input: 4h more per norm (two per layer); Qwen3's q/k norms the same 6 bytes per
         * element of q and k (fp32 4 + bf16 2).
         * Native (torchtitan): repeat_kv copies k and v to every query head before SDPA, which
         * saves the repeated tensors: 4 (a - kv) d more. */
        /* The contiguous copy is made only where SDPA's output is laid out [b, heads, s, d]:
         * torch's attention kernels give the output the query's layout. Separate q/k/v
         * projections' q (a view of q_proj's [b, s, heads, d] output, RoPE's result keeping
         * that layout) yields an output already [b, s, heads, d], so o_proj's
         * .transpose(1, 2).contiguous() copies nothing; the native block's cuDNN output is the
         * same. Phi-3's q is a slice of the fused qkv output, not dense, and RoPE's result is a
         * fresh [b, heads, s, d] tensor: the output follows it and the copy is made. Measured
         * (bench/realruns/hf_saved_probe.py, bench/results/hfsav20_2026-11-29: strides of the
         * tensors sdpa_attention.py line 158 saves, and whether o_proj's saved input
         * (modeling_llama.py line 280, modeling_phi3.py line 262) shares SDPA's output
         * storage): Llama-3.1-8B and Qwen3-8B share it, Phi-3-mini keeps its own copy; the
         * native block, bench/results/sac20_2026-11-29. */
        int impl = layout_impl_of(l);
        /* the Hugging Face layer form (alloc_step_forms.c, the allocator replay's table of
         * forms: transformers 5.17.0's norms, blocks, q/k norms and RoPE by model type); a
         * type it does not list keeps Llama's rules below */
        dims form = {.rf = m->rotary_fraction};
        if (impl != IMPL_HF || alloc_step_form_of(m, &form) != 0) form = (dims){.rf = 1};
        /* StableLM's and GPT-NeoX's partial RoPE ends in a torch.cat, a fresh [b, heads, s, d]
         * q, so SDPA's output is laid out so too and o_proj saves its contiguous copy, as
         * Phi-3's (alloc_step_attn_fwd's cc; replay25: StableLM's allocated -2.5%) */
        bool context_copy = impl == IMPL_HF ? m->hf_fused_qkv || form.rope_part
                                            : impl != IMPL_NATIVE;
        /* eager attention saves no output of its own: PV's matmul keeps its operands, o_proj
         * the one contiguous copy (modeling_gpt_oss.py line 262) */
        if (hf_eager) context_copy = false;
        if (context_copy) sharded += 2.0 * a * v;
        /* Eager SwiGLU w2(silu(w1 x) * w3 x) saves four tensors of the FFN width, not the
         * fused kernel's three: silu saves its input (w1's output), mul saves both operands
         * (silu's output and w3's output), w2 its input (the product); torch
         * tools/autograd/derivatives.yaml, entries silu (self) and mul.Tensor (self, other) */
        if (!moe_layer && m->activation == MODEL_ACT_SWIGLU) sharded += 2.0 * m->ffn;
        /* Qwen2-MoE's shared expert (alloc_step_moe.c shared_fwd: Qwen2MoeMLP, the same eager
         * SwiGLU at its width, and sigmoid(shared_expert_gate(x)) * shared_output, whose mul
         * saves down's [T, h] output and sigmoid's [T, 1] one) (memforms25) */
        if (moe_layer && layout_impl_of(l) == IMPL_HF && hf_experts_applies(l) && !m->mla &&
            m->shared_experts == 1 && !strcmp(m->hf_model_type, "qwen2_moe") &&
            m->activation == MODEL_ACT_SWIGLU)
            sharded += 2.0 * m->shared_ffn + 2.0 * h + 2.0;
        /* Apertus's xIELU, op by op: its mask and three more f-wide tensors (hf_xielu.h) */
        if (!moe_layer) sharded += hf_xielu_saved_bytes_per_token(m, l);
        if (layout_impl_of(l) == IMPL_HF) {
            /* GemmaRMSNorm (model.h norm_fp32_scale; elementwise_norm.c) keeps two fp32 tensors
             * and no bf16 one: x.float() (pow's and x * rstd's input) and x_hat (the product
             * with 1 + weight saves it), 8 bytes an element, for each of its norms (four with
             * Gemma 2/3's sandwich norms); only the input and pre-MLP norms' bf16 outputs are
             * kept, by q/k/v and gate/up (the base's QKV and FC1 inputs), so the base's two
             * norm inputs (4h) go. Measured (bench/results/gemma19_2026-11-29 owners.jsonl,
             * the allocator's owners at the peak): Gemma-3-1B seq 2048 mbs 8 keeps 9.41 GiB
             * from modeling_gemma3.py line 146 (x.float()) and 9.43 GiB from line 143 (x *
             * rstd): 8 x (4 x 1152 + (4 + 1) x 256) B a token and layer plus the final norm's. */
            int norms = model_layer_norms(m);
            if (m->norm == MODEL_NORM_RMS && m->norm_fp32_scale)
                repl += norms * 8.0 * h - 4.0 * h;
            else if (m->norm == MODEL_NORM_RMS)
                repl += norms * 4.0 * h;
            /* and each RMSNorm's fp32 rstd, which x * rsqrt(.) saves (derivatives.yaml
             * mul.Tensor): 4 bytes a row, per token for the layer norms and per head for the
             * q/k norms (seen: modeling_llama.py line 66 and modeling_qwen3.py line 63 save
             * [b, s, 1] and [b, s, heads, 1] fp32 tensors, bench/results/hfsav20_2026-11-29) */
            if (m->norm == MODEL_NORM_RMS) repl += norms * 4.0;
            /* The forms' norms, as alloc_step_forms.c lists them (memforms25):
             * Olmo2RMSNorm (modeling_olmo2.py 61-65) keeps x * rstd in fp32 for the weight's
             * product, not LlamaRMSNorm's bf16 copy: 2 bytes an element more. OLMo 2 applies
             * it after the sublayers (x + norm(attn(x))), where the attention saves x itself
             * and the MLP the sum (the base's two norm inputs and outputs, 8h, are those two
             * and the two fp32 x copies' halves: the same count).
             * CohereLayerNorm (modeling_cohere.py 51-65), all fp32 ops: x - mean twice (pow's
             * and the product's), rsqrt's output and the normalised product, 12 bytes an
             * element where the base counts the input's 2, beside rsqrt's fp32 row; and
             * weight.float(), 4h a call.
             * nn.LayerNorm (native_layer_norm): the input (the base's) and fp32 mean and rstd,
             * 8 bytes a row. */
            if (form.norm_form == ALLOC_NORM_FP32W) repl += norms * 2.0 * h;
            if (form.norm_form == ALLOC_NORM_COHERE) repl += norms * (10.0 * h + 4.0);
            if (form.norm_form == ALLOC_NORM_LN) repl += norms * 8.0;
            if (m->qk_norm) {
                /* per head (a + kv rows a token), or over the whole projection (OLMo 2,
                 * OLMoE: one row each for q and k); bytes an element as the layer norms' */
                double e = m->norm_fp32_scale || form.norm_form == ALLOC_NORM_FP32W ? 8.0
                           : form.norm_form == ALLOC_NORM_COHERE                    ? 12.0
                                                                                    : 6.0;
                sharded += e * (a + kv_heads) * qk;
                sharded += 4.0 * (form.qk_full ? 2.0 : a + kv_heads);
            }
            /* repeat_kv's copies on the layers with an explicit mask (elementwise.h
             * elementwise_hf_repeat_kv): SDPA saves the repeated k and v, a d each, where the
             * base counts kv d (seen: sdpa_attention.py repeat_kv line 24 holds 0.375 GiB for
             * Gemma-2-9B's two sliding layers of four, 12,288 tokens: 2 x 2 x 16 x 256 B a
             * token and layer); none at one KV head (a view) */
            if (m->kv_heads > 1 && m->kv_heads < m->heads)
                sharded += memory_hf_window_mask_share(m, t, l) * 2.0 * (a - kv_heads) * (qk + v);
            /* A fused projection (Phi-3's qkv_proj, modeling_phi3.py Phi3Attention.forward):
             * q, k and v are slices (views) of its one output; RoPE writes new q and k, which
             * SDPA saves, but the v it saves is still a view, and a view keeps its whole base
             * storage alive: the q and k parts of the fused output stay too, 2 (a + kv) d more
             * than the separate projections' (whose q and k outputs RoPE's mul does not save,
             * cos/sin needing no gradient: derivatives.yaml mul.Tensor). Phi-3's gate_up_proj
             * keeps 2f through gate and up, the same four f-wide tensors as the eager SwiGLU. */
            /* (Eager attention keeps no view of the fused output: repeat_kv's copy, or matmul's
             * reshape of the transposed v, is what PV saves.) */
            /* GPT-NeoX's query_key_value is chunked the same way (modeling_gpt_neox.py
             * 206-207: SDPA saves v, a view; RoPE's cat makes q and k anew) */
            if ((m->hf_fused_qkv || form.neox) && !hf_eager) sharded += 2.0 * (a + kv_heads) * qk;
        }
    }
    if (layout_is_pytorch(l) && layout_impl_of(l) == IMPL_NATIVE) {
        /* The native (torchtitan-style) block, eager or compiled, measured on one H200 (torch
         * 2.11, bench/realruns/sac_saved_probe.py, bench/results/sac20_2026-11-29: the slope of
         * the memory held after the blocks' forward between 1 and 3 layers, a token and layer):
         * compiled Llama-3.1-8B 151,688 B, Llama-3.2-3B 98,408 B, Qwen3-8B 149,800 B, each
         * equal to the base above plus: repeat_kv's copies of k and v to every query head, which
         * SDPA saves (4 (a - kv) d; the graph keeps them as eager does), the two RMSNorms' fp32
         * rstd (4 bytes a token each, F.rms_norm's saved statistic) and, with Qwen3's q/k
         * norms, their inputs and rstd (2 (a + kv) d + 4 (a + kv)). Eager, the same terms
         * without the contiguous copy: Llama-3.1-8B 178,312, Llama-3.2-3B 112,744, Qwen3-8B
         * 172,328 measured, each 2 kv d (2,048 B) under this sum; with a warm-up before the
         * baseline (bench/realruns/hf_saved_probe.py, bench/results/hfsav20_2026-11-29) the
         * slope is this sum exactly (Llama-3.1-8B 180,360, Qwen3-8B 174,376 at s4k b2) and the
         * saved storages add up to it: the 2 kv d was a one-time allocation of sac20's first
         * measurement, not a per-layer tensor. */
        if (kv_heads < a) sharded += 4.0 * (a - kv_heads) * qk;
        repl += 8.0;
        if (m->qk_norm) sharded += 2.0 * (a + kv_heads) * qk + 4.0 * (a + kv_heads);
    }
    double repl_whole = 0;
    if (l->framework == FRAMEWORK_TORCHTITAN && l->sp && l->tp > 1) {
        /* DTensor sequence parallel (torchtitan's plan: PrepareModuleInput redistributes the
         * norm's Shard(1) output to Replicate before the Colwise wq/wk/wv and w1/w3,
         * torch/distributed/tensor/parallel/style.py): the Linear saves the all-gathered input
         * it was given, the whole sequence on every TP rank. Megatron saves the sharded input
         * and gathers it again in the backward (Korthikanti Sec. 4.2.2); DTensor does not. */
        if (!m->mla) repl_whole += 2.0 * h;     /* QKV input */
        if (!moe_layer) repl_whole += 2.0 * h;  /* FC1 (w1/w3) input */
        repl -= repl_whole;
    }
    double total = tokens * (repl / (l->sp ? tp : 1.0) + repl_whole + sharded / tp) + moe_bytes;
    total += memory_hf_window_mask_bytes(m, t, l);
    unsigned mods = recompute_modules_of(l);
    if (mods & ~RECOMPUTE_MOD_CORE_ATTN) {
        /* Megatron's selective recompute by module (recompute_modules.h): each module frees
         * what this function charged for it above, as the layer saves it */
        double s = pr.saved_input_bytes < 2.0 ? pr.saved_input_bytes : 2.0;
        double repl_div = l->sp ? tp : 1.0;
        recompute_saved_terms st = {0};
        /* the input norm's output (QKV input; MLA's down projections keep it in bf16) and the
         * pre-MLP norm's (FC1 or router input) */
        st.norm_outputs = tokens * (((m->mla ? 2.0 : s) + (moe_layer ? 2.0 : s)) * h) / repl_div;
        if (m->mla) st.qkv_up = tokens * 2.0 * (2.0 * a * qk + a * v) / tp;
        if (!moe_layer) {
            st.dense_mlp = tokens * (mlp_intermediate_bytes(m, m->ffn) - (2.0 - s) * m->ffn) / tp;
        } else {
            double shared = m->shared_experts * mlp_intermediate_bytes(m, m->shared_ffn);
            st.shared = tokens * shared / tp;
            /* the activation's output, the experts' FC2 input: 2 bytes per intermediate */
            st.expert_act = tokens * m->top_k * (layout_is_pytorch(l) ? 2.0 : s) * m->expert_ffn /
                            tp * moe_load_factor(t);
            st.moe_all = moe_bytes + st.shared + tokens * 4.0 * m->experts / repl_div;
        }
        double freed = recompute_modules_freed_bytes(mods, &st);
        total = freed < total ? total - freed : 0;
    }
    return total;
}

double memory_layer_checkpoint_bytes(const model_spec *m, const training_spec *t,
                                     const layout *l)
{
    double tokens = (double)l->mbs * t->seq_len / l->cp;
    return tokens * 2.0 * m->hidden / (l->sp ? l->tp : 1.0);
}

double memory_layer_transient_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    return cp_torch_backward_transient_bytes(m, t, l) + hf_eager_transient_bytes(m, t, l) +
           hf_sdpa_math_transient_bytes(m, t, l) + hf_xielu_transient_bytes(m, t, l);
}
