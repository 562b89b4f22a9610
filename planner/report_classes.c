/*
 * report_classes.c — the memory classes and the feature probes of `plan report` (see
 * report_classes.h): which rung of the memory ladder a layout is on, which features of the
 * feature-support matrix it uses, each feature's probe layout through the planner's rule
 * check, and a point's least intrusive rung that fits. Apart from report_analysis.c, which
 * runs the searches whose layouts these classify.
 */
#include "report_classes.h"

_Static_assert(NCLS == REPORT_NCLASSES, "REPORT_NCLASSES counts the memory classes");
const char *const report_class_name[REPORT_NCLASSES] = {
    "Megatron, DDP (nothing sharded), no recompute",
    "Megatron, DDP, with recompute",
    "Megatron, distributed optimizer (ZeRO-1), no recompute",
    "Megatron, distributed optimizer, with recompute",
    "Megatron-FSDP (ZeRO-3), no recompute",
    "Megatron-FSDP, with recompute",
    "Megatron, CPU offload (optimizer state or activations)",
    "FSDP2 (ZeRO-3), no recompute",
    "FSDP2, with recompute", /* the rule check decides which kinds (section 4) */
    "FSDP2, CPU offload",
};
const int report_class_level[REPORT_NCLASSES] = {0, 3, 1, 3, 2, 3, 4, 2, 3, 4};
const char *const report_level_name[REPORT_NLEVELS] = {
    "DDP (no sharding)", "distributed optimizer", "full sharding (FSDP)",
    "sharding + activation recompute", "CPU offload"};

int report_class_of(const layout *l)
{
    bool rc = l->recompute != RECOMPUTE_NONE;
    if (l->framework == FRAMEWORK_FSDP2)
        return l->offload ? CLS_FSDP2_OFFLOAD : rc ? CLS_FSDP2_RC : CLS_FSDP2;
    /* Megatron's host offload (issue 21: the distributed optimizer's shard, activations;
     * Megatron-FSDP's offload) is the ladder's last rung, whatever the sharding */
    if (l->offload || l->optimizer_offload_pct > 0 || l->activation_offload)
        return CLS_MEG_OFFLOAD;
    int base = l->sharding == SHARDING_DDP       ? CLS_MEG_DDP
               : l->sharding == SHARDING_DISTOPT ? CLS_MEG_DISTOPT
                                                 : CLS_MEG_FSDP;
    return base + (rc ? 1 : 0);
}

/* Features of section 4: a probe layout each, and a predicate that says whether an evaluated
 * layout uses the feature (to report whether the search exercised it). */
_Static_assert(REPORT_F_ACT_OFFLOAD + 1 == REPORT_NFEATURES, "REPORT_NFEATURES counts the features");
const char *const report_feature_name[REPORT_NFEATURES] = {
    "Tensor parallel (TP 2)",
    "Megatron sequence parallel (SP, with TP 2)",
    "Pipeline parallel (PP 2)",
    "Interleaved pipeline (PP 2, VPP 2)",
    "Context parallel (CP 2; FSDP2: Ulysses)",
    "Expert parallel (EP 2)",
    "Expert tensor parallel (ETP 1 under TP 2)",
    "DDP (nothing sharded)",
    "Distributed optimizer (ZeRO-1)",
    "Full sharding (ZeRO-3: FSDP2 / Megatron-FSDP)",
    "HSDP (shard within 8 GPUs, replicate across)",
    "Keep gathered parameters after forward (ZeRO-2-like)",
    "Selective recompute",
    "Full recompute",
    "CPU offload of the FSDP shards",
    "Full sharding together with PP",
    "FSDP-shard CPU offload together with recompute",
    "Optimizer-state CPU offload (distributed optimizer's shard, 100%)",
    "Activation CPU offload",
};

_Static_assert(REPORT_NFEATURES <= 32, "report_feature_mask holds a bit a feature");
uint32_t report_feature_mask(const layout *l)
{
    bool fsdp = l->sharding == SHARDING_FSDP;
#define F(f, cond) ((uint32_t)(cond) << (f))
    return F(REPORT_F_TP, l->tp > 1) | F(REPORT_F_SP, l->sp) | F(REPORT_F_PP, l->pp > 1) |
           F(REPORT_F_VPP, l->vpp > 1) | F(REPORT_F_CP, l->cp > 1) | F(REPORT_F_EP, l->ep > 1) |
           F(REPORT_F_ETP, l->etp > 0 && l->etp != l->tp) |
           F(REPORT_F_DDP, l->sharding == SHARDING_DDP) |
           F(REPORT_F_DISTOPT, l->sharding == SHARDING_DISTOPT) | F(REPORT_F_FSDP, fsdp) |
           F(REPORT_F_HSDP, l->shard_size > 0) |
           F(REPORT_F_NORESHARD, fsdp && !l->reshard_after_forward) |
           F(REPORT_F_SELECTIVE, l->recompute == RECOMPUTE_SELECTIVE) |
           F(REPORT_F_FULL, l->recompute == RECOMPUTE_FULL) | F(REPORT_F_OFFLOAD, l->offload) |
           F(REPORT_F_FSDP_PP, fsdp && l->pp > 1) |
           F(REPORT_F_OFFLOAD_RC, l->offload && l->recompute != RECOMPUTE_NONE) |
           F(REPORT_F_OPT_OFFLOAD, l->optimizer_offload_pct > 0) |
           F(REPORT_F_ACT_OFFLOAD, l->activation_offload);
#undef F
}

/* The probe layout for feature f under framework fw on 64 GPUs. */
static layout feat_probe(int f, layout_framework fw)
{
    layout l = layout_default(fw);
    l.dp = 64;
    bool meg = fw == FRAMEWORK_MEGATRON;
    switch (f) {
    case REPORT_F_TP: l.tp = 2; l.dp = 32; l.sp = meg; break; /* MoE under Megatron needs SP with TP */
    case REPORT_F_SP: l.tp = 2; l.dp = 32; l.sp = true; break;
    case REPORT_F_PP: l.pp = 2; l.dp = 32; break;
    case REPORT_F_VPP: l.pp = 2; l.vpp = 2; l.dp = 32; break;
    case REPORT_F_CP: l.cp = 2; l.dp = 32; break;
    case REPORT_F_EP: l.ep = 2; break;
    case REPORT_F_ETP: l.tp = 2; l.dp = 32; l.sp = meg; l.ep = 2; l.etp = 1; break;
    case REPORT_F_DDP: l.sharding = SHARDING_DDP; break;
    case REPORT_F_DISTOPT: l.sharding = SHARDING_DISTOPT; break;
    case REPORT_F_FSDP: l.sharding = SHARDING_FSDP; break;
    case REPORT_F_HSDP: l.sharding = SHARDING_FSDP; l.shard_size = 8; break;
    case REPORT_F_NORESHARD: l.sharding = SHARDING_FSDP; l.reshard_after_forward = false; break;
    case REPORT_F_SELECTIVE: l.recompute = RECOMPUTE_SELECTIVE; break;
    case REPORT_F_FULL: l.recompute = RECOMPUTE_FULL; break;
    case REPORT_F_OFFLOAD: l.sharding = SHARDING_FSDP; l.offload = true; break;
    case REPORT_F_FSDP_PP: l.sharding = SHARDING_FSDP; l.pp = 2; l.dp = 32; break;
    case REPORT_F_OFFLOAD_RC:
        l.sharding = SHARDING_FSDP; l.offload = true; l.recompute = RECOMPUTE_FULL; break;
    /* Megatron's host offloads (issue 21), asked of every framework with the sharding they
     * need there; the rule check names what refuses them elsewhere */
    case REPORT_F_OPT_OFFLOAD: l.sharding = SHARDING_DISTOPT; l.optimizer_offload_pct = 100; break;
    case REPORT_F_ACT_OFFLOAD: l.activation_offload = true; break;
    }
    return l;
}

cm_status report_feature_check(const report *r, int f, layout_framework fw, char *err,
                               size_t errlen)
{
    layout l = feat_probe(f, fw);
    training_spec t = training_default(); /* the probes need gbs divisible by 64 */
    return layout_check(&r->probe, &r->sys, &t, &l, 64, err, errlen);
}

int report_fit_level(const report_point *p, bool *meg, bool *fsdp2)
{
    *meg = *fsdp2 = false;
    for (int lev = 0; lev < REPORT_NLEVELS; lev++) {
        bool any = false;
        for (int k = 0; k < NCLS; k++)
            if (report_class_level[k] == lev && p->fits[k]) {
                any = true;
                if (k >= CLS_FSDP2) *fsdp2 = true;
                else *meg = true;
            }
        if (any) return lev;
    }
    return REPORT_NLEVELS;
}

