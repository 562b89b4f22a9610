/* mcore_expert_gemm.c — Megatron-Core's expert GEMMs under Transformer Engine; see
 * mcore_expert_gemm.h for the sources and the measurement. */
#include "mcore_expert_gemm.h"

#include "precision.h"

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

double mcore_expert_gemm_s(const system_spec *sys, double math_s, double in_bytes, double m,
                           double n, double k, double out_bytes)
{
    double hbm = sys->hbm_bandwidth_bytes_per_s * sys->hbm_efficiency;
    if (m <= 0 || n <= 0 || k <= 0 || math_s <= 0 || hbm <= 0) return 0;
    /* the reference product's output share of its time at this GEMM's rate: 2 bytes x K^2 of
     * output over 2 K^3 flops, i.e. rate / (K x HBM rate) */
    double rate = 2.0 * m * n * k / math_s;
    double ref_share = rate / (REFERENCE_K * hbm);
    if (ref_share > 0.5) ref_share = 0.5;
    /* the main loop: the math, or reading the operands where that is longer; then the output */
    double main_loop = math_s * (1 - ref_share), reads = in_bytes / hbm;
    return sys->gemm_overhead_s + (main_loop > reads ? main_loop : reads) +
           m * n * out_bytes / hbm;
}

int mcore_expert_quantize_kernels(const layout *l)
{
    if (!mcore_expert_gemm_applies(l)) return 0;
    switch (l->precision) {
    case PRECISION_MXFP8: return 1;
    case PRECISION_FP8:
        switch (precision_fp8_recipe(l)) {
        case FP8_RECIPE_TENSORWISE: return 3; /* amax, scale, cast */
        case FP8_RECIPE_BLOCKWISE: return 1;
        default: return 0; /* delayed scaling: nvte_multi_cast_transpose over all experts */
        }
    default: return 0; /* bf16; NVFP4's fused split quantize */
    }
}

double mcore_expert_quantize_split_s(const system_spec *sys, const layout *l, int local,
                                     int tensors, double bytes)
{
    int k = mcore_expert_quantize_kernels(l);
    if (local < 2 || k == 0 || tensors <= 0 || !(sys->expert_split_bytes_per_s > 0)) return 0;
    return (local - 1) * (k * tensors * sys->expert_split_launch_s +
                          bytes / local / sys->expert_split_bytes_per_s);
}
