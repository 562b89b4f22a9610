/*
 * check.h — reading a trainer YAML (the schema `--emit yaml` writes, see emit.h) back into a
 * layout and training spec, and checking it against every framework rule at once, for
 * `plan check FILE.yaml`.
 *
 * Two kinds of failure, kept apart: input that is not a config at all (not YAML, no trainer:
 * section, a size that is not a positive integer) is one line in err and CM_EPARSE; a config
 * that reads fine but breaks rules collects every broken rule in a check_report.
 */
#ifndef PLAN_CHECK_H
#define PLAN_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "model.h"
#include "system.h"

#define CHECK_MAX_VIOLATIONS 40
#define CHECK_MAX_NOTES 12

typedef struct {
    layout_violation violations[CHECK_MAX_VIOLATIONS]; /* rule, status, message (with the fix) */
    int nviolations;                                   /* may exceed CHECK_MAX_VIOLATIONS */
    char notes[CHECK_MAX_NOTES][CM_ERRLEN];            /* how the file was read; not failures */
    int nnotes;
} check_report;

typedef struct {
    char model[512];        /* trainer.policy.model.path ("" when absent) */
    int num_gpus;           /* trainer.placement (0 when absent; nodes x per node if only those) */
    int gpus_per_node;      /* 0 when absent */
    int num_nodes;          /* 0 when absent */
    int dopt_instances;     /* megatron_config.num_distributed_optimizer_instances (0: absent) */
    layout layout;          /* dp is filled by check_layout() once the GPU count is known */
    training_spec training;
    /* a torchtitan command line (check_torchtitan.h), in torchtitan's own units until
     * check_torchtitan_resolve() turns them into the layout */
    bool torchtitan;
    bool titan_ac_given;      /* activation-checkpoint:MODE was given */
    int titan_replicate;      /* data_parallel_replicate_degree */
    int titan_shard;          /* data_parallel_shard_degree (-1: the ranks left) */
    int titan_reshard;        /* fsdp_reshard_after_forward: 1 always, 0 never, -1 default */
    int titan_layers_per_stage, titan_first_less, titan_last_less; /* 0: not given */
    int titan_pp_microbatches;                                      /* 0: not given */
    long titan_tokens_mb, titan_tokens_step; /* per micro-batch per DP rank; per step (-1) */
} check_config;

/*
 * Parse the YAML text (len bytes). On CM_OK cfg holds the layout as the trainer would run it and
 * rep the contradictions found among the keys (e.g. use_megatron_fsdp without
 * use_distributed_optimizer). On CM_EPARSE err holds one line, "LINE:COL: what is wrong: fix".
 */
cm_status check_read_yaml(const char *text, size_t len, check_config *cfg, check_report *rep,
                          char *err, size_t errlen);

/*
 * Resolve the model a config names: a local config.json (or a directory holding one), a preset
 * name, or the Hugging Face repository of a preset ("meta-llama/Llama-3.1-8B" -> 8b). name_out
 * gets the preset name or the path used.
 */
cm_status check_load_model(const char *ref, const char *data_dir, model_spec *m, char *name_out,
                           size_t name_len, char *err, size_t errlen);

/*
 * Complete the layout for the job's GPU count (gpus > 0 overrides the placement; dp = gpus /
 * (tp*pp*cp)) and append every broken rule to rep: the placement, the reader's, and each of
 * layout_check_all()'s. Returns the GPU count used (0 when none is known: then nothing is
 * checked and err says to give one).
 */
int check_layout(const model_spec *m, const system_spec *sys, check_config *cfg, int gpus,
                 check_report *rep, char *err, size_t errlen);

/* Append a broken rule (the message formatted) or a note on how the file was read to rep. */
void check_violation(check_report *rep, cm_status code, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void check_note(check_report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* layout_check()'s messages name CLI flags; this names the YAML keys to change for a rule
 * (NULL when the message already speaks YAML). */
const char *check_yaml_fix(const char *rule);

#endif
