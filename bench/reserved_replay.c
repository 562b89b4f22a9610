/*
 * reserved_replay.c — prints what costmodel/alloc_step.h's allocator replay reserves for one
 * single-GPU FSDP2 spec, in the columns of bench/results/resv20_2026-11-29's traces (GiB): the
 * build, what step 0's forward, backward and optimizer step and step 1 added on the default
 * stream, its total, FSDP2's reduce-scatter stream, the peak reserved and the peak allocated.
 * Used by bench/results/alloc21_2026-11-29/validate.py.
 *
 * Usage: reserved_replay CONFIG.json SEQ MBS LAYERS MODE [CAPACITY_GIB]   (LAYERS 0: the
 * config's; MODE one of hf, ckpt, eager, eager-ckpt (transformers' eager attention), native,
 * native-ckpt, native-compile (each block torch.compile'd), optionally ending in +fused or +foreach
 * for AdamW's path, default foreach under hf and fused natively; CAPACITY_GIB: what cudaMalloc can give,
 * the device's memory less what lies outside the allocator, default unlimited; with it the line
 * also says whether the cache was released and whether a cudaMalloc still failed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_step.h"
#include "layout.h"
#include "model.h"
#include "status.h"

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: reserved_replay CONFIG.json SEQ MBS LAYERS hf|ckpt|eager|eager-ckpt|native|native-ckpt|native-compile[+fused|+foreach] "
                        "[CAPACITY_GIB]\n");
        return 2;
    }
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load(argv[1], "data", &m, err, sizeof err) != CM_OK) {
        fprintf(stderr, "reserved_replay: %s\n", err);
        return 1;
    }
    int seq = atoi(argv[2]), mbs = atoi(argv[3]), layers = atoi(argv[4]);
    const char *mode = argv[5];
    double capacity_gib = argc == 7 ? atof(argv[6]) : 0;
    if (seq <= 0 || mbs <= 0 || layers < 0 || capacity_gib < 0) {
        fprintf(stderr, "reserved_replay: SEQ and MBS must be positive, LAYERS and CAPACITY_GIB >= 0\n");
        return 1;
    }
    if (layers > 0) m.layers = layers;
    training_spec t = training_default();
    t.seq_len = seq;
    t.global_batch = mbs;
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 1;
    l.mbs = mbs;
    /* MODE may end in +fused or +foreach: AdamW's path (default: foreach for HF, fused native) */
    char base[32];
    const char *plus = strchr(mode, '+');
    size_t n = plus ? (size_t)(plus - mode) : strlen(mode);
    if (n >= sizeof base) n = sizeof base - 1;
    memcpy(base, mode, n);
    base[n] = 0;
    mode = base;
    if (!strcmp(mode, "hf") || !strcmp(mode, "ckpt") || !strcmp(mode, "eager") ||
        !strcmp(mode, "eager-ckpt")) { /* eager: transformers' eager attention */
        if (!strncmp(mode, "eager", 5)) t.attention = ATTENTION_UNFUSED;
        l.impl = IMPL_HF;
        l.optimizer_impl = OPTIMIZER_IMPL_FOREACH;
    } else if (!strcmp(mode, "native") || !strcmp(mode, "native-ckpt") ||
               !strcmp(mode, "native-compile")) { /* native-compile: blocks torch.compile'd */
        l.impl = IMPL_NATIVE;
        l.compile = !strcmp(mode, "native-compile");
        l.loss_eager = true; /* realrun.py compiles the blocks only */
        l.optimizer_impl = OPTIMIZER_IMPL_FUSED;
    } else {
        fprintf(stderr, "reserved_replay: unknown mode '%s'\n", mode);
        return 1;
    }
    if (plus && !strcmp(plus, "+fused")) l.optimizer_impl = OPTIMIZER_IMPL_FUSED;
    else if (plus && !strcmp(plus, "+foreach")) l.optimizer_impl = OPTIMIZER_IMPL_FOREACH;
    else if (plus) {
        fprintf(stderr, "reserved_replay: unknown optimizer '%s' (+fused or +foreach)\n", plus);
        return 1;
    }
    l.recompute = strstr(mode, "ckpt") ? RECOMPUTE_FULL : RECOMPUTE_NONE;
    alloc_step_reserved r;
    const double g = 1073741824.0;
    if (alloc_step_replay(&m, &t, &l, capacity_gib * g, &r) != 0) {
        fprintf(stderr, "reserved_replay: this spec is not covered by the replay\n");
        return 1;
    }
    printf("W %.2f fwd0 %.2f bwd0 %.2f opt0 %.2f step1 %.2f step2 %.2f main %.2f side %.2f "
           "peak %.2f alloc %.2f\n",
           r.build_bytes / g, (r.fwd0_bytes - r.build_bytes) / g,
           (r.bwd0_bytes - r.fwd0_bytes) / g, (r.opt0_bytes - r.bwd0_bytes) / g,
           (r.step1_bytes - r.opt0_bytes) / g, (r.step2_bytes - r.step1_bytes) / g,
           r.step2_bytes / g, r.side_bytes / g, r.peak_bytes / g, r.peak_allocated_bytes / g);
    if (capacity_gib > 0)
        printf("released %s oom %s\n", r.cache_released ? "yes" : "no", r.out_of_memory ? "yes" : "no");
    return 0;
}
