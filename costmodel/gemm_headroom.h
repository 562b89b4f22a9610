/*
 * gemm_headroom.h — GEMMs inside a training step run faster than back to back, because the rest
 * of the step draws less power than the cap.
 *
 * A GPU at its power cap runs back-to-back GEMMs at the sustained clock (the presets'
 * gemm_efficiency_max is that rate). NVIDIA's boost lowers or raises the clock so that the board
 * stays within its power limit over the controller's averaging window; memory-bound kernels and
 * idle stretches draw less, so over a step the GEMMs get a higher clock, up to the highest boost
 * clock. Measured on one H100 (bench/gemm_power_mix.py, bench/results/duty_2026-11-27): GEMM
 * blocks of 1, 5 and 20 ms alternating with idle or memory-bound kernels give the same rate at
 * the same GEMM time fraction, so the window is longer than 20 ms and the step's average power is
 * what counts.
 *
 * The model: over the step the energy is at the cap, GEMMs run at power P_cap * r^(1/beta) when
 * their rate is r times the sustained rate (beta = gpu.gemm_power_exponent), attention kernels at
 * about the cap, memory-bound kernels at P_mem (gpu.memory_bound_power_w), idle at P_idle
 * (gpu.idle_power_w). With G the step's GEMM time at the sustained rate,
 *     (G / r) P_cap r^(1/beta) + A P_cap + M P_mem + I P_idle = P_cap (G / r + A + M + I)
 * gives  r^(1/beta) = 1 + u r,  u = [(1 - P_mem/P_cap) M + (1 - P_idle/P_cap) I
 *                                   + (1 - P_comm/P_cap) C] / G,
 * solved by fixed point, and r is capped at the burst rate (gpu.gemm_burst_ratio: GEMMs at the
 * highest clock over the sustained rate). Fitted once per GPU from the bench data, a device
 * characteristic; not a per-run factor.
 *
 * Communication (bench/coll_power.py, bench/results/mgpu8_2026-11-28, 4 x H100 on NVLink, NCCL
 * 2.28.9): exposed communication C is NCCL kernels running alone, which draw P_comm =
 * gpu.comm_power_w (all-gather 256 MiB 320 W, reduce-scatter fp32 512 MiB 334 W, all-reduce
 * 256 MiB 288 W, all-gather 32 MiB 270 W, at 1980 MHz; idle 129 W on the same host), not idle:
 * GEMMs in 5 ms blocks with the gaps filled by collectives ran at x1.096 of back to back against
 * x1.119 with the gaps idle (GEMM fraction 0.6) and x1.021 against x1.055 (0.8). Compute slowed
 * beside FSDP's collectives (recipe_price.c's contention) runs at the cap: GEMMs beside
 * back-to-back collectives drew 670-697 W at 1406-1496 MHz, the clock of GEMMs alone (1395 MHz),
 * so that time adds no headroom. Without gpu.comm_power_w exposed communication counts as idle.
 *
 * The bubble alone (sys->gemm_headroom_bubble; plan estimate's default, --gemm-headroom bubble):
 * only the pipeline bubble counts as spare (M = 0 above), and at P_comm, not P_idle: a pipelined
 * rank waits in NCCL kernels (the receive posted ahead of the compute that needs it, the
 * end-of-step all-reduce waiting for the slowest stage), which cover 98% and 93% of the waits of
 * ranks 0 and 3 in the traces below; with the wait at P_idle the critical rank 3's GEMMs came out
 * x1.123 of the sustained rate, at P_comm x1.081, measured x1.072
 * (bench/results/pp21_2026-11-29/pp_wait_power.py; the pipelined rows' step 2-3% short before). Measured inside one
 * torch.distributed.pipelining 1F1B step (pp 4, Llama-3 8B cut to 16 layers, seq 4096, 8
 * micro-batches, 4 x H100; bench/results/pp_timeline_2026-11-27/profile and profile_rank3): the
 * same kernels ran faster on rank 0, idle about half the step, than on rank 3, busy 92% of it:
 * cuDNN SDPA forward 265.8 vs 294.6 us, backward 723.6 vs 821.0 us, nvjet 320x128 NNT
 * (4096 x 4096 x 14336) 623.0 vs 652.5 us, 256x128 TNT 325.1 vs 344.0 us (5-13%; fid10's
 * bench/results/fid10_2026-11-28/README.md). The memory-bound and communication terms stay behind
 * --gemm-headroom on: with them the one-GPU and data-parallel rows go 3-8% fast
 * (bench/results/mgpu8_2026-11-28/README.md), while the idle term is what the duty-cycle bench
 * measured with idle gaps and what the pipeline ranks show. A layout without a pipeline has no
 * bubble and keeps the sustained rate. plan search prices no headroom (estimate_search.c): it
 * ranks every layout at the sustained rate.
 */
#ifndef PLAN_GEMM_HEADROOM_H
#define PLAN_GEMM_HEADROOM_H

#include <stdbool.h>

#include "estimate_internal.h"
#include "system.h"

/* The system has the measured figures the headroom needs (its power fit and burst ratio). */
bool gemm_headroom_fitted(const system_spec *sys);

/* --gemm-headroom on or bubble, and the system has the measured figures. */
bool gemm_headroom_applies(const system_spec *sys);

/* The power cap the sustained rate holds at: gpu.power_limit_w below the TDP, else gpu.tdp_w. */
double gemm_headroom_cap_w(const system_spec *sys);

/* The highest multiplier on the sustained GEMM rate (the burst rate over the sustained rate at
 * the cap in use: under a lower --power-limit the sustained rate is lower, the burst the same). */
double gemm_headroom_max_rate(const system_spec *sys);

/* The multiplier on the sustained GEMM rate over a step holding gemm_s of GEMMs (at the sustained
 * rate), memory_s of memory-bound kernels and idle_s with the GPU idle (other time, attention,
 * is at the cap and adds no headroom): the root r >= 1 of r^(1/beta) = 1 + u r, at most
 * gemm_headroom_max_rate. 1 when the system has no fit or gemm_s <= 0. */
double gemm_headroom_rate(const system_spec *sys, double gemm_s, double memory_s, double idle_s);

/* The step's time split (seconds per step, at the sustained GEMM rate) that the rate is computed
 * from; filled by gemm_headroom_step. */
typedef struct {
    double gemm_s, attention_s, memory_s, idle_s;
    double comm_s;     /* exposed NCCL time (at gpu.comm_power_w) */
    double at_cap_s;   /* compute slowed beside collectives (FSDP contention): no headroom */
} gemm_headroom_mix;

/* gemm_headroom_rate with exposed communication comm_s drawing gpu.comm_power_w (idle power
 * where the system has none). */
double gemm_headroom_rate_comm(const system_spec *sys, double gemm_s, double memory_s,
                               double idle_s, double comm_s);

/* Re-prices out (estimate_time_assemble's, from worst at the sustained rate) with the GEMM rate
 * the step's own mix allows: the GEMM and attention time of the worst stage found by pricing it
 * again with each kernel class faster, the memory-bound time the rest of its compute plus the
 * optimizer, idle the exposed communication and the pipeline bubble. Leaves out unchanged where
 * gemm_headroom_applies is false. mix (may be NULL) receives the split. */
void gemm_headroom_step(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, const stage_time *worst, estimate *out,
                        gemm_headroom_mix *mix);

#endif
