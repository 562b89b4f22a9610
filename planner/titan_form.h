/*
 * titan_form.h — the parts of a model's form that none of torchtitan's model classes builds
 * (parallel blocks, LayerNorm, plain or non-SiLU MLPs, learned positions, ...), one sentence
 * each. torchtitan trains its own model definitions, not the Hugging Face code: a model whose
 * layers no class has needs model code written for torchtitan, not only a config function.
 * One list for the search's output ("torchtitan b5bcd76 has no model class with: ..."), the
 * JSON (torchtitan_model_code_lacks) and the emitter's comment; the checks depend on the model
 * alone, never on the layout. The counterpart of megatron_form.h.
 */
#ifndef PLAN_TITAN_FORM_H
#define PLAN_TITAN_FORM_H

#include "form_list.h"
#include "model.h"

/* The torchtitan commit the list (and emit_torchtitan.c) reads. */
#define TITAN_FORM_COMMIT "b5bcd76"

/* Writes up to max sentences (max <= FORM_LIST_MAX) into items; returns how many. 0: some
 * torchtitan model class (llama3, qwen3, deepseek_v3, gpt_oss, muse_glimmer, qwen3_5 at
 * TITAN_FORM_COMMIT) has every form of the model's layers, so a config function for it with
 * the model's sizes builds the model. */
int titan_form_missing(const model_spec *m, char items[][FORM_LIST_ITEM_CHARS], int max);

#endif
