/*
 * test_emit_skyrl.c — the trainer YAML and SkyRL, part of the test_emit_megatron
 * program (test_emit_megatron.h): every key --emit yaml writes is one of SkyRL's
 * (tests/data/skyrl_keys.txt, from SkyRL's dataclasses) or named in the header as not SkyRL's,
 * and plan check reads SkyRL's RL batch (prompts x samples per mini-batch), sequence (prompt +
 * generation) and placement defaults. Apart from the Megatron flags' tests: it is about the
 * trainer YAML, not Megatron-LM's command line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <yaml.h>

#include "test_emit_megatron.h"
#include "precision.h"

/* ---- SkyRL's RL batch and defaults in plan check ---- */

static bool has_note(const check_report *rep, const char *needle)
{
    for (int i = 0; i < rep->nnotes; i++)
        if (strstr(rep->notes[i], needle)) return true;
    return false;
}

void test_skyrl_rl_batch(void **state)
{
    (void)state;
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    /* prompts x samples per optimizer step; prompt + generation = sequence */
    const char *y = "trainer:\n  strategy: megatron\n"
                    "  placement: {policy_num_nodes: 2, policy_num_gpus_per_node: 8}\n"
                    "  train_batch_size: 512\n  policy_mini_batch_size: 128\n"
                    "  max_prompt_length: 1024\n"
                    "generator:\n  n_samples_per_prompt: 8\n"
                    "  sampling_params: {max_generate_length: 3072}\n";
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_OK);
    assert_int_equal(cfg.training.global_batch, 128 * 8);
    assert_int_equal(cfg.training.seq_len, 1024 + 3072);
    assert_true(has_note(&rep, "4 optimizer steps per training step"));
    assert_false(has_note(&rep, "SkyRL's default"));
    /* SkyRL's defaults where keys are absent, each named */
    y = "trainer:\n  strategy: megatron\n  train_batch_size: 64\ngenerator: {}\n";
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_OK);
    assert_int_equal(cfg.training.global_batch, 64 * 5); /* mini 256 > 64 prompts */
    assert_int_equal(cfg.training.seq_len, 512 + 1024);
    assert_true(has_note(&rep, "n_samples_per_prompt is absent: 5 assumed"));
    assert_true(has_note(&rep, "policy_mini_batch_size is absent"));
    assert_true(has_note(&rep, "max_prompt_length is absent"));
    assert_true(has_note(&rep, "max_generate_length is absent"));
    /* algorithm.max_seq_len wins over prompt + generation */
    y = "trainer:\n  policy_mini_batch_size: 32\n  algorithm: {max_seq_len: 8192}\n"
        "generator: {n_samples_per_prompt: 4}\n";
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_OK);
    assert_int_equal(cfg.training.global_batch, 32 * 4);
    assert_int_equal(cfg.training.seq_len, 8192);
    /* placement: one node assumed when only GPUs per node are given */
    y = "trainer:\n  strategy: fsdp2\n  placement: {policy_num_gpus_per_node: 8}\n";
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_OK);
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    assert_int_equal(check_layout(&m, &s, &cfg, 0, &rep, err, sizeof err), 8);
    assert_true(has_note(&rep, "1 node assumed"));
}

/* ---- the trainer YAML has SkyRL's keys ---- */

static char skyrl_paths[600][128];
static int nskyrl;

static void load_skyrl_paths(void)
{
    const char *dir = getenv("PLAN_HF_DIR"); /* tests/data/hf: the list sits beside it */
    char path[600];
    snprintf(path, sizeof path, "%s/../skyrl_keys.txt", dir && *dir ? dir : "tests/data/hf");
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: cannot read it", path);
    char line[256];
    nskyrl = 0;
    while (fgets(line, sizeof line, f) && nskyrl < 600) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] && line[0] != '#') snprintf(skyrl_paths[nskyrl++], 128, "%.127s", line);
    }
    fclose(f);
    assert_true(nskyrl > 100);
}

static bool skyrl_has(const char *path)
{
    for (int i = 0; i < nskyrl; i++) {
        const char *p = skyrl_paths[i];
        size_t n = strlen(p);
        if (!strcmp(p, path)) return true;
        /* "a.b.*": any key below a.b */
        if (n > 2 && !strcmp(p + n - 2, ".*") && !strncmp(path, p, n - 1)) return true;
    }
    return false;
}

/* Every key path of the mapping node; those SkyRL lacks must be named in the header. */
static void walk_yaml(yaml_document_t *doc, yaml_node_t *node, const char *prefix,
                      const char *header, int *checked)
{
    if (!node || node->type != YAML_MAPPING_NODE) return;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        char path[256];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "",
                 (const char *)k->data.scalar.value);
        (*checked)++;
        if (!skyrl_has(path)) {
            const char *leaf = strrchr(path, '.');
            leaf = leaf ? leaf + 1 : path;
            if (!strstr(header, "NOT IN SkyRL's schema") || !strstr(header, leaf))
                fail_msg("%s is not a SkyRL key and the header does not say so", path);
        }
        walk_yaml(doc, yaml_document_get_node(doc, p->value), path, header, checked);
    }
}

/* Emit e's trainer YAML and walk its keys (walk_yaml). */
static void check_yaml_keys(const estimate *e, const model_spec *m, const system_spec *sys,
                            const char *name, int *checked)
{
    char *text = NULL, err[CM_ERRLEN];
    emit_context ctx = {.model_ref = name};
    assert_int_equal(emit_yaml(e, m, sys, &ctx, &text, err, sizeof err), CM_OK);
    yaml_parser_t parser;
    yaml_document_t doc;
    assert_true(yaml_parser_initialize(&parser));
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    assert_true(yaml_parser_load(&parser, &doc));
    walk_yaml(&doc, yaml_document_get_root_node(&doc), "", text, checked);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    free(text);
}

void test_yaml_has_skyrl_keys(void **state)
{
    (void)state;
    load_skyrl_paths();
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    char names[64][64];
    int n = presets(names, 64), files = 0, checked = 0;
    search_result *r = search_result_new();
    for (int i = 0; i < n; i++) {
        model_spec m = load_model(names[i]);
        search_options so = {.gpus = 64, .keep = 8, .frameworks = {true, true}};
        char err[CM_ERRLEN];
        if (search_run(&m, &sys, &t, &so, r, err, sizeof err) != CM_OK) fail_msg("%s", err);
        const estimate *plans[8];
        int np = 0;
        for (int fw = 0; fw < 2; fw++)
            for (int sh = 0; sh < 3; sh++)
                if (r->has_best_sharding[fw][sh]) plans[np++] = &r->best_sharding[fw][sh];
        for (int k = 0; k < np; k++) {
            check_yaml_keys(plans[k], &m, &sys, names[i], &checked);
            files++;
            /* issue 16: plan's default search picks FP8 on H100; the same layout in FP8 (the
             * framework's recipe, and under Megatron with FP8 parameters where its sharding
             * allows them) has the YAML's low_precision section: each framework's first plan
             * (the test runs near its timeout under ASan) */
            if (k > 0 && plans[k - 1]->layout.framework == plans[k]->layout.framework) continue;
            estimate e8;
            layout l8 = plans[k]->layout;
            l8.precision = PRECISION_FP8;
            l8.fp8_recipe = FP8_RECIPE_DEFAULT;
            l8.fp8_param_gather = l8.framework == FRAMEWORK_MEGATRON && l8.sharding != SHARDING_DDP;
            if (precision_check(&sys, &l8, NULL, 0) != CM_OK ||
                estimate_layout(&m, &sys, &plans[k]->training, &l8, &e8, NULL, 0) != CM_OK)
                continue;
            check_yaml_keys(&e8, &m, &sys, names[i], &checked);
            files++;
        }
    }
    search_result_free(r);
    print_message("  %d trainer YAMLs, %d keys: SkyRL's, or named as not SkyRL's\n", files,
                  checked);
}
