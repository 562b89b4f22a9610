/*
 * work.c — layout to GPU work (see work.h). Mirrors estimate.c's layer_cost()/stage_cost() for
 * dense models item by item: whenever estimate.c changes what a layer does, this file changes
 * with it, and tests/test_backend_work.c fails until it does (the sums must agree).
 */
#include "work.h"

#include <stdio.h>
#include <string.h>

#include "compute.h"
#include "flops.h"
#include "memory.h"

static const char *component_names[WC_COUNT] = {
    "gemm", "attention", "elementwise", "tp_comm", "cp_comm", "dp_comm", "optimizer",
    "framework_copies",
};
static const char *group_names[GROUP_COUNT] = {"tp", "cp", "dp"};

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
    if (w->n >= WORK_MAX_ITEMS) return NULL; /* cannot happen for dense layers (< 40 items) */
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

static void stream(work_list *w, work_component c, const char *name, double bytes, double pred_s)
{
    work_item *it = push(w, WORK_STREAM, c, name);
    if (!it) return;
    it->bytes = bytes;
    it->pred_s = pred_s;
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
    int dp = local_gpus / mp;
    if (dp >= l->dp) dp = l->dp;
    *whole = dp == l->dp && l->pp == 1;
    return dp;
}

cm_status work_plan_build(const model_spec *m, const system_spec *sys, const training_spec *t,
                          const layout *l, work_plan *w, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (model_is_moe(m) || m->mla)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan measure executes dense models with ordinary (GQA) attention; '%s' "
                       "has %s: not measured yet, use plan estimate",
                       m->name, m->mla ? "MLA attention" : "MoE layers");
    cm_status st = estimate_layout(m, sys, t, l, &w->est, err, errlen);
    if (st != CM_OK) return st;

    w->layout = *l;
    w->training = *t;
    w->stage = 0;
    w->layers = layout_stage_layers(m, l, 0);
    w->microbatches = layout_microbatches(l, t);
    if (w->microbatches < 1) w->microbatches = 1;
    w->has_head = l->pp == 1;

    double tokens = (double)l->mbs * t->seq_len / l->cp;
    w->tokens = tokens;
    double tp = l->tp, h = m->hidden, a = m->heads, d = m->head_dim;
    double seq_div = l->sp ? tp : 1.0;
    bool swiglu = m->activation == MODEL_ACT_SWIGLU;
    double gate = swiglu ? 2.0 : 1.0;
    /* Elementwise bytes per element as estimate.c prices them: Transformer Engine's fused
     * kernels under Megatron, Hugging Face eager kernels under FSDP2. */
    bool eager = l->framework == FRAMEWORK_FSDP2;
    double act_bytes = swiglu ? (eager ? 10.0 : 6.0) : 4.0;
    double norm_bytes = (eager && m->norm == MODEL_NORM_RMS) ? 36.0 : 4.0;
    double rope_bytes = eager ? 18.0 : 4.0;

    w->group_size[GROUP_TP] = l->tp;
    w->group_size[GROUP_CP] = l->cp;
    w->group_size[GROUP_DP] = l->dp * l->cp;
    w->group_place[GROUP_TP] = layout_tp_group(sys, l);
    w->group_place[GROUP_CP] = layout_cp_group(sys, l);
    w->group_place[GROUP_DP] =
        l->sharding == SHARDING_FSDP ? layout_shard_place(sys, l) : layout_dp_group(sys, l);

    work_list *F = &w->layer_fwd, *B = &w->layer_bwd;
    work_list recompute; /* the forward again, for full recompute */
    memset(&recompute, 0, sizeof recompute);

    /* TP/SP collectives of the full activation (estimate.c: tp_one twice per direction). */
    double act = tokens * h * 2.0;
    layout_group gtp = w->group_place[GROUP_TP];
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
    double qkv_out = (model_q_dim(m) + 2.0 * model_kv_dim(m)) / tp;
    double qdim = model_q_dim(m) / tp;
    TP_ENTER(F);
    linear(sys, F, B, "qkv", tokens, qkv_out, h);

    /* CP exchange (estimate.c): Megatron ring of cp-1 K/V chunks (2x backward), or Ulysses
     * all-to-alls of q, k, v and the output (same backward). */
    double kvh = m->kv_heads;
    if (l->cp > 1) {
        layout_group gcp = w->group_place[GROUP_CP];
        if (l->framework == FRAMEWORK_MEGATRON) {
            double chunk = tokens * kvh * (d + d) * 2.0 / tp;
            for (int i = 0; i < l->cp - 1; i++) {
                double p = collective_time_s(sys, COLL_SEND_RECV, chunk, gcp);
                coll(F, WC_CP, "cp.ring_kv", COLL_SEND_RECV, chunk, GROUP_CP, p);
                coll(B, WC_CP, "cp.ring_kv", COLL_SEND_RECV, chunk, GROUP_CP, p);
                coll(B, WC_CP, "cp.ring_dkv", COLL_SEND_RECV, chunk, GROUP_CP, p);
            }
        } else {
            double bytes = tokens * 2.0 * (a * d + kvh * d + kvh * d + a * d);
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
        gemm(&attn_f, WC_ATTENTION, "attn.qk", GEMM_FWD, sq, sk, d, batch, false, pf);
        gemm(&attn_f, WC_ATTENTION, "attn.pv", GEMM_DGRAD, sq, d, sk, batch, false, pf);
        /* FlashAttention-2 backward: recompute scores, then dV, dP, dQ, dK (2.5x forward). */
        gemm(B, WC_ATTENTION, "attn.bwd.qk", GEMM_FWD, sq, sk, d, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dv", GEMM_WGRAD, sk, d, sq, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dp", GEMM_FWD, sq, sk, d, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dq", GEMM_DGRAD, sq, d, sk, batch, false, pb);
        gemm(B, WC_ATTENTION, "attn.bwd.dk", GEMM_WGRAD, sk, d, sq, batch, false, pb);
    } else {
        /* Unfused (Megatron 2021-22): full s x s scores, softmax bytes per score fwd 4 (+5
         * dropout), bwd 6 (+5). Predictions as estimate.c's unfused branch. */
        double rows = tokens * a / tp;
        double sk = t->seq_len;
        double pqk = compute_gemm_s(sys, rows, t->seq_len, d);
        double ppv = compute_gemm_s(sys, rows, d, t->seq_len);
        double scores = rows * t->seq_len;
        gemm(&attn_f, WC_ATTENTION, "attn.qk", GEMM_FWD, sq, sk, d, batch, false, pqk);
        gemm(&attn_f, WC_ATTENTION, "attn.pv", GEMM_DGRAD, sq, d, sk, batch, false, ppv);
        stream(&attn_f, WC_ATTENTION, "attn.softmax", scores * (m->dropout ? 9.0 : 4.0),
               compute_stream_s(sys, scores * (m->dropout ? 9.0 : 4.0)));
        gemm(B, WC_ATTENTION, "attn.bwd.dv", GEMM_WGRAD, sk, d, sq, batch, false, ppv);
        gemm(B, WC_ATTENTION, "attn.bwd.dp", GEMM_FWD, sq, sk, d, batch, false, pqk);
        gemm(B, WC_ATTENTION, "attn.bwd.dq", GEMM_DGRAD, sq, d, sk, batch, false, ppv);
        gemm(B, WC_ATTENTION, "attn.bwd.dk", GEMM_WGRAD, sk, d, sq, batch, false, pqk);
        stream(B, WC_ATTENTION, "attn.softmax_bwd", scores * (m->dropout ? 11.0 : 6.0),
               compute_stream_s(sys, scores * (m->dropout ? 11.0 : 6.0)));
    }
    for (int i = 0; i < attn_f.n && F->n < WORK_MAX_ITEMS; i++) F->item[F->n++] = attn_f.item[i];

    linear(sys, F, B, "attn_out", tokens, h, qdim);
    TP_LEAVE(F);
    TP_ENTER(F);
    linear(sys, F, B, "mlp_up", tokens, gate * m->ffn / tp, h);
    linear(sys, F, B, "mlp_down", tokens, h, (double)m->ffn / tp);
    TP_LEAVE(F);

    /* Elementwise bytes (estimate.c): activation, rotary, norms, residuals, dropout masks. */
    double elem_sharded = act_bytes * m->ffn / tp;
    if (!m->learned_positions) elem_sharded += rope_bytes * (a * d + m->kv_heads * d) / tp;
    double elem_repl = 2.0 * norm_bytes * h + 12.0 * h + (m->dropout ? 2.0 * h : 0);
    double elem_fwd = tokens * (elem_repl / seq_div + elem_sharded);
    /* Eager kernels run at the system's eager elementwise rate (estimate.c). */
    double elem_bw = sys->hbm_bandwidth_bytes_per_s *
                     (eager ? sys->eager_elementwise_efficiency : sys->hbm_efficiency);
    stream(F, WC_ELEMENTWISE, "elementwise", elem_fwd, elem_fwd / elem_bw);
    stream(B, WC_ELEMENTWISE, "elementwise.bwd", 2.0 * elem_fwd, 2.0 * elem_fwd / elem_bw);
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
    if (recompute.n) {
        if (recompute.n + B->n > WORK_MAX_ITEMS)
            return cm_fail(err, errlen, CM_EINVAL, "internal: too many work items per layer");
        memmove(&B->item[recompute.n], &B->item[0], sizeof(work_item) * B->n);
        for (int i = 0; i < recompute.n; i++) {
            B->item[i] = recompute.item[i];
            char nm[32];
            snprintf(nm, sizeof nm, "re.%s", recompute.item[i].name);
            snprintf(B->item[i].name, sizeof B->item[i].name, "%s", nm);
        }
        B->n += recompute.n;
    }

    /* Output layer and loss on the last stage (estimate.c stage_cost). */
    if (w->has_head) {
        double v = (double)m->vocab / l->tp;
        linear(sys, &w->head_fwd, &w->head_bwd, "lm_head", tokens, v, h);
        stream(&w->head_fwd, WC_ELEMENTWISE, "loss", 10.0 * tokens * v,
               compute_stream_s(sys, 10.0 * tokens * v));
        stream(&w->head_bwd, WC_ELEMENTWISE, "loss.bwd", 10.0 * tokens * v,
               compute_stream_s(sys, 10.0 * tokens * v));
    }

    /* Data-parallel traffic per layer unit. */
    w->layer_params = memory_layer_params(m, l, 0);
    w->root_params = model_embedding_params(m) + model_output_params(m);
    if (!w->has_head) w->root_params = model_embedding_params(m);
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
    w->dp_active = dpg > 1;

    /* Optimizer shard (estimate.c). */
    double pd, pe;
    memory_stage_params(m, l, 0, &pd, &pe);
    double local = pd + pe;
    if (l->sharding != SHARDING_DDP) local = pd / layout_shard_group(l);
    w->optimizer_params = local;
    w->optimizer_bf16_copy = l->framework == FRAMEWORK_MEGATRON;

    /* Raw predicted sums per step, by component. */
    double micro = w->microbatches;
    const work_list *lists[4] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd, &w->head_bwd};
    double reps[4] = {micro * w->layers, micro * w->layers, micro, micro};
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < lists[j]->n; i++)
            w->pred_component_s[lists[j]->item[i].component] += reps[j] * lists[j]->item[i].pred_s;
    if (w->dp_active) {
        layout_group g = w->group_place[GROUP_DP];
        double gathers = w->gather_each_micro ? micro * (w->gather_in_bwd ? 2 : 1) : 1;
        double reduces = w->reduce_each_micro ? micro : 1;
        if (w->gather_bytes > 0)
            w->pred_component_s[WC_DP] +=
                w->layers * gathers * collective_time_s(sys, w->gather_op, w->gather_bytes, g);
        w->pred_component_s[WC_DP] +=
            w->layers * reduces * collective_time_s(sys, w->reduce_op, w->reduce_bytes, g);
    }
    /* FSDP2's copy-in/copy-out kernels (estimate.c prices them on the compute stream; bk_measure
     * runs them itself, so they are not work items): 4p forward, 4p (resharded) + 6p backward. */
    if (l->framework == FRAMEWORK_FSDP2 && l->sharding == SHARDING_FSDP)
        w->pred_component_s[WC_ELEMENTWISE] +=
            micro * w->layers *
            (compute_stream_s(sys, 4.0 * p) +
             compute_stream_s(sys, (l->reshard_after_forward ? 4.0 : 0.0) * p + 6.0 * p));
    w->pred_component_s[WC_OPTIMIZER] = w->est.time.optimizer_s;
    return CM_OK;
}

static void print_list(FILE *f, const char *phase, const work_list *w, double reps)
{
    for (int i = 0; i < w->n; i++) {
        const work_item *it = &w->item[i];
        fprintf(f, "  %-5s %-22s ", phase, it->name);
        switch (it->kind) {
        case WORK_GEMM:
            fprintf(f, "gemm   m=%-6.0f n=%-6.0f k=%-6.0f batch=%-3d", it->m, it->n, it->k,
                    it->batch);
            break;
        case WORK_STREAM:
            fprintf(f, "stream %-41.3g", it->bytes);
            if (0) fprintf(f, " ");
            break;
        case WORK_COLL:
            fprintf(f, "%-14s %-9s %-12.4g %-9s", collective_get(it->op)->name,
                    work_group_name(it->group), it->bytes, "");
            break;
        }
        fprintf(f, "  pred %8.3f ms  x%.0f\n", it->pred_s * 1e3, reps);
    }
}

void work_plan_print(const work_plan *w, void *file)
{
    FILE *f = file;
    const layout *l = &w->layout;
    fprintf(f, "work of one step on pipeline stage %d: %d layers x %d micro-batches, %.0f tokens "
               "per GPU per micro-batch\n",
            w->stage, w->layers, w->microbatches, w->tokens);
    fprintf(f, "groups: tp %d, cp %d, dp %d (%s)\n", l->tp, l->cp, w->group_size[GROUP_DP],
            layout_sharding_name(l->sharding));
    print_list(f, "fwd", &w->layer_fwd, (double)w->layers * w->microbatches);
    print_list(f, "bwd", &w->layer_bwd, (double)w->layers * w->microbatches);
    print_list(f, "fwd", &w->head_fwd, w->microbatches);
    print_list(f, "bwd", &w->head_bwd, w->microbatches);
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
    fprintf(f, "  step  %-22s adam over %.4g parameters%s\n", "optimizer", w->optimizer_params,
            w->optimizer_bf16_copy ? " (+ bf16 model copy)" : "");
    fprintf(f, "predicted per step (raw item sums): ");
    for (int c = 0; c < WC_COUNT; c++)
        fprintf(f, "%s %.4f s%s", work_component_name(c), w->pred_component_s[c],
                c + 1 < WC_COUNT ? ", " : "\n");
}
