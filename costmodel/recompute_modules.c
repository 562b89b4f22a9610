/*
 * recompute_modules.c — Megatron-Core's selective recompute by module (see the header for the
 * sources).
 */
#include "recompute_modules.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "layer_recipe.h"

/* In the order Megatron's docstring lists them (transformer_config.py recompute_modules). */
static const char *const names[] = {"core_attn", "moe_act", "layernorm", "mla_up_proj",
                                    "mlp", "moe", "shared_experts"};
#define NMODS ((int)(sizeof names / sizeof names[0]))

unsigned recompute_modules_of(const layout *l)
{
    if (l->framework != FRAMEWORK_MEGATRON || l->recompute != RECOMPUTE_SELECTIVE) return 0;
    return l->recompute_modules ? l->recompute_modules : RECOMPUTE_MOD_CORE_ATTN;
}

void recompute_modules_text(unsigned mods, char sep, char *buf, size_t len)
{
    size_t used = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; i < NMODS && used < len; i++) {
        if (!(mods & (1u << i))) continue;
        int k = snprintf(buf + used, len - used, "%s%s", used ? (char[]){sep, 0} : "", names[i]);
        if (k < 0) return;
        used += (size_t)k;
    }
}

bool recompute_modules_parse(const char *s, unsigned *out, char *bad, size_t badlen)
{
    unsigned mods = 0;
    if (bad && badlen) bad[0] = '\0';
    while (s && *s) {
        while (*s == ',' || isspace((unsigned char)*s)) s++;
        if (!*s) break;
        size_t n = 0;
        while (s[n] && s[n] != ',' && !isspace((unsigned char)s[n])) n++;
        int found = -1;
        for (int i = 0; i < NMODS; i++)
            if (strlen(names[i]) == n && !strncasecmp(s, names[i], n)) found = i;
        if (found < 0) {
            if (bad && badlen) snprintf(bad, badlen, "%.*s", (int)(n < 64 ? n : 64), s);
            return false;
        }
        mods |= 1u << found;
        s += n;
    }
    if (!mods) return false;
    *out = mods;
    return true;
}

double recompute_modules_freed_bytes(unsigned mods, const recompute_saved_terms *s)
{
    double freed = 0;
    if (mods & RECOMPUTE_MOD_LAYERNORM) freed += s->norm_outputs;
    if (mods & RECOMPUTE_MOD_MLA_UP_PROJ) freed += s->qkv_up;
    if (mods & RECOMPUTE_MOD_MLP) freed += s->dense_mlp;
    if (mods & RECOMPUTE_MOD_MOE) {
        freed += s->moe_all; /* the routed copies, router logits and the shared experts */
    } else {
        if (mods & RECOMPUTE_MOD_MOE_ACT) freed += s->expert_act;
        if (mods & RECOMPUTE_MOD_SHARED_EXPERTS) freed += s->shared;
    }
    return freed;
}

bool recompute_modules_reruns(unsigned mods, bool moe_layer, const char *name, int kind)
{
    if ((mods & RECOMPUTE_MOD_CORE_ATTN) && kind == RECIPE_ATTENTION) return true;
    if ((mods & RECOMPUTE_MOD_MLA_UP_PROJ) && (!strcmp(name, "q_up") || !strcmp(name, "kv_up")))
        return true;
    /* and the unfused RoPE, splits and concatenations inside the checkpointed
     * qkv_up_proj_and_rope_apply (mcore_unfused.h) */
    if ((mods & RECOMPUTE_MOD_MLA_UP_PROJ) && kind == RECIPE_ELEMENTWISE &&
        !strncmp(name, "rope.mla.", 9))
        return true;
    /* the experts' activation: its eager clamp kernels (mcore_unfused.h; the fused kernel is
     * in the elementwise lump, not separated) */
    if (moe_layer && (mods & (RECOMPUTE_MOD_MOE_ACT | RECOMPUTE_MOD_MOE)) &&
        !strncmp(name, "moe_act.", 8) && kind == RECIPE_ELEMENTWISE)
        return true;
    /* a checkpointed MLP or MoE block re-runs its whole forward, its TP collectives too */
    if (!moe_layer && (mods & RECOMPUTE_MOD_MLP))
        return !strcmp(name, "mlp_up") || !strcmp(name, "mlp_down") || !strcmp(name, "tp.mlp");
    if (moe_layer && (mods & RECOMPUTE_MOD_MOE))
        return !strcmp(name, "router") || !strcmp(name, "router.topk") ||
               !strncmp(name, "ep.", 3) || !strcmp(name, "experts") ||
               !strncmp(name, "moe_bias.", 9) ||
               !strcmp(name, "shared_up") || !strcmp(name, "shared_down") ||
               !strcmp(name, "tp.mlp");
    if (moe_layer && (mods & RECOMPUTE_MOD_SHARED_EXPERTS))
        return !strcmp(name, "shared_up") || !strcmp(name, "shared_down");
    return false;
}
