/*
 * schedule.h — the order in which a pipeline stage runs its forward and backward chunks under
 * Megatron-LM's 1F1B and interleaved 1F1B schedules. One definition for the step simulator
 * (costmodel/sim.c) and for the backend that executes the schedule (backend/work.c).
 */
#ifndef PLAN_SCHEDULE_H
#define PLAN_SCHEDULE_H

#include <stdbool.h>

/* One forward or backward of a micro-batch through one chunk (virtual stage) of a stage. */
typedef struct {
    int microbatch;
    int chunk;
    bool backward;
} schedule_op;

/*
 * The order stage s (of p, with v chunks each) runs its 2*m*v ops in, for m micro-batches.
 * Non-interleaved 1F1B (Narayanan et al. 2021, Sec. 2.2.1, PipeDream-Flush; Megatron-LM
 * schedules.py forward_backward_pipelining_without_interleaving): p - s - 1 warm-up forwards,
 * then one forward and one backward alternately, then the remaining backwards (cool-down).
 * Interleaved 1F1B (Sec. 2.2.2; forward_backward_pipelining_with_interleaving): forwards go
 * through groups of p micro-batches chunk by chunk, backwards the same with the chunks reversed
 * (get_model_chunk_id); warm-up (p - s - 1) * 2 + (v - 1) * p forwards, or all of them when
 * m == p. out holds 2*m*v entries. Returns the number of ops.
 */
int schedule_pipeline(int p, int v, int m, int s, schedule_op *out);

#endif
