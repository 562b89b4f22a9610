/*
 * test_cli.c — end-to-end tests of the `plan` executable: the public JSON keys, the search's
 * contract (tp*pp*dp*cp = GPUs, best first), and bad input (one line on stderr, exit 2).
 * The binary's path comes from PLAN_EXE (set by meson).
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan_run.h"
#include "test_tmp.h"

static plan_run_result R;

static void run(const char *args) { assert_int_equal(plan_run(&R, args), 0); }

static json_t *run_json_status(const char *args, int status)
{
    run(args);
    if (R.status != status) fail_msg("plan %s exited %d, wanted %d: %s", args, R.status, status,
                                     R.err);
    json_error_t je;
    json_t *j = json_loads(R.out, 0, &je);
    if (!j) fail_msg("plan %s: output is not JSON (%s)", args, je.text);
    return j;
}

static json_t *run_json(const char *args) { return run_json_status(args, 0); }

static void has_keys(json_t *o, const char *section, const char *const *keys)
{
    json_t *s = section ? json_object_get(o, section) : o;
    assert_non_null(s);
    for (; *keys; keys++)
        if (!json_object_get(s, *keys)) fail_msg("missing key %s.%s", section ? section : "", *keys);
}

static void check_estimate_object(json_t *e)
{
    has_keys(e, "model", (const char *const[]){"name", "params_total", "params_active", NULL});
    has_keys(e, "layout",
             (const char *const[]){"framework", "tp", "pp", "dp", "cp", "ep", "vpp", "mbs", "gbs",
                                   "seq", "sp", "sharding", "recompute", NULL});
    has_keys(e, "memory",
             (const char *const[]){"weights_bytes", "gradients_bytes", "optimizer_bytes",
                                   "activations_bytes", "other_bytes", "total_bytes",
                                   "capacity_bytes", NULL});
    has_keys(e, "time",
             (const char *const[]){"step_s", "compute_s", "comm_exposed_s", "bubble_s", NULL});
    has_keys(e, NULL,
             (const char *const[]){"model_flops_per_step", "hardware_flops_per_step",
                                   "tokens_per_s", "mfu", "hfu", "feasible", "infeasible_reason",
                                   NULL});
    json_t *mem = json_object_get(e, "memory");
    double parts = 0;
    const char *const p[] = {"weights_bytes", "gradients_bytes", "optimizer_bytes",
                             "activations_bytes", "other_bytes", NULL};
    for (const char *const *k = p; *k; k++) parts += json_number_value(json_object_get(mem, *k));
    double total = json_number_value(json_object_get(mem, "total_bytes"));
    assert_true(parts > 0 && total > 0 && (parts - total) / total < 1e-9 &&
                (total - parts) / total < 1e-9);
    double mfu = json_number_value(json_object_get(e, "mfu"));
    assert_true(mfu > 0 && mfu < 1);
}

static void test_estimate_json(void **state)
{
    (void)state;
    json_t *j = run_json("estimate --model 8b --gpus 8 --tp 2 --pp 2 --format json");
    check_estimate_object(j);
    json_t *l = json_object_get(j, "layout");
    assert_int_equal(json_integer_value(json_object_get(l, "dp")), 2);
    assert_true(json_is_true(json_object_get(l, "sp")));
    assert_string_equal(json_string_value(json_object_get(l, "sharding")), "distopt");
    /* Llama-3.1-8B's exact count comes through */
    assert_true(json_number_value(json_object_get(json_object_get(j, "model"), "params_total")) ==
                8030261248.0);
    /* tokens/s = gbs * seq / step */
    double step = json_number_value(json_object_get(json_object_get(j, "time"), "step_s"));
    double tps = json_number_value(json_object_get(j, "tokens_per_s"));
    assert_true(fabs(tps * step - 1024.0 * 4096) < 1e-3);
    json_decref(j);
}

static void test_search_json(void **state)
{
    (void)state;
    json_t *j = run_json("--model 30b --gpus 64 --format json --top 5");
    json_t *plans = json_object_get(j, "plans");
    assert_true(json_array_size(plans) == 5);
    double prev = 0;
    for (size_t i = 0; i < json_array_size(plans); i++) {
        json_t *p = json_array_get(plans, i);
        check_estimate_object(p);
        json_t *l = json_object_get(p, "layout");
        long g = json_integer_value(json_object_get(l, "tp")) *
                 json_integer_value(json_object_get(l, "pp")) *
                 json_integer_value(json_object_get(l, "dp")) *
                 json_integer_value(json_object_get(l, "cp"));
        assert_int_equal(g, 64);
        assert_true(json_is_true(json_object_get(p, "feasible")));
        /* best first: by the simulator's step time where it re-ranked (issue 8) */
        json_t *sim = json_object_get(p, "time_simulated");
        assert_true(json_is_object(sim));
        double step = json_number_value(json_object_get(sim, "step_s"));
        assert_true(step >= prev);
        prev = step;
    }
    json_t *s = json_object_get(j, "search");
    assert_true(json_integer_value(json_object_get(s, "simulated")) >= 32);
    has_keys(s, NULL, (const char *const[]){"evaluated", "feasible", "seconds", NULL});
    assert_true(json_integer_value(json_object_get(s, "evaluated")) >=
                json_integer_value(json_object_get(s, "feasible")));
    json_decref(j);
}

static void test_search_human(void **state)
{
    (void)state;
    /* bf16 pinned (issue 16: the default search tries FP8 too): the figures below are the
     * bf16 search's */
    run("--model 30b --gpus 64 --precision bf16");
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "Recommended:"));
    assert_non_null(strstr(R.out, "FSDP2 vs Megatron"));
    assert_non_null(strstr(R.out, "Why:"));
    /* the recommendation leaves 0.8 GiB of 79.2 (under 5%): said, with the fastest ranked plan
     * that leaves 5% (explain.c explain_tight). (0.4 GiB before the search tried Megatron's
     * rank order, issue 21: TP 2 PP 2 DP 16 with --use-tp-pp-dp-mapping now ranks first.) */
    const char *tight = strstr(R.out, "- Tight: 0.8 GiB headroom is under 5% of the GPU");
    assert_non_null(tight);
    const char *alt = strstr(tight, "The fastest ranked plan with that room is #");
    assert_non_null(alt);
    double gib = 0;
    const char *end = strstr(alt, " GiB.\n");
    assert_non_null(end);
    while (end > alt && end[-1] != ' ') end--;
    gib = strtod(end, NULL);
    assert_true(gib > 0 && gib <= 0.95 * 79.2);
    /* and the recommendation's memory line says why tight matters (explain.h: the model's
     * measured misses, and the allocator's retries measured to cost 7-8.5% that close) */
    assert_non_null(strstr(R.out, "tight: under 5% of the GPU left; the memory model has missed"));
    assert_non_null(strstr(R.out, "ran 7-8.5% slower than priced"));
    /* the table marks rows in Megatron's other rank order and explains the mark */
    assert_non_null(strstr(R.out, "  pp-dp\n"));
    assert_non_null(strstr(R.out, "pp-dp = ranks in order tp-cp-ep-pp-dp"));
    /* 8B on 64 GPUs leaves 12.1 GiB: nothing said */
    run("--model 8b --gpus 64 --precision bf16");
    assert_int_equal(R.status, 0);
    assert_null(strstr(R.out, "- Tight:"));
    assert_null(strstr(R.out, "tight: under"));
    /* GLM-4.5 cut to 4 layers on one H200 (tests/data/hf/glm-4.5-L4.json, the held-out
     * ho20-glm45-L4-s4k-b1): 18.1 GiB headroom by allocation, but torch's reserved peak within
     * 5% of the GPU: the allocator's retries are named (measured: 6 retries, steps 1.5x slower
     * until the cache settled), not the model's misses */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "estimate --model %s/../tests/data/hf/glm-4.5-L4.json --system h200 --gpus 1 "
             "--framework fsdp2 --seq 4096 --mbs 1 --gbs 1",
             getenv("PLAN_DATA_DIR"));
    run(cmd);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "memory/GPU   121.7 GiB of 139.8 GiB (headroom 18.1 GiB)"));
    assert_non_null(strstr(R.out, "cache tight: torch's reserved peak "));
    assert_non_null(strstr(R.out, "1.5x slower until the cache settled"));
    assert_null(strstr(R.out, "tight: under"));
    /* torchtitan's mesh order is fixed: no row can carry the mark, so no legend for it */
    run("--model 8b --gpus 64 --framework torchtitan");
    assert_int_equal(R.status, 0);
    assert_null(strstr(R.out, "pp-dp"));
}

static void test_infeasible_estimate(void **state)
{
    (void)state;
    /* 405B on one GPU: valid layout, does not fit; says which stage and by how much; exits 1
     * and says "fits": false at the top (issue 17: it exited 0) */
    json_t *j = run_json_status("estimate --model 405b --gpus 1 --format json", 1);
    assert_true(json_is_false(json_object_get(j, "feasible")));
    assert_true(json_is_false(json_object_get(j, "fits")));
    const char *why = json_string_value(json_object_get(j, "infeasible_reason"));
    assert_non_null(why);
    assert_non_null(strstr(why, "GiB over"));
    json_decref(j);
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

static void test_bad_input(void **state)
{
    (void)state;
    bad("--model nosuch --gpus 8", "unknown model 'nosuch'");
    bad("--model 8b --gpus 8 --system nosuch", "unknown system 'nosuch'");
    bad("--model 8b --gpus 0", "--gpus needs an integer");
    bad("--model 8b --gpus -4", "--gpus needs an integer");
    bad("--model 8b --gpus 12x", "--gpus needs an integer");
    bad("--model 8b --gpus 99999999999", "--gpus needs an integer");
    bad("--model 8b", "no GPU count");
    bad("--model 8b --gpus 8 --seq 0", "--seq needs an integer");
    /* issue 20: the MoE knobs */
    bad("--model mixtral-8x7b --gpus 8 --moe-dispatcher nccl",
        "--moe-dispatcher must be alltoall, allgather, deepep or hybridep");
    bad("--model mixtral-8x7b --gpus 8 --moe-imbalance 0.5", "--moe-imbalance needs a number");
    bad("--model mixtral-8x7b --gpus 8 --moe-capacity-factor x",
        "--moe-capacity-factor needs a number");
    bad("estimate --model mixtral-8x7b --gpus 64 --pp 4 --ep 8 --moe-ep-overlap",
        "moe-ep-overlap");
    bad("--model 8b --gpus 8 --frobnicate", "unknown option");
    bad("--model 8b --gpus 8 --format xml", "--format must be");
    bad("estimate --model 8b --gpus 6 --tp 3", "must divide the attention heads");
    bad("estimate --model 8b --gpus 12 --tp 8", "not divisible by tp*pp*cp");
    bad("estimate --model 8b --gpus 8 --tp 2 --dp 2", "does not equal --gpus 8");
    bad("estimate --model 8b --gpus 8 --framework fsdp2 --pp 2", "no TP/PP/EP");
    bad("estimate --model 8b --gpus 8 --ep 2", "needs an MoE model");
    bad("estimate --model 8b --gpus 8 --recompute sometimes", "--recompute must be");
    bad("estimate --model 8b --gpus 8 --gbs 1000 --mbs 3", "not divisible by dp*mbs");
    bad("estimate --model /nonexistent.json --gpus 8", "cannot read model config");
    bad("frobnicate", "unknown command");
    bad("--model 8b --gpus 37", "no valid layout of 37 GPUs");
    bad("estimate --model 8b --gpus 8 --gemm-headroom maybe", "--gemm-headroom must be on or off");
    bad("--model 8b --gpus 8 --gemm-headroom on", "--gemm-headroom on prices one layout");
    /* malformed JSON model and system files */
    const char *badjson = test_tmp_path("plan_cli_bad.json");
    char args[1024];
    FILE *f = fopen(badjson, "w");
    fputs("{ \"num_hidden_layers\": 4,", f);
    fclose(f);
    snprintf(args, sizeof args, "--model %s --gpus 8", badjson);
    bad(args, "not valid JSON");
    snprintf(args, sizeof args, "--model 8b --gpus 8 --system %s", badjson);
    bad(args, "not valid JSON");
    f = fopen(badjson, "w");
    fputs("{\"gpu\": {\"peak_bf16_flops\": 1e15}}", f);
    fclose(f);
    bad(args, "lacks");
    unlink(badjson);
}

/* --gemm-headroom on (costmodel/gemm_headroom.h): one H100, FSDP2, Llama-3.2-1B seq 4096 mbs 2
 * (eager elementwise kernels and the optimizer beside its GEMMs) has the headroom for the
 * preset's burst ratio 1.16, and the step is faster; off (the default) reports 1 and the
 * sustained step. */
static void test_gemm_headroom_flag(void **state)
{
    (void)state;
    const char *args = "estimate --model 1b --gpus 1 --framework fsdp2 --mbs 2 --gbs 8 "
                       "--seq 4096 --format json";
    char on_args[512];
    snprintf(on_args, sizeof on_args, "%s --gemm-headroom on", args);
    json_t *off = run_json(args), *on = run_json(on_args);
    double r_off = json_real_value(json_object_get(json_object_get(off, "time"), "gemm_headroom_rate"));
    double r_on = json_real_value(json_object_get(json_object_get(on, "time"), "gemm_headroom_rate"));
    double s_off = json_real_value(json_object_get(json_object_get(off, "time"), "step_s"));
    double s_on = json_real_value(json_object_get(json_object_get(on, "time"), "step_s"));
    assert_true(r_off == 1);
    assert_true(fabs(r_on - 1.16) < 1e-12);
    assert_true(s_on < 0.97 * s_off);
    json_decref(off);
    json_decref(on);
    /* a pipeline: plan estimate prices the bubble's headroom by default (--gemm-headroom
     * bubble), --gemm-headroom off the sustained rate; the step is faster by the rate's share */
    const char *pp = "estimate --model 8b --gpus 4 --framework torchtitan --pp 4 --mbs 1 --gbs 8 "
                     "--seq 4096 --format json";
    char pp_off[512];
    snprintf(pp_off, sizeof pp_off, "%s --gemm-headroom off", pp);
    json_t *d = run_json(pp), *o = run_json(pp_off);
    double r_d = json_real_value(json_object_get(json_object_get(d, "time"), "gemm_headroom_rate"));
    double r_o = json_real_value(json_object_get(json_object_get(o, "time"), "gemm_headroom_rate"));
    double t_d = json_real_value(json_object_get(json_object_get(d, "time"), "step_s"));
    double t_o = json_real_value(json_object_get(json_object_get(o, "time"), "step_s"));
    assert_true(r_o == 1 && r_d > 1.01 && r_d <= 1.16);
    assert_true(t_d < t_o && t_d > t_o / 1.16);
    /* plan check of that layout's emitted command prices it as plan estimate does, with plan
     * estimate's default (the bubble's headroom), so the file's "plan check FILE" line needs no
     * flag and check gives the estimate's step; --gemm-headroom off, the sustained rate (check
     * priced the sustained rate by default before: the same config, 8B PP 4, printed one step
     * under plan estimate and a slower one under plan check) */
    run("estimate --model 8b --gpus 4 --framework torchtitan --pp 4 --mbs 1 --gbs 8 --seq 4096 "
        "--emit torchtitan");
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "plan check FILE --system h100\n"));
    const char *file = test_tmp_path("pp4.sh");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs(R.out, f);
    fclose(f);
    double t_c[2], r_c[2];
    for (int k = 0; k < 2; k++) {
        char check_args[600];
        snprintf(check_args, sizeof check_args, "check %s --emit json%s", file,
                 k ? " --gemm-headroom off" : "");
        run(check_args);
        assert_int_equal(R.status, 0);
        const char *brace = strchr(R.out, '{'); /* the report's lines, then the JSON */
        assert_non_null(brace);
        json_t *c = json_loads(brace, 0, NULL);
        assert_non_null(c);
        t_c[k] = json_real_value(json_object_get(json_object_get(c, "time"), "step_s"));
        r_c[k] = json_real_value(json_object_get(json_object_get(c, "time"), "gemm_headroom_rate"));
        json_decref(c);
    }
    assert_true(fabs(t_c[0] - t_d) < 1e-9 * t_d && fabs(r_c[0] - r_d) < 1e-12);
    assert_true(fabs(t_c[1] - t_o) < 1e-9 * t_o && r_c[1] == 1);
    json_decref(d);
    json_decref(o);
}

/* plan check and plan estimate print the same step for the same config: check takes estimate's
 * --gemm-headroom default (the pipeline bubble's, cli_gemm_headroom_default). Megatron layouts
 * with a pipeline, where the default matters (the bubble's headroom is > 1), on H100 and H200:
 * the trainer YAML plan estimate writes, read back as its "plan check FILE.yaml --system NAME"
 * line says, which names no --gemm-headroom. */
static void test_check_step_is_estimate_step(void **state)
{
    (void)state;
    static const char *const layouts[] = {
        "--model 8b --gpus 8 --system h100 --tp 2 --pp 2 --mbs 1 --gbs 64 --seq 4096",
        "--model 70b --gpus 16 --system h200 --tp 4 --pp 4 --vpp 5 --mbs 1 --gbs 64 --seq 4096 "
        "--precision fp8",
    };
    const char *file = test_tmp_path("check_step.yaml");
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        char args[600];
        snprintf(args, sizeof args, "estimate %s --format json", layouts[i]);
        json_t *j = run_json(args);
        double rate =
            json_real_value(json_object_get(json_object_get(j, "time"), "gemm_headroom_rate"));
        assert_true(rate > 1); /* the default is at stake here */
        json_decref(j);
        snprintf(args, sizeof args, "estimate %s", layouts[i]);
        run(args);
        assert_int_equal(R.status, 0);
        const char *s = strstr(R.out, "step time ");
        assert_non_null(s);
        char want[128];
        snprintf(want, sizeof want, "%.*s", (int)strcspn(s, "\n"), s);
        snprintf(args, sizeof args, "estimate %s --emit yaml", layouts[i]);
        run(args);
        assert_int_equal(R.status, 0);
        FILE *f = fopen(file, "w");
        assert_non_null(f);
        fputs(R.out, f);
        fclose(f);
        const char *line = strstr(R.out, "plan check FILE.yaml");
        assert_non_null(line);
        line += strlen("plan check FILE.yaml");
        char flags[128];
        snprintf(flags, sizeof flags, "%.*s", (int)strcspn(line, "\n"), line);
        assert_null(strstr(flags, "--gemm-headroom"));
        snprintf(args, sizeof args, "check %s%s", file, flags);
        run(args);
        assert_int_equal(R.status, 0);
        s = strstr(R.out, "step time ");
        assert_non_null(s);
        char got[128];
        snprintf(got, sizeof got, "%.*s", (int)strcspn(s, "\n"), s);
        assert_string_equal(got, want);
    }
    unlink(file);
}

/* --precision / --fp8-recipe (issue 16): rules, JSON keys only for low precision, the emitted
 * flags, and the search's note on what the format buys. */
/* gpt-oss keeps biases on its linear layers (--add-bias-linear); Megatron's MoE takes them only
 * with expert TP 1 (transformer_config.py:2614 at d98e8a6): the rule refuses ETP 2, and the
 * emitted flags of the plan it picks carry ETP 1 (Megatron-LM's own check found the old ETP 2) */
static void test_megatron_moe_bias(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args,
             "estimate --model %s/../tests/data/hf/gpt-oss-20b.json --framework megatron --gpus 8 "
             "--tp 2 --sp --ep 2 --etp 2",
             getenv("PLAN_DATA_DIR"));
    bad(args, "--etp 1");
    snprintf(args, sizeof args,
             "--model %s/../tests/data/hf/gpt-oss-20b.json --framework megatron --gpus 8 "
             "--emit megatron-args",
             getenv("PLAN_DATA_DIR"));
    run(args);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "--expert-tensor-parallel-size 1"));
}

static void test_precision(void **state)
{
    (void)state;
    bad("estimate --model 8b --gpus 8 --precision fp16", "--precision must be");
    bad("estimate --model 8b --gpus 8 --precision fp8 --fp8-recipe hourly", "--fp8-recipe must be");
    bad("estimate --model 8b --gpus 8 --precision nvfp4", "Blackwell");
    bad("estimate --model 8b --gpus 8 --framework fsdp2 --precision fp8 --fp8-recipe delayed",
        "removed delayed scaling");
    bad("--model 8b --gpus 8 --system a100-80g --precision fp8", "no peak_fp8_flops");
    json_t *j = run_json("estimate --model 8b --gpus 8 --format json");
    assert_null(json_object_get(json_object_get(j, "layout"), "precision"));
    json_decref(j);
    /* tp 2: the fp8 layout must fit (plan estimate exits 1 on a plan that does not) */
    j = run_json("estimate --model 8b --gpus 8 --tp 2 --precision fp8 --format json");
    json_t *l = json_object_get(j, "layout");
    assert_string_equal(json_string_value(json_object_get(l, "precision")), "fp8");
    assert_string_equal(json_string_value(json_object_get(l, "fp8_recipe")), "delayed");
    json_decref(j);
    run("estimate --model 8b --gpus 8 --tp 2 --precision fp8 --emit megatron-args");
    assert_non_null(strstr(R.out, "--fp8-format hybrid"));
    assert_non_null(strstr(R.out, "--fp8-recipe delayed"));
    run("estimate --model 8b --gpus 8 --system b200 --precision nvfp4 --emit bridge");
    assert_non_null(strstr(R.out, "bf16_with_nvfp4_mixed"));
    run("--model 8b --gpus 8 --precision any --top 3");
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "Precision: fp8-"));
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

/* plan bench: header, one row per framework x sharding that fits, --compare, bad files. */
static void test_bench_csv(void **state)
{
    (void)state;
    const char *a = test_tmp_path("plan_bench_a.csv"), *b = test_tmp_path("plan_bench_b.csv");
    char args[1536], cmp_ab[1536], cmp_aa[1536];
    snprintf(cmp_aa, sizeof cmp_aa, "bench --compare %s %s", a, a);
    snprintf(cmp_ab, sizeof cmp_ab, "bench --compare %s %s", a, b);
    snprintf(args, sizeof args, "bench --models 3b,8b --gpus 8 --frameworks megatron -o %s", a);
    run(args);
    assert_int_equal(R.status, 0);
    /* 2 models x 1 GPU count x (ddp, distopt, fsdp) = 6 rows + header */
    assert_int_equal(count_lines(a), 7);
    FILE *f = fopen(a, "r");
    char header[1024];
    assert_non_null(fgets(header, sizeof header, f));
    fclose(f);
    /* issue 16: precision last (the search tries FP8 by default; older files lack it) */
    assert_string_equal(header,
                        "\"model\",\"params\",\"framework\",\"sharding\",\"tp\",\"pp\",\"dp\","
                        "\"cp\",\"ep\",\"vpp\",\"mbs\",\"gbs\",\"seq\",\"recompute\",\"gpus\","
                        "\"system\",\"step_s\",\"tokens_per_s\",\"mfu\",\"memory_gib\","
                        "\"feasible\",\"measured_step_s\",\"measured_memory_gib\","
                        "\"error_pct\",\"plan_version\",\"precision\"\n");
    run(cmp_aa);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "0 changed, 6 unchanged, 0 added, 0 removed"));
    /* B: the same file with one step time changed by +10% */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "awk -F, 'NR==2{split($17,q,\"\\\"\"); $17=\"\\\"\" q[2]*1.1 \"\\\"\"} {print}' "
             "OFS=, %s > %s", a, b);
    assert_int_equal(system(cmd), 0);
    run(cmp_ab);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "1 changed, 5 unchanged"));
    assert_non_null(strstr(R.out, "+10.0%"));
    /* malformed inputs */
    f = fopen(b, "w");
    fputs("not,a,results,file\n1,2,3,4\n", f);
    fclose(f);
    bad(cmp_ab, "lacks the column");
    f = fopen(b, "w");
    fputs(header, f);
    fputs("\"3b\",\"x\"\n", f);
    fclose(f);
    bad(cmp_ab, "is not a number");
    f = fopen(b, "w");
    fputs(header, f);
    fputs("\"3b,\"unterminated\n", f);
    fclose(f);
    bad(cmp_ab, "not valid CSV");
    snprintf(args, sizeof args, "bench --compare %s /nonexistent.csv", a);
    bad(args, "cannot read results file");
    bad("bench --models 3b", "needs both models and GPU counts");
    bad("bench --models nosuch --gpus 8", "unknown model 'nosuch'"); /* and no header on stdout */
    bad("bench --models 3b --gpus 8 --frameworks jax", "--frameworks takes");
    unlink(a);
    unlink(b);
}

/* The step simulator (issue 8): plan simulate --trace, estimate --simulate, --no-simulate. */
static void test_simulate(void **state)
{
    (void)state;
    const char *path = test_tmp_path("plan_cli_trace.json");
    char args[1024];
    unlink(path);
    snprintf(args, sizeof args, "simulate --model 8b --gpus 16 --tp 2 --pp 4 --trace %s", path);
    run(args);
    if (R.status != 0) fail_msg("plan simulate exited %d: %s", R.status, R.err);
    assert_non_null(strstr(R.out, "simulated"));
    assert_non_null(strstr(R.out, "closed form"));
    json_error_t je;
    json_t *t = json_load_file(path, 0, &je);
    if (!t) fail_msg("trace is not JSON: %s", je.text);
    json_t *events = json_object_get(t, "traceEvents");
    assert_true(json_is_array(events) && json_array_size(events) > 100);
    int pids[4] = {0};
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        if (strcmp(json_string_value(json_object_get(ev, "ph")), "X")) continue;
        assert_non_null(json_object_get(ev, "ts"));
        assert_non_null(json_object_get(ev, "dur"));
        assert_non_null(json_object_get(ev, "tid"));
        assert_non_null(json_string_value(json_object_get(ev, "name")));
        int pid = (int)json_integer_value(json_object_get(ev, "pid"));
        assert_true(pid >= 0 && pid < 4);
        pids[pid]++;
    }
    for (int p = 0; p < 4; p++) assert_true(pids[p] > 0); /* a process per stage */
    json_decref(t);
    unlink(path);

    json_t *j = run_json("simulate --model 8b --gpus 16 --tp 2 --pp 4 --vpp 2 --format json");
    check_estimate_object(j);
    assert_true(json_array_size(json_object_get(j, "stages")) == 4);
    /* its closed form and simulation are plan estimate --simulate's, the bubble's GEMM power
     * headroom included by default (the same rate > 1, the same step times) */
    json_decref(j);
    j = run_json("simulate --model 8b --gpus 8 --tp 2 --pp 4 --vpp 2 --gbs 8 --format json");
    json_t *est = run_json("estimate --model 8b --gpus 8 --tp 2 --pp 4 --vpp 2 --gbs 8 --simulate "
                           "--format json");
    json_t *jt = json_object_get(j, "time"), *et = json_object_get(est, "time");
    assert_true(json_number_value(json_object_get(jt, "gemm_headroom_rate")) > 1.01);
    assert_true(json_number_value(json_object_get(jt, "step_s")) ==
                json_number_value(json_object_get(et, "step_s")));
    assert_true(json_number_value(json_object_get(json_object_get(j, "time_simulated"), "step_s")) ==
                json_number_value(json_object_get(json_object_get(est, "time_simulated"), "step_s")));
    json_decref(est);
    json_decref(j);

    /* estimate --simulate: both figures; without it time_simulated is null */
    j = run_json("estimate --model 8b --gpus 8 --tp 2 --pp 2 --simulate --format json");
    json_t *sim = json_object_get(j, "time_simulated");
    assert_true(json_is_object(sim));
    double closed = json_number_value(json_object_get(json_object_get(j, "time"), "step_s"));
    double simulated = json_number_value(json_object_get(sim, "step_s"));
    assert_true(simulated > 0.8 * closed && simulated < 1.2 * closed);
    json_decref(j);
    run("estimate --model 8b --gpus 8 --tp 2 --pp 2 --simulate");
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "simulated"));
    j = run_json("estimate --model 8b --gpus 8 --tp 2 --pp 2 --format json");
    assert_true(json_is_null(json_object_get(j, "time_simulated")));
    json_decref(j);

    /* --no-simulate: closed-form order, nothing simulated */
    j = run_json("--model 30b --gpus 64 --format json --top 5 --no-simulate");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "search"), "simulated")),
                     0);
    assert_true(json_is_null(json_object_get(json_array_get(json_object_get(j, "plans"), 0),
                                             "time_simulated")));
    json_decref(j);

    bad("simulate --model 8b --gpus 6 --tp 3", "must divide the attention heads");
    bad("simulate --model 8b --gpus 8 --pp 2 --trace /nonexistent/dir/t.json",
        "cannot write the trace");
}

/* estimate --ops: the layer recipe as priced: a dense and a MoE layer for DeepSeek-V3 (3 dense
 * layers first), the loss head with Megatron's MTP module, none of it under torchtitan. */
static void test_estimate_ops(void **state)
{
    (void)state;
    run("estimate --model deepseek-v3 --gpus 1024 --tp 2 --pp 8 --ep 64 --ops");
    assert_non_null(strstr(R.out, "dense layer (per micro-batch, ms)"));
    assert_non_null(strstr(R.out, "MoE layer (per micro-batch, ms)"));
    assert_non_null(strstr(R.out, "ep.dispatch"));
    assert_non_null(strstr(R.out, "mtp.eh_proj"));
    assert_non_null(strstr(R.out, "4 local experts"));
    run("estimate --model deepseek-v3 --gpus 1024 --framework torchtitan --pp 8 --ep 64 --ops");
    assert_non_null(strstr(R.out, "loss head"));
    assert_null(strstr(R.out, "mtp.eh_proj"));
    /* a dense model has no MoE table */
    run("estimate --model 8b --gpus 8 --ops");
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "dense layer"));
    assert_null(strstr(R.out, "MoE layer"));
}

/* Issue 14: how much of the step the host's kernel issue sets (costmodel/host_paced.h), in the
 * JSON always and as a "host-paced" line where a host 1.5x slower adds 5% or more: a host-bound layout
 * (Llama-3.2-1B under FSDP2 on one GPU, seq 128, one sequence: tests/test_host_lead.c checks
 * its figures by hand) in plan estimate, the search's recommendation and plan simulate; none
 * for a GPU-bound one. The figures add up to the printed step. */
static void test_host_paced(void **state)
{
    (void)state;
    const char *tiny = "--model 1b --gpus 1 --framework fsdp2 --seq 128 --gbs 1";
    char args[512];
    snprintf(args, sizeof args, "estimate %s --format json", tiny);
    json_t *j = run_json(args);
    json_t *t = json_object_get(j, "time");
    double step = json_number_value(json_object_get(t, "step_s"));
    double gpu = json_number_value(json_object_get(t, "gpu_only_step_s"));
    double hp = json_number_value(json_object_get(t, "host_paced_s"));
    double frac = json_number_value(json_object_get(t, "host_paced_fraction"));
    double fwd = json_number_value(json_object_get(t, "host_paced_fwd_s"));
    /* the JSON holds 12 significant digits */
    assert_true(fabs(gpu + hp - step) < 1e-10 * step && fabs(frac - hp / step) < 1e-10);
    assert_true(frac > 0.5 && frac < 1);
    assert_true(fabs(fwd - 29.366e-3) < 0.01e-3); /* 16 x (2.1465 - 0.3111) ms (test_host_lead.c) */
    assert_true(fwd <= json_number_value(json_object_get(t, "fwd_pass_s")));
    assert_true(json_number_value(json_object_get(t, "slow_host_step_s")) > step * 1.05);
    assert_true(json_number_value(json_object_get(t, "slow_host_factor")) == 1.5);
    json_decref(j);
    snprintf(args, sizeof args, "estimate %s", tiny);
    run(args);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "  host-paced   "));
    assert_non_null(strstr(R.out, "the GPU waits for the CPU to issue kernels (forward 0.0294 of"));
    assert_non_null(strstr(R.out, "the step moves with the CPU"));
    assert_non_null(strstr(R.out, "on a CPU 1.5x slower, 0.201 s/step"));
    run(tiny); /* the search's recommendation */
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "Recommended: fsdp2"));
    assert_non_null(strstr(R.out, "  host-paced   "));
    snprintf(args, sizeof args, "simulate %s", tiny);
    run(args);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "  host-paced   "));
    /* GPU-bound: zero in the JSON, no line */
    j = run_json("estimate --model 8b --gpus 8 --tp 2 --pp 2 --format json");
    t = json_object_get(j, "time");
    assert_true(json_number_value(json_object_get(t, "host_paced_s")) == 0);
    assert_true(json_number_value(json_object_get(t, "gpu_only_step_s")) ==
                json_number_value(json_object_get(t, "step_s")));
    assert_true(json_number_value(json_object_get(t, "slow_host_step_s")) ==
                json_number_value(json_object_get(t, "step_s")));
    json_decref(j);
    run("estimate --model 8b --gpus 8 --tp 2 --pp 2");
    assert_int_equal(R.status, 0);
    assert_null(strstr(R.out, "host-paced"));
    /* every plan of the search's JSON has the figures */
    j = run_json("--model 30b --gpus 64 --format json --top 3");
    json_t *plans = json_object_get(j, "plans");
    for (size_t i = 0; i < json_array_size(plans); i++)
        has_keys(json_array_get(plans, i), "time",
                 (const char *const[]){"gpu_only_step_s", "host_paced_s", "host_paced_fraction",
                                       "host_paced_fwd_s", "host_paced_bwd_s",
                                       "host_paced_optimizer_s", "slow_host_step_s", NULL});
    json_decref(j);
}

/* A profile in dir naming base as the system it overlays, with a collective fit. */
static void write_profile(const char *dir, const char *name, const char *base)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"calibration_of\": \"%s\", \"calibration\": {\"collectives\": [{\"op\": "
            "\"all_reduce\", \"group_size\": 4, \"span\": \"intra\", \"alpha_s\": 2e-5, "
            "\"busbw_bytes_per_s\": 3e11}]}}\n",
            base);
    assert_int_equal(fclose(f), 0);
}

/* --system PROFILE whose "calibration_of" names another profile file (relative to the working
 * directory, so the test runs in a temporary one): a chain down to a preset loads; a profile
 * naming itself, two naming each other and a chain deeper than 8 profiles are one line and
 * exit 2 (they used to recurse until the stack overflowed). */
static void test_profile_chains(void **state)
{
    (void)state;
    char dir[] = "/tmp/plan_cli_profiles_XXXXXX", cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chdir(dir), 0);

    write_profile(dir, "outer.json", "inner.json");
    write_profile(dir, "inner.json", "h200-x4");
    json_t *j = run_json("--system outer.json --model 8b --gpus 4 --format json");
    assert_non_null(strstr(R.out, "\"inner.json+outer.json\"")); /* the system's name */
    json_decref(j);

    write_profile(dir, "a.json", "b.json");
    write_profile(dir, "b.json", "a.json");
    bad("--system a.json --model 8b --gpus 4",
        "calibration_of cycle: a.json -> b.json -> a.json; fix the calibration_of field");
    bad("estimate --system b.json --model 8b --gpus 4 --tp 2",
        "calibration_of cycle: b.json -> a.json -> b.json");

    /* given by its full path, naming itself by its bare name: the same file */
    write_profile(dir, "self.json", "self.json");
    char args[1200], want[1200];
    snprintf(args, sizeof args, "--system %s/self.json --model 8b --gpus 4", dir);
    snprintf(want, sizeof want, "calibration_of cycle: %s/self.json -> self.json;", dir);
    bad(args, want);

    char name[32], base[32];
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "p%d.json", i);
        snprintf(base, sizeof base, "p%d.json", i + 1);
        write_profile(dir, name, i == 11 ? "h200-x4" : base);
    }
    bad("--system p0.json --model 8b --gpus 4", "calibration_of chain deeper than 8 profiles");

    const char *made[] = {"outer.json", "inner.json", "a.json", "b.json", "self.json"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) unlink(made[i]);
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "p%d.json", i);
        unlink(name);
    }
    assert_int_equal(chdir(cwd), 0);
    rmdir(dir);
}

int main(void)
{
    if (!getenv("PLAN_EXE")) return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimate_json),     cmocka_unit_test(test_search_json),
        cmocka_unit_test(test_search_human),      cmocka_unit_test(test_infeasible_estimate),
        cmocka_unit_test(test_bad_input),         cmocka_unit_test(test_gemm_headroom_flag),
        cmocka_unit_test(test_check_step_is_estimate_step),         cmocka_unit_test(test_bench_csv),
        cmocka_unit_test(test_simulate),          cmocka_unit_test(test_host_paced),
        cmocka_unit_test(test_estimate_ops),      cmocka_unit_test(test_profile_chains),
        cmocka_unit_test(test_precision),         cmocka_unit_test(test_megatron_moe_bias),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
