/*
 * memory_params.c — the parameters each GPU holds, per layer and per pipeline stage (dense and
 * expert, all and low-precision Linears only): the counts memory.c turns into bytes. Split out of
 * memory.c (one concept a file); declarations in memory.h and, for memory.c's own use,
 * memory_params.h.
 */
#include "memory.h"
#include "memory_params.h"
#include "precision.h"

/* The MoE layers among the n from global layer start on. */
int memory_moe_layers_from(const model_spec *m, int start, int n)
{
    if (!model_is_moe(m)) return 0;
    int first_moe = m->dense_first > start ? m->dense_first : start;
    int end = start + n;
    return end > first_moe ? end - first_moe : 0;
}

static int stage_moe_layers(const model_spec *m, const layout *l, int s)
{
    return memory_moe_layers_from(m, layout_stage_start(m, l, s), layout_stage_layers(m, l, s));
}

void memory_model_counts_of(const model_spec *m, memory_model_counts *c)
{
    c->attention = model_attention_params(m);
    c->norm = model_norm_params(m);
    c->dense_mlp = model_dense_mlp_params(m);
    c->expert = model_expert_params(m);
    c->shared_expert = model_shared_expert_params(m);
    c->router = model_router_params(m);
    c->embedding = model_embedding_params(m);
    c->output = model_output_params(m);
}

double memory_layer_params_counted(const model_spec *m, const memory_model_counts *c,
                                   const layout *l, int moe_layer)
{
    double p = c->attention / l->tp + c->norm;
    if (!moe_layer) return p + c->dense_mlp / l->tp;
    return p + (double)(m->experts / l->ep) * c->expert / layout_etp(l) + c->router +
           c->shared_expert / l->tp;
}

double memory_layer_params(const model_spec *m, const layout *l, int moe_layer)
{
    /* only the counts memory_layer_params_counted reads for this kind of layer (issue 21:
     * counting all eight for every low-precision layer of every stage was a tenth of a
     * --precision any search); the same doubles, so the same figure */
    memory_model_counts c = {.attention = model_attention_params(m),
                             .norm = model_norm_params(m)};
    if (moe_layer) {
        c.expert = model_expert_params(m);
        c.router = model_router_params(m);
        c.shared_expert = model_shared_expert_params(m);
    } else {
        c.dense_mlp = model_dense_mlp_params(m);
    }
    return memory_layer_params_counted(m, &c, l, moe_layer);
}

void memory_layer_params_split(const model_spec *m, const layout *l, int moe_layer,
                               double *dense_params, double *expert_params)
{
    /* The per-layer terms of memory_stage_params(), one layer at a time. */
    double dense = model_attention_params(m) / l->tp + model_norm_params(m);
    double expert = 0;
    if (!moe_layer) {
        dense += model_dense_mlp_params(m) / l->tp;
    } else {
        dense += model_router_params(m) + model_shared_expert_params(m) / l->tp;
        expert = (double)(m->experts / l->ep) * model_expert_params(m) / layout_etp(l);
    }
    *dense_params = dense;
    *expert_params = expert;
}

/* Stage `stage`'s parameters, its n layers (moe of them MoE) given. */
void memory_stage_params_counted(const model_spec *m, const memory_model_counts *c,
                                 const layout *l, int stage, int n, int moe,
                                 double *dense_params, double *expert_params)
{
    double dense = n * (c->attention / l->tp + c->norm) + (n - moe) * c->dense_mlp / l->tp +
                   moe * (c->router + c->shared_expert / l->tp);
    double expert = moe * (double)(m->experts / l->ep) * c->expert / layout_etp(l);
    if (stage == 0) dense += c->embedding / l->tp;
    if (stage == layout_head_stage(l)) {
        double vh = (double)m->vocab * m->hidden;
        dense += c->output - (m->tied_embeddings ? 0 : vh) +
                 /* untied head, or Megatron's copy of the tied embedding on the last stage */
                 ((!m->tied_embeddings || l->pp > 1) ? vh / l->tp : 0);
        /* Megatron's MTP modules (recipe_mtp.c): one decoder layer each, eh_proj (2h x h,
         * column parallel) and three norms (enorm, hnorm, final); the output layer is shared */
        int mtp = layout_mtp_layers(m, l);
        if (mtp > 0) {
            double d, e, h = m->hidden;
            memory_layer_params_split(m, l, model_layer_is_moe(m, m->layers - 1), &d, &e);
            dense += mtp * (d + 2.0 * h * h / l->tp + 3.0 * h);
            expert += mtp * e;
        }
    }
    *dense_params = dense;
    *expert_params = expert;
}

void memory_stage_params(const model_spec *m, const layout *l, int stage, double *dense_params,
                         double *expert_params)
{
    memory_model_counts c;
    memory_model_counts_of(m, &c);
    memory_stage_params_counted(m, &c, l, stage, layout_stage_layers(m, l, stage),
                         stage_moe_layers(m, l, stage), dense_params, expert_params);
}

bool memory_layer_is_moe(const model_spec *m, int layer)
{
    return model_is_moe(m) && layer >= m->dense_first;
}

/* Linear (GEMM) parameters of one layer on one GPU: the layer's parameters less its norms and
 * the MoE router (which stay bf16, precision.h). */
double memory_layer_linear_params(const model_spec *m, const layout *l, int moe_layer)
{
    return memory_layer_params(m, l, moe_layer) - model_norm_params(m) -
           (moe_layer ? model_router_params(m) : 0);
}

void memory_layer_lp_params_split(const model_spec *m, const layout *l, int moe_layer,
                                  double *dense_params, double *expert_params)
{
    *dense_params = *expert_params = 0;
    if (!precision_param_gather(l)) return;
    double d, e;
    memory_layer_params_split(m, l, moe_layer, &d, &e);
    *expert_params = e; /* the experts' weights are all Linears */
    *dense_params = memory_layer_linear_params(m, l, moe_layer) - e;
}

void memory_lp_layers_from(const model_spec *m, const layout *l, int start, int n, int *lo,
                           int *split, int *hi)
{
    /* precision_layer_bf16 of a low-precision layout: below bf16_layers_start, or from
     * layers - bf16_layers_end on (the layers past the model's end among them) */
    int a = start > l->bf16_layers_start ? start : l->bf16_layers_start;
    int b = start + n < m->layers - l->bf16_layers_end ? start + n
                                                       : m->layers - l->bf16_layers_end;
    if (b < a) b = a;
    int s = model_is_moe(m) ? m->dense_first : b; /* the first MoE layer */
    *lo = a;
    *hi = b;
    *split = s < a ? a : s > b ? b : s;
}

void memory_stage_lp_params(const model_spec *m, const layout *l, int stage,
                            double *dense_params, double *expert_params)
{
    *dense_params = *expert_params = 0;
    if (!precision_param_gather(l)) return;
    int start = layout_stage_start(m, l, stage), n = layout_stage_layers(m, l, stage);
    /* Each kind's split computed once and added a layer at a time in layer order, as the
     * per-layer sum did: the same doubles, bit for bit (issue 21: the per-layer splits were a
     * third of a --precision any search). */
    int lo, split, hi;
    memory_lp_layers_from(m, l, start, n, &lo, &split, &hi);
    double d, e;
    if (split > lo) {
        memory_layer_lp_params_split(m, l, 0, &d, &e);
        for (int i = lo; i < split; i++) {
            *dense_params += d;
            *expert_params += e;
        }
    }
    if (hi > split) {
        memory_layer_lp_params_split(m, l, 1, &d, &e);
        for (int i = split; i < hi; i++) {
            *dense_params += d;
            *expert_params += e;
        }
    }
}
