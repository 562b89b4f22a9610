/*
 * async_tp.c — torchtitan's async TP as Inductor and symmetric memory run it (see async_tp.h).
 *
 * Sources (the published run, pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md,
 * used torch 1963fc8, torchao eab345c, torchtitan 9dec370):
 *  - torchtitan 9dec370 torchtitan/parallelisms/parallelize_llama.py apply_tp: separate wq, wk,
 *    wv (ColwiseParallel) and wo (RowwiseParallel, output Shard(1)); w1, w3 and w2 alike; the
 *    block inputs redistributed Shard(1) -> Replicate by PrepareModuleInput; with float8 the
 *    Float8* styles of torchao; --experimental.enable_async_tensor_parallel sets
 *    torch._inductor.config._micro_pipeline_tp and enables symmetric memory for the TP group.
 *  - torchao eab345c torchao/float8/float8_tensor_parallel.py: PrepareFloat8ModuleInput and
 *    Float8ColwiseParallel cast the input to float8 before the redistribute ("so that ... we
 *    perform fp8 allgather only once"): the forward all-gather moves 1 byte per element;
 *    Float8RowwiseParallel's output passes NoopFwToFloat8BwDynamic after its redistribute, so
 *    the backward casts the output gradient to float8 before the all-gather that is the
 *    reduce-scatter's backward: 1 byte too. Both styles assert dynamic (tensorwise) scaling.
 *    The reduce-scatters carry the bf16 outputs of _scaled_mm.
 *  - pytorch torch/_inductor/fx_passes/micro_pipeline_tp.py (read at 00122fb and in its
 *    _scaled_mm form; the _scaled_mm and float8 "type-erased all-gather" patterns are PRs
 *    #131832/#131833, July 2024, before 1963fc8): micro_pipeline_tp_pass runs on the forward
 *    and the backward graph alike; fuse_all_gather_matmul fuses an all-gather whose result is
 *    the left operand of matmuls (all of them, e.g. wq, wk, wv) into fused_all_gather_[scaled_]
 *    matmul; fuse_matmul_reduce_scatter fuses a reduce-scatter only where its input is a matmul
 *    (_find_producer_matmul: mm / _scaled_mm, or a reshape of one) with no other user. In the
 *    backward the column-parallel input gradient is the sum of the wq, wk, wv (w1, w3) data
 *    gradients before its reduce-scatter: not a matmul, so not fused; the all-gather of the
 *    row-parallel output gradient feeds the wo (w2) data-gradient matmul as its left operand:
 *    fused.
 *  - pytorch torch/distributed/_symmetric_memory/__init__.py (read at 006b161 and in its 2024
 *    form): _pipelined_all_gather_and_consume splits the gather into group_size (= tp) shards,
 *    consumes the local one first, then pulls each remote shard with a copy (copy_ from the
 *    peer's symmetric buffer, no SMs) and multiplies it, alternating two streams ("p2p copies
 *    from different streams cannot overlap"); _pipelined_produce_and_all2all multiplies the tp
 *    row chunks of A one after another into two symmetric buffers, each pulled by the rank it
 *    belongs to after a barrier, the local chunk last; _fused_matmul_reduce_scatter then sums
 *    the tp stacked bf16 partials (reduce_fn / reduce_partials): a kernel that reads tokens x N
 *    and writes tokens/tp x N. get_symm_mem_workspace keeps one buffer per group at the largest
 *    size requested: one shard for the gather, two output chunks for the reduce-scatter.
 */
#include "async_tp.h"

#include <math.h>

#include "collective.h"
#include "compute.h"
#include "overlap.h"
#include "precision.h"

double async_tp_gather_elem_bytes(const layout *l)
{
    bool float8_tp = l->framework == FRAMEWORK_TORCHTITAN && l->precision == PRECISION_FP8 &&
                     precision_fp8_recipe(l) == FP8_RECIPE_TENSORWISE;
    return float8_tp ? 1.0 : 2.0;
}

/* Does Inductor fuse the block's SP all-gathers with their matmuls? Only where the gathered
 * tensor is itself the matmul's left operand (micro_pipeline_tp.py _find_consumer_matmuls: a
 * user of the gather's result that is mm / _scaled_mm, or a reshape feeding one; every stored
 * version, e.g. code-index ids 9484693 and 131213859). bf16 and torchtitan's Float8 TP
 * (tensorwise: cast before the gather, async_tp_gather_elem_bytes) are; any other low-precision
 * recipe gathers bf16 and quantizes the gathered tensor (torchao Float8Linear's rowwise casts,
 * amax then scale, on the replicated input: torchtitan 820504e parallelize_llama.py lines
 * 56-72 keep plain Colwise/RowwiseParallel for rowwise, "all distributed communication is done
 * in high precision"), so the gather's users are the cast's ops, not a matmul: the gather stays
 * an NCCL all-gather, forward and backward; the matmul -> reduce-scatter still fuses
 * (_find_producer_matmul finds the _scaled_mm, its bf16 output reshaped). */
static bool async_tp_gather_fused(const layout *l)
{
    return l->precision == PRECISION_BF16 || async_tp_gather_elem_bytes(l) < 2.0;
}

bool async_tp_applies(const layout *l)
{
    return l->async_tp && l->framework == FRAMEWORK_TORCHTITAN && l->compile && l->tp > 1 &&
           l->sp;
}

/* Pulling (tp-1) peer shards of `bytes` in all, one after another, each after a barrier: the
 * group's bus bandwidth and one hop latency per pull. */
static double pulls_s(const system_spec *sys, layout_group g, int tp, double bytes)
{
    return bytes * (tp - 1) / tp / collective_busbw_bytes_per_s(sys, g) +
           (tp - 1) * sys->intra_latency_s;
}

async_tp_exposed async_tp_block(const system_spec *sys, const layout *l, layout_group g,
                                double elems, const async_tp_gemms *gm)
{
    int tp = l->tp;
    double ag_bytes = elems * async_tp_gather_elem_bytes(l), rs_bytes = elems * 2.0;
    double ag = pulls_s(sys, g, tp, ag_bytes), rs = pulls_s(sys, g, tp, rs_bytes);
    /* the sum of the tp stacked partials: reads elems bf16, writes elems/tp */
    double reduce = compute_stream_s(sys, rs_bytes * (1.0 + 1.0 / tp));
    async_tp_exposed e;
    /* both decompositions run tp chunk matmuls beside tp-1 pulls, the first (gather: the
     * local shard; reduce-scatter: the first chunk's production) with nothing to pull beside
     * it: overlap.h's ring exchange, splits = tp, no SMs taken by the copies */
    e.fwd_leave_s = overlap_tp_ring_exchange_s(gm->last_s, gm->last_chunks_s, rs, tp) + reduce;
    double gather_fwd_s = overlap_tp_ring_exchange_s(gm->first_s, gm->first_chunks_s, ag, tp);
    double gather_bwd_s = overlap_tp_ring_exchange_s(gm->dgrad_s, gm->dgrad_chunks_s, ag, tp);
    if (!async_tp_gather_fused(l)) /* NCCL's, exposed as without async TP (atp22) */
        gather_fwd_s = gather_bwd_s = collective_time_s(sys, COLL_ALL_GATHER, ag_bytes, g);
    e.fwd_s = gather_fwd_s + e.fwd_leave_s;
    e.bwd_s = gather_bwd_s + collective_time_s(sys, COLL_REDUCE_SCATTER, rs_bytes, g);
    return e;
}

double async_tp_workspace_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    if (!async_tp_applies(l)) return 0;
    double chunk_rows = (double)t->seq_len * l->mbs / l->cp / l->tp;
    double rs = 2.0 * chunk_rows * m->hidden * 2.0;
    double ag = chunk_rows * m->hidden * async_tp_gather_elem_bytes(l);
    return fmax(rs, ag);
}
