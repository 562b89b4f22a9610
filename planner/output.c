/*
 * output.c — human and JSON renderings of estimates and plans (see output.h).
 */
#include "output.h"
#include "units.h"

#include "precision.h"
#include "moe_dispatch.h"
#include "whole_file.h"

#include <math.h>
#include <string.h>

#include "collective.h"
#include "cuda_graphs.h"
#include "explain.h"
#include "host_paced.h"
#include "layout_codec.h"
#include "exact_model.h"
#include "megatron_form.h"
#include "titan_form.h"
#include "sim.h"


cm_status output_write_trace(const struct sim_workspace *w, const char *path, char *err,
                             size_t errlen)
{
    json_t *trace = sim_trace_json(w);
    if (!trace)
        return cm_fail(err, errlen, CM_ENOMEM, "no trace was recorded (out of memory?)");
    /* written whole: a failed write leaves no partial file (whole_file.h) */
    char why[CM_ERRLEN];
    cm_status st = whole_file_json(trace, path, JSON_COMPACT | JSON_REAL_PRECISION(15), why, sizeof why);
    json_decref(trace);
    if (st != CM_OK) return cm_fail(err, errlen, st, "cannot write the trace: %s", why);
    return CM_OK;
}

/* Why an estimate has no step time (estimate_time_priced false): its infeasibility reason. */
static const char *output_unpriced_reason(const estimate *e)
{
    return e->infeasible_reason[0] ? e->infeasible_reason
                                   : "a communication group spans nodes but the system has no "
                                     "inter-node network";
}

json_t *output_time_simulated_json(const estimate *e)
{
    if (!e->simulated) return json_null();
    const time_simulated *x = &e->time_sim;
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:f}", "step_s", x->step_s,
                     "compute_busy_s", x->compute_busy_s, "bubble_s", x->bubble_s,
                     "grad_sync_s", x->grad_sync_s, "optimizer_s", x->optimizer_s,
                     "param_gather_s", x->param_gather_s, "critical_stage", x->critical_stage,
                     "closed_form_step_s", e->time.step_s);
}

/* What a plan's framework cannot build of the model with its own model code, as sentences:
 * exact_model.h (0 for FSDP2, which runs the model's own Hugging Face code). */
static int framework_form_missing(layout_framework fw, const model_spec *m,
                                  char items[][FORM_LIST_ITEM_CHARS])
{
    return exact_model_missing(fw, m, items);
}

/* The same joined with "; "; false when the framework builds the model's layers as they are. */
static bool framework_form_text(layout_framework fw, const model_spec *m, char *buf, size_t len)
{
    char items[FORM_LIST_MAX][FORM_LIST_ITEM_CHARS];
    int n = framework_form_missing(fw, m, items);
    return form_list_join((const char(*)[FORM_LIST_ITEM_CHARS])items, n, buf, len);
}

/* The list as a JSON array for the plans of framework fw ([] when its code builds the model),
 * null for the other frameworks' plans. */
static json_t *framework_form_json(const layout *l, layout_framework fw, const model_spec *m)
{
    if (l->framework != fw) return json_null();
    char items[FORM_LIST_MAX][FORM_LIST_ITEM_CHARS];
    int n = framework_form_missing(fw, m, items);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_string(items[i]));
    return a;
}

/* {"megatron": [its missing forms], ...} for the frameworks an --exact-model search left out
 * ({} when none). */
static json_t *exact_model_excluded_json(const search_result *r, const model_spec *m)
{
    json_t *x = json_object();
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        if (!r->excluded[fw]) continue;
        char items[FORM_LIST_MAX][FORM_LIST_ITEM_CHARS];
        int n = framework_form_missing((layout_framework)fw, m, items);
        json_t *a = json_array();
        for (int i = 0; i < n; i++) json_array_append_new(a, json_string(items[i]));
        json_object_set_new(x, layout_framework_name((layout_framework)fw), a);
    }
    return x;
}

json_t *output_estimate_json(const estimate *e, const model_spec *m, const system_spec *sys)
{
    const layout *l = &e->layout;
    const training_spec *t = &e->training;
    const memory_breakdown *mb = &e->memory;
    const time_breakdown *tm = &e->time;
    json_t *o = json_object();
    /* Parameter counts are exact integers (checked against the published counts). */
    json_object_set_new(o, "model", json_pack("{s:s, s:s, s:I, s:I}", "name", m->name, "display",
                                              m->display, "params_total",
                                              (json_int_t)e->params_total, "params_active",
                                              (json_int_t)e->params_active));
    json_object_set_new(o, "system", json_pack("{s:s, s:s, s:i, s:i, s:b, s:f, s:f}", "name",
                                               sys->name, "gpu", sys->gpu_name, "gpus_per_node",
                                               sys->gpus_per_node, "scaleup_domain_gpus",
                                               system_domain_gpus(sys), "nvls",
                                               sys->nvls_enabled, "power_limit_w",
                                               sys->power_limit_w, "gemm_power_scale",
                                               system_gemm_power_scale(sys)));
    json_object_set_new(o, "gpus", json_integer(e->gpus));
    /* the layout's fields (layout_codec.h), with the training shape in its place */
    json_t *lay = layout_json_set(json_object(), l, t);
    json_object_set_new(lay, "microbatches", json_integer(e->microbatches));
    json_object_set_new(o, "layout", lay);
    {   /* issue 21: where the groups the rank order moves land (layout_place.c): ranks of each
         * group in one NVLink domain, and whether it leaves the domain */
        struct { const char *key; layout_group g; } gs[] = {
            {"tp", layout_tp_group(sys, l)}, {"cp", layout_cp_group(sys, l)},
            {"dp_cp", layout_dp_group(sys, l)}, {"pp", layout_pp_group(sys, l)},
            {"expert_dp", layout_expert_dp_group(sys, l)}};
        json_t *pj = json_object();
        for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++)
            json_object_set_new(pj, gs[i].key,
                                json_pack("{s:i, s:i, s:b}", "size", gs[i].g.size,
                                          "members_per_domain", gs[i].g.members_per_node,
                                          "spans_domains", gs[i].g.spans_nodes));
        json_object_set_new(o, "placement", pj);
    }
    json_object_set_new(
        o, "memory",
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i}", "weights_bytes",
                  mb->weights_bytes, "gradients_bytes", mb->gradients_bytes, "optimizer_bytes",
                  mb->optimizer_bytes, "activations_bytes", mb->activations_bytes,
                  "logits_bytes", mb->logits_bytes, "comm_buffer_bytes", mb->comm_buffer_bytes,
                  "framework_bytes", mb->framework_bytes, "other_bytes", mb->other_bytes,
                  "total_bytes", mb->total_bytes, "capacity_bytes", mb->capacity_bytes, "stage",
                  mb->stage));
    {   /* issue 14: the allocator's largest block and what the plan must fit (memory.h) */
        json_t *mj = json_object_get(o, "memory");
        json_object_set_new(mj, "largest_block_bytes", json_real(mb->largest_block_bytes));
        json_object_set_new(mj, "need_bytes", json_real(mb->need_bytes));
        if (mb->host_activation_bytes > 0) /* Megatron activation offload: per GPU, on the host */
            json_object_set_new(mj, "host_activation_bytes",
                                json_real(mb->host_activation_bytes));
    }
    if (layout_is_pytorch(l)) { /* issue 14: the optimizer step's own peak */
        json_t *mj = json_object_get(o, "memory");
        json_object_set_new(mj, "optimizer_temp_bytes", json_real(mb->optimizer_temp_bytes));
        json_object_set_new(mj, "optimizer_step_bytes", json_real(mb->optimizer_step_bytes));
        /* the two moments of the training peak on the loss's stage (memory_phases.h) */
        json_object_set_new(mj, "loss_phase_bytes", json_real(mb->loss_phase_bytes));
        json_object_set_new(mj, "blocks_phase_bytes", json_real(mb->blocks_phase_bytes));
        /* torch.cuda's peak reserved, FSDP2's side-stream pools included (memory_pools.h) */
        json_object_set_new(mj, "reserved_bytes", json_real(mb->reserved_bytes));
    }
    json_object_set_new(
        o, "time",
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "step_s",
                  tm->step_s, "step_sd_s", tm->step_sd_s, "compute_s", tm->compute_s, "comm_exposed_s", tm->comm_exposed_s,
                  "bubble_s", tm->bubble_s, "optimizer_s", tm->optimizer_s, "tp_s", tm->tp_s,
                  "cp_s", tm->cp_s, "ep_s", tm->ep_s, "pp_s", tm->pp_s, "dp_s", tm->dp_s,
                  "microbatch_s", tm->microbatch_s));
    /* the GEMM rate multiplier from the step's power headroom (gemm_headroom.h; 1: none) */
    json_object_set_new(json_object_get(o, "time"), "gemm_headroom_rate",
                        json_real(tm->gemm_headroom_rate > 0 ? tm->gemm_headroom_rate : 1));
    if (!estimate_time_priced(e)) {
        /* No step time (a group crosses nodes with no network): null, not ~1e30, for the step
         * and every figure that holds or derives from it, and the reason beside them. */
        json_t *tj = json_object_get(o, "time");
        const char *key;
        json_t *v;
        json_object_foreach(tj, key, v)
            if (!(json_real_value(v) < COLL_UNPRICED_S * 1e-10)) json_object_set_new(tj, key, json_null());
        json_object_set_new(tj, "unpriced_reason", json_string(output_unpriced_reason(e)));
    }
    {   /* issue 14: how much of the step the host's kernel issue sets (host_paced.h); null
         * where the step is unpriced */
        host_paced h;
        host_paced_of(m, sys, e, &h);
        json_t *tj = json_object_get(o, "time");
        struct { const char *key; double v; } hk[] = {
            {"gpu_only_step_s", h.gpu_only_step_s}, {"host_paced_s", h.host_paced_s},
            {"host_paced_fraction", h.fraction}, {"host_paced_fwd_s", h.host_paced_fwd_s},
            {"host_paced_bwd_s", h.host_paced_bwd_s},
            {"host_paced_optimizer_s", h.host_paced_optimizer_s},
            {"fwd_pass_s", h.fwd_pass_s}, {"bwd_pass_s", h.bwd_pass_s},
            {"slow_host_step_s", h.slow_host_step_s},
            {"slow_host_factor", HOST_PACED_SLOW_FACTOR}};
        for (size_t i = 0; i < sizeof hk / sizeof hk[0]; i++)
            json_object_set_new(tj, hk[i].key, h.priced ? json_real(hk[i].v) : json_null());
    }
    /* The step simulator's figures (plan estimate --simulate, plan simulate, and the plans the
     * search re-ranked); null where it did not run. */
    json_object_set_new(o, "time_simulated", output_time_simulated_json(e));
    json_object_set_new(o, "model_flops_per_step", json_real(e->model_flops_per_step));
    json_object_set_new(o, "hardware_flops_per_step", json_real(e->hardware_flops_per_step));
    bool priced = estimate_time_priced(e);
    json_object_set_new(o, "tokens_per_s", priced ? json_real(e->tokens_per_s) : json_null());
    json_object_set_new(o, "mfu", priced ? json_real(e->mfu) : json_null());
    json_object_set_new(o, "hfu", priced ? json_real(e->hfu) : json_null());
    json_object_set_new(o, "feasible", json_boolean(e->feasible));
    /* Megatron plans: the model forms Megatron-LM would train without; torchtitan plans: the
     * forms none of torchtitan's model classes has ([] when none; null for the other
     * frameworks' plans) */
    json_object_set_new(o, "megatron_trains_without",
                        framework_form_json(l, FRAMEWORK_MEGATRON, m));
    json_object_set_new(o, "torchtitan_model_code_lacks",
                        framework_form_json(l, FRAMEWORK_TORCHTITAN, m));
    json_object_set_new(o, "infeasible_reason",
                        e->feasible ? json_null() : json_string(e->infeasible_reason));
    return o;
}

json_t *output_plan_json(const search_result *r, int top, const model_spec *m,
                         const system_spec *sys, bool stats)
{
    json_t *o = json_object();
    json_t *plans = json_array();
    for (int i = 0; i < r->count && i < top; i++)
        json_array_append_new(plans, output_estimate_json(&r->ranked[i], m, sys));
    /* top-level verdict: some layout fits (the exit status says the same) */
    json_object_set_new(o, "fits", json_boolean(r->feasible > 0 && r->count > 0));
    json_object_set_new(o, "plans", plans);
    json_t *best = json_object();
    for (int f = 0; f < LAYOUT_NFRAMEWORKS; f++)
        json_object_set_new(best, layout_framework_name((layout_framework)f),
                            r->has_best[f] ? output_estimate_json(&r->best[f], m, sys)
                                           : json_null());
    json_object_set_new(o, "best_by_framework", best);
    /* When a framework has no feasible layout: the one closest to fitting, with its reason. */
    json_t *closest = json_object();
    for (int f = 0; f < LAYOUT_NFRAMEWORKS; f++)
        json_object_set_new(closest, layout_framework_name((layout_framework)f),
                            !r->has_best[f] && r->has_closest[f]
                                ? output_estimate_json(&r->closest[f], m, sys)
                                : json_null());
    json_object_set_new(o, "closest_by_framework", closest);
    /* det26: "feasible" is the number of layouts that fit where the search counted them
     * (feasible_counted), else null; what the search did (the layouts left unchecked for
     * memory, the per-knob counts) only where asked (stats: plan --search-stats, one thread) */
    json_t *search = json_pack("{s:I, s:o, s:f, s:i}", "evaluated", (json_int_t)r->evaluated,
                               "feasible",
                               r->feasible_counted ? json_integer(r->feasible) : json_null(),
                               "seconds", r->seconds, "simulated", r->simulated);
    if (stats) {
        json_object_set_new(search, "unchecked", json_integer(r->unchecked));
        json_object_set_new(search, "stats", search_stats_json(&r->stats));
    }
    json_object_set_new(o, "search", search);
    if (r->exact_model) /* --exact-model: the frameworks left out, each with its whole list */
        json_object_set_new(json_object_get(o, "search"), "exact_model_excluded",
                            exact_model_excluded_json(r, m));
    return o;
}

/* " · fp8-delayed" after a low-precision layout's line (nothing for bf16). */
static void output_precision_suffix(const layout *l, char *buf, size_t len)
{
    size_t used = strlen(buf);
    if (!precision_is_low(l) || used >= len) return;
    snprintf(buf + used, len - used, " · %s%s", precision_label(l),
             l->fp8_param_gather ? " params" : "");
    used = strlen(buf);
    if ((l->bf16_layers_start || l->bf16_layers_end) && used < len)
        snprintf(buf + used, len - used, " (bf16 first %d, last %d layers)", l->bf16_layers_start,
                 l->bf16_layers_end);
    used = strlen(buf);
    if (l->moe_fp8_dispatch && used < len)
        snprintf(buf + used, len - used, " · fp8 dispatch");
}

/* " · split first F / last L layers" after an uneven pipeline's line (issue 21). */
static void output_split_suffix(const layout *l, char *buf, size_t len)
{
    size_t used = strlen(buf);
    if ((l->pp_first_layers <= 0 && l->pp_last_layers <= 0) || used >= len) return;
    if (l->pp_first_layers > 0 && l->pp_last_layers > 0)
        snprintf(buf + used, len - used, " · split first %d / last %d layers", l->pp_first_layers,
                 l->pp_last_layers);
    else if (l->pp_first_layers > 0)
        snprintf(buf + used, len - used, " · split first %d layers", l->pp_first_layers);
    else
        snprintf(buf + used, len - used, " · split last %d layers", l->pp_last_layers);
}

void output_layout_line(const estimate *e, char *buf, size_t len)
{
    const layout *l = &e->layout;
    char extra[96] = "";
    if (l->framework == FRAMEWORK_FSDP2) {
        snprintf(extra, sizeof extra, "%s%s%s",
                 l->shard_size ? " · HSDP" : "", l->reshard_after_forward ? "" : " · no-reshard",
                 l->offload ? " · offload" : "");
        snprintf(buf, len, "fsdp2  DP %d · Ulysses SP %d | micro-batch %d · recompute %s%s",
                 l->dp, l->cp, l->mbs, layout_recompute_name(l->recompute), extra);
        output_precision_suffix(l, buf, len);
        return;
    }
    if (l->ep > 1) snprintf(extra, sizeof extra, " · EP %d (ETP %d)", l->ep, layout_etp(l));
    if (l->framework == FRAMEWORK_TORCHTITAN) {
        /* issue 19: FSDP2/HSDP x TP x PP (its schedule) x CP x EP, as torchtitan names them */
        char sched[64] = "";
        if (l->pp > 1)
            snprintf(sched, sizeof sched, " (%s%s)", layout_pp_schedule_name(layout_pp_schedule_of(l)),
                     l->vpp > 1 ? l->vpp == 2 ? ", 2 stages/rank" : ", stages/rank > 2" : "");
        snprintf(buf, len,
                 "torchtitan  TP %d · PP %d%s · DP %d · CP %d%s | micro-batch %d · SP %s · %s%s%s · "
                 "recompute %s%s%s%s",
                 l->tp, l->pp, sched, l->dp, l->cp, extra, l->mbs, l->sp ? "on" : "off",
                 l->shard_size ? "HSDP" : "FSDP2", l->reshard_after_forward ? "" : " no-reshard",
                 l->offload ? " offload" : "", layout_recompute_name(l->recompute),
                 !l->compile ? "" : l->loss_eager ? " · compile (loss eager)" : " · compile",
                 l->async_tp ? " · async TP" : "",
                 cuda_graphs_on(l) ? " · CUDA graphs" : ""); /* cuda_graphs.h */
        output_precision_suffix(l, buf, len);
        output_split_suffix(l, buf, len);
        return;
    }
    snprintf(buf, len,
             "megatron  TP %d · PP %d · DP %d · CP %d%s · VPP %d | micro-batch %d · SP %s · %s · "
             "recompute %s",
             l->tp, l->pp, l->dp, l->cp, extra, l->vpp, l->mbs, l->sp ? "on" : "off",
             l->sharding == SHARDING_FSDP      ? "megatron-fsdp"
             : l->shard_grads                  ? "megatron-fsdp optim_grads (ZeRO-2)"
             : l->sharding == SHARDING_DISTOPT ? "distributed optimizer"
                                               : "ddp",
             layout_recompute_name(l->recompute));
    output_precision_suffix(l, buf, len);
    /* the overlap knobs that are on (issue 15), as Megatron's flags name them */
    size_t used = strlen(buf);
    if (l->tp_comm_overlap || l->overlap_grad_reduce || l->overlap_param_gather)
        snprintf(buf + used, len > used ? len - used : 0, " · overlap%s%s%s",
                 l->tp_comm_overlap ? " tp-comm" : "", l->overlap_grad_reduce ? " grad-reduce" : "",
                 l->overlap_param_gather ? " param-gather" : "");
    used = strlen(buf);
    if (l->recompute == RECOMPUTE_FULL && l->recompute_layers > 0)
        used += snprintf(buf + used, len > used ? len - used : 0, " (%d layers a stage)",
                         l->recompute_layers);
    used = strlen(buf);
    if (l->optimizer_offload_pct > 0) /* Megatron CPU offload (issue 21) */
        snprintf(buf + used, len > used ? len - used : 0, " · optimizer offload %d%%",
                 l->optimizer_offload_pct);
    used = strlen(buf);
    if (l->activation_offload && l->activation_offload_layers > 0)
        snprintf(buf + used, len > used ? len - used : 0, " · activation offload (%d layers)",
                 l->activation_offload_layers);
    else if (l->activation_offload)
        snprintf(buf + used, len > used ? len - used : 0, " · activation offload");
    used = strlen(buf);
    if (l->rank_order != RANK_ORDER_DP_PP) /* issue 21: Megatron's --use-tp-pp-dp-mapping */
        snprintf(buf + used, len > used ? len - used : 0, " · ranks %s",
                 layout_rank_order_name(l->rank_order));
    output_split_suffix(l, buf, len);
}

/* Seconds to three significant digits, without an exponent (a pass of 0.0213 s or 51.2 s). */
static const char *secs_3(double x, char *buf, size_t len)
{
    snprintf(buf, len, x >= 1000 ? "%.0f" : "%#.3g", x);
    return buf;
}

void output_host_paced_line(FILE *f, const estimate *e, const model_spec *m,
                            const system_spec *sys)
{
    host_paced h;
    host_paced_of(m, sys, e, &h);
    if (!host_paced_shown(&h)) return;
    /* the passes the host sets, those over the time/step line's threshold */
    char parts[160] = "", a[24], b[24];
    size_t used = 0;
    const char *names[2] = {"forward", "backward"};
    double hp[2] = {h.host_paced_fwd_s, h.host_paced_bwd_s}, pass[2] = {h.fwd_pass_s, h.bwd_pass_s};
    for (int i = 0; i < 2; i++)
        if (hp[i] > 0.0005 * h.step_s && used < sizeof parts)
            used += snprintf(parts + used, sizeof parts - used, "%s%s %s of %s s",
                             used ? ", " : "", names[i], secs_3(hp[i], a, sizeof a),
                             secs_3(pass[i], b, sizeof b));
    if (h.host_paced_optimizer_s > 0.0005 * h.step_s && used < sizeof parts)
        used += snprintf(parts + used, sizeof parts - used, "%soptimizer %s s", used ? ", " : "",
                         secs_3(h.host_paced_optimizer_s, a, sizeof a));
    if (h.fraction >= 0.005)
        fprintf(f, "  host-paced   %.0f%% of the step: the GPU waits for the CPU to issue kernels%s%s%s; "
                   "GPU-only time %s s/step\n",
                100 * h.fraction, used ? " (" : "", parts, used ? ")" : "",
                secs_3(h.gpu_only_step_s, a, sizeof a));
    else /* GPU-paced, with the CPU's issue close behind */
        fprintf(f, "  host-paced   none of the step, but the CPU issues kernels just ahead of the GPU\n");
    /* the range: the quartiles of the host-speed probe over 15 H200 records (host_paced.h) */
    fprintf(f, "               the step moves with the CPU (H200 hosts: 1.7x between the quartiles of 15 "
               "runs' host speed): on a CPU %.1fx slower, %s s/step\n",
            HOST_PACED_SLOW_FACTOR, secs_3(h.slow_host_step_s, a, sizeof a));
}

static void human_numbers(FILE *f, const estimate *e, const model_spec *m,
                          const system_spec *sys)
{
    const memory_breakdown *mb = &e->memory;
    const time_breakdown *tm = &e->time;
    char band[48] = "";
    if (tm->step_sd_s > 0) snprintf(band, sizeof band, " ± %.2f", tm->step_sd_s);
    bool priced = estimate_time_priced(e);
    if (!priced) /* no number to show (~1e30 s once): the reason instead */
        fprintf(f, "  step time    infeasible: %s\n", output_unpriced_reason(e));
    else
        fprintf(f, "  step time    %.2f%s s   tokens/s %.0f (%.0f per GPU)   MFU %.1f%%   HFU %.1f%%\n",
            tm->step_s, band, e->tokens_per_s, e->tokens_per_s / e->gpus, 100 * e->mfu, 100 * e->hfu);
    if (priced && precision_is_low(&e->layout) && tm->step_s > 0) {
        /* MFU stays against the bf16 peak; the model FLOP rate per GPU beside it */
        double rate = e->model_flops_per_step / (tm->step_s * e->gpus);
        fprintf(f, "  precision    %s: model %.0f TFLOP/s per GPU (MFU above is against the bf16 "
                   "peak)\n",
                precision_label(&e->layout), rate / 1e12);
    }
    fprintf(f, "  memory/GPU   %.1f GiB of %.1f GiB (%s %.1f GiB), pipeline stage %d\n",
            mb->total_bytes / UNITS_GIB_BYTES, mb->capacity_bytes / UNITS_GIB_BYTES,
            mb->total_bytes <= mb->capacity_bytes ? "headroom" : "OVER by",
            fabs(mb->capacity_bytes - mb->total_bytes) / UNITS_GIB_BYTES, mb->stage);
    if (explain_peak_tight(mb))
        fprintf(f, "               tight: under %.0f%% of the GPU left; %s\n",
                100 * EXPLAIN_TIGHT_FRACTION, EXPLAIN_TIGHT_RISKS);
    else if (explain_cache_tight(mb))
        fprintf(f, "               cache tight: torch's reserved peak %.1f GiB (with the context) "
                   "leaves under %.0f%% of the GPU; %s\n",
                (mb->reserved_bytes + mb->framework_bytes) / UNITS_GIB_BYTES,
                100 * EXPLAIN_TIGHT_FRACTION, EXPLAIN_CACHE_TIGHT_RISKS);
    fprintf(f,
            "               weights %.1f · gradients %.1f · optimizer %.1f · activations %.1f "
            "(logits %.1f) · other %.1f GiB\n",
            mb->weights_bytes / UNITS_GIB_BYTES, mb->gradients_bytes / UNITS_GIB_BYTES, mb->optimizer_bytes / UNITS_GIB_BYTES,
            mb->activations_bytes / UNITS_GIB_BYTES, mb->logits_bytes / UNITS_GIB_BYTES, mb->other_bytes / UNITS_GIB_BYTES);
    if (mb->loss_phase_bytes > 0) /* torch: not alive at once (memory_phases.h) */
        fprintf(f, "               not at once: the loss's buffers %.1f GiB or the blocks' backward %.1f "
                   "GiB, the peak holds the larger\n",
                mb->loss_phase_bytes / UNITS_GIB_BYTES, mb->blocks_phase_bytes / UNITS_GIB_BYTES);
    if (!priced) {
        /* the bubble holds the pipeline's sends, unpriced as well */
        fprintf(f, "  time/step    compute %.2f s · optimizer %.3f s · communication and bubble "
                   "unpriced (no inter-node network)\n",
                tm->compute_s, tm->optimizer_s);
        fprintf(f, "  micro-batches per step %d (gradient accumulation)\n", e->microbatches);
        return;
    }
    fprintf(f, "  time/step    compute %.2f s · exposed comm %.2f s", tm->compute_s,
            tm->comm_exposed_s);
    const char *names[5] = {"TP", "CP", "EP", "PP", "DP"};
    double vals[5] = {tm->tp_s, tm->cp_s, tm->ep_s, tm->pp_s, tm->dp_s};
    int any = 0;
    for (int i = 0; i < 5; i++)
        if (vals[i] > 0.0005 * tm->step_s) {
            fprintf(f, "%s%s %.2f", any ? ", " : " (", names[i], vals[i]);
            any = 1;
        }
    fprintf(f, "%s · bubble %.2f s · optimizer %.3f s\n", any ? ")" : "", tm->bubble_s,
            tm->optimizer_s);
    output_host_paced_line(f, e, m, sys);
    if (e->simulated) {
        const time_simulated *x = &e->time_sim;
        fprintf(f,
                "  simulated    %.2f s/step (%+.1f%% vs closed form): busiest stage %d busy "
                "%.2f s · bubble %.2f s · grad sync %.2f s · optimizer %.3f s · param gather "
                "%.2f s\n",
                x->step_s, 100 * (x->step_s / tm->step_s - 1), x->critical_stage,
                x->compute_busy_s, x->bubble_s, x->grad_sync_s, x->optimizer_s,
                x->param_gather_s);
    }
    fprintf(f, "  micro-batches per step %d (gradient accumulation)\n", e->microbatches);
}

/* Which dimensions' groups leave the NVLink domain (layout_span_summary), for a multi-domain
 * Megatron plan: the rank order decides between DP and PP (issue 21). */
/* Under a Megatron plan: what Megatron-LM would train the model without; under a torchtitan
 * plan: what torchtitan's model code would need (titan_form.h). */
static void framework_form_line(FILE *f, const estimate *e, const model_spec *m)
{
    char without[FORM_LIST_MAX * (FORM_LIST_ITEM_CHARS + 2)];
    layout_framework fw = e->layout.framework;
    if (!framework_form_text(fw, m, without, sizeof without)) return;
    if (fw == FRAMEWORK_MEGATRON)
        fprintf(f, "  Megatron-LM  would train this model without: %s (its GPT layer cannot "
                   "build them; --emit megatron-args marks them NOT EXPRESSIBLE)\n",
                without);
    else
        fprintf(f, "  torchtitan   %s has no model class with: %s; this plan assumes %s's "
                   "layers written as torchtitan model code (--emit torchtitan says so)\n",
                TITAN_FORM_COMMIT, without, m->display);
}

/* Under a recommended Megatron or torchtitan plan whose framework cannot build the model with
 * its own code: the fastest FSDP2 plan (it runs the model's own Hugging Face modeling code),
 * its rank and time against the recommendation; the ranking is unchanged. */
static void exact_plan_line(FILE *f, const search_result *r, const estimate *best,
                            const model_spec *m)
{
    char without[8];
    if (!framework_form_text(best->layout.framework, m, without, sizeof without)) return;
    if (!r->searched[FRAMEWORK_FSDP2]) {
        fprintf(f, "               FSDP2 (the model's own code, which builds it exactly) was not "
                   "searched (--framework)\n");
        return;
    }
    if (!r->has_best[FRAMEWORK_FSDP2]) {
        fprintf(f, "               no FSDP2 plan (the model's own code, which builds it exactly) "
                   "fits\n");
        return;
    }
    int rank = 0;
    const estimate *o = &r->best[FRAMEWORK_FSDP2];
    for (int i = 0; i < r->count; i++)
        if (r->ranked[i].layout.framework == FRAMEWORK_FSDP2) {
            o = &r->ranked[i];
            rank = i + 1;
            break;
        }
    /* like with like: simulated figures only when both were re-ranked */
    bool sim = o->simulated && best->simulated;
    double t0 = sim ? best->time_sim.step_s : best->time.step_s;
    double t1 = sim ? o->time_sim.step_s : o->time.step_s;
    char line[256], at[24] = "";
    output_layout_line(o, line, sizeof line);
    if (rank) snprintf(at, sizeof at, " is #%d", rank);
    fprintf(f, "               the fastest plan that builds it exactly (FSDP2, the model's own "
               "code)%s: %s, %.2f s/step (%+.1f%%)\n",
            at, line, t1, 100 * (t1 - t0) / t0);
}

static void placement_line(FILE *f, const system_spec *sys, const estimate *e)
{
    char s[512];
    if (e->layout.framework != FRAMEWORK_MEGATRON) return;
    layout_span_summary(sys, &e->layout, s, sizeof s);
    if (s[0]) fprintf(f, "  placement    %s\n", s);
}

/* The system knobs the user set (--power-limit, --nvls), each with what it assumes. */
static void knob_notes(FILE *f, const system_spec *sys)
{
    char notes[1024];
    if (!system_knob_notes(sys, notes, sizeof notes)) return;
    for (char *line = strtok(notes, "\n"); line; line = strtok(NULL, "\n"))
        fprintf(f, "  note: %s\n", line);
}

void output_estimate_human(FILE *f, const estimate *e, const model_spec *m,
                           const system_spec *sys)
{
    char line[256];
    output_layout_line(e, line, sizeof line);
    fprintf(f, "%s (%.2f B params, %.2f B active) on %d x %s, seq %d, global batch %d\n",
            m->display, e->params_total / 1e9, e->params_active / 1e9, e->gpus, sys->gpu_name,
            e->training.seq_len, e->training.global_batch);
    knob_notes(f, sys);
    fprintf(f, "%s\n", line);
    human_numbers(f, e, m, sys);
    placement_line(f, sys, e);
    framework_form_line(f, e, m);
    if (precision_is_low(&e->layout))
        fprintf(f, "  low-precision GEMMs at %.3f x the bf16 GEMM's fraction of peak (%s)\n",
                precision_gemm_ratio(sys, &e->layout), precision_gemm_ratio_source(sys));
    if (model_is_moe(m) && e->layout.ep > 1)
        fprintf(f, "  MoE load: busiest expert rank at %.2f x the mean (%s)\n",
                moe_load_factor(&e->training),
                e->training.moe_imbalance > 1.0
                    ? "--moe-imbalance"
                    : "ASSUMPTION: force-balanced routing; no published per-rank load figure is "
                      "used; set --moe-imbalance");
    if (!e->feasible) fprintf(f, "  INFEASIBLE: %s\n", e->infeasible_reason);
}

static void table_row(FILE *f, int rank, const estimate *e)
{
    const layout *l = &e->layout;
    char sharding[24];
    if (l->sharding == SHARDING_FSDP)
        snprintf(sharding, sizeof sharding, "%s%s%s", l->shard_size ? "hsdp" : "fsdp",
                 l->reshard_after_forward ? "" : "-nr", l->offload ? "+off" : "");
    else
        snprintf(sharding, sizeof sharding, "%s", layout_sharding_name(l->sharding));
    char sim[24] = "-";
    if (e->simulated) snprintf(sim, sizeof sim, "%.2f", e->time_sim.step_s);
    fprintf(f, "%3d  %-8s %3d %3d %5d %3d %3d %3d %4d  %-3s %-9s %-9s %8.2f %8s %10.0f %5.1f%% "
               "%7.1f%s%s%s%s\n",
            rank, l->framework == FRAMEWORK_TORCHTITAN ? "titan" : layout_framework_name(l->framework),
            l->tp, l->pp, l->dp, l->cp, l->ep,
            l->vpp, l->mbs, l->sp ? "on" : "off", sharding, layout_recompute_name(l->recompute),
            e->time.step_s, sim, e->tokens_per_s, 100 * e->mfu, e->memory.total_bytes / UNITS_GIB_BYTES,
            l->rank_order == RANK_ORDER_PP_DP ? "  pp-dp" : precision_is_low(l) ? "       " : "",
            /* a low-precision row names its format (issue 16: the search mixes them) */
            precision_is_low(l) ? "  " : "", precision_is_low(l) ? precision_label(l) : "",
            precision_is_low(l) && l->fp8_param_gather ? " params" : "");
}

/* One framework's best against the recommended plan: its time and how much faster the
 * recommendation is; or why it has none. */
static void verdict_line(FILE *f, const search_result *r, const estimate *best, int other,
                         const model_spec *m)
{
    char line[256];
    if (r->excluded[other]) {
        fprintf(f, "%s left out (--exact-model: its own model code cannot build %s as it is, "
                   "above)\n",
                layout_framework_name((layout_framework)other), m->display);
    } else if (r->has_best[other]) {
        /* Compare like with like: simulated figures when the search re-ranked both. */
        const estimate *o = &r->best[other];
        bool sim = o->simulated && best->simulated;
        double to = sim ? o->time_sim.step_s : o->time.step_s;
        double tb = sim ? best->time_sim.step_s : best->time.step_s;
        output_layout_line(o, line, sizeof line);
        fprintf(f, "best %s plan takes %.2f s/step%s (%s)\n  -> %s is %.2fx faster here\n",
                layout_framework_name((layout_framework)other), to, sim ? " simulated" : "",
                line, layout_framework_name(best->layout.framework), to / tb);
        framework_form_line(f, o, m);
    } else if (r->has_closest[other]) {
        fprintf(f, "no %s layout fits (closest: %s)\n",
                layout_framework_name((layout_framework)other),
                r->closest[other].infeasible_reason);
    } else {
        fprintf(f, "%s was not searched or has no valid layout for this GPU count\n",
                layout_framework_name((layout_framework)other));
    }
}

/* The framework verdict: FSDP2 (the guide's trainer path) against Megatron as before; a
 * three-way comparison when torchtitan was searched too (issue 19), one line per framework
 * that the recommendation is not. */
static void output_verdict(FILE *f, const search_result *r, const estimate *best,
                           const model_spec *m)
{
    bool titan = r->searched[FRAMEWORK_TORCHTITAN] || r->excluded[FRAMEWORK_TORCHTITAN];
    if (!titan) {
        int other = best->layout.framework == FRAMEWORK_MEGATRON ? FRAMEWORK_FSDP2
                                                                 : FRAMEWORK_MEGATRON;
        fprintf(f, "\nFSDP2 vs Megatron: ");
        verdict_line(f, r, best, other, m);
        return;
    }
    if (!r->searched[FRAMEWORK_FSDP2] && !r->searched[FRAMEWORK_MEGATRON]) {
        fprintf(f, "\nFSDP2 vs Megatron vs torchtitan: torchtitan alone was searched (--framework "
                   "torchtitan); plan without --framework compares the three\n");
        return;
    }
    bool left_out = false;
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) left_out = left_out || r->excluded[fw];
    fprintf(f, "\nFSDP2 vs Megatron vs torchtitan: %s is the fastest here%s\n",
            layout_framework_name(best->layout.framework),
            left_out ? " of the frameworks that build the model as it is (--exact-model)" : "");
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        if (fw == (int)best->layout.framework || (!r->searched[fw] && !r->excluded[fw])) continue;
        fprintf(f, "  ");
        verdict_line(f, r, best, fw, m);
    }
}

/* --exact-model: one line per framework left out, naming the first forms its code lacks. */
static void exact_model_lines(FILE *f, const search_result *r, const model_spec *m)
{
    char why[FORM_LIST_MAX * (FORM_LIST_ITEM_CHARS + 2) + 256];
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++)
        if (r->excluded[fw] && exact_model_reason((layout_framework)fw, m, why, sizeof why))
            fprintf(f, "Left out (--exact-model): %s: %s\n",
                    layout_framework_name((layout_framework)fw), why);
}

void output_plan_human(FILE *f, const search_result *r, int top, const model_spec *m,
                       const system_spec *sys, const training_spec *t)
{
    fprintf(f, "%s (%.2f B params, %.2f B active) on %d x %s (%d per node), seq %d, global "
               "batch %d sequences\n",
            m->display, model_params_total(m) / 1e9, model_params_active(m) / 1e9,
            r->gpus, sys->gpu_name, sys->gpus_per_node, t->seq_len,
            t->global_batch);
    knob_notes(f, sys);
    exact_model_lines(f, r, m);
    fputc('\n', f);
    if (r->count == 0) {
        fprintf(f, "No layout fits.\n");
        for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++)
            if (r->has_closest[fw]) {
                char line[256];
                output_layout_line(&r->closest[fw], line, sizeof line);
                fprintf(f, "  closest %s layout: %s\n    %s\n",
                        layout_framework_name((layout_framework)fw), line,
                        r->closest[fw].infeasible_reason);
            }
        fprintf(f, "Try more GPUs, a shorter --seq, or a smaller model.\n");
        return;
    }
    const estimate *best = &r->ranked[0];
    char line[256];
    output_layout_line(best, line, sizeof line);
    fprintf(f, "Recommended: %s\n", line);
    human_numbers(f, best, m, sys);
    placement_line(f, sys, best);
    framework_form_line(f, best, m);
    exact_plan_line(f, r, best, m);

    output_verdict(f, r, best, m);

    /* det26: the feasible count only where it is the number of layouts that fit; under the
     * bound before the memory (speed23) it counted the layouts checked, which on several
     * threads moved from run to run (search.h feasible_counted) */
    int shown = top < r->count ? top : r->count;
    if (r->feasible_counted) fprintf(f, "\nTop %d of %ld feasible layouts:\n", shown, r->feasible);
    else fprintf(f, "\nTop %d of %ld layouts searched:\n", shown, r->evaluated);
    fprintf(f, "  #  framework tp  pp    dp  cp  ep vpp  mbs  sp  sharding  recompute  step_s    "
               "sim_s   tokens/s    MFU mem_GiB\n");
    /* the rank-order mark is explained only where a shown row carries it */
    bool pp_dp_shown = false;
    for (int i = 0; i < r->count && i < top; i++)
        if (r->ranked[i].layout.rank_order == RANK_ORDER_PP_DP) pp_dp_shown = true;
    fprintf(f, "     (sharding: hsdp = FSDP within %d-GPU groups, -nr = no reshard after forward, "
               "+off = CPU offload%s)\n", sys->gpus_per_node,
            pp_dp_shown ? "; pp-dp = ranks in order tp-cp-ep-pp-dp, --use-tp-pp-dp-mapping" : "");
    for (int i = 0; i < r->count && i < top; i++) table_row(f, i + 1, &r->ranked[i]);

    fprintf(f, "\nWhy:\n");
    explain_plan(f, r, m, sys, t);
    fprintf(f, "\nSearched %ld layouts", r->evaluated);
    if (r->feasible_counted) fprintf(f, " (%ld feasible)", r->feasible);
    else fprintf(f, " (a layout whose step's lower bound already exceeds the plans kept is not "
                    "checked for memory; --count-fits checks every one and counts those that "
                    "fit)");
    fprintf(f, " in %.3f s", r->seconds);
    if (r->simulated > 0)
        fprintf(f, "; the top %d re-ranked by the step simulator (sim_s; --no-simulate: closed "
                   "form only)",
                r->simulated);
    fprintf(f, ".\n");
}
