/*
 * moe_buffers.c — the flex dispatcher's back-ends' own device buffers (see moe_buffers.h).
 *
 * Versions read: Megatron-LM d0b3b77 (Megatron-Bridge v0.5.0's submodule; 2edffad, v0.4.2's,
 * has the same fused_a2a.py get_buffer), whose docker/Dockerfile.ci.dev pins DeepEP 17cfb81
 * (hybrid-ep branch, 2026-05-13: DeepEP's Buffer and HybridEPBuffer in one package). DeepEP's
 * normal-mode sizing is the same at its v1.2.1 tag (9af0e0d: config.hpp, buffer.py's config
 * maps); HybridEP's RDMA sizing the same at 7febc6e and 94a9f8f.
 */
#include "moe_buffers.h"

#include <math.h>

/* DeepEP's config maps (deepseek-ai/DeepEP 17cfb81 deep_ep/buffer.py 228-280,
 * get_dispatch_config / get_combine_config: Config(num_sms, nvl_chunked_send,
 * nvl_chunked_recv, rdma_chunked_send, rdma_chunked_recv) per EP size). Only the receive
 * sizes and the RDMA send size (which rounds the RDMA receive size up) enter the buffers. */
typedef struct {
    int ranks;
    int nvl_recv, rdma_send, rdma_recv;
} deepep_config;

static const deepep_config deepep_dispatch[] = {
    {2, 256, 6, 128},   {4, 256, 6, 128},   {8, 256, 6, 128},   {16, 288, 20, 128},
    {24, 288, 32, 128}, {32, 288, 32, 128}, {64, 288, 28, 128}, {128, 560, 32, 128},
    {144, 720, 12, 128}, {160, 720, 12, 128}};
static const deepep_config deepep_combine[] = {
    {2, 256, 6, 128},   {4, 256, 6, 128},   {8, 256, 6, 128},   {16, 288, 12, 128},
    {24, 288, 8, 128},  {32, 288, 8, 128},  {64, 288, 20, 128}, {128, 560, 12, 128},
    {144, 720, 8, 128}, {160, 720, 8, 128}};
enum { DEEPEP_CONFIGS = sizeof deepep_dispatch / sizeof deepep_dispatch[0] };

/* DeepEP asserts on an EP size its map lacks ("Unsupported number of EP ranks"); plan prices
 * such a size with the next listed one (the largest above 160), an assumption. */
static int deepep_config_index(int ranks)
{
    for (int i = 0; i < DEEPEP_CONFIGS; i++)
        if (ranks <= deepep_dispatch[i].ranks) return i;
    return DEEPEP_CONFIGS - 1;
}

/* csrc/config.hpp at 17cfb81, lines 51-73: NUM_MAX_NVL_PEERS = 8 (csrc/kernels/configs.cuh
 * 3), whatever the NVLink domain; channels = num_sms / 2; per channel and NVLink rank a ring of
 * nvl_recv token slots, each the token (hidden_bytes), its SourceMeta (8 B: two ints,
 * csrc/kernels/internode.cu 17-18), 128 top-k indices (int64), 128 top-k weights (float) and
 * 128 scales (float): hidden_bytes + 2056 B; plus (2 rdma_ranks + 3) ints of channel
 * counters; rounded up to 128 B. */
static double deepep_nvl_hint(int ranks, double hidden_bytes, int channels, int nvl_recv)
{
    int rdma_ranks = ranks / 8 > 1 ? ranks / 8 : 1;
    int nvl_ranks = ranks < 8 ? ranks : 8;
    double slots = (double)channels * nvl_ranks * nvl_recv;
    double bytes = (double)channels * nvl_ranks * (2 * rdma_ranks + 3) * 4.0 +
                   slots * (hidden_bytes + 8.0 + 128 * 8.0 + 128 * 4.0 + 128 * 4.0);
    return ceil(bytes / 128) * 128;
}

/* config.hpp 75-100: 0 up to 8 ranks ("legacy mode"); past them, per channel and RDMA rank
 * (ranks / 8) two rings (send and receive) of rdma_recv slots, rdma_recv first rounded up to a
 * multiple of rdma_send (the Config constructor, 39-46), each slot the token, SourceMeta, the
 * 128 indices, weights and scales and an int4 (16 B): 2 (hidden_bytes + 2072) B a slot; plus
 * (8 x 2 + 2) x 2 ints of channel metadata; rounded up to 128 B. */
static double deepep_rdma_hint(int ranks, double hidden_bytes, int channels, int rdma_send,
                               int rdma_recv)
{
    if (ranks <= 8) return 0;
    int rdma_ranks = ranks / 8;
    int recv = (rdma_recv + rdma_send - 1) / rdma_send * rdma_send;
    double slots = (double)channels * rdma_ranks * recv;
    double bytes = (double)channels * rdma_ranks * (8 * 2 + 2) * 2 * 4.0 +
                   slots * 2.0 * (hidden_bytes + 8.0 + 128 * 8.0 + 128 * 4.0 + 128 * 4.0 + 16.0);
    return ceil(bytes / 128) * 128;
}

moe_deepep_buffer moe_deepep_buffer_bytes(int ranks, double hidden_bytes, int sms)
{
    /* Megatron's get_buffer (megatron/core/transformer/moe/fused_a2a.py 35-68 at d0b3b77)
     * takes, for the NVLink and the RDMA buffer each, the larger hint over DeepEP's dispatch
     * and combine configs for the group's size, and builds one Buffer(group, num_nvl_bytes,
     * num_rdma_bytes), normal mode, kept for the run. */
    moe_deepep_buffer b = {0, 0, 32.0 * 1024 * 1024};
    int channels = sms / 2, i = deepep_config_index(ranks);
    const deepep_config *cfg[2] = {&deepep_dispatch[i], &deepep_combine[i]};
    for (int k = 0; k < 2; k++) {
        double nvl = deepep_nvl_hint(ranks, hidden_bytes, channels, cfg[k]->nvl_recv);
        double rdma = deepep_rdma_hint(ranks, hidden_bytes, channels, cfg[k]->rdma_send,
                                       cfg[k]->rdma_recv);
        if (nvl > b.nvl_bytes) b.nvl_bytes = nvl;
        if (rdma > b.rdma_bytes) b.rdma_bytes = rdma;
    }
    return b;
}

/* SMs the flex dispatcher's back-ends hold unless --moe-dispatcher-sms says otherwise
 * (Megatron-Core transformer_config.py moe_deepep_num_sms = 20; token_dispatcher.py
 * _DeepepManager.__init__ set_deepep_num_sms(config.moe_deepep_num_sms), d0b3b77 1216). */
enum { DEEPEP_DEFAULT_SMS = 20 };

double moe_dispatch_buffer_bytes(const model_spec *m, const system_spec *sys,
                                 const training_spec *t, const layout *l)
{
    if (layout_is_pytorch(l) || l->ep <= 1 || !model_is_moe(m)) return 0;
    if (l->moe_dispatcher != MOE_DISPATCH_HYBRIDEP && l->moe_dispatcher != MOE_DISPATCH_DEEPEP)
        return 0;
    int etp = layout_etp(l);
    int ranks = l->ep * etp; /* the flex dispatcher's group: tp_ep_group */
    int h = m->hidden;
    if (l->moe_dispatcher == MOE_DISPATCH_DEEPEP) {
        /* DeepEP: fused_a2a.py get_hidden_bytes = hidden x max(element size, 2), 2h for bf16
         * and for FP8 dispatch alike. The NVLink buffer (with 160 B of peer pointers and
         * barrier signals) is cudaMalloc'd (csrc/deep_ep.cpp 173-174, SharedMemoryAllocator
         * without fabric handles), the workspace too (187), the RDMA buffer comes from
         * NVSHMEM's symmetric heap (nvshmem_align, 353): none goes through PyTorch's caching
         * allocator. Megatron never builds DeepEP's low-latency buffer (no low_latency_mode
         * in megatron/core at d0b3b77), so get_low_latency_rdma_size_hint does not apply.
         * Not priced: NVSHMEM's own state and any rounding of its heap to
         * NVSHMEM_CUMEM_GRANULARITY (DeepEP sets 2^29 B; no NVSHMEM source read here). */
        int sms = l->moe_dispatcher_sms > 0 ? l->moe_dispatcher_sms : DEEPEP_DEFAULT_SMS;
        moe_deepep_buffer b = moe_deepep_buffer_bytes(ranks, 2.0 * h, sms);
        return b.nvl_bytes + 160.0 + b.rdma_bytes + b.workspace_bytes;
    }
    /* HybridEP. Megatron builds one HybridEPBuffer over the dispatcher's group at the first
     * dispatch with max_num_of_tokens_per_rank = the rank's tokens (fused_a2a.py
     * init_hybrid_ep_buffer, x.shape[-2]). Its NVLink coordinator sizes for every token of
     * the group landing on one rank, max_num_of_tokens = tokens x ranks per NVLink domain x
     * domains (csrc/hybrid_ep/buffer/intranode.cu 126-129 at 17cfb81), and allocates through
     * its own allocator (cuMem / cudaMalloc, not PyTorch's; allocate_combine_buffers 253-262,
     * allocate_dispatch_buffers 193-213; use_shared_buffer True by default, hybrid_ep_buffer.py
     * 51): a bf16 token buffer, max_num_of_tokens x hidden x 2, shared by dispatch and
     * combine; fp32 probabilities for the domain's experts, max_num_of_tokens x experts per
     * rank x ranks per domain x 4, also shared; fp32 scaling factors, max_num_of_tokens x
     * (hidden / 128) x 4, the dispatch's own. Chunk flags and preprocessing scratch are
     * kilobytes. */
    layout_group g = layout_group_place(sys, ranks, 1);
    double per_domain = g.spans_nodes ? g.members_per_node : g.size;
    double tokens = (double)l->mbs * t->seq_len / l->cp / l->tp;
    double experts_per_rank = (double)(m->experts / l->ep), scales = 4.0 * (h / 128);
    double domain_probs = 4.0 * experts_per_rank * per_domain;
    double bytes = tokens * g.size * (2.0 * h + domain_probs + scales);
    if (g.spans_nodes) {
        /* Across NVLink domains the RDMA coordinator (csrc/hybrid_ep/buffer/internode_doca.cu
         * at 17cfb81, the default build; hybrid_ep.cu 84-96 allocates it when num_of_nodes >
         * 1) cudaMallocs, with T = the rank's tokens and N = domains: for the dispatch
         * (allocate_dispatch_buffers 383-428) the rank's own tokens, their probabilities over
         * all experts and scales, T (2h + 4 x experts + 4 h/128), and a staging group from
         * each other domain, T (N - 1) (2h + 4 x the domain's experts + 4 h/128); for the
         * combine (allocate_combine_buffers 557-588) an intra-domain reduction and an
         * inter-domain group, each T (N - 1) (2h + 4 x the domain's experts). The flags are
         * (T / chunk + 2) (N - 1) 8-byte words each: kilobytes, left out. */
        double domains = g.size / per_domain;
        bytes += tokens * (2.0 * h + domain_probs * domains + scales) +
                 tokens * (domains - 1) * (2.0 * h + domain_probs + scales) +
                 2.0 * tokens * (domains - 1) * (2.0 * h + domain_probs);
    }
    return bytes;
}
