/*
 * elementwise.c — the memory-bound kernels of a decoder layer and of the loss head (see
 * elementwise.h). Bytes are per launch, bf16 = 2 and fp32 = 4 bytes per element, read plus
 * written; tensors of one value per token ([T, 1]: RMSNorm's variance, its rsqrt and their
 * gradients) and broadcast [seq, head_dim] tables (RoPE cos/sin) are left out. T below is the
 * tokens a kernel runs over, h the hidden size, q/kv the widths of q and of k, f the FFN width.
 *
 * The eager list, op by op (transformers modeling_llama.py; PyTorch tools/autograd/
 * derivatives.yaml entries _to_copy, pow.Tensor_Scalar, mean.dim, rsqrt, mul.Tensor, neg,
 * slice.Tensor, cat, view, silu, _log_softmax, nll_loss_forward, and FunctionsManual.cpp):
 *   LlamaRMSNorm: 36 bytes per element forward, 92 backward (elementwise_norm.c).
 *   RoPE q * cos + rotate_half(q) * sin, per element of q (or k): q * cos 4, neg(x2) 2 (half
 *     the width), cat 4, * sin 4, add 6 = 20. Backward: grad * sin and grad * cos 4 each, cat
 *     backward is views, neg 2, slice_backward_wrapper (FunctionsManual.cpp) -> zeros of the
 *     full width 2 and a copy into the half 2, for each of x1 and x2; the three gradients of q
 *     accumulate with two adds of 6; view backward is grad.reshape(), a copy 4 since the
 *     accumulated gradient is contiguous in [b, heads, s, d] (slice_backward's zeros) = 34.
 *   SwiGLU act_fn(gate) * up: silu 4f, mul 6f; backward grad * up and grad * silu 6f each,
 *     silu_backward 6f.
 *   Residual adds 6h each; backward: add passes the gradient through, but every tensor read
 *   twice gets its two gradients summed (autograd InputBuffer): the residual stream twice, the
 *   attention input twice (separate q, k, v projections), the MLP input once (gate, up).
 * The attention core (SDPA; a view when the output keeps q's layout) and the GEMMs are priced
 * elsewhere. Not derived, the former simple counts kept: LayerNorm (one fused native kernel, 4h,
 * backward 8h), GeLU (4f, backward 8f), dropout masks (2h, backward 4h), the MoE token permutes
 * (8h per routed copy, backward 16h); MoE experts are one SwiGLU over all routed rows.
 *
 * Each entry carries the kernel PyTorch runs for it (ew_access, elementwise.h), from the op's
 * operands: contiguous same-dtype ops are vectorized (silu, the SwiGLU and residual products
 * and sums, pow, the fp32 products of the norm backward, fills, x.pow(1)'s Memcpy, fp32->bf16
 * casts); bf16->fp32 casts take the unrolled LoadWithCast path; a broadcast operand (the norm
 * weight [h], rstd [T, 1], RoPE's cos/sin [s, d] over heads, mean_backward's expand) or a
 * strided one (rotate_half's slices, q in q_proj's [b, s, heads, d] layout beside [b, heads, s,
 * d] tensors, slice_backward's copies, view backward's reshape) the per-element offset path;
 * torch.cat CatArrayBatchedCopy; mean/sum over h and sum_to [h] reductions; log_softmax and its
 * backward the softmax kernels. The simple counts (LayerNorm, GeLU, dropout, MoE permutes) and
 * Megatron's fused lumps run as vectorized kernels reading half the bytes and writing half.
 */
#include "elementwise.h"

#include <string.h>

#include "async_tp.h"
#include "compute.h"
#include "gather_moe.h"
#include "hf_ernie_rope.h"
#include "hf_experts.h"
#include "hf_xielu.h"
#include "mcore_expert_gemm.h"
#include "mcore_unfused.h"
#include "precision.h"
#include "softmax_rows.h"
#include "titan_moe.h"
#include "elementwise_internal.h"
#include "hf_eager_attn.h"

ew_access ew_contiguous(ew_pattern p, int eo, int ea, int eb, double elems)
{
    return contig(p, eo, ea, eb, elems);
}

/* RoPE's shapes over t tokens, hd heads of d (bf16). q (and k) keep q_proj's [b, s, heads, d]
 * layout, a view [b, heads, s, d]; cos/sin are [s, d] tables broadcast over heads (the batch
 * folded into the rows). */
typedef enum {
    ROPE_MUL,       /* q * cos (and rot * sin, grad * cos, grad * sin): cos over heads */
    ROPE_NEG,       /* -x2: the second half of q's last dim (row stride d) */
    ROPE_CAT,       /* cat((-x2, x1), -1): logical [heads, s, d/2] inputs, -x2 in neg's layout
                       [s, heads, d/2], x1 a slice of q; output contiguous [heads, s, d] */
    ROPE_ADD_MIXED, /* q*cos (q's layout) + rot*sin ([heads, s, d]): the output follows the first */
    ROPE_SLICE,     /* slice_backward: a half-width gradient into the zeros' half (row stride d) */
    ROPE_VIEW,      /* view backward's reshape: [heads, s, d] contiguous into q_proj's layout */
} rope_op;

static ew_access rope_access(rope_op op, double t, double hd, double d)
{
    long T = L(t), H = L(hd), D = L(d), D2 = L(d / 2);
    ew_access a = {.pattern = EW_OFFSETS, .esize = {2, 2, 0}};
    switch (op) {
    case ROPE_MUL:
        a.esize[2] = 2;
        a.n[0] = T, a.n[1] = H, a.n[2] = D;
        for (int k = 0; k < 2; k++) a.stride[k][0] = H * D, a.stride[k][1] = D, a.stride[k][2] = 1;
        a.stride[2][0] = D, a.stride[2][2] = 1;
        break;
    case ROPE_NEG:
        a.n[0] = 1, a.n[1] = T * H, a.n[2] = D2;
        a.stride[0][1] = D2, a.stride[0][2] = 1;
        a.stride[1][1] = D, a.stride[1][2] = 1;
        break;
    case ROPE_CAT:
        a.pattern = EW_CAT;
        a.esize[2] = 2;
        a.n[0] = H, a.n[1] = T, a.n[2] = D2;
        a.stride[0][0] = T * D, a.stride[0][1] = D, a.stride[0][2] = 1;
        a.stride[1][0] = D2, a.stride[1][1] = H * D2, a.stride[1][2] = 1;
        a.stride[2][0] = D, a.stride[2][1] = H * D, a.stride[2][2] = 1;
        break;
    case ROPE_ADD_MIXED:
        a.esize[2] = 2;
        a.n[0] = T, a.n[1] = H, a.n[2] = D;
        for (int k = 0; k < 2; k++) a.stride[k][0] = H * D, a.stride[k][1] = D, a.stride[k][2] = 1;
        a.stride[2][0] = D, a.stride[2][1] = T * D, a.stride[2][2] = 1;
        break;
    case ROPE_SLICE:
        a.n[0] = 1, a.n[1] = T * H, a.n[2] = D2;
        a.stride[0][1] = D, a.stride[0][2] = 1;
        a.stride[1][1] = D2, a.stride[1][2] = 1;
        break;
    case ROPE_VIEW:
        a.n[0] = T, a.n[1] = H, a.n[2] = D;
        a.stride[0][0] = H * D, a.stride[0][1] = D, a.stride[0][2] = 1;
        a.stride[1][0] = D, a.stride[1][1] = T * D, a.stride[1][2] = 1;
        break;
    }
    return a;
}

/* q * cos + rotate_half(q) * sin over t rows of width w, heads of d (header comment: 20 and 34
 * bytes). Of the backward's two gradient sums one adds contiguous [heads, s, d] tensors
 * (vectorized), the other q*cos's gradient in q's layout to them (mixed layouts). */
static void rope(pass f, pass b, double t, double w, double d, bool is_q, bool view_copy)
{
    double e = t * w, hd = w / d;
#define N(s) (is_q ? "rope.q." s : "rope.k." s)
    add(f, N("mul"), 4 * e, 2, rope_access(ROPE_MUL, t, hd, d));
    add(f, N("neg"), 2 * e, 1, rope_access(ROPE_NEG, t, hd, d));
    add(f, N("cat"), 4 * e, 1, rope_access(ROPE_CAT, t, hd, d));
    add(f, N("add"), 6 * e, 1, rope_access(ROPE_ADD_MIXED, t, hd, d));
    add(b, N("bwd.mul"), 4 * e, 2, rope_access(ROPE_MUL, t, hd, d));
    add(b, N("bwd.neg"), 2 * e, 1, rope_access(ROPE_NEG, t, hd, d));
    add(b, N("bwd.zeros"), 2 * e, 2, vec(2, 0, 0, e));
    add(b, N("bwd.slice_copy"), 2 * e, 2, rope_access(ROPE_SLICE, t, hd, d));
    add(b, N("bwd.add"), 6 * e, 1, vec(2, 2, 2, e));
    add(b, N("bwd.add_mixed"), 6 * e, 1, rope_access(ROPE_ADD_MIXED, t, hd, d));
    if (view_copy) add(b, N("bwd.view_copy"), 4 * e, 1, rope_access(ROPE_VIEW, t, hd, d));
#undef N
}

/* The MLP activation over t rows of FFN width w: SwiGLU derived, GeLU the simple count. */
static void activation(const model_spec *m, pass f, pass b, double t, double w, const char *fn,
                       const char *fm, const char *bm, const char *bs)
{
    double e = t * w;
    if (m->activation == MODEL_ACT_SWIGLU) {
        add(f, fn, 4 * e, 1, vec(2, 2, 0, e));
        add(f, fm, 6 * e, 1, vec(2, 2, 2, e));
        add(b, bm, 6 * e, 2, vec(2, 2, 2, e));
        add(b, bs, 6 * e, 1, vec(2, 2, 2, e));
    } else {
        add(f, fn, 4 * e, 1, vec(2, 2, 0, e));
        add(b, bs, 8 * e, 1, lump(8 * e));
    }
}

/* The PyTorch-native model (impl native: torchtitan's llama3 as bench/realruns/native_llama.py
 * writes it), op by op where it differs from Hugging Face's:
 *   nn.RMSNorm -> F.rms_norm, one fused CUDA kernel in torch 2.11 (aten _fused_rms_norm: reads
 *     x and the weight, writes y in bf16: 4 bytes per element; the fp32 rstd [T,1] is left out);
 *     its backward one kernel reading grad and x and writing dx (6) and the weight's gradient
 *     reduced over the rows (a [h] sum of grad * x_hat, 4: bf16 reads of grad and x again).
 *   RoPE through complex numbers (apply_rotary_emb): xq.float() 6, view_as_complex * freqs_cis
 *     (complex64 [s, d/2] broadcast over heads) reads and writes fp32 8, .type_as(xq) 6: 20
 *     bytes per element of q or k, three kernels; backward the same three (the conjugate
 *     product between the casts).
 *   repeat_kv: k and v expanded to every query head and copied (reshape of an expand) before
 *     SDPA: per element of the repeated tensor read 2 / (heads/kv_heads), write 2; backward a
 *     sum over the repeats (a reduction reading 2 per repeated element, writing the kv width).
 * SwiGLU, residual adds and gradient sums are the same ops as Hugging Face's. */
static void native_rms_norm(pass f, pass b, double t, double w, int count)
{
    double e = t * w;
    add(f, "rms_norm.fused", 4 * e, count, vec(2, 2, 0, e));
    add(b, "rms_norm.bwd.fused", 6 * e, count, vec(2, 2, 2, e));
    add(b, "rms_norm.bwd.weight", 4 * e, count, reduce(EW_REDUCE_COL, 2, 2, t, w));
}

static void native_rope(pass f, pass b, double t, double w, bool is_q)
{
    double e = t * w;
#define N(s) (is_q ? "rope_complex.q." s : "rope_complex.k." s)
    add(f, N("to_fp32"), 6 * e, 1, contig(EW_UNROLLED, 4, 2, 0, e));
    add(f, N("mul"), 8 * e, 1, bcast(4, t, w, false));
    add(f, N("to_bf16"), 6 * e, 1, vec(2, 4, 0, e));
    add(b, N("bwd.to_fp32"), 6 * e, 1, contig(EW_UNROLLED, 4, 2, 0, e));
    add(b, N("bwd.mul"), 8 * e, 1, bcast(4, t, w, false));
    add(b, N("bwd.to_bf16"), 6 * e, 1, vec(2, 4, 0, e));
#undef N
}

/* repeat_kv's backward (expand's: sum_to over n_rep) reads the gradient of the repeated tensor
 * as [t * kv_heads, n_rep, d] (n_rep at stride d, d contiguous) and sums the middle dimension:
 * the reduced dimension is not the fastest-moving one, so Reduce.cuh's setReduceConfig puts
 * the outputs (d contiguous, 4 per thread) on block.x and the n_rep inputs on block.y, as it
 * does for a column sum, once per (token, kv head): a batched EW_REDUCE_COL. (Read as a row
 * sum of n_rep contiguous elements, the backend launched a warp per output: 34x the predicted
 * time, bench/results/meas12_2026-11-28.) */
static ew_access reduce_mid(int e, double outer, double r, double d)
{
    ew_access a = {.pattern = EW_REDUCE_COL, .esize = {e, e, 0}, .n = {L(outer), L(r), L(d)}};
    a.stride[1][0] = L(r) * L(d), a.stride[1][1] = L(d), a.stride[1][2] = 1;
    a.stride[0][0] = L(d), a.stride[0][2] = 1;
    return a;
}

/* share: the fraction of the layers that run it (the bytes of the mean layer); copy: false
 * where the expand + reshape is a view (one KV head: elementwise_hf_repeat_kv) */
static void repeat_kv(pass f, pass b, double t, double qw, double kw, double d, double share,
                      bool copy)
{
    if (qw <= kw || share <= 0) return;
    double e = t * qw; /* elements of the repeated k (and v) */
    double r = 2.0 + 2.0 * kw / qw;
    if (copy) add(f, "repeat_kv.copy", share * r * e, 2, vec(2, 2, 0, e));
    add(b, "repeat_kv.bwd.sum", share * r * e, 2, reduce_mid(2, t * kw / d, qw / kw, d));
}

void elementwise_hf_repeat_kv(const model_spec *m, const layout *l, double tokens, double share,
                              elementwise_list *out)
{
    if (share <= 0 || m->mla || !out->eager || layout_impl_of(l) != IMPL_HF) return;
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double qw = m->heads * (double)m->head_dim / l->tp;
    double kw = m->kv_heads * (double)m->head_dim / l->tp;
    repeat_kv(f, b, tokens, qw, kw, m->head_dim, share, m->kv_heads > 1);
}

/* A torch.compile'd native block (impl native, --compile; issue 14): the kernels Inductor
 * generates for bench/realruns/native_llama.py's block (torchtitan's Llama), read off
 * torch.profiler traces on one H200 (bench/compiled_kernels.py; kernel names, counts and times
 * per layer in bench/results/compiled13_2026-11-28). Per token, bf16 2 / fp32 4 bytes read plus
 * written, widths per GPU (q: qw, k and v: kw, hidden h over the norm rows, FFN f):
 *   forward: input norm 4h; q and k cast to fp32 complex 6qw, 6kw (Qwen3's q/k norms fused into
 *   these); the products with freqs_cis 8qw, 8kw, left to aten (Inductor generates no complex
 *   code: eager elementwise_kernel launches in the trace); q back to bf16 6qw; k back to bf16
 *   while repeated to the query heads 4kw + 2qw, v repeated 2kw + 2qw (kv heads < heads; else
 *   k's cast 6kw); residual add + MLP norm 8h; SiLU(gate) * up 6f; residual add 6h.
 *   backward: SwiGLU's 10f (grad, gate, up read; both gradients written); each norm's input
 *   gradient with the gradients of its consumers summed in (attention norm: q, k, v projections
 *   and the residual, 12h; MLP norm: gate, up and the residual, 10h) and its weight gradient 4h
 *   each; q's gradient to fp32 complex 6qw; the conjugate products 8qw, 8kw (aten); k's gradient
 *   summed over the repeats into fp32 complex 2qw + 4kw, v's summed 2qw + 2kw; q and k back to
 *   bf16 6qw, 6kw; Qwen3's q/k norms' backward 8 (qw + kw) (fp32 gradient, bf16 input read,
 *   bf16 gradient written). Inductor keeps the same saved tensors as eager here; the dense
 *   block only (a MoE block keeps the fused lumps). */
static void inductor_native_layer(const model_spec *m, const layout *l, double tokens,
                                  elementwise_list *out)
{
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double tp = l->tp, h = m->hidden;
    double tr = l->sp ? tokens / tp : tokens;
    double eh = tr * h, eq = tokens * m->heads * m->head_dim / tp;
    double ek = tokens * m->kv_heads * m->head_dim / tp, ef = tokens * m->ffn / tp;
    bool gqa = eq > ek;
    out->inductor = true;
    add(f, "inductor.rms_norm", 4 * eh, 1, vec(2, 2, 0, eh));
    add(f, "inductor.rope.q.to_complex", 6 * eq, 1, contig(EW_UNROLLED, 4, 2, 0, eq));
    add(f, "inductor.rope.k.to_complex", 6 * ek, 1, contig(EW_UNROLLED, 4, 2, 0, ek));
    add(f, "aten.rope.q.complex_mul", 8 * eq, 1, bcast(4, tokens, eq / tokens, false));
    add(f, "aten.rope.k.complex_mul", 8 * ek, 1, bcast(4, tokens, ek / tokens, false));
    add(f, "inductor.rope.q.to_bf16", 6 * eq, 1, vec(2, 4, 0, eq));
    if (gqa) {
        add(f, "inductor.repeat_kv.k", 4 * ek + 2 * eq, 1, lump(4 * ek + 2 * eq));
        add(f, "inductor.repeat_kv.v", 2 * ek + 2 * eq, 1, lump(2 * ek + 2 * eq));
    } else {
        add(f, "inductor.rope.k.to_bf16", 6 * ek, 1, vec(2, 4, 0, ek));
    }
    add(f, "inductor.add_rms_norm", 8 * eh, 1, lump(8 * eh));
    add(f, "inductor.swiglu", 6 * ef, 1, vec(2, 2, 2, ef));
    add(f, "inductor.add", 6 * eh, 1, vec(2, 2, 2, eh));
    add(b, "inductor.swiglu.bwd", 10 * ef, 1, lump(10 * ef));
    add(b, "inductor.rms_norm.bwd.attn", 12 * eh, 1, lump(12 * eh));
    add(b, "inductor.rms_norm.bwd.mlp", 10 * eh, 1, lump(10 * eh));
    add(b, "inductor.rms_norm.bwd.w", 4 * eh, 2, reduce(EW_REDUCE_COL, 2, 2, tr, h));
    add(b, "inductor.rope.q.grad_cplx", 6 * eq, 1, contig(EW_UNROLLED, 4, 2, 0, eq));
    add(b, "aten.rope.q.conj_mul", 8 * eq, 1, bcast(4, tokens, eq / tokens, false));
    add(b, "aten.rope.k.conj_mul", 8 * ek, 1, bcast(4, tokens, ek / tokens, false));
    if (gqa) {
        add(b, "inductor.repeat_kv.k.bwd", 2 * eq + 4 * ek, 1, lump(2 * eq + 4 * ek));
        add(b, "inductor.repeat_kv.v.bwd", 2 * eq + 2 * ek, 1, lump(2 * eq + 2 * ek));
    } else {
        add(b, "inductor.rope.k.grad_cplx", 6 * ek, 1, contig(EW_UNROLLED, 4, 2, 0, ek));
    }
    add(b, "inductor.rope.q.grad_bf16", 6 * eq, 1, vec(2, 4, 0, eq));
    add(b, "inductor.rope.k.grad_bf16", 6 * ek, 1, vec(2, 4, 0, ek));
    if (m->qk_norm) add(b, "inductor.qk_norm.bwd", 8 * (eq + ek), 1, lump(8 * (eq + ek)));
}

/* Transformer Engine's fused kernels under Megatron: RMSNorm/LayerNorm one pass (read and
 * write h: 4h), fused RoPE (read and write q, k: 4 bytes per element), fused SwiGLU (read 2f,
 * write f: 6f), GeLU 4f; backward twice the forward. One lump each way. */
static void fused_layer(const model_spec *m, const layout *l, double tokens, bool moe,
                        elementwise_list *out)
{
    double tp = l->tp, h = m->hidden, a = m->heads;
    double seq_div = l->sp ? tp : 1.0;
    double qk = m->mla ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim;
    double act_bytes = m->activation == MODEL_ACT_SWIGLU ? 6.0 : 4.0;
    double sharded = 0; /* bytes per token, already per GPU */
    if (!moe) {
        sharded += act_bytes * m->ffn / tp;
    } else {
        double w = (double)m->shared_experts * m->shared_ffn;
        if (m->shared_experts) sharded += act_bytes * w / tp;
        double copies = m->top_k / tp; /* routed copies per token, per GPU */
        sharded += copies * (act_bytes * m->expert_ffn + 8.0 * h); /* act + permutes */
    }
    /* fused RoPE; YaRN's unfused kernels under Megatron are their own list (mcore_unfused.h) */
    if (!m->learned_positions && !mcore_unfused_rope_applies(m, l) &&
        !mcore_unfused_mla_rope_applies(m, l))
        sharded += 4.0 * (a * qk + (m->mla ? a : m->kv_heads) * qk) / tp *
                   model_rope_layer_share(m); /* NoPE layers rotate nothing */
    /* the norms (two; one where a parallel block shares it, four with sandwich norms), two
     * residual adds (read 2h, write h: 6h), 1-byte dropout masks */
    double repl = model_layer_norms(m) * 4.0 * h + 12.0 * h + (m->dropout ? 2.0 * h : 0);
    double fwd = tokens * (repl / seq_div + sharded);
    out->fwd[out->n_fwd++] = (elementwise_kernel){"elementwise", fwd, 1, lump(fwd), 0};
    out->bwd[out->n_bwd++] =
        (elementwise_kernel){"elementwise.bwd", 2.0 * fwd, 1, lump(2.0 * fwd), 0};
    /* Megatron's alltoall dispatcher with several local experts sorts the received tokens by
     * local expert after the all-to-all and restores their order before the combine's
     * (Megatron-LM 2edffadb megatron/core/transformer/moe/token_dispatcher.py
     * MoEAlltoAllTokenDispatcher dispatch_postprocess "Permutation 2" and combine_preprocess
     * "Unpermutation 2", sort_chunks_by_idxs, TE's fused kernel under --moe-permute-fusion):
     * each reads and writes the routed rows in bf16 (4h a copy); the backward runs the inverse
     * of each, the same bytes */
    if (moe && l->framework == FRAMEWORK_MEGATRON && l->moe_dispatcher == MOE_DISPATCH_ALLTOALL &&
        l->ep > 1 && m->experts / l->ep > 1) {
        double one = tokens * m->top_k / tp * 4.0 * h; /* bytes of each of the two kernels */
        out->fwd[out->n_fwd++] = (elementwise_kernel){"moe.sort_chunks", one, 2, lump(one), 0};
        out->bwd[out->n_bwd++] = (elementwise_kernel){"moe.sort_chunks.bwd", one, 2, lump(one), 0};
    }
    /* FP8/FP4 experts behind a dispatcher that leaves the per-expert counts unaligned (alltoall,
     * allgather; the router's padding, moe_router_padding_for_quantization, is off in every
     * published recipe): TEGroupedMLP.forward pads each local expert's rows to the quantization
     * alignment, the rows and their probs, and unpads the output (Megatron-LM 0d8e071 experts.py
     * 879-887, 2edffadb 344-352 and 398-399, d0b3b77 570-578; HybridEP pads in its dispatch and
     * skips it; DeepEP's permute pads from 2edffadb on, before it: --moe-expert-padding). TE's
     * Fp8Padding copies into a new buffer unless every count is already aligned (pytorch/module/
     * fp8_padding.py forward, tex.fused_multi_row_padding, TE 366798e); the backward runs the
     * inverse copies. Each of the two reads and writes the routed rows (4h). */
    if (moe && mcore_expert_gemm_applies(l) && precision_is_low(l) &&
        (l->moe_dispatcher == MOE_DISPATCH_ALLTOALL ||
         l->moe_dispatcher == MOE_DISPATCH_ALLGATHER || l->moe_expert_padding)) {
        double rows = tokens * m->top_k / tp, one = rows * 4.0 * h, probs = rows * 8.0;
        out->fwd[out->n_fwd++] = (elementwise_kernel){"moe.quant_pad", one, 2, lump(one), 0};
        out->fwd[out->n_fwd++] =
            (elementwise_kernel){"moe.quant_pad.probs", probs, 1, lump(probs), 0};
        out->bwd[out->n_bwd++] = (elementwise_kernel){"moe.quant_pad.bwd", one, 2, lump(one), 0};
        out->bwd[out->n_bwd++] =
            (elementwise_kernel){"moe.quant_pad.probs.bwd", probs, 1, lump(probs), 0};
    }
}

/* Only the counts: the arrays are read up to them, and clearing ~17 KB per call was most of the
 * planner's time (it prices millions of layers). */
static void list_reset(elementwise_list *out)
{
    out->eager = false;
    out->alone = false;
    out->inductor = false;
    out->n_fwd = out->n_bwd = 0;
}

/*
 * torchtitan's sequence-parallel TP (issue 19): the copies torch's functional collectives add.
 * DTensor turns the blocks' Shard(1) -> Replicate into funcol.all_gather_tensor(gather_dim=1)
 * and Partial -> Shard(1) into funcol.reduce_scatter_tensor(scatter_dim=1) on the [b, s, h]
 * activations; NCCL gathers and scatters along dim 0 only, so
 * torch/distributed/_functional_collectives.py rearranges (pytorch/pytorch, main of 2026):
 * reduce_scatter_tensor runs torch.cat(torch.chunk(self, group_size, dim=scatter_dim)) before
 * the collective, always; all_gather_tensor runs torch/_utils.py _maybe_view_chunk_cat after
 * it, a view when res.shape[0] == group_size (batch 1) and torch.cat(torch.chunk(res,
 * group_size, dim=0), dim=gather_dim) otherwise. Each copy reads and writes the gathered
 * tensor (4 bytes an element in bf16; 2 for a float8 gather). Per block (attention, MLP or
 * MoE: each enters with a gather and leaves with a scatter) forward: the scatter's copy, and
 * the gather's at batch > 1; backward the same (a gather's backward is a scatter, a scatter's
 * a gather). Measured on
 * 4 x H100 (bench/tp_chunk_cat.py, bench/results/tt10_2026-11-28): the kernels and their rates
 * are sp_copy_s's. The embedding's reduce-scatter and the output projection's gather (once a
 * step, not a layer) are not listed. Async TP keeps them (its profiled step ran more copy time,
 * bench/results/tt10_2026-11-28/README.md).
 */
#define SP_COPY "sp." /* the names of its kernels (elementwise_kernel_s prices them apart) */
#define SP_AG_COPY SP_COPY "ag_chunk_cat"
static void sp_funcol_copies(const layout *l, double elems, elementwise_list *out)
{
    if (l->framework != FRAMEWORK_TORCHTITAN || l->tp <= 1 || !l->sp) return;
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    add(f, SP_COPY "rs_chunk_cat", 4 * elems, 2, vec(2, 2, 0, elems));
    add(b, SP_COPY "rs_chunk_cat.bwd", 4 * elems, 2, vec(2, 2, 0, elems));
    if (l->mbs > 1) {
        /* torchtitan's Float8 tensorwise TP gathers the forward's inputs in float8
         * (async_tp_gather_elem_bytes): the copy moves 1-byte elements */
        double ge = async_tp_gather_elem_bytes(l);
        add(f, SP_AG_COPY, 2 * ge * elems, 2, vec(2, 2, 0, ge * elems / 2)); /* the
                                                 backend copies the same bytes as bf16 pairs */
        add(b, SP_AG_COPY ".bwd", 4 * elems, 2, vec(2, 2, 0, elems));
    }
}

void elementwise_layer(const model_spec *m, const layout *l, double tokens, bool moe,
                       elementwise_list *out)
{
    list_reset(out);
    /* torch.compile'd blocks (issue 14): Inductor fuses each block's pointwise ops and
     * reductions into a few generated kernels that read each input once and write each output
     * once, the traffic of the fused lumps Transformer Engine runs (same list, same pricing) */
    if (layout_is_pytorch(l) && l->compile && layout_impl_of(l) == IMPL_NATIVE && !moe &&
        !m->mla && m->norm == MODEL_NORM_RMS && m->activation == MODEL_ACT_SWIGLU &&
        !m->learned_positions) {
        inductor_native_layer(m, l, tokens, out);
        out->alone = layout_gpus(l) == 1;
        sp_funcol_copies(l, tokens * m->hidden, out);
        return;
    }
    if (!layout_is_pytorch(l) || l->compile) {
        fused_layer(m, l, tokens, moe, out);
        sp_funcol_copies(l, tokens * m->hidden, out);
        return;
    }
    out->eager = true;
    out->alone = layout_gpus(l) == 1;
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double tp = l->tp, h = m->hidden, a = m->heads;
    bool native = layout_impl_of(l) == IMPL_NATIVE;
    double tr = l->sp ? tokens / tp : tokens; /* rows of the replicated (non-TP) kernels */
    double qk = m->mla ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim;
    double qw = a * qk / tp, kw = (m->mla ? a : m->kv_heads) * qk / tp;
    bool gated = m->activation == MODEL_ACT_SWIGLU;
    /* Norms (input_layernorm, post_attention_layernorm; Qwen3's per-head q/k norms; Gemma 2/3
     * also pre_feedforward_layernorm and post_feedforward_layernorm, Gemma3DecoderLayer /
     * Gemma2DecoderLayer in transformers 5.17.0: four per layer, each GemmaRMSNorm). */
    /* torchtitan 2024's own RMSNorm runs LlamaRMSNorm's eager ops (layout.h rms_norm_unfused) */
    int norms = model_layer_norms(m); /* one where a parallel block shares it (Cohere) */
    if (m->norm == MODEL_NORM_RMS && native && !l->rms_norm_unfused) {
        native_rms_norm(f, b, tr, h, norms);
        if (m->qk_norm) native_rms_norm(f, b, tokens, (qw + kw) / 2.0, 2);
    } else if (m->norm == MODEL_NORM_RMS && m->norm_fp32_scale && !native) {
        ew_gemma_rms_norm(f, b, tr, h, h, norms, false);
        if (m->qk_norm) /* q and k: mean width */
            ew_gemma_rms_norm(f, b, tokens, (qw + kw) / 2.0, qk, 2, true);
    } else if (m->norm == MODEL_NORM_RMS) {
        ew_rms_norm(f, b, tr, h, h, norms, false);
        if (m->qk_norm) /* q and k: mean width */
            ew_rms_norm(f, b, tokens, (qw + kw) / 2.0, qk, 2, true);
    } else if (ew_cohere_norm(m, l)) { /* CohereLayerNorm's fp32 ops (elementwise_norm.c) */
        ew_cohere_layer_norm(f, b, tr, h, h, norms, false);
        if (m->qk_norm) ew_cohere_layer_norm(f, b, tokens, (qw + kw) / 2.0, qk, 2, true);
    } else {
        add(f, "layernorm", 4 * tr * h, norms, lump(4 * tr * h));
        add(b, "layernorm.bwd", 8 * tr * h, norms, lump(8 * tr * h));
    }
    if (!m->learned_positions && native) {
        double rt = tokens * model_rope_layer_share(m); /* NoPE layers rotate nothing */
        native_rope(f, b, rt, qw, true);
        native_rope(f, b, rt, kw, false);
        repeat_kv(f, b, tokens, qw, kw, qk, 1.0, true);
    } else if (!m->learned_positions && hf_ernie_rope(m, l)) { /* fp32 (hf_ernie_rope.h) */
        hf_ernie_rope_kernels(tokens * model_rope_layer_share(m), qw, kw, qk, out);
    } else if (!m->learned_positions) {
        double rt = tokens * model_rope_layer_share(m);
        rope(f, b, rt, qw, qk, true, true); /* Falcon: k at every head (hf_split_heads.h) */
        rope(f, b, rt, m->hf_split_broadcast ? qw : kw, qk, false, !m->hf_split_broadcast);
    }
    add(f, "residual.add", 6 * tr * h, 2, vec(2, 2, 2, tr * h));
    /* Granite's residual_multiplier (transformers models/granite/modeling_granite.py at
     * b6dd89b4, GraniteDecoderLayer.forward: residual + hidden_states * residual_multiplier,
     * after attention and after the MLP): a bf16 scalar multiply before each add, and its
     * backward (derivatives.yaml mul.Scalar: grad * other), 4 bytes an element each */
    if (m->residual_multiplier > 0 && layout_impl_of(l) == IMPL_HF) {
        add(f, "residual.mul", 4 * tr * h, 2, vec(2, 2, 0, tr * h));
        add(b, "residual.bwd.mul", 4 * tr * h, 2, vec(2, 2, 0, tr * h));
    }
    /* Gradient accumulation of the tensors read twice (header comment). */
    add(b, "grad.add", 6 * tr * h, 2 + (m->mla ? 1 : 2) + (gated ? 1 : 0), vec(2, 2, 2, tr * h));
    if (m->dropout) {
        add(f, "dropout", 2 * tr * h, 1, lump(2 * tr * h));
        add(b, "dropout.bwd", 4 * tr * h, 1, lump(4 * tr * h));
    }
    if (!moe && hf_xielu_applies(m, l)) hf_xielu_kernels(tokens * m->ffn / tp, out);
    else if (!moe) {
        activation(m, f, b, tokens, m->ffn / tp, "mlp.act", "mlp.mul", "mlp.bwd.mul",
                   "mlp.bwd.act");
    } else {
        if (m->shared_experts)
            activation(m, f, b, tokens, (double)m->shared_experts * m->shared_ffn / tp,
                       "shared.act", "shared.mul", "shared.bwd.mul", "shared.bwd.act");
        double rows = tokens * m->top_k / tp; /* routed copies of this GPU's tokens */
        activation(m, f, b, rows, (double)m->expert_ffn, "experts.act", "experts.mul",
                   "experts.bwd.mul", "experts.bwd.act");
        if (hf_experts_applies(l)) hf_experts_halves(m, rows, out);
        /* else hf_experts.c / titan_moe.c list the routing kernels */
        if (!hf_experts_applies(l) && !titan_moe_applies(l)) {
            add(f, "moe.permute", 8 * rows * h, 1, lump(8 * rows * h));
            add(b, "moe.permute.bwd", 16 * rows * h, 1, lump(16 * rows * h));
        }
    }
    sp_funcol_copies(l, tokens * h, out);
}

/* torchtitan's loss under TP (loss_parallel, its default with TP: the logits stay sharded on
 * the vocabulary). torch/distributed/tensor/parallel/loss.py (pytorch 02eef6b) replaces the
 * fused log_softmax and nll_loss kernels with their decompositions on the local [tokens, v]
 * fp32 shard, all-reduces of a [tokens, 1] column between them: _log_softmax runs amax, x - max,
 * exp, sum, log, shifted - logsumexp (a reduction or a broadcast elementwise kernel each, 38
 * bytes a logit with the .float() before); _nll_loss_and_log_softmax_backward returns
 * (zeros_like(x) with -1 scattered at the targets + exp(x)) * grad_output, then the cast
 * back to bf16 (38 bytes a logit). Seen in the profiled TP 4 step of bench/results/
 * mgpu9_2026-11-28 (Llama-3.1-8B, 49,152 tokens x 32,064 logits a rank): forward kernels exp,
 * two reduce_kernel and two broadcast elementwise_kernel<128, 2>; backward fill, exp, add,
 * broadcast mul, bfloat16_copy; 44.8 ms in all (bench/realruns/mgpu9_derive.py loss) against
 * the 33.2 ms the fused list prices: 76 bytes a logit at 2.67 TB/s, the rate
 * gpu.loss_parallel_efficiency carries (H100). */
#define LOSSP "lossp." /* the names of its kernels (elementwise_kernel_s prices them apart) */
static void loss_parallel(pass f, pass b, double tokens, double v)
{
    double e = tokens * v;
    add(f, LOSSP "to_fp32", 6 * e, 1, contig(EW_UNROLLED, 4, 2, 0, e));
    add(f, LOSSP "amax", 4 * e, 1, reduce(EW_REDUCE_ROW, 4, 4, tokens, v));
    add(f, LOSSP "sub_max", 8 * e, 1, bcast(4, tokens, v, true));
    add(f, LOSSP "exp", 8 * e, 1, vec(4, 4, 0, e));
    add(f, LOSSP "sum_exp", 4 * e, 1, reduce(EW_REDUCE_ROW, 4, 4, tokens, v));
    add(f, LOSSP "sub_lse", 8 * e, 1, bcast(4, tokens, v, true));
    add(b, LOSSP "bwd.zeros", 4 * e, 1, vec(4, 0, 0, e));
    add(b, LOSSP "bwd.exp", 8 * e, 1, vec(4, 4, 0, e));
    add(b, LOSSP "bwd.add", 12 * e, 1, vec(4, 4, 4, e));
    add(b, LOSSP "bwd.mul", 8 * e, 1, bcast(4, tokens, v, true));
    add(b, LOSSP "bwd.to_bf16", 6 * e, 1, vec(2, 4, 0, e));
}

void elementwise_head(const model_spec *m, const layout *l, double tokens, elementwise_list *out)
{
    list_reset(out);
    double v = (double)m->vocab / l->tp;
    if (!layout_is_pytorch(l)) {
        /* ~20 bytes per logit through HBM: bf16 logits, fp32 softmax forward and backward.
         * Transformer Engine's fused loss (layout.h te_cross_entropy; TE
         * transformer_engine/pytorch/triton/cross_entropy.py): the forward's online softmax
         * reads the bf16 logits once (2; its second kernel reads three fp32 figures a token),
         * the backward reads them and writes their gradient in place (4) */
        if (l->te_cross_entropy) {
            double fb = 2.0 * tokens * v, bb = 4.0 * tokens * v;
            out->fwd[out->n_fwd++] = (elementwise_kernel){"loss.te", fb, 1, lump(fb), 0};
            out->bwd[out->n_bwd++] = (elementwise_kernel){"loss.te.bwd", bb, 1, lump(bb), 0};
            return;
        }
        double lb = 10.0 * tokens * v;
        out->fwd[out->n_fwd++] = (elementwise_kernel){"loss", lb, 1, lump(lb), 0};
        out->bwd[out->n_bwd++] = (elementwise_kernel){"loss.bwd", lb, 1, lump(lb), 0};
        return;
    }
    out->eager = true;
    out->alone = layout_gpus(l) == 1;
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double tr = l->sp ? tokens / l->tp : tokens;
    if (m->norm == MODEL_NORM_RMS && layout_impl_of(l) == IMPL_NATIVE && !l->rms_norm_unfused) {
        native_rms_norm(f, b, tr, m->hidden, 1);
    } else if (m->norm == MODEL_NORM_RMS && m->norm_fp32_scale &&
               layout_impl_of(l) != IMPL_NATIVE) {
        ew_gemma_rms_norm(f, b, tr, m->hidden, m->hidden, 1, false);
    } else if (m->norm == MODEL_NORM_RMS) {
        ew_rms_norm(f, b, tr, m->hidden, m->hidden, 1, false);
    } else if (ew_cohere_norm(m, l)) {
        ew_cohere_layer_norm(f, b, tr, m->hidden, m->hidden, 1, false);
    } else {
        add(f, "layernorm", 4 * tr * m->hidden, 1, lump(4 * tr * m->hidden));
        add(b, "layernorm.bwd", 8 * tr * m->hidden, 1, lump(8 * tr * m->hidden));
    }
    double e = tokens * v;
    /* The loss compiled (layout_loss_compiled): Inductor fuses the upcast, log_softmax and
     * nll_loss into one reduction over the bf16 logits (an online softmax: one read, 2 bytes a
     * logit) and the backward into one kernel that reads them again and writes the bf16
     * gradient (4), the same traffic as Transformer Engine's fused loss above. Measured on one
     * H100 (bench/results/compile_loss_2026-11-28): the step is 12.5 ms (Qwen2.5-1.5B, 1.24 G
     * logits) and 27.3 ms (Llama-3.2-1B, 2.10 G logits) shorter than with the eager loss. */
    if (layout_loss_compiled(l)) {
        add(f, "loss.compiled", 2 * e, 1, lump(2 * e));
        add(b, "loss.compiled.bwd", 4 * e, 1, lump(4 * e));
        return;
    }
    /* F.cross_entropy(logits.float()): log_softmax + nll_loss. Forward: the bf16-to-fp32 copy 6,
     * cunn_SoftMaxForward reads and writes fp32 8 (nll_loss reads one logit per token).
     * Backward: nll_loss_backward fills fp32 zeros 4 (and scatters one value per token),
     * _log_softmax_backward_data reads grad and output, writes 12, _to_copy_backward back to
     * bf16 6. */
    if (l->framework == FRAMEWORK_TORCHTITAN && l->tp > 1) {
        loss_parallel(f, b, tokens, v);
        return;
    }
    /* Gemma 2's final-logit soft-capping (transformers 5.17.0 models/gemma2/modeling_gemma2.py
     * Gemma2ForCausalLM.forward, lines 528-530: logits / cap, torch.tanh, * cap) on the bf16
     * logits before the loss: three vectorized bf16 kernels of 4 bytes a logit; backward
     * (derivatives.yaml mul.Tensor, tanh: tanh_backward(grad, result), div.Tensor) grad * cap 4,
     * tanh_backward reading grad and the saved output 6, grad / cap 4, after the cast back */
    bool softcap = m->final_logit_softcap > 0 && layout_impl_of(l) == IMPL_HF;
    if (softcap) {
        add(f, "softcap.div", 4 * e, 1, vec(2, 2, 0, e));
        add(f, "softcap.tanh", 4 * e, 1, vec(2, 2, 0, e));
        add(f, "softcap.mul", 4 * e, 1, vec(2, 2, 0, e));
    }
    /* Granite's multipliers (modeling_granite.py at b6dd89b4): GraniteModel.forward scales the
     * embeddings (inputs_embeds * embedding_multiplier, [tokens, hidden] bf16), and
     * GraniteForCausalLM.forward divides the bf16 logits (logits / logits_scaling) before the
     * loss; each a vectorized kernel of 4 bytes an element forward and one backward (mul.Scalar,
     * div.Scalar: grad scaled). Listed with the head, the model's once-a-micro-batch kernels. */
    bool granite = layout_impl_of(l) == IMPL_HF && !l->compile; /* compiled: not measured */
    if (granite && m->embedding_multiplier > 0)
        add(f, "embed.mul", 4 * tr * m->hidden, 1, vec(2, 2, 0, tr * m->hidden));
    if (granite && m->logits_scaling > 0) add(f, "logits.div", 4 * e, 1, vec(2, 2, 0, e));
    /* Cohere's logits * logit_scale (modeling_cohere.py CohereForCausalLM.forward), the same */
    bool cohere = ew_cohere_norm(m, l);
    if (cohere) add(f, "logits.mul_scale", 4 * e, 1, vec(2, 2, 0, e));
    add(f, "loss.to_fp32", 6 * e, 1, contig(EW_UNROLLED, 4, 2, 0, e));
    add(f, "loss.log_softmax", 8 * e, 1, reduce(EW_SOFTMAX_FWD, 4, 4, tokens, v));
    add(b, "loss.bwd.zeros", 4 * e, 1, vec(4, 0, 0, e));
    ew_access sb = reduce(EW_SOFTMAX_BWD, 4, 4, tokens, v); /* grad and output, contiguous */
    sb.esize[2] = 4;
    sb.stride[0][1] = sb.stride[2][1] = sb.stride[1][1];
    sb.stride[0][2] = sb.stride[2][2] = 1;
    add(b, "loss.bwd.log_softmax", 12 * e, 1, sb);
    add(b, "loss.bwd.to_bf16", 6 * e, 1, vec(2, 4, 0, e));
    if (softcap) {
        add(b, "softcap.bwd.mul", 4 * e, 1, vec(2, 2, 0, e));
        add(b, "softcap.bwd.tanh", 6 * e, 1, vec(2, 2, 2, e));
        add(b, "softcap.bwd.div", 4 * e, 1, vec(2, 2, 0, e));
    }
    if (granite && m->logits_scaling > 0) add(b, "logits.bwd.div", 4 * e, 1, vec(2, 2, 0, e));
    if (cohere) add(b, "logits.bwd.mul_scale", 4 * e, 1, vec(2, 2, 0, e));
    if (granite && m->embedding_multiplier > 0)
        add(b, "embed.bwd.mul", 4 * tr * m->hidden, 1, vec(2, 2, 0, tr * m->hidden));
}

double elementwise_bytes(const elementwise_kernel *k, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += k[i].count * k[i].bytes;
    return s;
}

int elementwise_launches(const elementwise_kernel *k, int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) s += k[i].count;
    return s;
}

double elementwise_eager_kernel_s(const system_spec *sys, const elementwise_kernel *k)
{
    return k->bytes / (sys->hbm_bandwidth_bytes_per_s * sys->eager_elementwise_efficiency) +
           sys->eager_kernel_gap_s;
}

/* The SP copies (sp_funcol_copies) as measured on 4 x H100 (bench/tp_chunk_cat.py,
 * bench/results/tt10_2026-11-28): Inductor's copy kernels (triton_poi_fused_cat_*) moved
 * 3.05-3.23 TB/s and eager torch.cat of the scatter's contiguous chunks
 * (CatArrayBatchedCopy_vectorized) 2.92-3.07 TB/s, the streaming rate (0.87-0.96 of 3.35
 * TB/s: compute_stream_s); eager torch.cat into the gather's strided output at batch 6
 * (CatArrayBatchedCopy, no vectorized path) 1.19 TB/s, gpu.strided_cat_efficiency. */
static double sp_copy_s(const system_spec *sys, const elementwise_list *e,
                        const elementwise_kernel *k)
{
    if (!e->eager) return compute_stream_s(sys, k->bytes);
    if (!strncmp(k->name, SP_AG_COPY, sizeof SP_AG_COPY - 1))
        return k->bytes / (sys->hbm_bandwidth_bytes_per_s *
                           (sys->strided_cat_efficiency > 0 ? sys->strided_cat_efficiency
                                                            : sys->eager_elementwise_efficiency)) +
               sys->eager_kernel_gap_s;
    return compute_stream_s(sys, k->bytes) + sys->eager_kernel_gap_s;
}

double elementwise_kernel_s(const system_spec *sys, const elementwise_list *e,
                            const elementwise_kernel *k)
{
    if (!strncmp(k->name, SP_COPY, sizeof SP_COPY - 1)) return sp_copy_s(sys, e, k);
    /* an Inductor list's "aten." ops are the ones it leaves eager: priced below as eager */
    bool aten = e->inductor && !strncmp(k->name, "aten.", 5);
    if (e->inductor && !aten && sys->inductor_elementwise_efficiency > 0)
        return k->bytes / (sys->hbm_bandwidth_bytes_per_s * sys->inductor_elementwise_efficiency);
    const ew_access *a = &k->access; /* a fill (vectorized, no input) at compute_fill_s */
    bool fill = a->pattern == EW_VECTORIZED && a->esize[0] > 0 && !a->esize[1] && !a->esize[2];
    if (!e->eager && !aten) return (fill ? compute_fill_s : compute_stream_s)(sys, k->bytes);
    /* transformers' eager attention's score kernels at their measured rates (hf_eager_attn.h) */
    double s_hf = !strncmp(k->name, "eager.", 6) ? hf_eager_kernel_s(sys, e, k) : -1;
    if (s_hf >= 0) return s_hf;
    /* index_put_ with accumulate over runs of duplicate indices (hf_experts.h) */
    double s_acc = moe_index_accum_s(sys, e, k);
    if (s_acc >= 0) return s_acc;
    /* the loss's log_softmax over rows L2 cannot hold: its passes' re-reads (softmax_rows.h) */
    {
        double s = softmax_rows_kernel_s(sys, e, k);
        if (s >= 0) return s;
    }
    if (sys->loss_parallel_efficiency > 0 && !strncmp(k->name, LOSSP, sizeof LOSSP - 1))
        return k->bytes / (sys->hbm_bandwidth_bytes_per_s * sys->loss_parallel_efficiency) +
               sys->eager_kernel_gap_s;
    /* Megatron's unfused MLA RoPE (mcore_unfused.h): kernels over narrow strided slices, at
     * their own measured rate (gpu.mla_rope_unfused_efficiency) */
    if (sys->mla_rope_unfused_efficiency > 0 && !strncmp(k->name, "rope.mla.", 9))
        return k->bytes / (sys->hbm_bandwidth_bytes_per_s * sys->mla_rope_unfused_efficiency) +
               sys->eager_kernel_gap_s;
    /* transformers' MoE block's offset-path kernels over the routed rows (hf_experts.c: the
     * masked_fills with a [rows, 1] mask, the routing-weight products with a [rows, 1] weight,
     * the experts' SwiGLU over the chunked halves of gate_up's output; and Apertus's xIELU
     * products with its 0-dim and one-element operands, hf_xielu.c) at the offset path's
     * measured rate (gpu.score_offsets_efficiency, the same elementwise_kernel<128, 4> template
     * measured alone); the blended eager rates below were measured on dense layers' kernel
     * lists. In the profiled DeepSeek-V2-Lite step of bench/results/host23_2026-11-29 (call1, L8
     * s2k b4, one H200) the three forward masks moved 1.36 GB in 0.923 ms, the weight product
     * 0.60 GB in 0.415 ms, the SiLU 0.28 GB in 0.189 ms: 1.46-1.47 TB/s, against 2.83 TB/s at
     * the alone rate these kernels had before. The clone of an out-of-place masked_fill there
     * (hf_experts.c moe_mask_clone_add): a device copy at the streaming rate; so is a gather of
     * whole rows through an index (gather_moe.h gather_moe_copy_kernel has the measurement). */
    if (e->eager && gather_moe_copy_kernel(k->name))
        return compute_stream_s(sys, k->bytes) + sys->eager_kernel_gap_s;
    if (e->eager && k->access.pattern == EW_OFFSETS && sys->score_offsets_efficiency > 0 &&
        (!strncmp(k->name, "moe.", 4) || !strncmp(k->name, "experts.", 8) ||
         !strncmp(k->name, "xielu.", 6) || !strncmp(k->name, "split.", 6))) {
        double eff = sys->score_offsets_efficiency;
        if (!e->alone && sys->eager_elementwise_efficiency_alone > 0)
            eff *= sys->eager_elementwise_efficiency / sys->eager_elementwise_efficiency_alone;
        return k->bytes / (sys->hbm_bandwidth_bytes_per_s * eff) + sys->eager_kernel_gap_s;
    }
    if (e->alone && sys->eager_elementwise_efficiency_alone > 0)
        return k->bytes / (sys->hbm_bandwidth_bytes_per_s * sys->eager_elementwise_efficiency_alone) +
               sys->eager_kernel_gap_s;
    return elementwise_eager_kernel_s(sys, k);
}

long ew_operand_elems(const ew_access *a, int k)
{
    if (k < 0 || k > 2 || !a->esize[k]) return 0;
    switch (a->pattern) {
    case EW_REDUCE_ROW:
        return k == 0 ? a->n[1] : a->n[1] * a->n[2];
    case EW_REDUCE_COL: /* [n0, rows, w] -> [n0, w] */
        return k == 0 ? a->n[0] * a->n[2] : a->n[0] * a->n[1] * a->n[2];
    case EW_SOFTMAX_FWD:
    case EW_SOFTMAX_BWD:
    case EW_SPLIT_COPY:
    case EW_CHUNK_CAT:
        return a->n[1] * a->n[2];
    case EW_FOREACH_COPY:
        return a->n[0] * a->n[1] * a->n[2];
    case EW_INDEX_ACCUM:
        return k == 0 ? a->n[1] * a->n[2] : (k == 1 ? a->n[0] * a->n[1] * a->n[2] : 0);
    default:
        break;
    }
    long span = 1;
    for (int i = 0; i < 3; i++) span += (a->n[i] - 1) * a->stride[k][i];
    if (a->pattern == EW_CAT && k == 0) span += a->n[2] * a->stride[0][2]; /* the second input */
    return span;
}

double ew_elements(const ew_access *a) { return (double)a->n[0] * a->n[1] * a->n[2]; }
const char *ew_pattern_name(ew_pattern p)
{
    static const char *const names[EW_PATTERN_COUNT] = {
        "vectorized", "unrolled_cast", "offsets",     "cat",          "reduce_row",
        "reduce_col", "softmax_fwd",   "softmax_bwd", "foreach_copy", "split_copy",
        "chunk_cat",  "index_accum",
    };
    return p >= 0 && p < EW_PATTERN_COUNT ? names[p] : "?";
}

double elementwise_pass_s(const system_spec *sys, const elementwise_list *e,
                          const elementwise_kernel *k, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += k[i].count * elementwise_kernel_s(sys, e, &k[i]);
    return s;
}

void elementwise_unfused_softmax(const system_spec *sys, double scores, bool dropout,
                                 double *fwd_bytes, double *bwd_bytes, double *fwd_s,
                                 double *bwd_s)
{
    *fwd_bytes = scores * (dropout ? 9.0 : 4.0);
    *bwd_bytes = scores * (dropout ? 11.0 : 6.0);
    /* The scaled, masked softmax (Megatron's fused kernel, megatron/fused_kernels/
     * scaled_upper_triang_masked_softmax.h at 6985e58: read and write fp16, 4 bytes a score;
     * backward reads output and gradient, writes 6) streams at the fused kernels' rate. The
     * dropout on the probabilities is PyTorch's own eager kernel (megatron/model/
     * transformer.py ParallelAttention at 6985e58: self.attention_dropout =
     * torch.nn.Dropout; _fused_dropout reads 2, writes 2 and a 1-byte mask; its backward
     * _masked_scale reads 2 + 1, writes 2): priced as the eager kernels are
     * (gpu.eager_elementwise_efficiency, elementwise_eager_kernel_s). */
    double drop_f = dropout ? 5.0 * scores : 0, drop_b = dropout ? 5.0 * scores : 0;
    *fwd_s = compute_stream_s(sys, *fwd_bytes - drop_f);
    *bwd_s = compute_stream_s(sys, *bwd_bytes - drop_b);
    if (dropout) {
        elementwise_kernel kf = {"attn.dropout", drop_f, 1,
                                 ew_contiguous(EW_VECTORIZED, 2, 2, 0, scores), 0};
        elementwise_kernel kb = {"attn.dropout.bwd", drop_b, 1,
                                 ew_contiguous(EW_VECTORIZED, 2, 2, 1, scores), 0};
        *fwd_s += elementwise_eager_kernel_s(sys, &kf);
        *bwd_s += elementwise_eager_kernel_s(sys, &kb);
    }
}
