/*
 * elementwise_legacy.c — the eager kernels of Megatron-LM's own attention layer of 2021-22
 * (training.attention = unfused under Megatron: the A100 golden rows' code) that the fused
 * lumps of elementwise.c and the attention core's softmax and dropout leave out; see
 * elementwise.h elementwise_megatron_unfused_attention. Cited at Megatron-LM 9aad9203aa (the
 * code of Korthikanti et al. 2022): megatron/model/transformer.py CoreAttention.forward
 * (torch.baddbmm line 245, context permute(2, 0, 1, 3).contiguous() line 299),
 * ParallelAttention.forward (mpu.split_tensor_along_last_dim of the QKV output, line 434) and
 * megatron/mpu/layers.py LinearWithGradAccumulationAndAsyncCommunication (bias added after
 * the GEMM, lines 235-237; its gradient, line 306). The SC'21 code at 6985e58 has the same:
 * transformer.py lines 207, 269 and 336, and layers.py line 284, F.linear(input, weight, bias)
 * on the 3-D input, which PyTorch runs as matmul then an in-place bias add.
 */
#include "elementwise.h"

#include "elementwise_internal.h"

void elementwise_megatron_unfused_attention(const model_spec *m, const layout *l, double tokens,
                                            elementwise_list *core, elementwise_list *qkv)
{
    core->eager = qkv->eager = true;
    core->alone = qkv->alone = false;
    core->inductor = qkv->inductor = false;
    core->n_fwd = core->n_bwd = qkv->n_fwd = qkv->n_bwd = 0;
    if (l->framework != FRAMEWORK_MEGATRON || m->mla) return;
    double tp = l->tp;
    double q = model_q_dim(m) / tp, k = model_kv_dim(m) / tp;
    double w = q + 2.0 * k;           /* the QKV Linear's output width on this GPU */
    double e_ctx = tokens * q, e_qk = tokens * (q + k), e_qkv = tokens * w;
    pass cf = {core->fwd, &core->n_fwd}, cb = {core->bwd, &core->n_bwd};
    pass qf = {qkv->fwd, &qkv->n_fwd}, qb = {qkv->bwd, &qkv->n_bwd};
    /* the core (checkpointed whole under selective recompute, so recomputed with it): the
     * context's context_layer.permute(2, 0, 1, 3).contiguous() copy, read and write 2 bytes;
     * backward, baddbmm's alpha = 1/norm_factor applied to the dQ and dK bmm results by a mul of
     * its own (torch's derivatives.yaml baddbmm: maybe_multiply(grad.bmm(..), alpha)) */
    add(cf, "attn.context_copy", 4.0 * e_ctx, 1, vec(2, 2, 0, e_ctx));
    add(cb, "attn.bwd.alpha_mul", 4.0 * e_qk, 1, vec(2, 2, 0, e_qk));
    /* the QKV Linear: forward, its bias added after the GEMM (`output = output + bias`);
     * backward, the bias gradient (grad_output.sum(dim=0), a column sum) and the cat of dQ, dK and dV into the gradient of mixed_x_layer, which
     * mpu.split_tensor_along_last_dim split with torch.split (its backward is a cat) */
    if (m->qkv_bias) {
        add(qf, "qkv.bias_add", 4.0 * e_qkv, 1, vec(2, 2, 2, e_qkv));
        add(qb, "qkv.bias_grad", 2.0 * e_qkv, 1, reduce(EW_REDUCE_COL, 2, 2, tokens, w));
    }
    add(qb, "qkv.split_cat", 4.0 * e_qkv, 1, lump(4.0 * e_qkv));
}
