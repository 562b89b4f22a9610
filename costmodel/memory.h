/*
 * memory.h — per-GPU memory of a layout: parameters, gradients and optimizer states under DDP,
 * the distributed optimizer (ZeRO-1), FSDP (ZeRO-3, Megatron-FSDP or torch FSDP2) and HSDP;
 * activations per layer and per pipeline stage; logits; framework overhead.
 *
 * Sources: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
 * Models", Table 2 and Sec. 4 (activations, pipeline in-flight micro-batches); Rajbhandari et
 * al. 2020, "ZeRO", Sec. 5 (2+2+12 bytes/param, sharded by N); Megatron-LM distributed
 * optimizer docs (docs/source/api-guide/dist_optimizer.md: 6 + 12/d bytes/param with fp32
 * gradients); PyTorch FSDP2 fully_shard docs (sharded fp32 parameters, bf16 all-gather under
 * MixedPrecisionPolicy).
 */
#ifndef PLAN_MEMORY_H
#define PLAN_MEMORY_H

#include "layout.h"
#include "model.h"
#include "system.h"

typedef struct {
    double weights_bytes;      /* parameters resident on the GPU (bf16; fp32 master under FSDP2) */
    double gradients_bytes;
    double optimizer_bytes;    /* fp32 master copy (Megatron) and Adam moments */
    double activations_bytes;  /* stored for backward, all in-flight micro-batches, incl. logits */
    double logits_bytes;       /* part of activations_bytes: the output layer's logits */
    double comm_buffer_bytes;  /* gathered FSDP units and gradient buckets in flight */
    double framework_bytes;    /* CUDA context, workspaces, NCCL, allocator slack */
    double other_bytes;        /* comm_buffer_bytes + framework_bytes */
    double outside_allocator_bytes; /* part of comm_buffer_bytes that torch's caching allocator
                                       never sees (async TP's workspace, DeepEP's / HybridEP's
                                       buffers): in total_bytes, not in reserved_bytes */
    double optimizer_temp_bytes; /* what the optimizer step allocates while it runs (torch's
                                    foreach AdamW: the sqrt list, impl.h) */
    double optimizer_step_bytes; /* held during the optimizer step: weights, gradients, states,
                                    optimizer_temp_bytes, framework (activations are freed) */
    /* torch FSDP2 on the stage with the loss (memory_phases.h): the loss's buffers and the FSDP
     * units in flight at the two moments that can set the training peak; the training peak
     * holds the larger, not both (0 where the split does not apply) */
    double loss_phase_bytes;
    double blocks_phase_bytes;
    /* torch FSDP2 without pipelining: the last block's backward, every other gradient made
     * (memory_backward_end_buffer_bytes); 0 where it does not apply */
    double backward_end_bytes;
    /* torch FSDP2 without pipelining: the root unit's (embedding, final norm, output layer)
     * reduce-scatter at the backward's end, every block's sharded gradient made; 0 where it
     * does not apply */
    double root_reduce_bytes;
    double total_bytes;        /* the larger of the training peak and optimizer_step_bytes */
    double train_peak_bytes;   /* the forward/backward's peak before the optimizer step (the
                                  backend sizes its phases by it: backend/bk_pools.h) */
    /* What torch.cuda's peak reserved would read (the allocator's, without framework_bytes):
     * the peak allocated (total_bytes - framework_bytes) and, under torch FSDP2, the blocks its
     * side-stream pools hold that the default stream cannot reuse (memory_pools.h). Not a
     * feasibility figure by itself: on a failed request the allocator frees cached blocks and
     * retries; it decides whether the logits block needs room of its own (below). */
    double reserved_bytes;
    double capacity_bytes;
    int stage;                 /* the pipeline stage these figures are for (the fullest) */
    /* Fragmentation (issue 14): torch's caching allocator must find the largest single request
     * as one contiguous block. At the training peak that is one fp32 logits buffer (4 bytes a
     * logit, memory_largest_block_bytes). The training peak already holds it, and from the
     * second step on it comes from the cache (same sizes every step), so it needs no room of
     * its own while the reserved peak fits (reserved_bytes + framework_bytes <= capacity, torch
     * layouts: frag18). Where it does not, the allocator frees unsplit cached segments and
     * cudaMallocs again, and free memory left inside split segments cannot serve the block:
     * then a plan needs the training peak + that block, unless training_spec.expandable_segments
     * (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) lets segments grow. need_bytes is what
     * a plan must fit in capacity_bytes: total_bytes, or that sum where the block binds (max over
     * the stages for memory_peak; block_stage is where it binds). */
    double largest_block_bytes;
    double need_bytes;
    int block_stage;
    /* the caching allocator's replay of a covered single-GPU step (alloc_step.h) ran out of
     * memory on this device: a cudaMalloc failed after the cache's release (need_bytes is then
     * what it needed); the verdict is the replay's (memory.c, stage_totals) */
    bool replay_oom;
    double host_activation_bytes; /* Megatron activation offload (offload.h): the activations
                                     this GPU parks in host memory at the peak (0 without it) */
} memory_breakdown;
/* The share of the layers to which Hugging Face gives an explicit (sliding-window) attention
 * mask: its sliding layers once the sequence reaches the window, else 0 (--impl hf only). */
double memory_hf_window_mask_share(const model_spec *m, const training_spec *t, const layout *l);
/* The additive attention mask torch's SDPA makes from Hugging Face's explicit sliding-window
 * mask and saves per layer (b s^2 x 2 bytes, averaged over the layers by the share of sliding
 * ones); 0 unless --impl hf with a window no longer than the sequence. */
double memory_hf_window_mask_bytes(const model_spec *m, const training_spec *t, const layout *l);
/* Does l's dense layer run torchao float8 in a torch.compile'd block, whose graph recomputes the
 * QKV, FC1 and FC2 inputs inside the backward's casts instead of saving them
 * (memory_activations.c; measured, bench/results/fp8b19_2026-11-29)? */
bool memory_torchao_compiled_recompute(const model_spec *m, const layout *l, int moe_layer);
/* The layer in flight's own buffers, beyond what it keeps (memory_activations.c): PyTorch's
 * ring attention's backward, transformers' eager attention's score tensors and masks
 * (hf_eager_attn.h), SDPA's math backend's (hf_sdpa_math.h), xIELU's backward (hf_xielu.h). */
double memory_layer_transient_bytes(const model_spec *m, const training_spec *t, const layout *l);
/* Activation bytes one layer stores for backward, per micro-batch, on one GPU, without
 * recompute or with selective recompute (Korthikanti Table 2, generalised to GQA, SwiGLU, MoE,
 * MLA and flash attention). */
double memory_layer_activation_bytes(const model_spec *m, const training_spec *t,
                                     const layout *l, int moe_layer);
/* Of an MoE layer's memory_layer_activation_bytes (no recompute), what the routed expert copies
 * save: the permuted inputs, the experts' intermediates and the combine's inputs (top_k copies
 * per token, times the busiest rank's load factor). */
double memory_layer_routed_activation_bytes(const model_spec *m, const training_spec *t,
                                            const layout *l);
/* Bytes a fully recomputed layer keeps: its input (2sbh, sharded by tp under SP). */
double memory_layer_checkpoint_bytes(const model_spec *m, const training_spec *t,
                                     const layout *l);
/* Logits of one micro-batch on the last stage (Korthikanti Sec. 4.3: 4sbv/t, fp32). */
double memory_logits_bytes(const model_spec *m, const training_spec *t, const layout *l);
/* The largest single allocation of the last stage's training peak: one fp32 logits buffer of a
 * micro-batch (4 bytes x tokens x vocab / tp), the block the allocator must find whole. */
double memory_largest_block_bytes(const model_spec *m, const training_spec *t, const layout *l);
/* Does the plan fit? need_bytes <= capacity_bytes. */
bool memory_fits(const memory_breakdown *mb);

/* Parameters held by one GPU on stage s before data-parallel sharding: non-expert (sharded
 * over dp*cp) and expert (sharded over the expert data-parallel group). */
void memory_stage_params(const model_spec *m, const layout *l, int stage, double *dense_params,
                         double *expert_params);
/* The same split for one transformer layer (moe_layer: with an MoE MLP). */
void memory_layer_params_split(const model_spec *m, const layout *l, int moe_layer,
                               double *dense_params, double *expert_params);
/* The Linear weights among memory_layer_params_split's two that l keeps as low-precision
 * parameters (--fp8-param-gather, precision.h); zeros without it. */
void memory_layer_lp_params_split(const model_spec *m, const layout *l, int moe_layer,
                                  double *dense_params, double *expert_params);
/* Those of stage s's layers (its bf16 first/last layers keep bf16 weights). */
void memory_stage_lp_params(const model_spec *m, const layout *l, int stage,
                            double *dense_params, double *expert_params);
/* Is global layer i an MoE layer? */
bool memory_layer_is_moe(const model_spec *m, int layer);
/* Parameters of one transformer layer held by one GPU (tp/ep split), for FSDP gathers. */
double memory_layer_params(const model_spec *m, const layout *l, int moe_layer);

/* Micro-batches whose activations stage s holds at peak (1F1B; interleaved adds
 * (p-1)/(p v) on the first stage). */
double memory_in_flight(const layout *l, int microbatches, int stage);

/* The model's own parameter counts (model.h) that a layout's memory reads per stage and per
 * layer, counted once: a search holds them for every layout of one model (memory_peak_counted)
 * instead of counting them again per stage. */
typedef struct {
    double attention, norm, dense_mlp, expert, shared_expert, router, embedding, output;
} memory_model_counts;
void memory_model_counts_of(const model_spec *m, memory_model_counts *c);

/* Memory of stage s, and of the fullest stage. */
memory_breakdown memory_stage(const model_spec *m, const system_spec *sys,
                              const training_spec *t, const layout *l, int stage);
memory_breakdown memory_peak(const model_spec *m, const system_spec *sys,
                             const training_spec *t, const layout *l);
/* memory_peak with m's counts given (memory_model_counts_of(m)): the same figures. */
memory_breakdown memory_peak_counted(const model_spec *m, const memory_model_counts *c,
                                     const system_spec *sys, const training_spec *t,
                                     const layout *l);

#endif
