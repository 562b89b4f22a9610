/*
 * test_emit.c — the configs `--emit` writes and `plan check` reads (issue 7).
 *
 * Round trip: for every model preset, the search's recommended plan (and every other plan it
 * kept, and the best of each framework and sharding) written as trainer YAML reads back as the
 * same layout and training shape, with no rule broken. Then hand-written configs that break
 * rules (each rule named), layout_check_all() agreeing with layout_check(), the Megatron flag
 * sets, and the CLI end to end (exit 2 and the rule names; one line for malformed YAML).
 */
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

#include "check.h"
#include "emit.h"
#include "estimate.h"
#include "search.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

static model_spec load_model(const char *name)
{
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load(name, data_dir(), &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return m;
}

static system_spec load_system(const char *name)
{
    system_spec s;
    char err[CM_ERRLEN];
    if (system_load(name, data_dir(), &s, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return s;
}

static void assert_same_layout(const layout *a, const layout *b, const char *what)
{
#define SAME(f)                                                                                 \
    if ((long)a->f != (long)b->f)                                                               \
        fail_msg("%s: %s differs after the round trip: %ld -> %ld", what, #f, (long)a->f,       \
                 (long)b->f);
    SAME(framework) SAME(tp) SAME(pp) SAME(dp) SAME(cp) SAME(ep) SAME(etp) SAME(vpp) SAME(mbs)
    SAME(sp) SAME(sharding) SAME(reshard_after_forward) SAME(shard_size) SAME(recompute)
    SAME(recompute_layers) SAME(offload) SAME(moe_dispatcher)
#undef SAME
}

/* Emit e as YAML, read it back, resolve the model from the YAML alone, check, compare. */
static void round_trip(const estimate *e, const model_spec *m, const system_spec *sys,
                       const char *preset)
{
    char err[CM_ERRLEN], what[160];
    char *text = NULL;
    emit_context ctx = {.model_ref = preset};
    if (emit_yaml(e, m, sys, &ctx, &text, err, sizeof err) != CM_OK) fail_msg("emit: %s", err);
    check_config cfg;
    check_report rep;
    if (check_read_yaml(text, strlen(text), &cfg, &rep, err, sizeof err) != CM_OK)
        fail_msg("%s: reading the emitted YAML back: %s\n%s", preset, err, text);
    model_spec m2;
    char name[512];
    if (check_load_model(cfg.model, data_dir(), &m2, name, sizeof name, err, sizeof err) != CM_OK)
        fail_msg("%s: model '%s' from the YAML: %s", preset, cfg.model, err);
    if (strcmp(name, preset)) fail_msg("model path '%s' resolved to %s, not %s", cfg.model, name,
                                       preset);
    int gpus = check_layout(&m2, sys, &cfg, 0, &rep, err, sizeof err);
    assert_int_equal(gpus, e->gpus);
    snprintf(what, sizeof what, "%s on %d GPUs (%s tp%d pp%d dp%d cp%d ep%d)", preset, gpus,
             layout_framework_name(e->layout.framework), e->layout.tp, e->layout.pp,
             e->layout.dp, e->layout.cp, e->layout.ep);
    if (rep.nviolations)
        fail_msg("%s: the emitted YAML breaks [%s] %s\n%s", what, rep.violations[0].rule,
                 rep.violations[0].message, text);
    assert_same_layout(&e->layout, &cfg.layout, what);
    assert_int_equal(cfg.training.seq_len, e->training.seq_len);
    assert_int_equal(cfg.training.global_batch, e->training.global_batch);
    assert_int_equal(cfg.training.attention, e->training.attention);
    assert_int_equal(cfg.training.grad_reduce_bf16, e->training.grad_reduce_bf16);
    assert_int_equal(cfg.training.moe_ep_overlap, e->training.moe_ep_overlap);
    assert_int_equal(cfg.training.moe_shared_overlap, e->training.moe_shared_overlap);
    if (e->layout.framework == FRAMEWORK_MEGATRON) {
        assert_int_equal(cfg.layout.overlap_grad_reduce, e->layout.overlap_grad_reduce);
        assert_int_equal(cfg.layout.overlap_param_gather, e->layout.overlap_param_gather);
    }
    /* and the estimate of what was read is the estimate that was written */
    estimate e2;
    if (estimate_layout(&m2, sys, &cfg.training, &cfg.layout, &e2, err, sizeof err) != CM_OK)
        fail_msg("%s: %s", what, err);
    assert_true(e2.time.step_s == e->time.step_s);
    assert_true(e2.memory.total_bytes == e->memory.total_bytes);
    free(text);
}

static const char *const presets[] = {"1b",  "3b",  "7b",  "8b",  "13b", "30b", "70b",
                                      "175b", "405b", "mixtral-8x7b", "mixtral-8x22b",
                                      "qwen3-30b-a3b", "deepseek-v3", "qwen2.5-7b"};

static void test_round_trip_every_preset(void **state)
{
    (void)state;
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    search_result *r = search_result_new();
    assert_non_null(r);
    int trips = 0;
    for (size_t i = 0; i < sizeof presets / sizeof *presets; i++) {
        model_spec m = load_model(presets[i]);
        /* the smallest power-of-two GPU count that fits, then 64 and 512 GPUs where larger:
         * more pipeline, context and expert parallel layouts among the kept plans */
        int first = 0, counts = 0;
        for (int gpus = 8; gpus <= 1024; gpus *= 2) {
            if (first && gpus != 64 && gpus != 512) continue;
            search_options so = {.gpus = gpus, .keep = 32, .frameworks = {true, true}};
            char err[CM_ERRLEN];
            if (search_run(&m, &sys, &t, &so, r, err, sizeof err) != CM_OK) fail_msg("%s", err);
            if (r->count == 0) continue;
            if (!first) {
                first = gpus;
                print_message("  %-14s fits from %4d GPUs: recommended %s\n", presets[i], gpus,
                              layout_framework_name(r->ranked[0].layout.framework));
            }
            counts++;
            for (int k = 0; k < r->count; k++, trips++)
                round_trip(&r->ranked[k], &m, &sys, presets[i]);
            for (int fw = 0; fw < 2; fw++) {
                if (r->has_best[fw]) round_trip(&r->best[fw], &m, &sys, presets[i]), trips++;
                for (int sh = 0; sh < 3; sh++)
                    if (r->has_best_sharding[fw][sh])
                        round_trip(&r->best_sharding[fw][sh], &m, &sys, presets[i]), trips++;
            }
        }
        if (!first) fail_msg("%s: no GPU count from 8 to 1024 fits", presets[i]);
        assert_true(counts >= 1);
    }
    search_result_free(r);
    print_message("  %d plans written and read back\n", trips);
}

/* Knobs the search does not turn, through `plan estimate`-style layouts. */
static void test_round_trip_unusual_layouts(void **state)
{
    (void)state;
    system_spec sys = load_system("h100");
    struct {
        const char *model;
        layout l;
        training_spec t;
    } cases[10];
    int n = 0;
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 4; l.pp = 4; l.dp = 4; l.vpp = 2; l.sp = true; l.recompute = RECOMPUTE_FULL;
    l.recompute_layers = 3;
    cases[n].model = "70b"; cases[n].l = l; cases[n].t = t; n++;
    l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2; l.dp = 32; l.ep = 8; l.etp = 1; l.sp = true; l.sharding = SHARDING_FSDP;
    l.shard_size = 16;
    training_spec t2 = t;
    t2.grad_reduce_bf16 = true; l.overlap_grad_reduce = l.overlap_param_gather = false;
    t2.attention = ATTENTION_UNFUSED; t2.seq_len = 2048; t2.global_batch = 512;
    cases[n].model = "mixtral-8x7b"; cases[n].l = l; cases[n].t = t2; n++;
    l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 16; l.offload = true; l.reshard_after_forward = false;
    cases[n].model = "8b"; cases[n].l = l; cases[n].t = t; n++;
    l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 8; l.cp = 4; l.shard_size = 8; l.recompute = RECOMPUTE_FULL; l.mbs = 2;
    cases[n].model = "qwen2.5-7b"; cases[n].l = l; cases[n].t = t; n++;
    l = layout_default(FRAMEWORK_MEGATRON);
    l.pp = 8; l.dp = 8; l.sharding = SHARDING_DDP; l.recompute = RECOMPUTE_SELECTIVE;
    cases[n].model = "30b"; cases[n].l = l; cases[n].t = t; n++; /* 60 layers on 8 stages */
    /* cfg21: the MoE dispatcher (SkyRL's moe_token_dispatcher_type, Megatron-Core's flex
     * backend); read back as SkyRL's default alltoall before, priced 0.4% off for DeepEP */
    layout_moe_dispatcher disp[3] = {MOE_DISPATCH_DEEPEP, MOE_DISPATCH_HYBRIDEP,
                                     MOE_DISPATCH_ALLGATHER};
    for (int k = 0; k < 3; k++) {
        l = layout_default(FRAMEWORK_MEGATRON);
        l.dp = 16; l.ep = 8; l.etp = 1; l.moe_dispatcher = disp[k];
        cases[n].model = "qwen3-30b-a3b"; cases[n].l = l; cases[n].t = t; n++;
    }
    /* and the MoE overlaps (transformer_config_kwargs): the EP all-to-all overlap, the
     * shared-expert overlap; both read back off before (the step priced without them) */
    l.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    training_spec t3 = t;
    t3.moe_ep_overlap = true;
    cases[n].model = "qwen3-30b-a3b"; cases[n].l = l; cases[n].t = t3; n++;
    t3 = t;
    t3.moe_shared_overlap = true;
    cases[n].model = "deepseek-v2-lite"; cases[n].l = l; cases[n].t = t3; n++;
    for (int i = 0; i < n; i++) {
        model_spec m = load_model(cases[i].model);
        estimate e;
        char err[CM_ERRLEN];
        if (estimate_layout(&m, &sys, &cases[i].t, &cases[i].l, &e, err, sizeof err) != CM_OK)
            fail_msg("case %d (%s): %s", i, cases[i].model, err);
        round_trip(&e, &m, &sys, cases[i].model);
    }
}

/* ---- configs that break rules ---- */

static const char *read_rules(const char *yaml, const char *model, int gpus, check_report *rep)
{
    static char err[CM_ERRLEN];
    check_config cfg;
    if (check_read_yaml(yaml, strlen(yaml), &cfg, rep, err, sizeof err) != CM_OK) return err;
    system_spec sys = load_system("h100");
    model_spec m = load_model(model);
    if (!check_layout(&m, &sys, &cfg, gpus, rep, err, sizeof err)) return err;
    return NULL;
}

static bool has_rule(const check_report *rep, const char *rule)
{
    for (int i = 0; i < rep->nviolations && i < CHECK_MAX_VIOLATIONS; i++)
        if (!strcmp(rep->violations[i].rule, rule)) return true;
    return false;
}

#define EXPECT_RULE(rp, name)                                                                   \
    do {                                                                                        \
        if (!has_rule(rp, name)) {                                                              \
            for (int i_ = 0; i_ < (rp)->nviolations && i_ < CHECK_MAX_VIOLATIONS; i_++)         \
                print_message("  got [%s] %s\n", (rp)->violations[i_].rule,                     \
                              (rp)->violations[i_].message);                                    \
            fail_msg("expected rule %s", name);                                                 \
        }                                                                                       \
    } while (0)

static void test_violations_named(void **state)
{
    (void)state;
    check_report rep;
    /* TP 3 does not divide Llama-3.1-8B's 32 heads and 8 KV groups */
    assert_null(read_rules("trainer:\n  strategy: megatron\n  placement: {num_gpus: 24}\n"
                           "  policy:\n    megatron_config: {tensor_model_parallel_size: 3}\n"
                           "  train_batch_size: 1024\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "tp-divides-heads");
    assert_int_equal(rep.nviolations, 1);

    /* FSDP2 with a pipeline */
    assert_null(read_rules("trainer:\n  strategy: fsdp2\n  placement: {num_gpus: 16}\n"
                           "  policy:\n    megatron_config: {pipeline_model_parallel_size: 2}\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "fsdp2-no-model-parallel");

    /* CPU offload with activation recompute: valid under torch FSDP2 (issue 19: the guide
     * recommends the two together; the limit is Megatron-FSDP's), broken under Megatron-FSDP */
    assert_null(read_rules("trainer:\n  strategy: fsdp2\n  placement: {num_gpus: 8}\n"
                           "  policy:\n    fsdp_config: {cpu_offload: true}\n"
                           "  gradient_checkpointing: true\n",
                           "8b", 0, &rep));
    assert_int_equal(rep.nviolations, 0);
    assert_null(read_rules("trainer:\n  strategy: megatron\n  placement: {num_gpus: 8}\n"
                           "  policy:\n    fsdp_config: {cpu_offload: true}\n"
                           "    megatron_config:\n      use_megatron_fsdp: true\n"
                           "      use_distributed_optimizer: true\n"
                           "      data_parallel_sharding_strategy: optim_grads_params\n"
                           "      gradient_accumulation_fusion: false\n"
                           "      ckpt_format: fsdp_dtensor\n"
                           "      recompute_granularity: full\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "offload-pp1-no-recompute");

    /* Megatron-FSDP with a pipeline is valid (issue 17: validate_args accepts it); torch FSDP2
     * under Megatron with a pipeline is not */
    assert_null(read_rules("trainer:\n  strategy: megatron\n  placement: {num_gpus: 16}\n"
                           "  policy:\n    megatron_config:\n      pipeline_model_parallel_size: 2\n"
                           "      use_megatron_fsdp: true\n      use_distributed_optimizer: true\n"
                           "      data_parallel_sharding_strategy: optim_grads_params\n"
                           "      gradient_accumulation_fusion: false\n"
                           "      ckpt_format: fsdp_dtensor\n",
                           "8b", 0, &rep));
    assert_int_equal(rep.nviolations, 0);
    assert_null(read_rules("trainer:\n  strategy: megatron\n  placement: {num_gpus: 16}\n"
                           "  policy:\n    megatron_config:\n      pipeline_model_parallel_size: 2\n"
                           "      use_torch_fsdp2: true\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "megatron-torch-fsdp2-no-pp");
    assert_int_equal(rep.nviolations, 1);

    /* Megatron-FSDP's required flags and checkpoint format, torch FSDP2 alongside it */
    assert_null(read_rules("trainer:\n  strategy: megatron\n  placement: {num_gpus: 8}\n"
                           "  policy:\n    megatron_config:\n      use_megatron_fsdp: true\n"
                           "      use_distributed_optimizer: false\n      ckpt_format: torch_dist\n"
                           "      data_parallel_sharding_strategy: optim_grads\n"
                           "      use_torch_fsdp2: true\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "megatron-fsdp-required-flags");
    EXPECT_RULE(&rep, "megatron-fsdp-checkpoint-format");
    EXPECT_RULE(&rep, "megatron-fsdp-vs-torch-fsdp2");
    assert_int_equal(rep.nviolations, 4);

    /* every broken rule at once, not just the first */
    assert_null(read_rules("trainer:\n  strategy: fsdp2\n  placement: {num_gpus: 16}\n"
                           "  policy:\n    fsdp_config: {cpu_offload: true, fsdp_size: 3}\n"
                           "    sequence_parallel_size: 2\n"
                           "    megatron_config: {tensor_model_parallel_size: 4, "
                           "expert_model_parallel_size: 2}\n"
                           "  gradient_checkpointing: true\n  train_batch_size: 1000\n"
                           "  micro_train_batch_size_per_gpu: 3\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "fsdp2-no-model-parallel");
    EXPECT_RULE(&rep, "ep-needs-moe");
    EXPECT_RULE(&rep, "hsdp-divides-dp");
    EXPECT_RULE(&rep, "batch-divisible");
    assert_true(rep.nviolations >= 4); /* offload + recompute: valid under FSDP2 (issue 19) */

    /* expert parallel that does not divide the experts; MoE TP without SP */
    assert_null(read_rules("trainer:\n  strategy: megatron\n  placement: {num_gpus: 48}\n"
                           "  policy:\n    megatron_config: {tensor_model_parallel_size: 2, "
                           "expert_model_parallel_size: 3, use_distributed_optimizer: true}\n"
                           "  train_batch_size: 960\n",
                           "mixtral-8x7b", 0, &rep));
    EXPECT_RULE(&rep, "ep-divides-experts");
    EXPECT_RULE(&rep, "moe-tp-needs-sp");

    /* Ulysses size under megatron; GPU count that tp*pp*cp does not divide */
    assert_null(read_rules("trainer:\n  strategy: megatron\n  placement: {num_gpus: 12}\n"
                           "  policy:\n    sequence_parallel_size: 2\n"
                           "    megatron_config: {tensor_model_parallel_size: 8}\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "megatron-no-ulysses");
    EXPECT_RULE(&rep, "gpu-count");

    /* placement that contradicts itself, and more GPUs per node than the system has */
    assert_null(read_rules("trainer:\n  strategy: fsdp2\n"
                           "  placement: {num_nodes: 2, gpus_per_node: 16, num_gpus: 64}\n",
                           "8b", 0, &rep));
    EXPECT_RULE(&rep, "placement");
    EXPECT_RULE(&rep, "placement-fits-node");
}

static void test_malformed_one_line(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "trainer: [unclosed\n",
        "- just\n- a list\n",
        "plain scalar\n",
        "",
        "data: {x: 1}\n",
        "trainer:\n  strategy: deepspeed\n",
        "trainer:\n  placement: 8\n",
        "trainer:\n  policy:\n    megatron_config: {tensor_model_parallel_size: four}\n",
        "trainer:\n  policy:\n    megatron_config: {tensor_model_parallel_size: \"4\"}\n",
        "trainer:\n  policy:\n    megatron_config: {tensor_model_parallel_size: 0}\n",
        "trainer:\n  policy:\n    fsdp_config: {cpu_offload: maybe}\n",
        "trainer:\n  policy:\n    fsdp_config: {fsdp_size: 0}\n",
        "trainer:\n  policy:\n    megatron_config: {recompute_granularity: partial}\n",
        "trainer:\n  strategy: megatron\n  policy:\n    megatron_config: "
        "{recompute_granularity: full, recompute_method: block}\n",
        "trainer:\n  micro_train_batch_size_per_gpu: 99999999999999999999\n",
        "\t\x01\xff",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        check_config cfg;
        check_report rep;
        char err[CM_ERRLEN] = "";
        cm_status st = check_read_yaml(bad[i], strlen(bad[i]), &cfg, &rep, err, sizeof err);
        if (st != CM_EPARSE) fail_msg("case %zu read as valid (status %d)", i, st);
        assert_true(err[0] != '\0');
        assert_null(strchr(err, '\n'));
    }
    /* no GPU count anywhere is one line too */
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    const char *y = "trainer:\n  strategy: fsdp2\n";
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_OK);
    model_spec m = load_model("8b");
    system_spec s = load_system("h100");
    /* issue 17: no GPU count anywhere takes SkyRL's defaults (one node of one GPU) and says
     * so (it was an error naming --gpus) */
    assert_int_equal(check_layout(&m, &s, &cfg, 0, &rep, err, sizeof err), 1);
    bool said = false;
    for (int i = 0; i < rep.nnotes; i++) said |= strstr(rep.notes[i], "--gpus N") != NULL;
    assert_true(said);
}

/* A real trainer config carries far more than the layout: unknown keys are ignored, SkyRL's
 * own placement and recompute locations are understood. */
static void test_reads_skyrl_style(void **state)
{
    (void)state;
    const char *y = "defaults:\n  - _self_\n"
                    "data:\n  train_data: [\"a.parquet\"]\n"
                    "trainer:\n"
                    "  placement:\n    colocate_all: true\n    policy_num_nodes: 2\n"
                    "    policy_num_gpus_per_node: 8\n"
                    "  strategy: megatron\n"
                    "  policy:\n    model:\n      path: \"Qwen/Qwen2.5-7B\"\n"
                    "    megatron_config:\n      tensor_model_parallel_size: 2\n"
                    "      pipeline_model_parallel_size: 1\n      sequence_parallel: True\n"
                    "      use_distributed_optimizer: yes\n"
                    "      transformer_config_kwargs:\n        recompute_granularity: full\n"
                    "        recompute_method: uniform\n        recompute_num_layers: 1\n"
                    "  micro_train_batch_size_per_gpu: 2\n  train_batch_size: 256\n"
                    "  algorithm: {advantage_estimator: grpo}\n";
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN], name[512];
    assert_int_equal(check_read_yaml(y, strlen(y), &cfg, &rep, err, sizeof err), CM_OK);
    model_spec m;
    assert_int_equal(check_load_model(cfg.model, data_dir(), &m, name, sizeof name, err,
                                      sizeof err),
                     CM_OK);
    assert_string_equal(name, "qwen2.5-7b");
    system_spec s = load_system("h100");
    assert_int_equal(check_layout(&m, &s, &cfg, 0, &rep, err, sizeof err), 16);
    assert_int_equal(rep.nviolations, 0);
    assert_int_equal(cfg.layout.tp, 2);
    assert_int_equal(cfg.layout.dp, 8);
    assert_true(cfg.layout.sp);
    assert_int_equal(cfg.layout.sharding, SHARDING_DISTOPT);
    assert_int_equal(cfg.layout.recompute, RECOMPUTE_FULL);
    assert_int_equal(cfg.layout.mbs, 2);
    assert_int_equal(cfg.training.global_batch, 256);
}

/* layout_check_all() is layout_check() that does not stop: same first failure, same status. */
static void test_check_all_agrees_with_check(void **state)
{
    (void)state;
    model_spec dense = load_model("8b"), moe = load_model("mixtral-8x7b");
    system_spec s = load_system("h100");
    training_spec t = training_default();
    unsigned long long seed = 12345;
#define DRAW(n) ((int)((seed = seed * 6364136223846793005ULL + 1442695040888963407ULL) >> 33) % (n))
    int broken = 0, multi = 0;
    for (int i = 0; i < 20000; i++) {
        static const int sz[] = {1, 2, 3, 4, 8, 16};
        layout l = layout_default(DRAW(2) ? FRAMEWORK_MEGATRON : FRAMEWORK_FSDP2);
        l.tp = sz[DRAW(6)]; l.pp = sz[DRAW(6)]; l.dp = sz[DRAW(6)]; l.cp = sz[DRAW(4)];
        l.ep = sz[DRAW(5)]; l.vpp = 1 + DRAW(3); l.mbs = sz[DRAW(4)]; l.sp = DRAW(2);
        l.sharding = (layout_sharding)DRAW(3); l.recompute = (layout_recompute)DRAW(3);
        l.offload = DRAW(4) == 0; l.shard_size = DRAW(2) ? 2 : 0;
        if (DRAW(2)) { /* nudge half of them towards valid layouts */
            l.vpp = 1; l.offload = false; l.shard_size = 0; l.ep = 1;
            if (l.tp == 3) l.tp = 2;
            if (l.framework == FRAMEWORK_FSDP2) {
                l.tp = l.pp = 1; l.sp = false; l.sharding = SHARDING_FSDP;
                if (l.recompute == RECOMPUTE_SELECTIVE) l.recompute = RECOMPUTE_FULL;
            } else {
                l.sp = l.tp > 1;
                if (l.sharding == SHARDING_FSDP) l.pp = 1;
            }
        }
        const model_spec *m = DRAW(2) ? &moe : &dense;
        int gpus = DRAW(2) ? layout_gpus(&l) * (DRAW(4) ? 1 : 2) : 0;
#undef DRAW
        char err[CM_ERRLEN];
        layout_violation v[32];
        cm_status st = layout_check(m, &s, &t, &l, gpus, err, sizeof err);
        int n = layout_check_all(m, &s, &t, &l, gpus, v, 32);
        if (st == CM_OK) {
            assert_int_equal(n, 0);
            continue;
        }
        broken++;
        if (n > 1) multi++;
        assert_true(n >= 1);
        assert_int_equal(v[0].code, st);
        assert_string_equal(v[0].message, err);
    }
    print_message("  %d of 20000 layouts broken, %d with more than one rule broken\n", broken,
                  multi);
    assert_true(multi > 1000);
    assert_true(broken < 19000); /* valid layouts were tested too */
}

static void test_megatron_args(void **state)
{
    (void)state;
    system_spec sys = load_system("h100");
    char err[CM_ERRLEN];
    char *text = NULL;
    /* Megatron-FSDP: the required and recommended flags and the environment comment */
    model_spec m = load_model("mixtral-8x7b");
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 64; l.ep = 8; l.sharding = SHARDING_FSDP; l.recompute = RECOMPUTE_FULL;
    l.overlap_grad_reduce = l.overlap_param_gather = true; /* a layout knob since issue 15 */
    training_spec t = training_default();
    estimate e;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    emit_context ctx = {.model_ref = "mixtral-8x7b"};
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    static const char *const want[] = {
        "--use-megatron-fsdp \\", "--data-parallel-sharding-strategy optim_grads_params",
        "--no-gradient-accumulation-fusion", "--use-distributed-optimizer",
        "--ckpt-format fsdp_dtensor", "--calculate-per-token-loss",
        "--init-model-with-meta-device", "--fsdp-double-buffer",
        "--use-nccl-ub", "CUDA_DEVICE_MAX_CONNECTIONS", "--num-experts 8", "--moe-router-topk 2",
        "--moe-ffn-hidden-size 14336", "--expert-model-parallel-size 8",
        "--recompute-granularity full", "--recompute-method uniform", "--recompute-num-layers 1",
        "--num-query-groups 8", "--swiglu", "--normalization RMSNorm",
        "--position-embedding-type rope", "--seq-length 4096", "--global-batch-size 1024",
        "--micro-batch-size 1", "--bf16", "--overlap-grad-reduce", "--overlap-param-gather"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        if (!strstr(text, want[i])) fail_msg("missing %s in\n%s", want[i], text);
    assert_null(strstr(text, "--sequence-parallel"));
    /* recommended, but the estimate priced fp32 gradient reduction: the script does not switch
     * to bf16 behind the prediction's back; with --grad-reduce-bf16 it is priced and emitted */
    assert_null(strstr(text, "\n--grad-reduce-in-bf16"));
    assert_non_null(strstr(text, "plan --grad-reduce-bf16 predicts with it"));
    free(text);
    t.grad_reduce_bf16 = true;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "\n--grad-reduce-in-bf16"));
    free(text);
    t.grad_reduce_bf16 = false;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    /* Megatron-Bridge has no recipe and no bridge for Mixtral (AutoBridge refuses
     * MixtralForCausalLM: bench/BRIDGE.md): said, instead of a script that cannot start */
    assert_int_equal(emit_bridge(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "MixtralForCausalLM"));
    assert_non_null(strstr(err, "--emit megatron-args"));
    /* the same Megatron-FSDP layout on a MoE model Bridge reads (Qwen3-30B-A3B's recipe) */
    m = load_model("qwen3-30b-a3b");
    l.dp = 64; l.ep = 8;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_int_equal(emit_bridge(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "cfg.dist.use_megatron_fsdp = True"));
    assert_non_null(strstr(text, "cfg.checkpoint.ckpt_format = \"fsdp_dtensor\""));
    assert_non_null(strstr(text, "cfg.model.expert_model_parallel_size = 8"));
    free(text);

    /* interleaved pipeline with selective recompute and TP+SP; no FSDP flags */
    m = load_model("70b");
    l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 4; l.pp = 4; l.dp = 4; l.vpp = 5; l.sp = true; l.recompute = RECOMPUTE_SELECTIVE;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "--num-layers-per-virtual-pipeline-stage 4 \\"));
    assert_non_null(strstr(text, "--sequence-parallel"));
    assert_non_null(strstr(text, "--recompute-granularity selective"));
    assert_null(strstr(text, "--use-megatron-fsdp"));
    /* TP 4 on Hopper: validate_args asserts CUDA_DEVICE_MAX_CONNECTIONS=1 (issue 17) */
    assert_non_null(strstr(text, "\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"));
    /* the last flag has no continuation */
    size_t len = strlen(text);
    assert_true(len > 3 && text[len - 1] == '\n' && text[len - 2] != '\\');
    free(text);

    /* FSDP2 plans have no Megatron flags: an error that says what to use */
    l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 64;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "--emit yaml"));
    assert_int_equal(emit_bridge(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_EINVAL);

    /* uneven pipeline: 30B's 60 layers on 8 stages, stated as costed (issue 17: the old
     * --decoder-first/last-pipeline-num-layers 6 gave the middle stages 8 each, not the costed
     * 7,8,8,8,8,7,7,7) */
    m = load_model("30b");
    l = layout_default(FRAMEWORK_MEGATRON);
    l.pp = 8; l.dp = 8;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    assert_non_null(strstr(text, "--pipeline-model-parallel-layout "
                                 "'Et*7|t*8|t*8|t*8|t*8|t*7|t*7|t*7,L'"));
    assert_null(strstr(text, "--decoder-first-pipeline-num-layers"));
    free(text);
}

/* ---- the CLI ---- */

static plan_run_result R;

static void run(const char *args) { assert_int_equal(plan_run(&R, args), 0); }

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_cli(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    char dir[] = "/tmp/plan_emit_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], args[1024];

    /* plan --emit yaml | plan check: valid, fits, exit 0 */
    snprintf(path, sizeof path, "%s/plan.yaml", dir);
    snprintf(args, sizeof args, "--model 70b --gpus 64 --emit yaml > '%s'", path);
    run(args);
    assert_int_equal(R.status, 0);
    snprintf(args, sizeof args, "check '%s'", path);
    run(args);
    if (R.status != 0) fail_msg("plan check of the emitted plan exited %d:\n%s%s", R.status,
                                R.out, R.err);
    assert_non_null(strstr(R.out, "OK: every framework rule holds"));
    assert_non_null(strstr(R.out, "step time"));
    /* the file also converts: check --emit megatron-args */
    snprintf(args, sizeof args, "check '%s' --emit megatron-args", path);
    run(args);
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "--tensor-model-parallel-size"));

    /* every violation, with rule names, exit 2 */
    snprintf(path, sizeof path, "%s/bad.yaml", dir);
    write_file(path, "trainer:\n  strategy: fsdp2\n  placement: {num_gpus: 16}\n  policy:\n"
                     "    model: {path: meta-llama/Llama-3.1-8B}\n"
                     "    fsdp_config: {cpu_offload: true}\n"
                     "    megatron_config: {pipeline_model_parallel_size: 2}\n"
                     "  gradient_checkpointing: true\n");
    snprintf(args, sizeof args, "check '%s'", path);
    run(args);
    assert_int_equal(R.status, 2);
    assert_null(strstr(R.out, "[offload-pp1-no-recompute]")); /* torch FSDP2: valid (issue 19) */
    assert_non_null(strstr(R.out, "[fsdp2-no-model-parallel]"));
    assert_non_null(strstr(R.out, "in the YAML:"));

    /* torch FSDP2 under Megatron with a pipeline, model given on the command line, GPUs too */
    write_file(path, "trainer:\n  strategy: megatron\n  policy:\n    megatron_config:\n"
                     "      tensor_model_parallel_size: 3\n"
                     "      pipeline_model_parallel_size: 2\n      use_torch_fsdp2: true\n");
    snprintf(args, sizeof args, "check --model 8b --gpus 48 '%s'", path);
    run(args);
    assert_int_equal(R.status, 2);
    assert_non_null(strstr(R.out, "[megatron-torch-fsdp2-no-pp]"));
    assert_non_null(strstr(R.out, "[tp-divides-heads]"));
    assert_non_null(strstr(R.out, "2 rules broken"));

    /* malformed YAML: exit 2, exactly one line on stderr, nothing on stdout */
    write_file(path, "trainer:\n  strategy: megatron\n  policy: [unclosed\n");
    snprintf(args, sizeof args, "check '%s' --gpus 8", path);
    run(args);
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    assert_string_equal(R.out, "");
    assert_non_null(strstr(R.err, "not valid YAML"));
    /* a wrongly typed value is malformed too */
    write_file(path, "trainer:\n  policy:\n    megatron_config:\n"
                     "      tensor_model_parallel_size: four\n");
    run(args);
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    assert_non_null(strstr(R.err, ":4:"));
    assert_non_null(strstr(R.err, "tensor_model_parallel_size"));

    /* no file; layout flags that would be ignored; a missing file */
    run("check --gpus 8");
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    snprintf(args, sizeof args, "check '%s' --tp 4", path);
    run(args);
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    run("check /nonexistent/plan.yaml");
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    /* a Megatron-LM command is named as such, not read as a broken YAML */
    snprintf(path, sizeof path, "%s/run.sh", dir);
    snprintf(args, sizeof args,
             "--model 8b --gpus 16 --framework megatron --emit megatron-args > '%s'", path);
    run(args);
    assert_int_equal(R.status, 0);
    snprintf(args, sizeof args, "check '%s'", path);
    run(args);
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    assert_non_null(strstr(R.err, "is a Megatron-LM command"));

    /* --emit on plan estimate, and its bad values */
    run("estimate --model 8b --gpus 8 --framework fsdp2 --emit megatron-args");
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    run("--model 8b --gpus 8 --emit toml");
    assert_int_equal(R.status, 2);
    assert_int_equal(lines(R.err), 1);
    run("estimate --model 70b --gpus 64 --tp 8 --pp 2 --emit json");
    assert_int_equal(R.status, 0);
    assert_non_null(strstr(R.out, "\"emit\""));
    assert_non_null(strstr(R.out, "\"megatron_args\""));
    assert_non_null(strstr(R.out, "\"step_s\""));
    run("--model 8b --gpus 8 --emit bridge");
    assert_true(R.status == 0 || R.status == 2); /* 2 when the best plan is fsdp2 */

    snprintf(args, sizeof args, "rm -rf '%s'", dir);
    assert_int_equal(system(args), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_preset),
        cmocka_unit_test(test_round_trip_unusual_layouts),
        cmocka_unit_test(test_violations_named),
        cmocka_unit_test(test_malformed_one_line),
        cmocka_unit_test(test_reads_skyrl_style),
        cmocka_unit_test(test_check_all_agrees_with_check),
        cmocka_unit_test(test_megatron_args),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
