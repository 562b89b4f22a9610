/*
 * memory_holes.h — the free bytes torch.cuda's peak *reserved* holds at the loss's moment under
 * expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, torchtitan's launch
 * setting): the part of the reserved peak beyond the allocated peak that memory_pools.h (the
 * side-stream pools) does not cover.
 *
 * Why: with expandable segments each stream's pool is one address range that grows at its end
 * and is never given back, and a request takes the smallest free block that holds it (torch
 * c10/cuda/CUDACachingAllocator.cpp). The loss's buffers (tokens x vocab, GiBs) are larger than
 * anything freed just before them, so the blocks freed between the blocks' forward and the
 * loss's backward stay free below the top while the loss's backward maps new memory at the end:
 *  - the bf16 logits, which torchtitan's trainer deletes before loss.backward() (`del pred`,
 *    e29b6b4d4; trainer.py:795 at b5bcd76): after the fp32 upcast's block (freed when the loss
 *    returns) merges with them, nll_loss_backward's fp32 gradient takes the front of that hole
 *    and the bf16 logits' bytes are left, too small for log_softmax's fp32 gradient;
 *  - the root unit's (embedding, final norm, head) and one block's gathered parameters, freed
 *    after their forward (reshard_after_forward) before the loss; with the torch and torchtitan
 *    of the published runs they were held instead (torch clamped the root to no reshard until
 *    pytorch/pytorch#154704, 2025-06; torchtitan 9dec370 parallelize_llama.py apply_fsdp does not
 *    reshard the last block), which leaves the reserved peak the same.
 * Measured (bench/results/ttmem21_2026-11-29, one H200, torch 2.11, the allocator's trace):
 * Llama-3.1-8B cut to 8 layers, s8k b2, per-op SAC: at the peak the default pool holds 6.33 GiB
 * free in exactly a 3.91 GiB hole (the bf16 logits), 1.97 (the root's gathered parameters) and
 * 0.42 (a block's); Qwen3-32B L6 s4k b2: reserved - allocated 22.88 GiB against the
 * reduce-scatter pool + these three, 22.82.
 */
#ifndef PLAN_MEMORY_HOLES_H
#define PLAN_MEMORY_HOLES_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"

/* The bytes free in the default stream's pool at the loss backward's peak on stage `stage`
 * (0 off the head stage, outside torch FSDP2 with the native model, with pipeline parallelism
 * or CUDA graphs: not measured there). layer_params: one block's parameters on this GPU, moe_block its kind;
 * chain_block_bytes: the loss's largest single buffer (memory_largest_block_bytes), which a
 * hole must be smaller than to stay free. */
double memory_loss_holes_bytes(const model_spec *m, const training_spec *t, const layout *l,
                               int stage, double layer_params, bool moe_block,
                               double chain_block_bytes);

#endif
