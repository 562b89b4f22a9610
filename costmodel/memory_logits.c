/*
 * memory_logits.c — the loss's memory: the logits a micro-batch keeps at the loss's peak and
 * the largest single tensor it allocates, per implementation (Megatron's vocab-parallel loss,
 * Transformer Engine's fused loss, torch's cross entropy eager or compiled, torchtitan's
 * loss_parallel). Out of memory.c so that file holds the layer and stage sums; declared in
 * memory.h, sources beside each term.
 */
#include "memory.h"

double memory_logits_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    double tokens = (double)l->mbs * t->seq_len / l->cp;
    /* Megatron's vocab-parallel cross entropy keeps fp32 logits (Korthikanti Sec. 4.3: 4sbv/t).
     * Hugging Face models under FSDP2 keep the bf16 logits, their fp32 upcast and the fp32
     * log-softmax (transformers ForCausalLMLoss: logits.float(), then cross_entropy). */
    double bytes_per = layout_is_pytorch(l) ? 10.0 : 4.0;
    /* Megatron's fused loss in Transformer Engine's kernel (layout.h te_cross_entropy;
     * transformer_engine/pytorch/triton/cross_entropy.py): the bf16 logits are kept and their
     * gradient written into them, beside three fp32 figures per token */
    if (!layout_is_pytorch(l) && l->te_cross_entropy) bytes_per = 2.0;
    /* issue 14: the peak of torch's cross entropy on fp32 logits is in its backward:
     * log_softmax keeps its fp32 output (4), nll_loss_backward fills the fp32 gradient (4) and
     * _log_softmax_backward_data writes the fp32 gradient of the logits (4): 12 bytes per logit
     * at once (the bf16 logits and their fp32 copy are gone by then: Hugging Face's
     * ForCausalLMLoss drops them with the output object; torchtitan's trainer deletes its
     * `pred` before loss.backward(), torchtitan/trainer.py:795 at b5bcd76, and so does
     * bench/realruns/realrun.py since 7caf997). A native loop that keeps its bf16 logits in a
     * local through the backward (training_spec.hold_logits: bench/realruns/parallel_run.py,
     * realrun.py before 7caf997) holds 2 more. Measured on one H200 (bench/results/
     * sac20_2026-11-29): Llama-3.1-8B cut to 16 layers, s4k, mbs 4, SAC, peak allocated 90.07 GiB
     * under realrun.py and 93.99 GiB under parallel_run.py, 3.92 GiB apart = 2 x 16,384 x
     * 128,256 B. Seen in bench/realruns: Qwen2.5-1.5B seq 4096 mbs 8 ran out of memory asking
     * for one more fp32 logits buffer (18.5 GiB = 32768 x 151936 x 4 B). */
    if (layout_is_pytorch(l))
        bytes_per = layout_impl_of(l) == IMPL_NATIVE && t->hold_logits ? 14.0 : 12.0;
    /* Gemma 2's final-logit soft-capping (elementwise.c elementwise_head: logits / cap, tanh,
     * * cap on the bf16 logits) leaves one bf16 logits tensor alive through the loss's backward,
     * the tanh output its backward reads (derivatives.yaml tanh: tanh_backward(grad, result)):
     * 2 bytes a logit more. Measured on one H200 (bench/results/gemma19_2026-11-29
     * owners.jsonl, Gemma-2-9B cut to 4 layers, seq 6144, mbs 2: at the loss backward's peak two
     * fp32 buffers without a Python frame 23.44 GiB, log_softmax's output 11.72 GiB and a bf16
     * tensor of the soft-capping lines 5.86 GiB: 14 x 12,288 x 256,000 B) */
    if (layout_is_pytorch(l) && layout_impl_of(l) == IMPL_HF && m->final_logit_softcap > 0)
        bytes_per += 2.0;
    /* torchtitan's loss_parallel (tp > 1, vocab-sharded logits): its fused backward,
     * torch/distributed/tensor/parallel/loss.py _nll_loss_and_log_softmax_backward, returns
     * (grad_input + torch.exp(x)) * grad_output: the zeroed grad_input, exp(x) and their sum
     * (fp32 each) are alive at once beside the saved log-softmax x and the bf16 logits, 4 bytes
     * a logit more than torch's nll_loss_backward + _log_softmax_backward_data */
    if (l->framework == FRAMEWORK_TORCHTITAN && l->tp > 1 && layout_impl_of(l) == IMPL_NATIVE)
        bytes_per += 4.0;
    /* the loss compiled (layout_loss_compiled: torchtitan's default compile.components): one
     * Inductor graph reads the bf16 logits and saves only per-token figures; its backward
     * writes the logits' gradient in bf16. The bf16 logits (2, kept for the backward) and their
     * bf16 gradient (2) are what is alive at the peak. Measured on one H100 (torch 2.11,
     * bench/results/compile_loss_2026-11-28): the peak falls 9.2-9.5 bytes a logit from the
     * eager loss's, against 14 - 4 = 10 here. */
    if (layout_loss_compiled(l)) bytes_per = 4.0;
    return tokens * bytes_per * (double)m->vocab / l->tp;
}

double memory_largest_block_bytes(const model_spec *m, const training_spec *t, const layout *l)
{
    /* TE's fused loss keeps no fp32 copy: its largest tensor is the bf16 logits themselves */
    if ((!layout_is_pytorch(l) && l->te_cross_entropy) || layout_loss_compiled(l))
        return (double)l->mbs * t->seq_len / l->cp * 2.0 * (double)m->vocab / l->tp;
    /* torch's cross entropy allocates each fp32 buffer (the upcast, log_softmax's output, the
     * gradients) as one tensor of tokens x vocab/tp; Megatron's vocab-parallel loss its fp32
     * logits likewise (Korthikanti Sec. 4.3) */
    return (double)l->mbs * t->seq_len / l->cp * 4.0 * (double)m->vocab / l->tp;
}
