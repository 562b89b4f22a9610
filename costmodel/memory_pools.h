/*
 * memory_pools.h — torch FSDP2's side-stream memory pools: what torch.cuda's peak *reserved*
 * holds beyond the peak *allocated* that the rest of memory.c prices.
 *
 * Why: torchtitan logs torch.cuda's max reserved (9dec370 metrics.py get_peak_stats:
 * reserved_bytes.all.peak), and torch's CUDA caching allocator keeps one pool per stream: a
 * block freed on one stream serves later requests on that stream only (awgu in
 * pytorch/pytorch#117323: "FSDP allocates all-gather and reduce-scatter buffers in separate CUDA
 * streams, and memory blocks in the allocator are tied to a stream"; pytorch/pytorch#129721:
 * "minimizing memory usage spikes in non-default-stream memory pools helps because otherwise,
 * that memory cannot be reused by the default stream"). FSDP2 allocates two kinds of buffers
 * off the default stream:
 *  - the reduce-scatter output, of which every sharded gradient is a view (torch
 *    torch/distributed/_composable/fsdp/_fsdp_collectives.py foreach_reduce_scatter, at
 *    01d66d21: `with torch.cuda.stream(reduce_scatter_stream): ... reduce_output =
 *    reduce_scatter_input.new_empty(...)`, then `torch.as_strided(reduce_output, ...)` as the
 *    new sharded grad; the same at 010ae4a8, torch/distributed/fsdp/_fully_shard/
 *    _fsdp_collectives.py foreach_reduce; #129721: "The reduce-scatter outputs are still
 *    allocated in the separate reduce_scatter stream ... we iteratively allocate them through
 *    backward and free them altogether after optimizer"). zero_grad(set_to_none=True) frees
 *    them before the next forward, into the reduce-scatter stream's pool, where the forward's
 *    activations cannot use them: reserved through the forward and loss peak;
 *  - the flat all-gather output (foreach_all_gather: `with torch.cuda.stream(
 *    all_gather_copy_in_stream): all_gather_output = torch.empty(...)`, both commits), copied out
 *    into the unsharded parameters on the default stream; FSDP2 keeps the previous gather's
 *    result alive until the next gather (no record_stream), so the pool holds two gathered units
 *    at once, the largest being the root (embedding, final norm, head) and a block.
 *
 * Measured (bench/results/tt12_2026-11-28, one H200, torch 2.11, torchtitan's Llama-3.1-8B cut
 * to 8 layers under FSDP2 at world size 1, per-op SAC, local batch 2 x 8192, expandable
 * segments): the reduce-scatter stream's segment is 10.43 GiB = the fp32 sharded gradients
 * (10.41 GiB) and stays mapped through the next forward, peak reserved 79.59 GiB against
 * 62.81 GiB allocated. (At world size 1 FSDP2 runs no all-gather: that pool was not measured.
 * The default pool's own 6.35 GiB of reserved over allocated there is not priced: not found.)
 */
#ifndef PLAN_MEMORY_POOLS_H
#define PLAN_MEMORY_POOLS_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"

/* The bytes FSDP2's side-stream pools hold on stage `stage` beyond what is allocated at a
 * moment: the all-gather pool always (*all_gather_bytes: the root's and one block's gathered
 * parameters in the all-gather dtype, bf16, or torchao's float8 for the blocks' Linears; 0
 * without a shard group to gather over), and the reduce-scatter pool's sharded fp32 gradients
 * when those are not alive at that moment (*reduce_scatter_bytes: 4 bytes x the stage's
 * sharded parameters, sharded_params). layer_params: one block's parameters on this GPU, its
 * MoE kind with moe_block. Both 0 outside torch FSDP2 (and with FSDP2's CPU offload). */
void memory_fsdp2_side_pools(const model_spec *m, const layout *l, int stage, double sharded_params,
                             double layer_params, bool moe_block, double *all_gather_bytes,
                             double *reduce_scatter_bytes);

/* One block's gathered parameters on the default stream: bf16 (param_dtype), its Linear weights
 * in torchao's float8 where the layout all-gathers them so (memory_precision.c, the same rule). */
double memory_fsdp2_block_gathered_bytes(const model_spec *m, const layout *l, double layer_params,
                                         bool moe_block);

#endif
