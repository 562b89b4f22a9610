/*
 * cp_ring_torch.h — what PyTorch's ring attention (torch.distributed.tensor.experimental.
 * context_parallel, the context parallelism torchtitan runs) costs beyond its SDPA calls.
 *
 * The SDPA calls themselves are priced as the causal attention of s/c queries per rank at the
 * measured rate of that length (layer_recipe.c): c times the causal block of s/c, which
 * bench/cp_chunk_shapes.py measured 0-7% above the worst rank's c calls at seq 32768, c = 2,
 * 4. What the ring adds is measured in bench/results/cp_ring_2026-11-27 (2 x H200, torch
 * 2.11; README there) and follows the source
 * (torch/distributed/tensor/experimental/_context_parallel/_attention.py of torch 2.11.0):
 *   1. the merges and accumulators, eager fp32 kernels: _SDPAMerger casts each step's output
 *      to fp32 and merges it with the log-sum-exp correction (out - sigmoid(lse_b - lse) *
 *      (out - out_b)); the backward keeps dq, dk, dv in fp32 (zeros_like, += per step,
 *      _partial_update's add-and-cat), concatenates k, v (bf16) and dk, dv (fp32) for every
 *      exchange and casts the results back to bf16;
 *   2. the last dk/dv exchange of the backward (fp32), which nothing hides: the ring's
 *      backward waits for it before returning the gradients;
 *   3. the k, v that travel are the ones SDPA is called with: a model that repeats the KV
 *      heads before SDPA (the native llama, bench/realruns/native_llama.py repeat_kv) sends
 *      every query head's copy.
 * Measured at seq 32768, 32 heads, head dim 128, CP 2, FLASH backend, per rank per layer: SDPA
 * chunks 47.6 ms against 47.1 ideal, the merge kernels 4.3 ms more, the compute stream idle
 * 2.2 ms at the end of the backward while the 537 MB fp32 dk/dv travel (2.64 ms SendRecv).
 */
#ifndef PLAN_CP_RING_TORCH_H
#define PLAN_CP_RING_TORCH_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"

/* The eager kernels of items 1 for one layer on the rank with the most merge traffic (rank
 * c-1: every step's merge over all its queries), appended to out (an eager list): out_elems
 * elements of this rank's attention output (tokens x heads/tp x v head dim), kv_elems elements
 * of the key (= value) passed to SDPA (tokens x kv heads sent / tp x head dim), cp >= 2.
 * traced (cp_ring_torch_traced): the ring runs inside a compiled block, its kernels are
 * Inductor's and each forward merge step is one fused kernel (cp_ring_torch.c); gather (the
 * all-gather rotate method): the traced graph drops the cat(k, v) of the steps after the first,
 * which the all-gather rotater never reads (eager runs every one). */
void cp_ring_torch_kernels(double out_elems, double kv_elems, int cp, bool traced, bool gather,
                           elementwise_list *out);

/*
 * The ring inside torch.compile (issue 19). torchtitan compiles each TransformerBlock with
 * fullgraph=True (9dec370 torchtitan/parallelisms/parallelize_llama.py apply_compile, lines
 * 297-306; today's torchtitan the same per-block compile), and the block calls
 * F.scaled_dot_product_attention, which context_parallel replaces by a wrapper that makes q, k,
 * v DTensors (Shard(2)) whose flash/efficient SDPA op DTensor dispatches to the ring
 * (_distribute_function, _enable_cp_dispatcher, _sdpa_handler / _sdpa_backward_handler of
 * torch/distributed/tensor/experimental/_attention.py, the late-2024 file: the code index's
 * copy with _RotateMethod.PRE_ALL_GATHER and typing.Dict imports, read_file id 106942014). So
 * AOTAutograd traces the whole ring, both passes, into the block's graph. Its collectives are
 * functional collectives, and a traced functional collective is waited for at once:
 * torch/distributed/_functional_collectives.py _maybe_wrap_tensor returns wait_tensor(self)
 * when _are_we_tracing() (the same in every stored version, 2023-2026; pytorch/pytorch
 * fff02e67db38), where eager returns an AsyncCollectiveTensor waited for at first use. Inductor
 * moves waits only with torch._inductor.config.reorder_for_compute_comm_overlap, default False
 * (torch/_inductor/config.py, pytorch/pytorch a112bb81b880; torchtitan 9dec370 does not set
 * it). Hence, compiled: the K/V all-gather (forward, recomputed forward, backward) and every
 * dK/dV exchange of the backward (or, rotating by all-to-all, every K/V exchange too) run
 * exposed, nothing beside them; and the merges are Inductor kernels, each forward step's
 * out.to(fp32) and merge fused into one.
 * Eager runs (every real CP run of bench/realruns) keep the overlapped ring measured there.
 */
bool cp_ring_torch_traced(const layout *l);

/* Bytes of the last dk + dv exchange of the backward (fp32; item 2). */
double cp_ring_torch_dkv_bytes(double kv_elems);

#endif
