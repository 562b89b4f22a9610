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

#include "elementwise.h"

/* The eager kernels of items 1 for one layer on the rank with the most merge traffic (rank
 * c-1: every step's merge over all its queries), appended to out (an eager list): out_elems
 * elements of this rank's attention output (tokens x heads/tp x v head dim), kv_elems elements
 * of the key (= value) passed to SDPA (tokens x kv heads sent / tp x head dim), cp >= 2. */
void cp_ring_torch_kernels(double out_elems, double kv_elems, int cp, elementwise_list *out);

/* Bytes of the last dk + dv exchange of the backward (fp32; item 2). */
double cp_ring_torch_dkv_bytes(double kv_elems);

#endif
