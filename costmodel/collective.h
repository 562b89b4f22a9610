/*
 * collective.h — alpha-beta cost of NCCL collectives, one table row per operation.
 *
 * time = alpha * steps(n) + bytes * bus_factor(n) / busbw
 * with the bus factors nccl-tests uses (doc/PERFORMANCE.md): all-reduce 2(n-1)/n; all-gather,
 * reduce-scatter and all-to-all (n-1)/n; send/recv 1. `bytes` is nccl-tests' "size": the full
 * buffer (all-reduce: the buffer every rank holds; all-gather: the gathered output; reduce-
 * scatter: the input; all-to-all: each rank's send buffer; send/recv: the message).
 * The backend uses the same table for its busbw figures.
 */
#ifndef PLAN_COLLECTIVE_H
#define PLAN_COLLECTIVE_H

#include "layout.h"
#include "system.h"

/* The time of a transfer that must cross nodes of a system with no inter-node network
 * (nics_per_node 0): no number, a sentinel far above any real time, so that a step containing
 * it is at least COLL_UNPRICED_S (see estimate_time_priced: such a plan is infeasible and has
 * no step time to print). */
#define COLL_UNPRICED_S 1e30

typedef enum {
    COLL_ALL_REDUCE = 0,
    COLL_ALL_GATHER,
    COLL_REDUCE_SCATTER,
    COLL_ALL_TO_ALL,
    COLL_SEND_RECV,
    COLL_COUNT
} collective_op;

typedef struct {
    collective_op op;
    const char *name;        /* "all_reduce" */
    double (*bus_factor)(int n);
    int (*latency_steps)(int n); /* ring steps paying alpha */
} collective_desc;

const collective_desc *collective_get(collective_op op);
const collective_desc *collective_find(const char *name);

/* Bus bandwidth a group of this placement gets on this system (bytes/s). */
double collective_busbw_bytes_per_s(const system_spec *sys, layout_group g);
double collective_latency_s(const system_spec *sys, layout_group g);

/* Predicted time of one collective of `bytes` over group g. 0 for a group of one. */
double collective_time_s(const system_spec *sys, collective_op op, double bytes, layout_group g);

#endif
