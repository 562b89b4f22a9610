/*
 * megatron_form.h — the parts of a model's form that Megatron-LM's GPT layer cannot build
 * (post-norms, parallel blocks, full-width q/k norms, some activations, soft-capping, ...),
 * one sentence each. It exists so that the Megatron emitter's "NOT EXPRESSIBLE" comments and
 * the search's output ("Megatron-LM would train this model without: ...") come from one list:
 * the checks here depend on the model alone, never on the layout.
 */
#ifndef PLAN_MEGATRON_FORM_H
#define PLAN_MEGATRON_FORM_H

#include <stdbool.h>
#include <stddef.h>

#include "form_list.h"
#include "model.h"

/* Most sentences kept, and the longest one (with its NUL): form_list.h's. */
#define MEGATRON_FORM_MAX FORM_LIST_MAX
#define MEGATRON_FORM_ITEM_CHARS FORM_LIST_ITEM_CHARS
/* The longest per-layer pattern (--window-attn-skip-freq, --moe-layer-freq) stated; the
 * emitter's flag value (emit_internal.h FLAG_VALUE_MAX) is the same length. */
#define MEGATRON_FORM_PATTERN_CHARS 2048

/* Writes up to max sentences (max <= MEGATRON_FORM_MAX) into items, in the order the emitter
 * states them; returns how many. 0: Megatron-LM builds this model's layers as the model has
 * them. */
int megatron_form_missing(const model_spec *m, char items[][MEGATRON_FORM_ITEM_CHARS], int max);

/* A Python list expression of one 0/1 per layer (Megatron's moe_freq_type patterns), in buf of
 * len bytes; false when it does not fit. */
bool megatron_layer_pattern(const model_spec *m, bool (*on)(const model_spec *, int), char *buf,
                            size_t len);

#endif
