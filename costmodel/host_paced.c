/*
 * host_paced.c — the host-paced share of a priced step (host_paced.h): the step against the same
 * layout's on a host that issues in no time, and the slowest stage's passes against theirs.
 */
#include "host_paced.h"

#include <math.h>
#include <string.h>

#include "estimate_internal.h"

system_spec host_paced_host_scaled(const system_spec *sys, double k)
{
    system_spec s = *sys;
    /* the host's times; the ratios (DTensor over plain, FSDP2's multi-rank scale) and the
     * chunk_cat knee (a block count) are not times: they scale with the times they multiply */
    double *times[] = {
        &s.host_eager_launch_s, &s.host_dtensor_fwd_s, &s.host_dtensor_bwd_s,
        &s.host_dtensor_fwd_rank_s, &s.host_dtensor_bwd_rank_s, &s.host_dtensor_optim_tensor_s,
        &s.host_compiled_dtensor_fwd_layer_s, &s.host_compiled_dtensor_fwd_layer_rank_s,
        &s.host_compiled_dtensor_bwd_layer_s, &s.host_compiled_dtensor_bwd_layer_rank_s,
        &s.host_cp_ring_fwd_call_s, &s.host_cp_ring_fwd_step_s, &s.host_cp_ring_bwd_call_s,
        &s.host_cp_ring_bwd_step_s, &s.host_chunk_cat_block_s, &s.host_chunk_cat_block_large_s,
        &s.host_clip_tensor_s, &s.host_adamw_foreach_tensor_s, &s.host_multi_tensor_launch_s,
        &s.host_eager_inner_launch_s, &s.host_gemm_new_shape_s,
        &s.host_cuda_graph_replay_s, &s.host_mcore_moe_fwd_s, &s.host_mcore_moe_fwd_ep_s,
        &s.host_mcore_moe_post_sync_s, &s.host_mcore_moe_post_sync_ep_s, &s.host_mcore_moe_bwd_s,
        &s.host_mcore_moe_bwd_ep_s, &s.host_mcore_attn_fwd_s, &s.host_mcore_attn_bwd_s,
        &s.host_mcore_qk_norm_fwd_s, &s.host_mcore_qk_norm_bwd_s, &s.host_te_gemm_s,
        &s.host_eager_op_fwd_s, &s.host_eager_op_bwd_s, &s.host_sac_fwd_launch_s,
        &s.host_sac_replay_launch_s, &s.host_ckpt_fwd_saved_tensor_s,
        &s.host_ckpt_bwd_saved_tensor_s, &s.host_ckpt_dtensor_detach_s};
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) *times[i] *= k;
    return s;
}

void host_paced_of(const model_spec *m, const system_spec *sys, const estimate *e,
                   host_paced *out)
{
    memset(out, 0, sizeof *out);
    if (!estimate_time_priced(e) || !(e->time.step_s > 0)) return;
    const training_spec *t = &e->training;
    const layout *l = &e->layout;
    system_spec s0 = host_paced_host_scaled(sys, 0);
    estimate e0;
    if (estimate_layout(m, &s0, t, l, &e0, NULL, 0) != CM_OK) return;
    out->priced = true;
    out->step_s = e->time.step_s;
    out->host_paced_s = fmax(0, e->time.step_s - e0.time.step_s);
    out->host_paced_optimizer_s = fmax(0, e->time.optimizer_s - e0.time.optimizer_s);
    /* the passes of the stage the closed form times (estimate_worst_stage), and the same stage
     * on the instant host */
    stage_time w = estimate_worst_stage(m, sys, t, l, NULL, NULL);
    layer_kinds k0;
    estimate_layer_times(m, &s0, t, l, &k0);
    stage_time w0 = estimate_stage_cost(m, &s0, t, l, w.stage, &k0, NULL);
    double micro = e->microbatches;
    out->fwd_pass_s = micro * w.fwd_s;
    out->bwd_pass_s = micro * w.bwd_s;
    out->host_paced_fwd_s = micro * fmax(0, w.fwd_s - w0.fwd_s);
    out->host_paced_bwd_s = micro * fmax(0, w.bwd_s - w0.bwd_s);
    /* The issue queue (host_dispatch.c) walks a GPU-bound pass to the GPU's own end, summing
     * the same op times in another order: its floor can sit a rounding above the GPU sum
     * (5e-18 s a layer seen, Llama-3.2-1B FSDP2 at seq 4096). Below a billionth of the step
     * that is no host time. */
    double tiny = 1e-9 * e->time.step_s;
    double *parts[] = {&out->host_paced_s, &out->host_paced_fwd_s, &out->host_paced_bwd_s,
                       &out->host_paced_optimizer_s};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (*parts[i] < tiny) *parts[i] = 0;
    out->gpu_only_step_s = e->time.step_s - out->host_paced_s;
    out->fraction = out->host_paced_s / e->time.step_s;
    /* the same layout on a host HOST_PACED_SLOW_FACTOR times slower at every host term */
    system_spec sk = host_paced_host_scaled(sys, HOST_PACED_SLOW_FACTOR);
    estimate ek;
    out->slow_host_step_s = e->time.step_s;
    if (estimate_layout(m, &sk, t, l, &ek, NULL, 0) == CM_OK)
        out->slow_host_step_s = fmax(e->time.step_s, ek.time.step_s);
}

bool host_paced_shown(const host_paced *h)
{
    return h->priced && h->slow_host_step_s - h->step_s >= HOST_PACED_SHOWN_SLOWDOWN * h->step_s;
}
