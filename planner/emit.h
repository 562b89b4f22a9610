/*
 * emit.h — the configs to paste: a layout (the recommended plan, or the one `plan estimate` was
 * given) written as a trainer YAML (the FSDP2-vs-Megatron guide's schema, SkyRL/verl style),
 * Megatron-LM command-line flags, Megatron Bridge Python overrides, or the estimate's JSON with
 * all three attached. `plan check` reads the YAML back (check.h); the two are kept symmetric so
 * that what --emit yaml writes, plan check accepts as the same layout.
 *
 * Library code: every function returns text (malloc'd, caller frees) or a JSON reference; none
 * prints.
 */
#ifndef PLAN_EMIT_H
#define PLAN_EMIT_H

#include <jansson.h>

#include "estimate.h"

typedef enum {
    EMIT_NONE = 0,
    EMIT_YAML,
    EMIT_MEGATRON_ARGS,
    EMIT_BRIDGE,
    EMIT_JSON,
    EMIT_TORCHTITAN, /* issue 19: the torchrun command of a torchtitan plan */
} emit_format;

/* "yaml", "megatron-args", "bridge", "json", "torchtitan" -> format; returns 0 when s is none
 * of them. */
int emit_parse_format(const char *s, emit_format *out);
const char *emit_format_name(emit_format f);

/*
 * What the configs name besides the layout: model_ref is what the user typed for --model (a
 * preset name or a config.json path); the YAML's model path is the preset's Hugging Face
 * repository when it has one, else model_ref.
 */
typedef struct {
    const char *model_ref;
} emit_context;

/* The trainer YAML (libyaml emitter), with a comment header of the prediction. */
cm_status emit_yaml(const estimate *e, const model_spec *m, const system_spec *sys,
                    const emit_context *ctx, char **out, char *err, size_t errlen);
/* Megatron-LM flags, one per line with shell continuations; Megatron plans only. */
cm_status emit_megatron_args(const estimate *e, const model_spec *m, const system_spec *sys,
                             const emit_context *ctx, char **out, char *err, size_t errlen);
/* Megatron Bridge overrides (cfg.model..., cfg.ddp..., cfg.dist...); Megatron plans only. */
cm_status emit_bridge(const estimate *e, const model_spec *m, const system_spec *sys,
                      const emit_context *ctx, char **out, char *err, size_t errlen);
/* output_estimate_json() with an "emit" object: {"format_version", "trainer_yaml",
 * "megatron_args" (argv tokens, null for fsdp2), "megatron_placeholder_flags" (the flags that are
 * placeholders: training length, schedule, data), "megatron_unsupported" (architecture the flags
 * cannot state), "environment" ({"set": {NAME: VALUE}, "unset": [NAME]}), "bridge"}. */
json_t *emit_json(const estimate *e, const model_spec *m, const system_spec *sys,
                  const emit_context *ctx);

/* CUDA_DEVICE_MAX_CONNECTIONS for a layout under Megatron-LM on sys: 1 = must be set to 1 (TP or
 * CP > 1 before Blackwell, validate_args asserts it), -1 = must be unset (Megatron-FSDP asserts
 * it is not 1), 0 = either. */
int emit_megatron_max_connections(const layout *l, const system_spec *sys);

/* The Megatron-LM argv tokens of a Megatron plan (no shell quoting: "megatron_args" of
 * emit_json), the flags among them that are placeholders, and the architecture they cannot
 * state (either of the last two may be NULL). */
cm_status emit_megatron_argv(const estimate *e, const model_spec *m, json_t **args,
                             json_t **placeholders, json_t **unsupported, char *err,
                             size_t errlen);

/* The Megatron-Bridge recipe function named for m, or NULL when Bridge has none for it. */
const char *emit_bridge_recipe(const model_spec *m);

/* torchtitan: torchrun -m torchtitan.train --module M --config C and the --parallelism.*,
 * --training.*, --compile.* overrides and activation-checkpoint:MODE of the plan
 * (emit_torchtitan.c); torchtitan plans only. */
cm_status emit_torchtitan(const estimate *e, const model_spec *m, const system_spec *sys,
                          const emit_context *ctx, char **out, char *err, size_t errlen);
/* Does `plan --emit f` consider a plan of framework fw? (torchtitan: torchtitan plans; yaml,
 * megatron-args, bridge: the others, as before torchtitan was searched; json: all) */
bool emit_serves(emit_format f, layout_framework fw);

/* Any of the text formats (EMIT_JSON renders the JSON with two-space indent). */
cm_status emit_render(emit_format f, const estimate *e, const model_spec *m,
                      const system_spec *sys, const emit_context *ctx, char **out, char *err,
                      size_t errlen);

#endif
