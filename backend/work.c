/*
 * work.c — layout to GPU work (see work.h). Mirrors estimate.c's layer_cost()/stage_cost() for
 * dense models item by item: whenever estimate.c changes what a layer does, this file changes
 * with it, and tests/test_backend_work.c fails until it does (the sums must agree).
 */
#include "work.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute.h"
#include "elementwise.h"
#include "estimate_costs.h"
#include "flops.h"
#include "fsdp_copies.h"
#include "memory.h"

static const char *component_names[WC_COUNT] = {
    "gemm",    "attention", "elementwise", "tp_comm",         "cp_comm", "ep_comm",
    "pp_comm", "dp_comm",   "optimizer",   "framework_copies",
};
static const char *group_names[GROUP_COUNT] = {"tp", "cp", "dp", "ep", "edp"};

const char *work_component_name(work_component c)
{
    return (c >= 0 && c < WC_COUNT) ? component_names[c] : "?";
}

const char *work_group_name(work_group g)
{
    return (g >= 0 && g < GROUP_COUNT) ? group_names[g] : "?";
}

double work_list_pred_s(const work_list *w)
{
    double s = 0;
    for (int i = 0; i < w->n; i++) s += w->item[i].pred_s;
    return s;
}

static work_item *push(work_list *w, work_kind kind, work_component c, const char *name)
{
    if (w->n >= WORK_MAX_ITEMS) return NULL; /* build_layer reports the overflow */
    work_item *it = &w->item[w->n++];
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->component = c;
    it->batch = 1;
    snprintf(it->name, sizeof it->name, "%s", name);
    return it;
}

static void gemm(work_list *w, work_component c, const char *name, work_gemm_form form, double m,
                 double n, double k, int batch, bool weight, double pred_s)
{
    work_item *it = push(w, WORK_GEMM, c, name);
    if (!it) return;
    it->form = form;
    it->m = m;
    it->n = n;
    it->k = k;
    it->batch = batch;
    it->weight_operand = weight;
    it->flops = 2.0 * m * n * k * batch;
    it->pred_s = pred_s;
}

/* A Linear layer's forward into fwd, its dgrad and wgrad into bwd, with the cost model's
 * compute_gemm_s of the same shapes compute_gemm_fwd_bwd_s adds up. */
static void linear(const system_spec *sys, work_list *fwd, work_list *bwd, const char *name,
                   double tokens, double out, double in)
{
    char nm[32];
    gemm(fwd, WC_GEMM, name, GEMM_FWD, tokens, out, in, 1, true,
         compute_gemm_s(sys, tokens, out, in));
    snprintf(nm, sizeof nm, "%s.dgrad", name);
    gemm(bwd, WC_GEMM, nm, GEMM_DGRAD, tokens, in, out, 1, true,
         compute_gemm_s(sys, tokens, in, out));
    snprintf(nm, sizeof nm, "%s.wgrad", name);
    gemm(bwd, WC_GEMM, nm, GEMM_WGRAD, out, in, tokens, 1, false,
         compute_gemm_s(sys, in, out, tokens));
}

static void stream_access(work_list *w, work_component c, const char *name, double bytes,
                          const ew_access *a, double pred_s)
{
    work_item *it = push(w, WORK_STREAM, c, name);
    if (!it) return;
    it->bytes = bytes;
    it->access = *a;
    it->pred_s = pred_s;
}

/* A memory-bound kernel of `bytes` with no derived pattern: a vectorized bf16 kernel reading
 * half of them and writing half. */
static void stream(work_list *w, work_component c, const char *name, double bytes, double pred_s)
{
    long n = (long)(bytes / 4);
    ew_access a = {.pattern = EW_VECTORIZED, .esize = {2, 2, 0}, .n = {1, 1, n > 0 ? n : 1}};
    a.stride[0][2] = a.stride[1][2] = 1;
    stream_access(w, c, name, bytes, &a, pred_s);
}

/* Each launch of n elementwise kernels as its own stream item, with the kernel's access pattern
 * (elementwise.h), so that the backend launches as many kernels of the same kind and bytes as
 * the framework does. */
static void elementwise_items(const system_spec *sys, const elementwise_list *e,
                              const elementwise_kernel *k, int n, work_list *w)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k[i].count; j++)
            stream_access(w, WC_ELEMENTWISE, k[i].name, k[i].bytes, &k[i].access,
                          elementwise_kernel_s(sys, e, &k[i]));
}

static void coll(work_list *w, work_component c, const char *name, collective_op op, double bytes,
                 work_group g, double pred_s)
{
    work_item *it = push(w, WORK_COLL, c, name);
    if (!it) return;
    it->op = op;
    it->bytes = bytes;
    it->group = g;
    it->pred_s = pred_s;
}

int work_rank(const layout *l, int tp_idx, int cp_idx, int dp_idx)
{
    return tp_idx + l->tp * (cp_idx + l->cp * dp_idx);
}

int work_local_pp(const layout *l, int local_gpus)
{
    return (long)l->tp * l->cp * l->pp <= local_gpus ? l->pp : 1;
}

int work_local_dp(const layout *l, int local_gpus, bool *whole, char *err, size_t errlen)
{
    int mp = l->tp * l->cp;
    *whole = false;
    if (mp > local_gpus) {
        cm_fail(err, errlen, CM_EINVAL,
                "one tensor/context-parallel group needs tp*cp = %d GPUs, this machine has %d: "
                "measure a layout with tp*cp <= %d",
                mp, local_gpus, local_gpus);
        return 0;
    }
    int pp = work_local_pp(l, local_gpus);
    int dp = local_gpus / (mp * pp);
    if (dp >= l->dp) dp = l->dp;
    *whole = dp == l->dp && pp == l->pp;
    return dp;
}

/* ---- pipeline schedule -------------------------------------------------------------------- */

int work_pp_schedule(int p, int v, int m, int s, work_pp_op *out)
{
    return schedule_pipeline(p, v, m, s, out); /* the simulator's order (schedule.h) */
}

work_pp_link work_pp_links(int p, int v, int s, const work_pp_op *op)
{
    work_pp_link k = {-1, -1, op->backward ? 1 : 0};
    if (!op->backward) {
        /* activations arrive from the previous stage, or (next chunk) wrap from the last */
        if (s > 0) k.from_stage = s - 1;
        else if (op->chunk > 0) k.from_stage = p - 1;
        if (s < p - 1) k.to_stage = s + 1;
        else if (op->chunk < v - 1) k.to_stage = 0;
    } else {
        /* gradients arrive from the next stage, or (the chunk after) wrap from the first */
        if (s < p - 1) k.from_stage = s + 1;
        else if (op->chunk < v - 1) k.from_stage = 0;
        if (s > 0) k.to_stage = s - 1;
        else if (op->chunk > 0) k.to_stage = p - 1;
    }
    if (p == 1) k.from_stage = k.to_stage = -1;
    return k;
}

int work_pp_issue_order(int p, int v, int m, int nslots, work_pp_issue *out)
{
    int per = 2 * m * v, total = per * p;
    if (p < 1 || v < 1 || m < 1 || nslots < 1) return -1;
    work_pp_op *ops = malloc(sizeof *ops * (size_t)total);
    int *next = calloc((size_t)p, sizeof *next);
    /* per (receiver stage, direction): transfers issued, transfers consumed, and the FIFO of
     * their (microbatch, chunk) */
    int *made = calloc((size_t)p * 2, sizeof *made), *used = calloc((size_t)p * 2, sizeof *used);
    work_pp_op *fifo = malloc(sizeof *fifo * (size_t)total * 2);
    int n = 0, rc = 0;
    if (!ops || !next || !made || !used || !fifo) {
        rc = -1;
        goto out;
    }
    for (int s = 0; s < p; s++) work_pp_schedule(p, v, m, s, ops + (size_t)s * per);
    while (n < total) {
        bool progress = false;
        for (int s = 0; s < p; s++) {
            while (next[s] < per) {
                const work_pp_op *op = &ops[(size_t)s * per + next[s]];
                work_pp_link k = work_pp_links(p, v, s, op);
                if (k.from_stage >= 0) {
                    int q = s * 2 + k.dir;
                    if (used[q] >= made[q]) break; /* its input is not issued yet */
                }
                if (k.to_stage >= 0) {
                    int q = k.to_stage * 2 + k.dir;
                    if (made[q] - used[q] >= nslots) break; /* no free receive slot */
                }
                /* issue */
                if (k.from_stage >= 0) {
                    int q = s * 2 + k.dir;
                    /* FIFO check: the j-th transfer into (s, dir) is this op's input, the
                     * same micro-batch from chunk c (forward wrapped to stage 0: c-1; backward
                     * wrapped to the last stage: c+1) */
                    const work_pp_op *src = &fifo[(size_t)q * per + used[q]];
                    int want_chunk = op->chunk;
                    if (!op->backward && s == 0) want_chunk = op->chunk - 1;
                    if (op->backward && s == p - 1) want_chunk = op->chunk + 1;
                    if (src->microbatch != op->microbatch || src->chunk != want_chunk) {
                        rc = -2;
                        goto out;
                    }
                    used[q]++;
                }
                if (k.to_stage >= 0) {
                    int q = k.to_stage * 2 + k.dir;
                    if (made[q] >= per) {
                        rc = -2;
                        goto out;
                    }
                    fifo[(size_t)q * per + made[q]] = *op;
                    made[q]++;
                }
                out[n++] = (work_pp_issue){s, next[s]};
                next[s]++;
                progress = true;
            }
        }
        if (!progress) {
            rc = -1;
            goto out;
        }
    }
    rc = n;
out:
    free(ops);
    free(next);
    free(made);
    free(used);
    free(fifo);
    return rc;
}

int work_pp_slots(int p, int v, int m)
{
    int total = 2 * m * v * p;
    work_pp_issue *o = malloc(sizeof *o * (size_t)(total > 0 ? total : 1));
    if (!o) return m * v;
    int k = 1;
    for (; k < m * v; k++)
        if (work_pp_issue_order(p, v, m, k, o) == total) break;
    free(o);
    return k;
}

int work_chunk_first_layer(const work_plan *w, int s, int c)
{
    if (w->vpp > 1) return (c * w->pp + s) * w->chunk_layers;
    int first = 0;
    for (int i = 0; i < s; i++) first += w->stage_layers[i];
    return first;
}

int work_chunk_layer_count(const work_plan *w, int s, int c)
{
    (void)c;
    return w->vpp > 1 ? w->chunk_layers : w->stage_layers[s];
}

/* ---- one layer's work ---------------------------------------------------------------------- */

typedef struct {
    const model_spec *m;
    const system_spec *sys;
    const training_spec *t;
    const layout *l;
    double tokens;
    layout_group gtp, gcp, gep;
} layer_ctx;

/* The forward items of one layer into F, backward (with recompute) into B: estimate.c's
 * layer_cost() item by item. */
static cm_status build_layer(const layer_ctx *c, bool moe, work_plan *w, work_list *F,
                             work_list *B, char *err, size_t errlen)
{
    const model_spec *m = c->m;
    const system_spec *sys = c->sys;
    const training_spec *t = c->t;
    const layout *l = c->l;
    double tokens = c->tokens;
    double tp = l->tp, h = m->hidden, a = m->heads, d = m->head_dim;
    double gate = m->activation == MODEL_ACT_SWIGLU ? 2.0 : 1.0;

    work_list recompute; /* the forward again, for full recompute */
    memset(&recompute, 0, sizeof recompute);

    /* TP/SP collectives of the full activation (estimate.c: tp_one twice per direction). */
    double act = tokens * h * 2.0;
    layout_group gtp = c->gtp;
    bool tpc = l->tp > 1;
#define TP_ENTER(list)                                                                         \
    do {                                                                                       \
        if (tpc && l->sp)                                                                      \
            coll(list, WC_TP, "tp.sp_gather", COLL_ALL_GATHER, act, GROUP_TP,                  \
                 collective_time_s(sys, COLL_ALL_GATHER, act, gtp));                           \
    } while (0)
#define TP_LEAVE(list)                                                                         \
    do {                                                                                       \
        if (tpc && l->sp)                                                                      \
            coll(list, WC_TP, "tp.sp_reduce_scatter", COLL_REDUCE_SCATTER, act, GROUP_TP,      \
                 collective_time_s(sys, COLL_REDUCE_SCATTER, act, gtp));                       \
        else if (tpc)                                                                          \
            coll(list, WC_TP, "tp.all_reduce", COLL_ALL_REDUCE, act, GROUP_TP,                 \
                 collective_time_s(sys, COLL_ALL_REDUCE, act, gtp));                           \
    } while (0)

    /* Attention block: QKV (column parallel), core, output projection (row parallel). */
    /* Query/key and value head widths: head_dim for GQA; MLA's qk_nope + qk_rope and v_head_dim. */
    double qk = m->mla ? m->qk_nope_dim + m->qk_rope_dim : d;
    double vd = m->mla ? m->v_head_dim : d;
    double qdim = (m->mla ? a * vd : model_q_dim(m)) / tp; /* the output projection's input */
    TP_ENTER(F);
    if (m->mla) {
        /* Multi-head latent attention (DeepSeek-V2 paper, arXiv 2405.04434, Sec. 2.1.2-2.1.3),
         * as estimate.c layer_cost prices it and Megatron's MLASelfAttention splits it: the
         * down-projections (queries, when compressed, and the joint KV latent plus the shared
         * RoPE key) are replicated on every TP rank; the up-projections are column parallel;
         * the output projection row parallel. */
        if (m->q_lora_rank > 0) {
            linear(sys, F, B, "q_down", tokens, m->q_lora_rank, h);
            linear(sys, F, B, "q_up", tokens, a * qk / tp, m->q_lora_rank);
        } else {
            linear(sys, F, B, "q", tokens, a * qk / tp, h);
        }
        linear(sys, F, B, "kv_down", tokens, m->kv_lora_rank + m->qk_rope_dim, h);
        linear(sys, F, B, "kv_up", tokens, a * (m->qk_nope_dim + vd) / tp, m->kv_lora_rank);
    } else {
        double qkv_out = (model_q_dim(m) + 2.0 * model_kv_dim(m)) / tp;
        linear(sys, F, B, "qkv", tokens, qkv_out, h);
    }

    /* CP exchange (estimate.c): Megatron ring of cp-1 K/V chunks (2x backward), or Ulysses
     * all-to-alls of q, k, v and the output (same backward). */
    double kvh = m->mla ? a : m->kv_heads; /* MLA: every head has its own key and value */
    if (l->cp > 1) {
        layout_group gcp = c->gcp;
        if (l->framework == FRAMEWORK_MEGATRON) {
            double chunk = tokens * kvh * (qk + vd) * 2.0 / tp;
            for (int i = 0; i < l->cp - 1; i++) {
                double p = collective_time_s(sys, COLL_SEND_RECV, chunk, gcp);
                coll(F, WC_CP, "cp.ring_kv", COLL_SEND_RECV, chunk, GROUP_CP, p);
                coll(B, WC_CP, "cp.ring_kv", COLL_SEND_RECV, chunk, GROUP_CP, p);
                coll(B, WC_CP, "cp.ring_dkv", COLL_SEND_RECV, chunk, GROUP_CP, p);
            }
        } else {
            double bytes = tokens * 2.0 * (a * qk + kvh * qk + kvh * vd + a * vd);
            double p = collective_time_s(sys, COLL_ALL_TO_ALL, bytes, gcp);
            coll(F, WC_CP, "cp.ulysses_a2a", COLL_ALL_TO_ALL, bytes, GROUP_CP, p);
            coll(B, WC_CP, "cp.ulysses_a2a", COLL_ALL_TO_ALL, bytes, GROUP_CP, p);
        }
    }

    /* Attention core per sequence: queries of this rank (seq/cp) against the keys they see;
     * heads/tp per rank, mbs sequences: batch = mbs*heads/tp. */
    int batch = (int)(l->mbs * (a / tp));
    double sq = (double)t->seq_len / l->cp;
    work_list attn_f;
    memset(&attn_f, 0, sizeof attn_f);
    if (t->attention == ATTENTION_FLASH) {
        double f = flops_attention_core_forward(m, tokens, t->seq_len, t->causal) / tp;
        double pf = compute_flash_forward_s(sys, f) / 2.0;
        double pb = compute_flash_backward_s(sys, f) / 5.0;
        double sk = t->causal ? t->seq_len / 2.0 : t->seq_len; /* keys computed per query */
        gemm(&attn_f, WC_ATTENTION, "attn.qk", GEMM_FWD, sq, sk, qk, batch, false, pf);
        gemm(&attn_f, WC_ATTENTION, "attn.pv", GEMM_DGRAD, sq, vd, sk, batch, false, pf);
        /* FlashAttention-2 backward: recompute scores, then dV, dP, dQ, dK (2.5x forward). */
        gemm(B, WC_ATTENTION, "attn.bwd.qk", GEMM_FWD, sq, sk, qk, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dv", GEMM_WGRAD, sk, vd, sq, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dp", GEMM_FWD, sq, sk, vd, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dq", GEMM_DGRAD, sq, qk, sk, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dk", GEMM_WGRAD, sk, qk, sq, batch, false, pb);
    } else {
        /* Unfused (Megatron 2021-22): full s x s scores, softmax bytes per score fwd 4 (+5
         * dropout), bwd 6 (+5). Predictions as estimate.c's unfused branch. */
        double rows = tokens * a / tp;
        double sk = t->seq_len;
        double pqk = compute_gemm_s(sys, rows, t->seq_len, qk);
        double ppv = compute_gemm_s(sys, rows, vd, t->seq_len);
        double scores = rows * t->seq_len;
        gemm(&attn_f, WC_ATTENTION, "attn.qk", GEMM_FWD, sq, sk, qk, batch, false, pqk);
        gemm(&attn_f, WC_ATTENTION, "attn.pv", GEMM_DGRAD, sq, vd, sk, batch, false, ppv);
        stream(&attn_f, WC_ATTENTION, "attn.softmax", scores * (m->dropout ? 9.0 : 4.0),
               compute_stream_s(sys, scores * (m->dropout ? 9.0 : 4.0)));
        gemm(B, WC_ATTENTION, "attn.bwd.dv", GEMM_WGRAD, sk, vd, sq, batch, false, ppv);
        gemm(B, WC_ATTENTION, "attn.bwd.dp", GEMM_FWD, sq, sk, vd, batch, false, pqk);
        gemm(B, WC_ATTENTION, "attn.bwd.dq", GEMM_DGRAD, sq, qk, sk, batch, false, ppv);
        gemm(B, WC_ATTENTION, "attn.bwd.dk", GEMM_WGRAD, sk, qk, sq, batch, false, pqk);
        stream(B, WC_ATTENTION, "attn.softmax_bwd", scores * (m->dropout ? 11.0 : 6.0),
               compute_stream_s(sys, scores * (m->dropout ? 11.0 : 6.0)));
    }
    for (int i = 0; i < attn_f.n && F->n < WORK_MAX_ITEMS; i++) F->item[F->n++] = attn_f.item[i];

    linear(sys, F, B, "attn_out", tokens, h, qdim);
    TP_LEAVE(F);
    TP_ENTER(F);
    if (!moe) {
        linear(sys, F, B, "mlp_up", tokens, gate * m->ffn / tp, h);
        linear(sys, F, B, "mlp_down", tokens, h, (double)m->ffn / tp);
    } else {
        /* MoE block (estimate.c layer_cost, Megatron's MoELayer): the router over this rank's
         * tokens (its SP shard), the dispatch all-to-all of top_k copies of the tokens over the
         * EP group, E/ep local experts as one grouped GEMM each for up and down at the cost
         * model's rows per expert (a balanced router), the combine all-to-all, then the shared
         * experts over every token. */
        double etp = layout_etp(l);
        linear(sys, F, B, "router", l->sp ? tokens / tp : tokens, m->experts, h);
        double a2a = tokens / tp * m->top_k * h * 2.0;
        double pa = collective_time_s(sys, COLL_ALL_TO_ALL, a2a, c->gep);
        if (l->ep > 1) coll(F, WC_EP, "ep.dispatch", COLL_ALL_TO_ALL, a2a, GROUP_EP, pa);
        int local = m->experts / l->ep;
        double rows = tokens * m->top_k * l->ep * etp / ((double)m->experts * tp);
        w->local_experts = local;
        w->expert_rows = rows;
        double up = gate * m->expert_ffn / etp, down_in = m->expert_ffn / etp;
        /* grouped GEMMs: batch = local experts, one weight each */
        char nm[32];
        gemm(F, WC_GEMM, "experts_up", GEMM_FWD, rows, up, h, local, true,
             local * compute_gemm_s(sys, rows, up, h));
        snprintf(nm, sizeof nm, "experts_up.dgrad");
        gemm(B, WC_GEMM, nm, GEMM_DGRAD, rows, h, up, local, true,
             local * compute_gemm_s(sys, rows, h, up));
        snprintf(nm, sizeof nm, "experts_up.wgrad");
        gemm(B, WC_GEMM, nm, GEMM_WGRAD, up, h, rows, local, false,
             local * compute_gemm_s(sys, h, up, rows));
        gemm(F, WC_GEMM, "experts_down", GEMM_FWD, rows, h, down_in, local, true,
             local * compute_gemm_s(sys, rows, h, down_in));
        gemm(B, WC_GEMM, "experts_down.dgrad", GEMM_DGRAD, rows, down_in, h, local, true,
             local * compute_gemm_s(sys, rows, down_in, h));
        gemm(B, WC_GEMM, "experts_down.wgrad", GEMM_WGRAD, h, down_in, rows, local, false,
             local * compute_gemm_s(sys, down_in, h, rows));
        if (l->ep > 1) {
            coll(F, WC_EP, "ep.combine", COLL_ALL_TO_ALL, a2a, GROUP_EP, pa);
            coll(B, WC_EP, "ep.combine.bwd", COLL_ALL_TO_ALL, a2a, GROUP_EP, pa);
            coll(B, WC_EP, "ep.dispatch.bwd", COLL_ALL_TO_ALL, a2a, GROUP_EP, pa);
        }
        if (m->shared_experts) {
            double sw = (double)m->shared_experts * m->shared_ffn;
            linear(sys, F, B, "shared_up", tokens, gate * sw / tp, h);
            linear(sys, F, B, "shared_down", tokens, h, sw / tp);
        }
    }
    TP_LEAVE(F);

    /* Elementwise kernels (elementwise.c, as estimate.c prices them): every launch of Hugging
     * Face's eager kernels under FSDP2, Transformer Engine's fused lump under Megatron. */
    elementwise_list el;
    elementwise_layer(m, l, tokens, moe, &el);
    elementwise_items(sys, &el, el.fwd, el.n_fwd, F);
    elementwise_items(sys, &el, el.bwd, el.n_bwd, B);
    /* The backward's TP collectives: the same two per direction. */
    TP_ENTER(B);
    TP_LEAVE(B);
    TP_ENTER(B);
    TP_LEAVE(B);
#undef TP_ENTER
#undef TP_LEAVE

    /* Recompute: full repeats the forward (its collectives too) before the backward;
     * selective repeats the attention core. */
    if (l->recompute == RECOMPUTE_FULL) {
        recompute = *F;
    } else if (l->recompute == RECOMPUTE_SELECTIVE) {
        recompute = attn_f;
    }
    if (F->n >= WORK_MAX_ITEMS || B->n >= WORK_MAX_ITEMS)
        return cm_fail(err, errlen, CM_EINVAL, "internal: too many work items per layer");
    if (recompute.n) {
        if (recompute.n + B->n > WORK_MAX_ITEMS)
            return cm_fail(err, errlen, CM_EINVAL, "internal: too many work items per layer");
        memmove(&B->item[recompute.n], &B->item[0], sizeof(work_item) * B->n);
        for (int i = 0; i < recompute.n; i++) {
            B->item[i] = recompute.item[i];
            char nm[32];
            snprintf(nm, sizeof nm, "re.%.28s", recompute.item[i].name);
            snprintf(B->item[i].name, sizeof B->item[i].name, "%s", nm);
        }
        B->n += recompute.n;
    }
    return CM_OK;
}

/* Adam's parameters on stage s: its shard (estimate.c optimizer_cost), everything under DDP. */
static double stage_optimizer_params(const model_spec *m, const layout *l, int s)
{
    double pd, pe;
    memory_stage_params(m, l, s, &pd, &pe);
    if (l->sharding == SHARDING_DDP) return pd + pe;
    double ne = layout_expert_dp(l);
    if (l->shard_size > 0 && l->shard_size < ne) ne = l->shard_size;
    return pd / layout_shard_group(l) + pe / ne;
}

cm_status work_plan_build(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, work_plan *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (model_is_moe(m) && layout_etp(l) != l->tp)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan measure runs the experts with the attention's tensor parallelism: "
                       "expert tensor parallel %d differs from tp %d; drop --etp (or use plan "
                       "estimate)",
                       layout_etp(l), l->tp);
    if (l->pp > WORK_MAX_STAGES)
        return cm_fail(err, errlen, CM_EINVAL,
                       "pipeline size %d: plan measure handles up to %d stages", l->pp,
                       WORK_MAX_STAGES);
    cm_status st = estimate_layout(m, sys, t, l, &w->est, err, errlen);
    if (st != CM_OK) return st;
    estimate_costs costs;
    st = estimate_stage_costs(m, sys, t, l, &costs, NULL, err, errlen);
    if (st != CM_OK) return st;

    w->layout = *l;
    w->training = *t;
    w->pp = l->pp;
    w->vpp = l->vpp;
    for (int s = 0; s < l->pp; s++) w->stage_layers[s] = layout_stage_layers(m, l, s);
    w->chunk_layers = l->vpp > 1 ? m->layers / (l->pp * l->vpp) : 0;
    /* The stage the per-component figures are for: the estimate's slowest. */
    w->stage = costs.worst_stage;
    w->layers = w->stage_layers[w->stage];
    w->moe = model_is_moe(m);
    w->first_moe_layer = w->moe ? m->dense_first : m->layers;
    for (int c = 0; c < (l->vpp > 1 ? l->vpp : 1); c++) {
        int f = work_chunk_first_layer(w, w->stage, c), n = work_chunk_layer_count(w, w->stage, c);
        for (int i = f; i < f + n; i++) w->moe_layers += i >= w->first_moe_layer;
    }
    w->microbatches = layout_microbatches(l, t);
    if (w->microbatches < 1) w->microbatches = 1;
    w->has_head = w->stage == l->pp - 1;

    double tokens = (double)l->mbs * t->seq_len / l->cp;
    w->tokens = tokens;

    w->group_size[GROUP_TP] = l->tp;
    w->group_size[GROUP_CP] = l->cp;
    w->group_size[GROUP_DP] = l->dp * l->cp;
    w->group_size[GROUP_EP] = l->ep;
    w->group_size[GROUP_EDP] = layout_expert_dp(l);
    w->group_place[GROUP_TP] = layout_tp_group(sys, l);
    w->group_place[GROUP_CP] = layout_cp_group(sys, l);
    w->group_place[GROUP_DP] =
        l->sharding == SHARDING_FSDP ? layout_shard_place(sys, l) : layout_dp_group(sys, l);
    w->group_place[GROUP_EP] = layout_ep_group(sys, l);
    w->group_place[GROUP_EDP] =
        layout_group_place(sys, layout_expert_dp(l), l->ep * layout_etp(l));

    layer_ctx lc = {m, sys, t, l, tokens, w->group_place[GROUP_TP], w->group_place[GROUP_CP],
                    w->group_place[GROUP_EP]};
    st = build_layer(&lc, false, w, &w->layer_fwd, &w->layer_bwd, err, errlen);
    if (st == CM_OK && w->moe) st = build_layer(&lc, true, w, &w->moe_fwd, &w->moe_bwd, err, errlen);
    if (st != CM_OK) return st;

    /* Output layer and loss on the last stage (estimate.c stage_cost); always built, since the
     * whole pipeline runs when it fits. */
    {
        double v = (double)m->vocab / l->tp, h = m->hidden;
        linear(sys, &w->head_fwd, &w->head_bwd, "lm_head", tokens, v, h);
        elementwise_list el;
        elementwise_head(m, l, tokens, &el);
        elementwise_items(sys, &el, el.fwd, el.n_fwd, &w->head_fwd);
        elementwise_items(sys, &el, el.bwd, el.n_bwd, &w->head_bwd);
    }

    /* Pipeline transfers (estimate.c p2p_cost): each TP rank sends its 1/tp slice. */
    w->p2p_bytes = tokens * m->hidden * 2.0 / l->tp;
    w->p2p_pred_s = l->pp > 1 ? costs.p2p_s : 0;

    /* Data-parallel traffic per layer unit. */
    w->layer_params = memory_layer_params(m, l, 0);
    if (w->moe) {
        w->moe_layer_params = memory_layer_params(m, l, 1);
        memory_layer_params_split(m, l, 1, &w->moe_dense_params, &w->moe_expert_params);
    }
    for (int s = 0; s < l->pp; s++) {
        double r = 0;
        if (s == 0) r += model_embedding_params(m);
        if (s == l->pp - 1) r += model_output_params(m);
        w->stage_root_params[s] = r;
        w->stage_optimizer_params[s] = stage_optimizer_params(m, l, s);
    }
    w->root_params = w->stage_root_params[w->stage];
    int dpg = l->sharding == SHARDING_FSDP ? layout_shard_group(l) : l->dp * l->cp;
    w->group_size[GROUP_DP] = dpg;
    double p = w->layer_params;
    if (l->sharding == SHARDING_FSDP) {
        w->fsdp = true;
        w->gather_op = COLL_ALL_GATHER;
        w->gather_bytes = 2.0 * p;
        w->gather_each_micro = true;
        w->gather_in_bwd = l->reshard_after_forward;
        w->reduce_op = COLL_REDUCE_SCATTER;
        w->reduce_fp32 = l->framework == FRAMEWORK_FSDP2 || !t->grad_reduce_bf16;
        w->reduce_bytes = (w->reduce_fp32 ? 4.0 : 2.0) * p;
        w->reduce_each_micro = true;
    } else {
        w->reduce_fp32 = !t->grad_reduce_bf16;
        w->reduce_bytes = (w->reduce_fp32 ? 4.0 : 2.0) * p;
        w->reduce_each_micro = false;
        if (l->sharding == SHARDING_DDP) {
            w->reduce_op = COLL_ALL_REDUCE;
        } else {
            w->reduce_op = COLL_REDUCE_SCATTER;
            w->gather_op = COLL_ALL_GATHER;
            w->gather_bytes = 2.0 * p;
            w->gather_each_micro = false;
        }
    }
    w->dp_active = dpg > 1 || (w->moe && !w->fsdp && layout_expert_dp(l) > 1);

    /* Optimizer shard of the reported stage (estimate.c). */
    w->optimizer_params = w->stage_optimizer_params[w->stage];
    w->optimizer_bf16_copy = l->framework == FRAMEWORK_MEGATRON;

    /* Raw predicted sums per step on the reported stage, by component. */
    double micro = w->microbatches;
    int nd = w->layers - w->moe_layers, nm = w->moe_layers;
    const work_list *lists[6] = {&w->layer_fwd, &w->layer_bwd, &w->moe_fwd,
                                 &w->moe_bwd,   &w->head_fwd,  &w->head_bwd};
    double reps[6] = {micro * nd, micro * nd, micro * nm, micro * nm,
                      w->has_head ? micro : 0, w->has_head ? micro : 0};
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++)
            w->pred_component_s[lists[j]->item[i].component] += reps[j] * lists[j]->item[i].pred_s;
    if (w->dp_active) {
        layout_group g = w->group_place[GROUP_DP];
        double gathers = w->gather_each_micro ? micro * (w->gather_in_bwd ? 2 : 1) : 1;
        double reduces = w->reduce_each_micro ? micro : 1;
        double rb = w->reduce_fp32 ? 4.0 : 2.0;
        for (int kind = 0; kind < 2; kind++) {
            int n = kind ? nm : nd;
            if (!n) continue;
            /* FSDP units hold the whole layer; Megatron reduces the dense part over dp*cp and
             * the experts over the expert-dp group (estimate_dp_sync_s) */
            double pdn = kind ? (w->fsdp ? w->moe_layer_params : w->moe_dense_params) : p;
            double pex = kind && !w->fsdp ? w->moe_expert_params : 0;
            layout_group ge = w->group_place[GROUP_EDP];
            if (w->gather_bytes > 0 && dpg > 1)
                w->pred_component_s[WC_DP] +=
                    n * gathers * collective_time_s(sys, w->gather_op, 2.0 * pdn, g);
            if (dpg > 1)
                w->pred_component_s[WC_DP] +=
                    n * reduces * collective_time_s(sys, w->reduce_op, rb * pdn, g);
            if (pex > 0 && ge.size > 1) {
                if (w->gather_bytes > 0)
                    w->pred_component_s[WC_DP] +=
                        n * gathers * collective_time_s(sys, w->gather_op, 2.0 * pex, ge);
                w->pred_component_s[WC_DP] +=
                    n * reduces * collective_time_s(sys, w->reduce_op, rb * pex, ge);
            }
        }
    }
    /* FSDP2's copies (fsdp_copies.h; bk_measure runs them around the unit collectives, so they
     * are not work items): per layer unit and the stage's root unit, a copy-in and a copy-out
     * per all-gather, a reduce-scatter copy-in per reduction. The copy-outs and the
     * reduce-scatter copy-ins are compute-stream time in the estimate. */
    if (fsdp_copies_apply(l)) {
        int g = layout_shard_group(l);
        double gathers = micro * fsdp_gathers_per_microbatch(l);
        for (int kind = 0; kind < 3; kind++) {
            double units = kind == 0 ? nd : (kind == 1 ? nm : 1);
            double up = kind == 0 ? p : (kind == 1 ? w->moe_layer_params
                                                   : fsdp_root_params(m, l, w->stage) / l->tp);
            if (units <= 0 || up <= 0) continue;
            fsdp_copies fc;
            fsdp_copies_unit(up, g, &fc);
            double cmp = units * (gathers * fsdp_copy_out_s(sys, &fc) +
                                  micro * fsdp_rs_copy_in_s(sys, &fc));
            w->pred_copies_compute_s += cmp;
            w->pred_component_s[WC_FRAMEWORK] += cmp + units * gathers * fsdp_copy_in_s(sys, &fc);
        }
    }
    w->pred_component_s[WC_PP] = w->est.time.pp_s;
    w->pred_component_s[WC_OPTIMIZER] = w->est.time.optimizer_s;
    return CM_OK;
}

static void print_list(FILE *f, const char *phase, const work_list *w, double reps)
{
    for (int i = 0; i < w->n; i++) {
        const work_item *it = &w->item[i];
        /* identical launches in a row (an eager kernel run twice per layer): one line */
        int same = 1;
        while (it->kind == WORK_STREAM && i + same < w->n &&
               w->item[i + same].kind == WORK_STREAM && w->item[i + same].bytes == it->bytes &&
               !strcmp(w->item[i + same].name, it->name))
            same++;
        i += same - 1;
        fprintf(f, "  %-5s %-22s ", phase, it->name);
        switch (it->kind) {
        case WORK_GEMM:
            fprintf(f, "gemm   m=%-6.0f n=%-6.0f k=%-6.0f batch=%-3d", it->m, it->n, it->k,
                    it->batch);
            break;
        case WORK_STREAM:
            fprintf(f, "stream %-13s %-27.3g", ew_pattern_name(it->access.pattern), it->bytes);
            break;
        case WORK_COLL:
            fprintf(f, "%-14s %-9s %-12.4g %-9s", collective_get(it->op)->name,
                    work_group_name(it->group), it->bytes, "");
            break;
        }
        fprintf(f, "  pred %8.3f ms  x%.0f\n", it->pred_s * 1e3, reps * same);
    }
}

void work_plan_print(const work_plan *w, void *file)
{
    FILE *f = file;
    const layout *l = &w->layout;
    int nd = w->layers - w->moe_layers;
    fprintf(f, "work of one step on pipeline stage %d: %d layers x %d micro-batches, %.0f tokens "
               "per GPU per micro-batch\n",
            w->stage, w->layers, w->microbatches, w->tokens);
    if (w->moe) fprintf(f, "MoE layers on that stage: %d\n", w->moe_layers);
    fprintf(f, "groups: tp %d, cp %d, dp %d (%s)", l->tp, l->cp, w->group_size[GROUP_DP],
            layout_sharding_name(l->sharding));
    if (w->moe) fprintf(f, ", ep %d, expert dp %d", l->ep, w->group_size[GROUP_EDP]);
    fprintf(f, "\n");
    if (w->pp > 1) {
        fprintf(f, "pipeline: %d stages (layers", w->pp);
        for (int s = 0; s < w->pp; s++) fprintf(f, "%s%d", s ? " " : " ", w->stage_layers[s]);
        fprintf(f, "), %s, send/recv of %.4g bytes per micro-batch and direction, pred %.3f ms; "
                   "predicted bubble %.4f s\n",
                w->vpp > 1 ? "interleaved 1F1B" : "1F1B", w->p2p_bytes, w->p2p_pred_s * 1e3,
                w->est.time.bubble_s);
    }
    if (nd) {
        print_list(f, "fwd", &w->layer_fwd, (double)nd * w->microbatches);
        print_list(f, "bwd", &w->layer_bwd, (double)nd * w->microbatches);
    }
    if (w->moe_layers) {
        fprintf(f, "  MoE layers: %d local experts x %.0f rows each\n", w->local_experts,
                w->expert_rows);
        print_list(f, "fwd", &w->moe_fwd, (double)w->moe_layers * w->microbatches);
        print_list(f, "bwd", &w->moe_bwd, (double)w->moe_layers * w->microbatches);
    }
    if (w->has_head) {
        print_list(f, "fwd", &w->head_fwd, w->microbatches);
        print_list(f, "bwd", &w->head_bwd, w->microbatches);
    }
    if (w->dp_active) {
        if (w->gather_bytes > 0)
            fprintf(f, "  unit  %-22s %-14s dp        %-12.4g per layer%s%s\n", "dp.gather",
                    collective_get(w->gather_op)->name, w->gather_bytes,
                    w->gather_each_micro ? ", every micro-batch" : ", once per step",
                    w->gather_in_bwd ? ", again in backward" : "");
        fprintf(f, "  unit  %-22s %-14s dp        %-12.4g per layer%s (%s)\n", "dp.reduce",
                collective_get(w->reduce_op)->name, w->reduce_bytes,
                w->reduce_each_micro ? ", every micro-batch" : ", last micro-batch",
                w->reduce_fp32 ? "fp32" : "bf16");
    }
    if (fsdp_copies_apply(l)) {
        fsdp_copies fc;
        fsdp_copies_unit(w->layer_params, layout_shard_group(l), &fc);
        fprintf(f, "  unit  %-22s copy-in %.4g + %.4g bytes (%d launches each), copy-out %.4g, "
                   "reduce-scatter copy-in %.4g bytes per layer (fsdp_copies.h)\n",
                "fsdp2.copies", fc.cast_in.bytes * fc.cast_in.count,
                fc.slot_in.bytes * fc.slot_in.count, fc.cast_in.count, fc.copy_out.bytes,
                fc.rs_cast.bytes);
    }
    fprintf(f, "  step  %-22s adam over %.4g parameters%s\n", "optimizer", w->optimizer_params,
            w->optimizer_bf16_copy ? " (+ bf16 model copy)" : "");
    fprintf(f, "predicted per step (raw item sums): ");
    for (int c = 0; c < WC_COUNT; c++)
        fprintf(f, "%s %.4f s%s", work_component_name(c), w->pred_component_s[c],
                c + 1 < WC_COUNT ? ", " : "\n");
}
