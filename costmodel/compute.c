/* compute.c — kernel-time models; see compute.h for the sources. */
#include "compute.h"

#include "attention_rate.h"
#include "flops.h"

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

void compute_sdpa_dropout_add_s(const system_spec *sys, double causal_scores, double masked_scores,
                                double *fwd_s, double *bwd_s)
{
    *fwd_s += causal_scores * sys->sdpa_dropout_fwd_s_per_score +
              masked_scores * sys->sdpa_masked_dropout_fwd_s_per_score;
    *bwd_s += causal_scores * sys->sdpa_dropout_bwd_s_per_score +
              masked_scores * sys->sdpa_masked_dropout_bwd_s_per_score;
}

double compute_stream_s(const system_spec *sys, double bytes)
{
    return bytes / (sys->hbm_bandwidth_bytes_per_s * sys->hbm_efficiency);
}

double compute_fill_s(const system_spec *sys, double bytes)
{
    if (sys->fill_efficiency <= 0) return compute_stream_s(sys, bytes);
    return bytes / (sys->hbm_bandwidth_bytes_per_s * sys->fill_efficiency);
}

/* The attention core of the mean layer of a model whose sliding-window layers run the fused
 * kernel's own window (Transformer Engine's window_size, cuDNN): its full layers at the causal
 * rate (fw, bw) over their FLOPs, its sliding layers at the measured "sliding" rate over the
 * window's FLOPs, where the system has one for the model's window (ATTN_SLIDING_KEYS). At a
 * window of 128 keys the kernel's per-tile work, not the window's FLOPs, sets its time:
 * NVIDIA/cudnn-frontend fb682ce benchmark/sdpa_benchmark_training/results/gpt_oss/gb200 (cuDNN
 * 9.22, head dim 64, 256 (batch, head) rows, seq 4096) 0.210 ms forward, 0.465 ms backward,
 * 161 / 182 TFLOP/s of the window's FLOPs against 1342 / 1094 causal at head dim 128; before
 * (moe13) plan priced those FLOPs at the causal rate, ~7x too fast. Leaves *fwd_s and *bwd_s
 * as they are otherwise. */
void compute_sliding_attention_s(const model_spec *m, const system_spec *sys,
                                 const training_spec *t, double tokens, double head_dim,
                                double rows, double seq_q, double fw, double bw, double *fwd_s,
                                double *bwd_s)
{
    int n_slide = model_sliding_layers(m);
    if (n_slide <= 0 || m->sliding_window != ATTN_SLIDING_KEYS ||
        m->sliding_window >= t->seq_len || sys->attention_rates.n == 0)
        return;
    double sfw, sbw;
    if (!attn_table_rates(&sys->attention_rates, ATTN_MASK_SLIDING, head_dim, rows, seq_q, &sfw,
                          &sbw))
        return;
    int slide = -1, full = -1;
    for (int i = 0; i < m->layers && (slide < 0 || full < 0); i++)
        *(model_layer_is_sliding(m, i) ? &slide : &full) = i;
    double f_s = flops_attention_core_forward_layer(m, slide, tokens, t->seq_len, true);
    double f_f = full >= 0 ? flops_attention_core_forward_layer(m, full, tokens, t->seq_len, true)
                           : 0;
    double scale = compute_attention_rate_scale(sys), n = m->layers, ns = n_slide;
    *fwd_s = ((n - ns) * f_f / fw + ns * f_s / sfw) / (n * scale);
    *bwd_s = 2.5 * ((n - ns) * f_f / bw + ns * f_s / sbw) / (n * scale);
}
