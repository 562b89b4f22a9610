/*
 * softmax_rows.c — the row softmax kernels' re-reads of rows L2 cannot hold, and their
 * measured rate (softmax_rows.h says why and cites the kernels).
 */
#include "softmax_rows.h"

#include <stdbool.h>

/* resident threads an SM (CUDA C Programming Guide, "Technical Specifications per Compute
 * Capability": 2048 for compute capability 8.0, 9.0 and 10.0) */
#define THREADS_PER_SM 2048.0

/* SoftMax.cu's block sizes: forward SoftMaxForward_getBlockSize (min(v, 1024) rounded up to a
 * warp), backward SoftMax_getBlockSize(ILP 4, v) (min(v / 4, 1024) / 2 rounded up to a power of
 * two, at least a warp) */
static double block_threads(bool fwd, double v)
{
    if (fwd) return v >= 1024 ? 1024 : 32 * (double)(long)((v + 31) / 32);
    double max = (v / 4 < 1024 ? v / 4 : 1024) / 2, b = 1;
    while (b < max) b *= 2;
    return b < 32 ? 32 : b;
}

double softmax_rows_reread_bytes(const system_spec *sys, const elementwise_kernel *k)
{
    const ew_access *a = &k->access;
    bool fwd = a->pattern == EW_SOFTMAX_FWD;
    if ((!fwd && a->pattern != EW_SOFTMAX_BWD) || a->esize[1] != 4) return 0;
    if (sys->l2_bytes <= 0 || sys->sm_count <= 0) return 0;
    double rows = (double)a->n[1], v = (double)a->n[2];
    double resident = (double)(long)(THREADS_PER_SM / block_threads(fwd, v)) * sys->sm_count;
    if (resident > rows) resident = rows;
    /* the row a block re-reads (forward the input, backward gradOutput), resident at once */
    if (resident * v * a->esize[1] <= sys->l2_bytes) return 0;
    return (fwd ? 2.0 : 1.0) * a->esize[1] * rows * v;
}

double softmax_rows_kernel_s(const system_spec *sys, const elementwise_list *e,
                             const elementwise_kernel *k)
{
    double extra = softmax_rows_reread_bytes(sys, k);
    if (extra <= 0 || sys->softmax_rows_efficiency <= 0) return -1.0;
    /* measured in one-GPU steps and not scaled beside NCCL: in the profiled 4-GPU FSDP2 step of
     * Llama-3.1-8B the two kernels ran 2.016 / 2.143 ms (a second profile 1.998 / 2.136), alone
     * on one H200 2.019 / 2.127 (bench/results/fsdp2_kernels_8b_h200x4.tsv,
     * patterns_fsdp2_kernels_8b_h200x4.tsv, eager_kernels_2layers_h200.tsv; bench/ew_classes.py):
     * nothing runs beside the loss (its gathers are done, the root's reduce-scatter waits for
     * the head's backward) */
    (void)e;
    return (k->bytes + extra) / (sys->hbm_bandwidth_bytes_per_s * sys->softmax_rows_efficiency) +
           sys->eager_kernel_gap_s;
}
