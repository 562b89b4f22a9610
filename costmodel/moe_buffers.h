/*
 * moe_buffers.h — the device memory Megatron-Core's flex token dispatcher's back-ends (DeepEP,
 * HybridEP) allocate for themselves, once per GPU, outside PyTorch's caching allocator.
 *
 * It exists apart from moe_dispatch.h (the exchange's time) because it is a memory term with
 * its own sources and its own place in the breakdown: the bytes occupy the device, so they are
 * in total_bytes and need_bytes, but torch.cuda's reserved figure never sees them
 * (memory_breakdown.outside_allocator_bytes, memory.h).
 */
#ifndef PLAN_MOE_BUFFERS_H
#define PLAN_MOE_BUFFERS_H

#include "layout.h"
#include "model.h"
#include "system.h"

/* Device bytes of the dispatcher's registered buffers for l on sys (0 for the NCCL
 * dispatchers, alltoall and allgather, whose exchange outputs are activations; 0 without EP
 * or outside Megatron):
 *   hybridep  the NVLink coordinator's token, probability and scale buffers sized for every
 *             rank's tokens landing on one rank, and, when the EP group leaves its NVLink
 *             domain, the RDMA coordinator's staging buffers;
 *   deepep    the normal-mode Buffer's NVLink buffer and, past 8 ranks, its NVSHMEM RDMA
 *             buffer (both sized by DeepEP's per-size configs, independent of the tokens),
 *             and its 32 MiB workspace.
 * Sources, file and line at a commit, in moe_buffers.c. */
double moe_dispatch_buffer_bytes(const model_spec *m, const system_spec *sys,
                                 const training_spec *t, const layout *l);

/* DeepEP's normal-mode buffer sizes for an EP group of `ranks` with a token row of
 * `hidden_bytes` and `sms` SMs (Buffer.num_sms): the NVLink and RDMA size hints Megatron
 * takes the larger of over DeepEP's dispatch and combine configs (each rounded to 128 B), and
 * the workspace; exposed for the tests' hand-checked figures. */
typedef struct {
    double nvl_bytes;
    double rdma_bytes;
    double workspace_bytes;
} moe_deepep_buffer;
moe_deepep_buffer moe_deepep_buffer_bytes(int ranks, double hidden_bytes, int sms);

#endif
