/*
 * test_hf_types.c — model types plan was never tuned on (issue 14, arch24): each fixture under
 * tests/data/hf/types/ (a published checkpoint's config.json, provenance in SOURCES.md there)
 * is read and its total parameter count compared with the exact count transformers 5.17.0
 * builds from the same file (bench/results/arch24_2026-11-29/transformers_counts.json: each
 * config instantiated on the meta device, unique parameters summed; command and versions in
 * that folder's README.md). The types plan cannot represent must be refused with one line.
 * Then the layer structure the cost and memory read: norm count, parallel blocks, q/k norm
 * widths, plain MLPs, biases, routers, dense-first layers.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

static cm_status try_load(const char *stem, model_spec *m, char *err, size_t errlen)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/types/%s.json", HF_FIXTURE_DIR, stem);
    return model_load_json(path, stem, m, err, errlen);
}

static void load(const char *stem, model_spec *m)
{
    char err[CM_ERRLEN];
    if (try_load(stem, m, err, sizeof err) != CM_OK) fail_msg("%s: %s", stem, err);
}

/* transformers 5.17.0's count of the same config.json (transformers_counts.json "params"),
 * less what plan counts that transformers keeps as a buffer, not a parameter. */
static const struct {
    const char *stem;
    double transformers;
    double buffers; /* plan - transformers: e_score_correction_bias, an nn.Buffer there but a
                     * tensor of the checkpoint (plan counts as the safetensors store) */
} counts[] = {
    {"apertus", 8053338176, 0},
    {"arcee", 4619184640, 0},
    {"cohere", 34980831232, 0},
    {"cohere-qknorm", 103810674688, 0},
    {"cohere2", 8028033024, 0},
    {"dots1", 142774373888, 61 * 128},    /* 61 MoE layers x 128 experts */
    {"ernie4_5", 360748032, 0},
    {"ernie4_5_moe", 21825437888, 0},     /* its bias is an nn.Parameter (moe_statics) */
    /* exaone4: transformers 5.17.0 failed on the file as first sent (sliding_window null and
     * no layer_types: Exaone4Config divides by sliding_window_pattern 0); counted by hand from
     * modeling_exaone4.py: 30 x (q 2048^2 + k, v 2048 x 512 + o 2048^2 + q/k norms 2 x 64 +
     * MLP 3 x 2048 x 4096 + 2 x 2048) + 102400 x 2048 + 2048, tied */
    {"exaone4", 30.0 * (2 * 2048.0 * 2048 + 2 * 2048.0 * 512 + 128 + 3 * 2048.0 * 4096 + 4096) +
                    102400.0 * 2048 + 2048,
     0},
    {"falcon", 6921720704, 0},
    {"falcon-40b", 41303293952, 0},
    {"glm4", 9400279040, 0},
    {"glm4_moe", 106852245504, 45 * 128}, /* 45 MoE layers x 128 experts */
    {"gpt_neox", 1414647808, 0},
    {"granite", 2533531648, 0},
    {"granitemoe", 1334628352, 0},
    {"hunyuan_v1_dense", 7504568320, 0},
    {"ministral", 8019808256, 0},
    {"olmo2", 7298617344, 0},
    {"olmoe", 6919161856, 0},
    {"phimoe", 41873153344, 0},
    {"qwen2_moe", 14315784192, 0},
    {"seed_oss", 36151104512, 0},
    {"smollm3", 3075098624, 0},
    {"stablelm", 1644515328, 0},
    {"starcoder2", 3030371328, 0},
};

static void test_counts_equal_transformers(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        model_spec m;
        load(counts[i].stem, &m);
        double plan = model_params_total(&m), want = counts[i].transformers + counts[i].buffers;
        printf("  %-18s plan %15.0f transformers %15.0f%s\n", counts[i].stem, plan,
               counts[i].transformers, counts[i].buffers > 0 ? " + router bias buffers" : "");
        if (plan != want)
            fail_msg("%s: plan %.0f, transformers %.0f + %.0f", counts[i].stem, plan,
                     counts[i].transformers, counts[i].buffers);
    }
}

/* Types plan cannot represent: refused with one line naming what it lacks. */
static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *stem, *says;
    } refused[] = {
        {"qwen3_next", "linear-attention"},
        {"mamba", "state-space"},
        {"llama4_text", "chunked local attention"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        model_spec m;
        char err[CM_ERRLEN];
        cm_status st = try_load(refused[i].stem, &m, err, sizeof err);
        printf("  %-12s %s\n", refused[i].stem, err);
        assert_int_equal(st, CM_EPARSE);
        assert_non_null(strstr(err, refused[i].says));
        assert_null(strchr(err, '\n'));
    }
    /* a layer kind other than full or sliding attention, whatever the type */
    static const char text[] =
        "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
        "\"num_hidden_layers\": 2, \"vocab_size\": 100, \"intermediate_size\": 128, "
        "\"layer_types\": [\"linear_attention\", \"full_attention\"]}";
    model_spec m;
    char err[CM_ERRLEN];
    assert_int_equal(model_load_json_string(text, strlen(text), "x", &m, err, sizeof err),
                     CM_EPARSE);
    assert_non_null(strstr(err, "linear_attention"));
}

static void test_layer_structure(void **state)
{
    (void)state;
    model_spec m;
    /* parallel blocks: Cohere and Falcon-7B share one LayerNorm, GPT-NeoX keeps two */
    load("cohere", &m);
    assert_true(m.parallel_block && m.shared_block_norm && m.norm == MODEL_NORM_LAYER);
    assert_int_equal(model_layer_norms(&m), 1);
    assert_true(model_norm_params(&m) == 8192); /* CohereLayerNorm: weight only */
    load("falcon", &m);
    assert_true(m.parallel_block && m.shared_block_norm);
    assert_int_equal(m.kv_heads, 1); /* multi_query */
    assert_true(model_norm_params(&m) == 2 * 4544);
    load("falcon-40b", &m);
    assert_true(m.parallel_block && !m.shared_block_norm);
    assert_int_equal(m.kv_heads, 8); /* num_kv_heads */
    load("gpt_neox", &m);
    assert_true(m.parallel_block && !m.shared_block_norm && m.activation == MODEL_ACT_GELU);
    assert_true(m.qkv_bias && m.attn_out_bias && m.mlp_bias);
    load("stablelm", &m);
    assert_true(!m.parallel_block && m.qkv_bias && !m.attn_out_bias && m.rotary_fraction == 0.25);
    /* q/k norms: OLMo 2 over the whole projection (4096 + 4096), Exaone 4 per head (64 + 64) */
    load("olmo2", &m);
    assert_true(m.qk_norm && m.qk_norm_full && m.post_norm);
    assert_true(model_attention_params(&m) == 4.0 * 4096 * 4096 + 2 * 4096);
    load("exaone4", &m);
    assert_true(m.qk_norm && !m.qk_norm_full && m.post_norm);
    /* plain two-matrix MLPs */
    load("starcoder2", &m);
    assert_true(m.activation == MODEL_ACT_GELU && m.mlp_bias && m.norm == MODEL_NORM_LAYER);
    assert_true(model_dense_mlp_params(&m) == 2.0 * 3072 * 12288 + 12288 + 3072);
    load("arcee", &m);
    assert_true(m.activation == MODEL_ACT_GELU);
    assert_string_equal(m.hidden_act, "relu2"); /* emitted as Megatron's --squared-relu */
    load("apertus", &m);
    assert_true(m.activation == MODEL_ACT_GELU && m.act_params == 2 && m.qk_norm);
    /* GLM-4: four norms a layer */
    load("glm4", &m);
    assert_int_equal(model_layer_norms(&m), 4);
    /* Seed-OSS: q, k, v biased, o not */
    load("seed_oss", &m);
    assert_true(m.qkv_bias && !m.attn_out_bias);
    /* MoE: Qwen2-MoE's shared expert with its sigmoid gate; ERNIE's dense first layer */
    load("qwen2_moe", &m);
    assert_true(m.shared_expert_gate && m.shared_experts == 1 && m.shared_ffn == 5632);
    assert_true(model_shared_expert_params(&m) == 3.0 * 2048 * 5632 + 2048);
    load("ernie4_5_moe", &m);
    assert_int_equal(m.top_k, 6);
    assert_int_equal(m.shared_experts, 2);
    assert_int_equal(model_moe_layers(&m), 27);
    assert_false(model_layer_is_moe(&m, 0));
    assert_true(m.router_bias);
    load("dots1", &m);
    assert_true(m.router_bias && m.router_scoring == MODEL_ROUTER_SIGMOID && m.qk_norm);
    load("phimoe", &m);
    assert_true(m.norm == MODEL_NORM_LAYER && m.lm_head_bias);
    /* NoPE layers and sliding patterns: SmolLM3 rotates 27 of 36 layers (no_rope_layers);
     * Cohere2's pattern 4 makes 24 of 32 layers sliding, and only those rotate */
    load("smollm3", &m);
    assert_int_equal(m.nope_layers, 9);
    assert_true(model_rope_layer_share(&m) == 0.75);
    load("cohere2", &m);
    assert_int_equal(model_sliding_layers(&m), 24);
    assert_false(model_layer_is_sliding(&m, 3));
    assert_int_equal(m.nope_layers, 8);
    load("exaone4", &m); /* no window: every layer global, every layer rotates */
    assert_int_equal(model_sliding_layers(&m), 0);
    assert_int_equal(m.nope_layers, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_equal_transformers),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_layer_structure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
