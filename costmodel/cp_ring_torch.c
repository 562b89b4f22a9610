/*
 * cp_ring_torch.c — the merge and accumulator kernels of PyTorch's ring attention (see
 * cp_ring_torch.h), counted from _templated_ring_attention (line 309), _SDPAMerger (138),
 * _partial_update (113) and _templated_ring_attention_backward (481) of torch 2.11.0's
 * torch/distributed/tensor/experimental/_context_parallel/_attention.py, and checked kernel by
 * kernel against the profiled CP 2 layers of bench/results/cp_ring_2026-11-27.
 *
 * E: elements of this rank's output (and of q, dq); K: elements of k (= v, and dk, dv) as SDPA
 * gets them. Bytes are HBM reads plus writes: a bf16 -> fp32 cast 6 per element, fp32 -> bf16 6,
 * an fp32 binary op 12, fp32 += bf16 10, a fill 4, a copy (cat) twice the element size.
 * Rank c-1 (load balancing sends it all queries against half the keys at every step i >= 1,
 * i <= rank) merges over all E at every step and updates dk, dv by _partial_update (a half add,
 * then a cat of the whole tensor); rank 0 merges half the rows but adds a cat per step: 27
 * against 38 bytes per element and step forward, so rank c-1 sets the pace.
 *
 * Forward, c steps:  out.to(fp32)                          6E  x c (step 0 and each merge)
 *                    out - out_b, sigmoid(..) * (..), out - (..)  12E + 8E + 12E  x (c-1)
 *                    cat(k, v) for the next exchange       8K  x (c-1)
 *                    result .to(bf16)                      6E  x 1
 * Backward:          zeros_like dq (fp32), dk, dv          4E + 2 x 4K
 *                    cat(k, v) for the next exchange       8K  x (c-1)
 *                    step 0: dk += , dv +=  (fp32 += bf16) 2 x 10K
 *                    steps 1..c-1: half add + cat of dk, dv  2 x (5K + 8K)  x (c-1)
 *                    dq += (fp32 += bf16)                  10E x c
 *                    cat(dk, dv) fp32 for the exchange     16K x c
 *                    dq.to(bf16), received dk/dv .to(bf16)  6E + 12K
 * The log-sum-exp's own ops (E / head_dim elements) are left out.
 * At c = 2, E = K (repeated heads): 58 E forward + 136 E backward; the profiled rank 0 of the
 * 32-head, head dim 128, seq 32768 case moved (by the same counting, its half-row merges)
 * 47 E + 137 E in 1.16 + 3.14 ms, 2.87 TB/s = 0.60 of the H200's 4.8: the eager kernels' rate
 * the presets already carry (gpu.eager_elementwise_efficiency_alone, 0.59 as then measured apart; 0.62
 * since refit23 took the loss's log_softmax out of it).
 */
#include "cp_ring_torch.h"

static void put(elementwise_kernel *k, int *n, const char *name, double bytes, int count,
                ew_pattern p, int eo, int ea, int eb, double elems)
{
    if (*n >= ELEMENTWISE_MAX || count <= 0 || bytes <= 0) return;
    k[*n] = (elementwise_kernel){name, bytes, count, ew_contiguous(p, eo, ea, eb, elems), 0};
    (*n)++;
}

bool cp_ring_torch_traced(const layout *l)
{
    return l->framework == FRAMEWORK_TORCHTITAN && l->cp > 1 && l->compile;
}

void cp_ring_torch_kernels(double e, double kv, int cp, bool traced, bool gather,
                           elementwise_list *out)
{
    if (cp < 2 || e <= 0) return;
    int s = cp - 1; /* steps after the local one */
    elementwise_kernel *f = out->fwd, *b = out->bwd;
    int *nf = &out->n_fwd, *nb = &out->n_bwd;
    out->eager = true;
    out->inductor = traced;

    if (traced) {
        /* Inductor fuses a step's cast and merge (out - sigmoid(lse_b - lse) * (out - out_b)):
         * read the fp32 accumulator and the bf16 step output, write the accumulator (the
         * log-sum-exp's own ops left out, as above); step 0's cast stays */
        put(f, nf, "cp.merge.out_to_fp32", 6 * e, 1, EW_UNROLLED, 4, 2, 0, e);
        put(f, nf, "cp.merge.fused", 10 * e, s, EW_OFFSETS, 4, 4, 2, e);
    } else {
        put(f, nf, "cp.merge.out_to_fp32", 6 * e, cp, EW_UNROLLED, 4, 2, 0, e);
        put(f, nf, "cp.merge.diff", 12 * e, s, EW_OFFSETS, 4, 4, 4, e);
        put(f, nf, "cp.merge.scale", 8 * e, s, EW_OFFSETS, 4, 4, 4, e);
        put(f, nf, "cp.merge.update", 12 * e, s, EW_OFFSETS, 4, 4, 4, e);
    }
    int cats = traced && gather ? 1 : s; /* traced: dead cats eliminated (header) */
    put(f, nf, "cp.kv.cat", 8 * kv, cats, EW_VECTORIZED, 2, 2, 0, 2 * kv);
    put(f, nf, "cp.merge.out_to_bf16", 6 * e, 1, EW_VECTORIZED, 2, 4, 0, e);

    put(b, nb, "cp.dq.zeros", 4 * e, 1, EW_VECTORIZED, 4, 0, 0, e);
    put(b, nb, "cp.dkv.zeros", 4 * kv, 2, EW_VECTORIZED, 4, 0, 0, kv);
    put(b, nb, "cp.kv.cat", 8 * kv, cats, EW_VECTORIZED, 2, 2, 0, 2 * kv);
    put(b, nb, "cp.dkv.add", 10 * kv, 2, EW_UNROLLED, 4, 4, 2, kv);
    put(b, nb, "cp.dkv.add_half", 5 * kv, 2 * s, EW_OFFSETS, 4, 4, 2, kv / 2);
    put(b, nb, "cp.dkv.update_cat", 8 * kv, 2 * s, EW_VECTORIZED, 4, 4, 0, kv);
    put(b, nb, "cp.dq.add", 10 * e, cp, EW_UNROLLED, 4, 4, 2, e);
    put(b, nb, "cp.dkv.cat", 16 * kv, cp, EW_VECTORIZED, 4, 4, 0, 2 * kv);
    put(b, nb, "cp.dq.to_bf16", 6 * e, 1, EW_VECTORIZED, 2, 4, 0, e);
    put(b, nb, "cp.dkv.to_bf16", 12 * kv, 1, EW_VECTORIZED, 2, 4, 0, 2 * kv);
}

double cp_ring_torch_dkv_bytes(double kv_elems) { return 2.0 * 4.0 * kv_elems; }
