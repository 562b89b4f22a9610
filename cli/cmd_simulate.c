/*
 * cmd_simulate.c — `plan simulate`: run the event-driven step simulator (costmodel/sim.h) on
 * one layout, print the simulated step beside the closed form's, and with --trace write the
 * step as a Chrome/Perfetto trace (one process per pipeline stage, one thread per stream).
 */
#include <stdio.h>

#include "cli.h"
#include "commands.h"
#include "estimate.h"
#include "estimate_costs.h"
#include "output.h"
#include "sim.h"

static void usage(void)
{
    printf("usage: plan simulate --model M --gpus N [layout] [--trace step.json] [options]\n"
           "  the layout flags of plan estimate (--tp --pp --dp --cp --ep --etp --vpp --mbs\n"
           "  --sp/--no-sp --sharding --framework --recompute ...), --seq --gbs --system\n"
           "  --calibration --attention --no-overlap --tp-comm-overlap\n"
           "  --overlap-grad-reduce --overlap-param-gather --grad-reduce-bf16\n"
           "  --pp-first-layers N --pp-last-layers N   uneven pipeline: decoder layers on the first /\n"
           "                       last stage, the others share the rest evenly (Megatron; under\n"
           "                       torchtitan the first/last virtual stage's, the rest as even as\n"
           "                       it goes: its first/last_stage_less_layers; default its 1 / 1)\n"
           "  --expandable-segments  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: no free block\n"
           "                       kept for the fp32 logits (allocator fragmentation, memory.h);\n"
           "                       torchtitan's default. --no-expandable-segments: torch's default\n"
           "                       allocator (a torchtitan run without its launcher's setting)\n"
           "  --pp-keep-outputs    a pipelining loop that keeps the last stage's outputs\n"
           "                       (schedule.step's default return_outputs=True; torchtitan\n"
           "                       passes False): its bf16 logits of every micro-batch held\n"
           "  --pp-fsdp-rs-held    torch before pytorch#144535 (2025-01-10): FSDP2 keeps each\n"
           "                       local stage's last fp32 reduce-scatter input (one block)\n"
           "                       into the next step (torchtitan's 2024-12 tables)\n"
           "  --hold-logits        a native loop that keeps the bf16 logits through the backward\n"
           "                       (no `del pred` before loss.backward(), as torchtitan does)\n"
           "  --one-rank-groups N  N process groups of one rank beyond the layout's (a device\n"
           "                       mesh's size-1 dimensions): an NCCL communicator each\n"
           "  --moe-pad-index-copy a torch MoE padding the experts' rows by index_copy: autograd\n"
           "                       keeps the unpadded rows too (2h bytes a routed copy)\n"
           "  --moe-gather-routing a torch MoE regrouping tokens by gathers both ways, top-k\n"
           "                       weights as a [T,k,h] fp32 product (parallel_run.py's EP layer)\n"
           "  --trace FILE         write the simulated step as a Chrome/Perfetto trace\n"
           "                       (open in https://ui.perfetto.dev or chrome://tracing)\n"
           "  --gemm-headroom bubble|on|off  the GEMMs' power headroom, as plan estimate\n"
           "                       (default bubble: the pipeline bubble's, gemm_headroom.h)\n"
           "  --format human|json\n"
           "Prints the simulated step time beside the closed-form estimate's (plan estimate's).\n");
}

static void human(const estimate *e, const model_spec *m, const system_spec *sys,
                  const sim_workspace *w, const char *trace)
{
    const sim_input *in = sim_input_of(w);
    const time_simulated *x = &e->time_sim;
    const time_breakdown *tm = &e->time;
    char line[256];
    output_layout_line(e, line, sizeof line);
    printf("%s (%.2f B params, %.2f B active) on %d x %s, seq %d, global batch %d\n", m->display,
           e->params_total / 1e9, e->params_active / 1e9, e->gpus, sys->gpu_name,
           e->training.seq_len, e->training.global_batch);
    printf("%s\n", line);
    printf("  simulated    %.3f s/step   closed form %.3f s/step (%+.1f%%)\n", x->step_s,
           tm->step_s, 100 * (x->step_s / tm->step_s - 1));
    printf("  simulated    busiest stage %d busy %.3f s · bubble %.3f s · grad sync %.3f s · "
           "optimizer %.3f s · param gather %.3f s\n",
           x->critical_stage, x->compute_busy_s, x->bubble_s, x->grad_sync_s, x->optimizer_s,
           x->param_gather_s);
    printf("  closed form  compute %.3f s · exposed comm %.3f s · bubble %.3f s · optimizer "
           "%.3f s\n",
           tm->compute_s, tm->comm_exposed_s, tm->bubble_s, tm->optimizer_s);
    output_host_paced_line(stdout, e, m, sys); /* of the closed form's step (issue 14) */
    printf("  schedule     %s, %d stage%s x %d chunk%s x %d micro-batches; p2p %s; %s\n",
           in->pp == 1                           ? "gradient accumulation"
           : in->schedule == PP_SCHEDULE_DEFAULT ? (in->vpp > 1 ? "interleaved 1F1B" : "1F1B")
                                                 : layout_pp_schedule_name(in->schedule),
           in->pp, in->pp > 1 ? "s" : "", in->vpp, in->vpp > 1 ? "s" : "", in->microbatches,
           in->pp == 1 ? "none" : in->p2p_overlap ? "overlapped" : "blocking",
           in->fsdp ? (in->fsdp_reshard ? "FSDP gathers one layer ahead, resharded after forward"
                                        : "FSDP gathers one layer ahead, kept for backward")
           : in->grad_overlap ? "DP buckets reduced during the last backward"
                              : "DP reduction after the last backward");
    if (!e->feasible) printf("  INFEASIBLE: %s\n", e->infeasible_reason);
    const sim_stage_stats *st = sim_stages(w);
    printf("\n  stage   busy_s   idle_s  compute_end_s  grads_ready_s    end_s\n");
    for (int s = 0; s < in->pp; s++)
        printf("  %5d %8.3f %8.3f %14.3f %14.3f %8.3f\n", s, st[s].busy_s,
               st[s].compute_end_s - st[s].busy_s, st[s].compute_end_s, st[s].grads_ready_s,
               st[s].end_s);
    if (trace)
        printf("\nTrace: %s (%d events; a process per stage; threads: compute, p2p sends, "
               "DP/FSDP collectives). Open it in https://ui.perfetto.dev or chrome://tracing.\n",
               trace, sim_trace_events(w));
}

static json_t *as_json(const estimate *e, const model_spec *m, const system_spec *sys,
                       const sim_workspace *w, const char *trace)
{
    json_t *j = output_estimate_json(e, m, sys);
    const sim_input *in = sim_input_of(w);
    const sim_stage_stats *st = sim_stages(w);
    json_t *stages = json_array();
    for (int s = 0; s < in->pp; s++)
        json_array_append_new(stages,
                              json_pack("{s:i, s:f, s:f, s:f, s:f}", "stage", s, "busy_s",
                                        st[s].busy_s, "compute_end_s", st[s].compute_end_s,
                                        "grads_ready_s", st[s].grads_ready_s, "end_s",
                                        st[s].end_s));
    json_object_set_new(j, "stages", stages);
    json_object_set_new(j, "trace", trace ? json_string(trace) : json_null());
    return j;
}

int cmd_simulate(int argc, char **argv)
{
    cli_options o;
    bool help;
    int rc = cli_parse(argc, argv, &o, &help);
    if (rc) return rc;
    if (help) {
        usage();
        return 0;
    }
    /* the closed form printed beside the simulation is plan estimate's: the pipeline bubble's
     * power headroom unless --gemm-headroom says otherwise (gemm_headroom.h), as
     * cmd_estimate.c defaults it (before, plan simulate priced the sustained rate: its closed
     * form and simulated step were 8% slower than plan estimate's for an 8B PP 4 interleaved
     * layout, ppint16) */
    cli_gemm_headroom_default(&o);
    layout l;
    model_spec m;
    system_spec sys;
    estimate e;
    if ((rc = cli_estimate(&o, &m, &sys, &l, &e))) return rc;
    char err[CM_ERRLEN];
    if (!estimate_time_priced(&e)) {
        /* nothing to simulate (a group crosses nodes with no network): the estimate says
         * "infeasible: <reason>" where the step time would be, and exits 1 as plan estimate */
        if (o.trace) {
            snprintf(err, sizeof err, "no trace: this layout has no step time: %s",
                     e.infeasible_reason);
            return cli_error(err);
        }
        if (o.format == FORMAT_JSON) {
            json_t *j = output_estimate_json(&e, &m, &sys);
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
            fputc('\n', stdout);
            json_decref(j);
        } else {
            output_estimate_human(stdout, &e, &m, &sys);
        }
        return 1;
    }
    sim_workspace *w = sim_alloc();
    if (!w) return cli_error("out of memory");
    sim_options so = {.serialize = false, .trace = o.trace != NULL};
    /* the simulator's stages at the GEMM rate the closed form's power headroom found, as plan
     * estimate --simulate runs them */
    system_spec ss = sys;
    if (e.time.gemm_headroom_rate > 1) ss.gemm_headroom_rate = e.time.gemm_headroom_rate;
    cm_status st = sim_estimate(w, &m, &ss, &o.training, &l, &so, &e, err, sizeof err);
    if (st == CM_OK && o.trace) st = output_write_trace(w, o.trace, err, sizeof err);
    if (st != CM_OK) {
        sim_free(w);
        return cli_error(err);
    }
    if (o.format == FORMAT_JSON) {
        json_t *j = as_json(&e, &m, &sys, w, o.trace);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        human(&e, &m, &sys, w, o.trace);
    }
    sim_free(w);
    return 0;
}
