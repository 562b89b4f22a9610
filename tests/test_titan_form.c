/*
 * test_titan_form.c — the search says what torchtitan's model code would need to build a model
 * (issue 19, ttform25): torchtitan trains its own model classes, so a model whose layers none
 * of them has (Falcon's parallel block, LayerNorm and plain GELU MLP; StarCoder2's LayerNorm
 * and plain MLP; Granite's residual and embedding multipliers) gets the line under its
 * torchtitan plan (the recommendation, plan estimate, the comparison's torchtitan line), the
 * list in the JSON (torchtitan_model_code_lacks) and in the emitted command's comment; a
 * recommended torchtitan plan names the fastest FSDP2 plan. Llama and Qwen3 get none of it.
 * The list: planner/titan_form.c. The binary's path comes from PLAN_EXE (set by meson).
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

#define HF HF_FIXTURE_DIR "/"
#define TYPES HF_FIXTURE_DIR "/types/"

static plan_run_result R;

static void run_ok(const char *args)
{
    assert_int_equal(plan_run(&R, args), 0);
    if (R.status != 0) fail_msg("plan %s exited %d: %s", args, R.status, R.err);
}

static const char *LACKS = "  torchtitan   b5bcd76 has no model class with: ";

static void test_falcon_search_text(void **state)
{
    (void)state;
    /* torchtitan alone: the recommendation carries the line, FSDP2 was not searched */
    run_ok("--model " TYPES "falcon.json --gpus 8 --framework torchtitan");
    assert_non_null(strstr(R.out, "Recommended: torchtitan"));
    const char *w = strstr(R.out, LACKS);
    assert_non_null(w);
    assert_non_null(strstr(w, "with: attention and MLP in parallel on the same input (parallel "
                              "block); LayerNorm in the decoder layers; a plain two-matrix MLP "
                              "(gelu) instead of SwiGLU; this plan assumes"));
    assert_non_null(strstr(R.out, "FSDP2 (the model's own code, which builds it exactly) was not "
                                  "searched"));
    /* the three-way search: the comparison's torchtitan line carries it (Megatron wins here) */
    run_ok("--model " TYPES "falcon.json --gpus 8");
    const char *cmp = strstr(R.out, "\nFSDP2 vs Megatron vs torchtitan");
    assert_non_null(cmp);
    assert_non_null(strstr(cmp, LACKS));
}

static void test_recommended_names_fsdp2(void **state)
{
    (void)state;
    /* GraniteMoE: torchtitan is the fastest of the three; its multipliers are in no class */
    run_ok("--model " TYPES "granitemoe.json --gpus 8");
    if (strncmp(strstr(R.out, "Recommended: "), "Recommended: torchtitan", 23))
        skip(); /* the ranking moved: the line under a recommendation is tested above */
    const char *w = strstr(R.out, LACKS);
    assert_non_null(w);
    assert_non_null(strstr(w, "residual branches scaled by"));
    const char *alt = strstr(w, "the fastest plan that builds it exactly (FSDP2, the model's own "
                                "code)");
    assert_non_null(alt);
    assert_true(alt < strstr(R.out, "\nFSDP2 vs Megatron vs torchtitan"));
}

static void test_starcoder2_estimate_text(void **state)
{
    (void)state;
    run_ok("estimate --model " TYPES "starcoder2.json --gpus 8 --framework torchtitan");
    const char *w = strstr(R.out, LACKS);
    assert_non_null(w);
    assert_non_null(strstr(w, "with: LayerNorm in the decoder layers; a plain two-matrix MLP "
                              "(gelu_pytorch_tanh) instead of SwiGLU"));
    /* an FSDP2 estimate runs the model's own code: nothing said */
    run_ok("estimate --model " TYPES "starcoder2.json --gpus 8 --framework fsdp2");
    assert_null(strstr(R.out, "torchtitan   b5bcd76"));
}

static void test_json(void **state)
{
    (void)state;
    check_form_json(&R, "--model " TYPES "falcon.json --gpus 8 --format json --top 60",
                    "torchtitan_model_code_lacks", "torchtitan",
                    "attention and MLP in parallel on the same input (parallel block)");
    check_form_json(&R, "--model 8b --gpus 8 --format json --top 60",
                    "torchtitan_model_code_lacks", "torchtitan", NULL);
}

static void test_emitted_comment(void **state)
{
    (void)state;
    run_ok("--model " TYPES "falcon.json --gpus 8 --framework torchtitan --emit torchtitan");
    const char *w = strstr(R.out, "# NO torchtitan b5bcd76 model class has these forms");
    assert_non_null(w);
    assert_non_null(strstr(w, "\n#   - attention and MLP in parallel on the same input (parallel "
                              "block)\n#   - LayerNorm in the decoder layers\n"));
    /* a model with no shipped config but every form in some class: only the config note */
    run_ok("--model " HF "qwen3-8b.json --gpus 8 --framework torchtitan --emit torchtitan");
    assert_non_null(strstr(R.out, "# NO torchtitan config ships for this model"));
    assert_null(strstr(R.out, "model class has these forms"));
}

static void test_llama_qwen3_say_nothing(void **state)
{
    (void)state;
    static const char *const models[] = {"8b", HF "qwen3-8b.json", HF "llama-3.1-8b.json",
                                         HF "qwen3-30b-a3b.json"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        char args[512];
        snprintf(args, sizeof args, "--model %s --gpus 8 --framework torchtitan", models[i]);
        run_ok(args);
        assert_null(strstr(R.out, "torchtitan   b5bcd76"));
        assert_null(strstr(R.out, "builds it exactly"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_falcon_search_text),
        cmocka_unit_test(test_recommended_names_fsdp2),
        cmocka_unit_test(test_starcoder2_estimate_text),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_emitted_comment),
        cmocka_unit_test(test_llama_qwen3_say_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
