/*
 * hf_xielu.c — transformers' Python xIELU (hf_xielu.h): its kernels, saved tensors and backward
 * transient, op by op. E is the elements of the up projection's output x (tokens x ffn / tp),
 * bf16 (2 bytes), the mask bool (1); alpha_p, alpha_n (bf16 [1], FSDP2's compute copies of the
 * fp32 parameters) and beta, eps (fp32 0-dim buffers) are one element each, left out of the
 * bytes.
 *
 * Forward (activations.py lines 282-288), 12 kernels over E and three on the parameters:
 *   x > 0 -> bool 3E; alpha_p * x 4E; (.) * x 6E; beta * x 4E (twice: both branches compute
 *   it); the two branch sums 6E each; min(x, eps) 4E; expm1 4E; (.) - x 6E; (.) * alpha_n 4E;
 *   where(mask, a, b) 7E: 58E in all (GeLU: one kernel, 4E). softplus twice and beta + (.) on
 *   one element each.
 * Backward (torch tools/autograd/derivatives.yaml: where.self, mul.Tensor, add.Tensor,
 * sub.Tensor, expm1, minimum; the engine's sum_to for the broadcast [1] parameters and its
 * InputBuffer sums of a tensor's gradients), 25 kernels over E:
 *   where's two gradients where(mask, g, 0) and where(mask, 0, g) 5E each; g * beta 4E twice
 *   (beta needs no gradient); g * alpha_p and g * alpha_n 4E each; the products with a tensor
 *   6E each, five: g * x and g * (alpha_p x) for (alpha_p x) * x, g * x for alpha_p's and
 *   g * (expm1 - x) for alpha_n's gradients, g * (result + 1) for expm1; alpha_p's and alpha_n's
 *   gradients summed to one element 2E each; -g for the sub 4E; result + 1 4E; minimum's
 *   gradient where(x == eps, g / 2, g).masked_fill_(x > eps, 0): two comparisons 3E each, g / 2
 *   4E, the where 7E, the in-place masked_fill 5E; and x's six gradients (alpha_p x, (alpha_p
 *   x) * x, beta x twice, the minimum, the sub) summed by five adds 6E each: 120E (GeLU 8E).
 *   Plus softplus_backward twice and three small kernels on the one-element parameters.
 * Seen on one H200 (bench/results/xielu25_2026-11-29/xielu_probe.json, torch 2.11.0+cu130,
 * transformers 5.17.0, b 2 s 4096 f 21504 under FSDP2): exactly these 12 and 25 large kernels.
 * The ones with a 0-dim or one-element operand run PyTorch's elementwise_kernel<128, 4> with an
 * OffsetCalculator (TensorIterator takes the vectorized path only when every operand is
 * contiguous; a CUDA 0-dim tensor is not a CPU scalar): the products with alpha_p, alpha_n and
 * beta, min(x, eps), the comparisons with eps and where's gradients with the scalar 0; they are
 * priced at the offset path's measured rate (gpu.score_offsets_efficiency, elementwise.c), the
 * rest at the eager rate as every other eager kernel.
 *
 * Saved (derivatives.yaml: where saves its condition; mul.Tensor saves the other operand of a
 * factor that needs a gradient; expm1 its result; minimum both inputs; sub, add nothing): x
 * (by alpha_p * x, (.) * x and min; the plain MLP's count has it), alpha_p * x (2), expm1's
 * result (2), expm1(.) - x (2, by the product with alpha_n, whose gradient needs it) and the
 * mask (1): 7 bytes an element beyond GeLU's input and output. The probe's saved_tensors_hooks
 * list holds exactly those storages: 1937.8 MB against GeLU's 704.6 MB (7 x 176,160,768).
 * Its backward's peak above its start was 1761.6 MB against GeLU's 880.8 MB: 5 bytes an
 * element more (the gradients of the branches and of x in flight; measured, not derived).
 */
#include "hf_xielu.h"

#include <string.h>

#include "elementwise_internal.h"

bool hf_xielu_applies(const model_spec *m, const layout *l)
{
    return layout_is_pytorch(l) && !l->compile && layout_impl_of(l) == IMPL_HF &&
           m->activation == MODEL_ACT_GELU && !strcmp(m->hidden_act, "xielu");
}

double hf_xielu_saved_bytes_per_token(const model_spec *m, const layout *l)
{
    return hf_xielu_applies(m, l) ? 7.0 * m->ffn : 0;
}

double hf_xielu_transient_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    if (!hf_xielu_applies(m, l) || model_moe_layers(m) == m->layers) return 0;
    double tokens = (double)l->mbs * t->seq_len / (l->cp > 0 ? l->cp : 1);
    return 5.0 * tokens * m->ffn / l->tp;
}

/* [E] (.) s, s a 0-dim or one-element tensor (stride 0) of eb bytes: the offset path */
static ew_access scalar_operand(int eb, double elems)
{
    ew_access a = {.pattern = EW_OFFSETS, .esize = {2, 2, eb}, .n = {1, 1, L(elems)}};
    a.stride[0][2] = a.stride[1][2] = 1;
    return a;
}

void hf_xielu_kernels(double e, elementwise_list *out)
{
    pass f = {out->fwd, &out->n_fwd}, b = {out->bwd, &out->n_bwd};
    /* bool operands and where's three inputs have no access of their own: vectorized lumps
     * of their bytes */
    add(f, "xielu.gt", 3 * e, 1, lump(3 * e));
    add(f, "xielu.mul_alpha_p", 4 * e, 1, scalar_operand(2, e));
    add(f, "xielu.mul_x", 6 * e, 1, vec(2, 2, 2, e));
    add(f, "xielu.mul_beta", 4 * e, 2, scalar_operand(4, e));
    add(f, "xielu.add", 6 * e, 2, vec(2, 2, 2, e));
    add(f, "xielu.min_eps", 4 * e, 1, scalar_operand(4, e));
    add(f, "xielu.expm1", 4 * e, 1, vec(2, 2, 0, e));
    add(f, "xielu.sub", 6 * e, 1, vec(2, 2, 2, e));
    add(f, "xielu.mul_alpha_n", 4 * e, 1, scalar_operand(2, e));
    add(f, "xielu.where", 7 * e, 1, lump(7 * e));
    add(f, "xielu.params", 4, 3, vec(2, 2, 0, 1));
    add(b, "xielu.bwd.where", 5 * e, 2, scalar_operand(2, e));
    add(b, "xielu.bwd.mul_beta", 4 * e, 2, scalar_operand(4, e));
    add(b, "xielu.bwd.mul_alpha", 4 * e, 2, scalar_operand(2, e));
    add(b, "xielu.bwd.mul", 6 * e, 5, vec(2, 2, 2, e));
    add(b, "xielu.bwd.sum_alpha", 2 * e, 2, reduce(EW_REDUCE_ROW, 2, 2, 1, e));
    add(b, "xielu.bwd.neg", 4 * e, 1, vec(2, 2, 0, e));
    add(b, "xielu.bwd.add_one", 4 * e, 1, vec(2, 2, 0, e));
    add(b, "xielu.bwd.min_cmp", 3 * e, 2, scalar_operand(4, e));
    add(b, "xielu.bwd.div2", 4 * e, 1, vec(2, 2, 0, e));
    add(b, "xielu.bwd.min_where", 7 * e, 1, lump(7 * e));
    add(b, "xielu.bwd.masked_fill", 5 * e, 1, lump(5 * e));
    add(b, "xielu.bwd.grad_add", 6 * e, 5, vec(2, 2, 2, e));
    add(b, "xielu.bwd.params", 4, 5, vec(2, 2, 0, 1));
}
