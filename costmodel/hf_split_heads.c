/*
 * hf_split_heads.c — the kernels that bring k and v to every query head before SDPA
 * (hf_split_heads.h). Falcon's new-architecture _split_heads, per token of one layer, widths per
 * GPU q qw = a d, k and v kw = g d (g groups of r = a / g query heads), the fused output
 * fw = qw + 2 kw, bf16 (the kernels seen in bench/results/falcon27_2026-11-29, one attention
 * block's torch.profiler list; torch tools/autograd/derivatives.yaml for the backward):
 *   forward  qkv[:, :, :, [-2]] and [-1]: index gathers, read and write kw each (4 kw);
 *            q's flatten of the [.., :16, :] slice: a copy, 4 qw;
 *            k's and v's flatten of the broadcast: a copy each, read kw, write qw (2 kw + 2 qw);
 *            all three elementwise_kernel<128, 4> direct copies (strided or broadcast source)
 *   backward slice_backward and the two index_backward: zeros of the fused shape, 2 fw each;
 *            q's gradient copied into its slice (RoPE's view copy, elementwise.c, prices it);
 *            expand's backward (sum_to over the r query heads of a group) for k and v, a
 *            reduction read 2 qw, written 2 kw, as repeat_kv's (elementwise.c reduce_mid);
 *            index_put_ with accumulate of the [.., 1, 64] gradients, read kw, read and write
 *            the destination slot kw (6 kw); the three fused-shape gradients summed, two adds
 *            of 6 fw.
 * The offset-path copies and gathers are priced at the offset path's measured rate
 * (elementwise.c elementwise_kernel_s, names "split."): q's copy ran 1.76 TB/s (that rate's
 * 1.70), k's and v's 0.93.
 */
#include "hf_split_heads.h"

#include "elementwise_internal.h"
#include "memory.h"

/* [rows, r, d] written contiguous from a source of row stride src_row and slot stride src_r
 * (0: a broadcast) */
static ew_access slots(double rows, double r, double d, double src_row, double src_r)
{
    ew_access a = {.pattern = EW_OFFSETS, .esize = {2, 2, 0}, .n = {L(rows), L(r), L(d)}};
    a.stride[0][0] = L(r) * L(d), a.stride[0][1] = L(d), a.stride[0][2] = 1;
    a.stride[1][0] = L(src_row), a.stride[1][1] = (long)src_r, a.stride[1][2] = 1;
    return a;
}

void hf_split_heads_kernels(const model_spec *m, const training_spec *t, const layout *l,
                            double tokens, bool hf_eager, elementwise_list *out)
{
    if (!m->hf_split_broadcast) {
        elementwise_hf_repeat_kv(m, l, tokens,
                                 hf_eager ? 1.0 : memory_hf_window_mask_share(m, t, l), out);
        return;
    }
    if (m->mla || !out->eager || layout_impl_of(l) != IMPL_HF || m->kv_heads <= 0) return;
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    double d = m->head_dim, qw = m->heads * d / l->tp, kw = m->kv_heads * d / l->tp;
    double fw = qw + 2.0 * kw, r = qw / kw, rows = tokens * kw / d; /* (token, group) rows */
    add(f, "split.index", 4.0 * tokens * kw, 2, slots(rows, 1, d, (r + 2) * d, 0));
    add(f, "split.copy_q", 4.0 * tokens * qw, 1, slots(rows, r, d, (r + 2) * d, d));
    add(f, "split.copy_kv", (2.0 * kw + 2.0 * qw) * tokens, 2, slots(rows, r, d, d, 0));
    add(b, "split.zeros", 2.0 * tokens * fw, 3, vec(2, 0, 0, tokens * fw));
    ew_access sum = {.pattern = EW_REDUCE_COL, .esize = {2, 2, 0}, .n = {L(rows), L(r), L(d)}};
    sum.stride[1][0] = L(r) * L(d), sum.stride[1][1] = L(d), sum.stride[1][2] = 1;
    sum.stride[0][0] = L(d), sum.stride[0][2] = 1;
    add(b, "split.kv_sum", (2.0 * qw + 2.0 * kw) * tokens, 2, sum);
    ew_access put = slots(rows, 1, d, d, 0); /* into the fused gradient's slot */
    put.stride[0][0] = L((r + 2) * d);
    add(b, "split.index_put", 6.0 * tokens * kw, 2, put);
    add(b, "split.add", 6.0 * tokens * fw, 2, vec(2, 2, 2, tokens * fw));
}
