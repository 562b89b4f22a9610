/*
 * elementwise.h — the memory-bound kernels (elementwise, copies, reductions) of one decoder
 * layer and of the loss head, forward and backward, per GPU and micro-batch: the list both the
 * cost model (estimate.c) and the backend's work (backend/work.c) are built from.
 *
 * FSDP2 trains Hugging Face modeling code in eager PyTorch: each op of the forward and each
 * autograd formula of the backward is its own CUDA kernel. The list is derived from
 * transformers' modeling_llama.py (LlamaRMSNorm, rotate_half/apply_rotary_pos_emb, LlamaMLP,
 * LlamaDecoderLayer) and PyTorch's tools/autograd/derivatives.yaml + FunctionsManual.cpp, and
 * checked kernel by kernel against a torch.profiler trace of a real FSDP2 step (bench/BACKEND.md,
 * "Eager elementwise kernels"). Megatron runs Transformer Engine's fused kernels: one lump of
 * bytes forward and twice that backward, as before.
 */
#ifndef PLAN_ELEMENTWISE_H
#define PLAN_ELEMENTWISE_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"
#include "system.h"

typedef struct {
    const char *name; /* static: "rmsnorm.to_fp32" (at most 27 characters) */
    double bytes;     /* HBM bytes one launch reads plus writes */
    int count;        /* identical launches per layer (or per head) and pass */
} elementwise_kernel;

#define ELEMENTWISE_MAX 64

typedef struct {
    bool eager; /* eager PyTorch kernels, priced at eager_elementwise_efficiency; false: fused
                   Transformer Engine kernels at hbm_efficiency */
    int n_fwd, n_bwd;
    elementwise_kernel fwd[ELEMENTWISE_MAX], bwd[ELEMENTWISE_MAX];
} elementwise_list;

/* One decoder layer (moe: its MLP is the MoE block) over `tokens` per GPU (mbs * seq / cp):
 * tensor-parallel work over its 1/tp shard, the rest over tokens / tp under sequence
 * parallelism. */
void elementwise_layer(const model_spec *m, const layout *l, double tokens, bool moe,
                       elementwise_list *out);

/* The loss head of the last stage: final norm (eager), logits.float() and cross-entropy over
 * vocab / tp logits per token. The lm_head GEMM is not in it. */
void elementwise_head(const model_spec *m, const layout *l, double tokens, elementwise_list *out);

/* Bytes and launches of n kernels (count included). */
double elementwise_bytes(const elementwise_kernel *k, int n);
int elementwise_launches(const elementwise_kernel *k, int n);

/* Time of one launch of k: its bytes at the list's rate (the memory term of compute.h's
 * roofline); eager kernels at the system's measured eager_elementwise_efficiency plus the idle
 * gap between back-to-back eager kernels (eager_kernel_gap_s; both in data/systems). */
double elementwise_kernel_s(const system_spec *sys, const elementwise_list *e,
                            const elementwise_kernel *k);

/* Time of n kernels, every launch of each. */
double elementwise_pass_s(const system_spec *sys, const elementwise_list *e,
                          const elementwise_kernel *k, int n);

#endif
