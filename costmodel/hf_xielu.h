/*
 * hf_xielu.h — transformers' xIELU activation (Apertus, hidden_act "xielu") as an FSDP2 user's
 * eager step runs it: a chain of PyTorch ops, not one kernel, with more saved tensors.
 *
 * Why (issue 14): Apertus-8B cut to 12 layers (ho25-apertus-L12-s4k-b2) ran 21% slower and held
 * 15.8% more than plan predicted when plan priced its MLP activation as one GeLU kernel.
 * transformers 5.17.0 activations.py XIELUActivation (lines 231-321; _xielu_python, lines
 * 281-288) uses the fused CUDA kernel of the optional `xielu` package when it imports, and
 * otherwise (the package is not a transformers dependency; it was not installed where the run
 * ran) evaluates
 *     where(x > 0, alpha_p * x * x + beta * x,
 *           (expm1(min(x, eps)) - x) * alpha_n + beta * x)
 * op by op over the up projection's output, alpha_p = softplus(.) and alpha_n = beta +
 * softplus(.) of two learned one-element parameters, beta and eps 0-dim buffers (ApertusMLP,
 * models/apertus/modeling_apertus.py lines 43-56, passes dtype=config.dtype: fp32 under
 * realrun.py, and FSDP2 casts only the parameters to bf16). hf_xielu.c lists the kernels and
 * the saved tensors, both checked on one H200 (bench/realruns/xielu_probe.py,
 * bench/results/xielu25_2026-11-29).
 */
#ifndef PLAN_HF_XIELU_H
#define PLAN_HF_XIELU_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"

/* The layout runs transformers' Python xIELU: eager PyTorch (not compiled), the Hugging Face
 * modeling code, a plain (up, act, down) MLP whose config says hidden_act "xielu". */
bool hf_xielu_applies(const model_spec *m, const layout *l);

/* Bytes autograd keeps per token of one dense layer beyond the plain MLP's activation input and
 * output (memory_activations.c counts those 4 f): the bool mask of x > 0 (1), alpha_p * x (2),
 * expm1's result (2) and expm1(.) - x (2): 7 f, of the whole FFN width (TP splits it as the
 * rest of the MLP's). 0 where it does not apply. */
double hf_xielu_saved_bytes_per_token(const model_spec *m, const layout *l);

/* What the activation's backward holds at its peak beyond a GeLU's (the layer in flight's
 * working bytes, memory.c), per micro-batch of one GPU. 0 where it does not apply. */
double hf_xielu_transient_bytes(const model_spec *m, const training_spec *t, const layout *l);

/* Appends the activation's kernels over `elems` = tokens x ffn / tp elements to a layer's
 * eager list (forward and backward; in place of the one-kernel GeLU). */
void hf_xielu_kernels(double elems, elementwise_list *out);

#endif
