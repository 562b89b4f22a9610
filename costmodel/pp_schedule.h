/*
 * pp_schedule.h — what a pipeline schedule costs in closed form: its bubble and the
 * micro-batches of activations each stage holds (issue 19). The step simulator runs the same
 * schedules op by op (schedule.h gives the order); this is the closed form the search ranks
 * every layout by, and the memory model's in-flight count.
 *
 * Schedules (torch.distributed.pipelining, pytorch 1fd7abc torch/distributed/pipelining/
 * schedules.py; Megatron-LM runs the first two):
 *   1F1B             p - s - 1 warm-up forwards, then one forward one backward (PipeDream-Flush;
 *                    Narayanan et al. 2021 Sec. 2.2.1). Bubble (p-1)(F+B); stage s holds
 *                    min(p - s, m) micro-batches.
 *   Interleaved1F1B  v chunks per rank, looped (Sec. 2.2.2). Bubble (p-1)(F+B)/v; the first
 *                    stage holds p (1 + (p-1)/(p v)) (Korthikanti et al. 2022 Sec. 4.2.3).
 *                    Under torch's runtime (torchtitan) plus (v-1) p (p-2) chunk forwards
 *                    (F/v each): _PipelineScheduleRuntime issues every send and receive in its
 *                    lowered order on one NCCL stream (pp_p2p_order.h), and rank 0's send of
 *                    micro-batch i waits behind its receive of micro-batch i-1's chunk-1 input,
 *                    which arrives once i-1 has crossed all p ranks: the first chunk's p
 *                    micro-batches leave rank 0 (p-1) chunk forwards apart instead of one, so
 *                    the last rank's first backward starts at p^2 chunk forwards instead of
 *                    2p, p (p-2) later, once per chunk boundary (v-1). Measured: the last rank's
 *                    warm-up micro-batches 20 ms apart against one 7 ms forward (pp 4, v 2;
 *                    bench/README.md "Pipeline steps measured rank by rank", point 4); the
 *                    step simulator, which runs torch's order op by op, agrees within 2% at
 *                    p 2-16, v 2-4 (bench/results/fid10_2026-11-28/README.md). Megatron's
 *                    schedule keeps (p-1)/v.
 *   GPipe            every forward, then every backward (Huang et al. 2019). Bubble (p-1)(F+B);
 *                    every stage holds all m micro-batches.
 *   ZBVZeroBubble    2 chunks per rank in a V (rank s holds stages s and 2p-1-s); the backward
 *                    split into input gradient I and weight gradient W, W deferred into the
 *                    bubbles (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", arXiv
 *                    2401.10241, Sec. 6). With chunk times F', I', W' the bubble is that of
 *                    ZB-H2, (p-1)(F' + I' - 2W'), zero when F' = I' = W' (the schedules.py
 *                    docstring: "zero bubble property only if time forward == time backward
 *                    input == time backward weights"); a chunk is half a stage, so in stage
 *                    times (p-1)(F + I - 2W)/2, never below 0. Every rank runs 2p chunk
 *                    forwards before its first backward (schedules.py warm-up: 2(p-s)-1 of
 *                    chunk 0, s pairs, then chunk 1's first): p stage-micro-batches held on
 *                    every stage, the same peak as 1F1B's first stage (Sec. 6: "the same peak
 *                    memory as 1F1B"). Under torch's runtime the split backward keeps more
 *                    (W's bf16 weight gradients, I's output gradients): pp_zbv_memory.h.
 *   DualPipeV        DeepSeek's DualPipe cut in half into a V (schedules.py ScheduleDualPipeV;
 *                    deepseek-ai/DualPipe README): bubble (PP/2-1)(F&B + B - 3W) for DualPipe
 *                    on PP ranks, with B the full backward; the V on p ranks is DualPipe on 2p,
 *                    so (p-1)(F&B + B - 3W) in chunk times. This model does not overlap a
 *                    chunk's forward with another's backward (F&B = F + B: the overlap hides
 *                    EP communication, which the recipe prices as exposed), so in stage times
 *                    (p-1)(F + 2I - W)/2. Its warm-up (steps 1-2 of schedules.py) also runs
 *                    2p chunk forwards before a backward, and each overlapped forward+backward
 *                    pair holds one chunk more while both run: p + 1/2 on every stage (DualPipe's
 *                    README: PP + 1 chunks per device).
 *
 * F, I, W are a stage's per-micro-batch forward, input-gradient and weight-gradient compute;
 * the bubble of the composed per-micro-batch time t_mb (compute and exposed communication) is
 * t_mb times the schedule's share of F + I + W.
 */
#ifndef PLAN_PP_SCHEDULE_H
#define PLAN_PP_SCHEDULE_H

#include "layout.h"

/* A stage's compute per micro-batch, split as the zero-bubble schedules split the backward. */
typedef struct {
    double fwd_s;    /* F */
    double input_s;  /* I: backward to the inputs (dgrad, attention backward, elementwise) */
    double weight_s; /* W: backward to the weights (the Linears' wgrad GEMMs) */
} pp_stage_work;

/* The closed form's pipeline bubble of one step: t_mb is the busiest stage's per-micro-batch
 * time (what a bubble of (p-1) micro-batches is made of), w its compute split. 0 with pp 1. */
double pp_schedule_bubble_s(const layout *l, double t_mb_s, const pp_stage_work *w);

/* Micro-batches of activations stage s holds at its peak under l's schedule (a fraction under
 * the interleaved schedule), for `microbatches` per step (at least 1). */
double pp_schedule_in_flight(const layout *l, int microbatches, int stage);

/* The schedule's bubble as a fraction of the ideal time m (F + I + W), for tests and
 * explanations: (p-1)/m for 1F1B, (p-1)/(v m) interleaved, and so on. */
double pp_schedule_bubble_fraction(const layout *l, int microbatches, const pp_stage_work *w);

#endif
