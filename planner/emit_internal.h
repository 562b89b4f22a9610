/*
 * emit_internal.h — what the emitters (emit.c: JSON; emit_megatron.c: Megatron flags;
 * emit_bridge.c; emit_yaml.c: the trainer YAML) share: where the model comes from, node counts,
 * comment-safe text, the header every config opens with, and closing the memstream a config is
 * written to. Private to planner/emit*.c.
 */
#ifndef PLAN_EMIT_INTERNAL_H
#define PLAN_EMIT_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "emit.h"

/* The model reference a config names: the Hugging Face repository or the config path. */
const char *emit_model_path(const model_spec *m, const emit_context *ctx);
/* Nodes a job of `gpus` GPUs takes on sys. */
int emit_nodes_of(int gpus, const system_spec *sys);
/* Nodes that hold the plan's GPUs evenly (torchrun and SkyRL start the same number of
 * processes on every node): the fewest at or above emit_nodes_of that divide gpus, so 36 GPUs
 * on 8-GPU nodes run as 6 nodes of 6; gpus / it processes per node. */
int emit_even_nodes(int gpus, const system_spec *sys);
/* s with control characters dropped, safe inside a comment of any of the formats. */
void emit_comment_text(FILE *f, const char *s);
/* The --gemm-headroom flag (" on", " off" or "") with which plan check FILE prices the file as
 * the command that wrote it did: plan check, like plan estimate, counts the pipeline bubble's
 * headroom by default (gemm_headroom.h); " on" where the prediction counted every idle term;
 * " off" where it priced the sustained rate (the search) and the bubble would count. */
const char *emit_check_headroom_flag(const estimate *e, const system_spec *sys);
/* The opening comment lines (comment marker c): plan, prediction, fit. */
void emit_header(FILE *f, const char *c, const estimate *e, const model_spec *m,
                 const system_spec *sys);
/* One shell word: bare when unambiguous, else single-quoted. */
void emit_shell_quote(FILE *f, const char *s);
/* The longest value of one Megatron flag (the pipeline layout text fits it). */
#define FLAG_VALUE_MAX 2048

/* One Python string literal (double-quoted, escaped). */
void emit_python_quote(FILE *f, const char *s);
/* The costed pipeline split as Megatron's --pipeline-model-parallel-layout text; false when it
 * does not fit buf. */
bool emit_pipeline_layout_text(const model_spec *m, const layout *l, char *buf, size_t len);
/* A Megatron-FSDP plan? */
bool emit_megatron_fsdp(const layout *l);
/* CM_OK for a Megatron plan, else an error naming `what` and the format to use instead. */
cm_status emit_need_megatron(const estimate *e, const char *what, char *err, size_t errlen);
/* json_string(), or for text that is not UTF-8 the same with every non-ASCII byte as '?'. */
json_t *emit_json_string_lossy(const char *s);
/* Closes the memstream (which is when open_memstream publishes its buffer) and hands it out. */
cm_status emit_finish(FILE *f, char **bufp, char **out, char *err, size_t errlen);

#endif
