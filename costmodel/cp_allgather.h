/*
 * cp_allgather.h — the all-gather rotate method of PyTorch's context parallelism, the one torch
 * and torchtitan use by default, as against passing K/V around the ring step by step.
 *
 * Source: torch/distributed/tensor/experimental/_context_parallel/_attention.py of torch 2.11.0
 * (read on the device machine, bench/results/titanpub_2026-11-28): _ContextParallelOptions.
 * rotate_method = _RotateMethod.ALL_GATHER (line 77); _AllGatherRotater (266-292):
 * exchange_buffers starts one ft_c.all_gather_tensor of this rank's cat(k, v) at step 0 and
 * next_buffer waits for it at step 1, then slices the chunk of each later step out of it;
 * _templated_ring_attention (309, rotater at 420) and _templated_ring_attention_backward (481:
 * kv_rotater with the default method, dkv_rotater always ALL_TO_ALL, 512-513). The same classes
 * came with pytorch/pytorch#132820 (2024-08, "overlap the communication with the first sharded
 * kv computation") and set_rotate_method with #142093 (2024-12-09); torchtitan 9dec370, the
 * commit of its 2024-12 benchmarks, defaults experimental.context_parallel_rotate_method to
 * "allgather" (torchtitan/config_manager.py) and calls set_rotate_method with it
 * (torchtitan/utils.py create_context_parallel_ctx). torchtitan b5bcd76 has no such option
 * (#2555) and runs torch's default.
 *
 * What it costs:
 *   - one all-gather of cp x this rank's K/V bytes over the CP group in the forward (and again
 *     in the backward, and in a recomputed forward), hidden only behind step 0's SDPA: under
 *     the head-tail load balancing each of the cp steps computes the same (s/cp)^2 / 2 query-key
 *     pairs (_templated_ring_attention's note), so step 0 is 1/cp of the rank's attention; the
 *     rest of the gather is exposed;
 *   - no K/V send/recv per step (the ring's cp - 1 exchanges); the backward's dK/dV still go
 *     around the ring in fp32 (cp_ring_torch.h);
 *   - the gathered buffer, cp x the rank's K/V, alive while the layer's attention runs.
 * Measured inside one node (4 x H100, torch 2.11, FLASH, 32 heads x 128 repeated K/V, 32k
 * tokens a GPU; bench/results/titanpub_2026-11-28): CP 4 all-gather 1.100 x the ideal
 * full/4 against all-to-all 1.095, CP 2 1.104 against 1.107: the gather hides there, as this
 * pricing says (its 10 ms against a 112 ms step 0). Across nodes it does not.
 */
#ifndef PLAN_CP_ALLGATHER_H
#define PLAN_CP_ALLGATHER_H

#include "layout.h"
#include "model.h"
#include "system.h"

typedef struct {
    double gathered_bytes; /* the all-gather's output: cp x this rank's cat(k, v) */
    double allgather_s;    /* one all-gather of it over the CP group */
    double exposed_fwd_s;  /* what step 0's SDPA forward leaves of it */
    double exposed_bwd_s;  /* what step 0's SDPA backward leaves of it */
} cp_allgather_cost;

/* kv_bytes: this rank's K and V as SDPA gets them (bytes, both together); attn_fwd_s,
 * attn_bwd_s: the rank's whole attention core, forward and backward, over its cp steps. */
cp_allgather_cost cp_allgather_price(const system_spec *sys, layout_group g, double kv_bytes,
                                     int cp, double attn_fwd_s, double attn_bwd_s);

/* This rank's K and V as torchtitan's SDPA gets them (bytes, bf16, both together): tokens / cp
 * x the heads sent (every query head's copy where the native model repeats the KV heads before
 * SDPA, elementwise.c repeat_kv; MLA: every head) / tp x (qk + v head dims) x 2. 0 unless
 * torchtitan with cp > 1. */
double cp_torch_kv_bytes(const model_spec *m, const training_spec *t, const layout *l);

/* What PyTorch's ring holds beyond the layer's saved activations while one layer's attention
 * runs its backward (torch 2.11 _templated_ring_attention_backward, 481-640): grad_query,
 * grad_key, grad_value as fp32 zeros_like (4 x (E + 2K) bytes, E the rank's output elements
 * and K its key elements), the fp32 cat(dk, dv) it sends and the one it receives (2 x 8K), and
 * under the all-gather method the gathered K/V (cp x cp_torch_kv_bytes). 0 unless torchtitan
 * with cp > 1. */
double cp_torch_backward_transient_bytes(const model_spec *m, const training_spec *t,
                                         const layout *l);

#endif
