/*
 * hf_ernie_rope.c — ERNIE-4.5's fp32 interleaved rotary kernels (hf_ernie_rope.h has the op
 * list and its source). q and k keep q_proj's [b, s, heads, d] layout seen as [b, heads, s, d];
 * .float() of it and the products with q.float() keep that layout (empty_like preserves the
 * strides of a dense tensor), the rotated half follows stack's contiguous [b, heads, s, d].
 * Kernel paths as elementwise.h names them: the casts of dense operands unrolled (bf16 -> fp32)
 * or vectorized (fp32 -> bf16), the products with the broadcast tables, the slices of stride 2
 * and stack's interleaved write on the offset path, the zeros and the sums of contiguous
 * gradients vectorized.
 */
#include "hf_ernie_rope.h"

#include <string.h>

#include "elementwise_internal.h"

bool hf_ernie_rope(const model_spec *m, const layout *l)
{
    return layout_impl_of(l) == IMPL_HF && !m->mla &&
           (!strcmp(m->hf_model_type, "ernie4_5") || !strcmp(m->hf_model_type, "ernie4_5_moe"));
}

/* [T, heads, d] with the [T, d] table broadcast over heads (operand b), fp32 */
static ew_access table_mul(long T, long H, long D)
{
    ew_access a = {.pattern = EW_OFFSETS, .esize = {4, 4, 4}, .n = {T, H, D}};
    for (int k = 0; k < 2; k++) a.stride[k][0] = H * D, a.stride[k][1] = D, a.stride[k][2] = 1;
    a.stride[2][0] = D, a.stride[2][2] = 1;
    return a;
}

/* half-width rows (T x heads of them) read or written at stride 2 (x[..., 0::2] / [1::2]) */
static ew_access half(long rows, long D, bool out_strided, bool in_strided, int eb)
{
    long D2 = D / 2 > 0 ? D / 2 : 1;
    ew_access a = {.pattern = EW_OFFSETS, .esize = {2, 2, eb}, .n = {1, rows, D2}};
    a.stride[0][1] = out_strided ? D : D2, a.stride[0][2] = out_strided ? 2 : 1;
    a.stride[1][1] = in_strided ? D : D2, a.stride[1][2] = in_strided ? 2 : 1;
    if (eb) a.stride[2][1] = D, a.stride[2][2] = 2;
    return a;
}

static void one(pass f, pass b, double t, double w, double d, bool is_q)
{
    double e = t * w;
    long T = L(t), D = L(d), H = L(w / d);
#define N(s) (is_q ? "rope.ernie.q." s : "rope.ernie.k." s)
    add(f, N("to_fp32"), 6 * e, 2, contig(EW_UNROLLED, 4, 2, 0, e));
    add(f, N("mul"), 8 * e, 2, table_mul(T, H, D));
    add(f, N("neg"), 2 * e, 1, half(T * H, D, false, true, 0));
    add(f, N("stack"), 4 * e, 1, half(T * H, D, true, false, 2));
    ew_access mixed = table_mul(T, H, D); /* q*cos (q's layout) + rot*sin ([heads, s, d]) */
    mixed.stride[2][0] = D, mixed.stride[2][1] = T * D;
    add(f, N("add"), 12 * e, 1, mixed);
    add(f, N("to_bf16"), 6 * e, 1, vec(2, 4, 0, e));
    add(b, N("bwd.to_fp32"), 6 * e, 1, contig(EW_UNROLLED, 4, 2, 0, e));
    add(b, N("bwd.mul"), 8 * e, 2, table_mul(T, H, D));
    add(b, N("bwd.to_bf16"), 6 * e, 2, vec(2, 4, 0, e));
    add(b, N("bwd.neg"), 2 * e, 1, half(T * H, D, false, true, 0));
    add(b, N("bwd.zeros"), 2 * e, 2, vec(2, 0, 0, e));
    add(b, N("bwd.slice_copy"), 2 * e, 2, half(T * H, D, true, true, 0));
    add(b, N("bwd.add"), 6 * e, 2, vec(2, 2, 2, e));
    ew_access view = {.pattern = EW_OFFSETS, .esize = {2, 2, 0}, .n = {T, H, D}};
    view.stride[0][0] = H * D, view.stride[0][1] = D, view.stride[0][2] = 1;
    view.stride[1][0] = D, view.stride[1][1] = T * D, view.stride[1][2] = 1;
    add(b, N("bwd.view_copy"), 4 * e, 1, view);
#undef N
}

void hf_ernie_rope_kernels(double tokens, double qw, double kw, double d, elementwise_list *out)
{
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    one(f, b, tokens, qw, d, true);
    one(f, b, tokens, kw, d, false);
}
