/*
 * elementwise_norm.c — the eager norm kernels of Hugging Face models, op by op: LlamaRMSNorm
 * (every Llama-style model), GemmaRMSNorm (Gemma, Gemma 2, Gemma 3), which keeps the product
 * with its weight in fp32, and CohereLayerNorm (Command-R). Out of elementwise.c so that file
 * keeps the layer and head lists.
 *
 * LlamaRMSNorm (transformers modeling_llama.py; PyTorch derivatives.yaml _to_copy,
 * pow.Tensor_Scalar, mean.dim, rsqrt, mul.Tensor):
 *   LlamaRMSNorm forward: x.to(fp32) 6, pow(2) 8, mean(-1) 4, var + eps and rsqrt [T,1],
 *     x * rsqrt 8, .to(bf16) 6, weight * x 4: 36 bytes per element.
 *   Its backward: mul.Tensor -> grad * weight 4 and grad * x 6 summed to [h] 2 (the engine's
 *     sum_to for the broadcast weight); _to_copy_backward -> bf16 to fp32 6; mul -> grad * rstd 8
 *     and grad * x 12 summed to [T,1] 4; rsqrt: -0.5 * grad * result.pow(3) on [T,1];
 *     mean_backward: grad.expand(...) / h materialised 4; pow_backward: grad * (2 *
 *     self.pow(1)): pow(1) is a copy (Pow.cpp pow_Tensor_Scalar_out) 8, 2 * x 8, grad * 12;
 *     the two fp32 gradients of x accumulate 12; _to_copy_backward -> fp32 to bf16 6: 92 bytes.
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
 *
 * CohereLayerNorm (Command-R and Command-R7B: transformers 5.17.0 models/cohere/modeling_cohere.py
 * 59-65, Cohere2LayerNorm the same code; the decoder layers' one norm, the final norm and, where
 * use_qk_norm, the per-head q/k norms): x.float() 6, mean(-1) 4, (x - mean) 8, pow(2) 8, mean 4,
 * + eps and rsqrt on [T,1], (x - mean) again 8, * rsqrt 8, weight.float() * 8 (fp32, [w]
 * broadcast), .to(bf16) 6: 60 bytes an element in 9 kernels. Its backward (derivatives.yaml
 * _to_copy, mul.Tensor, rsqrt, mean.dim, pow.Tensor_Scalar, sub.Tensor): the cast up 6; grad * w
 * 8, grad * x_hat 12 summed to [w] 4; grad * rstd 8, grad * (x - mean) 12 summed to [T,1] 4;
 * mean_backward's expand 4; pow's pow(1) copy 8, 2 * x 8, grad * 12; each sub's -grad 8 summed
 * to [T,1] 4 (twice: both subtractions take the mean); the mean's expand 4; the fp32 input's
 * three gradients summed, two adds of 12; the cast down 6: 144 bytes in 19 kernels. Priced
 * before as one fused LayerNorm (4 and 8 bytes): nn.LayerNorm's, which Cohere does not call.
 */
#include "elementwise_internal.h"

#include <string.h>

#include "layout.h"
#include "model.h"

bool ew_cohere_norm(const model_spec *m, const layout *l)
{
    return m->norm != MODEL_NORM_RMS && layout_impl_of(l) == IMPL_HF && !l->compile &&
           (!strcmp(m->hf_model_type, "cohere") || !strcmp(m->hf_model_type, "cohere2"));
}

/* LlamaRMSNorm over t rows of width w, normalised over nw (h; Qwen3's q/k norms: head_dim),
 * `count` times (the header comment: 36 and 92 bytes); qk: Qwen3's per-head q/k
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

void ew_cohere_layer_norm(pass f, pass b, double t, double w, double nw, int count, bool qk)
{
    static const char *const names[2][28] = {
        {"cnorm.to_fp32", "cnorm.mean", "cnorm.sub", "cnorm.pow", "cnorm.var_mean", "cnorm.sub2",
         "cnorm.mul_rstd", "cnorm.mul_weight", "cnorm.to_bf16", "cnorm.bwd.to_fp32",
         "cnorm.bwd.mul_weight", "cnorm.bwd.mul_x", "cnorm.bwd.sum_weight", "cnorm.bwd.mul_rstd",
         "cnorm.bwd.mul_x_fp32", "cnorm.bwd.sum_rstd", "cnorm.bwd.var_mean", "cnorm.bwd.pow1_copy",
         "cnorm.bwd.mul_2", "cnorm.bwd.mul_grad", "cnorm.bwd.neg", "cnorm.bwd.sum_mean",
         "cnorm.bwd.neg2", "cnorm.bwd.sum_mean2", "cnorm.bwd.mean", "cnorm.bwd.add_fp32",
         "cnorm.bwd.add_fp32_2", "cnorm.bwd.to_bf16"},
        {"cqknorm.to_fp32", "cqknorm.mean", "cqknorm.sub", "cqknorm.pow", "cqknorm.var_mean",
         "cqknorm.sub2", "cqknorm.mul_rstd", "cqknorm.mul_weight", "cqknorm.to_bf16",
         "cqknorm.bwd.to_fp32", "cqknorm.bwd.mul_weight", "cqknorm.bwd.mul_x",
         "cqknorm.bwd.sum_weight", "cqknorm.bwd.mul_rstd", "cqknorm.bwd.mul_x_fp32",
         "cqknorm.bwd.sum_rstd", "cqknorm.bwd.var_mean", "cqknorm.bwd.pow1_copy",
         "cqknorm.bwd.mul_2", "cqknorm.bwd.mul_grad", "cqknorm.bwd.neg", "cqknorm.bwd.sum_mean",
         "cqknorm.bwd.neg2", "cqknorm.bwd.sum_mean2", "cqknorm.bwd.mean", "cqknorm.bwd.add_fp32",
         "cqknorm.bwd.add_fp32_2", "cqknorm.bwd.to_bf16"},
    };
    /* bytes per element (header comment): 9 forward kernels (60), then 19 backward ones (144) */
    static const double per[28] = {6, 4, 8, 8, 4, 8, 8, 8, 6, 6,  8, 12, 4, 8, 12, 4, 4, 8,
                                   8, 12, 8, 4, 8, 4, 4, 12, 12, 6};
    double e = t * w, r = e / nw;
    const ew_access acc[28] = {
        contig(EW_UNROLLED, 4, 2, 0, e), reduce(EW_REDUCE_ROW, 4, 4, r, nw),
        bcast(4, r, nw, true), vec(4, 4, 0, e), reduce(EW_REDUCE_ROW, 4, 4, r, nw),
        bcast(4, r, nw, true), bcast(4, r, nw, true), bcast(4, r, nw, false), vec(2, 4, 0, e),
        contig(EW_UNROLLED, 4, 2, 0, e), bcast(4, r, nw, false), vec(4, 4, 4, e),
        reduce(EW_REDUCE_COL, 4, 4, r, nw), bcast(4, r, nw, true), vec(4, 4, 4, e),
        reduce(EW_REDUCE_ROW, 4, 4, r, nw), expand(4, r, nw), vec(4, 4, 0, e), vec(4, 4, 0, e),
        vec(4, 4, 4, e), vec(4, 4, 0, e), reduce(EW_REDUCE_ROW, 4, 4, r, nw), vec(4, 4, 0, e),
        reduce(EW_REDUCE_ROW, 4, 4, r, nw), expand(4, r, nw), vec(4, 4, 4, e), vec(4, 4, 4, e),
        vec(2, 4, 0, e),
    };
    for (int i = 0; i < 28; i++) add(i < 9 ? f : b, names[qk][i], per[i] * e, count, acc[i]);
}
