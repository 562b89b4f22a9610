/*
 * search_layouts.h — the Megatron and FSDP2 layouts the search tries (search_layouts.c), handed
 * one by one to search.c's evaluator through emit, as search_torchtitan.h does for torchtitan;
 * and the size helpers the enumerations share.
 */
#ifndef PLAN_SEARCH_LAYOUTS_H
#define PLAN_SEARCH_LAYOUTS_H

#include "search.h"

enum { MBS_MAX = 256 }; /* micro-batch sizes tried per data-parallel size, at most */

/* The divisors of n in increasing order, at most max; returns how many. */
int search_divisors(long n, int *out, int max);
/* The global batch a data-parallel size runs (the one asked, or under --gbs-policy nearest the
 * largest multiple of dp not above it); 0: none. */
int search_batch_for(const search_options *opt, const training_spec *t, int dp);
/* Micro-batch sizes: every divisor of the per-replica batch. */
int search_micro_batches(int batch, int dp, int *out, int max);

/* Megatron: TP x PP x CP (x EP, expert TP, virtual stages, with the uneven and account-for-
 * embedding/loss pipeline variants) x micro-batch x SP x sharding x recompute. */
void search_megatron_layouts(const model_spec *m, const system_spec *sys, const training_spec *t,
                             const search_options *opt, void (*emit)(void *arg, const layout *l),
                             void *arg);
/* The FSDP2 trainer path: Ulysses CP x micro-batch x HSDP x reshard x recompute x offload. */
void search_fsdp2_layouts(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const search_options *opt, void (*emit)(void *arg, const layout *l),
                          void *arg);

#endif
