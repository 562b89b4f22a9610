/*
 * refine_realruns.h — `plan refine --realruns FILE`: the step-level terms (system.h
 * system_step) fitted to real training steps of several models (bench/realruns' JSON lines:
 * one run a line, FSDP2 on one node), each priced with its own model, training shape and
 * layout, with the leave-one-out error as the honest figure (issue 14: "plan measure --refine
 * uses real-step measurements when given them"). Only main-side code: it prints.
 */
#ifndef PLAN_CLI_REFINE_REALRUNS_H
#define PLAN_CLI_REFINE_REALRUNS_H

#include "cli.h"

/* Runs it: the runs of `path` measured on `system`'s GPU, the terms in the `terms` mask, the
 * refined profile written to `out` when given (command: the command line, kept in it).
 * Returns the exit status. */
int refine_realruns(const char *path, const cli_options *co, unsigned terms, const char *out,
                    const char *command);

#endif
