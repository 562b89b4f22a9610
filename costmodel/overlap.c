/*
 * overlap.c — exposed time of Megatron-Core's overlapped TP and DP communication (see
 * overlap.h).
 *
 * Sources:
 *  - Transformer Engine transformer_engine/pytorch/module/base.py initialize_ub: the methods per
 *    GEMM (ring_exchange: qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; pipeline: proj_fprop,
 *    fc2_fprop; bulk: qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad) and their defaults (num_sm 16
 *    and num_splits 4 for pipeline/bulk, 1 SM and tp splits with copy engines for
 *    ring_exchange). Megatron-LM megatron/training/initialize.py _initialize_tp_communicators
 *    calls it with those defaults unless --tp-comm-overlap-cfg is given. Tuned configs give the
 *    SM-based methods fewer or more SMs per GEMM (Megatron Bridge
 *    src/megatron/bridge/training/comm_overlap.py, e.g. 70B TP4 on H100: bulk 2-24, pipeline
 *    16-24), which the model does not follow: it prices what --tp-comm-overlap alone runs.
 *  - Megatron-LM megatron/core/distributed/distributed_data_parallel.py (bucket_size default
 *    max(40000000, 1000000 * dp_group.size()); None, one bucket, without overlap_grad_reduce),
 *    distributed_data_parallel_config.py, param_and_grad_buffer.py (a bucket's collective is
 *    launched when its last gradient is ready; the parameter all-gather of a bucket is waited
 *    on before the forward of its first layer).
 */
#include "overlap.h"

#include <math.h>

int overlap_sm_count(const system_spec *sys)
{
    return sys->sm_count > OVERLAP_TP_COMM_SMS ? sys->sm_count : 132;
}

double overlap_tp_sm_slowdown(const system_spec *sys)
{
    double sms = overlap_sm_count(sys);
    return sms / (sms - OVERLAP_TP_COMM_SMS);
}

double overlap_tp_ring_exchange_s(double gemm_s, double chunked_s, double comm_s, int splits)
{
    if (splits < 2) return chunked_s - gemm_s + comm_s;
    double g = chunked_s / splits, c = comm_s / (splits - 1);
    return g + (splits - 1) * fmax(g, c) - gemm_s;
}

double overlap_tp_pipeline_s(double gemm_s, double chunked_s, double comm_s, int splits)
{
    if (splits < 1) splits = 1;
    double g = chunked_s / splits, c = comm_s / splits;
    return g + (splits - 1) * fmax(g, c) + c - gemm_s;
}

double overlap_tp_bulk_s(double gemm_s, double slowdown, double comm_s)
{
    /* contention with the collective's own pace kept (its SMs are its own) */
    double gemm_eff, comm_eff;
    overlap_contended(gemm_s, comm_s, slowdown, 1.0, &gemm_eff, &comm_eff);
    return fmax(gemm_eff, comm_eff) - gemm_s;
}

double overlap_tp_userbuffer_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    if (!l->tp_comm_overlap || l->tp < 2) return 0;
    double rows = (double)t->seq_len * l->mbs / l->cp;
    return OVERLAP_TP_USERBUFFERS * rows * m->hidden * 2.0;
}

double overlap_dp_bucket_params(const layout *l)
{
    return fmax(40e6, 1e6 * l->dp); /* dp_group: without context parallel */
}

int overlap_dp_buckets(const layout *l, double params)
{
    if (!l->overlap_grad_reduce || params <= 0) return 1;
    double n = ceil(params / overlap_dp_bucket_params(l));
    return n < 1 ? 1 : (int)n;
}

double overlap_dp_exposed_s(double bucket_s, int buckets, double window_s)
{
    if (buckets < 1) buckets = 1;
    return fmax(bucket_s, buckets * bucket_s - window_s * (buckets - 1) / buckets);
}

void overlap_contended(double comp_s, double comm_s, double sg, double sc, double *comp_eff_s,
                       double *comm_eff_s)
{
    if (sg < 1) sg = 1;
    if (sc < 1) sc = 1;
    if (comm_s <= 0 || comp_s <= 0) {
        *comp_eff_s = comp_s;
        *comm_eff_s = comm_s;
        return;
    }
    if (comm_s * sc <= comp_s * sg) {
        *comm_eff_s = comm_s * sc;
        *comp_eff_s = comp_s + comm_s * sc * (1.0 - 1.0 / sg);
    } else {
        *comp_eff_s = comp_s * sg;
        *comm_eff_s = comm_s + comp_s * sg * (1.0 - 1.0 / sc);
    }
}
