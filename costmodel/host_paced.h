/*
 * host_paced.h — how much of a priced step the host's kernel issue sets (issue 14).
 *
 * An eager PyTorch step (Hugging Face eager, eager torchtitan under DTensor TP, op-level SAC,
 * small models) is often paced by the CPU thread that issues its kernels, not by the GPU: the
 * cost model takes each pass as max(GPU time, host issue time) (host_dispatch.h) and adds the
 * host's optimizer and clip work (optimizer_host.h, dtensor_step_host.h). Such a step moves with
 * the machine's CPU, which a preset cannot hold: the same host-paced job ran 1.3-1.9x apart on
 * machines of one kind (H200: bench/results/tpck14_2026-11-28 0.197 against 0.284-0.305 s and
 * 1.33x for a Qwen3 TP 2 job; cp16_2026-11-28 0.302-0.459 s over ten runs of one CP 2 command;
 * sactp16_2026-11-28 0.372-0.639 s within one run; tt13_2026-11-28 up to ~1.9x), and the host's
 * speed moves from second to second on one machine: the host-speed probe that every parallel_run.py
 * record carries (bench/realruns/host_speed_probe.py, one DTensor op) read, over 15 H200 records
 * of three leases, min 28.7, quartiles 31.8 / 33.9 / 52.8, max 65.6 us: two states (10 records at
 * 28-36 us, 5 at 50-66), Q3 / Q1 1.66, the "1.7x between the quartiles" the printed line quotes
 * (bench/results/host18_2026-11-28, bench/host18_probe.py section 2). A user who reads a step time
 * should know how much of it is that.
 *
 * The figure is the step less the same layout's step on a host that issues in no time
 * (host_paced_host_scaled(sys, 0): every host time of the system at zero, which each host
 * term reads as "not measured, none"), both by estimate_layout: the host-paced part is
 * what the model charges the host, whatever term carries it (the passes' floors, the host's lead
 * carried over a micro-batch, the serial host work of a DTensor step, the optimizer's per-tensor
 * work, the CUDA-graph replay launch, Megatron-Core's MoE host time). The CPU offload's Adam
 * (host_adam_params_per_s) is CPU arithmetic, not kernel issue, and stays in both.
 */
#ifndef PLAN_HOST_PACED_H
#define PLAN_HOST_PACED_H

#include <stdbool.h>

#include "estimate.h"

/* The slower host the figures price the step on: the middle of the spread measured between
 * machines of one kind (1.3-1.9x, above); the probe's third quartile over its median is 1.56
 * (above), and the h200 preset's DTensor figures sit at the median lease (data/systems/h200.json
 * host.eager_dtensor_bwd_s), so 1.5 is the slow-quartile host. A what-if at a cited spread, not
 * a fitted figure: the step's sensitivity to the CPU, which the host-paced share understates where
 * a pass's host time is near its GPU time (then all of the pass moves with the host, little of it is "host-paced":
 * tpck14's Mistral-7B TP 2 step at 8k is 18% host-paced in the model, 0.189 s, and ran 0.197 s
 * on one H200 host and 0.284-0.305 s on two others, against 0.269 s priced at 1.5x;
 * bench/results/hostpace17_2026-11-28). */
#define HOST_PACED_SLOW_FACTOR 1.5

/* The printed line shows where the host HOST_PACED_SLOW_FACTOR times slower lengthens the step
 * by this fraction or more (the JSON has the figures always): issue 14's target for the median
 * step error. Below it, the machine's CPU moves the step less than the model's own error. It
 * takes in about every step with 10% or more host-paced (on the slower host a host-bound pass
 * grows by half its host time, more than half its host-paced part) and some with less. */
#define HOST_PACED_SHOWN_SLOWDOWN 0.05

typedef struct {
    bool priced;            /* false: the step is unpriced or untimed (nothing below) */
    double step_s;          /* the step the figures are of (e->time.step_s) */
    double gpu_only_step_s; /* the same layout on a host that issues in no time */
    double host_paced_s;    /* step_s - gpu_only_step_s (>= 0) */
    double fraction;        /* host_paced_s / step_s */
    /* the slowest stage's forward and backward passes (with the loss head and the recompute),
     * per step (micro-batches x one), and what of each the host sets: the pass less the same
     * pass on the instant host. At the sustained GEMM rate (the power headroom that plan
     * estimate prices under a pipeline is in step_s, not in this split). */
    double fwd_pass_s, bwd_pass_s;
    double host_paced_fwd_s, host_paced_bwd_s;
    double host_paced_optimizer_s; /* the optimizer step's (clip and optimizer host work) */
    double slow_host_step_s; /* the step with every host time x HOST_PACED_SLOW_FACTOR */
} host_paced;

/* sys with every host time k times its own (system.h's host_eager_launch_s ...
 * host_ckpt_dtensor_detach_s block: the times, not the ratios; host_memory_bytes and
 * host_adam_params_per_s kept); k = 0: a host that issues in no time. A new host time in
 * system.h joins the list in host_paced.c. */
system_spec host_paced_host_scaled(const system_spec *sys, double k);

/* The host-paced share of e (an estimate of m on sys: estimate_layout's, or the search's, which
 * gives the same figures). */
void host_paced_of(const model_spec *m, const system_spec *sys, const estimate *e,
                   host_paced *out);

/* Whether the printed estimate says it (priced, and the slower host lengthens the step by
 * HOST_PACED_SHOWN_SLOWDOWN or more). */
bool host_paced_shown(const host_paced *h);

#endif
