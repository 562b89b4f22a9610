/*
 * measure_local.c — see measure_local.h. A thin layer over libbackend (bk_open, work_plan_build,
 * bk_measure) so that commands measuring many plans share one way of doing it; the timing
 * settings are plan measure's (cmd_measure.c).
 */
#include "measure_local.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "work.h"
#ifdef PLAN_HAVE_BACKEND
#include "backend.h"
#endif

struct measure_local {
#ifdef PLAN_HAVE_BACKEND
    bk_ctx *ctx;
#endif
    int gpus;
    char device[256];
};

cm_status measure_local_open(measure_local **out, int ngpus, measure_local_failure *why,
                             char *err, size_t errlen)
{
    *out = NULL;
    *why = MEASURE_LOCAL_FAILED;
#ifndef PLAN_HAVE_BACKEND
    (void)ngpus;
    *why = MEASURE_LOCAL_NO_BACKEND;
    return cm_fail(err, errlen, CM_EINVAL,
                   "this plan was built without the CUDA backend (nvcc, cuBLAS and NCCL were not "
                   "found at meson setup), so it cannot measure: see backend/README.md");
#else
    if (bk_device_count() == 0) {
        *why = MEASURE_LOCAL_NO_GPU;
        return cm_fail(err, errlen, CM_EINVAL,
                       "no CUDA GPU found: measuring runs the plans on local GPUs");
    }
    measure_local *ml = calloc(1, sizeof *ml);
    if (!ml) return cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
    cm_status st = bk_open(&ml->ctx, ngpus, err, errlen);
    if (st != CM_OK) {
        free(ml);
        /* under MPI the other processes would wait for this one */
        if (bk_world_launched()) *why = MEASURE_LOCAL_FAILED_WORLD;
        return st;
    }
    if (bk_processes(ml->ctx) > 1) {
        /* Many plans, a fit and a CSV per run: one process, which drives all local GPUs. */
        bool root = bk_is_root(ml->ctx);
        bk_close(ml->ctx);
        free(ml);
        bk_world_finalize();
        if (!root) {
            *why = MEASURE_LOCAL_NOT_FIRST;
            if (errlen) err[0] = '\0';
            return CM_EINVAL;
        }
        return cm_fail(err, errlen, CM_EINVAL,
                       "measuring many plans (plan refine, plan bench --measure) runs in one "
                       "process that drives all local GPUs: start it without mpirun/srun; plan "
                       "measure and plan calibrate run under mpirun/srun");
    }
    ml->gpus = bk_ngpus(ml->ctx);
    snprintf(ml->device, sizeof ml->device, "%s", bk_device_name(ml->ctx));
    *out = ml;
    *why = MEASURE_LOCAL_OPENED;
    return CM_OK;
#endif
}

void measure_local_close(measure_local *ml)
{
    if (!ml) return;
#ifdef PLAN_HAVE_BACKEND
    bk_close(ml->ctx);
#endif
    free(ml);
}

int measure_local_gpus(const measure_local *ml) { return ml ? ml->gpus : 0; }
const char *measure_local_device(const measure_local *ml) { return ml ? ml->device : ""; }

bool measure_local_runs_whole(const model_spec *m, const system_spec *sys,
                              const training_spec *t, const layout *l, int local_gpus,
                              char *err, size_t errlen)
{
    if (l->offload) {
        cm_fail(err, errlen, CM_EINVAL, "CPU offload is not measured by the backend");
        return false;
    }
    work_plan *w = malloc(sizeof *w);
    if (!w) return false;
    cm_status st = work_plan_build(m, sys, t, l, w, err, errlen);
    free(w);
    if (st != CM_OK) return false;
    bool whole;
    if (work_local_dp(l, local_gpus, &whole, err, errlen) == 0) return false;
    if (!whole)
        cm_fail(err, errlen, CM_EINVAL,
                "the backend would run only a slice of it on %d GPUs (pipeline stage 0 or part "
                "of the data-parallel ranks)",
                local_gpus);
    return whole;
}

cm_status measure_local_run(measure_local *ml, const model_spec *m, const system_spec *sys,
                            const training_spec *t, const layout *l, int steps,
                            measure_local_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
#ifndef PLAN_HAVE_BACKEND
    (void)ml, (void)m, (void)sys, (void)t, (void)l, (void)steps;
    return cm_fail(err, errlen, CM_EINVAL, "this plan was built without the CUDA backend");
#else
    work_plan *w = malloc(sizeof *w);
    bk_measure_result *r = malloc(sizeof *r);
    cm_status st = w && r ? CM_OK : cm_fail(err, errlen, CM_ENOMEM, "out of host memory");
    if (st == CM_OK) st = work_plan_build(m, sys, t, l, w, err, errlen);
    if (st == CM_OK) {
        char name[256];
        output_layout_line(&w->est, name, sizeof name);
        bk_timing tm = bk_timing_default();
        tm.repeats = 5; /* as plan measure (cmd_measure.c) */
        tm.warmup = 2;
        st = bk_measure(ml->ctx, w, name, steps, &tm, r, err, errlen);
    }
    if (st == CM_OK) {
        out->whole = r->whole;
        out->gpus_used = r->gpus_used;
        out->step_s = r->step_s;
        out->step_spread = r->step_spread;
        out->peak_memory_bytes = r->peak_used_bytes;
        out->compute_s = r->compute_s;
        out->exposed_comm_s = r->exposed_comm_s;
        out->optimizer_s = r->optimizer_s;
        out->framework_s = r->component_s[WC_FRAMEWORK];
        out->predicted_step_s = w->est.time.step_s;
        out->predicted_memory_bytes = w->est.memory.total_bytes;
    }
    free(w);
    free(r);
    return st;
#endif
}
