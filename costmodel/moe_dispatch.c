/*
 * moe_dispatch.c — MoE dispatch/combine per token dispatcher and the busiest rank's load (see
 * moe_dispatch.h for the patterns and their sources).
 */
#include "moe_dispatch.h"

#include <string.h>

/* SMs the flex dispatcher's kernels hold: Megatron-Core transformer_config.py,
 * moe_deepep_num_sms = 20 and moe_hybridep_num_sms = 16 ("in pure NVL scenarios, 16 SMs can
 * generally achieve good bandwidth"). */
enum { DEEPEP_SMS = 20, HYBRIDEP_SMS = 16 };

/* DeepEP's normal kernels reach the links' bandwidth: docs/legacy.md, H800 (~160 GB/s NVLink,
 * CX7 400 Gb/s ~50 GB/s RDMA), DeepSeek-V3 pretraining shape: intranode EP8 153 GB/s dispatch /
 * 158 combine (0.96-0.99 of NVLink); internode EP16/32/64 43/58/51 GB/s RDMA ("logical"
 * bandwidth, counting local traffic: about the NIC's 50). We take 153/160 of the NVLink figure
 * and the NIC's full per-GPU bandwidth; the same for HybridEP (no published figure; an
 * ASSUMPTION that it matches DeepEP on bandwidth, at fewer SMs). */
#define FLEX_NVLINK_EFFICIENCY (153.0 / 160.0)
#define FLEX_RDMA_EFFICIENCY 1.0

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

/* The flex dispatcher's two phases: the routed copies leaving the node once per destination
 * node over RDMA, and every copy over NVLink inside the destination domain; pipelined. */
static void flex_price(const model_spec *m, const system_spec *sys, const layout *l,
                       double own_tokens, double f, int sms, moe_dispatch_cost *out)
{
    layout_group g = layout_ep_group(sys, l);
    double h = m->hidden;
    double copies = own_tokens * m->top_k * h * 2.0 * f; /* bytes of this rank's routed copies */
    int per_node = g.members_per_node > 0 ? g.members_per_node : 1;
    int nodes = g.spans_nodes ? (g.size + per_node - 1) / per_node : 1;
    double nv_bw = sys->intra_bandwidth_bytes_per_s * FLEX_NVLINK_EFFICIENCY;
    double lat = collective_latency_s(sys, g);
    if (!g.spans_nodes) {
        out->nvlink_bytes = copies * (g.size - 1) / g.size;
        out->rdma_bytes = 0;
        out->dispatch_s = lat + out->nvlink_bytes / nv_bw;
    } else {
        double remote = moe_nodes_per_token(m, nodes) * (nodes - 1) / nodes;
        out->rdma_bytes = own_tokens * h * 2.0 * f * remote;
        out->nvlink_bytes = copies * (per_node - 1) / per_node;
        double rdma_bw = system_inter_bandwidth_per_gpu(sys) * FLEX_RDMA_EFFICIENCY;
        double t_rdma = out->rdma_bytes / rdma_bw, t_nv = out->nvlink_bytes / nv_bw;
        out->dispatch_s = lat + (t_rdma > t_nv ? t_rdma : t_nv);
    }
    out->combine_s = out->dispatch_s;
    out->sms = sms;
    /* the backend's stand-in: an all-to-all of the routed copies over the EP group */
    out->dispatch_op = out->combine_op = COLL_ALL_TO_ALL;
    out->dispatch_bytes = out->combine_bytes = copies;
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
    case MOE_DISPATCH_DEEPEP: flex_price(m, sys, l, own, f, DEEPEP_SMS, out); return;
    case MOE_DISPATCH_HYBRIDEP: flex_price(m, sys, l, own, f, HYBRIDEP_SMS, out); return;
    case MOE_DISPATCH_ALLTOALL:
    default: {
        /* the busiest rank receives f times the mean's copies and the exchange ends with it */
        double bytes = own * m->top_k * h * 2.0 * f;
        double s = collective_time_s(sys, COLL_ALL_TO_ALL, bytes, layout_ep_group(sys, l));
        out->dispatch_bytes = out->combine_bytes = bytes;
        out->dispatch_s = out->combine_s = s;
        return;
    }
    }
}
