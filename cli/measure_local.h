/*
 * measure_local.h — one layout's training step run on the local GPUs through the backend
 * (backend/bk_measure.c, the engine of `plan measure`), for the commands that measure many plans
 * in one process: `plan measure --refine` and `plan bench --measure`. The GPUs are opened once;
 * each plan makes and frees its own memory and communicators.
 *
 * Compiles without the CUDA backend: measure_local_open() then fails saying the build has none.
 * Nothing here prints or exits: every failure is a cm_status and a message, and the command that
 * called says it and chooses its exit status.
 */
#ifndef PLAN_MEASURE_LOCAL_H
#define PLAN_MEASURE_LOCAL_H

#include <stdbool.h>
#include <stddef.h>

#include "estimate.h"

typedef struct measure_local measure_local;

typedef struct {
    bool whole;               /* the whole layout ran (else a slice: not comparable to step_s) */
    int gpus_used;
    double step_s;            /* median of the timed steps, slowest GPU */
    double step_spread;       /* (max - min) / median over them */
    double peak_memory_bytes; /* max over GPUs of total - free after the steps */
    double compute_s, exposed_comm_s, optimizer_s, framework_s; /* bk_measure's components */
    double predicted_step_s;  /* the estimate of the same layout under the system given */
    double predicted_memory_bytes;
} measure_local_result;

/* Why measure_local_open() failed, for the caller's exit status and what it must do next. */
typedef enum {
    MEASURE_LOCAL_OPENED = 0,
    MEASURE_LOCAL_NO_BACKEND,   /* built without CUDA/cuBLAS/NCCL */
    MEASURE_LOCAL_NO_GPU,       /* no CUDA GPU on this machine */
    MEASURE_LOCAL_FAILED,       /* the GPUs could not be opened (err says why) */
    MEASURE_LOCAL_FAILED_WORLD, /* as FAILED, started by mpirun/srun: the caller must end every
                                   process (bk_world_abort), or the others wait for this one */
    MEASURE_LOCAL_NOT_FIRST,    /* started by mpirun/srun, and not its first process: the first
                                   one reports; this one ends quietly (exit status 0) */
} measure_local_failure;

/* Open the first ngpus local GPUs (0: all). On failure *why says which of the above (err the
 * message, empty for MEASURE_LOCAL_NOT_FIRST). */
cm_status measure_local_open(measure_local **out, int ngpus, measure_local_failure *why,
                             char *err, size_t errlen);
void measure_local_close(measure_local *ml);
int measure_local_gpus(const measure_local *ml);
const char *measure_local_device(const measure_local *ml);

/* Can the backend run layout l whole on `local_gpus` GPUs (dense model with GQA attention, no
 * offload, tp*cp*dp*pp within the GPUs as the backend's slicing allows)? err says why not. */
bool measure_local_runs_whole(const model_spec *m, const system_spec *sys,
                              const training_spec *t, const layout *l, int local_gpus,
                              char *err, size_t errlen);

/* Run `steps` timed steps of l (after a warm-up). CM_ENOMEM: it does not fit on these GPUs;
 * CM_EINVAL: it cannot be measured here; err names the plan and the reason. */
cm_status measure_local_run(measure_local *ml, const model_spec *m, const system_spec *sys,
                            const training_spec *t, const layout *l, int steps,
                            measure_local_result *out, char *err, size_t errlen);

#endif
