/*
 * test_memory_memo.c — the search's memory memo (costmodel/memory_memo.h, issue 21) gives the
 * very figures memory_peak gives: every layout the Megatron, FSDP2 and torchtitan searches list
 * for a dense and two MoE models (each also in FP8 with --fp8-param-gather, with and without
 * bf16 first/last layers, with a full recompute of one to three layers a stage, and with Megatron's
 * optimizer and activation offload), in the search's own order, so that neighbours hit the memo as they do in a search, compared
 * byte for byte with memory_peak. Also: a memo made for another model is not read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "memory_memo.h"
#include "precision.h"
#include "search_layouts.h"
#include "search_torchtitan.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

typedef struct {
    const model_spec *m;
    const system_spec *sys;
    training_spec t;
    memory_memo memo;
    long compared, differ, fit;
} walk;

static void same_as_direct(walk *w, const layout *l)
{
    memory_breakdown a = memory_peak(w->m, w->sys, &w->t, l);
    memory_breakdown b = memory_peak_memo(w->m, &w->memo, w->sys, &w->t, l);
    w->compared++;
    if (memcmp(&a, &b, sizeof a)) w->differ++;
    if (memory_fits(&a)) w->fit++;
}

/* Each listed layout, then the knobs the search's evaluation adds to it. */
static void visit_layout(void *arg, const layout *l0)
{
    walk *w = arg;
    same_as_direct(w, l0);
    layout l = *l0;
    if (l.framework == FRAMEWORK_MEGATRON) {
        if (l.recompute == RECOMPUTE_FULL) {
            /* the memory knobs' tries (search.c memory_knobs: one layer a stage, then a
             * bisection) take the layout's stages from the memo (memory_full_snap, speed12):
             * held once the layout itself was computed */
            assert_true(w->memo.full[0].used && w->memo.full[0].key.recompute_layers == 0);
            for (int k = 1; k <= 3; k++) {
                l.recompute_layers = k;
                same_as_direct(w, &l);
            }
            l.recompute_layers = 0;
        }
        if (l.sharding == SHARDING_DISTOPT) {
            l.optimizer_offload_pct = 50;
            same_as_direct(w, &l);
            l.optimizer_offload_pct = 0;
        }
        if (l.pp == 1 && l.recompute == RECOMPUTE_NONE) {
            l.activation_offload = true;
            same_as_direct(w, &l);
            l.activation_offload = false;
        }
        if (l.tp > 1 && l.sp) {
            l.tp_comm_overlap = true;
            same_as_direct(w, &l);
            l.tp_comm_overlap = false;
        }
        if (l.sharding != SHARDING_DDP) { /* FP8 with its parameter gather */
            l.precision = PRECISION_FP8;
            l.fp8_param_gather = true;
            if (precision_check(w->sys, &l, NULL, 0) == CM_OK) {
                same_as_direct(w, &l);
                /* the memo's stage parameters of FP8 weights hold the bf16 first/last layers
                 * they were counted for: the same stage with others must not take them */
                l.bf16_layers_start = l.bf16_layers_end = 1;
                same_as_direct(w, &l);
                l.bf16_layers_start = l.bf16_layers_end = 0;
                same_as_direct(w, &l);
            }
        }
    }
}

static void walk_model(const char *model, int gpus, long min_layouts)
{
    char err[CM_ERRLEN];
    model_spec m;
    system_spec sys;
    if (model_load(model, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
    walk *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->m = &m;
    w->sys = &sys;
    w->t = training_default();
    memory_memo_init(&w->memo, &m);
    search_options o = {.gpus = gpus, .keep = 8, .frameworks = {true, true, true}};
    search_megatron_layouts(&m, &sys, &w->t, &o, visit_layout, w);
    search_fsdp2_layouts(&m, &sys, &w->t, &o, visit_layout, w);
    search_torchtitan_layouts(&m, &sys, &w->t, &o, visit_layout, w);
    /* the same layouts at another global batch (--gbs-policy nearest gives each dp its own) */
    w->t.global_batch /= 2;
    search_megatron_layouts(&m, &sys, &w->t, &o, visit_layout, w);
    assert_int_equal(w->differ, 0);
    assert_true(w->compared >= min_layouts);
    /* both verdicts occur: the comparison covers layouts that fit and layouts that do not */
    assert_true(w->fit > 0 && w->fit < w->compared);
    free(w);
}

static void test_dense(void **state)
{
    (void)state;
    walk_model("70b", 64, 10000);
}

static void test_moe(void **state)
{
    (void)state;
    walk_model("mixtral-8x7b", 64, 10000);
}

static void test_moe_mla_mtp(void **state)
{
    (void)state;
    walk_model("deepseek-v3", 256, 50000);
}

/* A memo made for one model is not read for another: the figures are the other model's. */
static void test_other_model(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    model_spec a, b;
    system_spec sys;
    if (model_load("8b", data_dir(), &a, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (model_load("70b", data_dir(), &b, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load("h100", data_dir(), &sys, err, sizeof err) != CM_OK) fail_msg("%s", err);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8;
    l.sp = true;
    l.dp = 8;
    memory_memo memo;
    memory_memo_init(&memo, &a);
    memory_breakdown ma = memory_peak_memo(&a, &memo, &sys, &t, &l);
    memory_breakdown mb = memory_peak_memo(&b, &memo, &sys, &t, &l);
    memory_breakdown want = memory_peak(&b, &sys, &t, &l);
    assert_memory_equal(&mb, &want, sizeof want);
    assert_true(mb.weights_bytes > 5 * ma.weights_bytes); /* 70B's weights, not 8B's */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_moe_mla_mtp),
        cmocka_unit_test(test_other_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
