/*
 * elementwise_norm.c — the eager RMSNorm kernels of Hugging Face models, op by op: LlamaRMSNorm
 * (every Llama-style model; derivation in elementwise.c's header comment) and GemmaRMSNorm
 * (Gemma, Gemma 2, Gemma 3), which keeps the product with its weight in fp32. Out of
 * elementwise.c so that file keeps the layer and head lists.
 *
 * GemmaRMSNorm (transformers 5.17.0 models/gemma3/modeling_gemma3.py Gemma3RMSNorm, lines
 * 136-150; models/gemma2/modeling_gemma2.py Gemma2RMSNorm, lines 49-63, the same code):
 *   output = self._norm(x.float())            x.float() 6, pow(2) 8, mean(-1) 4, + eps and
 *                                             rsqrt on [T,1], x * rsqrt 8
 *   output = output * (1.0 + self.weight.float())   an fp32 product with the [h] weight 8
 *   return output.type_as(x)                  the cast back to bf16 6: 40 bytes an element.
 * Its backward (torch tools/autograd/derivatives.yaml _to_copy, mul.Tensor, rsqrt, mean.dim,
 * pow.Tensor_Scalar; the same FunctionsManual paths as LlamaRMSNorm's): type_as's backward casts
 * the bf16 gradient to fp32 first 6; mul.Tensor -> grad * (1 + w) 8 and grad * x_hat 12 summed
 * to [h] 4, in fp32 (LlamaRMSNorm's are bf16: 4, 6, 2); from there LlamaRMSNorm's fp32 chain:
 * grad * rstd 8, grad * x 12 summed to [T,1] 4, mean_backward's expand 4, pow(1)'s copy 8,
 * 2 * x 8, grad * 12, the fp32 sum 12, the cast to bf16 6: 104 bytes an element.
 * Measured per decoder layer in real steps on one H200 (bench/results/gemma19_2026-11-29,
 * breakdown of the profiled Gemma-3-1B step): six pow launches forward (4 hidden-size norms +
 * the q and k norms), 24 in PowBackward0, the fp32 x.float() and x * rstd tensors saved (the
 * allocator's owners lines 143 and 146, memory_activations.c).
 */
#include "elementwise_internal.h"

/* LlamaRMSNorm over t rows of width w, normalised over nw (h; Qwen3's q/k norms: head_dim),
 * `count` times (elementwise.c's header comment: 36 and 92 bytes); qk: Qwen3's per-head q/k
 * norms, named apart. */
void ew_rms_norm(pass f, pass b, double t, double w, double nw, int count, bool qk)
{
    static const char *const names[2][19] = {
        {"rmsnorm.to_fp32", "rmsnorm.pow", "rmsnorm.mean", "rmsnorm.mul_rstd",
         "rmsnorm.to_bf16", "rmsnorm.mul_weight", "rmsnorm.bwd.mul_weight", "rmsnorm.bwd.mul_x",
         "rmsnorm.bwd.sum_weight", "rmsnorm.bwd.to_fp32", "rmsnorm.bwd.mul_rstd",
         "rmsnorm.bwd.mul_x_fp32", "rmsnorm.bwd.sum_rstd", "rmsnorm.bwd.mean",
         "rmsnorm.bwd.pow1_copy", "rmsnorm.bwd.mul_2", "rmsnorm.bwd.mul_grad",
         "rmsnorm.bwd.add_fp32", "rmsnorm.bwd.to_bf16"},
        {"qknorm.to_fp32", "qknorm.pow", "qknorm.mean", "qknorm.mul_rstd", "qknorm.to_bf16",
         "qknorm.mul_weight", "qknorm.bwd.mul_weight", "qknorm.bwd.mul_x",
         "qknorm.bwd.sum_weight", "qknorm.bwd.to_fp32", "qknorm.bwd.mul_rstd",
         "qknorm.bwd.mul_x_fp32", "qknorm.bwd.sum_rstd", "qknorm.bwd.mean",
         "qknorm.bwd.pow1_copy", "qknorm.bwd.mul_2", "qknorm.bwd.mul_grad",
         "qknorm.bwd.add_fp32", "qknorm.bwd.to_bf16"},
    };
    /* bytes per element: 6 forward kernels, then 13 backward ones */
    static const double per[19] = {6, 8, 4, 8, 6, 4, 4, 6, 2, 6, 8, 12, 4, 4, 8, 8, 12, 12, 6};
    double e = t * w, r = e / nw;
    /* the kernel of each (bf16 2, fp32 4): x.to(fp32) casts; pow contiguous; mean over h;
     * x * rstd broadcasts [T,1]; .to(bf16) vectorized; weight * x broadcasts [h]; backward:
     * grad * weight broadcast, grad * x contiguous, sum_to [h] over rows, cast, grad * rstd
     * broadcast, grad * x fp32, sum_to [T,1] over h, expand / h, pow(1)'s Memcpy, 2 * x,
     * grad * (2x), the fp32 add, the cast back */
    const ew_access acc[19] = {
        contig(EW_UNROLLED, 4, 2, 0, e), vec(4, 4, 0, e), reduce(EW_REDUCE_ROW, 4, 4, r, nw),
        bcast(4, r, nw, true), vec(2, 4, 0, e), bcast(2, r, nw, false),
        bcast(2, r, nw, false), vec(2, 2, 2, e), reduce(EW_REDUCE_COL, 2, 2, r, nw),
        contig(EW_UNROLLED, 4, 2, 0, e), bcast(4, r, nw, true), vec(4, 4, 4, e),
        reduce(EW_REDUCE_ROW, 4, 4, r, nw), expand(4, r, nw), vec(4, 4, 0, e), vec(4, 4, 0, e),
        vec(4, 4, 4, e), vec(4, 4, 4, e), vec(2, 4, 0, e),
    };
    for (int i = 0; i < 19; i++) add(i < 6 ? f : b, names[qk][i], per[i] * e, count, acc[i]);
}

void ew_gemma_rms_norm(pass f, pass b, double t, double w, double nw, int count, bool qk)
{
    static const char *const names[2][19] = {
        {"gnorm.to_fp32", "gnorm.pow", "gnorm.mean", "gnorm.mul_rstd", "gnorm.mul_weight",
         "gnorm.to_bf16", "gnorm.bwd.to_fp32", "gnorm.bwd.mul_weight", "gnorm.bwd.mul_x",
         "gnorm.bwd.sum_weight", "gnorm.bwd.mul_rstd", "gnorm.bwd.mul_x_fp32",
         "gnorm.bwd.sum_rstd", "gnorm.bwd.mean", "gnorm.bwd.pow1_copy", "gnorm.bwd.mul_2",
         "gnorm.bwd.mul_grad", "gnorm.bwd.add_fp32", "gnorm.bwd.to_bf16"},
        {"gqknorm.to_fp32", "gqknorm.pow", "gqknorm.mean", "gqknorm.mul_rstd",
         "gqknorm.mul_weight", "gqknorm.to_bf16", "gqknorm.bwd.to_fp32",
         "gqknorm.bwd.mul_weight", "gqknorm.bwd.mul_x", "gqknorm.bwd.sum_weight",
         "gqknorm.bwd.mul_rstd", "gqknorm.bwd.mul_x_fp32", "gqknorm.bwd.sum_rstd",
         "gqknorm.bwd.mean", "gqknorm.bwd.pow1_copy", "gqknorm.bwd.mul_2",
         "gqknorm.bwd.mul_grad", "gqknorm.bwd.add_fp32", "gqknorm.bwd.to_bf16"},
    };
    /* bytes per element (header comment): 6 forward kernels (40), then 13 backward ones (104) */
    static const double per[19] = {6, 8, 4, 8, 8, 6, 6, 8, 12, 4, 8, 12, 4, 4, 8, 8, 12, 12, 6};
    double e = t * w, r = e / nw;
    /* the kernels: the cast up; pow; mean over the row; x * rstd broadcasts [T,1]; the fp32
     * product with (1 + w) broadcasts [h]; the cast down; backward: the cast up, the fp32
     * products with (1 + w) (broadcast) and x_hat, the [h] sum over rows, then LlamaRMSNorm's
     * fp32 chain (elementwise.c's header comment) */
    const ew_access acc[19] = {
        contig(EW_UNROLLED, 4, 2, 0, e), vec(4, 4, 0, e), reduce(EW_REDUCE_ROW, 4, 4, r, nw),
        bcast(4, r, nw, true), bcast(4, r, nw, false), vec(2, 4, 0, e),
        contig(EW_UNROLLED, 4, 2, 0, e), bcast(4, r, nw, false), vec(4, 4, 4, e),
        reduce(EW_REDUCE_COL, 4, 4, r, nw), bcast(4, r, nw, true), vec(4, 4, 4, e),
        reduce(EW_REDUCE_ROW, 4, 4, r, nw), expand(4, r, nw), vec(4, 4, 0, e), vec(4, 4, 0, e),
        vec(4, 4, 4, e), vec(4, 4, 4, e), vec(2, 4, 0, e),
    };
    for (int i = 0; i < 19; i++) add(i < 6 ? f : b, names[qk][i], per[i] * e, count, acc[i]);
}
