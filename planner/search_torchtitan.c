/*
 * search_torchtitan.c — enumeration of torchtitan layouts (see search_torchtitan.h).
 *
 * What is tried, and why not more:
 *  - TP within one NVLink domain (DTensor TP's collectives are per block and exposed unless
 *    async TP hides them; across nodes it only loses), dividing the attention and KV heads;
 *    sequence parallel on (torchtitan's enable_sequence_parallel default); async TP off and
 *    on where the TP group stays in its domain (symmetric memory).
 *  - PP up to the layer count, split as torchtitan splits by default (first/last_stage_less_
 *    layers 1, costmodel/pp_split.c) plus one uneven variant (search_uneven.c): 1F1B;
 *    Interleaved1F1B with 2 stages per rank (torchtitan's default
 *    for multi-stage schedules, pipeline_parallel.py); ZBVZeroBubble and DualPipeV (2 per rank,
 *    uncompiled: torch.distributed.pipelining refuses compiled stages for them). GPipe holds
 *    every micro-batch for the same bubble as 1F1B, so it is never better and is not tried.
 *    Every micro-batch of the step goes into one schedule (num_pp_microbatches = m), which
 *    torchtitan allows and which minimises the bubble.
 *  - CP dividing 2*cp into the sequence; EP dividing the experts within dp*cp*tp, expert TP 1.
 *  - FSDP2 over dp*cp, or HSDP within a node where the node holds whole CP groups;
 *    reshard after forward on or off without PP, off with PP (torchtitan's default there:
 *    resharding would gather every unit again for every micro-batch's backward).
 *  - recompute none, selective (per-op SAC), full; compiled (torch.compile per block: it
 *    only fuses, never slows, in this model) except under the V schedules.
 *  - CPU offload (training.enable_cpu_offload: FSDP2's CPUOffloadPolicy) off and on without a
 *    pipeline, where a plan that fits no other way may fit with it.
 */
#include "search_torchtitan.h"
#include "search_layouts.h"
#include "schedule.h"
#include "search_uneven.h"

void search_torchtitan_layouts(const model_spec *m, const system_spec *sys,
                               const training_spec *t, const search_options *opt,
                               void (*emit)(void *arg, const layout *l), void *arg)
{
    int gpus = opt->gpus;
    double head_layers = search_uneven_head_layers(m);
    int tps[64], pps[64], cps[64], eps[64];
    static const int mbs_list[] = {1, 2, 4, 8, 16};
    static const layout_pp_schedule scheds[] = {PP_SCHEDULE_1F1B, PP_SCHEDULE_INTERLEAVED_1F1B,
                                                PP_SCHEDULE_ZBV, PP_SCHEDULE_DUALPIPEV};
    int domain = system_domain_gpus(sys);
    int ntp = search_divisors(gpus, tps, 64);
    for (int a = 0; a < ntp; a++) {
        int tp = tps[a];
        if (tp > domain || m->heads % tp || m->kv_heads % tp) continue;
        int npp = search_divisors(gpus / tp, pps, 64);
        for (int b = 0; b < npp; b++) {
            int pp = pps[b];
            if (pp > m->layers) break;
            int ncp = search_divisors(gpus / ((long)tp * pp), cps, 64);
            for (int cc = 0; cc < ncp; cc++) {
                int cp = cps[cc];
                if (cp > 1 && t->seq_len % (2 * cp)) continue;
                int dp = gpus / (tp * pp * cp);
                if (t->global_batch % dp) continue;
                int nep = model_is_moe(m) ? search_divisors(m->experts, eps, 64) : 1;
                if (!model_is_moe(m)) eps[0] = 1;
                /* HSDP within a node, holding whole CP groups */
                int node = sys->gpus_per_node / tp;
                bool hsdp = node > 0 && node < dp * cp && (dp * cp) % node == 0 && node % cp == 0;
                for (int d = 0; d < nep; d++) {
                    int ep = eps[d];
                    if (((long)dp * cp * tp) % ep) continue;
                    for (int si = 0; si < (pp > 1 ? 4 : 1); si++) {
                        layout_pp_schedule sched = pp > 1 ? scheds[si] : PP_SCHEDULE_DEFAULT;
                        int vpp = sched == PP_SCHEDULE_DEFAULT || sched == PP_SCHEDULE_1F1B ? 1 : 2;
                        bool v_shape = sched == PP_SCHEDULE_ZBV || sched == PP_SCHEDULE_DUALPIPEV;
                        for (size_t mb = 0; mb < sizeof mbs_list / sizeof *mbs_list; mb++) {
                            int mbs = mbs_list[mb];
                            if (t->global_batch % (dp * mbs)) break;
                            int micro = t->global_batch / (dp * mbs);
                            if (sched == PP_SCHEDULE_INTERLEAVED_1F1B &&
                                micro % schedule_torch_rounds(pp, micro))
                                continue;
                            if (sched == PP_SCHEDULE_DUALPIPEV && micro < 2 * pp) continue;
                            for (int sh = 0; sh < (hsdp ? 2 : 1); sh++)
                                for (int rs = (pp > 1 ? 0 : 1); rs >= 0; rs--)
                                    for (int at = 0; at < (tp > 1 && !v_shape ? 2 : 1); at++)
                                        for (int rc = 0; rc < 3; rc++)
                                            for (int off = 0; off < (pp == 1 ? 2 : 1); off++) {
                                            layout l = layout_default(FRAMEWORK_TORCHTITAN);
                                            l.tp = tp; l.pp = pp; l.dp = dp; l.cp = cp;
                                            l.ep = ep; l.etp = ep > 1 && tp > 1 ? 1 : 0;
                                            l.vpp = vpp; l.mbs = mbs; l.sp = tp > 1;
                                            l.pp_schedule = sched;
                                            l.shard_size = sh ? node : 0;
                                            l.reshard_after_forward = rs;
                                            l.recompute = (layout_recompute)rc;
                                            l.compile = !v_shape;
                                            l.async_tp = at;
                                            l.offload = off;
                                            emit(arg, &l);
                                            layout u; /* uneven stages (issue 21) */
                                            if (search_uneven_variant(m, head_layers, &l, &u))
                                                emit(arg, &u);
                                        }
                        }
                    }
                }
            }
        }
    }
}
