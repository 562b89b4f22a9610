/*
 * test_emit_megatron.h — what the three files of the test_emit_megatron program share
 * (test_emit_megatron.c: the Megatron-LM flags and main; test_emit_hostile.c: hostile strings
 * through every emitter; test_emit_skyrl.c: the trainer YAML against SkyRL): loading presets
 * and reading one flag's value from an argv. Private to those files.
 */
#ifndef PLAN_TESTS_TEST_EMIT_MEGATRON_H
#define PLAN_TESTS_TEST_EMIT_MEGATRON_H

#include "check.h"
#include "emit.h"
#include "estimate.h"
#include "search.h"

/* PLAN_DATA_DIR, else "data". */
const char *data_dir(void);
/* A preset, or the test fails. */
model_spec load_model(const char *name);
system_spec load_system(const char *name);
/* Every preset under data/models; returns the count. */
int presets(char names[][64], int max);
/* The value after `flag` in a JSON argv, NULL when absent. */
const char *arg_value(json_t *args, const char *flag);

/* test_emit_hostile.c */
void test_hostile_strings(void **state);
/* test_emit_skyrl.c */
void test_skyrl_rl_batch(void **state);
void test_yaml_has_skyrl_keys(void **state);

#endif
