/*
 * hf_experts.h — the routing kernels of a Hugging Face transformers 5.x MoE block as bench/
 * realruns ran it (impl hf, eager): what the GPU runs around the two grouped expert GEMMs, and
 * how many launches the host issues for them.
 *
 * transformers 5.x runs a MoE block's routed experts through `experts_implementation`;
 * the realruns' MoE runs recorded "grouped_mm" (bench/realruns/results/h100-2026-11-24.jsonl,
 * h200-2026-11-24.jsonl: q3moe-*, mixtral-*), and their measured kernel list shows it
 * (results/kernels-h100.json, qwen3-30b-a3b per layer: 6 prepare_grouped_gemm_data + 6 cutlass
 * grouped GEMM kernels, cub radix sorts, a histogram, a scan, gathers and index backward
 * kernels; no per-expert GEMM). The eager per-expert Python loop (torch.where per expert, a
 * device-to-host sync each) is not what ran and is not priced here. hf_experts.c lists the
 * kernels op by op with its sources.
 */
#ifndef PLAN_HF_EXPERTS_H
#define PLAN_HF_EXPERTS_H

#include <stdbool.h>

#include "elementwise.h"
#include "layout.h"
#include "model.h"

/* Does l run the experts as transformers' grouped_mm path: Hugging Face modeling code in eager
 * PyTorch (impl hf, no torch.compile), experts not split by EP or TP. */
bool hf_experts_applies(const layout *l);

/* The routing kernels of one MoE block over `tokens` tokens on this GPU, forward (out->fwd) and
 * backward (out->bwd): router softmax / top-k / renormalisation, the token gather, the sort by
 * expert, the offsets, the routing-weight product, the unpermute and the top-k sum, and their
 * autograd backward (index_put_ with accumulate for each gather). The SwiGLU between the GEMMs
 * and the GEMMs themselves are priced elsewhere (elementwise.c, layer_recipe.c). out->eager and
 * out->alone as elementwise_layer sets them. */
void hf_experts_routing(const model_spec *m, const layout *l, double tokens,
                        elementwise_list *out);

/* The experts' SwiGLU kernels of an elementwise list (elementwise.c's "experts.act",
 * "experts.mul", "experts.bwd.mul", "experts.bwd.act" over `rows` routed rows of the expert
 * width) set to the access transformers' grouped_mm path runs: gate and up are the two halves of
 * one [rows, 2f] output (chunk(2, dim=-1)), views with a row stride of 2f, so SiLU, the product
 * and their backward take TensorIterator's offset path (elementwise_kernel<128, 4> in the
 * profiled step of bench/results/host23_2026-11-29). Bytes unchanged. */
void hf_experts_halves(const model_spec *m, double rows, elementwise_list *e);

/* Building blocks of a routing kernel list (here and titan_moe.c): `count` launches of `bytes`
 * each into a pass (fwd or bwd of an elementwise_list), priced by bytes as contiguous bf16
 * traffic; and the backward of x[idx] for `updates` indices into `rows` rows of `w` elements of
 * `e` bytes, as autograd runs it (index_put_ with accumulate=True into zeros: a zero fill, an
 * iota and a cub sort of the indices, indexing_backward_kernel; hf_experts.c has the source). */
typedef struct {
    elementwise_kernel *k;
    int *n;
} moe_kernel_pass;
void moe_kernel_add(moe_kernel_pass p, const char *name, double bytes, int count);
/* moe_kernel_add with `inner` of its launches issued by C++ inside a dispatch another began
 * (elementwise_kernel.inner) */
void moe_kernel_add_inner(moe_kernel_pass p, const char *name, double bytes, int count, int inner);
void moe_index_backward(moe_kernel_pass b, const char *zeros, const char *sort,
                        const char *update, double rows, double w, double e, double updates);

/* The backward of x[idx] where idx holds `updates` indices into `rows` rows that arrive as runs
 * of duplicates (a bias table gathered per routed row: rows = experts): as moe_index_backward,
 * but the update kernel is an EW_INDEX_ACCUM over the longest run `run`, which its time follows
 * (moe_index_accum_s). */
void moe_index_backward_runs(moe_kernel_pass b, const char *zeros, const char *sort,
                             const char *update, double rows, double w, double e, double updates,
                             double run);

/* The longest run of one expert's rows among `updates` = T k routed rows sorted by expert, when
 * each of T tokens picks k of E experts uniformly at random (a freshly initialised router): the
 * count per expert is binomial, mean u = updates / E, variance u (1 - k / E), and the largest of
 * E such counts lies near u + sqrt(2 u (1 - k / E) ln E) (the expected maximum of E Gaussians;
 * bench/results/refit23_2026-11-29: 2-4% above the measured longest runs). */
double moe_longest_run(double updates, double experts, double top_k);

/* Time of one EW_INDEX_ACCUM launch (PyTorch's indexing_backward_kernel over sorted indices;
 * ATen cuda/Indexing.cu: a warp per distinct index and 128-feature slice, duplicates walked
 * serially): the longest run's steps, each the system's step latency plus the share of the
 * memory traffic of every warp in flight, run x (gpu.index_accum_step_s + rows ceil(w / 128) x
 * 3 min(w, 128) e / gpu.index_accum_bytes_per_s), or its bytes at the eager rate when longer;
 * -1 for another pattern or where the system does not give the two fields. Measured on one
 * H200 (bench/realruns/bias_gather_probe.py, bench/results/refit23_2026-11-29). */
double moe_index_accum_s(const system_spec *sys, const elementwise_list *e,
                         const elementwise_kernel *k);

/* Kernels the host launches for one cub radix sort of `items` keys of `key_bits` significant
 * bits (torch.sort / argsort, index_put_'s sort of its indices): one single-tile kernel up to
 * MOE_SORT_SINGLE_TILE_ITEMS, else a histogram, a scan and a pass per 8 bits, each after a
 * memset (hf_experts.c has the source and the measurement). */
#define MOE_SORT_SINGLE_TILE_ITEMS 4864.0
int moe_sort_kernels(double items, double key_bits);

/* Kernels per torch._grouped_mm call (at::cuda::detail::prepare_grouped_gemm_data, then the
 * CUTLASS grouped GEMM): the host issues both. */
#define HF_EXPERTS_GROUPED_MM_KERNELS 2

#endif
