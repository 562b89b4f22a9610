/*
 * bk_pools.h — how big the one memory arena of a measured plan step is, and where each region
 * lies inside it. Plain C (no CUDA header): always built, and unit-tested without a GPU
 * (tests/backend/test_pools.c); bk_measure.c allocates what this computes.
 *
 * Why one arena with phases: PyTorch's caching allocator reuses memory between the phases of a
 * step. The activations, the loss's buffers and FSDP's gathered units are freed as the backward
 * runs and before the optimizer step; the gradients exist from the backward on (zero_grad sets
 * them to None); foreach AdamW's temporaries only during the step. The real peak is the largest
 * phase, not the sum of every tensor (bench/realruns: Llama-3.1-8B cut to 8 layers peaks at
 * 58.8 GiB where weights, gradients, optimizer, activations and FSDP buffers add up to 73 GiB).
 * So per GPU, plan measure allocates
 *  - persistent: the weights (as large as the estimate's, grown to one gathered layer unit and
 *    its experts) and the optimizer states, together at least Adam's param, m and v (three fp32
 *    arrays over the largest stage's shard);
 *  - then one phase region, shared by every phase: as large as the estimate's largest phase
 *    beyond the persistent part (memory.c: the training peak, the end of the backward, the
 *    optimizer step with its temporaries: memory_breakdown's train_peak_bytes,
 *    backward_end_bytes, optimizer_step_bytes), or as the regions the forward and backward
 *    touch, or the pipeline's buffers and the gradients, when either is more. From its start: the pipeline's send and receive buffers (one send buffer and
 *    pp_slots receive buffers per direction), the activation regions x (GEMM A / elementwise
 *    input a / collective send), y (output, then the elementwise kernels' scratch at y_ws), z
 *    (GEMM B / elementwise input b), each as large as the largest item needs plus 256 bytes,
 *    and Megatron's ring attention send and receive buffers, then the FSDP communication buffers
 *    (the root unit gathered, two gathered layer units, two unsharded bf16 gradient buffers, two
 *    reduce buffers, FSDP2's flat copy-in buffer); at its end the gradients (the estimate's,
 *    grown to one unit's at the reduction's precision and to Adam's fp32 gradient array). What
 *    lies between is held, not touched: the other activations and buffers a phase holds. Where
 *    the region cannot hold the forward/backward regions and the gradients apart, the gradients
 *    overlap the activation and communication regions, as the allocator hands the gradients the
 *    memory the activations free (the backward's writes into them then land on operands whose
 *    values do not matter for timing; the pipeline's buffers are never overlapped: the transfer
 *    check compares them).
 * The framework's bytes (CUDA context, cuBLAS, NCCL) are the backend's own, measured before the
 * arena (bk_measure.c baseline). Every size and offset is a multiple of 256 bytes. What the arena
 * holds beyond the estimate's peak less its framework bytes is extra_bytes (tiny models, buffers
 * the step touches beyond the phase), which plan measure reports.
 */
#ifndef PLAN_BK_POOLS_H
#define PLAN_BK_POOLS_H

#include <stdbool.h>
#include <stddef.h>

#include "work.h"

/* What the pools are sized for, beyond the plan itself. */
typedef struct {
    int stages;                /* pipeline stages run (1: stage 0 alone or no pipeline) */
    int dp_group;              /* ranks of the data-parallel (dp x cp) group measured */
    int edp_group;             /* ranks of the expert-data-parallel group (MoE), else 1 */
    int pp_slots;              /* receive buffers per direction (stages > 1) */
    bool fsdp2_copies;         /* FSDP2's copy-in / copy-out run: the flat copy-in buffer, and the
                                  root unit's copy-out lands in y */
    bool cp_overlap;           /* Megatron's ring exchanges run beside the attention core: their
                                  own send and receive buffers */
    size_t ew_scratch_bytes;   /* the largest device scratch an elementwise kernel of the plan
                                  needs (kernels.h bkk_ew_workspace_bytes) */
} bk_pool_shape;

typedef struct {
    /* the arena, bytes per GPU: persistent part [0, persist_bytes), then the phase region */
    size_t persist_bytes, phase_bytes;
    /* persistent: weights at 0 (w_bytes), optimizer states at o_off (o_bytes) */
    size_t w_bytes, o_off, o_bytes;
    /* phase region: pipeline buffers at pp_off, activation regions at act_off, communication
     * buffers at comm_off, gradients at g_off (its last g_bytes) */
    size_t pp_off, pp_bytes, act_off, act_bytes, comm_off, comm_bytes, g_off, g_bytes;
    size_t touched_bytes;      /* the forward and backward's regions: pp_bytes + act_bytes +
                                  comm_bytes (the gradients overlap them where the region is
                                  smaller than touched_bytes + g_bytes) */
    /* activation regions (offsets from act_off): x, y (scratch of the elementwise kernels at
     * y_off + y_ws), z, and the ring attention's send and receive halves (cp_sz = 0: none) */
    size_t x_off, x_sz, y_off, y_sz, y_ws, z_off, z_sz, cp_off, cp_sz;
    /* communication buffers (offsets from comm_off; FSDP only, all 0 otherwise) */
    size_t root_off, root_sz;
    size_t gbuf_off[2], gbuf_sz;     /* gathered layer units */
    size_t ggrad_off[2], ggrad_sz;   /* unsharded bf16 gradients of a unit */
    size_t rbuf_off[2], rbuf_sz;     /* what a reduction sends */
    size_t cin_off, cin_sz;          /* FSDP2's flat bf16 copy-in buffer */
    /* pipeline: one transfer (whole bf16 elements) and its slot (aligned) */
    size_t p2p_sz, p2p_slot;
    /* element counts */
    size_t unit_cnt[2];        /* per rank of a layer unit, dense / MoE (ceil(params / g)) */
    size_t ecnt;               /* MoE, not FSDP: expert elements per expert-dp rank */
    size_t red_esz;            /* bytes per element of the gradient reduction (2 or 4) */
    /* the estimate's phases beyond its weights and optimizer states, without its framework
     * bytes: the training peak, the end of the backward (0 where the estimate has no such
     * phase), the optimizer step, and the largest (what its peak holds there) */
    double phase_train_bytes, phase_bwd_end_bytes, phase_opt_bytes, phase_plan_bytes;
    /* totals */
    double plan_bytes;         /* the estimate's weights + optimizer + largest phase, aligned */
    double total_bytes;        /* the arena */
    double extra_bytes;        /* total_bytes - plan_bytes */
} bk_pools;

/* Size the arena of plan w for shape sh. */
void bk_pools_size(const work_plan *w, const bk_pool_shape *sh, bk_pools *out);

/* The shape of the whole layout of w on as many GPUs as it plans (plan measure --dry-run; a run
 * on fewer GPUs measures a slice and sizes it from its groups), without the elementwise kernels'
 * scratch (it depends on the GPU's SM count). */
void bk_pools_whole_shape(const work_plan *w, bk_pool_shape *sh);

/* Elements per data-parallel rank of stage s's root unit (embedding and/or output layer). */
size_t bk_pools_root_count(const work_plan *w, int dp_group, int s);

/* The unit-buffer-sized pieces FSDP reduces stage s's root gradients in. */
int bk_pools_root_pieces(const work_plan *w, const bk_pools *p, int dp_group, int s);

/* An item that Megatron's ring attention exchanges on its own stream (when cp_overlap): a
 * context-parallel send/recv. */
bool bk_ring_exchange(const work_item *it);

/* A GEMM's weight gradient (its C lands in the gradients, not in y). */
bool bk_item_weight_grad(const work_item *it);

/* An FP8 GEMM's dimension as it runs: rounded up to a multiple of 16 (cuBLASLt's FP8 kernels need
 * it; Transformer Engine pads FP8 operands the same way, Fp8Padding). */
long bk_fp8_dim(double d);
/* Floats of the scale tensor of an operand of `rows` x k (K-major) in cuBLASLt's layouts (the
 * ones Transformer Engine's Float8BlockQuantizer writes, get_scale_shape): 1x128 blocks
 * (VEC128_32F) ceil(k/128) columns of roundup(rows, 4), the block of element (r, q) at
 * (q / 128) * roundup(rows, 4) + r; 128x128 blocks (BLK128x128_32F) ceil(rows/128) rows of
 * roundup(ceil(k/128), 4), the block of (r, q) at (r / 128) * roundup(ceil(k/128), 4) + q / 128. */
size_t bk_block_scale_floats(bool blk128x128, long rows, long k);

/* Bytes of a GEMM item's operands A [m,k], B [n,k] and C [m,n] (bf16, times the batch; an FP8
 * item's e4m3 A and B and bf16 C at its padded dimensions). */
size_t bk_gemm_a_bytes(const work_item *it);
size_t bk_gemm_b_bytes(const work_item *it);
size_t bk_gemm_c_bytes(const work_item *it);

#endif
