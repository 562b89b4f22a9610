/*
 * layer_recipe.c — the operations of one layer and of the loss head, and their closed-form
 * price (see layer_recipe.h). The formulas and their sources are the ones estimate.c has always
 * used: Megatron's column/row-parallel projections, Korthikanti et al. 2022 Sec. 4.2.2 for the
 * TP/SP collectives (two per direction, same volume with and without SP), Megatron/TE ring
 * attention and DeepSpeed-Ulysses for CP, Megatron's MoELayer for the router, dispatch, grouped
 * experts and shared experts, the DeepSeek-V2 paper (arXiv 2405.04434, Sec. 2.1.2-2.1.3) for
 * MLA, compute.h for kernels, elementwise.h and fsdp_copies.h for the memory-bound kernels.
 *
 * The order ops are added in is the order the estimate sums each kind in, and the order items
 * are added in is the order the backend issues them in per phase: keep both when editing.
 */
#include "layer_recipe.h"
#include "mcore_moe_host.h"
#include "recipe_builder.h"
#include "recompute_modules.h"

#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "compute.h"
#include "cp_allgather.h"
#include "cp_ring_torch.h"
#include "flops.h"
#include "fsdp_copies.h"
#include "host_dispatch.h"
#include "memory.h"
#include "precision.h"
#include "overlap.h"
#include "async_tp.h"
#include "hf_experts.h"
#include "mcore_expert_gemm.h"
#include "hf_eager_attn.h"
#include "hf_sdpa_math.h"
#include "hf_split_heads.h"
#include "mcore_unfused.h"
#include "titan_moe.h"
#include "expert_loop.h"
#include "moe_dispatch.h"
#include "shard_grads.h"

static const char *kind_names[RECIPE_KINDS] = {
    "gemm", "attention", "elementwise", "fsdp_copy", "tp", "cp", "ep", "fsdp_gather",
    "fsdp_reduce",
};

const char *recipe_kind_name(recipe_kind k)
{
    return (k >= 0 && k < RECIPE_KINDS) ? kind_names[k] : "?";
}


/* An empty recipe (and item list) in l's number format: where recipe_layer and recipe_head
 * start. */
static void recipe_start(builder *b, const layout *l)
{
    rb_precision(b, l);
    b->r->n_ops = 0;
    b->r->local_experts = 0;
    b->r->expert_rows = 0;
    b->r->shared_fwd_s = b->r->shared_bwd_s = 0;
    b->r->host_rs_copy_in_s = 0;
    b->r->host_serial_fwd_s = b->r->host_serial_bwd_s = 0;
    b->r->host_hides_tp = false;
    b->r->ep_overlap_slowdown = b->r->ep_overlap_comm_slowdown = 1;
    b->r->fsdp_bwd_gather = l->reshard_after_forward;
    b->r->eager_beside_keep = 1;
    b->block = RECIPE_BLOCK_OTHER;
    if (b->items) {
        b->items->n = 0;
        b->items->overflow = false;
    }
}

/* ---- FSDP: the unit's copies on the compute stream, its gather (FSDP2's copy-in on its
 * own stream ahead of it joins it) and reduce-scatter on the communication stream */
static void rb_fsdp_unit(builder *b, const model_spec *m, const system_spec *sys,
                         const training_spec *t, const layout *l, bool moe)
{
    recipe *r = b->r;
    double p = memory_layer_params(m, l, moe);
    double copy_in = 0;
    if (fsdp_copies_apply(l)) {
        fsdp_copies fc;
        fsdp_copies_of(l, p, &fc);
        rb_fsdp_copies(b, t, l, &fc);
        copy_in = fsdp_copy_in_s(sys, &fc);
        /* the host's part of the reduce-scatter copy-in: one chunk_cat per FSDP unit;
         * torchtitan wraps an EP block's experts as a unit of their own on the expert-data
         * mesh (apply_fsdp: fully_shard(moe.experts, mesh=edp_mesh) under ep > 1) */
        if (moe && l->ep > 1 && l->framework == FRAMEWORK_TORCHTITAN) {
            double pd, pe;
            memory_layer_params_split(m, l, moe, &pd, &pe);
            r->host_rs_copy_in_s = fsdp_rs_copy_in_host_s(sys, pd, layout_shard_group(l)) +
                                   fsdp_rs_copy_in_host_s(sys, pe, layout_expert_dp(l));
        } else {
            r->host_rs_copy_in_s = fsdp_rs_copy_in_host_s(sys, p, layout_shard_group(l));
        }
        /* torch pipelining reduces each unit once per step, in its last backward (stage.py
         * backward_maybe_with_nosync, fsdp_copies.h): one chunk_cat spread over the
         * micro-batches, as estimate.c spreads the root's exposed traffic */
        int micro = layout_microbatches(l, t);
        if (fsdp_pipelined(l) && !l->reshard_after_forward && micro > 1)
            r->host_rs_copy_in_s /= micro;
    }
    layout_group g = layout_shard_place(sys, l);
    double red = layout_is_pytorch(l) ? 4.0 : (t->grad_reduce_bf16 ? 2.0 : 4.0);
    /* bf16 parameters; torchao's float8 all-gather sends the Linears' weights in FP8, and
     * so does Megatron-FSDP with --fp8-param-gather (precision.h) */
    double gathered = 2.0 * p;
    double lin_bytes = layout_is_pytorch(l) ? b->pr.gather_bytes
                                            : precision_param_gather_bytes(l);
    if (b->lp && lin_bytes < 2.0) {
        double other = model_norm_params(m) + (moe ? model_router_params(m) : 0);
        gathered = 2.0 * other + lin_bytes * (p - other);
    }
    rb_op_add(b, "fsdp.all_gather", RECIPE_FSDP_GATHER, RECIPE_FWD, RECIPE_STREAM_COMM,
           RECIPE_OVERLAP_LAYER, collective_time_s(sys, COLL_ALL_GATHER, gathered, g), 0);
    if (fsdp_copies_apply(l))
        rb_op_add(b, "fsdp.copy_in", RECIPE_FSDP_GATHER, RECIPE_FWD, RECIPE_STREAM_COMM,
               RECIPE_OVERLAP_LAYER, copy_in, 0);
    double up = 0;
    if (l->offload) {
        /* FSDP2 CPUOffloadPolicy: the fp32 shard crosses PCIe before each gather, the
         * gradient shard after each reduce-scatter. */
        double shard = 4.0 * p / layout_shard_group(l);
        up = shard / sys->pcie_bandwidth_bytes_per_s;
        rb_op_add(b, "fsdp.offload_upload", RECIPE_FSDP_GATHER, RECIPE_FWD, RECIPE_STREAM_COMM,
               RECIPE_OVERLAP_LAYER, up, 0);
    }
    rb_op_add(b, "fsdp.reduce_scatter", RECIPE_FSDP_REDUCE, RECIPE_BWD, RECIPE_STREAM_COMM,
           RECIPE_OVERLAP_LAYER, 0, collective_time_s(sys, COLL_REDUCE_SCATTER, red * p, g));
    if (l->offload)
        rb_op_add(b, "fsdp.offload_download", RECIPE_FSDP_REDUCE, RECIPE_BWD,
               RECIPE_STREAM_COMM, RECIPE_OVERLAP_LAYER, 0, up);
}


static void build_layer(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, bool moe, recipe *r, recipe_items *items,
                        recipe_time *price);

void recipe_layer(const model_spec *m, const system_spec *sys, const training_spec *t,
                  const layout *l, bool moe, recipe *r, recipe_items *items)
{
    build_layer(m, sys, t, l, moe, r, items, NULL);
}

void recipe_layer_priced(const model_spec *m, const system_spec *sys, const training_spec *t,
                         const layout *l, bool moe, recipe *r, recipe_time *price)
{
    build_layer(m, sys, t, l, moe, r, NULL, price);
}

/* recipe_layer, and with price (not NULL) r's price (recipe_price) too */
static void build_layer(const model_spec *m, const system_spec *sys, const training_spec *t,
                        const layout *l, bool moe, recipe *r, recipe_items *items,
                        recipe_time *price)
{
    builder bd = {.sys = sys, .r = r, .items = items}, *b = &bd;
    recipe_start(b, l);
    double tokens = (double)l->mbs * t->seq_len / l->cp; /* per GPU, after SP all-gather */
    r->tokens = tokens;
    double tp = l->tp, h = m->hidden, a = m->heads;
    double gate = m->activation == MODEL_ACT_SWIGLU ? 2.0 : 1.0;
    /* Query/key and value head widths: head_dim for GQA; MLA's qk_nope + qk_rope, v_head_dim. */
    double qk = m->mla ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim;
    double vd = m->mla ? m->v_head_dim : m->head_dim;
    rb_tp_ctx tc = {b, l, tokens * h * 2.0, layout_tp_group(sys, l), 0,
                 tokens * h * async_tp_gather_elem_bytes(l), tokens * h * precision_tp_gather_bytes(l),
                 true, t->tp_dgrad_allreduce_sync};
    if (l->tp > 1)
        tc.one_s = l->sp ? collective_time_s(sys, COLL_ALL_GATHER, tc.ag_bytes, tc.g) +
                               collective_time_s(sys, COLL_REDUCE_SCATTER, tc.act_bytes, tc.g)
                         : collective_time_s(sys, COLL_ALL_REDUCE, tc.act_bytes, tc.g);

    /* ---- attention block: QKV (column parallel), core, output projection (row parallel) */
    b->block = RECIPE_BLOCK_ATTENTION;
    int tp_attn = rb_tp_op(&tc, "tp.attention");
    rb_tp_enter(&tc, tp_attn, RECIPE_FWD);
    if (m->mla) {
        /* Multi-head latent attention, as Megatron's MLASelfAttention splits it: the
         * down-projections (queries, when compressed, and the joint KV latent plus the shared
         * RoPE key) replicated on every TP rank, the up-projections column parallel. */
        if (m->q_lora_rank > 0) {
            rb_linear(b, "q_down", tokens, m->q_lora_rank, h);
            rb_linear(b, "q_up", tokens, a * qk / tp, m->q_lora_rank);
        } else {
            rb_linear(b, "q", tokens, a * qk / tp, h);
        }
        rb_linear(b, "kv_down", tokens, m->kv_lora_rank + m->qk_rope_dim, h);
        rb_linear(b, "kv_up", tokens, a * (m->qk_nope_dim + vd) / tp, m->kv_lora_rank);
    } else {
        b->x_saved_fp8 = rb_float8_tp_shard_cast(l) < 1.0;
        b->x_fwd_cast_frac = rb_sp_input_cast_frac(l);
        b->x_sp_gathered = true;
        rb_linear(b, "qkv", tokens, (model_q_dim(m) + 2.0 * model_kv_dim(m)) / tp, h);
        b->x_fwd_cast_frac = 1.0;
        b->x_sp_gathered = false;
    }

    /* Attention core. Flash: compute.h's model, split over the batched GEMMs the backend runs
     * in its place (QK^T and PV forward; FlashAttention-2's backward recomputes the scores, then
     * dV, dP, dQ, dK). Unfused (Megatron 2021-22): batched GEMMs over the full s x s scores,
     * fused scale-mask-softmax, dropout; bytes per score fwd 4 (+5 with dropout), bwd 6 (+5). */
    double attn_fwd, attn_bwd;
    double rows_a = tokens * a / tp;
    double pqk = 0, ppv = 0, pv_fwd = 0, pdv = 0, sm_f = 0, sm_b = 0, sm_f_s = 0, sm_b_s = 0;
    /* Hugging Face transformers builds an explicit boolean mask for its sliding layers once the
     * sequence reaches the window (memory_hf_window_mask_share: masking_utils.sdpa_mask, which
     * is_causal can stand for only on the full layers); SDPA then runs cuDNN's flash kernel
     * with the mask (the kernel names in bench/realruns/results/launch-h100.json), which
     * computes every block of the s x s scores: the non-causal work. Measured there at
     * Phi-3-mini's shape: 1.8x (s 2048) and 2.9x (s 4096) the is_causal time, forward +
     * backward. Where the system has measured rates by shape (attention_rate.h) the masked
     * path's own rate is read instead, over the causal FLOPs the rates are defined with; the
     * full-attention layers (Gemma 2/3) get no mask: is_causal, at the causal rate. */
    double mask_share = memory_hf_window_mask_share(m, t, l);
    bool explicit_mask = mask_share > 0;
    bool causal = t->causal && !explicit_mask;
    training_attention attention = layout_attention_of(m, t, l); /* hf_eager_attn.h */
    bool hf_eager = hf_eager_attn_applies(m, t, l);
    if (attention == ATTENTION_FLASH) {
        double seq_q = t->seq_len / (l->cp > 0 ? l->cp : 1); /* queries per sequence here */
        double rows = tokens / seq_q * a / tp; /* (sequence, head) pairs on this GPU */
        attn_mask mask = explicit_mask ? ATTN_MASK_WINDOW
                         : t->causal   ? ATTN_MASK_CAUSAL
                                       : ATTN_MASK_NONE;
        double f = flops_attention_core_forward(m, tokens, t->seq_len, causal) / tp;
        /* the table's d counts 4 s^2 d FLOPs a (sequence, head): MLA's is (qk + v) / 2 = 160 */
        double fw, bw, hd = 0.5 * (qk + vd);
        if (sys->attention_rates.n > 0 &&
            attn_table_rates(&sys->attention_rates, mask, hd, rows, seq_q, &fw, &bw)) {
            /* The rates of the window mask divide the causal FLOPs, half the s x s scores
             * (bench/attention_sweep.py: "x0.5 for causal and window"), not the window's own
             * count: the masked kernel computes every block whatever the window. Counting the
             * window's scores here priced Phi-3 at seq 4096 (window 2047: 1535.5 keys per
             * query against 2048) 25% short; measured in a real step on one H100,
             * bench/results/sgpu_2026-11-27/phases.json (phi-3-mini-4k cut to 16 layers, seq
             * 4096, mbs 2): the cuDNN kernels take 1.55 ms forward and 4.40 ms backward per
             * layer, the table's point 1.77 and 4.49, the old pricing 1.33 and 3.37. */
            if (explicit_mask)
                f = 0.5 * flops_attention_core_forward(m, tokens, t->seq_len, false) / tp;
            attn_fwd = f / (fw * compute_attention_rate_scale(sys));
            attn_bwd = 2.5 * f / (bw * compute_attention_rate_scale(sys));
            double cfw, cbw, sc = compute_attention_rate_scale(sys); /* full layers: causal */
            if (explicit_mask && mask_share < 1 && t->causal &&
                attn_table_rates(&sys->attention_rates, ATTN_MASK_CAUSAL, hd, rows, seq_q, &cfw,
                                 &cbw)) {
                attn_fwd = mask_share * attn_fwd + (1 - mask_share) * f / (cfw * sc);
                attn_bwd = mask_share * attn_bwd + (1 - mask_share) * 2.5 * f / (cbw * sc);
            }
            if (causal && layout_impl_of(l) == IMPL_TE)
                compute_sliding_attention_s(m, sys, t, tokens / tp, hd, rows, seq_q, fw, bw, &attn_fwd,
                                    &attn_bwd);
        } else {
            attn_fwd = compute_flash_forward_s(sys, f);
            attn_bwd = compute_flash_backward_s(sys, f);
        }
        /* transformers' SDPA call with dropout_p = attention_dropout while training; the
         * scores computed are the FLOPs over 4 hd each (causal: half of s x s). Under the
         * explicit window mask (the sliding layers' share) the kernel computes every score of
         * s x s and its dropout costs more a score, forward and backward (measured on H200,
         * bench/results/sc2step25_2026-11-29: StarCoder2-7B at seq 4096, mbs 2, 1.94 ms
         * forward and 3.27 ms backward a layer over the mask without dropout, against 0.67 and
         * 0.31 at is_causal); the full-attention layers keep the causal count and rate. */
        if (layout_impl_of(l) == IMPL_HF && m->attention_dropout > 0) {
            double full = flops_attention_core_forward(m, tokens, t->seq_len, false) / tp /
                          (4.0 * hd);
            if (explicit_mask)
                compute_sdpa_dropout_add_s(sys, (1 - mask_share) * 0.5 * full, mask_share * full,
                                           &attn_fwd, &attn_bwd);
            else
                compute_sdpa_dropout_add_s(sys, f / (4.0 * hd), 0, &attn_fwd, &attn_bwd);
        }
        /* no fused kernel takes transformers' arguments: SDPA's math backend over the whole
         * s x s at its measured rate (hf_sdpa_math.h) */
        if (hf_sdpa_math_applies(m, t, l))
            hf_sdpa_math_s(sys, m, t, rows_a, &attn_fwd, &attn_bwd);
    } else {
        pqk = compute_gemm_s(sys, rows_a, t->seq_len, qk);
        ppv = compute_gemm_s(sys, rows_a, vd, t->seq_len);
        pv_fwd = pdv = ppv;
        /* transformers' eager P @ V over a slice of odd row stride (hf_eager_attn.h) */
        if (hf_eager) hf_eager_pv_gemm_s(sys, m, t, rows_a, vd, ppv, &pv_fwd, &pdv);
        attn_fwd = pqk + pv_fwd;
        attn_bwd = 2.0 * pqk + ppv + pdv; /* dP, dK; dQ; dV */
        double scores = rows_a * t->seq_len;
        /* Megatron's own attention layer around it (elementwise_legacy.c): the core's copies
         * join its lumps; the QKV Linear's bias and split kernels are ops of their own.
         * transformers' eager attention instead: every kernel over the scores an eager op of
         * its own beside the two batched matmuls (hf_eager_attn.h), no lumps. */
        elementwise_list lc, lq;
        if (hf_eager) {
            lc.n_fwd = lc.n_bwd = 0;
            hf_eager_score_kernels(m, t, l, rows_a, &lq);
        } else {
            elementwise_unfused_softmax(sys, scores, m->dropout, &sm_f, &sm_b, &sm_f_s, &sm_b_s);
            elementwise_megatron_unfused_attention(m, l, tokens, &lc, &lq);
        }
        sm_f += elementwise_bytes(lc.fwd, lc.n_fwd), sm_b += elementwise_bytes(lc.bwd, lc.n_bwd);
        sm_f_s += elementwise_pass_s(sys, &lc, lc.fwd, lc.n_fwd);
        sm_b_s += elementwise_pass_s(sys, &lc, lc.bwd, lc.n_bwd);
        rb_elementwise_ops(b, &lq, lq.fwd, lq.n_fwd, RECIPE_FWD);
        rb_elementwise_ops(b, &lq, lq.bwd, lq.n_bwd, RECIPE_BWD);
        attn_fwd += sm_f_s;
        attn_bwd += sm_b_s;
    }

    /* CP exchange (its items come before the core's in each pass). */
    double ring_merge_e = 0, ring_merge_kv = 0; /* PyTorch's ring: its merges (below) */
    if (l->cp > 1) {
        layout_group gcp = layout_cp_group(sys, l);
        double kvh = m->mla ? a : m->kv_heads; /* MLA: every head has its own key and value */
        if (layout_cp_is_ring(l)) {
            /* Ring attention (Megatron/TE; under torchtitan PyTorch's context_parallel, whose
             * load-balanced head-tail split keeps each rank's causal work equal): cp-1 K/V chunk
             * exchanges forward, K/V and dK/dV backward, on their own stream beside the
             * attention blocks. PyTorch's ring (cp_ring_torch.h) sends the K/V SDPA is called
             * with (every query head's copy where the model repeats them: elementwise.c's
             * repeat_kv), its dK/dV in fp32 (twice the bytes), the last of them exposed. */
            bool torch_ring = l->framework == FRAMEWORK_TORCHTITAN;
            double kv_sent = kvh;
            if (torch_ring && !m->mla && layout_impl_of(l) == IMPL_NATIVE && a > kvh) kv_sent = a;
            double chunk = torch_ring ? cp_torch_kv_bytes(m, t, l) : tokens * kvh * (qk + vd) * 2.0 / tp;
            double p = collective_time_s(sys, COLL_SEND_RECV, chunk, gcp);
            double dkv = torch_ring ? 2.0 * chunk : chunk; /* fp32 under PyTorch */
            double pd = torch_ring ? collective_time_s(sys, COLL_SEND_RECV, dkv, gcp) : p;
            double ring = (l->cp - 1) * p;
            /* torch's default rotate method, all-gather (layout.h cp_rotate_alltoall; cp_allgather.h):
             * the K/V travel as one all-gather, the dK/dV still by the ring */
            bool gather = torch_ring && !l->cp_rotate_alltoall;
            bool traced = torch_ring && cp_ring_torch_traced(l); /* compiled: nothing hides */
            if (gather) {
                cp_allgather_cost g = cp_allgather_price(sys, gcp, chunk, l->cp, attn_fwd, attn_bwd);
                if (traced) g.exposed_fwd_s = g.exposed_bwd_s = g.allgather_s;
                int ag = rb_op_add(b, "cp.kv_allgather", RECIPE_CP, RECIPE_FWD,
                                   RECIPE_STREAM_COMPUTE, RECIPE_OVERLAP_NONE, g.exposed_fwd_s,
                                   g.exposed_bwd_s);
                if (items) {
                    rb_coll_item(b, ag, RECIPE_FWD, "cp.kv_allgather", COLL_ALL_GATHER,
                                 g.gathered_bytes, RECIPE_GROUP_CP, g.allgather_s);
                    rb_coll_item(b, ag, RECIPE_BWD, "cp.kv_allgather", COLL_ALL_GATHER,
                                 g.gathered_bytes, RECIPE_GROUP_CP, g.allgather_s);
                }
            }
            int op = rb_op_add(b, "cp.ring", RECIPE_CP, RECIPE_FWD,
                            traced ? RECIPE_STREAM_COMPUTE : RECIPE_STREAM_COMM,
                            traced ? RECIPE_OVERLAP_NONE : RECIPE_OVERLAP_ATTENTION, gather ? 0 : ring,
                            (gather ? 0 : ring) + (l->cp - 1) * pd);
            for (int i = 0; items && i < l->cp - 1; i++) {
                if (!gather) {
                    rb_coll_item(b, op, RECIPE_FWD, "cp.ring_kv", COLL_SEND_RECV, chunk,
                                 RECIPE_GROUP_CP, p);
                    rb_coll_item(b, op, RECIPE_BWD, "cp.ring_kv", COLL_SEND_RECV, chunk,
                                 RECIPE_GROUP_CP, p);
                }
                rb_coll_item(b, op, RECIPE_BWD, "cp.ring_dkv", COLL_SEND_RECV, dkv,
                          RECIPE_GROUP_CP, pd);
            }
            if (torch_ring) {
                /* The last dK/dV exchange (cp_ring_torch.h item 2): measured exposed at the end
                 * of the backward, 2.2 ms of a 2.64 ms SendRecv at CP 2, seq 32768, 32 heads x
                 * 128 (bench/results/cp_ring_2026-11-27/README.md). */
                int tail = rb_op_add(b, "cp.ring_dkv_tail", RECIPE_CP, RECIPE_BWD,
                                     RECIPE_STREAM_COMPUTE, RECIPE_OVERLAP_NONE, 0, pd);
                rb_coll_item(b, tail, RECIPE_BWD, "cp.ring_dkv_tail", COLL_SEND_RECV, dkv,
                             RECIPE_GROUP_CP, pd);
                ring_merge_e = tokens * a / tp * vd;
                ring_merge_kv = tokens * kv_sent / tp * (qk + vd) / 2.0;
            }
        } else {
            /* Ulysses (DeepSpeed-Ulysses, Jacobs et al. 2023): all-to-all of q, k, v before
             * attention and of the output after; the same backward. Not overlapped. */
            double bytes = tokens * 2.0 * (a * qk + kvh * qk + kvh * vd + a * vd);
            double p = collective_time_s(sys, COLL_ALL_TO_ALL, bytes, gcp);
            int op = rb_op_add(b, "cp.ulysses_a2a", RECIPE_CP, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                            RECIPE_OVERLAP_NONE, p, p);
            rb_coll_item(b, op, RECIPE_FWD, "cp.ulysses_a2a", COLL_ALL_TO_ALL, bytes,
                      RECIPE_GROUP_CP, p);
            rb_coll_item(b, op, RECIPE_BWD, "cp.ulysses_a2a", COLL_ALL_TO_ALL, bytes,
                      RECIPE_GROUP_CP, p);
        }
    }

    int attn = rb_op_add(b, "attn.core", RECIPE_ATTENTION, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                      RECIPE_OVERLAP_NONE, attn_fwd, attn_bwd);
    if (items) {
        /* per sequence: this rank's queries (seq/cp) against the keys they see; heads/tp per
         * rank, mbs sequences: batch = mbs*heads/tp */
        int batch = (int)(l->mbs * (a / tp));
        double sq = (double)t->seq_len / l->cp;
        if (attention == ATTENTION_FLASH) {
            double pf = attn_fwd / 2.0, pb = attn_bwd / 5.0;
            double sk = causal ? t->seq_len / 2.0 : t->seq_len; /* keys per query */
            rb_gemm_item(b, attn, RECIPE_FWD, "attn.qk", RECIPE_FORM_FWD, sq, sk, qk, batch, false,
                      pf);
            rb_gemm_item(b, attn, RECIPE_FWD, "attn.pv", RECIPE_FORM_DGRAD, sq, vd, sk, batch,
                      false, pf);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.qk", RECIPE_FORM_FWD, sq, sk, qk, batch,
                      false, pb);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dv", RECIPE_FORM_WGRAD, sk, vd, sq, batch,
                      false, pb);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dp", RECIPE_FORM_FWD, sq, sk, vd, batch,
                      false, pb);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dq", RECIPE_FORM_DGRAD, sq, qk, sk, batch,
                      false, pb);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dk", RECIPE_FORM_WGRAD, sk, qk, sq, batch,
                      false, pb);
        } else {
            double sk = t->seq_len;
            rb_gemm_item(b, attn, RECIPE_FWD, "attn.qk", RECIPE_FORM_FWD, sq, sk, qk, batch, false,
                      pqk);
            rb_gemm_item(b, attn, RECIPE_FWD, "attn.pv", RECIPE_FORM_DGRAD, sq, vd, sk, batch,
                      false, pv_fwd);
            if (sm_f > 0) rb_lump_item(b, attn, RECIPE_FWD, "attn.softmax", sm_f, sm_f_s);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dv", RECIPE_FORM_WGRAD, sk, vd, sq, batch,
                      false, pdv);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dp", RECIPE_FORM_FWD, sq, sk, vd, batch,
                      false, pqk);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dq", RECIPE_FORM_DGRAD, sq, qk, sk, batch,
                      false, ppv);
            rb_gemm_item(b, attn, RECIPE_BWD, "attn.bwd.dk", RECIPE_FORM_WGRAD, sk, qk, sq, batch,
                      false, pqk);
            if (sm_b > 0) rb_lump_item(b, attn, RECIPE_BWD, "attn.softmax_bwd", sm_b, sm_b_s);
        }
    }

    /* PyTorch's ring: the merges and fp32 accumulators around its SDPA calls (cp_ring_torch.h) */
    if (ring_merge_e > 0) {
        elementwise_list el; /* counts only: zeroing its arrays costs the search (elementwise.c) */
        el.eager = true, el.alone = false, el.inductor = false, el.n_fwd = el.n_bwd = 0;
        cp_ring_torch_kernels(ring_merge_e, ring_merge_kv, l->cp, cp_ring_torch_traced(l),
                              !l->cp_rotate_alltoall, &el);
        rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
        rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
    }

    b->dy_sp_gathered = true;
    rb_linear(b, "attn_out", tokens, h, (m->mla ? a * vd : model_q_dim(m)) / tp);
    b->x_saved_fp8 = b->dy_sp_gathered = false;
    rb_tp_leave(&tc, tp_attn, RECIPE_FWD);
    /* TE's userbuffer overlap or torchtitan's async TP of the attention block (not MLA's: its
     * down-projections are replicated Linears outside the pairs) */
    rb_tp_exposed e, e_attn = {0}, e_mlp = {0};
    if (tp_attn >= 0 && !m->mla &&
        rb_tp_block_overlap(b, &tc, tokens, h, (model_q_dim(m) + 2.0 * model_kv_dim(m)) / tp,
                         model_q_dim(m) / tp, h, &e)) {
        r->op[tp_attn].fwd_s = e.fwd_s;
        r->op[tp_attn].leave_fwd_s = e.leave_fwd_s;
        r->op[tp_attn].bwd_s = e.bwd_s;
        e_attn = e;
        rb_tp_sac_regather(b, &tc, tp_attn, tokens, h, model_kv_dim(m) / tp,
                           model_q_dim(m) / tp, h);
    }

    /* ---- MLP block */
    b->block = RECIPE_BLOCK_MLP;
    /* A dense MLP's SP all-gather / reduce-scatter (or all-reduce). An MoE block has them only
     * for its shared experts (Megatron's SharedExpertMLP is a TP MLP of its own): the routed
     * tokens reach the experts through the dispatcher's collectives, the expert-TP all-gather
     * and reduce-scatter among them (moe_dispatch.h) */
    tc.lp_block = !moe; /* an MoE block's input reaches the experts through its dispatcher */
    int tp_mlp = !moe || m->shared_experts > 0 ? rb_tp_op(&tc, "tp.mlp") : -1;
    rb_tp_enter(&tc, tp_mlp, RECIPE_FWD);
    if (!moe) {
        b->x_saved_fp8 = rb_float8_tp_shard_cast(l) < 1.0;
        b->x_fwd_cast_frac = rb_sp_input_cast_frac(l);
        b->x_sp_gathered = true;
        rb_linear_parts(b, "mlp_up", tokens, gate * m->ffn / tp, h, (int)gate);
        b->x_fwd_cast_frac = 1.0;
        b->x_sp_gathered = false;
        b->dy_sp_gathered = true;
        rb_linear(b, "mlp_down", tokens, h, (double)m->ffn / tp);
        b->x_saved_fp8 = b->dy_sp_gathered = false;
    } else {
        /* MoE block (Megatron's MoELayer): the router over this rank's tokens (its SP shard),
         * the dispatch of top_k copies of the tokens over the EP group, E/ep local experts as
         * one grouped GEMM each for up and down at the busiest rank's rows per expert, the
         * combine, then the shared experts over every token. Each expert GEMM is a roofline
         * with its own weight read and kernel cost: bench/results/moe_grouped_gemm_h100.tsv
         * (torch._grouped_mm at Qwen3-30B-A3B, Mixtral and DeepSeek-V3 shapes, 16-4096 rows
         * per expert) agrees with it, bench/README.md "MoE expert GEMMs". */
        double etp = layout_etp(l);
        double router_rows = l->sp ? tokens / tp : tokens;
        b->keep_bf16 = true; /* the MoE gate stays bf16 (DeepSeek-V3 Sec. 3.3.1) */
        b->block = RECIPE_BLOCK_ATTENTION; /* the router runs before the dispatch, with the
                                              attention block (pre_dispatch_computation) */
        rb_linear(b, "router", router_rows, m->experts, h);
        b->keep_bf16 = false;
        if (l->framework == FRAMEWORK_MEGATRON) {
            /* score function and top-k over the fp32 logits (Megatron --moe-router-dtype fp32,
             * --moe-router-fusion: one fused kernel): read the logits (4E), write the scores
             * (4E) and the routing map (1E) per token; the backward reads the scores' gradient
             * and the scores and writes the logits' gradient (12E). Memory-bound. */
            double e = m->experts, fb = router_rows * e * 9.0, bb = router_rows * e * 12.0;
            int rf = rb_op_add(b, "router.topk", RECIPE_ELEMENTWISE, RECIPE_FWD,
                            RECIPE_STREAM_COMPUTE, RECIPE_OVERLAP_NONE, compute_stream_s(sys, fb),
                            0);
            rb_lump_item(b, rf, RECIPE_FWD, "router.topk", fb, compute_stream_s(sys, fb));
            int rb = rb_op_add(b, "router.topk.bwd", RECIPE_ELEMENTWISE, RECIPE_BWD,
                            RECIPE_STREAM_COMPUTE, RECIPE_OVERLAP_NONE, 0,
                            compute_stream_s(sys, bb));
            rb_lump_item(b, rb, RECIPE_BWD, "router.topk.bwd", bb, compute_stream_s(sys, bb));
        }
        /* dispatch and combine under l's dispatcher (moe_dispatch.h); the busiest EP rank's
         * load factor scales its receive volume and its expert rows: it sets the pace */
        moe_dispatch_cost dc;
        moe_dispatch_price(m, sys, t, l, tokens, &dc);
        b->block = RECIPE_BLOCK_MLP;
        double load = moe_load_factor(t);
        recipe_overlap ep_overlap = RECIPE_OVERLAP_NONE;
        if (l->framework == FRAMEWORK_MEGATRON && t->moe_ep_overlap) {
            ep_overlap = RECIPE_OVERLAP_MICROBATCH;
            r->ep_overlap_slowdown = moe_dispatch_sm_slowdown(sys, &dc);
            r->ep_overlap_comm_slowdown = moe_dispatch_comm_slowdown(&dc);
        }
        else if (l->framework == FRAMEWORK_MEGATRON && t->moe_shared_overlap &&
                 m->shared_experts > 0)
            ep_overlap = RECIPE_OVERLAP_SHARED;
        int dispatch = -1, combine = -1;
        if (l->ep > 1) {
            /* each op's backward is the reverse pattern: the dispatch's a combine, the
             * combine's a dispatch (moe_dispatch.h: FP8 dispatch sends the latter in FP8) */
            dispatch = rb_op_add(b, "ep.dispatch", RECIPE_EP, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                              ep_overlap, dc.dispatch_s, dc.combine_s);
            if (dispatch >= 0) r->op[dispatch].ep_part = RECIPE_EP_DISPATCH;
            rb_coll_item(b, dispatch, RECIPE_FWD, "ep.dispatch", dc.dispatch_op, dc.dispatch_bytes,
                      RECIPE_GROUP_EP, dc.dispatch_s);
        }
        /* alltoall with expert TP: the ETP all-gather after the dispatch (moe_dispatch.h); the
         * backend has no expert-TP group: its items name the TP group, which is the same
         * ranks where it runs MoE layouts (etp == tp, backend/work.c) */
        int etp_gather = -1;
        if (dc.etp_bytes > 0) {
            etp_gather = rb_op_add(b, "ep.etp_gather", RECIPE_EP, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                                RECIPE_OVERLAP_NONE, dc.etp_gather_s, dc.etp_scatter_s);
            rb_coll_item(b, etp_gather, RECIPE_FWD, "ep.etp_gather", COLL_ALL_GATHER, dc.etp_bytes,
                      RECIPE_GROUP_TP, dc.etp_gather_s);
        }
        int local = m->experts / l->ep;
        double rows = tokens * m->top_k * l->ep * etp / ((double)m->experts * tp) * load;
        r->local_experts = local;
        r->expert_rows = rows;
        double up = gate * m->expert_ffn / etp, down_in = m->expert_ffn / etp;
        /* Megatron runs the local experts as grouped GEMMs (--moe-grouped-gemm), torchtitan as
         * torch._grouped_mm (torchtitan b5bcd76 torchtitan/models/common/moe.py:110-120): one
         * kernel's fixed cost for all of them; so does transformers 5.x (hf_experts.h); the
         * fsdp2 trainer path's other model code one GEMM per expert */
        bool loop = expert_loop_applies(t, l); /* torchtitan's per-expert loop (expert_loop.h) */
        int kernels = (l->framework == FRAMEWORK_FSDP2 && !hf_experts_applies(l)) || loop ? local : 1;
        /* Megatron with Transformer Engine: GroupedLinear's GEMM per expert, the weight
         * gradient into main_grad (mcore_expert_gemm.h) */
        bool te = mcore_expert_gemm_applies(l);
        double ob = te ? 2 : 0, wb = te ? mcore_wgrad_out_bytes(t) : 0;
        grouped_form fm = rb_grouped_mm_form(l, kernels, te), fk = fm ? GROUPED_K : fm;
        double f1 = rb_moe_experts_s(b, local, kernels, rows, up, h, ob, fm) +
                    rb_moe_experts_s(b, local, kernels, rows, h, down_in, ob, fm);
        double b1 = rb_moe_experts_fwd_bwd_s(b, local, kernels, rows, up, h, te, wb, fm) +
                    rb_moe_experts_fwd_bwd_s(b, local, kernels, rows, h, down_in, te, wb, fm);
        int ex = rb_op_add(b, "experts", RECIPE_GEMM, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                        RECIPE_OVERLAP_NONE, f1, 0);
        if (ex >= 0) {
            r->op[ex].fwd_bwd_s = b1;
            r->op[ex].bwd_s = r->op[ex].fwd_bwd_s - r->op[ex].fwd_s;
        }
        if (hf_experts_applies(l)) rb_hf_routing_ops(b, m, l, tokens, ex);
        else if (titan_moe_applies(l))
            rb_titan_routing_ops(b, m, l, tokens, rows * local, ex, t->moe_gather_routing, !loop);
        if (loop) rb_expert_loop_ops(b, m, l, local, rows * local, ex, t->moe_new_count_share);
        if (mcore_expert_bias_applies(m, l)) { /* fc2's bias, per expert (mcore_unfused.h) */
            elementwise_list el;
            mcore_expert_bias(m, l, local, rows, &el);
            rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
            rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
        }
        if (mcore_clamped_glu_applies(m, l)) { /* the activation's clamps (mcore_unfused.h) */
            elementwise_list el;
            mcore_clamped_glu(m, l, rows * local, &el);
            rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
            rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
        }
        if (items) {
            /* grouped GEMMs: batch = local experts, one weight each; a kernel per expert
             * where the recipe prices one (kernels == local) */
            int first_item = items->n;
            rb_gemm_item(b, ex, RECIPE_FWD, "experts_up", RECIPE_FORM_FWD, rows, up, h, local, true,
                      rb_moe_experts_s(b, local, kernels, rows, up, h, ob, fm));
            rb_gemm_item(b, ex, RECIPE_BWD, "experts_up.dgrad", RECIPE_FORM_DGRAD, rows, h, up,
                      local, true, rb_moe_experts_s(b, local, kernels, rows, h, up, ob, fm));
            rb_gemm_item(b, ex, RECIPE_BWD, "experts_up.wgrad", RECIPE_FORM_WGRAD, up, h, rows,
                      local, false, rb_moe_experts_s(b, local, kernels, h, up, rows, wb, fk));
            rb_gemm_item(b, ex, RECIPE_FWD, "experts_down", RECIPE_FORM_FWD, rows, h, down_in,
                      local, true, rb_moe_experts_s(b, local, kernels, rows, h, down_in, ob, fm));
            rb_gemm_item(b, ex, RECIPE_BWD, "experts_down.dgrad", RECIPE_FORM_DGRAD, rows, down_in,
                      h, local, true, rb_moe_experts_s(b, local, kernels, rows, down_in, h, ob, fm));
            rb_gemm_item(b, ex, RECIPE_BWD, "experts_down.wgrad", RECIPE_FORM_WGRAD, h, down_in,
                      rows, local, false, rb_moe_experts_s(b, local, kernels, down_in, h, rows, wb, fk));
            for (int i = first_item; i < items->n; i++)
                items->item[i].looped = kernels > 1 && local > 1;
        }
        double qf = b->quant_fwd_bytes, qb = b->quant_bwd_bytes;
        rb_quantize_ops(b, rows, up, h, local);
        rb_quantize_ops(b, rows, h, down_in, local);
        rb_expert_quantize_split(b, local, b->quant_fwd_bytes - qf, b->quant_bwd_bytes - qb);
        if (dc.etp_bytes > 0) {
            int sc = rb_op_add(b, "ep.etp_scatter", RECIPE_EP, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                            RECIPE_OVERLAP_NONE, dc.etp_scatter_s, dc.etp_gather_s);
            rb_coll_item(b, sc, RECIPE_FWD, "ep.etp_scatter", COLL_REDUCE_SCATTER, dc.etp_bytes,
                      RECIPE_GROUP_TP, dc.etp_scatter_s);
            rb_coll_item(b, sc, RECIPE_BWD, "ep.etp_scatter.bwd", COLL_ALL_GATHER, dc.etp_bytes,
                      RECIPE_GROUP_TP, dc.etp_gather_s);
            rb_coll_item(b, etp_gather, RECIPE_BWD, "ep.etp_gather.bwd", COLL_REDUCE_SCATTER,
                      dc.etp_bytes, RECIPE_GROUP_TP, dc.etp_scatter_s);
        }
        if (l->ep > 1) {
            combine = rb_op_add(b, "ep.combine", RECIPE_EP, RECIPE_FWD, RECIPE_STREAM_COMPUTE,
                             ep_overlap, dc.combine_s, dc.dispatch_s);
            if (combine >= 0) r->op[combine].ep_part = RECIPE_EP_COMBINE;
            rb_coll_item(b, combine, RECIPE_FWD, "ep.combine", dc.combine_op, dc.combine_bytes,
                      RECIPE_GROUP_EP, dc.combine_s);
            /* the backward reverses each: the combine's gradient is dispatched, the
             * dispatch's combined */
            rb_coll_item(b, combine, RECIPE_BWD, "ep.combine.bwd", dc.dispatch_op,
                      dc.dispatch_bytes, RECIPE_GROUP_EP, dc.dispatch_s);
            rb_coll_item(b, dispatch, RECIPE_BWD, "ep.dispatch.bwd", dc.combine_op,
                      dc.combine_bytes, RECIPE_GROUP_EP, dc.combine_s);
        }
        if (m->shared_experts) {
            double sw = (double)m->shared_experts * m->shared_ffn;
            int su = b->r->n_ops;
            rb_linear_parts(b, "shared_up", tokens, gate * sw / tp, h, (int)gate);
            rb_linear(b, "shared_down", tokens, h, sw / tp);
            for (int i = su; i < b->r->n_ops; i++) {
                r->shared_fwd_s += r->op[i].fwd_s;
                r->shared_bwd_s += r->op[i].bwd_s;
            }
        }
    }
    rb_tp_leave(&tc, tp_mlp, RECIPE_FWD);
    /* the dense MLP's fc1/fc2 pairs (an MoE block's tokens reach the experts through the
     * dispatcher's own collectives) */
    if (tp_mlp >= 0 && !moe &&
        rb_tp_block_overlap(b, &tc, tokens, h, gate * m->ffn / tp, (double)m->ffn / tp, h, &e)) {
        r->op[tp_mlp].fwd_s = e.fwd_s;
        r->op[tp_mlp].leave_fwd_s = e.leave_fwd_s;
        r->op[tp_mlp].bwd_s = e.bwd_s;
        e_mlp = e;
        if (gate > 1) rb_tp_sac_regather(b, &tc, tp_mlp, tokens, h, m->ffn / tp, m->ffn / tp, h);
    }

    /* ---- norms, RoPE, activation, residual adds, the backward's gradient accumulation: Hugging
     * Face eager kernels under FSDP2, Transformer Engine's fused ones under Megatron */
    b->block = RECIPE_BLOCK_OTHER;
    {
        elementwise_list el;
        elementwise_layer(m, l, tokens, moe, &el);
        /* repeat_kv before SDPA on the masked layers, before every eager attention, or
         * Falcon's own copies (hf_split_heads.h) */
        hf_split_heads_kernels(m, t, l, tokens, hf_eager, &el);
        rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
        rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
        if (moe && expert_loop_applies(t, l)) rb_expert_loop_act(r, m->experts / l->ep);
        if (mcore_unfused_rope_applies(m, l)) { /* YaRN RoPE, unfused (mcore_unfused.h) */
            mcore_unfused_rope(m, l, tokens, t->seq_len / (l->cp > 0 ? l->cp : 1), &el);
            rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
            rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
        }
        if (mcore_unfused_mla_rope_applies(m, l)) { /* MLA's RoPE, unfused (mcore_unfused.h) */
            b->block = RECIPE_BLOCK_ATTENTION; /* before the dispatch: the attention's side */
            mcore_unfused_mla_rope(m, l, tokens, t->seq_len / (l->cp > 0 ? l->cp : 1), &el);
            rb_elementwise_ops(b, &el, el.fwd, el.n_fwd, RECIPE_FWD);
            rb_elementwise_ops(b, &el, el.bwd, el.n_bwd, RECIPE_BWD);
            b->block = RECIPE_BLOCK_OTHER;
        }
    }
    rb_quantize_flush(b);
    /* the backward's TP collectives: the same two per block, the gathers in bf16 (Megatron's
     * NCCL path: three, recipe_tp.c tp_nccl_block) */
    rb_tp_backward_items(&tc, tp_attn, &e_attn);
    rb_tp_backward_items(&tc, tp_mlp, &e_mlp);

    rb_grad_accum_op(b, t, l, memory_layer_params(m, l, moe)); /* unfused sums (grad_accum.h) */
    if (l->sharding == SHARDING_FSDP) rb_fsdp_unit(b, m, sys, t, l, moe);
    else if (layout_zero2(l)) rb_shard_grads_unit(b, t, l, memory_layer_params(m, l, moe));
    recipe_eager_beside(r, l, items);

    recipe_set_recompute(sys, m, l, r, moe, false);
    if (items) {
        int n = items->n;
        int copied[RECIPE_MAX_OPS] = {0};
        for (int i = 0; i < n; i++) {
            const recipe_item *src = &items->item[i];
            if (src->phase != RECIPE_FWD || src->op < 0 || !r->op[src->op].recompute) continue;
            if (r->op[src->op].kind == RECIPE_ELEMENTWISE &&
                copied[src->op] >= r->op[src->op].recompute_launches)
                continue;
            if (r->op[src->op].recompute_enter_only && src->kind == RECIPE_ITEM_COLL &&
                src->coll != COLL_ALL_GATHER)
                continue;
            copied[src->op]++;
            if (items->n >= RECIPE_MAX_ITEMS) {
                items->overflow = true;
                break;
            }
            recipe_item *it = &items->item[items->n++];
            *it = *src;
            it->phase = RECIPE_RECOMPUTE;
            char nm[32];
            snprintf(nm, sizeof nm, "re.%.28s", src->name);
            snprintf(it->name, sizeof it->name, "%s", nm);
        }
    }
    if (price) rb_pace_priced(sys, m, l, r, moe, price);
    else host_dispatch_pace(sys, m, l, r, true, moe);
}

static void fsdp_from(const model_spec *m, const system_spec *sys, const training_spec *t,
                      const layout *l, bool moe, const recipe *base, recipe *r,
                      recipe_time *price);

void recipe_layer_fsdp_from(const model_spec *m, const system_spec *sys, const training_spec *t,
                            const layout *l, bool moe, const recipe *base, recipe *r)
{
    fsdp_from(m, sys, t, l, moe, base, r, NULL);
}

void recipe_layer_fsdp_from_priced(const model_spec *m, const system_spec *sys,
                                   const training_spec *t, const layout *l, bool moe,
                                   const recipe *base, recipe *r, recipe_time *price)
{
    fsdp_from(m, sys, t, l, moe, base, r, price);
}

/* recipe_layer_fsdp_from, and with price (not NULL) r's price too */
static void fsdp_from(const model_spec *m, const system_spec *sys, const training_spec *t,
                      const layout *l, bool moe, const recipe *base, recipe *r,
                      recipe_time *price)
{
    /* base's fields and its ops, not the unused room after them (rb_op_add sets every field
     * of an op it adds) */
    memcpy(r, base, offsetof(recipe, op) + (size_t)base->n_ops * sizeof base->op[0]);
    builder bd = {.sys = sys, .r = r, .items = NULL}, *b = &bd;
    rb_precision(b, l);
    b->block = RECIPE_BLOCK_OTHER; /* where recipe_layer adds the unit */
    r->fsdp_bwd_gather = l->reshard_after_forward;
    /* the unfused gradient sums as this layout has them, where recipe_layer adds them: just
     * before the unit (grad_accum.h) */
    if (r->n_ops > 0 && !strcmp(r->op[r->n_ops - 1].name, "grad_accum")) r->n_ops--;
    rb_grad_accum_op(b, t, l, memory_layer_params(m, l, moe));
    rb_fsdp_unit(b, m, sys, t, l, moe);
    recipe_eager_beside(r, l, NULL);
    recipe_set_recompute(sys, m, l, r, moe, false);
    if (price) rb_pace_priced(sys, m, l, r, moe, price);
    else host_dispatch_pace(sys, m, l, r, true, moe);
}

/* host_dispatch_pace(sys, m, l, r, true, moe), then recipe_price(r, price): a Megatron MoE
 * layer's pacing prices r without the host's floors, and the price with them follows from
 * that one (mcore_moe_host_pace_priced), so r is priced once, not twice. */
void rb_pace_priced(const system_spec *sys, const model_spec *m, const layout *l, recipe *r,
                    bool moe, recipe_time *price)
{
    if (moe && mcore_moe_host_applies(sys, l)) { /* host_dispatch_pace's branch for it */
        mcore_moe_host_pace_priced(sys, m, l, r, price);
    } else {
        host_dispatch_pace(sys, m, l, r, true, moe);
        recipe_price(r, price);
    }
}

void recipe_head(const model_spec *m, const system_spec *sys, const training_spec *t,
                 const layout *l, recipe *r, recipe_items *items)
{
    recipe_head_mtp(m, sys, t, l, NULL, r, items);
}

void recipe_head_mtp(const model_spec *m, const system_spec *sys, const training_spec *t,
                     const layout *l, const recipe *mtp_layer, recipe *r, recipe_items *items)
{
    builder bd = {.sys = sys, .r = r, .items = items, .mtp_layer = mtp_layer}, *b = &bd;
    recipe_start(b, l);
    double tokens = (double)l->mbs * t->seq_len / l->cp;
    r->tokens = tokens;
    rb_output_head(b, m, l, tokens);
    /* Megatron's multi-token-prediction modules, each with its own pass of the output layer
     * (recipe_mtp.c) */
    rb_mtp_modules(b, m, t, l, tokens);
    /* FSDP2: the compute-stream copies of the last stage's root unit (final norm, output
     * layer); its copy-in and traffic are the stage's (estimate.c root_traffic) */
    double p = fsdp_root_params(m, l, l->pp - 1) / l->tp;
    if (fsdp_copies_apply(l) && p > 0) {
        fsdp_copies fc;
        fsdp_copies_of(l, p, &fc);
        rb_fsdp_copies(b, t, l, &fc);
    }
    host_dispatch_pace(sys, m, l, r, false, false);
}
