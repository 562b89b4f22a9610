/* burst_sustain.c — burst-measured rates derated to the power cap; see burst_sustain.h. */
#include "burst_sustain.h"

#include <math.h>

double burst_sustain_fraction(const system_spec *sys)
{
    if (!(sys->sustained_ref_ratio > 0) || !(sys->sustained_ref_power_w > 0) ||
        !(sys->sustained_ref_clock_mhz > 0) || !(sys->max_sm_clock_mhz > 0) || !(sys->tdp_w > 0))
        return 1;
    double k = sys->sustained_ref_ratio * cbrt(sys->tdp_w / sys->sustained_ref_power_w) *
               sys->sustained_ref_clock_mhz / sys->max_sm_clock_mhz;
    return k < 1 ? k : 1;
}

void burst_sustain_apply(system_spec *sys)
{
    double k = burst_sustain_fraction(sys);
    sys->sustained_over_burst = k;
    if (k >= 1) return;
    sys->gemm_efficiency_max *= k;
    sys->attention_efficiency *= k;
    burst_sustain_derate_table(&sys->attention_rates, k);
}

void burst_sustain_derate_table(attn_table *t, double k)
{
    if (!(k > 0) || k >= 1) return;
    for (int i = 0; i < t->n; i++) {
        t->p[i].fwd_flops_per_s *= (float)k;
        t->p[i].bwd_flops_per_s *= (float)k;
    }
}
