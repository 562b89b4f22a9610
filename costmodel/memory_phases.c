/* memory_phases.c — which torch buffers are alive at the same moment (memory_phases.h). */
#include "memory_phases.h"

#include "cuda_graphs.h"
#include "memory.h"
#include "schedule.h"

double memory_root_gathered_bytes(const model_spec *m, const layout *l, int stage)
{
    double p = 0;
    if (stage == 0) p += model_embedding_params(m) / l->tp;     /* RowwiseParallel on vocab */
    if (stage == layout_head_stage(l)) {
        double head = model_output_params(m) - (double)m->hidden; /* untied lm_head, or 0 */
        p += (double)m->hidden + head / l->tp;                    /* norm whole, head Colwise */
    }
    return 2.0 * p; /* bf16 (MixedPrecisionPolicy param_dtype) */
}

double memory_root_at_loss_bytes(const model_spec *m, const layout *l, int stage)
{
    if (stage != layout_head_stage(l)) return 0;
    if (layout_impl_of(l) == IMPL_HF) return memory_root_gathered_bytes(m, l, stage);
    /* CUDA-graphed torchtitan plans are written with fsdp_reshard_after_forward "default"
     * (emit_torchtitan.c; "always" fails at capture, cuda_graphs.h), which keeps the final norm
     * and the output layer gathered from forward into backward (torchtitan b5bcd76
     * distributed/fsdp.py apply_fsdp_to_decoder), with a tied embedding the three: all of the
     * root but an untied embedding (pp 1: one stage holds both) */
    if (cuda_graphs_on(l) && l->reshard_after_forward) {
        double emb = m->tied_embeddings ? 0 : 2.0 * model_embedding_params(m) / l->tp;
        return memory_root_gathered_bytes(m, l, stage) - emb;
    }
    return 0;
}

double memory_logits_held_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    if (!t->hold_logits || !layout_is_pytorch(l) || layout_impl_of(l) == IMPL_HF) return 0;
    return (double)l->mbs * t->seq_len / l->cp * 2.0 * (double)m->vocab / l->tp;
}

double memory_pp_held_outputs_bytes(const model_spec *m, const training_spec *t,
                                    const layout *l, int stage, int microbatches)
{
    if (!t->pp_keep_outputs || !layout_is_pytorch(l) || l->pp < 2 || stage != layout_head_stage(l) ||
        microbatches < 2)
        return 0;
    double per = (double)l->mbs * t->seq_len / l->cp * 2.0 * (double)m->vocab / l->tp;
    return (microbatches - 1) * per;
}

double memory_pp_recv_buffers_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                    int stage, int microbatches, double in_flight)
{
    if (l->framework != FRAMEWORK_TORCHTITAN || l->pp < 2 || microbatches < 1) return 0;
    int v = l->vpp > 1 ? l->vpp : 1, last = l->pp * v - 1;
    int act = 0, grad = 0; /* virtual stages of this rank that receive activations, gradients */
    bool vshape = schedule_is_v(layout_pp_schedule_of(l));
    for (int k = 0; k < v; k++) {
        int s = vshape ? (k == 0 ? stage : 2 * l->pp - 1 - stage) : stage + k * l->pp;
        act += s > 0;
        grad += s < last;
    }
    double per_stage_in_flight = in_flight / v; /* memory_in_flight counts the rank's stages */
    double act_extra = microbatches - per_stage_in_flight;
    if (act_extra < 0) act_extra = 0;
    double tokens = (double)l->mbs * t->seq_len / l->cp / (l->sp && l->tp > 1 ? l->tp : 1);
    return (act * act_extra + (double)grad * microbatches) * tokens * m->hidden * 2.0;
}

double memory_pp_held_rs_input_bytes(const training_spec *t, const layout *l, int microbatches,
                                     double last_block_params)
{
    if (!t->pp_fsdp_rs_held || l->framework != FRAMEWORK_TORCHTITAN ||
        l->sharding != SHARDING_FSDP || l->pp < 2 || microbatches < 2)
        return 0;
    int v = l->vpp > 1 ? l->vpp : 1;
    return v * 4.0 * last_block_params;
}

double memory_pp_merged_outputs_bytes(const model_spec *m, const training_spec *t,
                                      const layout *l, int stage, int microbatches)
{
    if (!t->pp_keep_outputs || !layout_is_pytorch(l) || l->pp < 2 || stage != layout_head_stage(l) ||
        microbatches < 1)
        return 0;
    double per = (double)l->mbs * t->seq_len / l->cp * 2.0 * (double)m->vocab / l->tp;
    return 2.0 * microbatches * per; /* the chunks and their concatenation */
}

bool memory_experts_own_unit(const layout *l, int moe_layers)
{
    return moe_layers > 0 && l->ep > 1 && l->framework == FRAMEWORK_TORCHTITAN &&
           layout_is_pytorch(l) && l->sharding == SHARDING_FSDP;
}

double memory_loss_phase_bytes(const model_spec *m, const layout *l, int stage,
                               double logits_peak_bytes, double all_gathered_bytes)
{
    double root = all_gathered_bytes > 0 ? all_gathered_bytes
                                         : memory_root_at_loss_bytes(m, l, stage);
    return logits_peak_bytes + root;
}

double memory_blocks_phase_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                 int stage, double fsdp_buffer_bytes)
{
    if (stage != layout_head_stage(l)) return fsdp_buffer_bytes;
    /* the output layer's weight gradient (the tied embedding's when tied), bf16, tp-split */
    double head_grad = 2.0 * (double)m->vocab * m->hidden / l->tp;
    return memory_logits_held_bytes(m, t, l) + fsdp_buffer_bytes + head_grad;
}

double memory_backward_end_buffer_bytes(const model_spec *m, const training_spec *t,
                                        const layout *l, double block_params)
{
    double head_grad = 2.0 * (double)m->vocab * m->hidden / l->tp;
    return memory_root_gathered_bytes(m, l, 0) + (2.0 + 2.0 + 4.0) * block_params + head_grad +
           memory_logits_held_bytes(m, t, l);
}
