/*
 * system.c — reads GPU/cluster presets (data/systems/README.md), the step terms' names, defaults
 * and ranges, and the calibration's table of collective fits.
 *
 * One table maps each JSON field ("gpu.peak_bf16_flops") to its struct member, so the preset
 * reader and the overlay reader of costmodel/profile.c share one list. A preset must give every
 * required field; an overlay may give any subset.
 */
#include "system.h"
#include "burst_sustain.h"
#include "input_file.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *section;
    const char *key;
    size_t offset;
    bool is_int;
    bool is_bool;  /* a bool member: JSON true/false or 0/1 */
    bool required;
    double min, max; /* sane range; outside it the file is rejected */
} system_field;

#define F(sec, key, member, req, lo, hi)                                                         \
    {sec, key, offsetof(system_spec, member), false, false, req, lo, hi}
#define I(sec, key, member, req, lo, hi)                                                         \
    {sec, key, offsetof(system_spec, member), true, false, req, lo, hi}
#define B(sec, key, member) {sec, key, offsetof(system_spec, member), true, true, false, 0, 1}

static const system_field fields[] = {
    F("gpu", "peak_bf16_flops", peak_bf16_flops_per_s, true, 1e12, 1e17),
    F("gpu", "peak_fp8_flops", peak_fp8_flops_per_s, false, 0, 1e17),
    F("gpu", "peak_fp4_flops", peak_fp4_flops_per_s, false, 0, 1e17),
    F("gpu", "hbm_bytes", hbm_bytes, true, 1e9, 1e13),
    F("gpu", "hbm_bandwidth_bytes_per_s", hbm_bandwidth_bytes_per_s, true, 1e10, 1e14),
    F("gpu", "gemm_efficiency_max", gemm_efficiency_max, true, 0.05, 1.0),
    F("gpu", "gemm_overhead_s", gemm_overhead_s, true, 0, 1e-3),
    F("gpu", "hbm_efficiency", hbm_efficiency, true, 0.05, 1.0),
    F("gpu", "multi_tensor_efficiency", multi_tensor_efficiency, false, 0, 1.0),
    F("gpu", "fill_efficiency", fill_efficiency, false, 0, 1.0),
    F("gpu", "attention_efficiency", attention_efficiency, true, 0.05, 1.0),
    F("gpu", "eager_elementwise_efficiency", eager_elementwise_efficiency, true, 0.02, 1.0),
    F("gpu", "eager_kernel_gap_s", eager_kernel_gap_s, false, 0, 1e-4),
    F("gpu", "eager_elementwise_efficiency_alone", eager_elementwise_efficiency_alone, false,
      0, 1.0),
    F("gpu", "loss_parallel_efficiency", loss_parallel_efficiency, false, 0, 1.0),
    F("gpu", "strided_cat_efficiency", strided_cat_efficiency, false, 0, 1.0),
    F("gpu", "tp_chunk_gemm_efficiency", tp_chunk_gemm_efficiency, false, 0, 1.0),
    F("gpu", "inductor_elementwise_efficiency", inductor_elementwise_efficiency, false, 0, 1.0),
    F("gpu", "expert_split_launch_s", expert_split_launch_s, false, 0, 1e-3),
    F("gpu", "expert_split_bytes_per_s", expert_split_bytes_per_s, false, 0, 1e15),
    F("gpu", "mla_rope_unfused_efficiency", mla_rope_unfused_efficiency, false, 0, 1.0),
    F("gpu", "score_vectorized_efficiency", score_vectorized_efficiency, false, 0, 1.0),
    F("gpu", "score_offsets_efficiency", score_offsets_efficiency, false, 0, 1.0),
    F("gpu", "score_cat_array_efficiency", score_cat_array_efficiency, false, 0, 1.0),
    F("gpu", "score_reduce_row_efficiency", score_reduce_row_efficiency, false, 0, 1.0),
    F("gpu", "score_softmax_unaligned_fwd_efficiency", score_softmax_unaligned_fwd_efficiency,
      false, 0, 1.0),
    F("gpu", "score_softmax_unaligned_bwd_efficiency", score_softmax_unaligned_bwd_efficiency,
      false, 0, 1.0),
    F("gpu", "score_softmax_fp32_fwd_efficiency", score_softmax_fp32_fwd_efficiency, false, 0,
      1.0),
    F("gpu", "score_softmax_fp32_bwd_efficiency", score_softmax_fp32_bwd_efficiency, false, 0,
      1.0),
    F("gpu", "score_unrolled_efficiency", score_unrolled_efficiency, false, 0, 1.0),
    F("gpu", "softmax_rows_efficiency", softmax_rows_efficiency, false, 0, 1.0),
    F("gpu", "l2_bytes", l2_bytes, false, 0, 1e10),
    F("gpu", "index_accum_step_s", index_accum_step_s, false, 0, 1e-3),
    F("gpu", "index_accum_bytes_per_s", index_accum_bytes_per_s, false, 0, 1e14),
    F("gpu", "gemm_align1_nn_flops", gemm_align1_nn_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_align1_tn_flops", gemm_align1_tn_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_odd_out_fwd_flops", gemm_odd_out_fwd_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_odd_out_dgrad_flops", gemm_odd_out_dgrad_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_odd_out_wgrad_flops", gemm_odd_out_wgrad_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_out_2mod4_fwd_flops", gemm_out_2mod4_fwd_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_out_2mod4_dgrad_flops", gemm_out_2mod4_dgrad_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_out_2mod4_wgrad_flops", gemm_out_2mod4_wgrad_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_out_4mod8_fwd_flops", gemm_out_4mod8_fwd_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_out_4mod8_dgrad_flops", gemm_out_4mod8_dgrad_flops_per_s, false, 0, 1e17),
    F("gpu", "gemm_out_4mod8_wgrad_flops", gemm_out_4mod8_wgrad_flops_per_s, false, 0, 1e17),
    F("gpu", "sdpa_dropout_fwd_s_per_score", sdpa_dropout_fwd_s_per_score, false, 0, 1e-9),
    F("gpu", "sdpa_dropout_bwd_s_per_score", sdpa_dropout_bwd_s_per_score, false, 0, 1e-9),
    F("gpu", "sdpa_math_fwd_s_per_score", sdpa_math_fwd_s_per_score, false, 0, 1e-9),
    F("gpu", "sdpa_math_bwd_s_per_score", sdpa_math_bwd_s_per_score, false, 0, 1e-9),
    F("gpu", "sdpa_masked_dropout_fwd_s_per_score", sdpa_masked_dropout_fwd_s_per_score, false, 0,
      1e-9),
    F("gpu", "sdpa_masked_dropout_bwd_s_per_score", sdpa_masked_dropout_bwd_s_per_score, false, 0,
      1e-9),
    F("gpu", "torchao_cast_efficiency_rowwise", torchao_cast_efficiency_rowwise, false, 0, 1.0),
    F("gpu", "torchao_cast_efficiency_tensorwise", torchao_cast_efficiency_tensorwise, false, 0,
      1.0),
    F("gpu", "fp8_rowwise_over_tensorwise_gemm", fp8_rowwise_over_tensorwise_gemm, false, 0, 2.0),
    F("gpu", "tdp_w", tdp_w, false, 0, 1e4),
    F("gpu", "power_limit_w", power_limit_w, false, 0, 1e4),
    F("gpu", "idle_power_w", idle_power_w, false, 0, 1e4),
    F("gpu", "memory_bound_power_w", memory_bound_power_w, false, 0, 1e4),
    F("gpu", "comm_power_w", comm_power_w, false, 0, 1e4),
    F("gpu", "gemm_power_exponent", gemm_power_exponent, false, 0, 1),
    F("gpu", "gemm_burst_ratio", gemm_burst_ratio, false, 0, 2),
    I("gpu", "sm_count", sm_count, false, 1, 1000),
    F("gpu", "sustained_ref_ratio", sustained_ref_ratio, false, 0, 1),
    F("gpu", "sustained_ref_power_w", sustained_ref_power_w, false, 0, 1e4),
    F("gpu", "sustained_ref_clock_mhz", sustained_ref_clock_mhz, false, 0, 1e4),
    F("gpu", "max_sm_clock_mhz", max_sm_clock_mhz, false, 0, 1e4),
    F("gpu", "scale_swizzle_kernel_s", scale_swizzle_kernel_s, false, 0, 1e-3),
    F("gpu", "scale_swizzle_bytes_per_s", scale_swizzle_bytes_per_s, false, 0, 1e14),
    I("node", "gpus_per_node", gpus_per_node, true, 1, 1024),
    F("node", "intra_bandwidth_bytes_per_s", intra_bandwidth_bytes_per_s, true, 1e9, 1e14),
    F("node", "intra_latency_s", intra_latency_s, true, 0, 1e-2),
    F("node", "intra_busbw_efficiency", intra_busbw_efficiency, true, 0.05, 1.0),
    F("node", "call_latency_s", call_latency_s, false, 0, 1e-2),
    I("node", "scaleup_domain_gpus", scaleup_domain_gpus, false, 0, 65536),
    F("node", "nvls_busbw_bytes_per_s", nvls_busbw_bytes_per_s, false, 0, 1e14),
    B("node", "nvls", nvls_enabled),
    I("network", "nics_per_node", nics_per_node, true, 0, 1024),
    F("network", "nic_bandwidth_bytes_per_s", nic_bandwidth_bytes_per_s, true, 0, 1e14),
    F("network", "latency_s", inter_latency_s, true, 0, 1e-1),
    F("network", "busbw_efficiency", inter_busbw_efficiency, true, 0, 1.0),
    F("host", "pcie_bandwidth_bytes_per_s", pcie_bandwidth_bytes_per_s, true, 1e9, 1e13),
    F("host", "memory_bytes", host_memory_bytes, true, 1e9, 1e15),
    F("host", "adam_params_per_s", host_adam_params_per_s, true, 1e6, 1e13),
    F("host", "eager_launch_s", host_eager_launch_s, false, 0, 1e-2),
    F("host", "eager_dtensor_fwd_ratio", host_dtensor_fwd_ratio, false, 0, 100),
    F("host", "eager_dtensor_bwd_ratio", host_dtensor_bwd_ratio, false, 0, 100),
    F("host", "eager_dtensor_fwd_s", host_dtensor_fwd_s, false, 0, 1e-2),
    F("host", "eager_dtensor_bwd_s", host_dtensor_bwd_s, false, 0, 1e-2),
    F("host", "eager_dtensor_fwd_rank_s", host_dtensor_fwd_rank_s, false, 0, 1e-3),
    F("host", "eager_dtensor_bwd_rank_s", host_dtensor_bwd_rank_s, false, 0, 1e-3),
    F("host", "eager_dtensor_optim_tensor_s", host_dtensor_optim_tensor_s, false, 0, 1e-3),
    F("host", "eager_fsdp_tp_fwd_scale", host_fsdp_tp_fwd_scale, false, 0, 10),
    F("host", "compiled_dtensor_fwd_layer_s", host_compiled_dtensor_fwd_layer_s, false, 0, 1.0),
    F("host", "compiled_dtensor_fwd_layer_rank_s", host_compiled_dtensor_fwd_layer_rank_s, false, 0, 1.0),
    F("host", "compiled_dtensor_bwd_layer_s", host_compiled_dtensor_bwd_layer_s, false, 0, 1.0),
    F("host", "compiled_dtensor_bwd_layer_rank_s", host_compiled_dtensor_bwd_layer_rank_s, false, 0, 1.0),
    F("host", "eager_fsdp_tp_bwd_scale", host_fsdp_tp_bwd_scale, false, 0, 10),
    F("host", "chunk_cat_block_s", host_chunk_cat_block_s, false, 0, 1e-6),
    F("host", "chunk_cat_block_large_s", host_chunk_cat_block_large_s, false, 0, 1e-6),
    F("host", "chunk_cat_knee_blocks", host_chunk_cat_knee_blocks, false, 0, 1e12),
    F("host", "clip_tensor_s", host_clip_tensor_s, false, 0, 1e-2),
    F("host", "adamw_foreach_tensor_s", host_adamw_foreach_tensor_s, false, 0, 1e-2),
    F("host", "multi_tensor_launch_s", host_multi_tensor_launch_s, false, 0, 1e-2),
    F("host", "eager_inner_launch_s", host_eager_inner_launch_s, false, 0, 1e-2),
    F("host", "gemm_new_shape_s", host_gemm_new_shape_s, false, 0, 1e-2),
    F("host", "cuda_graph_replay_s", host_cuda_graph_replay_s, false, 0, 1e-1),
    F("host", "cp_ring_fwd_call_s", host_cp_ring_fwd_call_s, false, 0, 1.0),
    F("host", "cp_ring_fwd_step_s", host_cp_ring_fwd_step_s, false, 0, 1.0),
    F("host", "cp_ring_bwd_call_s", host_cp_ring_bwd_call_s, false, 0, 1.0),
    F("host", "cp_ring_bwd_step_s", host_cp_ring_bwd_step_s, false, 0, 1.0),
    F("host", "mcore_moe_fwd_s", host_mcore_moe_fwd_s, false, 0, 1.0),
    F("host", "mcore_moe_fwd_ep_s", host_mcore_moe_fwd_ep_s, false, 0, 1.0),
    F("host", "mcore_moe_post_sync_s", host_mcore_moe_post_sync_s, false, 0, 1.0),
    F("host", "mcore_moe_post_sync_ep_s", host_mcore_moe_post_sync_ep_s, false, 0, 1.0),
    F("host", "mcore_moe_bwd_s", host_mcore_moe_bwd_s, false, 0, 1.0),
    F("host", "mcore_moe_bwd_ep_s", host_mcore_moe_bwd_ep_s, false, 0, 1.0),
    F("host", "mcore_attn_fwd_s", host_mcore_attn_fwd_s, false, 0, 1.0),
    F("host", "mcore_attn_bwd_s", host_mcore_attn_bwd_s, false, 0, 1.0),
    F("host", "mcore_qk_norm_fwd_s", host_mcore_qk_norm_fwd_s, false, 0, 1.0),
    F("host", "mcore_qk_norm_bwd_s", host_mcore_qk_norm_bwd_s, false, 0, 1.0),
    F("host", "te_gemm_s", host_te_gemm_s, false, 0, 1e-2),
    F("host", "eager_op_fwd_s", host_eager_op_fwd_s, false, 0, 1e-2),
    F("host", "eager_op_bwd_s", host_eager_op_bwd_s, false, 0, 1e-2),
    F("host", "sac_fwd_launch_s", host_sac_fwd_launch_s, false, 0, 1e-2),
    F("host", "sac_replay_launch_s", host_sac_replay_launch_s, false, 0, 1e-2),
    F("host", "ckpt_fwd_saved_tensor_s", host_ckpt_fwd_saved_tensor_s, false, 0, 1e-3),
    F("host", "ckpt_bwd_saved_tensor_s", host_ckpt_bwd_saved_tensor_s, false, 0, 1e-3),
    F("host", "ckpt_dtensor_detach_s", host_ckpt_dtensor_detach_s, false, 0, 1e-3),
    F("framework", "reserved_bytes", framework_reserved_bytes, true, 0, 1e11),
    F("framework", "cuda_context_bytes", cuda_context_bytes, false, 0, 1e11),
    F("framework", "nccl_communicator_bytes", nccl_communicator_bytes, false, 0, 1e11),
    F("framework", "library_workspace_bytes", library_workspace_bytes, false, 0, 1e11),
    F("framework", "nccl_world_communicator_bytes", nccl_world_communicator_bytes, false, 0, 1e11),
    F("framework", "nccl_group_bytes", nccl_group_bytes, false, 0, 1e11),
    F("framework", "nccl_p2p_peer_bytes", nccl_p2p_peer_bytes, false, 0, 1e11),
    F("framework", "nccl_one_rank_group_bytes", nccl_one_rank_group_bytes, false, 0, 1e11),
};
#define NFIELDS (sizeof fields / sizeof fields[0])

/* The step terms (issue 4; fitted by plan measure --refine, costmodel/refine.h), in
 * system_step_term order: JSON name, default, and the physical range a profile (and a fit)
 * must keep to. costmodel/profile.c reads and writes them. */
static const struct {
    const char *name;
    double value, min, max;
} step_terms[STEP_NTERMS] = {
    {"compute_scale", 1, 0.1, 10},
    {"comm_scale", 1, 0.1, 10},
    {"overlap_efficiency", 1, 0, 1},
    {"layer_overhead_s", 0, 0, 0.1},
    {"fsdp2_compute_scale", 1, 0.1, 10},
};

const char *system_step_name(system_step_term t)
{
    return t >= 0 && t < STEP_NTERMS ? step_terms[t].name : "?";
}

double system_step_default(system_step_term t)
{
    return t >= 0 && t < STEP_NTERMS ? step_terms[t].value : 0;
}

void system_step_range(system_step_term t, double *lo, double *hi)
{
    *lo = t >= 0 && t < STEP_NTERMS ? step_terms[t].min : 0;
    *hi = t >= 0 && t < STEP_NTERMS ? step_terms[t].max : 0;
}

void system_step_reset(system_step *s)
{
    memset(s, 0, sizeof *s);
    s->active = true;
    for (int t = 0; t < STEP_NTERMS; t++) s->value[t] = step_terms[t].value;
}

cm_status system_field_number(const json_t *v, const char *path, const char *section,
                              const char *key, double lo, double hi, bool is_int, double *x,
                              char *err, size_t errlen)
{
    if (!json_is_number(v))
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': \"%s\".\"%s\" must be a number: fix it", path, section,
                       key);
    *x = json_number_value(v);
    if (!(*x >= lo && *x <= hi) || (is_int && *x != floor(*x)))
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': \"%s\".\"%s\" = %g is outside the sane range "
                       "[%g, %g]: check units (bytes, seconds, FLOP/s)",
                       path, section, key, *x, lo, hi);
    return CM_OK;
}

static cm_status apply_fields(const json_t *root, const char *path, system_spec *sys,
                              bool overlay, char *err, size_t errlen)
{
    for (size_t i = 0; i < NFIELDS; i++) {
        const system_field *f = &fields[i];
        const json_t *sec = json_object_get(root, f->section);
        const json_t *v = sec && json_is_object(sec) ? json_object_get(sec, f->key) : NULL;
        if (!v) {
            if (f->required && !overlay)
                return cm_fail(err, errlen, CM_EPARSE,
                               "system file '%s' lacks \"%s\".\"%s\": add it (schema in "
                               "data/systems/README.md)",
                               path, f->section, f->key);
            continue;
        }
        double x;
        if (f->is_bool && json_is_boolean(v)) {
            x = json_is_true(v);
        } else {
            cm_status st = system_field_number(v, path, f->section, f->key, f->min, f->max,
                                               f->is_int, &x, err, errlen);
            if (st != CM_OK) return st;
        }
        char *base = (char *)sys + f->offset;
        if (f->is_bool)
            *(bool *)base = x != 0;
        else if (f->is_int)
            *(int *)base = (int)x;
        else
            *(double *)base = x;
    }
    if (sys->nics_per_node > 0 && sys->nic_bandwidth_bytes_per_s <= 0)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': nics_per_node > 0 needs nic_bandwidth_bytes_per_s > 0",
                       path);
    /* A domain is whole hosts (NVL72: 18 hosts of 4) or whole bridged groups inside a host
     * (H100 NVL: pairs in an 8-GPU server); anything else has no regular placement. */
    int dom = sys->scaleup_domain_gpus, host = sys->gpus_per_node;
    if (dom > 0 && host > 0 && dom % host && host % dom)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': node.scaleup_domain_gpus %d neither holds whole hosts "
                       "of node.gpus_per_node %d nor divides one: fix either",
                       path, dom, host);
    if (sys->nvls_enabled && sys->nvls_busbw_bytes_per_s <= 0)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': node.nvls is on but the system has no "
                       "node.nvls_busbw_bytes_per_s (no NVLink SHARP): turn it off",
                       path);
    return CM_OK;
}

cm_status system_overlay_fields(const json_t *root, const char *path, system_spec *sys,
                                char *err, size_t errlen)
{
    return apply_fields(root, path, sys, true, err, errlen);
}

json_t *system_read_json(const char *path, cm_status *st, char *err, size_t errlen)
{
    json_error_t jerr;
    char *text;
    size_t len;
    *st = input_file_read(path, "system file", "give a preset name or the path to a system JSON",
                          INPUT_FILE_JSON_MAX_BYTES, &text, &len, err, errlen);
    if (*st != CM_OK) return NULL;
    json_t *root = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!root) {
        *st = cm_fail(err, errlen, CM_EPARSE,
                      "system file '%s' is not valid JSON (line %d: %s): fix the file", path,
                      jerr.line, jerr.text);
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        *st = cm_fail(err, errlen, CM_EPARSE, "system file '%s' must hold a JSON object", path);
        return NULL;
    }
    *st = CM_OK;
    return root;
}

/* node.hybridep_algbw and network.hybridep_rdma_algbw: {"source": "...", "points": [[ep,
 * dispatch_bytes_per_s, combine_bytes_per_s], ...]} in increasing EP size (moe_dispatch.c reads
 * them); `key` names the field in the messages. */
static cm_status ep_rates_from_json(const json_t *sec, const char *path, const char *key,
                                    system_ep_rates *r, char *err, size_t errlen)
{
    if (!sec) return CM_OK;
    const json_t *pts = json_is_object(sec) ? json_object_get(sec, "points") : NULL;
    size_t n = json_is_array(pts) ? json_array_size(pts) : 0;
    if (n == 0 || n > HYBRIDEP_ALGBW_MAX_POINTS)
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': %s needs \"points\", 1 to %d "
                       "[ep, dispatch_bytes_per_s, combine_bytes_per_s] rows",
                       path, key, HYBRIDEP_ALGBW_MAX_POINTS);
    for (size_t i = 0; i < n; i++) {
        const json_t *row = json_array_get(pts, i);
        double v[3];
        bool ok = json_is_array(row) && json_array_size(row) == 3;
        for (size_t k = 0; ok && k < 3; k++) {
            const json_t *x = json_array_get(row, k);
            ok = json_is_number(x) && (v[k] = json_number_value(x)) > 0 && v[k] < 1e14;
        }
        if (ok && i > 0) ok = v[0] > r->ep[i - 1];
        if (!ok)
            return cm_fail(err, errlen, CM_EPARSE,
                           "system file '%s': %s point %zu must be [ep, "
                           "dispatch_bytes_per_s, combine_bytes_per_s], positive, EP increasing",
                           path, key, i);
        r->ep[i] = v[0];
        r->dispatch_bytes_per_s[i] = v[1];
        r->combine_bytes_per_s[i] = v[2];
    }
    r->n = (int)n;
    return CM_OK;
}

cm_status system_from_json(const json_t *root, const char *path, const char *name,
                           system_spec *sys, char *err, size_t errlen)
{
    memset(sys, 0, sizeof *sys);
    const json_t *v = json_object_get(root, "name");
    /* names from the file (or a path) into fixed fields, whole UTF-8 characters only */
    input_text_copy(sys->name, sizeof sys->name,
                    name ? name : (json_is_string(v) ? json_string_value(v) : path));
    v = json_object_get(root, "description");
    if (json_is_string(v))
        input_text_copy(sys->description, sizeof sys->description, json_string_value(v));
    const json_t *gpu = json_object_get(root, "gpu");
    v = gpu ? json_object_get(gpu, "name") : NULL;
    input_text_copy(sys->gpu_name, sizeof sys->gpu_name,
                    json_is_string(v) ? json_string_value(v) : "GPU");
    const json_t *node = json_object_get(root, "node");
    v = node ? json_object_get(node, "fabric") : NULL;
    if (v && (!json_is_string(v) || (strcmp(json_string_value(v), "switch") &&
                                     strcmp(json_string_value(v), "mesh"))))
        return cm_fail(err, errlen, CM_EPARSE,
                       "system file '%s': \"node\".\"fabric\" must be \"switch\" (NVSwitch) or "
                       "\"mesh\" (point-to-point links, AMD xGMI)",
                       path);
    sys->scaleup_mesh = v && !strcmp(json_string_value(v), "mesh");
    cm_status st = attn_table_from_json(json_object_get(root, "attention_rates"), path,
                                        &sys->attention_rates, err, errlen);
    if (st != CM_OK) return st;
    st = grouped_table_from_json(json_object_get(root, "grouped_gemm_rates"), path,
                                 &sys->grouped_gemm_rates, err, errlen);
    if (st != CM_OK) return st;
    st = ep_rates_from_json(node ? json_object_get(node, "hybridep_algbw") : NULL, path,
                            "node.hybridep_algbw", &sys->hybridep_algbw, err, errlen);
    if (st != CM_OK) return st;
    const json_t *net = json_object_get(root, "network");
    st = ep_rates_from_json(net ? json_object_get(net, "hybridep_rdma_algbw") : NULL, path,
                            "network.hybridep_rdma_algbw", &sys->hybridep_rdma_algbw, err,
                            errlen);
    if (st != CM_OK) return st;
    st = apply_fields(root, path, sys, false, err, errlen);
    if (st == CM_OK) burst_sustain_apply(sys);
    return st;
}

/* A preset file: system_read_json + system_from_json. */
static cm_status load_json(const char *path, const char *name, system_spec *sys, char *err,
                          size_t errlen)
{
    cm_status st;
    json_t *root = system_read_json(path, &st, err, errlen);
    if (!root) return st;
    st = system_from_json(root, path, name, sys, err, errlen);
    json_decref(root);
    return st;
}

void system_list_presets(const char *data_dir, char *buf, size_t buflen)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/systems", data_dir);
    buf[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) return;
    size_t used = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 && used + len < buflen)
            used += (size_t)snprintf(buf + used, buflen - used, "%s%.*s", used ? ", " : "",
                                     (int)(len - 5), e->d_name);
    }
    closedir(d);
}

cm_status system_preset_path(const char *name, const char *data_dir, char *path, size_t pathlen,
                             char *err, size_t errlen)
{
    snprintf(path, pathlen, "%s/systems/%s.json", data_dir, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        char list[1024];
        system_list_presets(data_dir, list, sizeof list);
        return cm_fail(err, errlen, CM_EINVAL,
                       "unknown system '%s': use one of the presets (%s) or a path to a system "
                       "JSON",
                       name, list[0] ? list : "none found: set PLAN_DATA_DIR");
    }
    fclose(f);
    return CM_OK;
}

cm_status system_load(const char *name_or_path, const char *data_dir, system_spec *sys,
                      char *err, size_t errlen)
{
    if (!name_or_path || !*name_or_path)
        return cm_fail(err, errlen, CM_EINVAL, "no system given: use --system with a preset "
                                               "(e.g. h100) or a path to a system JSON");
    if (strchr(name_or_path, '/') || strstr(name_or_path, ".json"))
        return load_json(name_or_path, NULL, sys, err, errlen);
    char path[1024];
    cm_status st = system_preset_path(name_or_path, data_dir, path, sizeof path, err, errlen);
    if (st != CM_OK) return st;
    return load_json(path, name_or_path, sys, err, errlen);
}

double system_inter_bandwidth_per_gpu(const system_spec *sys)
{
    if (sys->nics_per_node <= 0) return 0;
    return sys->nics_per_node * sys->nic_bandwidth_bytes_per_s / sys->gpus_per_node;
}

int system_domain_gpus(const system_spec *sys)
{
    return sys->scaleup_domain_gpus > 0 ? sys->scaleup_domain_gpus : sys->gpus_per_node;
}

double system_power_cap_exponent(const system_spec *sys)
{
    return sys->gemm_power_exponent > 0 ? sys->gemm_power_exponent : 1.0 / 3.0;
}

double system_power_cap_scale(const system_spec *sys)
{
    if (sys->tdp_w <= 0 || sys->power_limit_w <= 0 || sys->power_limit_w >= sys->tdp_w) return 1;
    return pow(sys->power_limit_w / sys->tdp_w, system_power_cap_exponent(sys));
}

double system_gemm_power_scale(const system_spec *sys)
{
    double headroom = sys->gemm_headroom_rate > 0 ? sys->gemm_headroom_rate : 1;
    return system_power_cap_scale(sys) * headroom;
}

cm_status system_set_nvls(system_spec *sys, bool on, char *err, size_t errlen)
{
    if (on && sys->nvls_busbw_bytes_per_s <= 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "--nvls on: system '%s' has no NVLink SHARP (no "
                       "node.nvls_busbw_bytes_per_s): drop the flag or pick a system with NVLS",
                       sys->name);
    sys->nvls_enabled = on;
    return CM_OK;
}

cm_status system_set_power_limit(system_spec *sys, double limit_w, char *err, size_t errlen)
{
    if (sys->tdp_w <= 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "--power-limit: system '%s' gives no gpu.tdp_w to scale from: add it to "
                       "the system file or drop the flag",
                       sys->name);
    if (!(limit_w > 0))
        return cm_fail(err, errlen, CM_EINVAL, "--power-limit must be a positive wattage");
    sys->power_limit_w = limit_w;
    return CM_OK;
}

int system_knob_notes(const system_spec *sys, char *buf, size_t buflen)
{
    int n = 0;
    size_t len = 0;
    if (buflen) buf[0] = '\0';
    if (sys->power_limit_w > 0 && sys->tdp_w > 0) {
        double k = system_power_cap_scale(sys);
        if (k < 1 && sys->gemm_power_exponent > 0)
            snprintf(buf + len, buflen - len,
                     "power limit %.0f W of the %.0f W TDP: sustained GEMM and attention rates "
                     "x %.3f = (limit/TDP)^%.2f, the exponent of rate on power measured at the "
                     "TDP carried below it, an ASSUMPTION (data/systems/README.md 'Power "
                     "limit')\n",
                     sys->power_limit_w, sys->tdp_w, k, sys->gemm_power_exponent);
        else if (k < 1)
            snprintf(buf + len, buflen - len,
                     "power limit %.0f W of the %.0f W TDP: sustained GEMM and attention rates "
                     "x %.3f = (limit/TDP)^(1/3), an ASSUMPTION (clock ~ power^(1/3)); no "
                     "measured exponent for this GPU (data/systems/README.md 'Power limit')\n",
                     sys->power_limit_w, sys->tdp_w, k);
        else
            snprintf(buf + len, buflen - len,
                     "power limit %.0f W at or above the %.0f W TDP: no change to the GEMM "
                     "rate\n",
                     sys->power_limit_w, sys->tdp_w);
        len = strlen(buf);
        n++;
    }
    if (sys->nvls_enabled && len < buflen) {
        snprintf(buf + len, buflen - len,
                 "NVLS on: all-reduces inside the %d-GPU NVLink domain at %.0f GB/s busbw "
                 "(node.nvls_busbw_bytes_per_s)\n",
                 system_domain_gpus(sys), sys->nvls_busbw_bytes_per_s / 1e9);
        n++;
    }
    return n;
}

const system_collective_fit *system_collective_fit_find(const system_spec *sys, int op,
                                                        int group_size, bool spans_nodes)
{
    for (int i = 0; i < sys->n_collective_fits; i++) {
        const system_collective_fit *f = &sys->collective_fits[i];
        if (f->op == op && f->group_size == group_size && !f->spans_nodes == !spans_nodes)
            return f;
    }
    return NULL;
}

bool system_collective_fit_put(system_spec *sys, const system_collective_fit *f)
{
    const system_collective_fit *old =
        system_collective_fit_find(sys, f->op, f->group_size, f->spans_nodes);
    int k = old ? (int)(old - sys->collective_fits) : sys->n_collective_fits;
    if (k == SYSTEM_MAX_COLLECTIVE_FITS) return false;
    sys->collective_fits[k] = *f;
    if (k == sys->n_collective_fits) sys->n_collective_fits++;
    return true;
}
