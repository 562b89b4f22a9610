/*
 * emit_internal.h — what the emitters (emit.c: Megatron flags, Bridge, JSON; emit_yaml.c: the
 * trainer YAML) share: where the model comes from, node counts, comment-safe text, the header
 * every config opens with, and closing the memstream a config is written to. Private to
 * planner/emit*.c.
 */
#ifndef PLAN_EMIT_INTERNAL_H
#define PLAN_EMIT_INTERNAL_H

#include <stdio.h>

#include "emit.h"

/* The model reference a config names: the Hugging Face repository or the config path. */
const char *emit_model_path(const model_spec *m, const emit_context *ctx);
/* Nodes a job of `gpus` GPUs takes on sys. */
int emit_nodes_of(int gpus, const system_spec *sys);
/* s with control characters dropped, safe inside a comment of any of the formats. */
void emit_comment_text(FILE *f, const char *s);
/* The opening comment lines (comment marker c): plan, prediction, fit. */
void emit_header(FILE *f, const char *c, const estimate *e, const model_spec *m,
                 const system_spec *sys);
/* One shell word: bare when unambiguous, else single-quoted. */
void emit_shell_quote(FILE *f, const char *s);
/* Closes the memstream (which is when open_memstream publishes its buffer) and hands it out. */
cm_status emit_finish(FILE *f, char **bufp, char **out, char *err, size_t errlen);

#endif
