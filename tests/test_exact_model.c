/*
 * test_exact_model.c — plan --exact-model (exact25): the search keeps only the frameworks
 * whose own model code builds the model as it is (planner/exact_model.c). Falcon-7B (parallel
 * block; LayerNorm and a plain GELU MLP for torchtitan) and OLMo-2-7B (post-norms, full-width
 * q/k norms) leave Megatron-LM and torchtitan out, one line each naming the first forms;
 * Llama-3.1-8B leaves none out. A framework named with --framework (or plan estimate's
 * default, megatron) that cannot build the model is one error line and exit status 2;
 * plan bench writes no rows for a left-out framework and says so on stderr. Without the flag
 * nothing is said. The configs: bench/realruns/configs; the binary: PLAN_EXE (set by meson).
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "plan_run.h"

#define CFG REALRUNS_CONFIG_DIR "/"

static plan_run_result R;

static void run_status(const char *args, int status)
{
    assert_int_equal(plan_run(&R, args), 0);
    if (R.status != status)
        fail_msg("plan %s exited %d (expected %d): %s", args, R.status, status, R.err);
}

static const char *MEG = "Left out (--exact-model): megatron: Megatron-LM's GPT layer cannot "
                         "build: ";
static const char *TT = "Left out (--exact-model): torchtitan: no torchtitan b5bcd76 model "
                        "class has: ";

/* The JSON of `plan <args> --format json`: no plan of an excluded framework (only FSDP2 ones
 * when only_fsdp2, some other when not), and search.exact_model_excluded has exactly the keys
 * excluded (NULL-terminated), each a non-empty list. */
static void check_json(const char *args, const char *const *excluded, bool only_fsdp2)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s --format json", args);
    run_status(cmd, 0);
    json_error_t je;
    json_t *j = json_loads(R.out, 0, &je);
    if (!j) fail_msg("plan %s: output is not JSON (%s)", cmd, je.text);
    json_t *x = json_object_get(json_object_get(j, "search"), "exact_model_excluded");
    assert_true(json_is_object(x));
    size_t n = 0;
    for (; excluded[n]; n++) {
        json_t *list = json_object_get(x, excluded[n]);
        assert_true(json_is_array(list));
        assert_true(json_array_size(list) > 0);
    }
    assert_int_equal(json_object_size(x), n);
    size_t i, other = 0;
    json_t *p;
    json_array_foreach(json_object_get(j, "plans"), i, p) {
        const char *fw = json_string_value(json_object_get(json_object_get(p, "layout"),
                                                           "framework"));
        for (size_t k = 0; k < n; k++) assert_string_not_equal(fw, excluded[k]);
        if (strcmp(fw, "fsdp2")) other++;
    }
    if (only_fsdp2) assert_int_equal(other, 0);
    else assert_true(other > 0); /* Llama: Megatron/torchtitan plans still ranked */
    json_decref(j);
}

/* `plan --model CFG<config> --gpus 64 --exact-model` leaves Megatron-LM and torchtitan out
 * before the recommendation (an FSDP2 plan), each line with its first forms (meg_forms,
 * tt_forms: the text after "build: " / "has: "), says so in the comparison and the JSON; without
 * the flag nothing is said. */
static void check_both_left_out(const char *config, const char *meg_forms, const char *tt_forms)
{
    char args[512], json_args[600];
    snprintf(args, sizeof args, "--model " CFG "%s --gpus 64", config);
    snprintf(json_args, sizeof json_args, "%s --exact-model", args);
    run_status(json_args, 0);
    const char *meg = strstr(R.out, MEG), *tt = strstr(R.out, TT);
    assert_non_null(meg);
    assert_non_null(tt);
    assert_int_equal(strncmp(meg + strlen(MEG), meg_forms, strlen(meg_forms)), 0);
    assert_int_equal(strncmp(tt + strlen(TT), tt_forms, strlen(tt_forms)), 0);
    const char *rec = strstr(R.out, "Recommended: ");
    assert_non_null(rec);
    assert_true(meg < rec && tt < rec);
    assert_int_equal(strncmp(rec, "Recommended: fsdp2", 18), 0);
    assert_non_null(strstr(R.out, "megatron left out (--exact-model"));
    assert_non_null(strstr(R.out, "torchtitan left out (--exact-model"));
    const char *const ex[] = {"megatron", "torchtitan", NULL};
    check_json(json_args, ex, true);
    /* without the flag: the three are ranked, nothing is left out */
    run_status(args, 0);
    assert_null(strstr(R.out, "Left out"));
    assert_null(strstr(R.out, "exact-model"));
}

static void test_falcon(void **state)
{
    (void)state;
    check_both_left_out("falcon-7b.json",
                        "attention and MLP in parallel on the same input (parallel block)\n",
                        "attention and MLP in parallel on the same input (parallel block); "
                        "LayerNorm in the decoder layers (and 1 more; plan without "
                        "--exact-model lists them)\n");
}

static void test_olmo2(void **state)
{
    (void)state;
    check_both_left_out("olmo2-7b.json",
                        "norms after attention and MLP instead of before them; q/k norm weights "
                        "over every head (--qk-layernorm shares one per head)\n",
                        "norms after attention and MLP instead of before them; q/k norm weights "
                        "over every head\n");
}

static void test_llama_none(void **state)
{
    (void)state;
    run_status("--model " CFG "llama-3.1-8b.json --gpus 8 --exact-model", 0);
    assert_null(strstr(R.out, "Left out"));
    assert_null(strstr(R.out, "left out"));
    assert_non_null(strstr(R.out, "FSDP2 vs Megatron vs torchtitan: "));
    const char *const none[] = {NULL};
    check_json("--model " CFG "llama-3.1-8b.json --gpus 8 --exact-model", none, false);
    /* a framework that builds it: searched as asked */
    run_status("--model " CFG "llama-3.1-8b.json --gpus 8 --framework megatron --exact-model", 0);
    assert_non_null(strstr(R.out, "Recommended: megatron"));
}

/* One "plan: error: " line on stderr, nothing on stdout, exit status 2. */
static void check_refusal(const char *args, const char *start)
{
    run_status(args, 2);
    assert_string_equal(R.out, "");
    if (strncmp(R.err, start, strlen(start))) fail_msg("stderr: %s", R.err);
    assert_non_null(strstr(R.err, "drop --exact-model"));
    assert_non_null(strstr(R.err, "--framework fsdp2 runs the model's own code"));
    const char *nl = strchr(R.err, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], '\0'); /* one line */
}

static void test_refusals(void **state)
{
    (void)state;
    check_refusal("--model " CFG "falcon-7b.json --gpus 64 --framework megatron --exact-model",
                  "plan: error: --exact-model: --framework megatron cannot build falcon-7b as it "
                  "is (Megatron-LM's GPT layer cannot build: attention and MLP in parallel");
    check_refusal("--model " CFG "olmo2-7b.json --gpus 64 --framework torchtitan --exact-model",
                  "plan: error: --exact-model: --framework torchtitan cannot build olmo2-7b as "
                  "it is (no torchtitan b5bcd76 model class has: norms after attention");
    /* plan estimate: its default framework is megatron */
    check_refusal("estimate --model " CFG "olmo2-7b.json --gpus 64 --exact-model",
                  "plan: error: --exact-model: megatron (the default framework here) cannot "
                  "build olmo2-7b");
    check_refusal("estimate --model " CFG "falcon-7b.json --gpus 64 --tp 1 --framework "
                  "torchtitan --exact-model",
                  "plan: error: --exact-model: --framework torchtitan cannot build falcon-7b");
    /* the search's --emit of a left-out framework's config */
    check_refusal("--model " CFG "falcon-7b.json --gpus 64 --exact-model --emit megatron-args",
                  "plan: error: --exact-model: megatron (the framework --emit megatron-args "
                  "configures) cannot build falcon-7b");
    /* FSDP2 always builds it; an estimate of Llama under Megatron too */
    run_status("estimate --model " CFG "falcon-7b.json --gpus 64 --framework fsdp2 --exact-model "
               "--recompute full",
               0);
    run_status("estimate --model " CFG "llama-3.1-8b.json --gpus 64 --tp 1 --exact-model", 0);
}

static void test_bench(void **state)
{
    (void)state;
    run_status("bench --models " CFG "falcon-7b.json --gpus 64 --exact-model", 0);
    assert_non_null(strstr(R.out, "\"falcon-7b\",\"6921720704\",\"fsdp2\""));
    assert_null(strstr(R.out, "\"megatron\""));
    assert_null(strstr(R.out, "\"torchtitan\""));
    assert_non_null(strstr(R.err, "bench: falcon-7b: no rows for megatron (--exact-model): "
                                  "Megatron-LM's GPT layer cannot build: attention and MLP"));
    assert_non_null(strstr(R.err, "bench: falcon-7b: no rows for torchtitan (--exact-model): "));
    /* without the flag: every framework's rows */
    run_status("bench --models " CFG "falcon-7b.json --gpus 64", 0);
    assert_non_null(strstr(R.out, "\"megatron\""));
    assert_non_null(strstr(R.out, "\"torchtitan\""));
    /* no framework asked builds it: an error before any row */
    run_status("bench --models " CFG "falcon-7b.json --gpus 64 --frameworks megatron,torchtitan "
               "--exact-model",
               2);
    assert_string_equal(R.out, "");
    assert_non_null(strstr(R.err, "plan: error: --exact-model: no framework of --frameworks "
                                  "builds falcon-7b as it is (megatron: "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_falcon),     cmocka_unit_test(test_olmo2),
        cmocka_unit_test(test_llama_none), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
