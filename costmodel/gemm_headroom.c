/*
 * gemm_headroom.c — the rate GEMMs run at inside a step under the power cap (gemm_headroom.h has
 * the model and its measurement).
 *
 * NVIDIA documents the mechanism, not a formula: the NVML API reference (group
 * nvmlClocksEventReasons, https://docs.nvidia.com/deploy/nvml-api/api/group__nvmlClocksEventReasons.html)
 * describes nvmlClocksEventReasonSwPowerCap as the driver's power-scaling algorithm lowering the
 * clocks below the requested (boost) clocks so as to stay within the set power limit, and DCGM's
 * field constants (DCGM_CLOCKS_THROTTLE_REASON_SW_POWER_CAP) the same; under the limit the clocks
 * go up to the maximum (1980 MHz on H100 SXM). bench/results/duty_2026-11-27 recorded that reason
 * in every sample of the 48 points held at 700 W, and not at all (SM clock at the 1980 MHz
 * maximum) in the 8 whose average power stayed under it. The exponent, burst ratio and powers are the H100 measurements of
 * bench/gemm_power_mix.py, fitted by bench/gemm_power_fit.py.
 */
#include "gemm_headroom.h"

#include <math.h>

bool gemm_headroom_fitted(const system_spec *sys)
{
    return sys->gemm_power_exponent > 0 && sys->gemm_burst_ratio > 1 && sys->tdp_w > 0 &&
           sys->idle_power_w > 0 && sys->memory_bound_power_w > 0;
}

bool gemm_headroom_applies(const system_spec *sys)
{
    return (sys->gemm_headroom_on || sys->gemm_headroom_bubble) && gemm_headroom_fitted(sys);
}

double gemm_headroom_cap_w(const system_spec *sys)
{
    if (sys->power_limit_w > 0 && sys->power_limit_w < sys->tdp_w) return sys->power_limit_w;
    return sys->tdp_w;
}

double gemm_headroom_max_rate(const system_spec *sys)
{
    system_spec base = *sys;
    base.gemm_headroom_rate = 1;
    double r = sys->gemm_burst_ratio / system_gemm_power_scale(&base);
    return r > 1 ? r : 1;
}

double gemm_headroom_rate(const system_spec *sys, double gemm_s, double memory_s, double idle_s)
{
    return gemm_headroom_rate_comm(sys, gemm_s, memory_s, idle_s, 0);
}

double gemm_headroom_rate_comm(const system_spec *sys, double gemm_s, double memory_s,
                               double idle_s, double comm_s)
{
    if (!gemm_headroom_applies(sys) || !(gemm_s > 0)) return 1;
    double cap = gemm_headroom_cap_w(sys);
    double comm_w = sys->comm_power_w > 0 ? sys->comm_power_w : sys->idle_power_w;
    double spare_s = fmax(0, 1 - sys->memory_bound_power_w / cap) * fmax(0, memory_s) +
                     fmax(0, 1 - sys->idle_power_w / cap) * fmax(0, idle_s) +
                     fmax(0, 1 - comm_w / cap) * fmax(0, comm_s);
    double u = spare_s / gemm_s, beta = sys->gemm_power_exponent;
    double rmax = gemm_headroom_max_rate(sys);
    /* r -> (1 + u r)^beta is increasing with slope beta u (1 + u r)^(beta - 1) < 1 on the way
     * up from r = 1 for beta < 1 and the u of real steps; iterate until it settles or passes
     * the burst rate. */
    double r = 1;
    for (int i = 0; i < 200; i++) {
        double next = pow(1 + u * r, beta);
        if (next >= rmax) return rmax;
        if (fabs(next - r) < 1e-12) return next;
        r = next;
    }
    return r < rmax ? r : rmax;
}

void gemm_headroom_step(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, const stage_time *worst, estimate *out,
                        gemm_headroom_mix *mix)
{
    if (mix) *mix = (gemm_headroom_mix){0};
    if (!gemm_headroom_applies(sys)) return;
    int micro = out->microbatches > 0 ? out->microbatches : 1;
    /* The worst stage's GEMM time: priced again with every GEMM at the burst rate; the
     * difference is what the clock speeds up (memory-bound GEMMs, fixed per-kernel overheads
     * and host-paced stretches do not move and stay out of it). */
    double probe = gemm_headroom_max_rate(sys);
    if (probe <= 1) return;
    system_spec fast = *sys;
    fast.gemm_headroom_rate = probe;
    stage_time wg = estimate_worst_stage(m, &fast, t, l, NULL, NULL);
    double gemm_s = micro * (worst->compute_s - wg.compute_s) / (1 - 1 / probe);
    /* Attention likewise (at twice its rate): drawn at the cap (SDPA forward alone: 716 W at
     * 1770 MHz, bench/results/duty_2026-11-27/kinds; the Llama layer forward there: GEMMs 1%
     * over their back-to-back rate with attention and norms a quarter of the time), so it
     * leaves no headroom. Its own rate is left as priced, though it gains up to x1.10 where
     * there is headroom (same file): a conservative omission. */
    system_spec fa = *sys;
    fa.attention_rate_scale = 2;
    stage_time wa = estimate_worst_stage(m, &fa, t, l, NULL, NULL);
    double attention_s = fmax(0, micro * 2 * (worst->compute_s - wa.compute_s));
    const time_breakdown *tm = &out->time;
    double memory_s = fmax(0, tm->compute_s - gemm_s - attention_s) + tm->optimizer_s;
    /* Exposed communication: NCCL kernels alone at gpu.comm_power_w, but the FSDP contention
     * charged to it (compute slowed beside the hidden collectives, recipe_price.c) runs at the
     * cap (gemm_headroom.h). tm->dp_s holds the FSDP time in proportion to worst->fsdp_s
     * (estimate.c: dp_s = rounds x fsdp_s under FSDP). */
    double at_cap_s = 0;
    if (worst->fsdp_s > 0 && worst->fsdp_contention_s > 0)
        at_cap_s = fmin(tm->dp_s, tm->dp_s * worst->fsdp_contention_s / worst->fsdp_s);
    double comm_s = fmax(0, tm->comm_exposed_s - at_cap_s);
    if (!sys->gemm_headroom_on) /* the bubble's wait alone (gemm_headroom.h) */
        memory_s = comm_s = at_cap_s = 0;
    /* The bubble is not an idle GPU: a pipelined rank waits in NCCL kernels (the receive posted
     * ahead of the compute that needs it, the end-of-step all-reduce waiting for the slowest
     * stage), which spin at gpu.comm_power_w (idle power where the system has none). Measured in
     * the H100 PP 4 step's traces (bench/results/pp21_2026-11-29/pp_wait_power.txt): NCCL kernels
     * run through 98% of rank 0's wait and 93% of rank 3's, and rank 3's GEMMs ran x1.072 of
     * the sustained rate: x1.081 with the wait at comm_power_w, x1.123 at idle_power_w. */
    comm_s += tm->bubble_s;
    double idle_s = 0; /* no pipeline, no bubble: nothing else idles the GPU in this model */
    if (mix) *mix = (gemm_headroom_mix){gemm_s, attention_s, memory_s, idle_s, comm_s, at_cap_s};
    double rate = gemm_headroom_rate_comm(sys, gemm_s, memory_s, idle_s, comm_s);
    if (rate <= 1) return;
    system_spec boosted = *sys;
    boosted.gemm_headroom_rate = rate;
    stage_time wb = estimate_worst_stage(m, &boosted, t, l, NULL, NULL);
    estimate_time_assemble(m, &boosted, t, l, &wb, out);
    out->time.gemm_headroom_rate = rate;
}
