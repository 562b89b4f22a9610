/*
 * test_hf_ckpt_rules.c — the rule that refuses full recompute under the FSDP2 trainer for
 * transformers model types whose rotary tables reach the layers in fp32 (costmodel/layout.c
 * "hf-fp32-rope-full-recompute", hf_trainer_rules.h): OLMo-2 and ERNIE-4.5 runs crash in their
 * first step (CheckpointError on the rotary tables; OLMo-2 on one and on two H200s,
 * bench/results/ho24_2026-11-29/README.md, ho25_2026-11-29/README.md; ERNIE-4.5-0.3B on one
 * H200, bench/results/ho27_2026-11-29). The rule must fire for those types + Hugging Face code +
 * full recompute only: not without recompute, not for selective recompute (never run), not for a
 * Llama, not for torchtitan's own model code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layout.h"
#include "system.h"

static void load(const char *name, model_spec *m)
{
    const char *d = getenv("PLAN_DATA_DIR");
    char path[512], err[CM_ERRLEN];
    snprintf(path, sizeof path, "%s/%s.json", REALRUNS_CONFIGS_DIR, name);
    if (model_load(path, d ? d : "data", m, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

/* Whether layout_check_all lists the fp32-rotary rule for this model, framework and recompute. */
static bool refused(const char *model, layout_framework fw, layout_recompute r)
{
    model_spec m;
    load(model, &m);
    system_spec sys;
    char err[CM_ERRLEN];
    const char *d = getenv("PLAN_DATA_DIR");
    if (system_load("h200", d ? d : "data", &sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 1;
    layout l = layout_default(fw);
    l.mbs = 1;
    l.recompute = r;
    layout_violation v[32];
    int n = layout_check_all(&m, &sys, &t, &l, 1, v, 32);
    for (int i = 0; i < n && i < 32; i++)
        if (!strcmp(v[i].rule, "hf-fp32-rope-full-recompute")) return true;
    return false;
}

static void test_olmo2_full_refused(void **state)
{
    (void)state;
    assert_true(refused("olmo2-7b", FRAMEWORK_FSDP2, RECOMPUTE_FULL));
}

static void test_olmo2_other_layouts_kept(void **state)
{
    (void)state;
    assert_false(refused("olmo2-7b", FRAMEWORK_FSDP2, RECOMPUTE_NONE));
    assert_false(refused("olmo2-7b", FRAMEWORK_FSDP2, RECOMPUTE_SELECTIVE));
    assert_false(refused("olmo2-7b", FRAMEWORK_TORCHTITAN, RECOMPUTE_FULL));
    assert_false(refused("llama-3.1-8b", FRAMEWORK_FSDP2, RECOMPUTE_FULL));
}

static void test_ernie45_full_refused(void **state)
{
    (void)state;
    assert_true(refused("ernie-4.5-0.3b", FRAMEWORK_FSDP2, RECOMPUTE_FULL));
    assert_true(refused("ernie-4.5-21b-a3b", FRAMEWORK_FSDP2, RECOMPUTE_FULL));
    assert_false(refused("ernie-4.5-0.3b", FRAMEWORK_FSDP2, RECOMPUTE_NONE));
    assert_false(refused("ernie-4.5-21b-a3b", FRAMEWORK_TORCHTITAN, RECOMPUTE_FULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_olmo2_full_refused),
        cmocka_unit_test(test_olmo2_other_layouts_kept),
        cmocka_unit_test(test_ernie45_full_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
