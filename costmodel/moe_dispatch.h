/*
 * moe_dispatch.h — how MoE tokens reach their experts and come back, per token dispatcher, and
 * how uneven routing loads the busiest expert rank.
 *
 * Dispatchers (Megatron-Core megatron/core/transformer/moe/token_dispatcher.py and its MoE
 * README; DeepEP README and docs/legacy.md):
 *   alltoall  NCCL all-to-all of the top_k routed copies over the EP group, dispatch and combine.
 *   allgather all-gather of every token's hidden state over the ETP x EP group, each rank keeps
 *             the copies routed to its experts; the combine is the matching reduce-scatter.
 *             The volume does not depend on top_k or on the routing.
 *   deepep    DeepEP's normal (training) kernels: within the NVLink domain one row per token
 *             and rank holding one of its experts (expanded to those experts on arrival), not
 *             one per routed copy; across domains one RDMA copy per token and destination node
 *             (node-limited routing: DeepSeek-V3's topk_group caps the nodes), forwarded over
 *             NVLink to the ranks there. RDMA and NVLink phases are pipelined, so a pass takes
 *             the longer of the two. Runs on SMs it holds (Megatron --moe-deepep-num-sms, 20).
 *             NVLink rate: DeepEP's H800 figure as a fraction of the link (moe_dispatch.c).
 *   hybridep  NVIDIA's HybridEP backend of the same flex dispatcher: the same two-phase
 *             pattern on fewer SMs (Megatron --moe-hybridep-num-sms, 16); NVLink rate: its
 *             published kernel rates by EP size where the system gives them
 *             (node.hybridep_algbw), else DeepEP's; across nodes, where the system gives
 *             them, its published IB rates by EP size replace the two-phase bound
 *             (network.hybridep_rdma_algbw: H100, 1.2-1.4x the bound at two nodes).
 * The backward of each runs the reverse exchange of the same volume.
 *
 * Expert tensor parallelism (etp > 1; Megatron-LM d98e8a6 megatron/core/transformer/moe/
 * token_dispatcher.py): the alltoall dispatcher's dispatch_postprocess all-gathers the tokens
 * received by the all-to-all over the expert-TP group (gather_from_sequence_parallel_region,
 * group=expt_tp), so each ETP rank runs its 1/etp slice of the local experts on all of them,
 * and combine_preprocess reduce-scatters the partial outputs over the same group
 * (reduce_scatter_to_sequence_parallel_region). The flex dispatcher instead exchanges over one
 * ETP x EP group with etp x top_k copies of each token (MoEFlexTokenDispatcher: group
 * tp_ep_group, router_topk = tp_size * moe_router_topk, num_experts = tp_size * experts). The
 * allgather dispatcher gathers over ETP x EP already.
 *
 * FP8 dispatch (layout.moe_fp8_dispatch, DeepEP only): DeepSeek-V3 (arXiv 2412.19437, Sec.
 * 3.3.3 "Low-Precision Communication") quantizes the activation before the MoE up-projections
 * to FP8 and dispatches it, and does the same for the activation gradient before the down-
 * projections (the combine's backward, a dispatch of the output gradients); the forward and
 * backward combines stay bf16. DeepEP's dispatch takes e4m3 with one fp32 scale per 128
 * elements (1 + 4/128 bytes), its combine bf16 only. Megatron-LM (d98e8a6) does not pass FP8
 * to DeepEP (fused_a2a.py sends the bf16 hidden states; HybridEP "does not support fp8
 * dispatch now"); its FP8 wire format is the 'ncclep' backend's moe_dispatch_fwd_dtype /
 * moe_combine_bwd_dtype = mxfp8, a backend this planner does not model: the FP8 dispatch is
 * DeepEP-native (DeepSeek's own trainer), and plan says so in the emitted config.
 *
 * Imbalance: `moe_imbalance` is the busiest expert rank's routed tokens over the mean; the EP
 * ranks meet at the combine, so the slowest sets the pace: its expert GEMM rows and its
 * receive volume are the mean's times the load factor. With a capacity factor (token dropping)
 * the rank keeps at most capacity_factor x mean; dropless keeps all.
 */
#ifndef PLAN_MOE_DISPATCH_H
#define PLAN_MOE_DISPATCH_H

#include "collective.h"
#include "layout.h"
#include "model.h"
#include "system.h"

typedef struct {
    double dispatch_s, combine_s;          /* one forward pass of each (the backward: the same) */
    collective_op dispatch_op, combine_op; /* the NCCL collective the backend runs in its place */
    double dispatch_bytes, combine_bytes;  /* in collective.h's size convention */
    double rdma_bytes;                     /* deepep/hybridep: bytes per rank over the network */
    double nvlink_bytes;                   /* deepep/hybridep: bytes per rank over NVLink */
    int sms;                               /* SMs its kernels hold (0: NCCL's own channels) */
    /* alltoall with expert TP > 1: the all-gather of the received tokens over the expert-TP
     * group after the dispatch and the reduce-scatter before the combine (their backwards
     * swap them); bytes: the gathered tokens, collective.h's convention; 0 otherwise */
    double etp_gather_s, etp_scatter_s, etp_bytes;
} moe_dispatch_cost;

/* Busiest EP rank's routed rows over the mean: moe_imbalance (0 reads as 1), capped at the
 * capacity factor when tokens are dropped. */
double moe_load_factor(const training_spec *t);

/* Nodes (NVLink domains) one token's routed copies reach on average when the EP group spans
 * `nodes` of them: the expected distinct nodes among top_k experts (or, with node-limited
 * routing, topk_group expert groups) drawn without replacement. */
double moe_nodes_per_token(const model_spec *m, int nodes);

/* EP ranks one token's routed copies reach on average in a group of `ranks` (ETP x EP, etp
 * innermost): the expected distinct ranks among its etp x top_k experts drawn without
 * replacement (node-limited routing: within its topk_group expert groups). DeepEP and HybridEP
 * send one row per token and such rank. */
double moe_ranks_per_token(const model_spec *m, int ranks, int etp);

/* Bytes per hidden element of l's dispatch (and of the combine's backward): 2, or DeepEP's FP8
 * with its scales. */
double moe_dispatch_elem_bytes(const layout *l);

/* The dispatch and combine of one MoE layer for `tokens` tokens per GPU (after any SP
 * all-gather) under l's dispatcher; zero cost without EP. */
void moe_dispatch_price(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, double tokens, moe_dispatch_cost *out);

/* The back-ends' own device buffers: moe_buffers.h. */

/* How much slower the compute beside an overlapped exchange runs, and the exchange beside the
 * compute (Megatron's EP A2A overlap, recipe_price.c). DeepEP and HybridEP hold the SM counts
 * above: SMs / (SMs - held), their own pace unchanged (an assumption: their kernels keep their
 * SMs). NCCL's all-to-all: measured on H200s, x1.213 and x1.522 (overlap.h). */
double moe_dispatch_sm_slowdown(const system_spec *sys, const moe_dispatch_cost *dc);
double moe_dispatch_comm_slowdown(const moe_dispatch_cost *dc);

#endif
