/*
 * mcore_expert_gemm.h — Megatron-Core's expert GEMMs as Transformer Engine's GroupedLinear runs
 * them (issues 15 and 20): one cuBLASLt GEMM per local expert, whose output tiles' HBM traffic
 * the small per-expert shapes cannot hide, and whose weight gradient is accumulated into the
 * parameter's main_grad (gradient-accumulation fusion).
 *
 * Sources. Transformer Engine v2.12 (5671fd3) transformer_engine/pytorch/module/
 * grouped_linear.py: forward, dgrad and wgrad each a general_grouped_gemm over the local
 * experts; common/gemm/cublaslt_gemm.cu nvte_multi_tensor_gemm -> multi_stream_cublas_gemm
 * (one cublas_gemm per expert, expert i on compute stream i % 4; CUTLASS grouped GEMM only with
 * NVTE_USE_CUTLASS_GROUPED_GEMM on Hopper, off by default). With fuse_wgrad_accumulation the
 * wgrad GEMM writes into main_grad with accumulate = True (beta = 1: main_grad read and
 * written); Megatron-LM 2edffadb megatron/core/extensions/transformer_engine.py passes
 * fuse_wgrad_accumulation = config.gradient_accumulation_fusion, on in Megatron-LM's arguments
 * (--no-gradient-accumulation-fusion turns it off) and in Megatron-Bridge c810129
 * (utils/fusions.py with TE; scripts/performance/utils/overrides.py sets it), off under
 * Megatron-FSDP (DESIGN.md). main_grad is bf16 with --grad-reduce-in-bf16, fp32 otherwise
 * (Megatron-LM d98e8a6 megatron/training/arguments.py: accumulate_allreduce_grads_in_fp32;
 * core/distributed/param_and_grad_buffer.py group_params_for_buffers: grad_dtype).
 *
 * Measured (bench/moe_expert_gemm.cu, bench/results/moegemm_2026-11-28/, one H100 80GB HBM3,
 * cuBLASLt 13.1, 2026-11-28): the six expert GEMMs of the published H100 rows' shapes (GPT-OSS
 * 16 x 1024 rows at h = f = 2880 bf16, Qwen3-30B-A3B 8 x 4096 and 16 x 2048 at 2048/768 FP8,
 * DeepSeek-V3 4 x 4096 at 7168/2048 FP8, Qwen3-235B 4 x 4096 at 4096/1536 FP8; GPT-OSS also at
 * 512-4096 rows) as TE issues them on 4 streams, wgrad into a fresh bf16 tensor, into bf16
 * main_grad and into fp32 main_grad. Their time is the roofline math at the preset's rate, plus
 * each GEMM's output traffic (D written, and C read when accumulating) at HBM bandwidth, not
 * overlapped with the main loop, plus one kernel's fixed cost per expert: with no fitted
 * constant (each tile's epilogue follows its main loop; with K of 512-4096 it is no longer
 * small beside it) this gives median |error| 4.2% over 60 bf16 GEMM groups and 10.1% over 40
 * FP8 ones, where plan's pricing before (a grouped kernel's roofline) erred by 16.6% and 32.0%
 * (bench/moe_expert_gemm_model.py). Each layer's six groups, 4 s back-to-back at the power cap:
 * GPT-OSS measured 4.19 ms, this model 4.35, before 3.55; Qwen3-30B-A3B FP8 1.05 / 1.00 / 0.75;
 * a dense 8B MLP at K >= 4096 12.50 / 12.68 / 12.52 (why the dense Linears keep the roofline:
 * there the output hides behind many main-loop waves). The preset's GEMM
 * rate was measured on 8192^3 products whose own output traffic is inside it, so that share
 * (rate / (8192 x HBM rate): 2.8% at H100 bf16) comes off the math term first.
 * ASSUMPTION: the same on other GPUs (measured on H100 only), with their own rates.
 */
#ifndef PLAN_MCORE_EXPERT_GEMM_H
#define PLAN_MCORE_EXPERT_GEMM_H

#include <stdbool.h>

#include "layout.h"
#include "system.h"

/* Megatron with Transformer Engine's layer code: the experts run as TE GroupedLinear. */
bool mcore_expert_gemm_applies(const layout *l);

/* Bytes through HBM per element of a weight gradient's GEMM output: main_grad read and written
 * under gradient-accumulation fusion (bf16 with --grad-reduce-in-bf16: 4; fp32: 8). Megatron-FSDP
 * turns the fusion off: the GEMM writes a bf16 gradient (2) and Megatron-FSDP's hook adds it
 * into its main_grad buffer, reading both, in a kernel of its own: at least as many bytes, priced
 * the same here (the recipe is shared across shardings, recipe_layer_fsdp_from). */
double mcore_wgrad_out_bytes(const training_spec *t);

/* One expert GEMM C[m, n] (K = k) as TE runs it, from its roofline's math term math_s
 * (compute_gemm_math_s) and its operands' bytes in_bytes: the main loop (the math less the
 * reference's output share, or reading the operands where longer: the roofline's memory term
 * without the output), then m x n x out_bytes at HBM bandwidth, plus a kernel's fixed cost. */
double mcore_expert_gemm_s(const system_spec *sys, double math_s, double in_bytes, double m,
                           double n, double k, double out_bytes);

/*
 * The experts' quantize kernels, one launch per local expert (issue 20, bwmoe23). GroupedLinear
 * quantizes its input (forward) and its output gradient (backward) with
 * _split_quantization._split_quantize (Transformer Engine d0067d0
 * transformer_engine/pytorch/module/grouped_linear.py 820, 1315) -> tex.split_quantize
 * (pytorch/csrc/extensions/cast.cpp 1895-2058): MXFP8 and FP8 blockwise get one bulk allocation,
 * then multi_tensor_quantize_impl (cast.cpp 894-938) runs the fused nvte_multi_cast_transpose only
 * for delayed-scaling Float8Quantizers with both layouts, and otherwise each expert's own
 * quantizer: MXFP8 and blockwise one kernel an expert; current scaling three
 * (Float8CurrentScalingQuantizer::quantize_impl, pytorch/csrc/quantizer.cpp 980-1030:
 * nvte_compute_amax_with_config, nvte_compute_scale_from_amax, nvte_quantize_v2); NVFP4 one
 * fused split kernel (FUSED_NVFP4). The same loop at TE v2.9-v2.12 (cast.cpp 118-147 / 120-149),
 * the containers of the published rows; Megatron-Core's one-launch GroupedTensor path
 * (moe_use_grouped_tensor, default off at d98e8a6) is absent from the Megatron-LM commits
 * Megatron-Bridge v0.4.2 / v0.5.0 pin (2edffadb, d0b3b77). precision.c prices the bytes as one
 * kernel; the launches per
 * expert add, measured on one H200 (bench/bwmoe23_moe_pieces.py, bench/results/bwmoe23_2026-11-29,
 * split_fit.py): a bandwidth-bound kernel split into one launch per expert, graph-replayed, takes
 * per extra launch 1.26 us + its traffic / 23.4 TB/s (2.0-11.6 us at 17-235 MB a launch, six
 * shapes of the published rows, within 0.7 us of that line); the split launches run at 2.7-3.6
 * TB/s where the same bytes in one launch run at 3.9-4.2. The quantize kernels are TE's, the
 * measured kernel torch's in-place scale: ASSUMPTION that the split costs the same.
 */
/* Kernels TE launches per local expert for each tensor it quantizes; 0: one launch for all. */
int mcore_expert_quantize_kernels(const layout *l);
/* The GPU time the per-expert launches add to one pass of `local` experts' quantize kernels
 * priced as one: `tensors` tensors quantized per expert, `bytes` their traffic over all experts:
 * (local - 1) x (kernels x tensors x gpu.expert_split_launch_s + bytes / local /
 * gpu.expert_split_bytes_per_s). 0 where the system has no measurement or TE does not apply. */
double mcore_expert_quantize_split_s(const system_spec *sys, const layout *l, int local,
                                     int tensors, double bytes);

#endif
