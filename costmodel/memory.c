/*
 * memory.c — per-GPU memory of a layout (sources in memory.h).
 *
 * Activation bytes per token of one layer, split as Korthikanti et al. 2022 (Table 2) split
 * GPT's 34 s b h: the part every TP rank keeps whole unless sequence parallelism shards it
 * (norm inputs 2h+2h, QKV and FC1 inputs 2h+2h, two 1-byte dropout masks) = 10h for GPT, and
 * the part TP shards (Q, K, V, context 8h; MLP intermediates 16h for f = 4h) = 24h; plus
 * 5as per token for the unfused softmax/dropout, which selective recompute and flash
 * attention do not store. The tests check the GPT identity 34sbh + 5as^2b.
 */
#include "memory.h"
#include "memory_memo.h"
#include "memory_params.h"
#include "memory_precision.h"
#include "offload.h"
#include "overlap.h"
#include "async_tp.h"
#include "cp_allgather.h"
#include "moe_dispatch.h"
#include "cuda_graphs.h"
#include "memory_phases.h"
#include "memory_pools.h"
#include "nccl_memory.h"
#include "pp_schedule.h"
#include "recompute_modules.h"

#include <string.h>

#include "precision.h"

/* Bytes per token kept whole on each TP rank (sharded by tp only under SP). */
static double replicated_bytes_per_token(const model_spec *m, int moe_layer)
{
    double h = m->hidden;
    double b = 8.0 * h;                  /* LN1 in, QKV in, LN2 in, FC1 (or router) in */
    if (m->dropout) b += 2.0 * h;        /* attention-out and MLP-out dropout masks, 1 byte */
    if (m->mla) b += 4.0 * m->q_lora_rank + 4.0 * m->kv_lora_rank; /* latent norms' in/out */
    if (moe_layer) b += 4.0 * m->experts; /* fp32 router logits */
    return b;
}

static double mlp_intermediate_bytes(const model_spec *m, double width)
{
    /* SwiGLU keeps gate and up outputs (2+2 bytes) and the product (2); GeLU its input and
     * output (2+2). */
    return (m->activation == MODEL_ACT_SWIGLU ? 6.0 : 4.0) * width;
}

double memory_hf_window_mask_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    /* Hugging Face transformers builds an explicit boolean mask [b, 1, s, s] when a sliding
     * window is shorter than the sequence (layer_recipe.c, masking_utils.sdpa_mask); torch's
     * scaled_dot_product_attention turns it into an additive mask of the query dtype in every
     * call (aten/src/ATen/native/transformers/attention.cpp: convert_boolean_attn_mask(_cudnn),
     * at::where over the mask: a new bf16 tensor of the mask's full shape, b s^2 x 2 bytes),
     * and the attention op saves it for its backward (attn_bias): one per sliding layer,
     * averaged over the layers as the rest of this function is. */
    if (!layout_is_pytorch(l) || layout_impl_of(l) != IMPL_HF || m->sliding_window <= 0 ||
        m->sliding_window >= t->seq_len || m->layers <= 0)
        return 0;
    double frac = (double)model_sliding_layers(m) / m->layers;
    return frac * 2.0 * l->mbs * ((double)t->seq_len / l->cp) * t->seq_len;
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
     * intermediates (split by etp) and its output for the combine (2h). */
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
    if (l->framework == FRAMEWORK_TORCHTITAN && !l->compile) {
        /* eager torchtitan MoE (torchtitan/models/moe.py): GroupedExperts' SwiGLU saves
         * silu's output too (8 bytes x expert_ffn, as the dense eager MLP), and the combine
         * scores the expert output in fp32, routed_output.to(torch.float32) * top_scores,
         * whose mul saves the fp32 copy: 4h a copy, not 2h */
        if (m->activation == MODEL_ACT_SWIGLU) per_copy += 2.0 * m->expert_ffn;
        per_copy += 2.0 * h;
    }
    return tokens * m->top_k * per_copy / l->tp * moe_load_factor(t);
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
    if (t->attention == ATTENTION_FLASH) {
        attn += 4.0 * a; /* fp32 log-sum-exp per head */
    } else if (l->recompute != RECOMPUTE_SELECTIVE) {
        /* softmax output (2), dropout mask (1) and dropout output (2) per score; without
         * dropout only the softmax output. Scores per token: a * s. */
        attn += (m->dropout ? 5.0 : 2.0) * a * t->seq_len;
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
        return tokens * (repl_s / (l->sp ? tp : 1.0) + shard_s / tp) + moe_bytes;
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
    if (layout_is_pytorch(l) && !l->compile) {
        /* issue 14: what eager PyTorch code saves beyond Korthikanti's list.
         * Both: the attention output is transposed to [b, s, heads, d] and made contiguous
         * before o_proj, which saves that copy while SDPA keeps its own output: 2 a v more.
         * Hugging Face: LlamaRMSNorm saves its fp32 upcast of the input (pow and x * rstd) and
         * the bf16 normalized tensor weight * (.) multiplies, where a fused norm keeps only the
         * bf16 input: 4h more per norm (two per layer); Qwen3's q/k norms the same 6 bytes per
         * element of q and k (fp32 4 + bf16 2).
         * Native (torchtitan): repeat_kv copies k and v to every query head before SDPA, which
         * saves the repeated tensors: 4 (a - kv) d more. */
        sharded += 2.0 * a * v;
        /* Eager SwiGLU w2(silu(w1 x) * w3 x) saves four tensors of the FFN width, not the
         * fused kernel's three: silu saves its input (w1's output), mul saves both operands
         * (silu's output and w3's output), w2 its input (the product); torch
         * tools/autograd/derivatives.yaml, entries silu (self) and mul.Tensor (self, other) */
        if (!moe_layer && m->activation == MODEL_ACT_SWIGLU) sharded += 2.0 * m->ffn;
        if (layout_impl_of(l) == IMPL_HF) {
            if (m->norm == MODEL_NORM_RMS) repl += 2.0 * 4.0 * h;
            if (m->qk_norm) sharded += 6.0 * (a + kv_heads) * qk;
            /* A fused projection (Phi-3's qkv_proj, modeling_phi3.py Phi3Attention.forward):
             * q, k and v are slices (views) of its one output; RoPE writes new q and k, which
             * SDPA saves, but the v it saves is still a view, and a view keeps its whole base
             * storage alive: the q and k parts of the fused output stay too, 2 (a + kv) d more
             * than the separate projections' (whose q and k outputs RoPE's mul does not save,
             * cos/sin needing no gradient: derivatives.yaml mul.Tensor). Phi-3's gate_up_proj
             * keeps 2f through gate and up, the same four f-wide tensors as the eager SwiGLU. */
            if (m->hf_fused_qkv) sharded += 2.0 * (a + kv_heads) * qk;
        } else if (layout_impl_of(l) == IMPL_NATIVE && kv_heads < a) {
            sharded += 4.0 * (a - kv_heads) * qk;
        }
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

bool memory_fits(const memory_breakdown *mb)
{
    return mb->need_bytes <= mb->capacity_bytes;
}


double memory_in_flight(const layout *l, int microbatches, int stage)
{
    return pp_schedule_in_flight(l, microbatches, stage); /* per schedule (pp_schedule.h) */
}

/* The per-layer figures every stage of a layout shares, each computed on first use, so
 * memory_peak's candidate stages compute them once (a search asks per layout). */
typedef struct {
    const memory_model_counts *counts; /* the model's (memory_model_counts_of) */
    memory_memo *memo; /* the search's, or NULL (memory_memo.h) */
    int act_slot;      /* l's activation slot in memo; -1: not looked up yet */
    bool have_act[2], have_params[2];
    double act_bytes[2], params[2]; /* dense, MoE layer */
    /* the figures of the layout no stage changes (layout_once: the first stage computes them,
     * the other candidates take them) */
    bool have_layout, have_ckpt;
    int micro;                  /* layout_microbatches */
    int act_off_layers;         /* offload_activation_layers */
    int head_stage;             /* layout_head_stage */
    double shard_nd, shard_ne;  /* layout_shard_group; layout_expert_dp within shard_size */
    double opt_host_fraction;   /* offload_optimizer_fraction */
    double userbuffer_bytes;    /* overlap_tp_userbuffer_bytes */
    double async_tp_bytes;      /* async_tp_workspace_bytes */
    double cp_transient_bytes;  /* cp_torch_backward_transient_bytes */
    double ckpt_bytes;          /* memory_layer_checkpoint_bytes (have_ckpt) */
} layer_figures;

static void layout_once(layer_figures *f, const model_spec *m, const training_spec *t,
                        const layout *l)
{
    if (f->have_layout) return;
    f->micro = layout_microbatches(l, t);
    f->act_off_layers = offload_activation_layers(m, l);
    f->head_stage = layout_head_stage(l);
    f->shard_nd = layout_shard_group(l);
    double ne = layout_expert_dp(l);
    if (l->shard_size > 0 && l->shard_size < ne) ne = l->shard_size;
    f->shard_ne = ne;
    f->opt_host_fraction = offload_optimizer_fraction(l);
    f->userbuffer_bytes = overlap_tp_userbuffer_bytes(m, t, l);
    f->async_tp_bytes = async_tp_workspace_bytes(m, t, l);
    f->cp_transient_bytes = cp_torch_backward_transient_bytes(m, t, l);
    f->have_layout = true;
}

static double ckpt_of(layer_figures *f, const model_spec *m, const training_spec *t,
                      const layout *l)
{
    if (!f->have_ckpt) {
        f->ckpt_bytes = memory_layer_checkpoint_bytes(m, t, l);
        f->have_ckpt = true;
    }
    return f->ckpt_bytes;
}

static double layer_act(layer_figures *f, const model_spec *m, const training_spec *t,
                        const layout *l, int moe)
{
    if (!f->have_act[moe]) {
        if (f->memo) {
            if (f->act_slot < 0) f->act_slot = memory_memo_activation_slot(f->memo, t, l);
            f->act_bytes[moe] = memory_memo_activation_bytes(f->memo, f->act_slot, m, t, l, moe);
        } else {
            f->act_bytes[moe] = memory_layer_activation_bytes(m, t, l, moe);
        }
        f->have_act[moe] = true;
    }
    return f->act_bytes[moe];
}

static double layer_params_of(layer_figures *f, const model_spec *m, const layout *l, int moe)
{
    if (!f->have_params[moe]) {
        f->params[moe] = memory_layer_params_counted(m, f->counts, l, moe);
        f->have_params[moe] = true;
    }
    return f->params[moe];
}

/* What the parts of one stage's memory read of it (stage_memory). */
typedef struct {
    int stage, n_layers, start, moe_layers;
    int micro;            /* the layout's micro-batches, at least 1 */
    double in_flight;     /* memory_in_flight of the stage */
    double params;        /* the stage's parameters */
    double sharded;       /* this GPU's shard of them */
    double layer_params;  /* one layer's (the stage's MoE kind where it has MoE layers) */
    bool own_experts;     /* memory_experts_own_unit */
    double kind_params[2]; /* a dense and an MoE layer's, for low precision (memory_precision.h) */
    const double *lp;      /* the stage's memory_stage_lp_params (the memo's), or NULL */
} stage_figures;

/* The stage's weights, gradients, optimizer state, communication buffers and framework
 * reserve into r; returns FSDP's units and gradients in flight (the buffers before the
 * rest). */
static double stage_state(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, const stage_figures *s, const layer_figures *fig,
                          memory_breakdown *r)
{
    double params = s->params, sharded = s->sharded, layer_params = s->layer_params;
    double grad_bytes = t->grad_reduce_bf16 ? 2.0 : 4.0;
    double fsdp_buffer_bytes = 0; /* FSDP's units and gradients in flight (memory_phases.h) */
    switch (l->sharding) {
    case SHARDING_DDP: /* Megatron DDP: bf16 params, fp32 main grads, fp32 master + Adam */
        r->weights_bytes = 2.0 * params;
        r->gradients_bytes = grad_bytes * params;
        r->optimizer_bytes = 12.0 * params;
        break;
    case SHARDING_DISTOPT: /* Megatron distributed optimizer: 6 + 12/d bytes per parameter */
        r->weights_bytes = 2.0 * params;
        r->gradients_bytes = grad_bytes * params;
        r->optimizer_bytes = 12.0 * sharded;
        if (l->optimizer_bf16_states) { /* bf16 main grads, bf16 Adam m and v (layout.h) */
            r->gradients_bytes = 2.0 * params;
            r->optimizer_bytes = 8.0 * sharded;
        }
        break;
    case SHARDING_FSDP:
        if (layout_is_pytorch(l)) {
            /* torch FSDP2 + MixedPrecisionPolicy(bf16 params, fp32 reduce): fp32 sharded
             * params and grads, Adam m and v; gathered bf16 layers in flight. */
            r->weights_bytes = 4.0 * sharded;
            r->gradients_bytes = 4.0 * sharded;
            r->optimizer_bytes = 8.0 * sharded;
            /* In the blocks' backward: the root unit (embedding, final norm, head; tp-split),
             * the block being back-propagated and the prefetched one, and the block's bf16 and
             * fp32 (reduce-scatter input) gradients. Without reshard_after_forward every unit
             * stays gathered instead (below), the root and the two blocks among them. */
            /* the two units in flight: two blocks, or with torchtitan's expert units one
             * experts unit and one block unit, one layer between them (memory_phases.h
             * memory_experts_own_unit) */
            double pair = (s->own_experts ? 1.0 : 2.0) * layer_params;
            r->comm_buffer_bytes = (2.0 + 4.0) * pair;                     /* bf16 + fp32 grads */
            if (l->pp > 1 && fig->micro > 1) {
                /* torch pipelining reduces only in the last micro-batch's backward
                 * (stage.py backward_maybe_with_nosync: set_requires_gradient_sync(
                 * last_backward)); before it each block's bf16 gradient is added into
                 * FSDP2's fp32 unsharded accumulator, and the fp32 reduce-scatter input
                 * exists only in that last backward, when the stage holds one micro-batch:
                 * one block's bf16 gradient at the peak */
                r->comm_buffer_bytes = 2.0 * layer_params;
                /* that accumulator is the unsharded gradient of every parameter of the stage
                 * (FSDP2 _fsdp_param.py to_accumulated_grad_if_needed: the unsharded grad in
                 * the reduce dtype, fp32, kept across the no-sync backwards); the sharded
                 * fp32 gradients were freed by zero_grad. With dp 1 the two are the same
                 * bytes; with FSDP 8 x TP 8 x PP 8 for Llama-3.1-405B it is 4 bytes x 6.3e9,
                 * not x 0.8e9 (torchtitan's published 405B runs, test_published_torchtitan) */
                r->gradients_bytes = 4.0 * params;
            }
            if (l->reshard_after_forward)
                r->comm_buffer_bytes += memory_root_gathered_bytes(m, l, s->stage) +
                                        2.0 * pair;                       /* cur + prefetch */
        } else {
            /* Megatron-FSDP optim_grads_params: bf16 params, main grads, fp32 master + Adam,
             * all sharded; two gathered units and two unsharded gradient buckets in flight. */
            r->weights_bytes = 2.0 * sharded;
            r->gradients_bytes = grad_bytes * sharded;
            r->optimizer_bytes = 12.0 * sharded;
            if (l->optimizer_bf16_states) {
                r->gradients_bytes = 2.0 * sharded;
                r->optimizer_bytes = 8.0 * sharded;
            }
            r->comm_buffer_bytes = 2.0 * 2.0 * layer_params + 2.0 * grad_bytes * layer_params;
        }
        if (!l->reshard_after_forward)
            r->comm_buffer_bytes += 2.0 * params; /* every unit stays gathered until backward */
        fsdp_buffer_bytes = r->comm_buffer_bytes;
        if (l->offload) r->weights_bytes = r->gradients_bytes = r->optimizer_bytes = 0;
        break;
    }

    memory_precision_add(m, l, s->stage, s->n_layers, s->moe_layers, s->kind_params,
                         s->lp, r);
    r->optimizer_bytes *= 1 - fig->opt_host_fraction; /* its share on the host */

    r->comm_buffer_bytes += memory_pp_recv_buffers_bytes(m, t, l, s->stage, s->micro,
                                                         s->in_flight);
    r->comm_buffer_bytes += fig->userbuffer_bytes; /* --tp-comm-overlap */
    r->comm_buffer_bytes += fig->async_tp_bytes;   /* torchtitan --async-tp */
    r->framework_bytes = sys->framework_reserved_bytes;
    if (layout_is_pytorch(l) && sys->cuda_context_bytes > 0) {
        /* issue 14: measured piece by piece (system.h); one communicator for the FSDP group,
         * a second for HSDP's replica group */
        int comms = l->shard_size > 0 && l->shard_size < layout_gpus(l) ? 2 : 1;
        /* torchtitan: one more per model-parallel mesh axis in use (parallel_dims.py builds a
         * process group for each of tp, cp, pp and ep) */
        if (l->framework == FRAMEWORK_TORCHTITAN)
            comms += (l->tp > 1) + (l->cp > 1) + (l->pp > 1) + (l->ep > 1);
        double nccl = comms * sys->nccl_communicator_bytes;
        /* over >= 2 ranks: the measured world, group and peer figures (nccl_memory.h) */
        double nccl_mr = nccl_memory_bytes(sys, l);
        if (nccl_mr >= 0) nccl = nccl_mr;
        r->framework_bytes = sys->cuda_context_bytes + nccl + sys->library_workspace_bytes;
    }
    return fsdp_buffer_bytes;
}

/* What the activation part leaves for the stage's totals and torch's phases. */
typedef struct {
    double act_layer_max;      /* the largest layer's activations */
    double working;            /* the layer in backward's own transient bytes */
    double phase_relief_bytes; /* what the components' own peaks do not hold at once */
} stage_act_rest;

/* The stage's activations (all in-flight micro-batches), their host share, the logits and the
 * largest block into r; torch FSDP2's loss and block phases read fsdp_buffer_bytes. */
static stage_act_rest stage_activations(const model_spec *m, const training_spec *t,
                                        const layout *l, const stage_figures *s,
                                        layer_figures *fig, double fsdp_buffer_bytes,
                                        memory_breakdown *r)
{
    int stage = s->stage, n_layers = s->n_layers, start = s->start, moe_layers = s->moe_layers;
    int micro = s->micro;
    bool head = stage == fig->head_stage;
    double act_dense = layer_act(fig, m, t, l, 0);
    double act_moe = moe_layers ? layer_act(fig, m, t, l, 1) : 0;
    double act_full = (n_layers - moe_layers) * act_dense + moe_layers * act_moe;
    double act_layer_max = moe_layers ? act_moe : act_dense;
    if (precision_is_low(l) && (l->bf16_layers_start > 0 || l->bf16_layers_end > 0 ||
                                start + n_layers > m->layers)) {
        /* bf16 first/last layers (precision.h) save their inputs in bf16 (none without them,
         * unless the stage runs past the model's last layer, which precision_layer_bf16
         * counts as one: the loop is skipped otherwise, a search prices this per layout) */
        layout lb = precision_bf16_layout(l);
        for (int i = start; i < start + n_layers; i++) {
            if (!precision_layer_bf16(m, l, i)) continue;
            int moe_i = memory_layer_is_moe(m, i);
            double a = memory_layer_activation_bytes(m, t, &lb, moe_i);
            act_full += a - (moe_i ? act_moe : act_dense);
            if (a > act_layer_max) act_layer_max = a;
        }
    }
    /* the last stage's MTP modules (recipe_mtp.c): a layer of the decoder's last kind each,
     * plus eh_proj's saved input (2h bf16 per token, the rank's sequence share under SP) */
    int mtp = head ? layout_mtp_layers(m, l) : 0;
    double mtp_act = 0; /* per micro-batch; a checkpoint each under full recompute */
    if (mtp > 0) {
        bool mtp_moe = model_layer_is_moe(m, m->layers - 1);
        double tokens = (double)l->mbs * t->seq_len / l->cp / (l->sp ? l->tp : 1);
        mtp_act = mtp * (l->recompute == RECOMPUTE_FULL
                             ? ckpt_of(fig, m, t, l)
                             : (mtp_moe ? layer_act(fig, m, t, l, 1) : act_dense) +
                                   4.0 * m->hidden * tokens);
    }
    double per_micro;
    double working = 0;
    if (l->recompute == RECOMPUTE_FULL) {
        int rec = l->recompute_layers > 0 && l->recompute_layers < n_layers ? l->recompute_layers
                                                                            : n_layers;
        double ckpt = ckpt_of(fig, m, t, l);
        per_micro = rec * ckpt + (n_layers - rec) * act_layer_max;
        working = act_layer_max; /* the layer being recomputed and back-propagated */
    } else {
        per_micro = act_full;
        if (l->framework == FRAMEWORK_TORCHTITAN && l->recompute == RECOMPUTE_SELECTIVE) {
            /* the layer being recomputed holds its whole activations during its backward */
            layout whole = *l;
            whole.recompute = RECOMPUTE_NONE;
            working = memory_layer_activation_bytes(m, t, &whole, moe_layers > 0) - act_layer_max;
            if (working < 0) working = 0;
        }
    }
    per_micro += mtp_act;
    /* PyTorch's ring attention: the layer in backward also holds its fp32 accumulators, the
     * dK/dV exchanged and, by all-gather, the gathered K/V (cp_allgather.h) */
    working += fig->cp_transient_bytes;
    r->activations_bytes = s->in_flight * per_micro + working;
    /* Megatron activation offload (offload.h): the offloaded layers' activations wait on the
     * host. Transformer Engine's schedule releases layer i's GPU copy before layer L-N+i's
     * forward, so the saved activations held peak at L-N layers' (cpu_offload.py's
     * DefaultOffloadSynchronizer docstring); the layer being computed is `working`. */
    int act_off = fig->act_off_layers;
    if (act_off > 0 && n_layers > 0) {
        double saved = s->in_flight * act_off * (act_full / n_layers);
        if (saved > r->activations_bytes) saved = r->activations_bytes;
        r->activations_bytes -= saved;
        r->host_activation_bytes = saved;
    }
    double phase_relief_bytes = 0; /* what the components' own peaks do not hold at once */
    if (head) {
        /* each MTP module computes its own logits and loss (recipe_mtp.c) */
        r->logits_bytes = (1 + layout_mtp_layers(m, l)) * memory_logits_bytes(m, t, l);
        if (layout_is_pytorch(l) && l->sharding == SHARDING_FSDP && !l->offload) {
            double all_gathered = l->reshard_after_forward ? 0 : 2.0 * s->params;
            r->loss_phase_bytes =
                memory_loss_phase_bytes(m, l, stage, r->logits_bytes, all_gathered);
            r->blocks_phase_bytes = memory_blocks_phase_bytes(m, t, l, stage, fsdp_buffer_bytes);
            /* the layer in backward's transient (`working`: its recompute, its eager extras,
             * the ring's buffers) exists only in the blocks' moment: the loss's buffers are
             * freed before the first block's backward starts (tt12: eager minus compiled peak
             * measured with no constant part, bench/results/tt12_2026-11-28) */
            double blocks = r->blocks_phase_bytes + working;
            double phase = r->loss_phase_bytes > blocks ? r->loss_phase_bytes : blocks;
            phase_relief_bytes = r->logits_bytes + fsdp_buffer_bytes + working - phase;
        }
        /* torch pipelining: the other micro-batches' outputs wait on the last stage */
        r->logits_bytes += memory_pp_held_outputs_bytes(m, t, l, stage, micro);
        r->activations_bytes += r->logits_bytes;
    }
    /* The logits' fp32 buffers are allocated at the training peak (memory_logits_bytes). Seen
     * in bench/realruns (one H100, default allocator): Qwen3-4B seq 4096 mbs 1 predicted at
     * 77.3 of 79.2 GiB (1.9 GiB free) ran out of memory after 3 allocator retries with a
     * 2.32 GiB logits buffer to place; the runs whose free memory exceeded their buffer ran
     * (Qwen3-4B checkpointed: 2.95 GiB free for 2.32; Qwen3-8B-L8 seq 8k mbs 2: 9.67 for
     * 9.27; native Llama-3.2-3B seq 8k mbs 2: 8.12 for 7.83). */
    r->largest_block_bytes = head ? memory_largest_block_bytes(m, t, l) : 0;
    return (stage_act_rest){.act_layer_max = act_layer_max, .working = working,
                            .phase_relief_bytes = phase_relief_bytes};
}

static memory_breakdown stage_memory(const model_spec *m, const system_spec *sys,
                                     const training_spec *t, const layout *l, int stage,
                                     layer_figures *fig);

memory_breakdown memory_stage(const model_spec *m, const system_spec *sys,
                              const training_spec *t, const layout *l, int stage)
{
    memory_model_counts c;
    memory_model_counts_of(m, &c);
    layer_figures fig = {.counts = &c};
    return stage_memory(m, sys, t, l, stage, &fig);
}

/* One stage's memory: its state part (stage_state), its activation part (stage_activations),
 * and their totals; under torch, the optimizer step's and the backward's end peaks. */
static memory_breakdown stage_memory(const model_spec *m, const system_spec *sys,
                                     const training_spec *t, const layout *l, int stage,
                                     layer_figures *fig)
{
    memory_breakdown r;
    memset(&r, 0, sizeof r);
    r.stage = stage;
    r.capacity_bytes = sys->hbm_bytes;

    memory_stage_figures *held = fig->memo ? memory_memo_stage_find(fig->memo, l, stage) : NULL;
    memory_stage_figures own;
    if (!held) {
        memory_stage_figures sf;
        sf.n_layers = layout_stage_layers(m, l, stage);
        sf.start = layout_stage_start(m, l, stage);
        sf.moe_layers = memory_moe_layers_from(m, sf.start, sf.n_layers);
        memory_stage_params_counted(m, fig->counts, l, stage, sf.n_layers, sf.moe_layers,
                             &sf.dense_params, &sf.expert_params);
        sf.have_lp = false;
        if (fig->memo) held = memory_memo_stage_put(fig->memo, l, stage, &sf);
        else own = sf;
    }
    const memory_stage_figures *pf = held ? held : &own;
    layout_once(fig, m, t, l);
    stage_figures s = {.stage = stage, .n_layers = pf->n_layers, .start = pf->start,
                       .moe_layers = pf->moe_layers};
    double pd = pf->dense_params, pe = pf->expert_params;
    s.params = pd + pe;
    double nd = fig->shard_nd;
    double ne = fig->shard_ne;
    s.sharded = pd / nd + pe / ne; /* this GPU's shard of the stage's parameters */
    s.layer_params = layer_params_of(fig, m, l, s.moe_layers > 0);
    if (precision_is_low(l)) {
        s.kind_params[0] = layer_params_of(fig, m, l, 0);
        if (s.moe_layers > 0) s.kind_params[1] = layer_params_of(fig, m, l, 1);
    }
    /* --fp8-param-gather's low-precision parameters of the stage, kept in the memo beside its
     * other figures (the same doubles: a --precision any search asks per candidate stage) */
    if (held && precision_param_gather(l)) {
        if (!held->have_lp || held->lp_bf16_start != l->bf16_layers_start ||
            held->lp_bf16_end != l->bf16_layers_end) {
            memory_stage_lp_params(m, l, stage, &held->lp[0], &held->lp[1]);
            held->lp_bf16_start = l->bf16_layers_start;
            held->lp_bf16_end = l->bf16_layers_end;
            held->have_lp = true;
        }
        s.lp = held->lp;
    }
    s.own_experts = memory_experts_own_unit(l, s.moe_layers);
    s.micro = fig->micro < 1 ? 1 : fig->micro;
    s.in_flight = memory_in_flight(l, s.micro, stage);
    double sharded = s.sharded, layer_params = s.layer_params;
    bool own_experts = s.own_experts;
    int micro = s.micro, moe_layers = s.moe_layers;

    double fsdp_buffer_bytes = stage_state(m, sys, t, l, &s, fig, &r);
    stage_act_rest a = stage_activations(m, t, l, &s, fig, fsdp_buffer_bytes, &r);
    double act_layer_max = a.act_layer_max, working = a.working;

    r.other_bytes = r.comm_buffer_bytes + r.framework_bytes;
    r.total_bytes = r.weights_bytes + r.gradients_bytes + r.optimizer_bytes +
                    r.activations_bytes + r.other_bytes - a.phase_relief_bytes;
    double train_peak_bytes = r.total_bytes; /* before the optimizer step's peak, below */
    if (layout_is_pytorch(l) && !l->offload) {
        /* issue 14: torch's optimizer.zero_grad() sets the gradients to None (the default since
         * torch 2.0), so the step starts without them and the activations (with the loss's
         * buffers) peak at the start of the backward, before the first gradient exists; the
         * gradients then grow as the activations are freed, and peak with the optimizer step
         * below. Bench/realruns: Llama-3.2-3B seq 16k with checkpointing peaks at 64.5 GiB,
         * 7 GiB below params + grads + states + logits buffers. With gradient accumulation
         * the later micro-batches run with the gradients held. */
        bool graphs = cuda_graphs_on(l);
        /* under torchtitan's CUDA graphs zero_grad(set_to_none=False) keeps them (cuda_graphs.h;
         * measured: the graphed peak allocated is the eager one + the fp32 gradients within
         * 0.1 GiB, bench/results/cg11_2026-11-28) */
        if (micro <= 1 && !graphs) r.total_bytes -= r.gradients_bytes;
        train_peak_bytes = r.total_bytes;
        /* The optimizer step runs after the backward has freed the activations and the gathered
         * units: sharded params, grads and states, plus what the step itself allocates
         * (foreach: 4 bytes per parameter, impl.h; measured in bench/realruns: Llama-3.2-3B
         * peaks at 59.91 GiB = 20 bytes x 3.21e9 params with foreach, lower with fused). */
        r.optimizer_temp_bytes =
            optimizer_impl_temp_bytes_per_param(layout_optimizer_impl_of(l)) * sharded;
        r.optimizer_step_bytes = r.weights_bytes + r.gradients_bytes + r.optimizer_bytes +
                                 r.optimizer_temp_bytes + r.framework_bytes;
        /* torch pipelining's step() merging the kept outputs (memory_phases.h): after the
         * gradients are reduced, the sharded state, the chunks and their concatenation; the
         * chunks stay through the optimizer step */
        double merged = memory_pp_merged_outputs_bytes(m, t, l, stage, micro);
        if (merged > 0) {
            r.optimizer_step_bytes += merged / 2.0;
            double grads_sharded = l->sharding == SHARDING_FSDP ? 4.0 * sharded : r.gradients_bytes;
            double merge_bytes = r.weights_bytes + grads_sharded + r.optimizer_bytes + merged +
                                 r.framework_bytes;
            if (merge_bytes > r.total_bytes) r.total_bytes = merge_bytes;
        }
        double eager_step_bytes = r.optimizer_step_bytes;
        if (!graphs && r.optimizer_step_bytes > r.total_bytes) r.total_bytes = r.optimizer_step_bytes;
        if (l->sharding == SHARDING_FSDP && l->pp == 1 && micro <= 1 && l->reshard_after_forward) {
            /* the first block's backward, the last of the blocks (memory_phases.h): the sharded
             * gradients of every unit but it and the root, its activations (recomputed: its
             * checkpoint and its whole activations), FSDP2's buffers then */
            double root_params = memory_root_gathered_bytes(m, l, stage) / 2.0;
            /* the first layer's and the root's gradients are not made yet: its non-expert
             * parameters sharded over nd, its experts over ne (as `sharded` above) */
            double ld = layer_params, le = 0;
            if (moe_layers > 0) memory_layer_params_split(m, l, 1, &ld, &le);
            double grads_made = r.gradients_bytes - 4.0 * ((ld + root_params) / nd + le / ne);
            if (graphs) grads_made = r.gradients_bytes; /* kept since the step before */
            double last_act = act_layer_max + working;
            if (l->recompute == RECOMPUTE_FULL)
                last_act = act_layer_max + memory_layer_checkpoint_bytes(m, t, l);
            else if (own_experts && l->recompute == RECOMPUTE_NONE && !l->compile)
                /* the experts unit's post-backward runs once its experts' backward is done
                 * (FSDP2 registers it on the unit's inputs): the routed copies' saved
                 * tensors are freed by then, the block's attention ones are not yet */
                last_act -= memory_layer_routed_activation_bytes(m, t, l);
            r.backward_end_bytes = r.weights_bytes + r.optimizer_bytes + grads_made + last_act +
                                   memory_backward_end_buffer_bytes(m, t, l, layer_params) +
                                   r.framework_bytes;
            if (r.backward_end_bytes > r.total_bytes) r.total_bytes = r.backward_end_bytes;
        }
        if (graphs) {
            /* the graph's private memory pool keeps the captured forward + backward's peak for
             * the whole step (torch.cuda.graph(pool=...): the pool's blocks serve only its
             * graphs), so the optimizer's temporaries come on top of it, not of the sharded
             * state alone: persistent + captured peak + temporaries, r.total_bytes holding the
             * first two here */
            r.optimizer_step_bytes = r.total_bytes + r.optimizer_temp_bytes;
            if (r.optimizer_step_bytes < eager_step_bytes) r.optimizer_step_bytes = eager_step_bytes;
            r.total_bytes = r.optimizer_step_bytes;
        }
    }
    r.block_stage = stage; /* r.largest_block_bytes: the activation part's */
    r.need_bytes = r.total_bytes;
    /* torchtitan launches with expandable segments (run_train.sh: PYTORCH_ALLOC_CONF=
     * "expandable_segments:True", pytorch/torchtitan 0168bd5; --emit torchtitan exports it) */
    bool expandable = t->expandable_segments || l->framework == FRAMEWORK_TORCHTITAN;
    if (!expandable && train_peak_bytes + r.largest_block_bytes > r.need_bytes)
        r.need_bytes = train_peak_bytes + r.largest_block_bytes;
    r.train_peak_bytes = train_peak_bytes;
    /* torch.cuda's peak reserved (memory_pools.h): FSDP2's all-gather pool throughout, and its
     * reduce-scatter pool's sharded gradients where the training peak runs without them (freed
     * by zero_grad, or, under torch pipelining, made only in the last backward) */
    double ag, rs;
    memory_fsdp2_side_pools(m, l, stage, sharded, layer_params, moe_layers > 0, &ag, &rs);
    bool sharded_grads_absent = (micro <= 1 && !cuda_graphs_on(l)) || (l->pp > 1 && micro > 1);
    r.reserved_bytes = r.total_bytes - r.framework_bytes + ag;
    if (sharded_grads_absent && train_peak_bytes - r.framework_bytes + ag + rs > r.reserved_bytes)
        r.reserved_bytes = train_peak_bytes - r.framework_bytes + ag + rs;
    return r;
}

memory_breakdown memory_peak(const model_spec *m, const system_spec *sys,
                             const training_spec *t, const layout *l)
{
    memory_model_counts c;
    memory_model_counts_of(m, &c);
    return memory_peak_counted(m, &c, sys, t, l);
}

static memory_breakdown peak_of(const model_spec *m, const system_spec *sys,
                                const training_spec *t, const layout *l, layer_figures *f);

memory_breakdown memory_peak_counted(const model_spec *m, const memory_model_counts *c,
                                     const system_spec *sys, const training_spec *t,
                                     const layout *l)
{
    layer_figures fig = {.counts = c};
    return peak_of(m, sys, t, l, &fig);
}

memory_breakdown memory_peak_memo(const model_spec *m, memory_memo *memo,
                                  const system_spec *sys, const training_spec *t,
                                  const layout *l)
{
    if (memo->model != m) return memory_peak(m, sys, t, l); /* another model's memo */
    layer_figures fig = {.counts = &memo->counts, .memo = memo, .act_slot = -1};
    return peak_of(m, sys, t, l, &fig);
}

static memory_breakdown peak_of(const model_spec *m, const system_spec *sys,
                                const training_spec *t, const layout *l, layer_figures *f)
{
    /* Candidates: the first stage (most in flight, embedding), the first stage given an extra
     * layer, and the last (head, logits). Later middle stages hold fewer micro-batches. */
    layer_figures fig = *f;
    memory_breakdown best = stage_memory(m, sys, t, l, 0, &fig);
    double need = best.need_bytes, block = best.largest_block_bytes;
    int block_stage = best.block_stage;
    int later[2] = {1, l->pp - 1}; /* the second stage and the last */
    for (int i = 0; i < 2; i++) {
        if (later[i] < 1 || later[i] >= l->pp || (i == 1 && later[1] == later[0])) continue;
        memory_breakdown r = stage_memory(m, sys, t, l, later[i], &fig);
        if (r.need_bytes > need) {
            need = r.need_bytes;
            block = r.largest_block_bytes;
            block_stage = r.block_stage;
        }
        if (r.total_bytes > best.total_bytes) best = r;
    }
    /* the fullest stage's figures, and what the binding stage needs with its block */
    best.need_bytes = need > best.total_bytes ? need : best.total_bytes;
    best.largest_block_bytes = block;
    best.block_stage = block_stage;
    return best;
}
