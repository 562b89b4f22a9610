/*
 * pp_zbv_memory.h — what torch's ZBVZeroBubble runtime holds beyond the activations in flight
 * (issues 19 and 14): the split backward's retained tensors. pp_schedule.h counts the
 * micro-batches each stage holds; this prices what splitting a backward into input gradient (I)
 * and weight gradient (W) keeps alive, walking the rank's op order (schedule.h).
 *
 * From torch's code (pytorch/pytorch torch/distributed/pipelining/_backward.py at 2e0f976,
 * stage.py at 0138610, FSDP2's torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py at
 * 002a76f), under FSDP2 with
 * bf16 parameters and an fp32 reduce dtype (torchtitan's defaults; reshard_after_forward False
 * under pipelining):
 *   1. W leaves its weight gradients in bf16. stage_backward_weight computes each parameter
 *      group's dW with autograd.grad and stores it as the (unsharded) parameter's .grad;
 *      nothing folds it into FSDP2's fp32 accumulator then: FSDPParamGroup.post_backward
 *      (accumulate_unsharded_grad_if_needed / to_accumulated_grad_if_needed) runs from
 *      RegisterPostBackwardFunction, which sits on the module's forward inputs, i.e. in the
 *      chunk's next I. So 2 bytes a parameter of the chunk stay from its W to the next I (a
 *      plain backward, 1F1B's, folds each block's right after it: memory.c counts one block's).
 *      In the V's steady state I(c) W(c) F(c') I(c') W(c') alternate: at the start of an I both
 *      chunks' bf16 weight gradients are alive, on top of the loss's buffers on the head chunk.
 *   2. I keeps the output gradient of every weight's node. stage_backward_input registers a
 *      pre-hook on each node where a weight joins the input's path (each Linear's mm, each
 *      norm) that stores its incoming gradient, and calls autograd.grad(retain_graph=True), so
 *      at I's end the chunk's activations are all still held (nothing freed) beside those
 *      gradients: per layer and token the outputs of q, k, v, o, gate, up, down (and q/k norms)
 *      and the two norms, bf16; on the head chunk the logits' gradient and the final norm's.
 *      W then releases each group's gradients as it goes (del param_group["grads"]).
 *   3. The received input's gradient: stage_backward_input sets inp.grad = dinput and nothing
 *      clears it until the next step's clear_runtime_states (stage_backward, the full backward,
 *      sets val.grad = None): one [tokens, hidden] bf16 tensor per I on a chunk that receives.
 * The first virtual stage's I is empty (its input, the token ids, needs no gradient) and its W
 * runs the full backward (stage.py backward_weight_one_chunk, stage_index 0): none of the three.
 */
#ifndef PLAN_PP_ZBV_MEMORY_H
#define PLAN_PP_ZBV_MEMORY_H

#include "layout.h"
#include "model.h"

/* A rank's two chunks as pp_zbv_retained_bytes reads them (chunk 0: virtual stage s, chunk 1:
 * virtual stage 2p-1-s). */
typedef struct {
    double act_bytes[2];         /* one micro-batch's saved activations of the chunk */
    double params[2];            /* the chunk's parameters on this GPU */
    double output_grad_bytes[2]; /* what 2. keeps for one micro-batch of the chunk */
    double input_grad_bytes;     /* 3.: one micro-batch's received-input gradient */
    double loss_over_blocks_bytes; /* the head chunk's loss moment above its blocks' (>= 0) */
    int head_chunk;              /* the chunk holding the loss, or -1 */
    bool first[2];               /* the chunk is virtual stage 0 */
} pp_zbv_rank;

/* The chunk c of rank `stage` figures of 2. per micro-batch: the weights' output gradients of its
 * `layers` layers (and, when `head`, the logits' and the final norm's), bf16. */
double pp_zbv_output_grad_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                int layers, bool head);

/* What rank `rank` of p holds at its fullest moment of the ZBV order for m micro-batches above
 * the in-flight activations and the loss's or blocks' moment that memory.c already counts: the
 * most, over the order, of (chunks held) x their activations + 1.-3. at the start and the end of
 * each I and W, less (the most chunks held) x activations + the loss's excess. The output
 * gradients of 2. wait for their W: in the cool-down an I runs without its W (schedules.py: rank
 * r's last r rounds are I0 I1), so the waiting ones add up; a W ends with its chunk's activations
 * freed and its weight gradients in bf16. 0 when nothing exceeds, or the order cannot be built.
 * Walked op by op up to 4p + 4 micro-batches; past that the steady state's per-round increase
 * (two received-input gradients) is carried on. */
double pp_zbv_retained_bytes(int p, int m, int rank, const pp_zbv_rank *z);

/* memory.c's entry: pp_zbv_retained_bytes for stage `stage` of l under ZBVZeroBubble (0 under
 * any other schedule or framework), from one layer's parameters and per-micro-batch bytes of
 * the stage's activations (both chunks, n_layers layers), and the head stage's loss moment
 * above its blocks'. */
double pp_zbv_stage_bytes(const model_spec *m, const training_spec *t, const layout *l, int stage,
                          int n_layers, double layer_params, double per_micro_bytes,
                          double loss_over_blocks_bytes);

#endif
