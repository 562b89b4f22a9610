/*
 * check_torchtitan.h — `plan check` of a torchtitan command line (issue 19): what
 * `--emit torchtitan` writes (torchrun ... -m torchtitan.train --module M --config C with
 * --parallelism.* / --training.* / --compile.* overrides and activation-checkpoint:MODE), read
 * back into a layout and checked against the model, the cluster and every rule.
 */
#ifndef PLAN_CHECK_TORCHTITAN_H
#define PLAN_CHECK_TORCHTITAN_H

#include "check.h"

/* Does the text look like a torchtitan command line rather than a trainer YAML? */
bool check_is_torchtitan(const char *text, size_t len);

/* Read the flags into cfg (layout.framework torchtitan; sizes, schedule, switches, the sequence;
 * the model from a "# model: REF" line or --hf_assets_path; the GPU count from torchrun's
 * --nproc-per-node x --nnodes). Unknown --section.option flags are ignored, as a real run has
 * many. CM_EPARSE with one line in err when a value is malformed. */
cm_status check_read_torchtitan(const char *text, size_t len, check_config *cfg,
                                check_report *rep, char *err, size_t errlen);

/* With the model and the GPU count (gpus > 0 overrides the file's): stages per rank, the
 * micro-batch and global batch from the token counts, the reshard default, HSDP from the
 * replicate/shard degrees; each inconsistency a violation in rep. Call before check_layout().
 * Returns the GPU count used (0: none known). */
int check_torchtitan_resolve(const model_spec *m, check_config *cfg, int gpus,
                             check_report *rep);

/* The command-line flag to change for a rule (NULL when the message names it already). */
const char *check_torchtitan_fix(const char *rule);

#endif
