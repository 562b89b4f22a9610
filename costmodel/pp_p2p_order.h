/*
 * pp_p2p_order.h — where torch.distributed.pipelining puts each stage's sends and receives
 * among its compute ops (issue 19), so the step simulator can run them as torch does.
 *
 * torch's multi-stage schedules (ScheduleInterleaved1F1B and the others built on
 * _PipelineScheduleRuntime) lower the per-rank compute order into compute + SEND/RECV actions
 * (pytorch/pytorch torch/distributed/pipelining/schedules.py at
 * 00722e648b740f91d0e71494baa17891749fd291, _add_send_recv): the ranks take turns, each placing
 * its next compute op once the receive of that op's input has been placed on it; placing an op
 * whose output goes to another rank places its SEND right after it and the receiver's RECV at
 * the end of the receiver's list so far. _PipelineScheduleRuntime._step_microbatches then issues
 * every SEND/RECV as its own batch_isend_irecv on the process group's NCCL stream, in that
 * order. What that costs is in sim.c (p2p_stream); the measured effect is in
 * bench/pp_torch_order.py. The torch maintainers describe the same effect: pytorch PR 165664
 * ("the recv blocks the send on the communication stream which causes a cascading bubble",
 * closed unmerged), PR 172833 ("move RECV right before F/B", closed unmerged) and issue 188833
 * ("Interleaved1F1B warmup head-of-line bubble from front-loaded RECV", open 2026-07).
 */
#ifndef PLAN_PP_P2P_ORDER_H
#define PLAN_PP_P2P_ORDER_H

#include <stdbool.h>

#include "schedule.h"

/* One SEND or RECV on a stage. The transfer is named by the virtual stage that receives and
 * the micro-batch; `after` compute ops of the stage are placed before it (it is issued once
 * they are). */
typedef struct {
    int after;
    int dest_vstage;
    int microbatch;
    bool send;
    bool backward; /* gradients (to dest_vstage = k - 1); else activations (k + 1) */
} pp_p2p_op;

/* The most SEND/RECV ops one stage gets: one per compute op sent, one per compute op of a
 * neighbour received. */
int pp_p2p_max_ops(int v, int m);

/*
 * Lower the compute orders of p stages (stage s: nops[s] ops at sched + s * per_stage, chunk c
 * of stage s being virtual stage c * p + s: looped schedules only) into each stage's p2p ops:
 * out + s * pp_p2p_max_ops(v, m), count in nout[s]. Returns 0, or -1 when the lowering stalls
 * (an order whose inputs never arrive).
 */
int pp_p2p_lower(int p, int v, int m, const schedule_op *sched, int per_stage, const int *nops,
                 pp_p2p_op *out, int *nout);

#endif
