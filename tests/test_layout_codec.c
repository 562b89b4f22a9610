/*
 * test_layout_codec.c — the layout codec (costmodel/layout_codec.h): JSON written and read back
 * gives the same layout (dense, MoE with EP and expert TP, CP, interleaved pipeline, FSDP2 with
 * HSDP and offload); the raw zeros of measurement files written before it read as the same
 * layout; bad input names the key; the short name; equality by resolved values; the CSV columns
 * plan bench writes; and the trainer-YAML paths: every one --emit yaml writes is where plan check
 * reads it (a bad value there is reported under that path).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench_csv.h"
#include "check.h"
#include "emit.h"
#include "estimate.h"
#include "layout_codec.h"

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d && *d ? d : "data";
}

/* Layouts that exercise every field. */
static int sample_layouts(layout *out)
{
    int n = 0;
    layout l = layout_default(FRAMEWORK_MEGATRON); /* dense, TP + interleaved PP */
    l.tp = 4; l.pp = 4; l.dp = 4; l.vpp = 2; l.sp = true; l.recompute = RECOMPUTE_FULL;
    l.recompute_layers = 3;
    out[n++] = l;
    l = layout_default(FRAMEWORK_MEGATRON); /* MoE: EP with expert TP 1 under TP 2, FSDP */
    l.tp = 2; l.dp = 32; l.ep = 8; l.etp = 1; l.sp = true; l.sharding = SHARDING_FSDP;
    l.shard_size = 16;
    out[n++] = l;
    l = layout_default(FRAMEWORK_MEGATRON); /* MoE: EP, expert TP the same as TP (default) */
    l.tp = 2; l.dp = 16; l.ep = 4; l.sp = true;
    out[n++] = l;
    l = layout_default(FRAMEWORK_MEGATRON); /* CP with PP, DDP, selective recompute */
    l.pp = 2; l.cp = 4; l.dp = 8; l.mbs = 2; l.sharding = SHARDING_DDP;
    l.recompute = RECOMPUTE_SELECTIVE;
    out[n++] = l;
    l = layout_default(FRAMEWORK_FSDP2); /* Ulysses, HSDP, no reshard */
    l.dp = 8; l.cp = 4; l.shard_size = 8; l.reshard_after_forward = false; l.mbs = 4;
    out[n++] = l;
    l = layout_default(FRAMEWORK_FSDP2); /* offload with full recompute */
    l.dp = 16; l.offload = true; l.recompute = RECOMPUTE_FULL;
    out[n++] = l;
    return n;
}

/* Every member equal (the canonical form, not only the resolved values). */
static void assert_identical(const layout *a, const layout *b)
{
#define SAME(f) assert_int_equal((long)a->f, (long)b->f);
    SAME(framework) SAME(tp) SAME(pp) SAME(dp) SAME(cp) SAME(ep) SAME(etp) SAME(vpp) SAME(mbs)
    SAME(sp) SAME(sharding) SAME(reshard_after_forward) SAME(shard_size) SAME(recompute)
    SAME(recompute_layers) SAME(offload) SAME(moe_dispatcher)
#undef SAME
}

static void test_json_round_trip(void **state)
{
    (void)state;
    layout ls[8];
    int n = sample_layouts(ls);
    training_spec t = training_default();
    t.seq_len = 8192;
    t.global_batch = 256;
    for (int i = 0; i < n; i++) {
        /* layout alone, through text */
        json_t *j = layout_to_json(&ls[i]);
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        json_error_t je;
        j = json_loads(text, 0, &je);
        assert_non_null(j);
        layout back;
        char err[CM_ERRLEN];
        if (layout_from_json(j, "layout", &back, NULL, err, sizeof err) != CM_OK)
            fail_msg("layout %d (%s): %s", i, text, err);
        assert_true(layout_equal(&ls[i], &back));
        assert_identical(&ls[i], &back);
        /* resolved values are what is written */
        assert_int_equal(json_integer_value(json_object_get(j, "etp")), layout_etp(&ls[i]));
        assert_int_equal(json_integer_value(json_object_get(j, "shard_size")),
                         layout_shard_group(&ls[i]));
        assert_null(json_object_get(j, "gbs"));
        json_decref(j);
        free(text);
        /* with the training shape, as plan's JSON writes it */
        j = layout_json_set(json_object(), &ls[i], &t);
        assert_int_equal(json_integer_value(json_object_get(j, "seq")), 8192);
        training_spec t2 = training_default();
        assert_int_equal(layout_from_json(j, "layout", &back, &t2, err, sizeof err), CM_OK);
        assert_identical(&ls[i], &back);
        assert_int_equal(t2.seq_len, 8192);
        assert_int_equal(t2.global_batch, 256);
        json_decref(j);
    }
}

/* Measurement files written before the codec hold etp and shard_size as 0 ("default"). */
static void test_json_old_raw_zeros(void **state)
{
    (void)state;
    const char *old = "{\"framework\": \"megatron\", \"tp\": 2, \"pp\": 1, \"dp\": 16, \"cp\": 1, "
                      "\"ep\": 4, \"etp\": 0, \"vpp\": 1, \"mbs\": 1, \"sp\": true, \"sharding\": "
                      "\"distopt\", \"reshard_after_forward\": true, \"shard_size\": 0, "
                      "\"recompute\": \"none\", \"recompute_layers\": 0, \"offload\": false}";
    const char *now = "{\"framework\": \"megatron\", \"tp\": 2, \"pp\": 1, \"dp\": 16, \"cp\": 1, "
                      "\"ep\": 4, \"etp\": 2, \"vpp\": 1, \"mbs\": 1, \"sp\": true, \"sharding\": "
                      "\"distopt\", \"recompute\": \"none\", \"recompute_layers\": 0, "
                      "\"reshard_after_forward\": true, \"shard_size\": 16, \"offload\": false}";
    layout a, b;
    char err[CM_ERRLEN];
    json_error_t je;
    json_t *ja = json_loads(old, 0, &je), *jb = json_loads(now, 0, &je);
    assert_int_equal(layout_from_json(ja, "old", &a, NULL, err, sizeof err), CM_OK);
    assert_int_equal(layout_from_json(jb, "now", &b, NULL, err, sizeof err), CM_OK);
    assert_identical(&a, &b);
    assert_int_equal(a.etp, 0);
    assert_int_equal(a.shard_size, 0);
    /* an explicit HSDP group stays one */
    json_object_set_new(jb, "shard_size", json_integer(8));
    json_object_set_new(jb, "etp", json_integer(1));
    assert_int_equal(layout_from_json(jb, "now", &b, NULL, err, sizeof err), CM_OK);
    assert_int_equal(b.shard_size, 8);
    assert_int_equal(b.etp, 1);
    json_decref(ja);
    json_decref(jb);
}

static void test_json_bad_input(void **state)
{
    (void)state;
    const char *bad[][2] = {
        {"{\"tp\": 2}", "plans[0].layout needs \"framework\""},
        {"[1]", "plans[0].layout needs \"framework\""},
        {"{\"framework\": \"deepspeed\"}", "needs \"framework\": fsdp2 or megatron"},
        {"{\"framework\": \"fsdp2\", \"dp\": -1}", "plans[0].layout.dp must be a non-negative"},
        {"{\"framework\": \"fsdp2\", \"cp\": \"2\"}", "plans[0].layout.cp must be a non-negative"},
        {"{\"framework\": \"fsdp2\", \"offload\": 1}", "plans[0].layout.offload must be true"},
        {"{\"framework\": \"fsdp2\", \"sharding\": \"zero2\"}", "sharding must be ddp"},
        {"{\"framework\": \"fsdp2\", \"recompute\": 2}", "recompute none, selective or full"},
        {"{\"framework\": \"megatron\", \"moe_dispatcher\": \"nccl\"}",
         "moe_dispatcher alltoall, allgather, deepep or hybridep"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_error_t je;
        json_t *j = json_loads(bad[i][0], JSON_DECODE_ANY, &je);
        assert_non_null(j);
        layout l;
        char err[CM_ERRLEN] = "";
        cm_status st = layout_from_json(j, "plans[0].layout", &l, NULL, err, sizeof err);
        if (st == CM_OK || !strstr(err, bad[i][1]))
            fail_msg("%s: status %d, '%s' (want '%s')", bad[i][0], st, err, bad[i][1]);
        json_decref(j);
    }
}

/* issue 20: the MoE dispatcher is written by name and read back; the default is alltoall. */
static void test_json_moe_dispatcher(void **state)
{
    (void)state;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    assert_int_equal(l.moe_dispatcher, MOE_DISPATCH_ALLTOALL);
    l.tp = 2; l.dp = 16; l.ep = 4; l.sp = true;
    for (int d = MOE_DISPATCH_ALLTOALL; d <= MOE_DISPATCH_HYBRIDEP; d++) {
        l.moe_dispatcher = (layout_moe_dispatcher)d;
        json_t *j = layout_to_json(&l);
        assert_string_equal(json_string_value(json_object_get(j, "moe_dispatcher")),
                            layout_moe_dispatcher_name(l.moe_dispatcher));
        layout back;
        char err[CM_ERRLEN];
        assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
        assert_identical(&l, &back);
        assert_true(layout_equal(&l, &back));
        json_decref(j);
    }
    layout other = l;
    other.moe_dispatcher = MOE_DISPATCH_ALLTOALL;
    assert_false(layout_equal(&l, &other));
}

static void test_short_name(void **state)
{
    (void)state;
    layout ls[8];
    int n = sample_layouts(ls);
    const char *want[] = {
        "megatron tp4 pp4 dp4 cp1 vpp2 mbs1 distopt rc-full3",
        "megatron tp2 pp1 dp32 cp1 ep8 etp1 mbs1 fsdp hsdp16",
        "megatron tp2 pp1 dp16 cp1 ep4 mbs1 distopt",
        "megatron tp1 pp2 dp8 cp4 mbs2 ddp rc-selective",
        "fsdp2 tp1 pp1 dp8 cp4 mbs4 fsdp-nr hsdp8",
        "fsdp2 tp1 pp1 dp16 cp1 mbs1 fsdp+off rc-full",
    };
    assert_int_equal(n, (int)(sizeof want / sizeof *want));
    for (int i = 0; i < n; i++) {
        char name[128];
        layout_short_name(&ls[i], name, sizeof name);
        assert_string_equal(name, want[i]);
    }
    /* the names plan refine wrote before (dense, no ep/vpp) are unchanged */
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 4; l.mbs = 2; l.reshard_after_forward = false;
    char name[128];
    layout_short_name(&l, name, sizeof name);
    assert_string_equal(name, "fsdp2 tp1 pp1 dp4 cp1 mbs2 fsdp-nr");
    /* every size, as the guide table prints them */
    layout_short_sizes(&ls[2], true, name, sizeof name);
    assert_string_equal(name, "tp2 pp1 dp16 cp1 ep4 vpp1 mbs1");
    /* a short buffer is cut, never overrun */
    char tiny[8];
    layout_short_name(&ls[0], tiny, sizeof tiny);
    assert_int_equal(strlen(tiny), 7);
}

static void test_equal(void **state)
{
    (void)state;
    layout ls[8];
    int n = sample_layouts(ls);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) assert_int_equal(layout_equal(&ls[i], &ls[k]), i == k);
    layout a = ls[2], b = ls[2];
    b.etp = b.tp; /* the default expert TP given explicitly */
    assert_true(layout_equal(&a, &b));
    b.shard_size = b.dp * b.cp;
    assert_true(layout_equal(&a, &b));
    b.ep = 8;
    assert_false(layout_equal(&a, &b));
}

/* The layout columns of plan bench's CSV are the codec's, in its order. */
static void test_csv_columns(void **state)
{
    (void)state;
    const layout_field *f[LAYOUT_CSV_MAX];
    int n = layout_csv_fields(f);
    const char *want[] = {"framework", "sharding", "tp", "pp", "dp", "cp", "ep", "vpp",
                          "mbs", "gbs", "seq", "recompute"};
    assert_int_equal(n, (int)(sizeof want / sizeof *want));
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    bench_csv_write_header(mem);
    fclose(mem);
    char expect[512] = "\"model\",\"params\"";
    for (int i = 0; i < n; i++) {
        assert_string_equal(f[i]->key, want[i]);
        size_t used = strlen(expect);
        snprintf(expect + used, sizeof expect - used, ",\"%s\"", want[i]);
    }
    strcat(expect, ",\"gpus\",");
    assert_non_null(strstr(buf, expect));
    free(buf);
    /* the CSV text of an HSDP layout's sharding */
    layout ls[8];
    sample_layouts(ls);
    char cell[32];
    layout_field_text(layout_field_get(LAYOUT_F_SHARDING), &ls[4], NULL, LAYOUT_TEXT_CSV, cell,
                      sizeof cell);
    assert_string_equal(cell, "hsdp");
    layout_field_text(layout_field_get(LAYOUT_F_SHARDING), &ls[4], NULL, LAYOUT_TEXT_PLAIN, cell,
                      sizeof cell);
    assert_string_equal(cell, "fsdp");
}

/* The YAML --emit yaml writes for layout l (on the model), or fails the test. Not inlined:
 * GCC 12 then takes the returned buffer for the address of the local it was written through
 * (-Wdangling-pointer). */
static __attribute__((noinline)) char *emit_layout(const char *model, const layout *l)
{
    model_spec m;
    system_spec sys;
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), &m, err, sizeof err) != CM_OK ||
        system_load("h100", data_dir(), &sys, err, sizeof err) != CM_OK)
        fail_msg("%s", err);
    training_spec t = training_default();
    estimate e;
    if (estimate_layout(&m, &sys, &t, l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    emit_context ctx = {.model_ref = model};
    char *text = NULL;
    if (emit_yaml(&e, &m, &sys, &ctx, &text, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return text;
}

/* Every path of the table that --emit yaml writes for l is the one plan check reads: the key is
 * in the YAML (as the last component of its path), and a bad value there is reported by plan
 * check under the whole path. */
static int check_yaml_paths(const char *model, const layout *l)
{
    char *text = emit_layout(model, l);
    int checked = 0;
    for (int i = 0; i < LAYOUT_NFIELDS; i++) {
        const char *path = layout_yaml_path((layout_field_id)i, l->framework);
        if (!path) continue;
        /* the uneven split's keys are written only when set (issue 21) */
        if ((i == LAYOUT_F_PP_FIRST_LAYERS && !l->pp_first_layers) ||
            (i == LAYOUT_F_PP_LAST_LAYERS && !l->pp_last_layers))
            continue;
        /* cpu_offloading_num_layers: written with the activation offload only */
        if (i == LAYOUT_F_ACTIVATION_OFFLOAD_LAYERS && !l->activation_offload) continue;
        /* recompute_num_layers is read under full recompute only */
        if (i == LAYOUT_F_RECOMPUTE_LAYERS && l->recompute != RECOMPUTE_FULL) continue;
        /* under fsdp2 the YAML has no megatron_config (plan check still reads it) */
        if (l->framework == FRAMEWORK_FSDP2 && strstr(path, "megatron_config")) continue;
        const char *key = layout_yaml_key((layout_field_id)i, l->framework);
        char needle[128];
        snprintf(needle, sizeof needle, " %s: ", key);
        const char *at = strstr(text, needle);
        if (!at) fail_msg("%s: --emit yaml does not write %s:\n%s", model, path, text);
        /* replace the value (to the end of its line) with a list */
        size_t value = (size_t)(at - text) + strlen(needle);
        size_t eol = value + strcspn(text + value, "\n");
        char bad[8192];
        snprintf(bad, sizeof bad, "%.*s[1]%s", (int)value, text, text + eol);
        check_config cfg;
        check_report rep;
        char err[CM_ERRLEN] = "";
        cm_status st = check_read_yaml(bad, strlen(bad), &cfg, &rep, err, sizeof err);
        if (st != CM_EPARSE || !strstr(err, path))
            fail_msg("%s: a list at %s: plan check says '%s' (status %d)", model, path, err, st);
        checked++;
    }
    free(text);
    return checked;
}

static void test_yaml_paths_shared(void **state)
{
    (void)state;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2; l.pp = 2; l.vpp = 2; l.cp = 2; l.dp = 8; l.ep = 8; l.etp = 1; l.sp = true;
    l.sharding = SHARDING_DISTOPT; l.shard_size = 4; l.recompute = RECOMPUTE_FULL;
    l.recompute_layers = 2;
    /* every field with a path but dp (which has none) */
    int n = check_yaml_paths("mixtral-8x7b", &l);
    int with_path = 0;
    for (int i = 0; i < LAYOUT_NFIELDS; i++)
        with_path += layout_yaml_path((layout_field_id)i, FRAMEWORK_MEGATRON) != NULL;
    /* less the uneven split's two and the activation offload's layer count, unset here */
    assert_int_equal(n, with_path - 3);
    /* an uneven pipeline (issue 21) writes those two as well: 32 layers as 7 / 9 / 9 / 7 */
    layout u = l;
    u.pp = 4; u.vpp = 1; u.dp = 4;
    u.pp_first_layers = 7; u.pp_last_layers = 7;
    assert_int_equal(check_yaml_paths("mixtral-8x7b", &u), with_path - 1);
    /* activation offload of 20 layers (pp 1, no recompute) writes cpu_offloading_num_layers */
    layout a = l;
    a.pp = 1; a.vpp = 1; a.dp = 16; a.recompute = RECOMPUTE_NONE; a.recompute_layers = 0;
    a.activation_offload = true; a.activation_offload_layers = 20;
    assert_int_equal(check_yaml_paths("mixtral-8x7b", &a), with_path - 3); /* no recompute */
    assert_null(layout_yaml_path(LAYOUT_F_DP, FRAMEWORK_MEGATRON));
    l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 16; l.cp = 4; l.shard_size = 8; l.reshard_after_forward = false;
    l.recompute = RECOMPUTE_FULL;
    assert_true(check_yaml_paths("8b", &l) >= 8);
    assert_string_equal(layout_yaml_path(LAYOUT_F_CP, FRAMEWORK_FSDP2),
                        "trainer.policy.sequence_parallel_size");
    assert_string_equal(layout_yaml_key(LAYOUT_F_TP, FRAMEWORK_MEGATRON),
                        "tensor_model_parallel_size");
}

/* issue 14: impl, compile and optimizer_impl are written resolved (the framework's defaults:
 * fsdp2 -> hf + foreach, megatron -> te + fused), read back to the canonical 0, and given
 * values survive the round trip. */
static void test_impl_fields(void **state)
{
    (void)state;
    char err[CM_ERRLEN];
    layout f = layout_default(FRAMEWORK_FSDP2), m = layout_default(FRAMEWORK_MEGATRON);
    json_t *j = layout_to_json(&f);
    assert_string_equal(json_string_value(json_object_get(j, "impl")), "hf");
    assert_string_equal(json_string_value(json_object_get(j, "optimizer_impl")), "foreach");
    assert_true(json_is_false(json_object_get(j, "compile")));
    layout back;
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    assert_int_equal(back.impl, IMPL_DEFAULT);
    assert_int_equal(back.optimizer_impl, OPTIMIZER_IMPL_DEFAULT);
    json_decref(j);
    j = layout_to_json(&m);
    assert_string_equal(json_string_value(json_object_get(j, "impl")), "te");
    assert_string_equal(json_string_value(json_object_get(j, "optimizer_impl")), "fused");
    json_decref(j);
    f.impl = IMPL_NATIVE;
    f.compile = true;
    f.optimizer_impl = OPTIMIZER_IMPL_FOR_LOOP;
    j = layout_to_json(&f);
    assert_string_equal(json_string_value(json_object_get(j, "optimizer_impl")), "for-loop");
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_OK);
    assert_true(layout_equal(&f, &back));
    assert_int_equal(back.impl, IMPL_NATIVE);
    assert_true(back.compile);
    assert_int_equal(back.optimizer_impl, OPTIMIZER_IMPL_FOR_LOOP);
    json_object_set_new(j, "impl", json_string("jax"));
    assert_int_equal(layout_from_json(j, "layout", &back, NULL, err, sizeof err), CM_EPARSE);
    json_decref(j);
    assert_false(layout_equal(&f, &m));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_round_trip),  cmocka_unit_test(test_json_old_raw_zeros),
        cmocka_unit_test(test_json_bad_input),   cmocka_unit_test(test_json_moe_dispatcher),   cmocka_unit_test(test_short_name),
        cmocka_unit_test(test_equal),            cmocka_unit_test(test_csv_columns),
        cmocka_unit_test(test_yaml_paths_shared), cmocka_unit_test(test_impl_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
