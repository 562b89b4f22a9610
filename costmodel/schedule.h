/*
 * schedule.h — the order in which a pipeline stage runs its forward and backward chunks under
 * Megatron-LM's 1F1B and interleaved 1F1B schedules, and (issue 19) torch.distributed.
 * pipelining's GPipe, ZBVZeroBubble and DualPipeV. One definition for the step simulator
 * (costmodel/sim.c) and for the backend that executes the schedule (backend/work.c).
 */
#ifndef PLAN_SCHEDULE_H
#define PLAN_SCHEDULE_H

#include <stdbool.h>

#include "layout.h"

/* What part of the backward an op runs: all of it, or (zero-bubble schedules) the gradient
 * of the inputs (I) and, later, the gradient of the weights (W). */
typedef enum { SCHEDULE_FULL = 0, SCHEDULE_INPUT = 1, SCHEDULE_WEIGHT = 2 } schedule_part;

/* One forward or backward of a micro-batch through one chunk (virtual stage) of a stage. */
typedef struct {
    int microbatch;
    int chunk;
    bool backward;
    unsigned char part; /* schedule_part; SCHEDULE_FULL for forwards */
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

/* The order torch.distributed.pipelining's ScheduleInterleaved1F1B runs (pytorch/pytorch
 * torch/distributed/pipelining/schedules.py at 00722e648b740f91d0e71494baa17891749fd291,
 * _calculate_single_rank_operations, _get_warmup_ops with multiply_factor 2, _get_1f1b_rank_ops):
 * rounds = max(1, m / p) of m / rounds micro-batches; warm-up (v - 1) * round + 2 (p - s - 1)
 * chunk forwards, capped at m v; forward op k runs chunk (k / round) % v, backward op k chunk
 * v - 1 - ((k - warm-up) / round) % v. For p | m with m != p this is Megatron's order above;
 * with m == p torch keeps the warm-up count where Megatron runs every forward first. v == 1 is
 * Schedule1F1B, the order above. Needs m divisible by the rounds; returns -1 otherwise. */
int schedule_pipeline_torch(int p, int v, int m, int s, schedule_op *out);

/* torch's ScheduleInterleaved1F1B rounds for m micro-batches on p stages: max(1, m / p); m must
 * be divisible by them (schedule_pipeline_torch; the layout rule and the search use the same). */
int schedule_torch_rounds(int p, long m);

/* The most ops one stage runs in a step: 2 m v, or 3 m v where the backward is split. */
int schedule_max_ops(int v, int m);

/* The order under schedule `kind` (1F1B, Interleaved1F1B as above; GPipe: all m forwards then
 * all m backwards, in micro-batch order (ScheduleGPipe); ZBVZeroBubble and DualPipeV: v == 2, chunk 0 of stage s is
 * virtual stage s, chunk 1 virtual stage 2p-1-s, the order of pytorch 1fd7abc
 * torch/distributed/pipelining/schedules.py _calculate_single_rank_operations with its empty
 * slots dropped and DualPipeV's overlapped forward+backward pairs run one after the other).
 * out holds schedule_max_ops(v, m) entries. Returns the number of ops, -1 when kind does not
 * run with p, v, m (a V schedule with v != 2). */
int schedule_pipeline_kind(layout_pp_schedule kind, int p, int v, int m, int s, schedule_op *out);

/* Virtual stage of chunk c on stage s (c * p + s looped; s or 2p-1-s in a V), and the stage
 * holding virtual stage k. */
int schedule_vstage(layout_pp_schedule kind, int p, int c, int s);
int schedule_stage_of(layout_pp_schedule kind, int p, int k);
bool schedule_is_v(layout_pp_schedule kind);

/* The most micro-batches of activations stage s holds at once under the order above, in whole
 * stages (a chunk's forward holds 1/v of them until its backward, or under a split backward its
 * W, has run): what pp_schedule_in_flight() states in closed form, counted from the order.
 * -1 when the schedule does not run with p, v, m (or out of memory). */
double schedule_peak_in_flight(layout_pp_schedule kind, int p, int v, int m, int s);

/* Megatron's combined 1F1B (the EP A2A overlap): the forward chunks stage s runs before its
 * first paired step, 2(p-s-1) + (v-1)p + 1 (schedules.py get_pp_rank_microbatches 964-970, the
 * + 1 the extra warm-up forward; 1 without pipelining, combined_1f1b.py), at most m x v; as many
 * backwards end the step unpaired. sim.c runs them all; estimate.c ep_unpaired_path_s charges
 * those on the step's critical path (the last stage's count for the slowest stage). */
int schedule_combined_unpaired(int p, int v, int m, int s);

#endif
