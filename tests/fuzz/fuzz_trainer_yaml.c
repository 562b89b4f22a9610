/*
 * fuzz_trainer_yaml.c — libFuzzer harness for the trainer-YAML reader behind `plan check`
 * (check_read_yaml), then the all-rules check on a dense and an MoE model. A config that reads
 * and breaks no rule is estimated, emitted again as YAML and read back, and must come back as
 * the same layout (the round trip of tests/test_emit.c, on arbitrary input): a mismatch aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_torchtitan.h"
#include "layout_codec.h"
#include "emit.h"
#include "estimate.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static model_spec models[2];
static system_spec sys;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir || !*dir) dir = PLAN_DATA_DIR_DEFAULT;
    char err[CM_ERRLEN];
    if (model_load("8b", dir, &models[0], err, sizeof err) != CM_OK ||
        model_load("mixtral-8x7b", dir, &models[1], err, sizeof err) != CM_OK ||
        system_load("h100", dir, &sys, err, sizeof err) != CM_OK) {
        fprintf(stderr, "fuzz_trainer_yaml: %s\n", err);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_config cfg;
    check_report rep;
    char err[CM_ERRLEN];
    /* issue 19: a torchtitan command line goes through its own reader, as plan check does */
    bool titan = check_is_torchtitan((const char *)data, size);
    if ((titan ? check_read_torchtitan((const char *)data, size, &cfg, &rep, err, sizeof err)
               : check_read_yaml((const char *)data, size, &cfg, &rep, err, sizeof err)) != CM_OK)
        return 0;
    const model_spec *m = &models[size & 1];
    if (titan && !check_torchtitan_resolve(m, &cfg, (size & 2) ? 64 : 0, &rep)) return 0;
    int gpus = check_layout(m, &sys, &cfg, (size & 2) ? 64 : 0, &rep, err, sizeof err);
    (void)check_yaml_fix(rep.nviolations ? rep.violations[0].rule : NULL);
    if (!gpus || rep.nviolations) return 0;
    /* Beyond a few thousand GPUs the cost model's job is not the reader's: stop there. */
    if (gpus > 16384) return 0;
    estimate e;
    if (estimate_layout(m, &sys, &cfg.training, &cfg.layout, &e, err, sizeof err) != CM_OK)
        abort(); /* check_layout found no broken rule, so the estimate must accept it */
    char *text = NULL;
    emit_context ctx = {.model_ref = m->name};
    if (titan) { /* written back as the command, read again: the same layout */
        if (emit_torchtitan(&e, m, &sys, &ctx, &text, err, sizeof err) != CM_OK) abort();
        check_config tb;
        check_report tr;
        if (check_read_torchtitan(text, strlen(text), &tb, &tr, err, sizeof err) != CM_OK ||
            !check_torchtitan_resolve(m, &tb, 0, &tr))
            abort();
        check_layout(m, &sys, &tb, 0, &tr, err, sizeof err);
        if (tr.nviolations || !layout_equal(&tb.layout, &e.layout) ||
            tb.training.global_batch != e.training.global_batch) {
            fprintf(stderr, "round trip changed the layout:\n%s\n", text);
            abort();
        }
        free(text);
        return 0;
    }
    if (emit_yaml(&e, m, &sys, &ctx, &text, err, sizeof err) != CM_OK) abort();
    check_config back;
    check_report rep2;
    if (check_read_yaml(text, strlen(text), &back, &rep2, err, sizeof err) != CM_OK) abort();
    check_layout(m, &sys, &back, 0, &rep2, err, sizeof err);
    const layout *a = &e.layout, *b = &back.layout;
    if (rep2.nviolations || a->framework != b->framework || a->tp != b->tp || a->pp != b->pp ||
        a->dp != b->dp || a->cp != b->cp || a->ep != b->ep || a->etp != b->etp ||
        a->vpp != b->vpp || a->mbs != b->mbs || a->sp != b->sp || a->sharding != b->sharding ||
        a->reshard_after_forward != b->reshard_after_forward || a->shard_size != b->shard_size ||
        a->recompute != b->recompute || a->recompute_layers != b->recompute_layers ||
        a->offload != b->offload || a->moe_dispatcher != b->moe_dispatcher ||
        e.training.moe_ep_overlap != back.training.moe_ep_overlap ||
        e.training.moe_shared_overlap != back.training.moe_shared_overlap ||
        e.training.seq_len != back.training.seq_len ||
        e.training.global_batch != back.training.global_batch) {
        fprintf(stderr, "round trip changed the layout:\n%s\n", text);
        abort();
    }
    free(text);
    return 0;
}
