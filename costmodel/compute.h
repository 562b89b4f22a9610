/*
 * compute.h — time of the GPU kernels a layer runs: GEMMs (a roofline with an achieved-
 * efficiency ceiling and a fixed per-kernel cost), fused attention, and memory-bound
 * elementwise kernels.
 *
 * Roofline: Williams, Waterman, Patterson, "Roofline: an insightful visual performance model",
 * CACM 2009 — time = max(FLOPs / compute rate, bytes / memory rate). The achieved rates are the
 * system's gemm_efficiency_max x peak and hbm_efficiency x HBM bandwidth (data/systems/README.md
 * gives their measured sources); plan calibrate (issue 4) refits them.
 */
#ifndef PLAN_COMPUTE_H
#define PLAN_COMPUTE_H

#include "layout.h"
#include "model.h"
#include "system.h"

/* One bf16 GEMM C[m,n] = A[m,k] B[k,n]. */
double compute_gemm_s(const system_spec *sys, double m, double n, double k);
/* One low-precision GEMM (FP8 / MXFP8 / NVFP4 inputs, bf16 output): the same roofline against
 * peak_flops (the format's dense peak) at gemm_efficiency_max x efficiency_ratio (the measured
 * low-precision over bf16 fraction of peak, precision.c), operands of operand_bytes each. */
double compute_gemm_lp_s(const system_spec *sys, double peak_flops, double efficiency_ratio,
                         double operand_bytes, double m, double n, double k);
/* The math term alone of compute_gemm_s (peak_bf16_flops, ratio 1) or compute_gemm_lp_s: no
 * memory term, no fixed cost (mcore_expert_gemm.h splits a GEMM's time into its parts). */
double compute_gemm_math_s(const system_spec *sys, double peak_flops, double efficiency_ratio,
                           double m, double n, double k);
/* Forward + backward (dgrad and wgrad: two GEMMs of the same FLOPs) of one GEMM. */
double compute_gemm_fwd_bwd_s(const system_spec *sys, double m, double n, double k);
/* `groups` GEMMs of one shape in one grouped kernel (Megatron --moe-grouped-gemm, torch
 * _grouped_mm): each group's roofline, one kernel's fixed cost. Measured on H100 at MoE expert
 * shapes: bench/results/moe_grouped_gemm_h100.tsv, bench/README.md "MoE expert GEMMs". */
double compute_grouped_gemm_s(const system_spec *sys, int groups, double m, double n, double k);
/* Forward + backward of the same (dgrad and wgrad each one grouped kernel). */
double compute_grouped_gemm_fwd_bwd_s(const system_spec *sys, int groups, double m, double n,
                                      double k);
/* Fused (flash) attention: forward of `flops` and backward of 2.5x (FlashAttention-2, Dao
 * 2023, Sec. 3: the backward recomputes the scores; its benchmark counts 2.5x). */
/* Multiplier on the fused attention kernels' rate: sys->attention_rate_scale (1 when unset;
 * gemm_headroom.h sets it to find the step's attention time) times the power cap's factor
 * (system_power_cap_scale: 1 at the TDP). */
double compute_attention_rate_scale(const system_spec *sys);

/* The attention core of the mean layer of a model whose sliding-window layers run the fused
 * kernel's own window: its full layers at the causal rate (fw, bw), its sliding layers at the
 * system's measured "sliding" rate over the window's FLOPs (compute.c says where the rate is
 * from). Writes *fwd_s and *bwd_s where it applies; leaves them as they are otherwise. */
void compute_sliding_attention_s(const model_spec *m, const system_spec *sys,
                                 const training_spec *t, double tokens, double head_dim,
                                 double rows, double seq_q, double fw, double bw, double *fwd_s,
                                 double *bwd_s);
double compute_flash_forward_s(const system_spec *sys, double flops);
double compute_flash_backward_s(const system_spec *sys, double flops);
/* SDPA's flash kernels with dropout_p > 0 (transformers passes the config's attention_dropout
 * while training): the mask drawn per computed score in the forward and again in the backward
 * (cuDNN's sm90 flash kernels run either way); adds causal_scores x the system's measured time a
 * score of the is_causal call (bench/results/sdpadrop24_2026-11-29) and masked_scores x its
 * time a score under an explicit mask (every score of s x s: the masked kernel computes every
 * block; bench/results/sc2step25_2026-11-29) to *fwd_s and *bwd_s; nothing where it has none. */
void compute_sdpa_dropout_add_s(const system_spec *sys, double causal_scores, double masked_scores,
                                double *fwd_s, double *bwd_s);
/* A memory-bound kernel moving `bytes` through HBM. */
double compute_stream_s(const system_spec *sys, double bytes);
/* A write-only stream of `bytes` (a fill: torch.zeros of a large buffer) at gpu.fill_efficiency
 * (measured on H200: 0.706 where c = a + b runs 0.917, bench/results/moe25_2026-11-29);
 * compute_stream_s where the system has no fill rate. */
double compute_fill_s(const system_spec *sys, double bytes);

#endif
