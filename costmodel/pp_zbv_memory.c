/* pp_zbv_memory.c — the split backward's retained tensors under ZBVZeroBubble (sources in
 * pp_zbv_memory.h). */
#include "pp_zbv_memory.h"

#include "memory.h"
#include "schedule.h"

#include <stdlib.h>

double pp_zbv_output_grad_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                int layers, bool head)
{
    double tokens = (double)l->mbs * t->seq_len / l->cp;
    double row_tokens = l->sp && l->tp > 1 ? tokens / l->tp : tokens; /* sequence-parallel */
    double h = m->hidden, q = model_q_dim(m), kv = model_kv_dim(m);
    /* column-parallel outputs (tp-split): q, k, v (and the q/k norms' where present) and the
     * MLP's gate and up; row-parallel ones (whole hidden rows): o and down; the two norms' */
    double col = q + 2.0 * kv, row = 2.0 * h + 2.0 * h;
    if (m->qk_norm) col += q + kv;
    if (m->experts > 0) { /* the routed copies (top_k rows a token) and the shared experts */
        col += m->top_k * 2.0 * m->expert_ffn + m->shared_experts * 2.0 * m->shared_ffn;
        row += m->top_k * h + (m->shared_experts > 0 ? h : 0) + m->experts; /* + the router */
    } else {
        col += 2.0 * m->ffn;
    }
    double per_layer = 2.0 * (tokens * col / l->tp + row_tokens * row);
    double b = layers * per_layer;
    if (head) b += 2.0 * (tokens * (double)m->vocab / l->tp + row_tokens * h);
    return b;
}

/* The chunks' weight gradients W left in bf16 (1.) and the output gradients of the I's whose W
 * has not run (2.), at one moment. */
static double kept(const pp_zbv_rank *z, const bool pending[2], const int waiting[2])
{
    double b = 0;
    for (int c = 0; c < 2; c++)
        b += (pending[c] ? 2.0 * z->params[c] : 0) + waiting[c] * z->output_grad_bytes[c];
    return b;
}

static double walk(int p, int m, int rank, const pp_zbv_rank *z)
{
    schedule_op *ops = malloc((size_t)schedule_max_ops(2, m) * sizeof *ops);
    if (!ops) return 0;
    int n = schedule_pipeline_kind(PP_SCHEDULE_ZBV, p, 2, m, rank, ops);
    int held[2] = {0, 0}, waiting[2] = {0, 0}, input_grads = 0;
    bool pending[2] = {false, false}; /* a W's bf16 weight gradients not yet folded (1.) */
    double best = 0, best_act = 0;
    for (int i = 0; i < n; i++) {
        int c = ops[i].chunk;
        double act = held[0] * z->act_bytes[0] + held[1] * z->act_bytes[1];
        if (!ops[i].backward) {
            held[c]++;
            if (act + z->act_bytes[c] > best_act) best_act = act + z->act_bytes[c];
            continue;
        }
        /* the moment the op starts: the loss's buffers at the head chunk's I */
        double at = act + kept(z, pending, waiting) + input_grads * z->input_grad_bytes;
        if (ops[i].part == SCHEDULE_INPUT && !z->first[c]) {
            if (c == z->head_chunk) at += z->loss_over_blocks_bytes;
            if (at > best) best = at;
            pending[c] = false; /* folded block by block as I reaches each block's input */
            waiting[c]++;       /* its output gradients wait for its W */
            input_grads++;
            /* its end: the chunk's activations all still held (retain_graph) */
            at = act + kept(z, pending, waiting) + input_grads * z->input_grad_bytes;
        } else if (ops[i].part == SCHEDULE_WEIGHT) {
            if (!z->first[c] && at > best) best = at;
            if (!z->first[c]) { /* W swaps its output gradients for bf16 weight gradients */
                waiting[c]--;
                pending[c] = true;
                at = act - z->act_bytes[c] + kept(z, pending, waiting) +
                     input_grads * z->input_grad_bytes;
            }
            held[c]--; /* the first chunk's W is its full backward: the moment above */
        } else if (ops[i].part == SCHEDULE_FULL) {
            held[c]--;
        }
        if (at > best) best = at;
    }
    free(ops);
    double base = best_act + (z->head_chunk >= 0 ? z->loss_over_blocks_bytes : 0);
    return n > 0 && best > base ? best - base : 0;
}

double pp_zbv_retained_bytes(int p, int m, int rank, const pp_zbv_rank *z)
{
    if (p < 2 || m < 1) return 0;
    /* Past the warm-up each micro-batch more adds one steady-state round (F0 I0 W0 F1 I1 W1) the
     * same as the others but for the two received-input gradients it leaves, before the
     * cool-down, whose shape does not depend on m: the fullest moment comes as late and 2 such
     * gradients higher. So a long step is walked short and the difference carried on (a search
     * asks for huge m; the walk is O(m)). */
    int cap = 4 * p + 4;
    if (m <= cap) return walk(p, m, rank, z);
    double last = walk(p, cap, rank, z), before = walk(p, cap - 1, rank, z);
    double per = last > before ? last - before : 0;
    return last + (double)(m - cap) * per;
}

double pp_zbv_stage_bytes(const model_spec *m, const training_spec *t, const layout *l, int stage,
                          int n_layers, double layer_params, double per_micro_bytes,
                          double loss_over_blocks_bytes)
{
    if (layout_pp_schedule_of(l) != PP_SCHEDULE_ZBV || l->pp < 2 || l->vpp != 2 ||
        !layout_is_pytorch(l) || n_layers < 1)
        return 0;
    pp_zbv_rank z = {.head_chunk = stage == 0 ? 1 : -1};
    double tokens = (double)l->mbs * t->seq_len / l->cp;
    z.input_grad_bytes = 2.0 * (l->sp && l->tp > 1 ? tokens / l->tp : tokens) * m->hidden;
    if (stage == 0 && loss_over_blocks_bytes > 0) z.loss_over_blocks_bytes = loss_over_blocks_bytes;
    for (int c = 0; c < 2; c++) {
        int k = schedule_vstage(PP_SCHEDULE_ZBV, l->pp, c, stage);
        int layers = layout_vstage_layers(m, l, k);
        bool head = k == 2 * l->pp - 1;
        z.first[c] = k == 0;
        z.act_bytes[c] = per_micro_bytes * layers / n_layers;
        double root = (double)m->hidden + (model_output_params(m) - m->hidden) / l->tp;
        z.params[c] = layers * layer_params + (head ? root : 0); /* norm whole, head Colwise */
        z.output_grad_bytes[c] = pp_zbv_output_grad_bytes(m, t, l, layers, head);
    }
    return pp_zbv_retained_bytes(l->pp, layout_microbatches(l, t), stage, &z);
}
