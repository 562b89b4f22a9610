/*
 * moe_dispatch.c — MoE dispatch/combine per token dispatcher and the busiest rank's load (see
 * moe_dispatch.h for the patterns and their sources).
 */
#include "moe_dispatch.h"

#include <string.h>

#include "overlap.h"
#include "precision.h"

/* SMs the flex dispatcher's kernels hold: Megatron-Core transformer_config.py,
 * moe_deepep_num_sms = 20 and moe_hybridep_num_sms = 16 ("in pure NVL scenarios, 16 SMs can
 * generally achieve good bandwidth"). */
enum { DEEPEP_SMS = 20, HYBRIDEP_SMS = 16 };

/* DeepEP's normal kernels against the links' bandwidth: deepseek-ai/DeepEP dd758ca
 * docs/legacy.md (the V1 table, as README.md at 3b1045d), H800 (~160 GB/s NVLink, CX7 400 Gb/s
 * ~50 GB/s RDMA), DeepSeek-V3 pretraining shape (4096 tokens, h 7168, top-4 of 8 groups, top-8,
 * FP8 dispatch, BF16 combine): intranode EP 8 153 GB/s dispatch / 158 combine; internode EP
 * 16/32/64 43/58/51 GB/s dispatch, 43/57/50 combine. The internode figures are "logical"
 * bandwidth (README.md at dd758ca: it "contains local rank traffic"): the bytes of every token's
 * copy to each node it reaches, its own node's included, over the time. This file's RDMA bytes
 * are the copies to the other nodes only (flex_pass_s: nodes_per_token (nodes - 1) / nodes), so
 * the NIC's achieved share is (nodes - 1) / nodes x logical / 50: EP 32 (4 nodes) 0.870
 * dispatch / 0.855 combine, EP 64 (8 nodes) 0.8925 / 0.875; their mean 0.873 is
 * FLEX_RDMA_EFFICIENCY (issue 20, moe10; it was 1.0, the NIC's full rate).
 * The intranode figure is of the same kind: DeepEP's test (tests/test_intranode.py at 3b1045d,
 * 142-155) divides `recv_x.numel() * 2` (x the FP8 factor), the rows the rank receives, by the
 * time; the dispatch sends a token once to each rank that holds one of its experts
 * (Buffer.get_dispatch_layout's is_token_in_rank) and the rank's own rows count. So
 * FLEX_NVLINK_EFFICIENCY x the link's rate divides those received bytes (flex_pass_s; moe13:
 * before, it divided a copy per routed expert, the rank's own left out). HybridEP's measured
 * rates, where a system gives them (node.hybridep_algbw), replace it for HybridEP. */
#define FLEX_NVLINK_EFFICIENCY (153.0 / 160.0)
#define FLEX_RDMA_EFFICIENCY ((0.75 * (58.0 + 57.0) + 0.875 * (51.0 + 50.0)) / (4 * 50.0))

double moe_load_factor(const training_spec *t)
{
    double f = t->moe_imbalance > 1.0 ? t->moe_imbalance : 1.0;
    if (t->moe_capacity_factor > 0 && f > t->moe_capacity_factor) f = t->moe_capacity_factor;
    return f;
}

double moe_nodes_per_token(const model_spec *m, int nodes)
{
    if (nodes <= 1) return 1.0;
    bool limited = m->router_groups > 0 && m->router_topk_groups > 0;
    double units = limited ? m->router_groups : m->experts;
    int picks = limited ? m->router_topk_groups : m->top_k;
    double per_node = units / nodes;
    if (per_node < 1.0) per_node = 1.0; /* more nodes than groups: a group spans nodes */
    /* P(a node gets none of the picks) = C(units - per_node, picks) / C(units, picks) */
    double none = 1.0;
    for (int i = 0; i < picks; i++) {
        double num = units - per_node - i, den = units - i;
        if (num <= 0 || den <= 0) {
            none = 0;
            break;
        }
        none *= num / den;
    }
    return nodes * (1.0 - none);
}

double moe_ranks_per_token(const model_spec *m, int ranks, int etp)
{
    if (ranks <= 1) return 1.0;
    if (etp < 1) etp = 1;
    /* the flex dispatcher routes over ETP x EP ranks: etp x top_k picks of etp x experts */
    double experts = (double)m->experts * etp, per_rank = experts / ranks;
    int picks = m->top_k * etp;
    double pool_experts = experts, pool_ranks = ranks;
    /* node-limited routing (DeepSeek-V3 n_group / topk_group): a token's experts lie in
     * topk_group of the n_group expert groups; where the ranks split the groups evenly, its
     * picks fall on the ranks of those groups alone */
    if (etp == 1 && m->router_groups > 0 && m->router_topk_groups > 0 &&
        ranks % m->router_groups == 0) {
        pool_experts = experts * m->router_topk_groups / m->router_groups;
        pool_ranks = (double)ranks * m->router_topk_groups / m->router_groups;
    }
    if (per_rank < 1.0) per_rank = 1.0;
    /* P(a rank of the pool holds none of the picks) = C(pool - per_rank, k) / C(pool, k) */
    double none = 1.0;
    for (int i = 0; i < picks; i++) {
        double num = pool_experts - per_rank - i, den = pool_experts - i;
        if (num <= 0 || den <= 0) {
            none = 0;
            break;
        }
        none *= num / den;
    }
    return pool_ranks * (1.0 - none);
}

/* A measured algorithm bandwidth at `ranks` (node.hybridep_algbw inside the NVLink domain,
 * network.hybridep_rdma_algbw across it), linear between the measured EP sizes, the nearest
 * one outside them; 0 where the system has none. */
static double ep_rate(const system_ep_rates *r, int ranks, bool combine)
{
    int n = r->n;
    if (n <= 0) return 0;
    const double *ep = r->ep;
    const double *bw = combine ? r->combine_bytes_per_s : r->dispatch_bytes_per_s;
    if (ranks <= ep[0]) return bw[0];
    for (int i = 1; i < n; i++)
        if (ranks <= ep[i])
            return bw[i - 1] + (bw[i] - bw[i - 1]) * (ranks - ep[i - 1]) / (ep[i] - ep[i - 1]);
    return bw[n - 1];
}

/* One pass of the flex dispatcher's two phases for `elem_bytes` per hidden element: the routed
 * tokens leaving the node once per destination node over RDMA, and over NVLink one row per
 * token and receiving rank (moe_ranks_per_token: DeepEP and HybridEP send a token once to each
 * rank holding one of its experts, and expand it to the experts there; HybridEP's buffers hold
 * "max_num_of_tokens_per_rank x ranks" rows, deepseek-ai/DeepEP hybrid-ep 94a9f8f
 * docs/Hybrid-EP_Implementation.md 4.2); pipelined. By symmetry a rank receives as many rows as
 * its own tokens send. Returns its time; *copies_bytes: this rank's routed copies (the backend's
 * all-to-all stand-in), *rdma / *nvl: its bytes on each link (nvl: the rows it receives, its
 * own included, the convention the measured rates divide). */
static double flex_pass_s(const model_spec *m, const system_spec *sys, const layout *l,
                          double own_tokens, double f, double elem_bytes, bool combine,
                          double *copies_bytes, double *rdma, double *nvl)
{
    /* one group over ETP x EP (etp innermost), etp copies of each routed token */
    int etp = layout_etp(l);
    layout_group g = layout_group_place(sys, l->ep * etp, 1);
    double h = m->hidden;
    double copies = own_tokens * m->top_k * etp * h * elem_bytes * f;
    int per_node = g.members_per_node > 0 ? g.members_per_node : 1;
    int nodes = g.spans_nodes ? (g.size + per_node - 1) / per_node : 1;
    double nv_bw = l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP
                       ? ep_rate(&sys->hybridep_algbw, g.size, combine)
                       : 0;
    if (nv_bw <= 0) nv_bw = sys->intra_bandwidth_bytes_per_s * FLEX_NVLINK_EFFICIENCY;
    double lat = collective_latency_s(sys, g);
    *copies_bytes = copies;
    *nvl = own_tokens * moe_ranks_per_token(m, g.size, etp) * h * elem_bytes * f;
    if (!g.spans_nodes) {
        *rdma = 0;
        return lat + *nvl / nv_bw;
    }
    double nodes_per_token = moe_nodes_per_token(m, nodes);
    double remote = nodes_per_token * (nodes - 1) / nodes;
    *rdma = own_tokens * h * elem_bytes * f * remote;
    /* HybridEP across nodes, where the system gives its measured rates
     * (network.hybridep_rdma_algbw): the kernel's time is the "logical" bytes, every token's
     * copy to each node it reaches, its own node's included (deepseek-ai/DeepEP hybrid-ep
     * 1dddd19 tests/utils.py count_rdma_send_from_routing_map, "we do not set the local node
     * map to zeros"), over the measured rate. It replaces the two-phase bound below: at two
     * nodes HybridEP's measured kernels on H100 run 1.2-1.4x longer than that bound (bench/
     * results/bwmoe20_2026-11-29), at four and eight nodes as long. */
    double rdma_algbw = l->moe_dispatcher == MOE_DISPATCH_HYBRIDEP
                            ? ep_rate(&sys->hybridep_rdma_algbw, g.size, combine)
                            : 0;
    if (rdma_algbw > 0)
        return lat + own_tokens * nodes_per_token * h * elem_bytes * f / rdma_algbw;
    double rdma_bw = system_inter_bandwidth_per_gpu(sys) * FLEX_RDMA_EFFICIENCY;
    double t_rdma = *rdma / rdma_bw, t_nv = *nvl / nv_bw;
    return lat + (t_rdma > t_nv ? t_rdma : t_nv);
}

/* The flex dispatcher: the dispatch in `dispatch_elem_bytes` per element (2, or DeepEP's FP8
 * with its scales), the combine in bf16. */
static void flex_price(const model_spec *m, const system_spec *sys, const layout *l,
                       double own_tokens, double f, double dispatch_elem_bytes, int sms,
                       moe_dispatch_cost *out)
{
    double r, n;
    out->combine_s = flex_pass_s(m, sys, l, own_tokens, f, 2.0, true, &out->combine_bytes, &r,
                                 &n);
    out->dispatch_s = flex_pass_s(m, sys, l, own_tokens, f, dispatch_elem_bytes, false,
                                  &out->dispatch_bytes, &out->rdma_bytes, &out->nvlink_bytes);
    out->sms = sms;
    /* the backend's stand-in: an all-to-all of the routed copies over the EP group */
    out->dispatch_op = out->combine_op = COLL_ALL_TO_ALL;
}

double moe_dispatch_elem_bytes(const layout *l)
{
    /* DeepEP's dispatch takes (x: [tokens, hidden] float8_e4m3fn, scales: [tokens,
     * hidden / 128] float) (deep_ep/buffer.py Buffer.dispatch, deepseek-ai/DeepEP 04b06f7):
     * 1 + 4/128 bytes per element; its combine takes bf16 only */
    return l->moe_fp8_dispatch && precision_is_low(l) ? 1.0 + 4.0 / 128 : 2.0;
}

void moe_dispatch_price(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, double tokens, moe_dispatch_cost *out)
{
    memset(out, 0, sizeof *out);
    out->dispatch_op = out->combine_op = COLL_ALL_TO_ALL;
    if (l->ep <= 1) return;
    double f = moe_load_factor(t);
    double own = tokens / l->tp; /* this rank's tokens: its SP shard (Megatron routes those) */
    double h = m->hidden;
    switch (l->moe_dispatcher) {
    case MOE_DISPATCH_ALLGATHER: {
        /* every token's hidden state gathered over the ETP x EP group (etp innermost, then ep:
         * contiguous ranks), the reduce-scatter back; no dependence on routing. The recipe's
         * items name the EP group (the backend has no ETP x EP group): with etp > 1 the backend
         * runs the same bytes over ep ranks only. */
        int n = l->ep * layout_etp(l);
        layout_group g = layout_group_place(sys, n, 1);
        double bytes = own * h * 2.0 * n; /* the gathered output */
        out->dispatch_op = COLL_ALL_GATHER;
        out->combine_op = COLL_REDUCE_SCATTER;
        out->dispatch_bytes = out->combine_bytes = bytes;
        out->dispatch_s = collective_time_s(sys, COLL_ALL_GATHER, bytes, g);
        out->combine_s = collective_time_s(sys, COLL_REDUCE_SCATTER, bytes, g);
        return;
    }
    case MOE_DISPATCH_DEEPEP:
        flex_price(m, sys, l, own, f, moe_dispatch_elem_bytes(l),
                   l->moe_dispatcher_sms > 0 ? l->moe_dispatcher_sms : DEEPEP_SMS, out);
        return;
    case MOE_DISPATCH_HYBRIDEP:
        flex_price(m, sys, l, own, f, 2.0,
                   l->moe_dispatcher_sms > 0 ? l->moe_dispatcher_sms : HYBRIDEP_SMS, out);
        return;
    case MOE_DISPATCH_ALLTOALL:
    default: {
        /* the busiest rank receives f times the mean's copies and the exchange ends with it */
        double bytes = own * m->top_k * h * 2.0 * f;
        double s = collective_time_s(sys, COLL_ALL_TO_ALL, bytes, layout_ep_group(sys, l));
        out->dispatch_bytes = out->combine_bytes = bytes;
        out->dispatch_s = out->combine_s = s;
        int etp = layout_etp(l);
        if (etp > 1) {
            /* the expert-TP all-gather of what the all-to-all delivered, and the matching
             * reduce-scatter (etp innermost: contiguous ranks) */
            layout_group ge = layout_group_place(sys, etp, 1);
            out->etp_bytes = bytes * etp;
            out->etp_gather_s = collective_time_s(sys, COLL_ALL_GATHER, out->etp_bytes, ge);
            out->etp_scatter_s = collective_time_s(sys, COLL_REDUCE_SCATTER, out->etp_bytes, ge);
        }
        return;
    }
    }
}

double moe_dispatch_sm_slowdown(const system_spec *sys, const moe_dispatch_cost *dc)
{
    if (dc->sms <= 0) return OVERLAP_CONTENTION_A2A_COMPUTE;
    double sms = overlap_sm_count(sys);
    return sms / (sms - dc->sms);
}

double moe_dispatch_comm_slowdown(const moe_dispatch_cost *dc)
{
    return dc->sms <= 0 ? OVERLAP_CONTENTION_A2A_COMM : 1.0;
}
