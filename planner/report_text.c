/*
 * report_text.c — numbers, layouts and lists as `plan report` writes them (see report_text.h).
 */
#include "report_text.h"

#include <stdio.h>
#include <string.h>

#include "layout.h"

const char *report_fw_title(int fw)
{
    return fw == FRAMEWORK_FSDP2 ? "FSDP2" : fw == FRAMEWORK_TORCHTITAN ? "torchtitan" : "Megatron";
}

void report_fmt_params(double p, char *buf, size_t n)
{
    if (p >= 1e9) snprintf(buf, n, "%.*fB", p >= 1e11 ? 0 : 1, p / 1e9);
    else snprintf(buf, n, "%.0fM", p / 1e6);
}

/* " · CPU offload · optimizer offload N% · activation offload", the parts l uses: what moves
 * memory to the host is part of the plan a reader must know (issue 21). */
static void offload_suffix(const layout *l, char *buf, size_t n)
{
    buf[0] = '\0';
    if (l->offload) snprintf(buf, n, " · CPU offload");
    size_t o = strlen(buf);
    if (l->optimizer_offload_pct > 0)
        snprintf(buf + o, n - o, " · optimizer offload %d%%", l->optimizer_offload_pct);
    o = strlen(buf);
    if (l->activation_offload) snprintf(buf + o, n - o, " · activation offload");
}

void report_fmt_layout(const estimate *e, char *buf, size_t n)
{
    const layout *l = &e->layout;
    if (l->framework == FRAMEWORK_FSDP2) {
        char shard[32] = "";
        if (l->shard_size) snprintf(shard, sizeof shard, " (HSDP %d)", l->shard_size);
        snprintf(buf, n, "DP %d · Ulysses %d · mbs %d · FSDP%s%s · recompute %s%s", l->dp,
                 l->cp, l->mbs, shard, l->reshard_after_forward ? "" : " no-reshard",
                 layout_recompute_name(l->recompute), l->offload ? " · CPU offload" : "");
        return;
    }
    char ep[32] = "", vpp[32] = "", off[96];
    offload_suffix(l, off, sizeof off);
    if (l->ep > 1)
        snprintf(ep, sizeof ep, " · EP %d%s", l->ep, layout_etp(l) != l->tp ? " (ETP 1)" : "");
    if (l->vpp > 1) snprintf(vpp, sizeof vpp, " · VPP %d", l->vpp);
    if (l->framework == FRAMEWORK_TORCHTITAN) { /* issue 19 */
        snprintf(buf, n, "TP %d · PP %d%s%s · DP %d · CP %d%s · mbs %d · %s%s · recompute %s%s%s%s",
                 l->tp, l->pp, l->pp > 1 ? " " : "",
                 l->pp > 1 ? layout_pp_schedule_name(layout_pp_schedule_of(l)) : "", l->dp, l->cp,
                 ep, l->mbs, l->shard_size ? "HSDP" : "FSDP2",
                 l->reshard_after_forward ? "" : " no-reshard", layout_recompute_name(l->recompute),
                 off, l->compile ? " · compile" : "", l->async_tp ? " · async TP" : "");
        return;
    }
    snprintf(buf, n, "TP %d · PP %d · DP %d · CP %d%s%s · mbs %d%s · %s · recompute %s%s", l->tp,
             l->pp, l->dp, l->cp, ep, vpp, l->mbs, l->sp ? " · SP" : "",
             l->sharding == SHARDING_FSDP      ? "Megatron-FSDP"
             : l->sharding == SHARDING_DISTOPT ? "distopt"
                                               : "DDP",
             layout_recompute_name(l->recompute), off);
}

void report_fmt_layout_short(const estimate *e, char *buf, size_t n)
{
    const layout *l = &e->layout;
    char rc[32] = "";
    if (l->recompute != RECOMPUTE_NONE)
        snprintf(rc, sizeof rc, " · recompute %s", layout_recompute_name(l->recompute));
    if (l->framework == FRAMEWORK_FSDP2) {
        char ul[24] = "", hs[24] = "";
        if (l->cp > 1) snprintf(ul, sizeof ul, " · Ulysses %d", l->cp);
        if (l->shard_size) snprintf(hs, sizeof hs, " · HSDP %d", l->shard_size);
        snprintf(buf, n, "FSDP2 DP %d%s%s%s%s", l->dp, ul, hs, rc,
                 l->offload ? " · CPU offload" : "");
        return;
    }
    if (l->framework == FRAMEWORK_TORCHTITAN) { /* issue 19 */
        char pp[48] = "";
        if (l->pp > 1)
            snprintf(pp, sizeof pp, " · PP %d %s", l->pp,
                     layout_pp_schedule_name(layout_pp_schedule_of(l)));
        char cp[24] = "";
        if (l->cp > 1) snprintf(cp, sizeof cp, " · CP %d", l->cp);
        char off[96];
        offload_suffix(l, off, sizeof off);
        snprintf(buf, n, "torchtitan TP %d%s · DP %d%s%s%s%s", l->tp, pp, l->dp, cp,
                 l->shard_size ? " · HSDP" : "", rc, off);
        return;
    }
    char dims[128] = "";
    const struct { const char *name; int v; } d[] = {
        {"TP", l->tp}, {"PP", l->pp}, {"DP", l->dp}, {"CP", l->cp}, {"EP", l->ep}, {"VPP", l->vpp}};
    for (size_t i = 0; i < sizeof d / sizeof *d; i++) {
        if (d[i].v <= 1 && strcmp(d[i].name, "DP")) continue;
        size_t o = strlen(dims);
        snprintf(dims + o, sizeof dims - o, " %s%s %d", o ? "· " : "", d[i].name, d[i].v);
    }
    char off[96];
    offload_suffix(l, off, sizeof off);
    snprintf(buf, n, "Megatron%s%s%s%s", dims,
             l->sharding == SHARDING_FSDP ? " · Megatron-FSDP"
             : l->sharding == SHARDING_DDP ? " · DDP" : "",
             rc, off);
}

void report_fmt_count(double v, char *buf, size_t n)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", v);
    size_t len = strlen(digits), o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i > 0 && digits[i - 1] != '-' && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

void report_fmt_gpu_list(const int *g, int n, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t o = strlen(buf);
        snprintf(buf + o, len - o, "%s%d", i == 0 ? "" : i == n - 1 ? " and " : ", ", g[i]);
    }
}
