/*
 * test_precision_auto.c — end-to-end tests of the search's precision (issue 16): `--precision
 * auto`, the default, searches bf16 and FP8 on a GPU with FP8 tensor cores (H100) and says what
 * the chosen format buys against the same layout in bf16 — numbers checked here against `plan
 * estimate` of that layout pinned to each format; on A100 (no FP8) it is the bf16 search and
 * says nothing; `--precision bf16` pins it; the emitted configs of an FP8 recommendation carry
 * FP8 and `plan check` reads it back; plan bench writes the format of each row; bad values are
 * one line and exit 2.
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan_run.h"
#include "test_tmp.h"

static plan_run_result R;

static void run(const char *args) { assert_int_equal(plan_run(&R, args), 0); }

static json_t *run_json(const char *args)
{
    run(args);
    if (R.status != 0) fail_msg("plan %s exited %d: %s", args, R.status, R.err);
    json_error_t je;
    json_t *j = json_loads(R.out, 0, &je);
    if (!j) fail_msg("plan %s: output is not JSON (%s)", args, je.text);
    return j;
}

static double num(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    if (!json_is_number(v)) fail_msg("no number at %s%s%s", a, b ? "." : "", b ? b : "");
    return json_number_value(v);
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Equal to 1e-9 relative: the same closed form by two routes. */
static void same(double a, double b, const char *what)
{
    if (!(fabs(a - b) <= 1e-9 * fabs(b))) fail_msg("%s: %.12g vs %.12g", what, a, b);
}

/* Each bad input: exit 2, exactly one line on stderr, nothing on stdout. */
static void bad(const char *args, const char *needle)
{
    run(args);
    if (R.status != 2) fail_msg("plan %s: exit %d, wanted 2 (stderr: %s)", args, R.status, R.err);
    size_t lines = 0;
    for (const char *c = R.err; *c; c++) lines += *c == '\n';
    if (lines != 1) fail_msg("plan %s: %zu lines on stderr: %s", args, lines, R.err);
    if (!strstr(R.err, needle)) fail_msg("plan %s: stderr lacks '%s': %s", args, needle, R.err);
    assert_string_equal(R.out, "");
}

/* The searched fields as plan estimate flags (an FSDP2 layout: DP, Ulysses CP, micro-batch,
 * recompute, HSDP group, offload, reshard). */
static void fsdp2_flags(json_t *l, char *buf, size_t len)
{
    long long shard = json_integer_value(json_object_get(l, "shard_size"));
    char hsdp[48] = "";
    if (shard > 0) snprintf(hsdp, sizeof hsdp, " --shard-size %lld", shard);
    snprintf(buf, len, "--framework fsdp2 --cp %lld --mbs %lld --recompute %s%s%s%s",
             (long long)json_integer_value(json_object_get(l, "cp")),
             (long long)json_integer_value(json_object_get(l, "mbs")), str(l, "recompute"), hsdp,
             json_is_true(json_object_get(l, "offload")) ? " --offload" : "",
             json_is_true(json_object_get(l, "reshard_after_forward"))
                 ? ""
                 : " --no-reshard-after-forward");
}

/* 8B on 8 H100 under FSDP2 (the guide's trainer path): the default search picks torchao's FP8
 * (tensorwise) and states the same layout's bf16 figures; `plan estimate` of that layout in
 * each format gives the same numbers. */
static void test_default_h100_searches_fp8(void **state)
{
    (void)state;
    json_t *j = run_json("--model 8b --gpus 8 --framework fsdp2 --top 3 --format json");
    json_t *pr = json_object_get(j, "precision");
    assert_non_null(pr);
    assert_string_equal(str(pr, "mode"), "auto");
    json_t *searched = json_object_get(pr, "searched");
    assert_int_equal(json_array_size(searched), 2); /* H100: no MXFP8/NVFP4 (Blackwell only) */
    assert_string_equal(json_string_value(json_array_get(searched, 0)), "bf16");
    assert_string_equal(json_string_value(json_array_get(searched, 1)), "fp8");
    assert_string_equal(str(pr, "chosen"), "fp8");
    assert_string_equal(str(pr, "label"), "fp8-tensorwise");
    json_t *best = json_array_get(json_object_get(j, "plans"), 0);
    json_t *l = json_object_get(best, "layout");
    assert_string_equal(str(l, "precision"), "fp8");
    assert_string_equal(str(l, "fp8_recipe"), "tensorwise");
    json_t *cmp = json_object_get(pr, "compared");
    assert_string_equal(str(cmp, "precision"), "bf16");

    char flags[256], args[512];
    fsdp2_flags(l, flags, sizeof flags);
    snprintf(args, sizeof args, "estimate --model 8b --gpus 8 %s --precision bf16 --format json",
             flags);
    json_t *e16 = run_json(args);
    snprintf(args, sizeof args,
             "estimate --model 8b --gpus 8 %s --precision fp8 --fp8-recipe tensorwise --format "
             "json", flags);
    json_t *e8 = run_json(args);
    /* the recommendation is that layout in FP8 ... */
    same(num(best, "time", "step_s"), num(e8, "time", "step_s"), "fp8 step");
    same(num(best, "memory", "total_bytes"), num(e8, "memory", "total_bytes"), "fp8 memory");
    /* ... and the bf16 figures it is compared with are that layout's, pinned to bf16 */
    double s16 = num(e16, "time", "step_s"), s8 = num(e8, "time", "step_s");
    same(num(cmp, "step_s", NULL), s16, "bf16 step");
    same(num(cmp, "tokens_per_s", NULL), num(e16, "tokens_per_s", NULL), "bf16 tokens/s");
    same(num(cmp, "memory_bytes", NULL), num(e16, "memory", "total_bytes"), "bf16 memory");
    assert_true(json_is_true(json_object_get(cmp, "feasible")));
    same(num(pr, "low_precision_speedup", NULL), s16 / s8, "speedup");
    assert_true(s16 / s8 > 1.02); /* FP8 wins here: the case is about that */

    /* the text says it, with the same figures */
    run("--model 8b --gpus 8 --framework fsdp2 --top 3");
    assert_int_equal(R.status, 0);
    const char *p = strstr(R.out, "\nPrecision: fp8-tensorwise (searched: bf16, fp8).");
    if (!p) fail_msg("no Precision paragraph:\n%s", R.out);
    char want[128];
    snprintf(want, sizeof want, "%.3f s/step", s16);
    assert_non_null(strstr(p, want));
    snprintf(want, sizeof want, "-> %.2fx the bf16 speed", s16 / s8);
    assert_non_null(strstr(p, want));
    /* the table marks the format of a low-precision row */
    assert_non_null(strstr(R.out, "  fp8-tensorwise\n"));

    /* any: the older name of auto, the same search */
    json_t *a = run_json("--model 8b --gpus 8 --framework fsdp2 --top 3 --format json "
                         "--precision any");
    same(num(json_array_get(json_object_get(a, "plans"), 0), "time", "step_s"),
         num(best, "time", "step_s"), "any = auto");
    json_decref(a);
    json_decref(e8);
    json_decref(e16);
    json_decref(j);
}

/* --precision bf16 pins the search: only bf16 layouts, nothing said about precision; its best
 * is no faster than auto's (auto searches a superset). */
static void test_bf16_pins(void **state)
{
    (void)state;
    json_t *j = run_json("--model 8b --gpus 8 --framework fsdp2 --top 5 --format json "
                         "--precision bf16 --no-simulate");
    json_t *pr = json_object_get(j, "precision");
    assert_string_equal(str(pr, "mode"), "pinned");
    assert_int_equal(json_array_size(json_object_get(pr, "searched")), 1);
    assert_string_equal(str(pr, "chosen"), "bf16");
    assert_true(json_is_null(json_object_get(pr, "compared")));
    json_t *plans = json_object_get(j, "plans");
    assert_true(json_array_size(plans) == 5);
    for (size_t i = 0; i < json_array_size(plans); i++) /* absent reads as bf16 */
        assert_null(json_object_get(json_object_get(json_array_get(plans, i), "layout"),
                                    "precision"));
    json_t *a = run_json("--model 8b --gpus 8 --framework fsdp2 --top 1 --format json "
                         "--no-simulate");
    assert_true(num(json_array_get(json_object_get(a, "plans"), 0), "time", "step_s") <
                num(json_array_get(plans, 0), "time", "step_s"));
    json_decref(a);
    json_decref(j);
    run("--model 8b --gpus 8 --framework fsdp2 --top 3 --precision bf16");
    assert_int_equal(R.status, 0);
    assert_null(strstr(R.out, "Precision:"));
    assert_null(strstr(R.out, "fp8"));
}

/* A100 has no FP8 tensor cores: auto is the bf16 search, the same plans as --precision bf16,
 * and nothing is said about precision. */
static void test_default_a100_is_bf16(void **state)
{
    (void)state;
    json_t *j = run_json("--model 8b --gpus 8 --system a100-80g --top 3 --format json");
    json_t *pr = json_object_get(j, "precision");
    assert_string_equal(str(pr, "mode"), "auto");
    assert_int_equal(json_array_size(json_object_get(pr, "searched")), 1);
    assert_string_equal(str(pr, "chosen"), "bf16");
    assert_true(json_is_null(json_object_get(pr, "compared")));
    json_t *b = run_json("--model 8b --gpus 8 --system a100-80g --top 3 --format json "
                         "--precision bf16");
    json_t *pa = json_object_get(j, "plans"), *pb = json_object_get(b, "plans");
    assert_int_equal(json_array_size(pa), json_array_size(pb));
    for (size_t i = 0; i < json_array_size(pa); i++) {
        json_t *x = json_array_get(pa, i), *y = json_array_get(pb, i);
        assert_null(json_object_get(json_object_get(x, "layout"), "precision"));
        same(num(x, "time", "step_s"), num(y, "time", "step_s"), "a100 auto = bf16");
    }
    assert_int_equal(num(j, "search", "evaluated"), num(b, "search", "evaluated"));
    json_decref(b);
    json_decref(j);
    run("--model 8b --gpus 8 --system a100-80g --top 3");
    assert_int_equal(R.status, 0);
    assert_null(strstr(R.out, "Precision:"));
}

/* On Blackwell auto searches the 8-bit formats (FP8 and MXFP8) and leaves NVFP4 to an explicit
 * request (precision_choice.h); --precision any adds it. Llama-3.1-8B on 8 B200s: auto's plan is
 * 8-bit, any's is NVFP4 (the fastest format there), and any's step is shorter. */
static void test_blackwell_auto_is_8bit(void **state)
{
    (void)state;
    json_t *a = run_json("--model 8b --gpus 8 --system b200 --top 1 --format json --no-simulate");
    json_t *pa = json_object_get(a, "precision");
    assert_string_equal(str(pa, "mode"), "auto");
    json_t *sa = json_object_get(pa, "searched");
    assert_int_equal(json_array_size(sa), 3);
    assert_string_equal(json_string_value(json_array_get(sa, 2)), "mxfp8");
    assert_string_not_equal(str(pa, "chosen"), "nvfp4");
    assert_string_not_equal(str(pa, "chosen"), "bf16");
    json_t *n = run_json("--model 8b --gpus 8 --system b200 --top 1 --format json --no-simulate "
                         "--precision any");
    json_t *pn = json_object_get(n, "precision");
    assert_string_equal(str(pn, "mode"), "any");
    assert_int_equal(json_array_size(json_object_get(pn, "searched")), 4);
    assert_string_equal(str(pn, "chosen"), "nvfp4");
    double step_a = num(json_array_get(json_object_get(a, "plans"), 0), "time", "step_s");
    double step_n = num(json_array_get(json_object_get(n, "plans"), 0), "time", "step_s");
    assert_true(step_n < step_a);
    json_decref(a);
    json_decref(n);
}

/* Where bf16 ranks first the output says so with the FP8 figures of the same layout; where the
 * framework cannot run the FP8 recipe asked, it says why. */
static void test_bf16_wins_or_fp8_unavailable(void **state)
{
    (void)state;
    /* torchtitan, 8B on 8 GPUs at sequence 512: the rowwise casts cost more than FP8 saves */
    json_t *j = run_json("--model 8b --gpus 8 --framework torchtitan --seq 512 --gbs 8 --top 1 "
                         "--format json");
    json_t *pr = json_object_get(j, "precision");
    assert_string_equal(str(pr, "chosen"), "bf16");
    json_t *cmp = json_object_get(pr, "compared");
    assert_string_equal(str(cmp, "label"), "fp8-rowwise");
    double best = num(json_array_get(json_object_get(j, "plans"), 0), "time", "step_s");
    assert_true(num(cmp, "step_s", NULL) > best);
    same(num(pr, "low_precision_speedup", NULL), best / num(cmp, "step_s", NULL), "speedup");
    json_decref(j);
    run("--model 8b --gpus 8 --framework torchtitan --seq 512 --gbs 8 --top 1");
    assert_non_null(strstr(R.out, "\nPrecision: bf16 ranks first (searched: bf16, fp8)."));
    assert_non_null(strstr(R.out, "-> fp8-rowwise buys nothing here"));
    /* torchao has no delayed scaling: FSDP2 with --fp8-recipe delayed searches bf16 alone */
    j = run_json("--model 8b --gpus 8 --framework fsdp2 --fp8-recipe delayed --top 1 --format "
                 "json");
    pr = json_object_get(j, "precision");
    assert_string_equal(str(pr, "chosen"), "bf16");
    assert_non_null(strstr(str(pr, "unavailable"), "removed delayed scaling"));
    json_decref(j);
    run("--model 8b --gpus 8 --framework fsdp2 --fp8-recipe delayed --top 1");
    assert_non_null(strstr(R.out, "FP8 is not available for this plan: "));
}

/* The flags after "--system NAME" on the "plan check FILE" line of emitted text (the line a user
 * runs: it names --gemm-headroom off where the search's sustained rate differs from plan check's
 * default, the bubble's headroom), into out. */
static void check_line_flags(const char *text, char *out, size_t outlen)
{
    const char *p = strstr(text, "plan check FILE");
    assert_non_null(p);
    p = strstr(p, "--system ");
    assert_non_null(p);
    p += strlen("--system ");
    p += strcspn(p, " \n"); /* the system's name */
    size_t n = strcspn(p, "\n");
    assert_true(n < outlen);
    memcpy(out, p, n);
    out[n] = '\0';
}

/* The configs of an FP8 recommendation carry FP8, and plan check reads it back to the same
 * prediction, with the flags the file's "plan check FILE" line names: the trainer YAML
 * (low_precision section, with --fp8-param-gather) and torchtitan's command (its float8
 * converter line). */
static void test_emitted_fp8_read_back(void **state)
{
    (void)state;
    const char *path = test_tmp_path("plan_precision_auto.yaml");
    char args[1024];
    json_t *j = run_json("--model 70b --gpus 64 --emit json");
    const char *prec = str(json_object_get(j, "layout"), "precision");
    assert_string_equal(prec, "fp8");
    double step = num(j, "time", "step_s");
    json_decref(j);
    snprintf(args, sizeof args, "--model 70b --gpus 64 --emit yaml > '%s'", path);
    run(args);
    assert_int_equal(R.status, 0);
    run("--model 70b --gpus 64 --emit yaml");
    char flags[256];
    check_line_flags(R.out, flags, sizeof flags);
    /* a pipeline (PP 2) ranked at the sustained rate: plan check's default would count the
     * bubble's headroom, so the file says --gemm-headroom off */
    assert_string_equal(flags, " --gemm-headroom off");
    snprintf(args, sizeof args, "check '%s' --emit json", path); /* the file read back */
    j = run_json(args);
    json_t *l = json_object_get(j, "layout");
    assert_non_null(l);
    assert_string_equal(str(l, "precision"), "fp8");
    assert_true(json_is_true(json_object_get(l, "fp8_param_gather")));
    json_decref(j);
    snprintf(args, sizeof args, "check '%s'%s", path, flags);
    run(args);
    assert_int_equal(R.status, 0);
    char want[64];
    snprintf(want, sizeof want, "step time    %.2f s", step);
    assert_non_null(strstr(R.out, want));
    assert_non_null(strstr(R.out, "fp8-delayed params"));
    /* Megatron-LM's flags (plan check does not read them; Megatron-LM's parser does) */
    run("--model 70b --gpus 64 --emit megatron-args");
    assert_non_null(strstr(R.out, "--fp8-format hybrid"));
    assert_non_null(strstr(R.out, "--fp8-param-gather"));
    run("--model 70b --gpus 64 --emit bridge");
    assert_non_null(strstr(R.out, "bf16_with_fp8_delayed_scaling_mixed"));
    /* torchtitan */
    j = run_json("--model 8b --gpus 64 --framework torchtitan --emit json");
    assert_string_equal(str(json_object_get(j, "layout"), "fp8_recipe"), "rowwise");
    step = num(j, "time", "step_s");
    json_decref(j);
    snprintf(args, sizeof args, "--model 8b --gpus 64 --framework torchtitan --emit torchtitan "
             "> '%s'", path);
    run(args);
    run("--model 8b --gpus 64 --framework torchtitan --emit torchtitan");
    check_line_flags(R.out, flags, sizeof flags);
    snprintf(args, sizeof args, "check '%s'%s", path, flags);
    run(args);
    assert_int_equal(R.status, 0);
    snprintf(want, sizeof want, "step time    %.2f s", step);
    assert_non_null(strstr(R.out, want));
    assert_non_null(strstr(R.out, "fp8-rowwise"));
    unlink(path);
}

/* plan bench: the precision column; --precision bf16 pins the sweep; a file without the column
 * (written before it) reads as bf16. */
static void test_bench_precision(void **state)
{
    (void)state;
    const char *a = test_tmp_path("plan_prec_a.csv"), *b = test_tmp_path("plan_prec_b.csv");
    char args[1024];
    snprintf(args, sizeof args, "bench --models 3b --gpus 8 --frameworks megatron -o %s", a);
    run(args);
    assert_int_equal(R.status, 0);
    snprintf(args, sizeof args,
             "bench --models 3b --gpus 8 --frameworks megatron --precision bf16 -o %s", b);
    run(args);
    assert_int_equal(R.status, 0);
    FILE *f = fopen(a, "r");
    char line[1024];
    int fp8_rows = 0, rows = 0;
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",\"precision\"\n"));
    while (fgets(line, sizeof line, f)) rows++, fp8_rows += strstr(line, ",\"fp8-") != NULL;
    fclose(f);
    assert_int_equal(rows, 3);
    assert_true(fp8_rows >= 1);
    /* A (auto) against B (bf16): every row of B is a layout A did not pick in bf16 */
    snprintf(args, sizeof args, "bench --compare %s %s", b, a);
    run(args);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, " fp8-"));
    /* a file from before the column: the same rows, read as bf16, compare unchanged */
    snprintf(args, sizeof args,
             "awk -F, 'BEGIN{OFS=\",\"} {NF=NF-1; print}' %s > %s.old && mv %s.old %s", b, b, b,
             b);
    assert_int_equal(system(args), 0);
    char c[1024];
    snprintf(c, sizeof c, "bench --compare %s %s", b, b);
    run(c);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "0 changed, 3 unchanged, 0 added, 0 removed"));
    unlink(a);
    unlink(b);
}

static void test_bad_values(void **state)
{
    (void)state;
    bad("--model 8b --gpus 8 --precision fp16",
        "--precision must be auto, any, bf16, fp8, mxfp8 or nvfp4");
    bad("--model 8b --gpus 8 --precision", "needs a value");
    bad("estimate --model 8b --gpus 8 --precision auto",
        "--precision auto searches formats, and this command prices one layout");
    bad("estimate --model 8b --gpus 8 --precision any", "--precision auto searches formats");
    bad("simulate --model 8b --gpus 8 --precision auto", "--precision auto searches formats");
    bad("measure --model 8b --gpus 8 --precision auto --dry-run",
        "--precision auto searches formats");
    bad("compare-systems --model 8b --gpus 8 --precision fp8", "--precision auto (the default");
    bad("bench --models 8b --gpus 8 --precision fp16", "--precision must be auto");
    bad("bench --models 8b --gpus 8 --system a100-80g --precision fp8", "no peak_fp8_flops");
    bad("--model 8b --gpus 8 --system a100-80g --precision fp8", "no peak_fp8_flops");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_h100_searches_fp8),
        cmocka_unit_test(test_bf16_pins),
        cmocka_unit_test(test_default_a100_is_bf16),
        cmocka_unit_test(test_blackwell_auto_is_8bit),
        cmocka_unit_test(test_bf16_wins_or_fp8_unavailable),
        cmocka_unit_test(test_emitted_fp8_read_back),
        cmocka_unit_test(test_bench_precision),
        cmocka_unit_test(test_bad_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
