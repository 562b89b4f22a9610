/*
 * cuda_graphs.h — torchtitan's CUDA graph of a training step (layout.cuda_graphs): whether a
 * torchtitan layout runs its forward + loss + backward as one graph replay, the rules that say
 * where it can, and what it changes in the step's price.
 *
 * Why: torchtitan's core Trainer captures each micro-batch's forward + loss + backward in a CUDA
 * graph by default since pytorch/torchtitan f84224af0 ("Add CUDA graph capture to the core
 * Trainer", 2026-08; b5bcd76 torchtitan/config/configs.py TrainingConfig.disable_cuda_graphs =
 * False, torchtitan/trainer.py wraps forward_backward_step's body with
 * torchtitan/distributed/cudagraph.py wrap_with_cuda_graph). One eager warm-up call on a side
 * stream, then capture into a private memory pool shared by the wrappers, then replay; the
 * gradient clipping and the optimizer step stay eager, and zero_grad(set_to_none=False) keeps
 * the gradients' addresses. torchtitan refuses it (trainer.py Config._validate_cuda_graphs) with
 * pipeline parallelism and with an expert-parallel token dispatcher that synchronizes with the
 * host (all but HybridEP with non_blocking_capacity_factor and MinimalAsyncEP), and FSDP2's
 * fsdp_reshard_after_forward "always" fails at capture (f84224af0's commit message:
 * CUDA_ERROR_STREAM_CAPTURE_ISOLATION; "default" and "never" work).
 *
 * plan's layout: stored CUDA_GRAPHS_AUTO (the default) follows torchtitan (on where it is
 * allowed, off elsewhere: derived, not searched); --cuda-graphs / --no-cuda-graphs set it.
 * plan's reshard_after_forward at PP 1 is torchtitan's "default" policy for the decoder layers,
 * which emit_torchtitan.c writes when graphs are on; "always" is only a checked file's spelling
 * (check_torchtitan.c). plan prices torchtitan's EP with its default dispatcher, the blocking
 * all-to-all (host_dispatch.c q_sync): EP > 1 has graphs off.
 */
#ifndef PLAN_CUDA_GRAPHS_H
#define PLAN_CUDA_GRAPHS_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "model.h"
#include "system.h"

/* torchtitan would run l under CUDA graphs by default (its framework, PP 1, EP 1). */
bool cuda_graphs_allowed(const layout *l);
/* l runs under CUDA graphs: the stored choice, or cuda_graphs_allowed() for AUTO. */
bool cuda_graphs_on(const layout *l);
/* The same as 0 / 1: the codec's resolved value of layout.cuda_graphs (layout_codec.c). */
int cuda_graphs_resolved(const layout *l);

/* The rule an explicit --cuda-graphs breaks on l, its name into *rule and the message (what is
 * wrong and the fix) into msg; false when l breaks none (AUTO and OFF never do). */
bool cuda_graphs_rule(const layout *l, const char **rule, char *msg, size_t len);

/* Host time before a graphed micro-batch's first kernel: the replay's launch (the input copies
 * and cudaGraphLaunch from Python), host.cuda_graph_replay_s of the system (measured,
 * bench/results/cg11_2026-11-28); 0 off graphs or where the preset has no figure. */
double cuda_graphs_replay_host_s(const system_spec *sys, const layout *l);

/* When the host has issued the step's last optimizer kernel under graphs, from the step's start:
 * the micro-batches' replay launches (replay_s each), then the clip's and the optimizer's host
 * time (optimizer_host.h, dtensor_step_host.h; pp 1: stage 0). local_params: this rank's
 * parameters (optimizer_host_s). The step simulator ends the optimizer no earlier (sim.h
 * sim_input.opt_host_end_s); cuda_graphs_optimizer_s is the same rule in the closed form. */
double cuda_graphs_host_issue_s(const system_spec *sys, const model_spec *m, const layout *l,
                                double local_params, int micro);

/* The optimizer step's time under graphs (pp 1: stage 0): the host launches the micro-batches'
 * replays (replay_s each) and goes on to the clip and the optimizer (optimizer_host.h, and the
 * DTensor step's, dtensor_step_host.h) while the GPU runs the graphs (graphs_gpu_s): the
 * optimizer ends at max(graphs + its GPU time opt_gpu_s, replays + its host time), so its host
 * time shows only beyond the GPU's lead. local_params: this rank's parameters (optimizer_host_s).
 * Measured (bench/results/cg11_2026-11-28): the graphed step is its forward+backward's GPU span
 * + 7.1 ms (SmolLM2-360M), where the eager step adds 16.4 ms after a host-paced backward. */
double cuda_graphs_optimizer_s(const system_spec *sys, const model_spec *m, const layout *l,
                               double opt_gpu_s, double local_params, double graphs_gpu_s,
                               int micro);

#endif
