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

/*
 * The kernel PyTorch launches for an op, which decides how close to HBM bandwidth it runs
 * (aten/src/ATen/native/cuda: CUDALoops.cuh gpu_kernel_impl / gpu_kernel_impl_nocast,
 * Reduce.cuh, SoftMax.cu, Shape.cu, TensorShape.cu, MultiTensorApply.cuh). It follows from the
 * op: TensorIterator takes the vectorized path only when every operand is contiguous and no
 * operand needs a cast the kernel does not do itself; a broadcast operand (stride 0), a strided
 * one (a slice, a transposed layout) or mixed layouts send it to elementwise_kernel with an
 * offset computation per element and operand; a cast of contiguous operands to
 * unrolled_elementwise_kernel with LoadWithCast. bench/BACKEND.md checks each entry's pattern
 * against the kernel names of a profiled FSDP2 step.
 */
typedef enum {
    EW_VECTORIZED = 0, /* vectorized_elementwise_kernel (also fills, Memcpy DtoD, fp32->bf16
                          bfloat16_copy_kernel): contiguous, 16-byte loads and stores */
    EW_UNROLLED,       /* unrolled_elementwise_kernel, LoadWithCast/StoreWithCast: contiguous
                          with a cast (bf16->fp32 direct_copy); scalar loads through a runtime
                          dtype switch, 128 threads x 4 elements */
    EW_OFFSETS,        /* elementwise_kernel<128, 4> (<128, 2> for 4-byte results): a broadcast
                          or strided operand; per element, index -> offset of every operand
                          (OffsetCalculator, IntDivider), scalar loads and stores */
    EW_CAT,            /* CatArrayBatchedCopy: torch.cat of (strided) inputs, per-element
                          index -> offset of input and output, 2-byte scalar copies */
    EW_REDUCE_ROW,     /* reduce_kernel over the contiguous last dimension, [rows, w] -> [rows]
                          (mean(-1), sum to [T, 1]): a warp per row, 16-byte loads */
    EW_REDUCE_COL,     /* reduce_kernel over rows, [rows, w] -> [w] (sum_to a [h] weight):
                          threads over columns, blocks split the rows and combine through a
                          global staging buffer and semaphores (memset per launch); n[0] > 1:
                          [n0, rows, w] -> [n0, w], threads over all n0 * w outputs */
    EW_SOFTMAX_FWD,    /* cunn_SoftMaxForward (log_softmax): a block per row, three passes
                          over it (max, sum of exp, write) */
    EW_SOFTMAX_BWD,    /* cunn_SoftMaxBackward: a block per row, sum of grad, then write */
    EW_FOREACH_COPY,   /* multi_tensor_apply_kernel Copy (torch._foreach_copy_): 65536-element
                          chunks, a 512-thread block per chunk, <= 320 blocks per launch */
    EW_SPLIT_COPY,     /* split_with_sizes_copy_out_contiguous_no_cast_kernel: 16-byte copies
                          of [world, chunk] rows, 128-thread blocks */
    EW_CHUNK_CAT,      /* chunk_cat_cuda_kernel<float, BFloat16>: a scalar bf16 -> fp32 cast
                          per element, 128-thread blocks, a grid row per rank's chunk */
    EW_INDEX_ACCUM,    /* indexing_backward_kernel (index_put_ with accumulate, sorted indices):
                          a warp per destination row and 128-feature slice walks the row's run
                          of duplicate indices serially, a read-modify-write of the row per
                          duplicate (hf_experts.h moe_index_backward_runs) */
    EW_PATTERN_COUNT
} ew_pattern;

/* A kernel's operands: output, input a, input b. Elementwise patterns iterate n[0] x n[1] x
 * n[2] (outermost first) and read operand k at sum_i idx[i] * stride[k][i] elements (stride 0:
 * broadcast); EW_CAT: n is each input's logical shape, stride[1] and stride[2] the two inputs',
 * stride[0] the output's, the second input placed n[2] * stride[0][2] further; reductions and
 * softmax: [n[1], n[2]] contiguous rows; FSDP2's copies: n[1] ranks' chunks of n[2] elements
 * (EW_FOREACH_COPY: n[2] elements in all); EW_INDEX_ACCUM: n[1] destination rows of n[2]
 * elements (output), each accumulating a run of n[0] source rows (input a, [n[1] x n[0], n[2]]):
 * n[0] is the longest run, which the kernel's time follows. */
typedef struct {
    ew_pattern pattern;
    int esize[3];      /* bytes per element of output, a, b; 0: no such operand */
    long n[3];
    long stride[3][3]; /* [operand][dim], elements */
} ew_access;

typedef struct {
    const char *name; /* static: "rmsnorm.to_fp32" (at most 27 characters) */
    double bytes;     /* HBM bytes one launch reads plus writes */
    int count;        /* identical launches per layer (or per head) and pass */
    ew_access access; /* the kernel PyTorch runs for it (backend/kernels_ew.cu runs the same) */
    int inner;        /* of its count, the launches C++ issues inside an op dispatch that another
                       * launch began (cub's sort passes, index_put_'s sort and update kernels):
                       * host time host.eager_inner_launch_s each (host_dispatch.c); 0: none */
} elementwise_kernel;

#define ELEMENTWISE_MAX 64

typedef struct {
    bool eager; /* eager PyTorch kernels, priced at eager_elementwise_efficiency; false: fused
                   Transformer Engine kernels at hbm_efficiency */
    bool alone; /* one GPU (issue 14): no NCCL or FSDP2 copy kernels run beside them; priced
                   at eager_elementwise_efficiency_alone where the system gives it */
    bool inductor; /* torch.compile'd native block: Inductor's generated kernels, priced at
                      inductor_elementwise_efficiency where the system gives it; the aten ops it
                      leaves eager (names "aten.") as eager kernels */
    int n_fwd, n_bwd;
    elementwise_kernel fwd[ELEMENTWISE_MAX], bwd[ELEMENTWISE_MAX];
} elementwise_list;

/* One decoder layer (moe: its MLP is the MoE block) over `tokens` per GPU (mbs * seq / cp):
 * tensor-parallel work over its 1/tp shard, the rest over tokens / tp under sequence
 * parallelism. */
void elementwise_layer(const model_spec *m, const layout *l, double tokens, bool moe,
                       elementwise_list *out);

/* Hugging Face's SDPA call on the layers it gives an explicit (sliding-window) mask, `share` of
 * them (memory_hf_window_mask_share): transformers 5.17.0 integrations/sdpa_attention.py
 * sdpa_attention_forward (lines 97-102; use_gqa_in_sdpa, line 36: enable_gqa only without a
 * mask) expands k and v to every query head with repeat_kv (lines 15-24) before SDPA: a copy of
 * each (unless there is one KV head, where expand + reshape is a view: bench/results/
 * gemma19_2026-11-29 sdpa_probe.json, no copy kernel and nothing kept at 1 KV head, two
 * direct_copy kernels at 8 of 16), and in the backward a sum over the repeats. Appended to a
 * layer's eager list; nothing for other lists. */
void elementwise_hf_repeat_kv(const model_spec *m, const layout *l, double tokens, double share,
                              elementwise_list *out);

/* The loss head of the last stage: final norm (eager), logits.float() and cross-entropy over
 * vocab / tp logits per token. The lm_head GEMM is not in it. */
void elementwise_head(const model_spec *m, const layout *l, double tokens, elementwise_list *out);

/* Megatron-LM's own attention layer of 2021-22 (training.attention = unfused; elementwise_legacy.c):
 * eager kernels beside the unfused core. core: the context's permute-contiguous copy forward
 * (recomputed with the core) and baddbmm's alpha mul on dQ and dK backward; qkv: the QKV
 * Linear's separate bias add forward, its bias gradient and the cat of dQ, dK, dV (torch.split's
 * backward) backward. Empty lists outside Megatron and for MLA. */
void elementwise_megatron_unfused_attention(const model_spec *m, const layout *l, double tokens,
                                            elementwise_list *core, elementwise_list *qkv);

/* Bytes and launches of n kernels (count included). */
double elementwise_bytes(const elementwise_kernel *k, int n);
int elementwise_launches(const elementwise_kernel *k, int n);

/* Time of one launch of k: its bytes at the list's rate (the memory term of compute.h's
 * roofline); eager kernels at the system's measured eager_elementwise_efficiency plus the idle
 * gap between back-to-back eager kernels (eager_kernel_gap_s; both in data/systems). It reads
 * e's flags (eager, alone, inductor), never e's kernels: k need not be one of them. */
double elementwise_kernel_s(const system_spec *sys, const elementwise_list *e,
                            const elementwise_kernel *k);

/* The same for one launch of an eager PyTorch kernel (FSDP2's copies: fsdp_copies.h). */
double elementwise_eager_kernel_s(const system_spec *sys, const elementwise_kernel *k);

/* Elements one operand spans (the highest offset it touches, plus one); 0 when absent. */
long ew_operand_elems(const ew_access *a, int operand);

/* Elements of the iteration (n[0] n[1] n[2]). */
double ew_elements(const ew_access *a);

const char *ew_pattern_name(ew_pattern p);

/* Contiguous operands (element sizes of output, a, b; 0: no such operand) over `elems`
 * elements, in pattern p. */
ew_access ew_contiguous(ew_pattern p, int eo, int ea, int eb, double elems);

/* The unfused attention core's scaled, masked softmax over `scores` elements (with dropout on
 * the probabilities where the model has it): bytes and seconds of the forward and backward.
 * The softmax is Megatron's fused kernel at the streaming rate, the dropout PyTorch's eager
 * kernel (elementwise.c cites both). */
void elementwise_unfused_softmax(const system_spec *sys, double scores, bool dropout,
                                 double *fwd_bytes, double *bwd_bytes, double *fwd_s,
                                 double *bwd_s);

/* Time of n kernels, every launch of each. */
double elementwise_pass_s(const system_spec *sys, const elementwise_list *e,
                          const elementwise_kernel *k, int n);

#endif
