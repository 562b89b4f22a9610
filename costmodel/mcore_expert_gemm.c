/* mcore_expert_gemm.c — Megatron-Core's expert GEMMs under Transformer Engine; see
 * mcore_expert_gemm.h for the sources and the measurement. */
#include "mcore_expert_gemm.h"

/* The preset's GEMM rate is the sustained rate of this square product (data/systems/h100.json
 * gpu.gemm_efficiency_max: 8192^3 torch.mm), output traffic included. */
#define REFERENCE_K 8192.0

bool mcore_expert_gemm_applies(const layout *l)
{
    return l->framework == FRAMEWORK_MEGATRON && layout_impl_of(l) == IMPL_TE;
}

double mcore_wgrad_out_bytes(const training_spec *t)
{
    return t->grad_reduce_bf16 ? 4 : 8;
}

double mcore_expert_gemm_s(const system_spec *sys, double gemm_s, double m, double n, double k,
                           double out_bytes)
{
    double hbm = sys->hbm_bandwidth_bytes_per_s * sys->hbm_efficiency;
    double core = gemm_s - sys->gemm_overhead_s;
    if (m <= 0 || n <= 0 || k <= 0 || core <= 0 || hbm <= 0) return gemm_s;
    /* the reference product's output share of its time at this GEMM's rate: 2 bytes x K^2 of
     * output over 2 K^3 flops, i.e. rate / (K x HBM rate) */
    double rate = 2.0 * m * n * k / core;
    double ref_share = rate / (REFERENCE_K * hbm);
    if (ref_share > 0.5) ref_share = 0.5; /* a memory-bound roofline: no such share to remove */
    return sys->gemm_overhead_s + core * (1 - ref_share) + m * n * out_bytes / hbm;
}
