/*
 * async_tp.h — torchtitan's async tensor parallel as it runs (issue 19): which of a block's
 * four sequence-parallel collectives Inductor's micro-pipeline TP pass fuses with a matmul,
 * how the fused ops decompose them (symmetric-memory copies beside tp matmul chunks), what
 * stays exposed, the bytes of the SP all-gathers under torchtitan's Float8 TP, and the
 * symmetric-memory workspace it holds. Pure arithmetic on times the caller prices (the layer
 * recipe's GEMMs, in the layout's number format); layer_recipe.c and memory.c use it.
 * Megatron's --tp-comm-overlap (Transformer Engine userbuffers) is overlap.h's.
 */
#ifndef PLAN_ASYNC_TP_H
#define PLAN_ASYNC_TP_H

#include "layout.h"
#include "model.h"
#include "system.h"

/* Bytes per element of the SP all-gathers (forward: the block input; backward: the gradient
 * of the row-parallel output): 1 under torchtitan's Float8 TP (fp8 with the tensorwise
 * recipe, the one torchao's Float8ColwiseParallel / Float8RowwiseParallel /
 * PrepareFloat8ModuleInput serve: they cast to float8 before the gather), else 2 (bf16). The
 * reduce-scatters carry the bf16 outputs of the matmuls: always 2. */
double async_tp_gather_elem_bytes(const layout *l);

/* Is l's TP block priced as torchtitan's async TP (torchtitan, compiled, --async-tp, TP > 1
 * with SP)? The caller also requires the TP group inside one node (symmetric memory). */
bool async_tp_applies(const layout *l);

/* One tensor-parallel block's GEMMs as the fused ops run them: whole (the unfused kernel) and
 * as tp chunks of tokens/tp rows each (the decomposition), in seconds. */
typedef struct {
    double first_s, first_chunks_s; /* forward: the column-parallel GEMM(s) the all-gather
                                       feeds (QKV; MLP up/gate) */
    double last_s, last_chunks_s;   /* forward: the row-parallel GEMM whose output is
                                       reduce-scattered (attention out-projection; MLP down) */
    double dgrad_s, dgrad_chunks_s; /* backward: that GEMM's data gradient, fed by the
                                       all-gather of its output gradient */
} async_tp_gemms;

typedef struct {
    double fwd_s, bwd_s; /* what the block's TP collectives add to its GEMMs, per pass */
    double fwd_leave_s;  /* the forward reduce-scatter's part of fwd_s */
} async_tp_exposed;

/*
 * The exposed TP time of one block under async TP, elems = tokens x hidden per GPU (after the
 * gather), g the TP group:
 *  - forward all-gather -> first GEMM: fused (tp chunks, the local one first, each remote
 *    shard pulled while the previous chunk multiplies): c + (tp-1) max(g, c) - gemm with
 *    g = first_chunks/tp, c = the gather's bytes/tp over the group's bandwidth;
 *  - forward last GEMM -> reduce-scatter: fused (tp chunks produced into symmetric memory and
 *    pulled by their destination rank), the same pipeline, then the reduction of the tp
 *    stacked bf16 partials, a memory-bound kernel after the last chunk;
 *  - backward all-gather -> last GEMM's dgrad: fused as the forward all-gather;
 *  - backward reduce-scatter of the first GEMM's input gradient: not fused (its input is the
 *    sum of two or three dgrads, no matmul), an NCCL reduce-scatter exposed as without async TP.
 */
async_tp_exposed async_tp_block(const system_spec *sys, const layout *l, layout_group g,
                                double elems, const async_tp_gemms *gm);

/* The symmetric-memory workspace async TP holds per GPU (0 where it does not apply): one
 * buffer per TP group, grown to the largest request and kept: the reduce-scatter's two
 * output-chunk buffers of (tokens/tp) x hidden bf16, larger than the all-gather's one shard. */
double async_tp_workspace_bytes(const model_spec *m, const training_spec *t, const layout *l);

#endif
