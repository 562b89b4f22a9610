/*
 * test_emit_megatron.c — the Megatron-LM flags say what was costed, and every emitter quotes
 * what it copies from config.json (issues 17 and 18). The program is three files
 * (test_emit_megatron.h): this one holds the Megatron-LM flags' tests and main;
 * test_emit_hostile.c the hostile strings, test_emit_skyrl.c the trainer YAML against SkyRL.
 *
 * - The pipeline split: the emitted flags, read back with Megatron-LM's own rules (an explicit
 *   --pipeline-model-parallel-layout; else --decoder-first/last-pipeline-num-layers with the
 *   middle stages even; else an even split, layers divisible by pp), give every stage exactly
 *   layout_stage_layers(): for every pipeline size of every preset, and for every plan the
 *   search evaluated and ranked (each distinct pipeline shape it visited, all ranked plans).
 * - CUDA_DEVICE_MAX_CONNECTIONS: export 1 for TP or CP > 1 before Blackwell, unset under
 *   Megatron-FSDP, nothing otherwise; the same in the JSON "environment".
 * - Megatron-LM itself (PLAN_MEGATRON_LM=/path/to/Megatron-LM, skipped otherwise): every
 *   preset's recommended Megatron plan through parse_args + validate_args with its environment,
 *   by bench/megatron_validate.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_emit_megatron.h"

const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

model_spec load_model(const char *name)
{
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load(name, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return m;
}

system_spec load_system(const char *name)
{
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load(name, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return s;
}

/* Every preset under data/models. */
int presets(char names[][64], int max)
{
    char list[4096];
    model_list_presets(data_dir(), list, sizeof list);
    int n = 0;
    for (char *tok = strtok(list, ", "); tok && n < max; tok = strtok(NULL, ", "))
        snprintf(names[n++], 64, "%s", tok);
    return n;
}

/* The real Hugging Face config.json files under tests/data/hf (PLAN_HF_DIR), as paths. */
static int hf_configs(char paths[][512], int max)
{
    const char *dir = getenv("PLAN_HF_DIR");
    if (!dir || !*dir) dir = "tests/data/hf";
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 5 && !strcmp(e->d_name + len - 5, ".json"))
            snprintf(paths[n++], 512, "%s/%.400s", dir, e->d_name);
    }
    closedir(d);
    /* sorted, so the cases read the same everywhere */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(paths[j - 1], paths[j]) > 0; j--) {
            char t[512];
            memcpy(t, paths[j], 512);
            memcpy(paths[j], paths[j - 1], 512);
            memcpy(paths[j - 1], t, 512);
        }
    return n;
}

static model_spec load_config(const char *path)
{
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load_json(path, NULL, &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return m;
}

/* ---- Megatron's reading of the pipeline flags (independent of emit.c) ---- */

const char *arg_value(json_t *args, const char *flag)
{
    for (size_t i = 0; i + 1 < json_array_size(args); i++)
        if (!strcmp(json_string_value(json_array_get(args, i)), flag))
            return json_string_value(json_array_get(args, i + 1));
    return NULL;
}

static bool has_arg(json_t *args, const char *flag)
{
    for (size_t i = 0; i < json_array_size(args); i++)
        if (!strcmp(json_string_value(json_array_get(args, i)), flag)) return true;
    return false;
}

/* Expands "x*n" the way PipelineParallelLayerLayout.parse_str_to_list does (after dropping the
 * cosmetic commas; no parentheses are emitted), then counts per stage. */
static int parse_layout(const char *text, int *decoder, int max, int *mtp, int *emb, int *loss)
{
    char flat[8192];
    size_t n = 0;
    for (const char *p = text; *p; p++) {
        if (*p == ',') continue;
        if (p[1] == '*') {
            char c = *p;
            int k = atoi(p + 2);
            for (int i = 0; i < k && n + 1 < sizeof flat; i++) flat[n++] = c;
            p += 2;
            while (p[1] >= '0' && p[1] <= '9') p++;
            continue;
        }
        if (n + 1 < sizeof flat) flat[n++] = *p;
    }
    flat[n] = '\0';
    int stages = 0;
    *mtp = *emb = *loss = 0;
    if (max > 0) decoder[0] = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = flat[i];
        if (c == '|' || c == '\0') {
            stages++;
            if (c == '|' && stages < max) decoder[stages] = 0;
            continue;
        }
        if (stages >= max) return -1;
        if (c == 't') decoder[stages]++;
        else if (c == 'm') (*mtp)++;
        else if (c == 'E') (*emb) += stages == 0 ? 1 : 100;
        else if (c == 'L') (*loss)++;
        else return -1;
    }
    return stages;
}

/* The layers on each stage as Megatron-LM builds them from args; returns the stage count. */
static int megatron_stages(json_t *args, int *out, int max, char *why, size_t whylen)
{
    int layers = atoi(arg_value(args, "--num-layers"));
    int pp = atoi(arg_value(args, "--pipeline-model-parallel-size"));
    const char *lay = arg_value(args, "--pipeline-model-parallel-layout");
    const char *first = arg_value(args, "--decoder-first-pipeline-num-layers");
    const char *last = arg_value(args, "--decoder-last-pipeline-num-layers");
    const char *mtp_s = arg_value(args, "--mtp-num-layers");
    if (pp > max) return snprintf(why, whylen, "pp %d too large for the test", pp), -1;
    if (lay) {
        int mtp, emb, loss;
        int n = parse_layout(lay, out, max, &mtp, &emb, &loss);
        if (n < pp || n % pp)
            return snprintf(why, whylen, "layout '%s' has %d stages, pp %d", lay, n, pp), -1;
        /* virtual stages: stage i is chunk i / pp of rank i % pp (pipeline_parallel_layer_
         * layout.py); fold them into the ranks */
        for (int s = pp; s < n; s++) out[s % pp] += out[s];
        n = pp;
        if (emb != 1 || loss != 1)
            return snprintf(why, whylen, "layout '%s': E first once, L once", lay), -1;
        if (mtp != (mtp_s ? atoi(mtp_s) : 0))
            return snprintf(why, whylen, "layout '%s': %d MTP layers, flags say %s", lay, mtp,
                            mtp_s ? mtp_s : "none"), -1;
        int sum = 0;
        for (int s = 0; s < n; s++) sum += out[s];
        if (sum != layers)
            return snprintf(why, whylen, "layout '%s' holds %d of %d layers", lay, sum, layers),
                   -1;
        return n;
    }
    if (first || last) {
        int f = first ? atoi(first) : 0, l = last ? atoi(last) : 0;
        int mid_stages = pp - (first ? 1 : 0) - (last ? 1 : 0);
        int rest = layers - f - l;
        if (mid_stages <= 0 || rest % mid_stages)
            return snprintf(why, whylen, "first %d last %d leave %d layers for %d stages", f, l,
                            rest, mid_stages), -1;
        for (int s = 0; s < pp; s++) out[s] = rest / mid_stages;
        if (first) out[0] = f;
        if (last) out[pp - 1] = l;
        return pp;
    }
    if (layers % pp)
        return snprintf(why, whylen, "%d layers not divisible by pp %d and no split given",
                        layers, pp),
               -1;
    for (int s = 0; s < pp; s++) out[s] = layers / pp;
    return pp;
}

static int split_checks;

static void check_split(const estimate *e, const model_spec *m, const char *what)
{
    if (e->layout.framework != FRAMEWORK_MEGATRON) return;
    json_t *args = NULL;
    char err[CM_ERRLEN], why[256];
    if (emit_megatron_argv(e, m, &args, NULL, NULL, err, sizeof err) != CM_OK)
        fail_msg("%s: %s", what, err);
    int stages[1024];
    int n = megatron_stages(args, stages, 1024, why, sizeof why);
    if (n < 0) fail_msg("%s %s pp %d: %s", m->name, what, e->layout.pp, why);
    assert_int_equal(n, e->layout.pp);
    for (int s = 0; s < n; s++)
        if (stages[s] != layout_stage_layers(m, &e->layout, s))
            fail_msg("%s %s pp %d: stage %d gets %d layers from the flags, %d were costed",
                     m->name, what, e->layout.pp, s, stages[s],
                     layout_stage_layers(m, &e->layout, s));
    if (m->layers % e->layout.pp)
        assert_true(has_arg(args, "--pipeline-model-parallel-layout"));
    /* interleaving: every virtual stage even (validate_args), or an uneven split stated as
     * the layout string, which then sets the virtual stages itself (arguments.py allows one
     * of the two) */
    if (e->layout.vpp > 1 && !has_arg(args, "--pipeline-model-parallel-layout")) {
        const char *v = arg_value(args, "--num-layers-per-virtual-pipeline-stage");
        assert_non_null(v);
        assert_int_equal(atoi(v) * e->layout.vpp * e->layout.pp, m->layers);
    } else if (e->layout.vpp > 1) {
        assert_null(arg_value(args, "--num-layers-per-virtual-pipeline-stage"));
        const char *lay = arg_value(args, "--pipeline-model-parallel-layout");
        int bars = 0;
        for (const char *c = lay; *c; c++) bars += *c == '|';
        assert_int_equal(bars + 1, e->layout.pp * e->layout.vpp);
    }
    json_decref(args);
    split_checks++;
}

typedef struct {
    const model_spec *m;
    bool seen[257][9]; /* pipeline shapes (pp, vpp) already checked */
} visit_state;

static void visit(const estimate *e, void *arg)
{
    visit_state *v = arg;
    int pp = e->layout.pp, vpp = e->layout.vpp;
    if (e->layout.framework != FRAMEWORK_MEGATRON) return;
    if (pp <= 256 && vpp <= 8) {
        if (v->seen[pp][vpp]) return;
        v->seen[pp][vpp] = true;
    }
    check_split(e, v->m, "evaluated plan");
}

static void test_split_every_pipeline_size(void **state)
{
    (void)state;
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    char names[64][64];
    int n = presets(names, 64);
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        model_spec m = load_model(names[i]);
        for (int pp = 1; pp <= m.layers && pp <= 256; pp++) {
            layout l = layout_default(FRAMEWORK_MEGATRON);
            l.pp = pp;
            estimate e;
            char err[CM_ERRLEN];
            training_spec tt = t;
            tt.global_batch = pp * 8;
            if (estimate_layout(&m, &sys, &tt, &l, &e, err, sizeof err) != CM_OK)
                fail_msg("%s pp %d: %s", names[i], pp, err);
            check_split(&e, &m, "pp sweep");
        }
    }
    static char paths[64][512];
    int nh = hf_configs(paths, 64);
    for (int i = 0; i < nh; i++) {
        model_spec m = load_config(paths[i]);
        for (int pp = 1; pp <= m.layers && pp <= 256; pp++) {
            layout l = layout_default(FRAMEWORK_MEGATRON);
            l.pp = pp;
            estimate e;
            char err[CM_ERRLEN];
            training_spec tt = t;
            tt.global_batch = pp * 8;
            if (estimate_layout(&m, &sys, &tt, &l, &e, err, sizeof err) != CM_OK)
                fail_msg("%s pp %d: %s", paths[i], pp, err);
            check_split(&e, &m, "pp sweep");
        }
    }
    print_message("  %d pipeline splits of %d presets and %d Hugging Face configs match the costed "
                  "ones\n",
                  split_checks, n, nh);
}

static void test_split_every_plan(void **state)
{
    (void)state;
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    char names[64][64];
    int n = presets(names, 64);
    search_result *r = search_result_new();
    assert_non_null(r);
    int before = split_checks;
    static visit_state v;
    for (int i = 0; i < n; i++) {
        model_spec m = load_model(names[i]);
        memset(&v, 0, sizeof v);
        v.m = &m;
        static const int counts[] = {8, 64, 512};
        for (size_t g = 0; g < sizeof counts / sizeof *counts; g++) {
            search_options so = {.gpus = counts[g], .keep = 32, .frameworks = {false, true},
                                 .visit = visit, .visit_arg = &v};
            char err[CM_ERRLEN];
            if (search_run(&m, &sys, &t, &so, r, err, sizeof err) != CM_OK) fail_msg("%s", err);
            for (int k = 0; k < r->count; k++) check_split(&r->ranked[k], &m, "ranked plan");
            for (int sh = 0; sh < 3; sh++)
                if (r->has_best_sharding[FRAMEWORK_MEGATRON][sh])
                    check_split(&r->best_sharding[FRAMEWORK_MEGATRON][sh], &m, "best plan");
            if (r->has_closest[FRAMEWORK_MEGATRON])
                check_split(&r->closest[FRAMEWORK_MEGATRON], &m, "closest plan");
        }
    }
    search_result_free(r);
    print_message("  %d plans' pipeline splits match the costed ones\n", split_checks - before);
}

static long fsdp_pp_seen;

static void count_fsdp_pp(const estimate *e, void *arg)
{
    (void)arg;
    if (e->layout.sharding == SHARDING_FSDP && e->layout.pp > 1) fsdp_pp_seen++;
}

/* Megatron-FSDP with pipeline parallelism is a valid layout the search considers. */
static void test_megatron_fsdp_with_pp(void **state)
{
    (void)state;
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    model_spec m = load_model("70b");
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8; l.pp = 4; l.dp = 2; l.sp = true; l.sharding = SHARDING_FSDP;
    char err[CM_ERRLEN];
    assert_int_equal(layout_check(&m, &sys, &t, &l, 64, err, sizeof err), CM_OK);
    estimate e;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    /* FSDP shards the stage's weights over DP: less than the distributed optimizer keeps */
    layout d = l;
    d.sharding = SHARDING_DISTOPT;
    estimate ed;
    assert_int_equal(estimate_layout(&m, &sys, &t, &d, &ed, err, sizeof err), CM_OK);
    assert_true(e.memory.weights_bytes < ed.memory.weights_bytes);
    char *text = NULL;
    emit_context ctx = {.model_ref = "70b"};
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "--use-megatron-fsdp"));
    assert_non_null(strstr(text, "--pipeline-model-parallel-size 4"));
    assert_non_null(strstr(text, "\nunset CUDA_DEVICE_MAX_CONNECTIONS\n"));
    assert_null(strstr(text, "export CUDA_DEVICE_MAX_CONNECTIONS"));
    free(text);

    /* the search evaluates such layouts */
    search_options so = {.gpus = 64, .keep = 32, .frameworks = {false, true},
                         .visit = count_fsdp_pp, .visit_arg = NULL};
    search_result *r = search_result_new();
    assert_non_null(r);
    fsdp_pp_seen = 0;
    assert_int_equal(search_run(&m, &sys, &t, &so, r, err, sizeof err), CM_OK);
    search_result_free(r);
    print_message("  %ld Megatron-FSDP layouts with pp > 1 evaluated for 70b on 64 GPUs\n",
                  fsdp_pp_seen);
    assert_true(fsdp_pp_seen > 0);
}

/* ---- CUDA_DEVICE_MAX_CONNECTIONS ---- */

static json_t *emit_doc(const estimate *e, const model_spec *m, const system_spec *sys)
{
    emit_context ctx = {.model_ref = m->name};
    return emit_json(e, m, sys, &ctx);
}

static void expect_env(const char *sysname, layout l, const char *model, int want)
{
    system_spec sys = load_system(sysname);
    model_spec m = load_model(model);
    training_spec t = training_default();
    estimate e;
    char err[CM_ERRLEN];
    if (estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_int_equal(emit_megatron_max_connections(&l, &sys), want);
    char *text = NULL;
    emit_context ctx = {.model_ref = model};
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    bool exported = strstr(text, "\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n") != NULL;
    bool unset = strstr(text, "\nunset CUDA_DEVICE_MAX_CONNECTIONS\n") != NULL;
    assert_int_equal(exported, want > 0);
    assert_int_equal(unset, want < 0);
    free(text);
    json_t *j = emit_doc(&e, &m, &sys);
    json_t *env = json_object_get(json_object_get(j, "emit"), "environment");
    json_t *set = json_object_get(env, "set");
    const char *v = json_string_value(json_object_get(set, "CUDA_DEVICE_MAX_CONNECTIONS"));
    if (want > 0) assert_true(v && !strcmp(v, "1"));
    else assert_null(v);
    json_t *un = json_object_get(env, "unset");
    assert_int_equal(json_array_size(un), want < 0 ? 1 : 0);
    json_decref(j);
}

static void test_max_connections(void **state)
{
    (void)state;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8; l.dp = 8; l.sp = true;
    expect_env("h100", l, "70b", 1);  /* TP on Hopper */
    expect_env("a100-80g", l, "70b", 1);
    expect_env("b200", l, "70b", 0);  /* Blackwell: no requirement */
    layout c = layout_default(FRAMEWORK_MEGATRON);
    c.cp = 2; c.dp = 32;
    expect_env("h100", c, "8b", 1);   /* CP alone */
    layout d = layout_default(FRAMEWORK_MEGATRON);
    d.dp = 64;
    expect_env("h100", d, "8b", 0);   /* neither */
    layout f = l;
    f.sharding = SHARDING_FSDP;
    expect_env("h100", f, "70b", -1); /* Megatron-FSDP asserts it is not 1 */
}

/* ---- Megatron-LM's parser and validate_args (PLAN_MEGATRON_LM=/path/to/Megatron-LM) ---- */

/* One case for bench/megatron_validate.py: argv, environment, world size, the costed split. */
static json_t *mlm_case(const estimate *e, const model_spec *m, const system_spec *sys,
                        const char *name)
{
    json_t *j = emit_doc(e, m, sys);
    json_t *em = json_object_get(j, "emit");
    json_t *stages = json_array();
    for (int s = 0; s < e->layout.pp; s++)
        json_array_append_new(stages, json_integer(layout_stage_layers(m, &e->layout, s)));
    json_t *c = json_pack("{s:s, s:O, s:O, s:i, s:o, s:i, s:b}", "name", name, "args",
                          json_object_get(em, "megatron_args"), "environment",
                          json_object_get(em, "environment"), "world_size", e->gpus, "stages",
                          stages, "mtp_layers", m->mtp_layers, "fits", e->feasible);
    json_decref(j);
    return c;
}

/* Every preset's recommended Megatron plan and best plan per sharding, at the smallest
 * power-of-two GPU count that fits and at 64 and 512 GPUs. */
static json_t *emit_megatron_cases(const char *dir)
{
    (void)dir;
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    char names[64][64];
    int n = presets(names, 64);
    json_t *cases = json_array();
    search_result *r = search_result_new();
    for (int i = 0; i < n; i++) {
        model_spec m = load_model(names[i]);
        bool first = false;
        for (int gpus = 8; gpus <= 1024; gpus *= 2) {
            if (first && gpus != 64 && gpus != 512) continue;
            search_options so = {.gpus = gpus, .keep = 32, .frameworks = {false, true}};
            char err[CM_ERRLEN], name[256];
            if (search_run(&m, &sys, &t, &so, r, err, sizeof err) != CM_OK) fail_msg("%s", err);
            if (r->count == 0) continue;
            first = true;
            snprintf(name, sizeof name, "%.64s/%d/recommended", names[i], gpus);
            json_array_append_new(cases, mlm_case(&r->ranked[0], &m, &sys, name));
            for (int sh = 0; sh < 3; sh++) {
                const estimate *b = &r->best_sharding[FRAMEWORK_MEGATRON][sh];
                if (!r->has_best_sharding[FRAMEWORK_MEGATRON][sh]) continue;
                if (b->layout.pp == r->ranked[0].layout.pp &&
                    b->layout.sharding == r->ranked[0].layout.sharding &&
                    b->layout.tp == r->ranked[0].layout.tp)
                    continue;
                snprintf(name, sizeof name, "%.64s/%d/best-%s", names[i], gpus,
                         layout_sharding_name((layout_sharding)sh));
                json_array_append_new(cases, mlm_case(b, &m, &sys, name));
            }
        }
    }
    /* the real Hugging Face configs (sliding windows, sinks, yarn, partial rotary, biases,
     * router groups, MTP): the best Megatron plan at the smallest power-of-two GPU count that
     * fits, else the closest at 2048 GPUs */
    static char paths[64][512];
    int nh = hf_configs(paths, 64);
    for (int i = 0; i < nh; i++) {
        model_spec m = load_config(paths[i]);
        for (int gpus = 8; gpus <= 2048; gpus *= 2) {
            search_options so = {.gpus = gpus, .keep = 8, .frameworks = {false, true}};
            char err[CM_ERRLEN], name[600];
            if (search_run(&m, &sys, &t, &so, r, err, sizeof err) != CM_OK) fail_msg("%s", err);
            const estimate *pick = r->count > 0 ? &r->ranked[0]
                                   : gpus == 2048 && r->has_closest[FRAMEWORK_MEGATRON]
                                       ? &r->closest[FRAMEWORK_MEGATRON]
                                       : NULL;
            if (!pick) continue;
            const char *base = strrchr(paths[i], '/');
            snprintf(name, sizeof name, "hf:%.100s/%d", base ? base + 1 : paths[i], gpus);
            json_array_append_new(cases, mlm_case(pick, &m, &sys, name));
            break;
        }
    }
    /* Megatron CPU offload (issue 21): the partial activation offload the search picks for
     * Llama-3.1-70B on 64 GB200 (FP8 tensorwise, seq 8192, batch 256; Bridge's recipe shape) */
    {
        model_spec m = load_model("70b");
        system_spec gb = load_system("gb200-nvl72");
        training_spec tl = training_default();
        tl.seq_len = 8192;
        tl.global_batch = 256;
        search_options so = {.gpus = 64, .keep = 8, .frameworks = {false, true},
                             .precisions = 1u << PRECISION_FP8,
                             .fp8_recipe = FP8_RECIPE_TENSORWISE};
        char err[CM_ERRLEN];
        if (search_run(&m, &gb, &tl, &so, r, err, sizeof err) != CM_OK) fail_msg("%s", err);
        if (r->count > 0 && r->ranked[0].layout.activation_offload)
            json_array_append_new(cases,
                                  mlm_case(&r->ranked[0], &m, &gb, "70b/64/gb200-fp8-offload"));
        else
            fail_msg("70b on 64 GB200: no activation-offload plan to validate");
    }
    search_result_free(r);
    return cases;
}

/* PLAN_MEGATRON_CASES=FILE writes the cases (for a run of the script on another machine). */
static void test_write_megatron_cases(void **state)
{
    (void)state;
    const char *out = getenv("PLAN_MEGATRON_CASES");
    if (!out || !*out) skip();
    json_t *cases = emit_megatron_cases(data_dir());
    assert_int_equal(json_dump_file(cases, out, JSON_INDENT(1)), 0);
    print_message("  %zu cases written to %s\n", json_array_size(cases), out);
    json_decref(cases);
}

static void test_megatron_lm_validate(void **state)
{
    (void)state;
    const char *mlm = getenv("PLAN_MEGATRON_LM");
    const char *script = getenv("PLAN_MEGATRON_VALIDATE");
    if (!mlm || !*mlm || !script || !*script) skip();
    char dir[] = "/tmp/plan_mlm_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[600], cmd[2048];
    snprintf(path, sizeof path, "%s/cases.json", dir);
    json_t *cases = emit_megatron_cases(data_dir());
    assert_non_null(cases);
    assert_int_equal(json_dump_file(cases, path, JSON_INDENT(1)), 0);
    json_decref(cases);
    /* a CPU machine with Debian's torch 1.13: PLAN_MEGATRON_PYTHON=/usr/bin/python3
     * PLAN_MEGATRON_TORCH_SHIM=1 (bench/megatron_validate/README.md, the 2026-11-27b run) */
    const char *py = getenv("PLAN_MEGATRON_PYTHON");
    const char *shim = getenv("PLAN_MEGATRON_TORCH_SHIM");
    snprintf(cmd, sizeof cmd, "'%s' '%s' --megatron '%s' --cases '%s'%s",
             py && *py ? py : "python3", script, mlm, path,
             shim && *shim ? " --torch-shim" : "");
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_every_pipeline_size),
        cmocka_unit_test(test_split_every_plan),
        cmocka_unit_test(test_megatron_fsdp_with_pp),
        cmocka_unit_test(test_max_connections),
        cmocka_unit_test(test_hostile_strings),
        cmocka_unit_test(test_skyrl_rl_batch),
        cmocka_unit_test(test_yaml_has_skyrl_keys),
        cmocka_unit_test(test_megatron_lm_validate),
        cmocka_unit_test(test_write_megatron_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
