/* compute.c — kernel-time models; see compute.h for the sources. */
#include "compute.h"

double compute_gemm_s(const system_spec *sys, double m, double n, double k)
{
    if (m <= 0 || n <= 0 || k <= 0) return 0;
    double flops = 2.0 * m * n * k;
    double bytes = 2.0 * (m * k + k * n + m * n); /* bf16 operands and result */
    /* A power cap below the TDP lowers the sustained clock (system_gemm_power_scale). */
    double t_math = flops / (sys->peak_bf16_flops_per_s * sys->gemm_efficiency_max *
                             system_gemm_power_scale(sys));
    double t_mem = bytes / (sys->hbm_bandwidth_bytes_per_s * sys->hbm_efficiency);
    return (t_math > t_mem ? t_math : t_mem) + sys->gemm_overhead_s;
}

double compute_gemm_lp_s(const system_spec *sys, double peak_flops, double efficiency_ratio,
                         double operand_bytes, double m, double n, double k)
{
    if (m <= 0 || n <= 0 || k <= 0 || peak_flops <= 0) return 0;
    double flops = 2.0 * m * n * k;
    double bytes = operand_bytes * (m * k + k * n) + 2.0 * m * n;
    double t_math = flops / (peak_flops * sys->gemm_efficiency_max * efficiency_ratio *
                             system_gemm_power_scale(sys));
    double t_mem = bytes / (sys->hbm_bandwidth_bytes_per_s * sys->hbm_efficiency);
    return (t_math > t_mem ? t_math : t_mem) + sys->gemm_overhead_s;
}

double compute_gemm_math_s(const system_spec *sys, double peak_flops, double efficiency_ratio,
                           double m, double n, double k)
{
    if (m <= 0 || n <= 0 || k <= 0 || peak_flops <= 0) return 0;
    return 2.0 * m * n * k /
           (peak_flops * sys->gemm_efficiency_max * efficiency_ratio * system_gemm_power_scale(sys));
}

double compute_gemm_fwd_bwd_s(const system_spec *sys, double m, double n, double k)
{
    return compute_gemm_s(sys, m, n, k) + compute_gemm_s(sys, m, k, n) +
           compute_gemm_s(sys, k, n, m);
}

double compute_grouped_gemm_s(const system_spec *sys, int groups, double m, double n, double k)
{
    double one = compute_gemm_s(sys, m, n, k);
    if (groups < 1 || one <= 0) return 0;
    return groups * (one - sys->gemm_overhead_s) + sys->gemm_overhead_s;
}

double compute_grouped_gemm_fwd_bwd_s(const system_spec *sys, int groups, double m, double n,
                                      double k)
{
    return compute_grouped_gemm_s(sys, groups, m, n, k) +
           compute_grouped_gemm_s(sys, groups, m, k, n) +
           compute_grouped_gemm_s(sys, groups, k, n, m);
}

double compute_attention_rate_scale(const system_spec *sys)
{
    /* attention kernels run at the power cap too (SDPA alone on an H100 at 700 W: 716 W, SW
     * power cap in every sample, 1770 of 1980 MHz; bench/results/duty_2026-11-27/kinds), so a
     * lower cap slows them as it slows GEMMs (system_power_cap_scale) */
    double k = sys->attention_rate_scale > 0 ? sys->attention_rate_scale : 1;
    return k * system_power_cap_scale(sys);
}

double compute_flash_forward_s(const system_spec *sys, double flops)
{
    return flops / (sys->peak_bf16_flops_per_s * sys->attention_efficiency *
                    compute_attention_rate_scale(sys));
}

double compute_flash_backward_s(const system_spec *sys, double flops)
{
    return 2.5 * flops / (sys->peak_bf16_flops_per_s * sys->attention_efficiency *
                          compute_attention_rate_scale(sys));
}

double compute_stream_s(const system_spec *sys, double bytes)
{
    return bytes / (sys->hbm_bandwidth_bytes_per_s * sys->hbm_efficiency);
}
