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
#include "form_json_check.h"

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

static void test_json(void **state)
{
    (void)state;
    check_form_json(&R, "--model " TYPES "olmo2.json --gpus 8 --format json --top 40",
                    "megatron_trains_without", "megatron",
                    "norms after attention and MLP instead of before them");
    check_form_json(&R, "--model 8b --gpus 8 --format json --top 40",
                    "megatron_trains_without", "megatron", NULL);
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
