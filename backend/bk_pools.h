/*
 * bk_pools.h — how big each buffer pool of a measured plan step is, and where each region lies
 * inside it. Plain C (no CUDA header): always built, and unit-tested without a GPU
 * (tests/backend/test_pools.c); bk_measure.c allocates what this computes.
 *
 * Per GPU, plan measure holds four pools:
 *  - state: the bf16 weights, the gradients (bf16, or fp32 when reduced in fp32) and the
 *    optimizer states, each part as large as the estimate's memory breakdown says, the weights
 *    and gradients parts grown to hold one gathered layer unit (and its experts), the whole
 *    grown to the fused Adam's four fp32 arrays over the largest stage's shard;
 *  - activations: the operand regions x (GEMM A / elementwise input a / collective send),
 *    y (output, then the elementwise kernels' scratch at y_ws) and z (GEMM B / elementwise
 *    input b), each as large as the largest item needs plus 256 bytes, then Megatron's ring
 *    attention send and receive buffers; at least the estimate's activation bytes;
 *  - communication buffers (FSDP): the root unit gathered, two gathered layer units, two
 *    unsharded bf16 gradient buffers, two reduce buffers, FSDP2's flat copy-in buffer; at least
 *    the estimate's communication-buffer bytes;
 *  - pipeline: one send buffer and pp_slots receive buffers per direction.
 * Every size and offset is a multiple of 256 bytes. What a pool holds beyond the estimate's
 * figure is extra_bytes (tiny models, pipeline buffers), which plan measure reports.
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
    /* the pools, bytes per GPU */
    size_t state_bytes, act_bytes, comm_bytes, pp_bytes;
    /* state: weights at 0, gradients at w_bytes, optimizer states after them */
    size_t w_bytes, g_bytes;
    /* activations: regions x, y (scratch of the elementwise kernels at y_off + y_ws), z, and
     * the ring attention's send and receive halves (cp_sz = 0: none) */
    size_t x_off, x_sz, y_off, y_sz, y_ws, z_off, z_sz, cp_off, cp_sz;
    /* communication buffers (FSDP only; all 0 otherwise) */
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
    /* totals */
    double plan_bytes;         /* the estimate's weights + gradients + optimizer + activations +
                                  communication buffers, each aligned */
    double total_bytes;        /* the four pools */
    double extra_bytes;        /* total_bytes - plan_bytes */
} bk_pools;

/* Size the pools of plan w for shape sh. */
void bk_pools_size(const work_plan *w, const bk_pool_shape *sh, bk_pools *out);

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
