/*
 * collective.c — the collective table and the alpha-beta engine (see collective.h).
 *
 * Bandwidth of a group: inside one node, the NVLink per-GPU bandwidth times the achieved NCCL
 * efficiency. A group that spans nodes runs NCCL's rings (or trees, same bandwidth term) across
 * the network: every ring crosses each node boundary once and NCCL gives each ring its own NIC,
 * so with k members of the group on a node the group moves k NICs' worth of bandwidth per node:
 * busbw = k * (NICs * NIC bandwidth / GPUs per node) * efficiency, capped by NVLink. With one
 * member per node this is the per-GPU network bandwidth of DESIGN.md.
 *
 * "Node" here is the scale-up (NVLink) domain (layout.h): on NVL72 a group of 8 that crosses
 * two 4-GPU hosts of one rack is an NVLink group; only a group that leaves the 72-GPU domain
 * pays the network, through each member's own NIC share (rail-optimised scale-out: local rank
 * i of every host sits on rail i, so a ring's cross-domain hop is one switch hop).
 *
 * Two variants of the in-domain bandwidth:
 *  - NVLink SHARP (NVLS, node.nvls_busbw_bytes_per_s, off unless node.nvls or --nvls): NVSwitch
 *    reduces in the fabric, so an all-reduce moves each byte once in and once out and reaches
 *    a busbw above the per-GPU link rate (~480 GB/s on 8x H100, data/systems/README.md). Only
 *    all-reduce uses it; all-gather and reduce-scatter keep the ring figure.
 *  - a point-to-point mesh (node.fabric "mesh", AMD xGMI): each GPU has domain-1 links, one to
 *    every peer, and a group of n uses only its n-1 (RCCL README: with fewer than 8 MI300X "one
 *    can only achieve a fraction of the potential bandwidth"), so busbw x (n-1)/(domain-1).
 */
#include "collective.h"

#include <math.h>
#include <string.h>

static double factor_all_reduce(int n) { return 2.0 * (n - 1) / n; }
static double factor_ring(int n) { return (double)(n - 1) / n; }
static double factor_one(int n) { (void)n; return 1.0; }
static int steps_all_reduce(int n) { return 2 * (n - 1); }
static int steps_ring(int n) { return n - 1; }
static int steps_one(int n) { (void)n; return 1; }

static const collective_desc table[COLL_COUNT] = {
    {COLL_ALL_REDUCE, "all_reduce", factor_all_reduce, steps_all_reduce},
    {COLL_ALL_GATHER, "all_gather", factor_ring, steps_ring},
    {COLL_REDUCE_SCATTER, "reduce_scatter", factor_ring, steps_ring},
    {COLL_ALL_TO_ALL, "all_to_all", factor_ring, steps_ring},
    {COLL_SEND_RECV, "send_recv", factor_one, steps_one},
};

const collective_desc *collective_get(collective_op op)
{
    return (op >= 0 && op < COLL_COUNT) ? &table[op] : NULL;
}

const collective_desc *collective_find(const char *name)
{
    for (int i = 0; i < COLL_COUNT; i++)
        if (strcmp(table[i].name, name) == 0) return &table[i];
    return NULL;
}

double collective_busbw_bytes_per_s(const system_spec *sys, layout_group g)
{
    double intra = sys->intra_bandwidth_bytes_per_s * sys->intra_busbw_efficiency;
    int domain = system_domain_gpus(sys);
    if (sys->scaleup_mesh && domain > 1 && g.members_per_node < domain)
        intra *= (double)(g.members_per_node - 1) / (domain - 1);
    if (!g.spans_nodes) return intra;
    double inter = g.members_per_node * system_inter_bandwidth_per_gpu(sys) *
                   sys->inter_busbw_efficiency;
    return inter < intra ? inter : intra;
}

double collective_latency_s(const system_spec *sys, layout_group g)
{
    return g.spans_nodes ? sys->inter_latency_s : sys->intra_latency_s;
}

/*
 * NCCL's double binary tree for an all-reduce that spans nodes (Jeaugey, "Massively Scale Your
 * Deep Learning Training with NCCL 2.4", NVIDIA blog 2019: trees keep full bandwidth with a
 * latency logarithmic in the node count; NCCL picks, per call, the algorithm its tuning model
 * predicts fastest). The terms are NCCL's own model (src/graph/tuning.cc, ncclTopoTuneModel):
 * latency base + 2 ((ranks per node - 1) intra hops + log2(nodes) network hops); bandwidth 0.92
 * of the ring's bus bandwidth ("busBw*.92") at an algorithm bandwidth of half of it ("ratio =
 * .5": every byte goes up and down the tree). The ring's latency grows with the rank count,
 * 2(n-1) hops, so from a few hundred ranks on the tree wins every latency-bound message (a
 * Megatron bucket at thousands of ranks), while the ring keeps large ones.
 */
/* (PAT, below: NCCL 2.23's all-gather / reduce-scatter for one GPU per node, Jeaugey 2025,
 * "PAT: a new algorithm for all-gather and reduce-scatter operations at scale", arXiv
 * 2506.20252: a logarithmic number of network transfers where the ring's linear latency is
 * poor "for small sizes and/or at scale"; the same bytes cross each NIC as in the ring.) */
static double all_reduce_tree_s(const system_spec *sys, double bytes, layout_group g, double bw)
{
    int per_node = g.members_per_node > 0 ? g.members_per_node : 1;
    double nodes = (double)g.size / per_node;
    double hops = 2.0 * ((per_node - 1) * sys->intra_latency_s +
                         ceil(log2(nodes > 1 ? nodes : 1)) * sys->inter_latency_s);
    return sys->call_latency_s + hops + bytes * 2.0 / (0.92 * bw);
}

double collective_time_s(const system_spec *sys, collective_op op, double bytes, layout_group g)
{
    if (g.size <= 1 || bytes <= 0) return 0;
    const collective_desc *d = &table[op];
    /* A measured fit for exactly this operation, group size and span, if the profile has one. */
    const system_collective_fit *fit = system_collective_fit_find(sys, op, g.size, g.spans_nodes);
    if (fit) return fit->alpha_s + bytes * d->bus_factor(g.size) / fit->busbw_bytes_per_s;
    /* alpha: a fixed cost per call plus one latency per ring step. The per-call cost is what
     * NCCL pays at any size beyond the per-step hops (measured on h200-x4: all-reduce of 1-64
     * MiB takes ~25 us more than bytes / asymptotic busbw; data/systems/README.md). */
    double alpha = sys->call_latency_s + collective_latency_s(sys, g) * d->latency_steps(g.size);
    if (g.spans_nodes && (op == COLL_ALL_GATHER || op == COLL_REDUCE_SCATTER) &&
        g.members_per_node > 1) {
        /* A ring of n ranks on n/k nodes crosses the network only at the node boundaries:
         * NCCL's own latency model (src/graph/tuning.cc) charges nNodes - 1 of the n - 1 steps
         * of an all-gather / reduce-scatter at the network hop and the rest at the NVLink hop.
         * (The all-reduce keeps every step at the network hop here; across nodes its tree, below,
         * takes over where latency matters.) */
        int nodes = (g.size + g.members_per_node - 1) / g.members_per_node;
        alpha = sys->call_latency_s + (g.size - nodes) * sys->intra_latency_s +
                (nodes - 1) * sys->inter_latency_s;
    }
    if (g.spans_nodes && (op == COLL_SEND_RECV || op == COLL_ALL_TO_ALL)) {
        /* Not rings: a point-to-point message crosses the network on one GPU's NIC share, and
         * in an all-to-all each rank sends the (n - k)/n of its buffer bound for other nodes
         * through its own NIC share while the rest moves over NVLink at the same time. */
        double net = system_inter_bandwidth_per_gpu(sys) * sys->inter_busbw_efficiency;
        if (net <= 0) return COLL_UNPRICED_S;
        double off_node = op == COLL_SEND_RECV
                              ? 1.0
                              : (double)(g.size - g.members_per_node) / g.size;
        return alpha + bytes * off_node / net;
    }
    double bw = collective_busbw_bytes_per_s(sys, g);
    if (op == COLL_ALL_REDUCE && !g.spans_nodes && sys->nvls_enabled &&
        sys->nvls_busbw_bytes_per_s > bw)
        bw = sys->nvls_busbw_bytes_per_s;
    if (bw <= 0) return COLL_UNPRICED_S; /* no network: the layout cannot span nodes on this system */
    double ring = alpha + bytes * d->bus_factor(g.size) / bw;
    if (op == COLL_ALL_REDUCE && g.spans_nodes)
        return fmin(ring, all_reduce_tree_s(sys, bytes, g, bw));
    if ((op == COLL_ALL_GATHER || op == COLL_REDUCE_SCATTER) && g.spans_nodes &&
        g.members_per_node == 1)
        return fmin(ring, sys->call_latency_s +
                              ceil(log2((double)g.size)) * collective_latency_s(sys, g) +
                              bytes * d->bus_factor(g.size) / bw);
    return ring;
}
