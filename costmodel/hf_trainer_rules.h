/*
 * hf_trainer_rules.h — facts of transformers' model code that decide whether the Hugging Face
 * FSDP2 trainer (`--framework fsdp2`, `--impl hf`) can run a layout at all, kept apart from the
 * framework rules of layout.c because they follow one library's code, version by version.
 */
#ifndef HF_TRAINER_RULES_H
#define HF_TRAINER_RULES_H

#include <stdbool.h>

/* Whether transformers' code for this model_type hands its decoder layers the rotary tables in
 * fp32 rather than in the activations' dtype. Under FSDP2's bf16 mixed precision the pre-forward
 * hook casts those floating inputs to bf16, but it does not run again in a non-reentrant
 * checkpoint's recomputation, so full recompute fails the first step (CheckpointError: 4 tensors
 * of [1, 1, s, head_dim] saved bf16, recomputed fp32). transformers 5.17.0 + torch 2.11, seen:
 * OLMo-2 (bench/results/ho24_2026-11-29, ho25_2026-11-29 ho25-fsdp-hf-olmo2-7b-s4k-b1-ckpt-ws2),
 * ERNIE-4.5-0.3B (bench/results/ho27_2026-11-29 ho27-ernie45-03b-s8k-b8-ckpt); ERNIE-4.5's MoE
 * type shares the rotary class that returns the tables "in full precision"
 * (src/transformers/models/ernie4_5_moe, ernie4_5/modeling_ernie4_5.py Ernie4_5_MoERotaryEmbedding). */
bool hf_rotary_tables_fp32(const char *model_type);

#endif
