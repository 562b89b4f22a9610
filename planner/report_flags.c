/*
 * report_flags.c — the guide's "flags" and "checkpoint format" rows (issue 23) computed from the
 * emitter instead of restated: the Megatron-LM argv `plan --emit megatron-args` writes for a
 * Megatron-FSDP probe plan, against the same probe with the distributed optimizer. What the
 * first has and the second lacks is what Megatron-FSDP needs; its --ckpt-format is the format
 * plan check enforces (planner/check.c). Fixing the emitter fixes the guide.
 */
#include "report_sections.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"

/* The argv of the probe (64 GPUs, the report's MoE probe model, DP 64) under sharding s. */
static json_t *probe_argv(const report *r, layout_sharding s, layout *out)
{
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.dp = 64;
    l.sharding = s;
    l.overlap_grad_reduce = l.overlap_param_gather = false;
    training_spec t = training_default();
    estimate e;
    char err[CM_ERRLEN];
    json_t *args = NULL;
    if (estimate_layout(&r->probe, &r->sys, &t, &l, &e, err, sizeof err) != CM_OK ||
        emit_megatron_argv(&e, &r->probe, &args, NULL, NULL, err, sizeof err) != CM_OK)
        return NULL;
    *out = l;
    return args;
}

/* The value following flag in argv ("" for a flag without one), or NULL when flag is absent. */
static const char *flag_value(const json_t *argv, const char *flag)
{
    size_t n = json_array_size(argv);
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_array_get(argv, i));
        if (!a || strcmp(a, flag)) continue;
        const char *v = i + 1 < n ? json_string_value(json_array_get(argv, i + 1)) : NULL;
        return v && strncmp(v, "--", 2) ? v : "";
    }
    return NULL;
}

bool report_megatron_fsdp_rows(const report *r, char *flags, size_t flen, char *ckpt,
                               size_t clen)
{
    layout lf, ld;
    json_t *f = probe_argv(r, SHARDING_FSDP, &lf), *dist = probe_argv(r, SHARDING_DISTOPT, &ld);
    bool ok = f && dist;
    if (ok) {
        flags[0] = '\0';
        size_t n = json_array_size(f);
        for (size_t i = 0; i < n; i++) {
            const char *a = json_string_value(json_array_get(f, i));
            if (!a || strncmp(a, "--", 2) || flag_value(dist, a)) continue;
            const char *v = flag_value(f, a);
            size_t o = strlen(flags);
            snprintf(flags + o, flen - o, "%s`%s%s%s`", o ? " " : "", a, *v ? " " : "", v);
        }
        size_t o = strlen(flags);
        if (flag_value(f, "--use-distributed-optimizer"))
            snprintf(flags + o, flen - o, ", with `--use-distributed-optimizer` (emitted for both)");
        int conn = emit_megatron_max_connections(&lf, &r->sys);
        o = strlen(flags);
        if (conn == -1)
            snprintf(flags + o, flen - o, "; `CUDA_DEVICE_MAX_CONNECTIONS` unset");
        else if (conn == 1)
            snprintf(flags + o, flen - o, "; `CUDA_DEVICE_MAX_CONNECTIONS=1`");
        const char *cf = flag_value(f, "--ckpt-format"), *cd = flag_value(dist, "--ckpt-format");
        char dcell[96];
        if (cd) snprintf(dcell, sizeof dcell, "`--ckpt-format %s`", cd);
        else snprintf(dcell, sizeof dcell, "no `--ckpt-format` (Megatron's default, `torch_dist`)");
        snprintf(ckpt, clen, "Megatron-FSDP: `--ckpt-format %s`; distributed optimizer: %s",
                 cf ? cf : "(not set)", dcell);
    }
    json_decref(f);
    json_decref(dist);
    return ok;
}
