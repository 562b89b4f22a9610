/*
 * work_rows.h — the row counts of torchtitan's per-expert loop in plan measure's step (issue 14).
 *
 * An untrained router gives each local expert a different row count every step, and every
 * expert GEMM takes that count as a dimension: a count the process has not run before is a GEMM
 * shape new to cuBLAS, whose algorithm heuristic then costs the host ~140 us a call
 * (bench/results/meas26_2026-11-29 section 3b, bench/results/ep26_2026-11-29). The cost model
 * prices that as `--moe-new-counts S` (training_spec.moe_new_count_share: the share of a step's
 * per-expert counts new to the process) times host.gemm_new_shape_s (expert_loop.h). plan
 * measure runs it instead of spinning it: each layer's forward of a micro-batch draws the local
 * experts' counts here, the share S of them new (never issued before by this process), the rest
 * the balanced count the cost model prices (seen from the first step on), and the loop's GEMMs
 * run at those counts through cuBLAS (bk_loop.c), which pays for its heuristic itself.
 *
 * New counts come in pairs c0 + d, c0 - d with d not used before, so every pass's rows add up
 * to the balanced c0 * experts (the GPU work and the buffers the cost model sizes stay the
 * same) and every count lies in [1, 2 c0 - 1]. The share is kept over the passes (a fraction
 * carried to the next pass) in whole pairs; once d reaches c0 no new pair is left and the
 * remaining counts are c0 (`exhausted` counts them). Plain C, unit-tested without a GPU
 * (tests/backend/test_work_rows.c).
 */
#ifndef PLAN_BACKEND_WORK_ROWS_H
#define PLAN_BACKEND_WORK_ROWS_H

typedef struct {
    int c0;           /* balanced rows per expert (work_plan.expert_rows) */
    int experts;      /* local experts (the looped items' batch) */
    double share;     /* share of the counts new to the process, 0..1 */
    double carry;     /* new counts owed by earlier passes (fraction of a pair and more) */
    int next_d;       /* the next offset not used yet (1, 2, ...) */
    long issued_new;  /* new counts handed out so far */
    long exhausted;   /* new counts owed but not handed out (no unused offset left) */
} work_rows;

void work_rows_init(work_rows *r, int c0, int experts, double share);

/* One pass's counts (one MoE layer's forward of one micro-batch) into counts[experts], and which
 * are new into is_new[experts] (may be NULL). Returns how many are new. */
int work_rows_next(work_rows *r, int *counts, unsigned char *is_new);

#endif
