/*
 * memory_phases.h — when torch's buffers are alive at the same moment: the two moments that can
 * set a torch (FSDP2, pipelining) training peak on the stage that computes the loss, and what
 * torch's pipeline schedule keeps of each micro-batch's output.
 *
 * Why (issue: multi-GPU peak memory, bench/realruns/README.md "Peak memory on multi-GPU
 * runs"): memory.c adds each component at its own peak — the loss's fp32 buffers
 * (memory_logits_bytes) and FSDP2's gathered units and unsharded gradients — but in torch they
 * are not alive at once. The cross entropy's backward (the loss peak) runs before any
 * transformer block's pre-backward hook fires, so no block is gathered and no block gradient
 * exists then; the FSDP units in flight belong to the blocks' backward, after the loss's fp32
 * buffers are freed. Source: torch/distributed/fsdp/_fully_shard/_fsdp_state.py (pre-backward
 * hooks are registered on each unit's forward outputs, _register_pre_backward_hook; the root's
 * post-backward runs in _root_post_backward_final_callback, after the whole backward), torch
 * 2.11.
 */
#ifndef PLAN_MEMORY_PHASES_H
#define PLAN_MEMORY_PHASES_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"

/* The FSDP2 root unit's gathered bf16 parameters on stage s (embedding on the first stage,
 * final norm and output layer on the last), sharded by tp. */
double memory_root_gathered_bytes(const model_spec *m, const layout *l, int stage);

/* Of the root unit, what is gathered while the loss's backward runs on the last stage:
 *  - Hugging Face models compute the loss inside the root's forward, so the root's
 *    pre-backward hook (on the loss) re-gathers it before the cross entropy's backward: all of
 *    it;
 *  - the PyTorch-native trainers (bench/realruns/realrun.py, parallel_run.py, torchtitan's
 *    train step) compute the loss outside the model, and fully_shard(root,
 *    reshard_after_forward=True) given explicitly reshards the root after forward (torch
 *    2.11 keeps the root gathered only when the argument is left to auto: _fully_shard.py
 *    auto_reshard_after_forward = reshard_after_forward is None; _fsdp_state.py _lazy_init
 *    clears post_forward_mesh_info only when _auto_reshard_after_forward): nothing until the
 *    logits' gradient exists, after the loss's buffers are freed (fsdp_copies.h: the same
 *    reading, and bench/fsdp2_step.py's profile shows the root gathered twice a step). The
 *    peaks of the native FSDP2 runs (bench/realruns/README.md) agree within 2%; adding the
 *    root and the blocks' buffers to the loss's peak over-predicted them by 4 GiB. (torchtitan's own
 *    apply_fsdp wraps [norm, output] as a unit kept gathered: 2 V h / tp more there.)
 * Without reshard_after_forward every unit stays gathered; memory.c counts them apart. */
double memory_root_at_loss_bytes(const model_spec *m, const layout *l, int stage);

/* Bytes a torch trainer keeps of one micro-batch's logits while the blocks' backward runs: a
 * native loop that holds the bf16 logits in a local until the step returns
 * (training_spec.hold_logits: 2 bytes a logit, the same 2 of memory_logits_bytes' 14); 0 for
 * torchtitan's trainer (`del pred` before the backward) and Hugging Face (the output object is
 * dropped). */
double memory_logits_held_bytes(const model_spec *m, const training_spec *t, const layout *l);

/* torch.distributed.pipelining keeps every micro-batch's output on the last stage until the
 * step ends when schedule.step() is called with its default return_outputs=True (stage.py
 * forward_one_chunk(save_forward_output=...): `self.output_chunks.append(output)`, returned
 * merged by Schedule*.step, cleared by clear_runtime_states at the next step): the other
 * micro-batches' bf16 logits, (m - 1) x 2 x tokens x V / tp, alive at the loss peak.
 * torchtitan's trainer passes return_outputs=False (torchtitan/trainer.py, b5bcd76c6), so this
 * counts only with training_spec.pp_keep_outputs (--pp-keep-outputs: a pipelining loop of one's
 * own, as bench/realruns/parallel_run.py was before 2026-11-27 20:00 UTC). Zero off the last
 * stage, without pp, or outside torch. */
double memory_pp_held_outputs_bytes(const model_spec *m, const training_spec *t,
                                    const layout *l, int stage, int microbatches);

/* torch.distributed.pipelining's receive buffers on a torchtitan pipeline rank: PipelineStage
 * allocates one activation receive buffer (every stage but the first) and one gradient receive
 * buffer (every stage but the last) per micro-batch when the schedule prepares it, and keeps
 * them for the whole step (pytorch/pytorch torch/distributed/pipelining/stage.py
 * _setup_backward_recv_info: a _create_grad_recv_info, which makes the tensor, for each
 * micro-batch; the same loop for args_recv_info in _prepare_forward_infra; pytorch/pytorch#136380
 * (2024-09: "allocate N buffers when we are using an N microbatch schedule") and #196463 (2026-09,
 * open: "PipelineStage previously allocated one activation and gradient receive buffer for every
 * microbatch during setup. Those tensors remained live for the entire step")). Each is a stage
 * boundary: micro-batch x seq / cp tokens (/ tp under SP: torchtitan's blocks hand on the
 * sequence-sharded local tensor, parallelize_llama.py rowwise_parallel(output_layouts=Shard(1)))
 * x hidden x 2 bytes, for each virtual stage of the rank (stage + k x pp, or the V's pair).
 * The activation buffer is the stage's input tensor itself, which the activations already count
 * for the in_flight micro-batches the schedule holds (memory_in_flight): only the other
 * micro-batches' activation buffers are added; every gradient buffer is. Zero outside
 * torchtitan or without pp. */
double memory_pp_recv_buffers_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                    int stage, int microbatches, double in_flight);

/* The fp32 reduce-scatter input FSDP2 keeps after a torchtitan pipeline rank's step under torch
 * before pytorch/pytorch#144535 (2025-01-10, "[Pipelining] Fix FSDP+PP stream sync bug": "one
 * key hook was missed for FSDP, the '_root_post_backward_final_callback'"), i.e. the torch of
 * torchtitan's 2024-12 tables (1963fc8, 2024-12-23). Pipelining runs every micro-batch's
 * backward with set_is_last_backward(False) and, after the last one, calls each unit's
 * FSDPParamGroup.post_backward by hand (stage.py backward_maybe_with_nosync, run_post_backward).
 * Each post_backward first drops the previous unit's reduce-scatter input, then keeps its own in
 * comm_ctx.reduce_scatter_state (_fsdp_param_group.py post_backward, "post_backward_reduce");
 * only FSDPState._root_post_backward_final_callback with is_last_backward set drops the last one,
 * and before #144535 run_post_backward did not call it (the autograd-queued one ran with
 * is_last_backward False). So the last unit's input -- the stage's last block (all_states is the
 * root first, then the blocks in order), unsharded, in the reduce dtype (fp32: torchtitan's
 * mixed_precision_reduce) -- stays allocated through the next step until its last backward:
 * 4 x that block's parameters, once per local stage (each model chunk is its own FSDP root with
 * its own comm_ctx). Only with training_spec.pp_fsdp_rs_held (--pp-fsdp-rs-held), torchtitan,
 * FSDP, pp > 1 and more than one micro-batch; zero otherwise. */
double memory_pp_held_rs_input_bytes(const training_spec *t, const layout *l, int microbatches,
                                     double last_block_params);

/* What the same schedule.step() adds at its end on the last stage: with return_outputs left
 * True, PipelineScheduleSingle.step (and PipelineScheduleMulti.step) returns
 * self._merge_outputs(self._stage.output_chunks) after _step_microbatches, gradients reduced
 * (torch/distributed/pipelining/schedules.py, pytorch 00722e64; merge_chunks concatenates the
 * chunks along the batch dimension, microbatch.py): a new tensor of all m outputs beside the m
 * chunks, which stay until the next step's clear_runtime_states. 2 m x 2 x tokens x V / tp
 * bytes then, with the stage's sharded parameters, gradients and Adam states; the m chunks stay
 * through the optimizer step. Seen: pp4-1f1b-8bL16-m16-tl (bench/results/pp_timeline_2026-11-27,
 * Llama-3.1-8B 16 layers, 16 micro-batches) peaks at 52.71 GiB allocated on the last stage,
 * 4.5 GiB above its loss moment; 4 and 8 micro-batches peak at the loss. Zero where
 * memory_pp_held_outputs_bytes is (microbatches >= 1 here). */
double memory_pp_merged_outputs_bytes(const model_spec *m, const training_spec *t,
                                      const layout *l, int stage, int microbatches);

/* The part of the training peak that FSDP2's buffers and the loss share on the last stage of a
 * torch layout: the larger of
 *   loss moment:     logits_peak_bytes + the root's bytes gathered then
 *                    (memory_root_at_loss_bytes, or every unit without reshard_after_forward)
 *   blocks' moment:  logits held (memory_logits_held_bytes) + fsdp_buffer_bytes (every unit in
 *                    flight: the root, the block being back-propagated and the prefetched one,
 *                    the block's bf16 and fp32 gradients) + the root's unsharded bf16 gradient
 *                    of the output layer (2 V h / tp; reduced only after the whole backward)
 * where memory.c's sum holds logits_peak_bytes + fsdp_buffer_bytes. Off the last stage (no loss)
 * it returns fsdp_buffer_bytes. all_gathered_bytes: what stays gathered through the step when
 * the units are not resharded after forward (0 when they are). */
double memory_loss_phase_bytes(const model_spec *m, const layout *l, int stage,
                               double logits_peak_bytes, double all_gathered_bytes);
double memory_blocks_phase_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                 int stage, double fsdp_buffer_bytes);

/* torchtitan with expert parallelism (ep > 1) wraps each MoE block's routed experts as an FSDP2
 * unit of their own, on the expert data-parallel mesh, inside the block's unit
 * (torchtitan/models/llama4/infra/parallelize.py apply_fsdp: fully_shard(transformer_block.moe.
 * experts, mesh=dp_mod_ep_mesh) before fully_shard(transformer_block); so does
 * bench/realruns/parallel_run.py --layout ep on a one-rank mesh). A layer is then two units, the
 * experts (E parameters on this GPU) and the rest of the block (B), and FSDP2's backward order
 * (the reverse of the post-forward order: block i, experts i, block i-1, ...) alternates them: the
 * unit being back-propagated and the one prefetched, or the one whose reduce-scatter input is
 * still held, are an experts unit and a block unit, E + B = one layer, where a dense layout's are
 * two whole layers. memory.c counts the blocks' in-flight buffers per layer of the pair: 8
 * bytes (gathered 2, bf16 gradient 2, fp32 reduce-scatter input 4) x one layer here, x two
 * layers otherwise. Measured (bench/results/epstep_2026-11-27/heldout, Mixtral-8x7B cut to 2
 * layers, ep 2, E = 704.6e6): 29.20e9 B allocated at the peak where two layers' pairs price
 * 34.87e9. True for a torch FSDP2 layout of torchtitan with ep > 1 and an MoE layer on the
 * stage. */
bool memory_experts_own_unit(const layout *l, int moe_layers);

/* The last block's backward (issue 14, held-out fsdp-nat-m7b-ckpt-ws4): the moment just before
 * the first block's post-backward, when every other block's sharded fp32 gradient already
 * exists. memory.c's training peak is taken before any gradient exists (zero_grad sets them to
 * None) and its optimizer step after the activations are freed; with checkpointed layers and a
 * small vocabulary neither is the peak: this moment is. What FSDP2 holds then beyond the
 * sharded state (torch 2.11 torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py
 * post_backward): the root unit, gathered since the logits' backward and reduced only after
 * the whole backward; the block's own gathered bf16 parameters (nothing left to prefetch); its
 * bf16 gradients as they are computed; and the block after it's fp32 reduce-scatter input,
 * which comm_ctx.reduce_scatter_state keeps alive until this block's post_backward waits on its
 * event: 2 + 2 + 4 bytes per parameter of a block. Plus the output layer's unsharded bf16
 * gradient (2 V h / tp) and the logits the trainer holds (memory_logits_held_bytes). The
 * block's activations (or its recomputed ones) and the sharded gradients are memory.c's, which
 * uses this only without pipelining (one stage holds the embedding, the blocks and the loss)
 * and without gradient accumulation (whose later micro-batches hold the gradients anyway). */
double memory_backward_end_buffer_bytes(const model_spec *m, const training_spec *t,
                                        const layout *l, double block_params);

#endif
