/*
 * hf_eager_attn.h — Hugging Face transformers' eager attention (eager_attention_forward) under
 * --impl hf: which attention a layout really runs, and what the eager one costs a layer.
 *
 * Why (issue 14): transformers refuses SDPA for some model classes (5.17.0: GptOssForCausalLM,
 * models/gpt_oss/modeling_gpt_oss.py line 387 `_supports_sdpa = False`; modeling_utils.py line
 * 1669 raises "does not support an attention implementation through
 * torch.nn.functional.scaled_dot_product_attention yet"), so a Hugging Face FSDP2 user trains
 * them with attn_implementation="eager": QK^T and PV as torch.matmul over the explicit
 * b x heads x s x s scores and each op between them (scale, mask add, softmax, ...) its own
 * kernel (modeling_gpt_oss.py lines 235-263; Llama's lines 191-213 of
 * models/llama/modeling_llama.py). Pricing that as a fused flash kernel left out GiBs a layer
 * and most of the attention's time. training.attention = unfused means that eager function
 * under impl hf; it is the default there for the classes that refuse SDPA.
 */
#ifndef PLAN_HF_EAGER_ATTN_H
#define PLAN_HF_EAGER_ATTN_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"
#include "system.h"

/* true for the model types whose transformers 5.17.0 class sets _supports_sdpa = False (the
 * decoder language models among them: gpt_oss, deepseek_v4, granite_swa, granitemoe_swa, hy_v4,
 * mimo_v2_flash) */
bool hf_eager_refuses_sdpa(const model_spec *m);

/* The attention the layout runs: t->attention, except that under impl hf a model that refuses
 * SDPA runs eager (unfused) unless the user asked flash explicitly (hf_eager_flash_refused). */
training_attention layout_attention_of(const model_spec *m, const training_spec *t,
                                       const layout *l);

/* The user asked --attention flash for such a model under impl hf: a rule violation. */
bool hf_eager_flash_refused(const model_spec *m, const training_spec *t, const layout *l);

/* The layout runs transformers' eager_attention_forward (impl hf, unfused, not MLA). */
bool hf_eager_attn_applies(const model_spec *m, const training_spec *t, const layout *l);

/* Key columns per query row of the softmax: s, plus GPT-OSS's sink column. */
double hf_eager_keys(const model_spec *m, const training_spec *t);

/* Bytes autograd keeps per token of one layer for the scores, beyond the base list of
 * memory_activations.c (q, k, v, context): per head and key column the softmax's output, the
 * bf16 copy PV's matmul saves, tanh's output under soft-capping, dropout's mask and output;
 * GPT-OSS's max indices; and repeat_kv's copies of k and v (matmul saves them). */
double hf_eager_saved_bytes_per_token(const model_spec *m, const training_spec *t,
                                      const layout *l);

/* What the layer in flight holds beyond its saved bytes at its forward or backward peak, and
 * the model's additive masks, alive through the step (memory.c adds it once, as `working`). */
double hf_eager_transient_bytes(const model_spec *m, const training_spec *t, const layout *l);

/* The name of GPT-OSS's cat with the sinks (hf_eager_kernel_s prices it by its output's size) */
#define HF_EAGER_CAT "eager.sinks_cat"

/* The eager kernels over the scores of one layer (rows = tokens x heads / tp query rows),
 * forward and backward, as an eager list (elementwise.h). */
void hf_eager_score_kernels(const model_spec *m, const training_spec *t, const layout *l,
                            double rows, elementwise_list *out);

/* One launch of a kernel of hf_eager_score_kernels (names "eager.") at the rate measured for the
 * kernel PyTorch runs for it at the scores' shapes (system.h gpu.score_*; its access pattern,
 * and for the softmax whether its rows are 16-byte aligned), with the eager launch gap; < 0
 * where the system has no such rate (the caller's eager rate then). */
double hf_eager_kernel_s(const system_spec *sys, const elementwise_list *e,
                         const elementwise_kernel *k);

/* P @ V and its dV over `rows` query rows (tokens x heads / tp) with value head dim vd:
 * aligned_s, or where the probabilities' rows are an odd number of elements apart (GPT-OSS's
 * sink column: a slice of rows of s + 1) the measured 2-byte-aligned GEMM rates
 * (gpu.gemm_align1_*). */
void hf_eager_pv_gemm_s(const system_spec *sys, const model_spec *m, const training_spec *t,
                        double rows, double vd, double aligned_s, double *fwd_s, double *dv_s);

#endif
