/* compare.c (gemeager23) — for one Hugging Face single-H200 FSDP2 spec, under SDPA and under
 * eager attention: the allocator replay's peak allocated and reserved (alloc_step.h) and the
 * analytic memory_peak (memory.h). Not part of the build; see README.md for the command.
 * Usage: compare CONFIG.json SEQ MBS LAYERS(0: config's) CKPT(0|1) */
#include <stdio.h>
#include <stdlib.h>
#include "alloc_step.h"
#include "memory.h"
#include "system.h"
#include "status.h"
#define GIB 1073741824.0
int main(int argc, char **argv)
{
    model_spec m; training_spec t; layout l; system_spec sys; char err[CM_ERRLEN];
    if (model_load(argv[1], "data", &m, err, sizeof err) != CM_OK) { puts(err); return 1; }
    if (system_load("h200", "data", &sys, err, sizeof err) != CM_OK) { puts(err); return 1; }
    int seq = atoi(argv[2]), mbs = atoi(argv[3]), layers = atoi(argv[4]), ck = atoi(argv[5]);
    if (layers > 0) m.layers = layers;
    t = training_default(); t.seq_len = seq; t.global_batch = mbs;
    l = layout_default(FRAMEWORK_FSDP2); l.dp = 1; l.mbs = mbs; l.impl = IMPL_HF;
    l.optimizer_impl = OPTIMIZER_IMPL_FOREACH; l.recompute = ck ? RECOMPUTE_FULL : RECOMPUTE_NONE;
    double ra[2], rr[2], at[2], fw[2];
    for (int e = 0; e < 2; e++) {
        t.attention = e ? ATTENTION_UNFUSED : ATTENTION_FLASH; t.attention_set = true;
        alloc_step_reserved r;
        int cov = alloc_step_covered(&m, &t, &l);
        int rc = alloc_step_replay(&m, &t, &l, 0, &r);
        memory_breakdown mb = memory_peak(&m, &sys, &t, &l);
        ra[e] = rc == 0 ? r.peak_allocated_bytes / GIB : -1; rr[e] = rc == 0 ? r.peak_bytes / GIB : -1;
        at[e] = mb.total_bytes / GIB; fw[e] = mb.framework_bytes / GIB;
        printf("%s s%d b%d L%d ck%d %s covered %d: replay alloc %.3f res %.3f | analytic total %.3f framework %.3f total-fw %.3f reserved %.3f\n",
               argv[1], seq, mbs, m.layers, ck, e ? "eager" : "sdpa ", cov, ra[e], rr[e], at[e], fw[e], at[e] - fw[e], mb.reserved_bytes / GIB);
    }
    printf("  delta eager-sdpa: replay alloc %+.3f  analytic %+.3f  diff %+.3f GiB\n", ra[1] - ra[0], at[1] - at[0], (ra[1] - ra[0]) - (at[1] - at[0]));
    return 0;
}
