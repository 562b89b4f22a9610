/*
 * test_megatron_form.c — the search says what Megatron-LM would train a model without (issue
 * 14/15, mgform24): a model with post-norms (OLMo 2) or a parallel block (Cohere) gets the line
 * under its Megatron plan and the list in the JSON; a Llama model gets neither. The list is
 * the one the Megatron emitter writes as NOT EXPRESSIBLE (planner/megatron_form.c).
 * The binary's path comes from PLAN_EXE (set by meson).
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plan_run.h"

#define TYPES HF_FIXTURE_DIR "/types/"

static plan_run_result R;

static void run_ok(const char *args)
{
    assert_int_equal(plan_run(&R, args), 0);
    if (R.status != 0) fail_msg("plan %s exited %d: %s", args, R.status, R.err);
}

static const char *WITHOUT = "  Megatron-LM  would train this model without: ";

static void test_post_norm_search_text(void **state)
{
    (void)state;
    run_ok("--model " TYPES "olmo2.json --gpus 8");
    const char *w = strstr(R.out, WITHOUT);
    assert_non_null(w);
    /* olmo2's two forms, in the emitter's order */
    assert_non_null(strstr(w, "without: norms after attention and MLP instead of before them; "
                              "q/k norm weights over every head"));
    /* a recommended Megatron plan names the fastest plan that builds the model exactly */
    if (!strncmp(strstr(R.out, "Recommended: "), "Recommended: megatron", 21)) {
        const char *alt = strstr(R.out, "the fastest plan that builds it exactly (FSDP2");
        assert_non_null(alt);
        assert_true(alt < strstr(R.out, "\nFSDP2 vs Megatron"));
    }
    /* the Megatron-only search: said, with FSDP2 not searched */
    run_ok("--model " TYPES "olmo2.json --gpus 8 --framework megatron");
    assert_non_null(strstr(R.out, WITHOUT));
    assert_non_null(strstr(R.out, "FSDP2 (the model's own code, which builds it exactly) was not "
                                  "searched"));
}

static void test_parallel_block_estimate_text(void **state)
{
    (void)state;
    run_ok("estimate --model " TYPES "cohere.json --gpus 8 --tp 8 --recompute full");
    const char *w = strstr(R.out, WITHOUT);
    assert_non_null(w);
    assert_non_null(strstr(w, "attention and MLP in parallel on the same input (parallel block)"));
    /* an FSDP2 estimate runs the model's own code: nothing said */
    run_ok("estimate --model " TYPES "cohere.json --gpus 8 --framework fsdp2 --recompute full --offload");
    assert_null(strstr(R.out, "Megatron-LM  would train"));
}

/* every plan in the JSON: Megatron's carry the list, the others null */
static void check_plans(const char *args, const char *first_item)
{
    run_ok(args);
    json_error_t je;
    json_t *j = json_loads(R.out, 0, &je);
    if (!j) fail_msg("plan %s: output is not JSON (%s)", args, je.text);
    json_t *plans = json_object_get(j, "plans");
    assert_true(json_array_size(plans) > 0);
    int megatron = 0;
    size_t i;
    json_t *p;
    json_array_foreach(plans, i, p) {
        json_t *without = json_object_get(p, "megatron_trains_without");
        assert_non_null(without);
        const char *fw = json_string_value(json_object_get(json_object_get(p, "layout"),
                                                           "framework"));
        if (strcmp(fw, "megatron")) {
            assert_true(json_is_null(without));
            continue;
        }
        megatron++;
        assert_true(json_is_array(without));
        if (!first_item) {
            assert_int_equal(json_array_size(without), 0);
        } else {
            assert_true(json_array_size(without) > 0);
            assert_string_equal(json_string_value(json_array_get(without, 0)), first_item);
        }
    }
    assert_true(megatron > 0);
    json_decref(j);
}

static void test_json(void **state)
{
    (void)state;
    check_plans("--model " TYPES "olmo2.json --gpus 8 --format json --top 40",
                "norms after attention and MLP instead of before them");
    check_plans("--model 8b --gpus 8 --format json --top 40", NULL);
}

static void test_llama_says_nothing(void **state)
{
    (void)state;
    run_ok("--model 8b --gpus 8");
    assert_null(strstr(R.out, "Megatron-LM  would train"));
    assert_null(strstr(R.out, "builds it exactly"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_post_norm_search_text),
        cmocka_unit_test(test_parallel_block_estimate_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_llama_says_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
