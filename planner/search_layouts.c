/*
 * search_layouts.c — the layouts the search tries under Megatron and under the FSDP2 trainer
 * path (search_layouts.h), and the sizes every enumeration shares (divisors, the batch a
 * data-parallel size runs, its micro-batch sizes). search.c evaluates what these emit;
 * torchtitan's enumeration is search_torchtitan.c.
 */
#include "search_layouts.h"

#include "search_uneven.h"


int search_divisors(long n, int *out, int max)
{
    int c = 0;
    for (long d = 1; d <= n && c < max; d++)
        if (n % d == 0) out[c++] = (int)d;
    return c;
}

/* The global batch a data-parallel size runs: the one asked, or under --gbs-policy nearest the
 * largest multiple of dp not above it (Calculon's OptimalExecution.get_batch_size,
 * calculon/llm/optimal_execution.py at caa4b11; its micro-batches then divide the per-replica
 * batch). 0: none (dp does not divide it, or exceeds it). */
int search_batch_for(const search_options *opt, const training_spec *t, int dp)
{
    if (opt->gbs_nearest) return (t->global_batch / dp) * dp;
    return t->global_batch % dp ? 0 : t->global_batch;
}

/* Micro-batch sizes: every divisor of the per-replica batch (Calculon's
 * get_valid_microbatch_sizes does the same, calculon/llm/llm.py at caa4b11). */
int search_micro_batches(int batch, int dp, int *out, int max)
{
    return batch > 0 ? search_divisors(batch / dp, out, max) : 0;
}

void search_megatron_layouts(const model_spec *m, const system_spec *sys, const training_spec *t,
                             const search_options *opt, void (*emit)(void *arg, const layout *l),
                             void *arg)
{
    (void)sys;
    int gpus = opt->gpus;
    double head_layers = search_uneven_head_layers(m);
    int tps[64], pps[64], cps[64], eps[64], vps[64];
    int ntp = search_divisors(gpus, tps, 64);
    for (int a = 0; a < ntp; a++) {
        int tp = tps[a];
        if (m->heads % tp || m->kv_heads % tp) continue;
        int npp = search_divisors(gpus / tp, pps, 64);
        for (int b = 0; b < npp; b++) {
            int pp = pps[b];
            if (pp > m->layers) break;
            int ncp = search_divisors(gpus / (tp * pp), cps, 64);
            for (int cc = 0; cc < ncp; cc++) {
                int cp = cps[cc];
                if (cp > 1 && t->seq_len % (2 * cp)) continue;
                int dp = gpus / (tp * pp * cp);
                int batch = search_batch_for(opt, t, dp);
                if (!batch) continue;
                int mbs_list[MBS_MAX];
                int n_mbs = search_micro_batches(batch, dp, mbs_list, MBS_MAX);
                int nep = model_is_moe(m) ? search_divisors(m->experts, eps, 64) : 1;
                if (!model_is_moe(m)) eps[0] = 1;
                int nvp = 1;
                vps[0] = 1;
                if (pp > 1 && m->layers % pp == 0) {
                    int per = m->layers / pp;
                    for (int v = 2; v <= per && nvp < 64; v++)
                        if (per % v == 0) vps[nvp++] = v;
                }
                /* interleaving the even split cannot give, through Megatron's account-for-
                 * embedding-and-loss split (search_uneven.h): entered as -v */
                int acc[64];
                int nacc = search_uneven_account_vpps(m, pp, vps, nvp, acc, 64 - nvp);
                for (int i = 0; i < nacc; i++) vps[nvp++] = -acc[i];
                /* expert TP: tp and 1, then under --etp-fold the divisors between */
                int etps[64], netp = 1;
                etps[0] = tp;
                if (tp > 1) etps[netp++] = 1;
                if (opt->etp_fold)
                    for (int e = 2; e < tp && netp < 64; e++)
                        if (tp % e == 0) etps[netp++] = e;
                for (int d = 0; d < nep; d++) {
                    int ep = eps[d];
                    for (int etp_i = 0; etp_i < (ep > 1 ? netp : 1); etp_i++) {
                        int etp = etps[etp_i];
                        if ((dp * cp * tp) % (ep * etp)) continue;
                        for (int v = 0; v < nvp; v++) {
                            for (int mb = 0; mb < n_mbs; mb++) {
                                int mbs = mbs_list[mb];
                                int vpp = vps[v] < 0 ? -vps[v] : vps[v];
                                if (vpp > 1 && (batch / (dp * mbs)) % pp) continue;
                                for (int sp = (tp > 1 ? 1 : 0); sp >= 0; sp--) {
                                    if (!sp && tp > 1 && model_is_moe(m)) continue;
                                    for (int sh = 0; sh < 3; sh++) {
                                        /* Megatron-FSDP: with both DP overlaps, as its
                                         * documentation recommends (the FSDP model
                                         * prefetches regardless); DDP and the distributed
                                         * optimizer: off here, and TP overlap off:
                                         * consider() tries them on */
                                        bool fsdp_ov = sh == SHARDING_FSDP && dp * cp > 1 &&
                                                       !opt->no_overlap;
                                        for (int rc = 0; rc < 3; rc++) {
                                            layout l = layout_default(FRAMEWORK_MEGATRON);
                                            l.tp = tp; l.pp = pp; l.dp = dp; l.cp = cp;
                                            l.ep = ep; l.etp = etp == tp ? 0 : etp;
                                            l.moe_dispatcher = opt->moe_dispatcher;
                                            l.vpp = vpp; l.mbs = mbs; l.sp = sp;
                                            if (vps[v] < 0) search_uneven_account_split(m, &l);
                                            l.sharding = (layout_sharding)sh;
                                            l.recompute = (layout_recompute)rc;
                                            l.overlap_grad_reduce = fsdp_ov;
                                            l.overlap_param_gather = fsdp_ov;
                                            emit(arg, &l);
                                            layout u; /* uneven stages (issue 21) */
                                            if (search_uneven_variant(m, head_layers, &l, &u))
                                                emit(arg, &u);
                                            layout o; /* the other rank order (issue 21) */
                                            if (layout_rank_order_alternative(sys, &l, &o)) {
                                                emit(arg, &o);
                                                if (search_uneven_variant(m, head_layers, &o, &u))
                                                    emit(arg, &u);
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

void search_fsdp2_layouts(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const search_options *opt, void (*emit)(void *arg, const layout *l),
                          void *arg)
{
    int gpus = opt->gpus;
    int cps[64];
    int ncp = search_divisors(gpus, cps, 64);
    for (int a = 0; a < ncp; a++) {
        int cp = cps[a];
        if (m->heads % cp || m->kv_heads % cp) continue;
        if (cp > 1 && t->seq_len % (2 * cp)) continue;
        int dp = gpus / cp;
        int batch = search_batch_for(opt, t, dp);
        if (!batch) continue;
        int mbs_list[MBS_MAX];
        int n_mbs = search_micro_batches(batch, dp, mbs_list, MBS_MAX);
        int shard_opts[2] = {0, sys->gpus_per_node};
        int nshard = (sys->gpus_per_node < dp * cp && (dp * cp) % sys->gpus_per_node == 0) ? 2 : 1;
        for (int mb = 0; mb < n_mbs; mb++) {
            int mbs = mbs_list[mb];
            for (int s = 0; s < nshard; s++)
                for (int rs = 1; rs >= 0; rs--)
                    for (int rc = 0; rc < 2; rc++)
                        for (int off = 0; off < 2; off++) { /* offload with checkpointing too (issue 19) */
                            layout l = layout_default(FRAMEWORK_FSDP2);
                            l.dp = dp; l.cp = cp; l.mbs = mbs;
                            l.shard_size = shard_opts[s];
                            l.reshard_after_forward = rs;
                            l.recompute = rc ? RECOMPUTE_FULL : RECOMPUTE_NONE;
                            l.offload = off;
                            emit(arg, &l);
                        }
        }
    }
}

