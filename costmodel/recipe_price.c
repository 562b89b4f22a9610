/*
 * recipe_price.c — the closed form's price of a layer recipe (layer_recipe.h recipe_price): the
 * forward, backward and recompute sums of its operations, the TP/CP/EP communication each pass
 * leaves exposed (the CP ring behind the attention core, EP behind the paired micro-batch or the
 * shared experts), the FSDP transfers, and the host's issue queue as a floor under the compute.
 * Split from layer_recipe.c (issue 13: small rooms), which builds the list this prices.
 */
#include "layer_recipe.h"
#include "overlap.h"

#include <math.h>
#include <string.h>

/* Sums of one pass: the closed form's terms. */
typedef struct {
    double gemm, gemm_fb; /* GEMM forward; forward + backward (compute_gemm_fwd_bwd_s) */
    double attn, elem, copy;
    double tp, ep, cp, cp_ring; /* cp_ring: the exchange that hides behind the attention core */
    double ep_mb; /* EP hidden behind the paired micro-batch (RECIPE_OVERLAP_MICROBATCH) */
    double ep_sh; /* EP hidden behind the shared experts (RECIPE_OVERLAP_SHARED) */
} pass_sums;

/* The sum a TP, EP or CP op's time joins. */
static double *comm_sum(pass_sums *s, const recipe_op *o)
{
    if (o->kind == RECIPE_TP) return &s->tp;
    if (o->kind == RECIPE_EP)
        return o->overlap == RECIPE_OVERLAP_MICROBATCH ? &s->ep_mb
               : o->overlap == RECIPE_OVERLAP_SHARED   ? &s->ep_sh
                                                       : &s->ep;
    return o->overlap == RECIPE_OVERLAP_ATTENTION ? &s->cp_ring : &s->cp;
}

/*
 * Megatron's EP A2A overlap (--overlap-moe-expert-parallel-comm with delay_wgrad_compute) runs a
 * layer's forward of one micro-batch beside its backward of the previous one, in three phases
 * (Megatron-LM d98e8a6 megatron/core/models/common/model_chunk_schedule_plan.py,
 * TransformerLayerSchedulePlan.run):
 *   communication stream: combine_bwd     | dispatch_fwd -> dispatch_bwd        | combine_fwd
 *   compute stream:       attention fwd   | mlp_bwd -> mlp_bwd_dw -> mlp_fwd    | attention bwd
 * where "attention" is pre_dispatch_computation (the attention block and the router) and "mlp"
 * the experts (and shared experts). A phase lasts as long as the longer of its two streams, and
 * the two streams slow each other while both run (r->ep_overlap_slowdown and
 * ep_overlap_comm_slowdown, moe_dispatch.h; overlap_contended, overlap.h). What the
 * phases take over the compute alone is the exposed EP time. Phase 1's exchange is a backward
 * one, phase 3's a forward one; phase 2's is split evenly.
 */
typedef struct {
    double comp[3][2];  /* [recipe_block][0 forward, 1 backward + recompute] */
    double comm[3][2];  /* [recipe_ep_part][0 forward, 1 backward + recompute] */
} ep_pairing;

static double phase_s(double comm_s, double comp_s, double sg, double sc)
{
    double comp_eff, comm_eff;
    overlap_contended(comp_s, comm_s, sg, sc, &comp_eff, &comm_eff);
    return fmax(comp_eff, comm_eff);
}

static void ep_pairing_add(ep_pairing *p, const recipe_op *o)
{
    double re = recipe_op_recompute_s(o);
    if (o->kind == RECIPE_EP && o->overlap == RECIPE_OVERLAP_MICROBATCH) {
        p->comm[o->ep_part][0] += o->fwd_s;
        p->comm[o->ep_part][1] += o->bwd_s + re;
        return;
    }
    if (o->kind == RECIPE_FSDP_GATHER || o->kind == RECIPE_FSDP_REDUCE) return; /* other stream */
    double f = o->fwd_s, b = o->bwd_s;
    if (o->kind == RECIPE_GEMM) b = o->fwd_bwd_s - o->fwd_s;
    if (o->kind == RECIPE_ELEMENTWISE && o->phase == RECIPE_BWD) f = 0;
    if (o->kind == RECIPE_ELEMENTWISE && o->phase == RECIPE_FWD) b = 0;
    p->comp[o->block][0] += f;
    p->comp[o->block][1] += b + re;
}

/* The exposed EP time of the pairing, forward and backward shares. */
static void ep_pairing_exposed(ep_pairing *p, double sg, double sc, double *fwd_s,
                               double *bwd_s)
{
    for (int k = 0; k < 2; k++) { /* the layer-wide lumps, pro rata to each block's compute */
        double a = p->comp[RECIPE_BLOCK_ATTENTION][k], m = p->comp[RECIPE_BLOCK_MLP][k];
        double o = p->comp[RECIPE_BLOCK_OTHER][k];
        double fa = a + m > 0 ? a / (a + m) : 0.5;
        p->comp[RECIPE_BLOCK_ATTENTION][k] = a + o * fa;
        p->comp[RECIPE_BLOCK_MLP][k] = m + o * (1 - fa);
    }
    double af = p->comp[RECIPE_BLOCK_ATTENTION][0], ab = p->comp[RECIPE_BLOCK_ATTENTION][1];
    double mf = p->comp[RECIPE_BLOCK_MLP][0], mb = p->comp[RECIPE_BLOCK_MLP][1];
    double p1 = phase_s(p->comm[RECIPE_EP_COMBINE][1], af, sg, sc);
    double p2 = phase_s(p->comm[RECIPE_EP_DISPATCH][0] + p->comm[RECIPE_EP_DISPATCH][1],
                        mb + mf, sg, sc);
    double p3 = phase_s(p->comm[RECIPE_EP_COMBINE][0], ab, sg, sc);
    double mid = 0.5 * (p2 - mb - mf);
    *bwd_s = p1 - af + mid;
    *fwd_s = p3 - ab + mid;
}

double recipe_op_recompute_s(const recipe_op *o)
{
    if (!o->recompute) return 0;
    if (o->recompute_sac_enter && o->sac_enter_s >= 0) return o->sac_enter_s;
    if (o->recompute_enter_only) return o->fwd_s - o->leave_fwd_s;
    if (o->kind != RECIPE_ELEMENTWISE || o->launches <= 0) return o->fwd_s;
    return o->fwd_s * o->recompute_launches / o->launches;
}

void recipe_price(const recipe *r, recipe_time *out)
{
    pass_sums f, b, re;
    memset(&f, 0, sizeof f);
    memset(&b, 0, sizeof b);
    memset(&re, 0, sizeof re);
    double gather = 0, reduce = 0;
    ep_pairing pair;
    memset(&pair, 0, sizeof pair);
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        ep_pairing_add(&pair, o);
        switch (o->kind) {
        case RECIPE_GEMM:
            f.gemm += o->fwd_s;
            f.gemm_fb += o->fwd_bwd_s;
            if (o->recompute) re.gemm += o->fwd_s;
            break;
        case RECIPE_ATTENTION:
            f.attn += o->fwd_s;
            b.attn += o->bwd_s;
            if (o->recompute) re.attn += o->fwd_s;
            break;
        case RECIPE_ELEMENTWISE:
            if (o->phase == RECIPE_FWD) {
                f.elem += o->fwd_s;
                re.elem += recipe_op_recompute_s(o);
            } else {
                b.elem += o->bwd_s;
            }
            break;
        case RECIPE_FSDP_COPY:
            f.copy += o->fwd_s;
            b.copy += o->bwd_s;
            if (o->recompute) re.copy += o->fwd_s;
            break;
        case RECIPE_TP:
        case RECIPE_EP:
        case RECIPE_CP:
            *comm_sum(&f, o) += o->fwd_s;
            *comm_sum(&b, o) += o->bwd_s;
            *comm_sum(&re, o) += recipe_op_recompute_s(o);
            break;
        case RECIPE_FSDP_GATHER:
            gather += o->fwd_s;
            break;
        case RECIPE_FSDP_REDUCE:
            reduce += o->bwd_s;
            break;
        case RECIPE_KINDS:
            break;
        }
    }
    /* the ring exchange shows only where it outlasts the pass's attention core */
    double cp_fwd = f.cp + fmax(0, f.cp_ring - f.attn);
    double cp_bwd = b.cp + fmax(0, b.cp_ring - b.attn);
    double cp_re = re.cp + fmax(0, re.cp_ring - re.attn);
    out->fwd_s = f.gemm + f.attn + f.elem + f.copy;
    out->bwd_s = (f.gemm_fb - f.gemm) + b.attn + b.elem + b.copy;
    out->recompute_s = re.gemm + re.attn + re.elem + re.copy;
    /* A Linear's backward is two GEMMs of its forward's FLOPs, dgrad and wgrad (Qi et al. 2024,
     * arXiv 2401.10241 Sec. 2: T_B ~ T_W ~ T_F for a linear layer): half of it is W. */
    out->wgrad_s = 0.5 * (f.gemm_fb - f.gemm);
    /* EP paired across micro-batches: the three phases of the merged schedule (above) */
    double ep_fwd = f.ep, tp_bwd = b.tp + re.tp, ep_bwd = b.ep + re.ep;
    out->ep_unpaired_s = out->ep_unpaired_fwd_s = 0;
    if (f.ep_mb + b.ep_mb + re.ep_mb > 0) {
        double xf, xb;
        ep_pairing_exposed(&pair, r->ep_overlap_slowdown, r->ep_overlap_comm_slowdown, &xf,
                           &xb);
        ep_fwd += xf;
        ep_bwd += xb;
        /* the schedule's unpaired forwards and backwards (estimate.c ep_unpaired_path_s) run
         * their exchanges in line and their compute alone: the whole exchange is exposed */
        out->ep_unpaired_s = fmax(0, f.ep_mb + b.ep_mb + re.ep_mb - xf - xb);
        /* the forward's part: its own exchange less what its pairing already exposed (the
         * two parts scaled to sum to the above where one of them is below zero) */
        double uf = fmax(0, f.ep_mb - xf), ub = fmax(0, b.ep_mb + re.ep_mb - xb);
        out->ep_unpaired_fwd_s = uf + ub > 0 ? out->ep_unpaired_s * uf / (uf + ub) : 0;
    }
    /* EP beside the shared experts: what outlasts them in the same pass (the recompute pass
     * runs the shared experts' forward again) */
    ep_fwd += fmax(0, f.ep_sh - r->shared_fwd_s);
    ep_bwd += fmax(0, b.ep_sh - r->shared_bwd_s) + fmax(0, re.ep_sh - r->shared_fwd_s);
    cp_bwd += cp_re;
    out->tp_s = f.tp + tp_bwd;
    out->tp_fwd_s = f.tp;
    out->tp_bwd_s = tp_bwd;
    out->ep_s = ep_fwd + ep_bwd;
    out->cp_s = cp_fwd + cp_bwd;
    out->fwd_comm_s = f.tp + cp_fwd + ep_fwd;
    out->bwd_comm_s = tp_bwd + cp_bwd + ep_bwd;
    out->gather_s = gather;
    out->reduce_s = reduce;
    /* FSDP's unit collectives beside the compute they hide behind (estimate.c stage_cost: the
     * gather behind a layer's forward, the backward's gather and reduce-scatter behind its
     * backward) slow each other while both run, as measured (overlap.h): what that adds to
     * each pair over max(compute, collective) is charged to the compute stream as FSDP
     * contention (estimate.c adds it to the exposed FSDP time; the simulator runs it with the
     * layer's compute through fwd_comm_s / bwd_comm_s). */
    out->fsdp_contention_fwd_s = out->fsdp_contention_bwd_s = 0;
    if (gather > 0 || reduce > 0) {
        double fe, ge, be, ce;
        double win_b = out->bwd_s + out->recompute_s;
        double comm_b = (r->fsdp_bwd_gather ? gather : 0) + reduce;
        overlap_contended(out->fwd_s, gather, OVERLAP_CONTENTION_AG_RS_COMPUTE,
                          OVERLAP_CONTENTION_AG_RS_COMM, &fe, &ge);
        overlap_contended(win_b, comm_b, OVERLAP_CONTENTION_AG_RS_COMPUTE,
                          OVERLAP_CONTENTION_AG_RS_COMM, &be, &ce);
        out->fsdp_contention_fwd_s = fmax(fe, ge) - fmax(out->fwd_s, gather);
        out->fsdp_contention_bwd_s = fmax(be, ce) - fmax(win_b, comm_b);
        out->fwd_comm_s += out->fsdp_contention_fwd_s;
        out->bwd_comm_s += out->fsdp_contention_bwd_s;
    }
    out->gpu_fwd_s = out->fwd_s;
    out->gpu_bwd_s = out->bwd_s;
    recipe_price_floor(r, out);
}

void recipe_price_floor(const recipe *r, recipe_time *out)
{
    /* the host's issue queue as a floor under the compute (host_dispatch.h) */
    out->host_lead_fwd_s = out->host_lead_bwd_s = out->host_exposed_bwd_s = 0;
    if (r->host_fwd_s > 0) out->host_lead_fwd_s = fmax(0, out->fwd_s - r->host_fwd_s);
    if (r->host_fwd_s > out->fwd_s) {
        /* A compiled block (host_hides_tp): its exposed TP collectives run on the GPU between
         * the block's kernels while the host is still issuing, so a host-paced pass takes
         * max(host, compute + TP): the host's excess over the compute covers them first.
         * Measured: the compiled TP 4 step of bench/results/tp11_2026-11-28 ran 0.1159 s at
         * seq 4096 mbs 2 and 0.1164 s at seq 256 on the same host (the GPU's work, TP
         * collectives included, wholly under the host's). Eager floors keep the collectives
         * on top (the same accounting there moves the eager TP rows of the H100 hosts 5-14%
         * low: README of that folder). */
        double hid = r->host_hides_tp ? fmin(out->tp_fwd_s, r->host_fwd_s - out->fwd_s) : 0;
        out->tp_fwd_s -= hid, out->tp_s -= hid, out->fwd_comm_s -= hid;
        out->fwd_s = r->host_fwd_s;
    }
    double gpu_b = out->bwd_s + out->recompute_s;
    if (r->host_bwd_s > 0) out->host_lead_bwd_s = fmax(0, gpu_b - r->host_bwd_s);
    if (r->host_bwd_s > gpu_b) {
        double hid = r->host_hides_tp ? fmin(out->tp_bwd_s, r->host_bwd_s - gpu_b) : 0;
        out->tp_bwd_s -= hid, out->tp_s -= hid, out->bwd_comm_s -= hid;
        out->host_exposed_bwd_s = r->host_bwd_s - gpu_b;
        out->bwd_s += out->host_exposed_bwd_s;
    }
    /* host work no GPU work overlaps (the DTensor TP step's pre-forward and backward tail) */
    out->fwd_s += r->host_serial_fwd_s;
    out->bwd_s += r->host_serial_bwd_s;
}
