/*
 * alloc_step.h — the caching allocator's reserved memory for one GPU's torch FSDP2 training
 * steps, by replaying plan's own list of the tensors those steps allocate and free
 * (alloc_replay.h) instead of adding slack to totals (issue 14; the mechanism:
 * bench/results/resv20_2026-11-29, the validation: bench/results/alloc21_2026-11-29).
 *
 * The list, in program order: the model built in fp32 on the device and each FSDP2 unit's
 * sharded copies (fully_shard per decoder layer, then the root); per step the root's and each
 * layer's bf16 parameters (FSDP2's cast at world size 1), the rotary tables, every tensor of a
 * decoder layer's forward with its lifetime (saved for the backward or freed when its Python
 * reference drops; the saved set is hfsav20's, tensor by tensor), the loss chain (bf16 logits,
 * fp32 upcast, log-softmax output; in the backward nll's and log-softmax's fp32 gradients and
 * the bf16 one), the backward's gradients and bf16 weight gradients layer by layer with
 * FSDP2's fp32 reduce-scatter input on the compute stream (held until the next unit's
 * post-backward) and output on its side stream, the root resharded after its forward and
 * gathered again for the backward (each gather a bf16 cast, then the storage: res22's
 * traces), then AdamW: its two fp32 states per
 * parameter made at the first step in parameter order (torch/optim/adam.py _init_group) and,
 * for the foreach implementation, the list of sqrt temporaries (_multi_tensor_adam). Steps 0,
 * 1 and 2 are replayed; segments are never returned.
 *
 * Covered: one GPU (dp = tp = pp = cp = 1), torch FSDP2 (the guide's trainer or torchtitan),
 * dense decoder layers of the Llama family (Llama, Qwen2, Qwen3's q/k norms), Hugging Face or
 * native layer code, and Hugging Face Phi-3 layers (fused qkv_proj and gate_up_proj, partial
 * rotary: Phi-4, Phi-4-mini; bench/results/cov22_2026-11-29) where no explicit window mask is
 * built, no recompute or full recompute of every layer, eager. Since rep23 also window masks,
 * Gemma 2/3 and softmax-routed HF MoE blocks; since cmp23 transformers' eager attention
 * (attn_implementation="eager": the explicit scores, alloc_step_eager.c) in the Llama-family HF
 * layers with one causal mask. Since replay25 the Hugging Face layer forms beyond Llama's
 * (alloc_step_forms.c): OLMo 2, EXAONE 4.0 (post-norms), OLMoE (q/k norms over the projection),
 * Command-R and Cohere2 (CohereLayerNorm, parallel block), StableLM, StarCoder2 and GPT-NeoX
 * (nn.LayerNorm, biases, plain MLPs, dropout), Seed-OSS (dropout). Since replay26 PhiMoE
 * (alloc_step_phimoe.c: input jitter, the sparsemixer router) and Falcon-7B (alloc_step_falcon.c:
 * multi_query under SDPA's math backend). Anything else is reported as not covered.
 */
#ifndef PLAN_ALLOC_STEP_H
#define PLAN_ALLOC_STEP_H

#include <stdbool.h>

#include "layout.h"
#include "model.h"

typedef struct {
    /* reserved bytes of the default stream after each phase (cumulative: segments stay) */
    double build_bytes, fwd0_bytes, bwd0_bytes, opt0_bytes, step1_bytes, step2_bytes;
    double side_bytes;          /* FSDP2's reduce-scatter stream's segments */
    double peak_bytes;          /* all streams, what reserved_bytes.all.peak reads */
    bool cache_released;        /* a cudaMalloc reached the capacity: the cache was released */
    bool out_of_memory;         /* a cudaMalloc failed even after the cache was released */
    double oom_need_bytes;      /* then the reserved bytes it needed (alloc_replay.h), else 0 */
    double peak_allocated_bytes;
} alloc_step_reserved;

/* Is l's step one that alloc_step_replay covers (above; one micro-batch a step)? */
bool alloc_step_covered(const model_spec *m, const training_spec *t, const layout *l);

/* Replay three steps of l on a device whose cudaMalloc can give allocator_capacity_bytes (the
 * GPU's memory less what lies outside the allocator; 0: unlimited); 0 on success, -1 when not
 * covered or out of host memory. */
int alloc_step_replay(const model_spec *m, const training_spec *t, const layout *l,
                      double allocator_capacity_bytes, alloc_step_reserved *out);

/* The bytes layer `layer`'s forward leaves saved for its backward in the replay's list (its
 * input counted where the layer keeps it; its output not), for l's micro-batch on one GPU and
 * the layer form alloc_step_form_of gives m, whatever else l is; -1 where the form is not
 * listed. The tests hold memory_layer_activation_bytes to it (memforms25). */
double alloc_step_layer_saved_bytes(const model_spec *m, const training_spec *t, const layout *l,
                                    int layer);

/* Everything the replay reads of a covered layout (the memo's key, memory_memo.h): the
 * sequence, micro-batch, recompute, layer code, AdamW path, the allocator's capacity and the
 * model's shape; ints, longs and a double: no padding. */
typedef struct {
    int seq_len, mbs, recompute, impl, optimizer_impl, pad;
    double allocator_capacity_bytes;
    /* the model's fields the list reads (for a cache that serves any model) */
    long layers, hidden, heads, kv_heads, head_dim, ffn, vocab, flags;
    long rotary_ppm; /* rotary fraction in millionths (Phi-3's partial rotary) */
    long mask;       /* the share of layers taking HF's window mask, in millionths */
    long experts, top_k, expert_ffn; /* MoE blocks (0: dense) */
    long q_lora_rank, kv_lora_rank, qk_rope_dim, v_head_dim, shared_ffn, dense_first; /* MLA */
} alloc_step_key;
alloc_step_key alloc_step_key_of(const model_spec *m, const training_spec *t, const layout *l,
                                 double allocator_capacity_bytes);

#endif
