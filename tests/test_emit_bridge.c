/*
 * test_emit_bridge.c — the Megatron-Bridge scripts `--emit bridge` writes, as Megatron-Bridge's
 * own code leaves them (issue 17): what runtime_config_update() would overwrite is stated where
 * Bridge reads it, and what Megatron-Core refuses is not written (bench/BRIDGE.md has the runs of
 * Bridge 067f987 these cases come from). Split from test_emit.c, which keeps the trainer YAML,
 * plan check and the Megatron-LM flags.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emit.h"
#include "estimate.h"

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

/* The Bridge script of a plan, as Megatron-Bridge's runtime_config_update() leaves it (issue 17,
 * run through Bridge 067f987 in bench/BRIDGE.md): MixedPrecisionConfig.setup() writes
 * grad_reduce_in_fp32 and pipeline_dtype over cfg.ddp / cfg.model, CommOverlapConfig.setup()
 * writes the overlap fields (the GPT-3 175B recipe turns TP overlap on), the Qwen3 and DeepSeek
 * recipes switch to the flex dispatcher and turn on the shared-expert overlap, the precision-aware
 * optimizer and a full-recompute layer count -- so each is stated where Bridge reads it. */
static char *bridge_text(const char *model, layout l, training_spec t)
{
    model_spec m = load_model(model);
    system_spec sys = load_system("h100");
    estimate e;
    char err[CM_ERRLEN];
    char *text = NULL;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    emit_context ctx = {.model_ref = model};
    if (emit_bridge(&e, &m, &sys, &ctx, &text, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return text;
}

static void want_line(const char *text, const char *line)
{
    char buf[600];
    snprintf(buf, sizeof buf, "\n%s\n", line);
    if (!strstr(text, buf)) fail_msg("missing line '%s' in\n%s", line, text);
}

/* Megatron-Bridge run on plan's scripts (bench/BRIDGE.md, 067f987): an MXFP8 plan without FP8
 * parameters got bf16_with_mxfp8_mixed()'s gradient-buffer reuse, which Megatron-Core's
 * DistributedDataParallelConfig refuses ("Reuse grad buffer only when keeping params in
 * MXFP8"); the script turns it off, and leaves the recipe's value with FP8 parameters. Also
 * --te-cross-entropy reaches Bridge's TransformerConfig and Megatron-LM's flags. */
static void test_bridge_mxfp8_grad_buffer(void **state)
{
    (void)state;
    model_spec m = load_model("8b");
    system_spec sys = load_system("b200");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 8; l.precision = PRECISION_MXFP8; l.te_cross_entropy = true;
    estimate e;
    char err[CM_ERRLEN];
    char *text = NULL;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    emit_context ctx = {.model_ref = "8b"};
    if (emit_bridge(&e, &m, &sys, &ctx, &text, err, sizeof err) != CM_OK) fail_msg("%s", err);
    want_line(text, "cfg.mixed_precision.fp8_param_gather = False");
    want_line(text, "cfg.mixed_precision.reuse_grad_buf_for_mxfp8_param_ag = False");
    want_line(text, "cfg.model.cross_entropy_loss_fusion = True");
    want_line(text, "cfg.model.cross_entropy_fusion_impl = \"te\"");
    free(text);
    /* Megatron-LM's validate_args refuses the TE loss fusion: --emit megatron-args says so */
    text = NULL;
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "stability"));
    free(text);
    l.fp8_param_gather = true;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    if (emit_bridge(&e, &m, &sys, &ctx, &text, err, sizeof err) != CM_OK) fail_msg("%s", err);
    want_line(text, "cfg.mixed_precision.fp8_param_gather = True");
    assert_null(strstr(text, "reuse_grad_buf_for_mxfp8_param_ag"));
    free(text);
}

static void test_bridge_survives_runtime_update(void **state)
{
    (void)state;
    training_spec t = training_default();
    /* bf16 gradient reduce: through the mixed-precision config, not cfg.ddp */
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2; l.dp = 8; l.sp = true;
    t.grad_reduce_bf16 = true;
    char *text = bridge_text("8b", l, t);
    want_line(text, "cfg.mixed_precision = get_mixed_precision_config(\"bf16_mixed\")");
    want_line(text, "cfg.mixed_precision.grad_reduce_in_fp32 = False");
    assert_null(strstr(text, "cfg.ddp.grad_reduce_in_fp32"));
    assert_null(strstr(text, "pipeline_dtype"));
    assert_null(strstr(text, "cfg.mixed_precision = \"bf16_mixed\""));
    free(text);
    t.grad_reduce_bf16 = false;
    /* Megatron-FSDP: the reduce precision the prediction priced (fp32 unless
     * --grad-reduce-bf16), not the recommended bf16 behind the prediction's back */
    l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 16; l.sharding = SHARDING_FSDP;
    text = bridge_text("8b", l, t);
    want_line(text, "cfg.mixed_precision.grad_reduce_in_fp32 = True");
    free(text);
    t.grad_reduce_bf16 = true;
    text = bridge_text("8b", l, t);
    want_line(text, "cfg.mixed_precision.grad_reduce_in_fp32 = False");
    free(text);
    t.grad_reduce_bf16 = false;
    /* GPT-3 175B: the recipe's comm_overlap turns TP overlap on; the plan's values replace it
     * (its userbuffer shapes kept), DP overlaps as planned */
    l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 8; l.pp = 8; l.vpp = 2; l.dp = 2; l.sp = true;
    l.overlap_grad_reduce = l.overlap_param_gather = true;
    text = bridge_text("175b", l, t);
    want_line(text, "cfg.model.tp_comm_overlap = False");
    want_line(text, "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, "
                    "tp_comm_overlap_cfg=getattr(cfg.comm_overlap, \"tp_comm_overlap_cfg\", None), "
                    "overlap_grad_reduce=True, overlap_param_gather=True)");
    free(text);
    /* Qwen3-30B-A3B: alltoall stays alltoall; selective recompute clears the recipe's full
     * recompute layer count (Megatron-Core refuses recompute_num_layers with selective) */
    l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 16; l.ep = 8; l.recompute = RECOMPUTE_SELECTIVE;
    text = bridge_text("qwen3-30b-a3b", l, t);
    want_line(text, "cfg.model.moe_token_dispatcher_type = \"alltoall\"");
    want_line(text, "cfg.model.moe_flex_dispatcher_backend = None");
    want_line(text, "cfg.model.recompute_granularity = \"selective\"");
    want_line(text, "cfg.model.recompute_method = None");
    want_line(text, "cfg.model.recompute_num_layers = None");
    free(text);
    /* DeepSeek-V2-Lite with the EP A2A overlap: on the model and in the comm-overlap config
     * (the recipe's says False); its shared-expert overlap off as planned */
    t.moe_ep_overlap = true;
    l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 16; l.ep = 8;
    text = bridge_text("deepseek-v2-lite", l, t);
    want_line(text, "cfg.model.overlap_moe_expert_parallel_comm = True");
    want_line(text, "cfg.model.moe_shared_expert_overlap = False");
    assert_non_null(strstr(text, ", overlap_moe_expert_parallel_comm=True, delay_wgrad_compute=True)\n"));
    free(text);
    t.moe_ep_overlap = false;
    /* DeepSeek-V3's recipe turns on the precision-aware optimizer with bf16 moments: off as
     * planned, fp32 states */
    l = layout_default(FRAMEWORK_MEGATRON);
    l.pp = 16; l.dp = 64; l.ep = 64;
    text = bridge_text("deepseek-v3", l, t);
    want_line(text, "cfg.optimizer.use_precision_aware_optimizer = False");
    want_line(text, "cfg.optimizer.exp_avg_dtype = torch.float32");
    want_line(text, "cfg.model.mtp_num_layers = 1");
    free(text);
    /* Kimi-K2's model_type is its repository's code: AutoBridge needs trust_remote_code, as
     * Bridge's own Kimi-K2 recipe passes; DeepSeek-V3's is transformers' own: not asked */
    l = layout_default(FRAMEWORK_MEGATRON);
    l.pp = 16; l.dp = 32; l.ep = 32;
    char path[512];
    snprintf(path, sizeof path, "%s/../tests/data/hf/kimi-k2.json", data_dir());
    text = bridge_text(path, l, t);
    assert_non_null(strstr(text, "kimi-k2.json\", trust_remote_code=True)"
                                 ".to_megatron_provider(load_weights=False)\n"));
    free(text);
    snprintf(path, sizeof path, "%s/../tests/data/hf/deepseek-v3.json", data_dir());
    text = bridge_text(path, l, t);
    assert_non_null(strstr(text, "deepseek-v3.json\").to_megatron_provider("));
    assert_null(strstr(text, "trust_remote_code"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bridge_survives_runtime_update),
        cmocka_unit_test(test_bridge_mxfp8_grad_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
