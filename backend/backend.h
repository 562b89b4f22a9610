/*
 * backend.h — libbackend: runs work on the local GPUs with cuBLAS and NCCL and measures it in
 * the cost model's units (seconds, bytes/s, FLOP/s).
 *
 * One process drives every local GPU from one thread: each GPU has a compute stream, a
 * communication stream and a cuBLAS handle; NCCL communicators are made per group
 * (bk_comm_group: ncclCommInitRank for each member in one group call), placed in Megatron's rank
 * order. Launched by mpirun or srun, several processes (on one or several nodes) each drive their
 * share of the GPUs the same way: every process walks the same work in the same order and
 * launches only its own GPUs' part; MPI bootstraps NCCL and reduces the timings (bk_world.h). Every CUDA, cuBLAS
 * and NCCL return is checked; an error names the call (and, in bk_measure, the plan).
 * NCCL_NVLS_ENABLE is set to 0 before NCCL starts when the environment leaves it unset: NVLink
 * multicast must stay off on the machines this runs on.
 *
 * Method (the device notes' METHOD.md): warm-up first, CUDA events around back-to-back
 * launches, the median of repeats, random never-zero data, and a correctness check: GEMM
 * against a naive fp32 reference on small shapes, collectives against the exact expected
 * values of an integer pattern.
 */
#ifndef PLAN_BACKEND_H
#define PLAN_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "bk_world.h"
#include "collective.h"
#include "status.h"
#include "trace.h"
#include "work.h"

typedef struct bk_ctx bk_ctx;

/* Number of usable CUDA devices; 0 when there is no driver or no GPU (never an error). */
int bk_device_count(void);

/* Open ngpus devices (0: all) for this process. Launched by mpirun or srun (and built with MPI),
 * every process opens ngpus GPUs of its node (0: the node's GPUs shared evenly among its
 * processes) and the run's GPUs are all processes' GPUs in process order (bk_world.h). Under MPI a
 * failure here leaves the other processes waiting: end the run with bk_world_abort. */
cm_status bk_open(bk_ctx **out, int ngpus, char *err, size_t errlen);
void bk_close(bk_ctx *ctx);
int bk_ngpus(const bk_ctx *ctx); /* GPUs of the run, all processes */
bool bk_is_root(const bk_ctx *ctx); /* process 0: the one that prints and writes files */
int bk_processes(const bk_ctx *ctx);
int bk_process(const bk_ctx *ctx);
const char *bk_device_name(const bk_ctx *ctx);
double bk_device_memory_bytes(const bk_ctx *ctx);
bool bk_has_fp8(const bk_ctx *ctx); /* the GPUs have FP8 tensor cores (sm_89 and later) */
bool bk_has_fp8_block(const bk_ctx *ctx); /* Hopper (sm_90): cuBLASLt's 1x128/128x128 FP8 */

typedef struct {
    int warmup;      /* untimed launches first */
    int repeats;     /* timed repeats; the median is reported */
    double min_repeat_s; /* each repeat runs enough back-to-back launches to last this long */
    double warmup_s;     /* GEMMs: keep warming up this long (power/clock steady state), 0: none */
    bool host_ahead;     /* GEMMs: the host issues a repeat's launches before the GPU starts them
                            (bk_timing.h), so a repeat times the GPU's back-to-back work alone */
} bk_timing;

bk_timing bk_timing_default(void);

typedef struct {
    double time_s;   /* median time of one GEMM */
    double spread;   /* (max - min) / median over the repeats */
    double flops_per_s;
    double check_error; /* FP8: relative error of sampled output rows of the timed GEMM against
                           an fp32 product of its e4m3 operands; bf16: 0 (bk_gemm_check) */
    double host_s;   /* host seconds issuing one launch (median repeat) */
} bk_gemm_result;

/* Time one bf16 GEMM (fp32 accumulate) of the given form on device dev. Operands rotate among
 * enough copies to exceed the L2 cache. */
cm_status bk_gemm_time(bk_ctx *ctx, int dev, work_gemm_form form, long m, long n, long k,
                       int batch, const bk_timing *tm, bk_gemm_result *out, char *err,
                       size_t errlen);

/* Time one FP8 GEMM C[m,n] = sa sb A[m,k] B[n,k]^T (e4m3 operands with per-tensor fp32 scales,
 * bf16 C, fp32 accumulation, cuBLASLt) on device dev: every form (fwd, dgrad, wgrad) runs this
 * K-major layout on Hopper, so a shape is its m, n, k. Operands rotate among copies as for bf16;
 * afterwards sampled rows of the result are checked (out->check_error). */
cm_status bk_gemm_time_fp8(bk_ctx *ctx, int dev, long m, long n, long k, int batch,
                           const bk_timing *tm, bk_gemm_result *out, char *err, size_t errlen);

/* Time one blockwise FP8 GEMM C[m,n] = A[m,k] B[n,k]^T (DeepSeek-V3's recipe: A's fp32 scales
 * per 1x128 block, B's per 128x128 block when b_128x128 (forward and dgrad) else per 1x128 block
 * (wgrad); e4m3, bf16 C, cuBLASLt 12.9+ on Hopper) on device dev, operands rotating as for FP8,
 * sampled rows checked afterwards against an fp32 product applying each block's scale. */
cm_status bk_gemm_time_fp8_block(bk_ctx *ctx, int dev, bool b_128x128, long m, long n, long k,
                                 const bk_timing *tm, bk_gemm_result *out, char *err,
                                 size_t errlen);

/* Relative Frobenius error of one blockwise FP8 GEMM (random e4m3 operands, random power-of-two
 * block scales, output poisoned), every output element against that fp32 product. */
cm_status bk_gemm_check_fp8_block(bk_ctx *ctx, int dev, bool b_128x128, long m, long n, long k,
                                  double *rel_err, char *err, size_t errlen);

/* Relative Frobenius error of one FP8 GEMM (random e4m3 operands, power-of-two scales, output
 * poisoned) against a naive fp32 product of the dequantized operands. */
cm_status bk_gemm_check_fp8(bk_ctx *ctx, int dev, long m, long n, long k, int batch,
                            double *rel_err, char *err, size_t errlen);

/* Run one eager kernel of access pattern a (elementwise.h) on device dev, the way plan measure
 * runs it (kernels_ew.cu), over host operands: in_a, in_b and out hold ew_operand_elems(a, k)
 * elements of esize[k] bytes each (bf16 as raw 16-bit values, fp32 as float; NULL where absent).
 * out comes in as the output buffer's initial content (elements the kernel does not write keep
 * it) and returns the result. */
cm_status bk_ew_run(bk_ctx *ctx, int dev, const ew_access *a, const void *in_a, const void *in_b,
                    void *out, char *err, size_t errlen);

/* Relative Frobenius error ||C - ref|| / ||ref|| of cuBLAS against a naive fp32 reference. */
cm_status bk_gemm_check(bk_ctx *ctx, int dev, work_gemm_form form, long m, long n, long k,
                        int batch, double *rel_err, char *err, size_t errlen);

typedef struct {
    double bytes;           /* the size run: `bytes` rounded down to whole per-rank chunks */
    double time_s;          /* median time of one collective (slowest rank) */
    double spread;
    double algbw_bytes_per_s;  /* bytes / time */
    double busbw_bytes_per_s;  /* algbw * bus_factor(n) (collective.h) */
    unsigned long long wrong;  /* elements that differ from the expected result */
} bk_coll_result;

/* Time one collective of nccl-tests size `bytes` (bf16) over devices 0..group-1, then check the
 * result. */
cm_status bk_coll_time(bk_ctx *ctx, collective_op op, int group, size_t bytes,
                       const bk_timing *tm, bk_coll_result *out, char *err, size_t errlen);

#define BK_MEASURE_MAX_STAGES 16

/* A measured plan step. */
typedef struct {
    int gpus_used;
    int dp_measured;           /* data-parallel ranks actually run (<= planned dp) */
    int stages_run;            /* pipeline stages run: pp, or 1 (stage 0 alone) */
    bool whole;                /* the whole layout ran (else a slice: see work_local_dp) */
    double step_s;             /* median of the timed steps (slowest GPU); host-paced when
                                  host_paced */
    double step_spread;
    bool host_paced;           /* the steps were issued at the host's pace (work_plan.host_pace,
                                  bk_step.c) */
    char host_pace_note[160];  /* on, or why off */
    double step_unpaced_s;     /* the same steps issued as fast as CUDA takes them (the GPU
                                  alone); == step_s's figure when not paced */
    double step_unpaced_spread;
    double component_s[WC_COUNT]; /* isolated item times x their counts per step */
    double compute_s;          /* gemm + attention + elementwise + compute-stream copies */
    double copies_compute_s;   /* of component_s[WC_FRAMEWORK], FSDP2's compute-stream copies
                                  (copy-out, reduce-scatter copy-in) */
    double exposed_comm_s;     /* step - compute - optimizer - bubble, >= 0 */
    double peak_used_bytes;    /* max over GPUs of total - free (cudaMemGetInfo) at the end */
    double baseline_used_bytes;/* after context, cuBLAS and NCCL set-up, before the plan's pools */
    double pool_bytes;         /* the plan's arena (bk_pools.h): persist_bytes + phase_bytes */
    double extra_bytes;        /* beyond the estimate's peak tensors (named in the report) */
    double persist_bytes;      /* the arena's persistent part: weights and optimizer states */
    double phase_bytes;        /* its phase region, shared by the step's phases */
    double touched_bytes;      /* of the phase region, what the step's kernels touch at once */
    /* the estimate's phases beyond its weights and optimizer states (without its framework
     * bytes) that the phase region is sized by: training peak, end of the backward (0: none),
     * optimizer step */
    double phase_train_bytes, phase_bwd_end_bytes, phase_opt_bytes;
    /* Each item's measured time, same order as the work lists. */
    double layer_fwd_s[WORK_MAX_ITEMS], layer_bwd_s[WORK_MAX_ITEMS];
    double head_fwd_s[WORK_MAX_ITEMS], head_bwd_s[WORK_MAX_ITEMS];
    double moe_fwd_s[WORK_MAX_ITEMS], moe_bwd_s[WORK_MAX_ITEMS];
    double gather_s, reduce_s; /* one layer unit's DP collectives, isolated */
    double optimizer_s;
    /* Pipeline, from one instrumented step after the timed ones (events around every chunk on
     * each stage's first GPU). busy: the stage's chunks; pp wait: its compute stream blocked on
     * sends (non-interleaved 1F1B); bubble: the rest of the pipeline phase (step start to the
     * end of the last chunk of any stage). */
    double instrumented_step_s;
    double pipeline_s;         /* the pipeline phase */
    int critical_stage;        /* the busiest stage */
    double bubble_s;           /* the critical stage's bubble (0 without a pipeline) */
    double pp_exposed_s;       /* the critical stage's time blocked on sends */
    double stage_busy_s[BK_MEASURE_MAX_STAGES], stage_bubble_s[BK_MEASURE_MAX_STAGES];
    double stage_pp_wait_s[BK_MEASURE_MAX_STAGES];
    double p2p_s;              /* one activation transfer between adjacent stages, isolated */
    int pp_slots;              /* receive buffers per direction */
    int pp_checked;            /* transfers whose received bytes were compared with the sent */
    unsigned long long pp_wrong_bytes; /* bytes that differ (0: every transfer exact) */
    /* torchtitan's per-expert loop under --moe-new-counts (bk_loop.c), paced steps, the first
     * GPU of this process: cuBLAS calls at a shape the loop had not issued before and at one it
     * had, the median host time of each, and new counts owed that no unused pair was left for */
    int loop_new_calls, loop_seen_calls;
    double loop_new_call_s, loop_new_call_mean_s, loop_seen_call_s;
    long loop_new_exhausted;
} bk_measure_result;

/* Allocate what the plan holds on each GPU and execute `steps` timed training steps of w (after
 * a warm-up step), then time each distinct item alone. A plan that does not fit fails with
 * CM_ENOMEM and err naming the plan and the shortfall. `plan_name` is used in messages. */
cm_status bk_measure(bk_ctx *ctx, const work_plan *w, const char *plan_name, int steps,
                     const bk_timing *tm, bk_measure_result *out, char *err, size_t errlen);

/* The same, and with trace != NULL (trace_init'ed by the caller, who frees it) the instrumented
 * step as trace spans: every chunk, work item, pipeline send, data-parallel collective and the
 * optimizer of each stage's first GPU, from that GPU's step start (trace.h). */
cm_status bk_measure_traced(bk_ctx *ctx, const work_plan *w, const char *plan_name, int steps,
                            const bk_timing *tm, trace_list *trace, bk_measure_result *out,
                            char *err, size_t errlen);

/* plan measure's pipeline and MoE rows (measured beside predicted: EP all-to-alls, PP
 * send/recv, time blocked on sends, bubble, per-stage busy/bubble, the transfer check) as text
 * into buf (returns the length it needed), and as a JSON object (caller owns it). */
size_t bk_measure_extra_text(const work_plan *w, const bk_measure_result *r, char *buf,
                             size_t len);
json_t *bk_measure_extra_json(const work_plan *w, const bk_measure_result *r);

#endif
