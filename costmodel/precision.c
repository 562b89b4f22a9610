/*
 * precision.c — the rules of each low-precision recipe (see precision.h for what runs in low
 * precision and the sources of that choice).
 *
 * GEMM rate. Measured on one H100 SXM (bench/fp8_gemm.py, bench/results/fp8_h100/, torch
 * 2.11 + CUDA 13.0 cuBLASLt through torch._scaled_mm, e4m3 inputs, bf16 output) at the
 * per-GPU GEMM shapes of Llama-3 8B and 70B at TP 1-8: the FP8 GEMM over the bf16 GEMM of the
 * same shape, median over the shapes of at least 1 TFLOP, as CUDA-graph replays. The ratio of
 * achieved fractions of peak (ratio = speedup / (peak_fp8 / peak_bf16) = speedup / 2 on H100)
 * carries the bf16 calibration (sustained clocks under the power cap) over to the FP8 GEMM.
 * Per-tensor scales (tensorwise, and TE's delayed scaling: the same cuBLASLt kernel with a
 * scalar scale each) are applied in the epilogue; DeepSeek-style 1x128 x 128x128 block scales
 * are applied in the main loop on Hopper (promotion through CUDA cores, DeepSeek-V3 report Sec.
 * 3.3.2), hence the lower ratio.
 *
 * Other GPUs (precision_gemm_ratio): no FP8 measurement of ours exists off Hopper. Where a
 * published one does, the same ratio of achieved fractions comes from it: Stas Bekman's
 * ml-engineering "Maximum Achievable Matmul FLOPS comparison table" (compute/accelerator/
 * README.md, mamf-finder.py, mean of 100 iterations after 50 warm-ups, best shape; BF16 and
 * FP8 e4m3 tables): B200 SXM FP8 76.3% / BF16 77.6% = 0.983; B300 SXM 74.5% / 78.6% = 0.948;
 * GB200 72.3% / 72.9% = 0.992 (burst figures, as the presets' gemm_efficiency_max of those
 * parts are). GB300 (Blackwell Ultra, no figure): B300's, an ASSUMPTION. Any other GPU (AMD
 * MI300X/MI355X, A100 has no FP8): ratio 1, i.e. the FP8 GEMM runs at the system's own peak
 * ratio peak_fp8 / peak_bf16 times its bf16 efficiency, an ASSUMPTION stated in
 * precision_gemm_ratio_source. On Blackwell the block scales of MXFP8, NVFP4 and 1x128/128x128
 * blockwise FP8 are applied inside the tensor core (PTX ISA, tcgen05.mma block scaling,
 * .kind::mxf8f6f4 / .kind::mxf4nvf4), so no recipe pays Hopper's blockwise main-loop
 * promotion; the block-scaled kernels' rates relative to the per-tensor one are Transformer
 * Engine's measured ones below (before prec7 every recipe took the per-tensor ratio, an
 * ASSUMPTION that made MXFP8 faster than FP8 current scaling).
 *
 * Blackwell's block-scaled GEMMs (issue 16, prec7): Transformer Engine's own GEMM benchmark on a
 * B300 (docs/examples/gemm_profiling/gemm_profiling.rst at TransformerEngine d0067d0, "Autocast
 * vs Pre-quantized", benchmarks/gemm/benchmark_gemm.py --pre-quantize, CUDA events, 10 warm-ups
 * and 100 timed iterations: the 12 GEMMs of a layer of hidden 4096, FFN 16384, 15872 tokens,
 * inputs quantized before the timed loop) gives the kernels alone, per layer: BF16 13.102 ms,
 * FP8 current scaling 6.812, MXFP8 7.161, NVFP4 3.764. So
 *  - an MXFP8 GEMM runs at 6.812 / 7.161 = 0.951 of the per-tensor FP8 GEMM's rate (the block
 *    scales streamed from tensor memory beside the operands; cuBLASLt's
 *    CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 scales in the swizzled "block scaling factors
 *    layout" of the cuBLAS documentation, section 3.1.5.2): MXFP8_OVER_FP8. FP8 1x128/128x128
 *    block scaling runs on Blackwell through the same MXFP8 kernels (the tutorial's note: "On
 *    Blackwell (SM100+), FP8 Block is emulated via MXFP8") and takes the same factor;
 *  - an NVFP4 GEMM runs at 6.812 / 3.764 = 1.810 x the per-tensor FP8 GEMM's rate on Blackwell
 *    Ultra, whose FP4 peak is 3 x its FP8 peak: NVFP4_OVER_FP8_B300, for B300 and GB300 (the same
 *    Blackwell Ultra die). No B200/GB200 NVFP4 figure exists here: there the NVFP4 GEMM keeps
 *    the FP8 ratio against its FP4 peak (2 x FP8), an ASSUMPTION.
 *
 * Quantize kernels (bytes per element moved through HBM; read bf16 = 2, write e4m3 = 1, e2m1 =
 * 0.5, scales per block). Hopper FP8 GEMMs take both operands K-major (cuBLASLt FP8 "TN" only),
 * so dgrad needs W^T and wgrad needs X^T and dY^T in FP8.
 *  - delayed (Transformer Engine DelayedScaling): fused cast-transpose writing both layouts,
 *    the amax taken inside the same kernel and the scale from the amax history (TE
 *    common/transpose/cast_transpose.cu): X 2+1+1 = 4 forward; W 4 forward; dY 4 backward.
 *    The weight cast is charged every micro-batch (TE can reuse it across micro-batches when the
 *    trainer passes is_first_microbatch: an upper bound).
 *  - tensorwise under Megatron (TE Float8CurrentScaling): an amax pass (2) before TE's fused
 *    cast-transpose (4): X 6, W 6 forward, dY 6 backward; the rest as delayed scaling (FP8
 *    weight copies, FP8 saved inputs) without the amax history.
 *  - tensorwise under FSDP2 (torchao Float8Linear, dynamic scaling, torch.compile'd): an amax reduction
 *    (read 2) before each cast (read 2, write 1), because the scale needs the whole tensor's
 *    amax first; the backward casts the saved bf16 input and weight again in the other layout:
 *    X 5 + 5, W 5 + 5, dY 2 + 3 + 3 (one amax, two layouts). torchao saves the bf16 input.
 *  - rowwise (torchao Float8LinearRecipeName.ROWWISE, torchao/float8/config.py
 *    from_recipe_name at 36027d8: input, weight and output gradient scaled AXISWISE in e4m3,
 *    power-of-2 scales; torchtitan b5bcd76's only float8 recipe, components/quantization/
 *    float8.py): every GEMM takes its operands scaled along its own K, so a tensor is
 *    quantized once per GEMM that reads it, along that GEMM's K: X forward (along the hidden
 *    dimension) and backward (X^T along the tokens, for wgrad), W along K for fprop and along N
 *    for dgrad, dY along N for dgrad and along the tokens for wgrad. Inductor compiles each
 *    cast as an amax pass and a cast pass, as for tensorwise: read 2, then read 2 and write 1,
 *    5 bytes an element each time: X 5 + 5, W 5 + 5, dY 5 + 5. Measured on one H100
 *    (bench/fp8_rowwise_quant.py, bench/results/fp8_rowwise_2026-11-28): the casts move those
 *    5 bytes at 1.3-2.1 TB/s on the 8B/70B shapes, and one Linear's forward + backward in
 *    rowwise FP8 takes 6.70 / 2.49 / 3.74 ms against 8.41 / 2.18 / 4.15 ms in bf16 (8B MLP up,
 *    8B attention out, 70B MLP up at TP 8), which these bytes and RATIO_ROWWISE put at 7.1 /
 *    2.3 / 3.8 ms. Saved input bf16; no float8 all-gather ("for float8 with rowwise scaling,
 *    all distributed communication is done in high precision", torchtitan float8.md), so FSDP
 *    and TP move bf16.
 *  - blockwise (DeepSeek-V3: 1x128 tiles for activations and gradients, 128x128 blocks for
 *    weights): the block amax is in the quantize kernel (no global pass): X 3 forward (cached in
 *    FP8, as the report says) and 2 backward (FP8 -> transposed re-quantized FP8); W 3 + 2
 *    (128x128 blocks survive a transpose); dY 3 + 3 (1x128 and 128x1).
 *  - mxfp8 (TE MXFP8BlockScaling): 1x32 blocks, e8m0 scales, rowwise and columnwise copies
 *    from one read: 2 + 1 + 1 + 2/32 per tensor. The two copies are different numbers (the
 *    32-element blocks run along K, so the columnwise copy cannot be a transpose of the rowwise
 *    one: TE docs/features/low_precision_training/mxfp8/mxfp8.rst "Handling transposes", "Both
 *    must be quantized independently from the full-precision data"); the forward keeps the
 *    input's columnwise copy for the wgrad GEMM (dY columnwise x X columnwise), the backward
 *    quantizes dY in both (performance_considerations.rst, Table 2).
 *  - per-tensor FP8 on Blackwell (precision_rules_on): the tensor cores read FP8 operands in any
 *    layout ("Blackwell: supports columnwise access natively, so no transpose is needed",
 *    performance_considerations.rst "Architecture differences"; TE's
 *    is_non_tn_fp8_gemm_supported, SM 10.0+), so Transformer Engine writes one FP8 copy and no
 *    transpose: one byte less per element of X, W and dY than on Hopper (delayed 3, Megatron's
 *    tensorwise 5 = amax 2 + cast 3).
 *  - NOT PRICED, a known over-count: the weights' casts are charged every micro-batch, though
 *    under Megatron TE makes them once per step (Megatron passes is_first_microbatch to TE's
 *    Linears: megatron/core/extensions/transformer_engine.py TELinear.forward, schedules.py
 *    set_is_first_microbatch, Megatron-LM d98e8a6; TE re-quantizes the cached weight only then:
 *    transformer_engine/pytorch/module/linear.py _linear_forward, update_workspace =
 *    is_first_microbatch is None or is_first_microbatch, TE d0067d0; with --fp8-param-gather
 *    the weight is already a quantized tensor). Charging them once per step moved the H100
 *    Megatron-Bridge FP8 rows (tests/test_published_h100.c) from +2.4% / +11.4% (8B / 405B) to
 *    +5.2% / +18.9%: the per-micro-batch charge stands in for a Hopper cost not yet found, so it
 *    stays until that is priced (bench/results/prec7_2026-11-28/README.md).
 *  - Scale swizzles (bw12): Transformer Engine v2.9 (the version Megatron-Bridge v0.2.0, i.e.
 *    the 25.11 container, pins: pyproject.toml lines 83 and 119 at v0.2.0) swizzles the
 *    scale-inverse tensor of each MXFP8 / NVFP4 GEMM operand into the tensor cores' layout
 *    right before the GEMM, one kernel per operand (transformer_engine/pytorch/csrc/extensions/
 *    gemm.cpp lines 237-240, swizzle_scaling_factors in csrc/util.cpp lines 12-76, and
 *    multi_tensor_swizzle_scaling_factors for grouped GEMMs, gemm.cpp lines 488-491, at v2.9):
 *    two kernels for fprop (input, weight), four in the backward (dgrad: output gradient,
 *    weight; wgrad: input and output gradient, columnwise). TE 99df881 (first in v2.12) lets
 *    the quantizers write GEMM-ready scales (linear.py sets optimize_for_gemm on the input and
 *    output-gradient quantizers; the TE commits of Bridge v0.4.2 and v0.5.0 contain it), so
 *    only systems whose profile carries gpu.scale_swizzle_* pay them (the 25.11 calibrations).
 *    Each kernel reads and writes the operand's scales (elements / 32 bytes for MXFP8, / 16 for
 *    NVFP4) and lasts at least the kernel's shortest duration: max(scale_swizzle_kernel_s,
 *    2 x scale bytes / scale_swizzle_bytes_per_s).
 *  - nvfp4 (TE NVFP4BlockScaling; nvfp14 traced it at TE 366798e, the commit Megatron-Bridge
 *    v0.4.2 pins, pyproject.toml line 123, and 4220403, v0.5.0's, line 131): a global amax pass
 *    (2) for the per-tensor fp32 scale, then 1x16 blocks with e4m3 scales in both layouts:
 *    2 + 0.5 + 0.5 + 2/16. Megatron builds the default recipe (megatron/core/fp4_utils.py
 *    get_fp4_recipe, Megatron-LM d98e8a6), whose three techniques (arXiv 2509.25149 Sec. 4;
 *    TE common/recipe/__init__.py NVFP4BlockScaling.__post_init__) add no HBM bytes:
 *    the 16x16 random Hadamard transform on the columnwise (wgrad) copy of the input and output
 *    gradient, and stochastic rounding of the output gradient, run inside the one fused kernel
 *    nvte_quantize_with_hadamard_transform (rowwise cast + RHT + columnwise cast from one read;
 *    pytorch/csrc/quantizer.cpp NVFP4Quantizer::quantize_impl, lines 2366-2377 at 366798e),
 *    taken for bf16 inputs of rows % 64 == 0 and cols % 128 == 0 (line 2243: every Llama Linear
 *    here), after nvte_hadamard_transform_amax, one read giving both amaxes (lines 2287-2300);
 *    the weights' 16x16 2D block scales come from the same amax + cast kernels. The unfused
 *    fallback (a bf16 RHT copy written and read again) is not priced. The Hadamard MMAs and
 *    the Philox draws of stochastic rounding are arithmetic inside a memory-bound kernel: NOT
 *    PRICED, unmeasured on Blackwell here (TE's B300 GEMM benchmark, below, hints at 12-15%).
 *    Megatron-Bridge's performance recipes run every layer in NVFP4 (scripts/performance/
 *    utils/precision.py get_precision_config "nvfp4": bf16_with_nvfp4_mixed() unchanged, no
 *    first_last_layers_bf16; only the Llama-3 8B library recipe keeps its last 4 layers bf16).
 *  - NVFP4 under SP (Megatron, tp > 1, precision_sp_shard_frac / _gather_fixup_bytes): TE
 *    quantizes the column-parallel Linear's input on its sequence shard and gathers NVFP4
 *    (module/linear.py lines 182-214 at 366798e: both usages from the shard, rowwise gathered
 *    for fprop; the backward gathers the columnwise copy, lines 650-673), and quantizes the
 *    row-parallel Linear's output gradient on its shard before gathering it (module/base.py
 *    grad_output_preprocess, lines 1224-1229, through distributed.py _all_gather_nvfp4, which
 *    quantizes the bf16 shard, line 1391): those casts cover tokens / tp rows. A gathered
 *    columnwise NVFP4 copy arrives interleaved by rank and is reordered by tex.swap_first_dims,
 *    data and scales (distributed.py _post_process_nvfp4_gather, lines 1274-1292, and
 *    _swap_first_dims, 1246-1271): read + write of 0.5 + 1/16 bytes per gathered element, on the
 *    compute stream, for the wgrad input and the output gradient. With userbuffers (no NVFP4
 *    recipe here uses them) the fix-up is not priced.
 *    NOT PRICED (fp8sp15 traced them at 366798e; pricing them made the H100 and Blackwell
 *    tables worse, so they keep the full-rows cast: bench/results/fp8sp15_2026-11-28, with the
 *    patch): MXFP8 casts both usages from the shard in one kernel and gathers data and scales
 *    as they are (distributed.py _all_gather_mxfp8, lines 1565, 1585-1629: no fix-up; under
 *    userbuffers the output gradient is cast twice, rowwise then columnwise, linear.py 580-584
 *    and 786-811). Per-tensor FP8 (delayed, current scaling) casts the shard rowwise only
 *    (supports_only_rowwise_all_gather; linear.py 190-195, layernorm_linear.py 202-204,
 *    distributed.py _all_gather_fp8 1011-1014, 1 byte per element gathered) and transposes the
 *    gathered copy for wgrad (update_usage(columnwise_usage=True), linear.py 778 and 820,
 *    layernorm_linear.py 824 and 831: _create_transpose, read 1 write 1, only where
 *    is_non_tn_fp8_gemm_supported is false, i.e. before Blackwell; float8_tensor_storage.py
 *    247-265).
 *    TE's B300 GEMM benchmark in autocast (te.Linear forwards with grad enabled, quantizing X
 *    and W in both usages every call, docs/examples/gemm_profiling/gemm_profiling.rst at
 *    d0067d0) against its pre-quantized run: quantization 2.689 ms per layer for NVFP4, 1.823
 *    MXFP8, 2.335 FP8 current scaling, over 2.483e9 quantized elements: 4.73 TB/s at 5.125 B,
 *    5.53 at 4.0625, 5.32 at 5: NVFP4's quantize moves its bytes 12-15% slower, the RHT and
 *    stochastic rounding arithmetic or kernels this byte count misses (a single published
 *    benchmark; not applied, bench/results/nvfp14_2026-11-28/README.md).
 *
 * Memory. TE keeps the bf16 parameters and, per Linear, the cached low-precision weight and
 * its transpose (fp8: 1 + 1 bytes per parameter; MXFP8 rowwise + columnwise 2 + 2/32; NVFP4
 * 2 x (0.5 + 1/16)), and saves the Linear inputs already quantized for the backward (1 byte;
 * NVFP4 0.5 + 1/16). Delayed scaling keeps an fp32 amax history of 1024 steps (TE's default,
 * which the emitted --fp8-amax-history-len sets) for each Linear's input, weight and output
 * gradient: 3 x 1024 x 4 bytes. torchao tensorwise keeps no extra weight copy and saves the
 * bf16 input; under FSDP2 it all-gathers the Linear weights in FP8 (torchtitan
 * float8.enable_fsdp_float8_all_gather, emitted): 1 byte per parameter on the wire and in the
 * gathered unit.
 */
#include "precision.h"

#include <string.h>

/* Measured ratios (see above; bench/results/fp8_h100/fp8_gemm_graph_h100.tsv, the 20 shapes of
 * at least 1 TFLOP, CUDA-graph replays; bf16 ran at a median 689 TFLOP/s = 0.70 of peak there,
 * the preset's sustained gemm_efficiency_max). Tensorwise: median speedup 1.827 (1.741-1.896),
 * / 2. Blockwise: 1.653 (1.571-1.727) / 2. Rowwise (torch._scaled_mm with a scale per row of A
 * and per column of B, the CUTLASS kernel torchao's rowwise recipe calls): 1.677 / 2. */
#define RATIO_PER_TENSOR 0.9135
#define RATIO_BLOCKWISE 0.8265
#define RATIO_ROWWISE 0.8385

static const precision_rules rules_table[] = {
    {PRECISION_BF16, FP8_RECIPE_DEFAULT, -1, "bf16", 1.0, 2.0, 0, 0, 0, 0, 0, 2.0, 0, 2.0, 0},
    {PRECISION_FP8, FP8_RECIPE_DELAYED, -1, "fp8-delayed", RATIO_PER_TENSOR, 1.0, 4.0, 0, 4.0,
     0, 4.0, 1.0, 2.0, 2.0, 3.0 * 1024 * 4},
    {PRECISION_FP8, FP8_RECIPE_TENSORWISE, FRAMEWORK_MEGATRON, "fp8-tensorwise",
     RATIO_PER_TENSOR, 1.0, 6.0, 0, 6.0, 0, 6.0, 1.0, 2.0, 2.0, 0},
    {PRECISION_FP8, FP8_RECIPE_TENSORWISE, -1, "fp8-tensorwise", RATIO_PER_TENSOR, 1.0, 5.0, 5.0,
     5.0, 5.0, 8.0, 2.0, 0, 1.0, 0},
    {PRECISION_FP8, FP8_RECIPE_ROWWISE, -1, "fp8-rowwise", RATIO_ROWWISE, 1.0, 5.0, 5.0, 5.0,
     5.0, 10.0, 2.0, 0, 2.0, 0},
    {PRECISION_FP8, FP8_RECIPE_BLOCKWISE, -1, "fp8-blockwise", RATIO_BLOCKWISE, 1.0 + 4.0 / 128,
     3.0, 2.0, 3.0, 2.0, 6.0, 1.0 + 4.0 / 128, 2.0, 2.0, 0},
    {PRECISION_MXFP8, FP8_RECIPE_DEFAULT, -1, "mxfp8", RATIO_PER_TENSOR, 1.0 + 1.0 / 32,
     4.0 + 2.0 / 32, 0, 4.0 + 2.0 / 32, 0, 4.0 + 2.0 / 32, 1.0 + 1.0 / 32, 2.0 + 2.0 / 32, 2.0,
     0},
    {PRECISION_NVFP4, FP8_RECIPE_DEFAULT, -1, "nvfp4", RATIO_PER_TENSOR, 0.5 + 1.0 / 16,
     5.0 + 2.0 / 16, 0, 5.0 + 2.0 / 16, 0, 5.0 + 2.0 / 16, 0.5 + 1.0 / 16, 1.0 + 2.0 / 16, 2.0,
     0},
};

static const char *precision_names[PRECISION_COUNT] = {"bf16", "fp8", "mxfp8", "nvfp4"};
static const char *recipe_names[] = {"default", "delayed", "tensorwise", "blockwise", "rowwise"};

const char *precision_name(layout_precision p)
{
    return p >= 0 && p < PRECISION_COUNT ? precision_names[p] : "?";
}

int precision_parse(const char *s, layout_precision *out)
{
    for (int i = 0; i < PRECISION_COUNT; i++)
        if (!strcmp(s, precision_names[i])) {
            *out = (layout_precision)i;
            return 1;
        }
    return 0;
}

const char *precision_fp8_recipe_name(layout_fp8_recipe r)
{
    return r >= FP8_RECIPE_DEFAULT && r <= FP8_RECIPE_ROWWISE ? recipe_names[r] : "?";
}

int precision_parse_fp8_recipe(const char *s, layout_fp8_recipe *out)
{
    for (int i = FP8_RECIPE_DELAYED; i <= FP8_RECIPE_ROWWISE; i++)
        if (!strcmp(s, recipe_names[i])) {
            *out = (layout_fp8_recipe)i;
            return 1;
        }
    return 0;
}

layout_fp8_recipe precision_fp8_recipe(const layout *l)
{
    if (l->fp8_recipe != FP8_RECIPE_DEFAULT) return l->fp8_recipe;
    /* torchtitan b5bcd76's Float8LinearConverter: recipe_name "rowwise" (default) or
     * "rowwise_with_gw_hp", no tensorwise (components/quantization/float8.py) */
    return l->framework == FRAMEWORK_MEGATRON     ? FP8_RECIPE_DELAYED
           : l->framework == FRAMEWORK_TORCHTITAN ? FP8_RECIPE_ROWWISE
                                                  : FP8_RECIPE_TENSORWISE;
}

int precision_fp8_recipe_resolved(const layout *l)
{
    return (int)precision_fp8_recipe(l);
}

bool precision_is_low(const layout *l)
{
    return l->precision != PRECISION_BF16;
}

/*
 * torchao's float8 all-gather under FSDP2 (tensorwise; the table's row assumes it): torchtitan
 * turns it on only where FSDP shards the parameters (torchtitan 1ea5d511
 * torchtitan/components/quantization/float8.py lines 97-132: enable_fsdp_float8_all_gather =
 * dp_shard_enabled and float8.enable_fsdp_float8_all_gather), so on one data-parallel shard the
 * weights move and stay in bf16. Where it is on, each weight is cast to float8 on its shard
 * before the all-gather (pytorch/ao v0.18.0 torchao/float8/fsdp_utils.py,
 * WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather, with the scales precomputed after the
 * optimizer step: precompute_float8_dynamic_scale_for_fsdp, emitted), and the Linear receives a
 * float8 weight it does not cast again (float8_linear.py: tensor_already_casted_to_fp8): the
 * layer's weight casts cover 1 / shard of the weight, once per gather (forward; backward again
 * only where the unit is gathered again, reshard_after_forward). fp8b19 found the full-size
 * casts charged inside the layer on torchtitan's trainy H200 rows
 * (bench/results/fp8b19_2026-11-29/README.md).
 */
static void torchao_fsdp_float8_gather(const layout *l, precision_rules *out)
{
    if (!layout_is_pytorch(l) || l->precision != PRECISION_FP8 ||
        out->recipe != FP8_RECIPE_TENSORWISE || out->gather_bytes >= 2.0)
        return;
    int dp_shard = l->shard_size > 0 ? l->shard_size : l->dp;
    if (l->sharding != SHARDING_FSDP || dp_shard <= 1) {
        out->gather_bytes = 2.0; /* bf16 all-gather: the weights cast in the layer */
        return;
    }
    double shard = layout_shard_group(l);
    out->w_fwd_bytes /= shard;
    out->w_bwd_bytes = l->reshard_after_forward ? out->w_bwd_bytes / shard : 0;
}

void precision_rules_of(const layout *l, precision_rules *out)
{
    layout_fp8_recipe rec = l->precision == PRECISION_FP8 ? precision_fp8_recipe(l)
                                                          : FP8_RECIPE_DEFAULT;
    /* the first row of this precision and recipe for l's framework (or for any) */
    for (size_t i = 0; i < sizeof rules_table / sizeof *rules_table; i++)
        if (rules_table[i].precision == l->precision && rules_table[i].recipe == rec &&
            (rules_table[i].framework < 0 || rules_table[i].framework == (int)l->framework)) {
            *out = rules_table[i];
            torchao_fsdp_float8_gather(l, out);
            return;
        }
    *out = rules_table[0];
}

double precision_peak_flops(const system_spec *sys, const layout *l)
{
    switch (l->precision) {
    case PRECISION_FP8:
    case PRECISION_MXFP8: return sys->peak_fp8_flops_per_s;
    case PRECISION_NVFP4: return sys->peak_fp4_flops_per_s;
    default: return sys->peak_bf16_flops_per_s;
    }
}

cm_status precision_check(const system_spec *sys, const layout *l, char *err, size_t errlen)
{
    if (l->precision == PRECISION_BF16) {
        if (l->fp8_recipe != FP8_RECIPE_DEFAULT)
            return cm_fail(err, errlen, CM_EINVAL,
                           "--fp8-recipe needs --precision fp8: add it or drop the recipe");
        if (l->fp8_param_gather || l->moe_fp8_dispatch)
            return cm_fail(err, errlen, CM_EINVAL,
                           "--fp8-param-gather and --moe-fp8-dispatch need a low-precision "
                           "plan: add --precision fp8 (or mxfp8, nvfp4) or drop them");
        return CM_OK;
    }
    if (l->precision != PRECISION_FP8 && l->fp8_recipe != FP8_RECIPE_DEFAULT)
        return cm_fail(err, errlen, CM_EINVAL,
                       "--fp8-recipe applies to --precision fp8 only (%s has its own block "
                       "scaling): drop it",
                       precision_name(l->precision));
    if (l->precision == PRECISION_FP8 && sys->peak_fp8_flops_per_s <= 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "precision fp8 needs FP8 tensor cores (Hopper, Ada, Blackwell, MI300): "
                       "system '%s' has no peak_fp8_flops_per_s; use --precision bf16",
                       sys->name);
    if ((l->precision == PRECISION_MXFP8 || l->precision == PRECISION_NVFP4) &&
        sys->peak_fp4_flops_per_s <= 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "precision %s needs block-scaled (microscaling) tensor cores, i.e. "
                       "Blackwell (b200, b300, gb200-nvl72, gb300-nvl72): system '%s' has no "
                       "peak_fp4_flops; use --precision fp8 (--fp8-recipe blockwise for block "
                       "scales) on this GPU",
                       precision_name(l->precision), sys->name);
    if (layout_is_pytorch(l) && l->precision == PRECISION_FP8 &&
        precision_fp8_recipe(l) == FP8_RECIPE_DELAYED)
        return cm_fail(err, errlen, CM_EINVAL,
                       "fsdp2 trains FP8 through torchao, which removed delayed scaling: use "
                       "--fp8-recipe tensorwise (or blockwise), or --framework megatron");
    if (l->framework == FRAMEWORK_MEGATRON && l->precision == PRECISION_FP8 &&
        precision_fp8_recipe(l) == FP8_RECIPE_ROWWISE)
        return cm_fail(err, errlen, CM_EINVAL,
                       "rowwise scaling is torchao's (torchtitan, fsdp2); Transformer Engine "
                       "has delayed, tensorwise (current scaling) and blockwise FP8: use one of "
                       "those under --framework megatron");
    if (l->fp8_param_gather &&
        (l->framework != FRAMEWORK_MEGATRON || l->sharding == SHARDING_DDP))
        return cm_fail(err, errlen, CM_EINVAL,
                       "--fp8-param-gather is Megatron's and needs the distributed optimizer or "
                       "Megatron-FSDP (arguments.py): use --framework megatron with --sharding "
                       "distopt or fsdp (FSDP2's float8 all-gather comes with --precision fp8 "
                       "--fp8-recipe tensorwise)");
    if (l->framework == FRAMEWORK_FSDP2 && l->precision == PRECISION_NVFP4)
        return cm_fail(err, errlen, CM_EINVAL,
                       "NVFP4 training is Transformer Engine's (NVFP4BlockScaling): use "
                       "--framework megatron, or --precision mxfp8 with fsdp2");
    return CM_OK;
}

bool precision_layer_bf16(const model_spec *m, const layout *l, int layer)
{
    if (!precision_is_low(l) || layer < 0) return false;
    return layer < l->bf16_layers_start || layer >= m->layers - l->bf16_layers_end;
}

layout precision_bf16_layout(const layout *l)
{
    layout b = *l;
    b.precision = PRECISION_BF16;
    b.fp8_recipe = FP8_RECIPE_DEFAULT;
    b.fp8_param_gather = false;
    b.moe_fp8_dispatch = false; /* the dispatch feeds the layer's bf16 expert GEMMs */
    b.bf16_layers_start = b.bf16_layers_end = 0;
    return b;
}

bool precision_param_gather(const layout *l)
{
    return precision_is_low(l) && l->fp8_param_gather;
}

double precision_param_bytes(const layout *l)
{
    if (!precision_param_gather(l)) return 2.0;
    precision_rules r;
    precision_rules_of(l, &r);
    return r.operand_bytes;
}

double precision_param_gather_bytes(const layout *l)
{
    if (l->precision == PRECISION_MXFP8) return 2.0;
    return precision_param_bytes(l);
}

cm_status precision_check_model(const model_spec *m, const layout *l, char *err, size_t errlen)
{
    int start = l->bf16_layers_start, end = l->bf16_layers_end;
    if (start <= 0 && end <= 0) return CM_OK;
    if (l->framework != FRAMEWORK_MEGATRON || !precision_is_low(l))
        return cm_fail(err, errlen, CM_EINVAL,
                       "--bf16-first-layers/--bf16-last-layers are Megatron's "
                       "--first-last-layers-bf16 for a low-precision plan: use --framework "
                       "megatron with --precision fp8, mxfp8 or nvfp4, or drop them");
    if (l->precision == PRECISION_FP8 && precision_fp8_recipe(l) == FP8_RECIPE_DELAYED)
        return cm_fail(err, errlen, CM_EINVAL,
                       "Megatron refuses bf16 first/last layers with delayed scaling "
                       "(transformer_config.py): use --fp8-recipe tensorwise or blockwise");
    int most = m->layers / (l->pp > 0 ? l->pp : 1);
    if (start < 0 || end < 0 || start > most || end > most)
        return cm_fail(err, errlen, CM_EINVAL,
                       "bf16 first/last layers must each be between 0 and layers / pp = %d "
                       "(Megatron's num_layers_at_start/end_in_bf16 rule)",
                       most);
    return CM_OK;
}

/* Transformer Engine's B300 GEMM benchmark, kernels alone (precision.c header): per-layer ms of
 * the per-tensor FP8, MXFP8 and NVFP4 GEMMs. */
#define TE_B300_FP8_MS 6.812
#define TE_B300_MXFP8_MS 7.161
#define TE_B300_NVFP4_MS 3.764
#define MXFP8_OVER_FP8 (TE_B300_FP8_MS / TE_B300_MXFP8_MS)
#define NVFP4_OVER_FP8_B300 (TE_B300_FP8_MS / TE_B300_NVFP4_MS)

/* The per-tensor ratio by GPU (precision.c header: sources); blackwell: block-scaled tensor
 * cores reading FP8 in any layout (SM 10.x); nvfp4_over_fp8: the NVFP4 GEMM's measured rate over
 * the per-tensor FP8 GEMM's (0: none measured). */
static const struct {
    const char *gpu; /* substring of system_spec.gpu_name */
    double ratio;
    bool blackwell;
    double nvfp4_over_fp8;
    const char *source;
} gpu_ratios[] = {
    {"GB200", 0.723 / 0.729, true, 0, "ml-engineering MAMF, GB200 FP8 72.3% / BF16 72.9% of peak; MXFP8 x 0.951 (TE's B300 "
     "kernel benchmark); NVFP4: ASSUMPTION, the FP8 ratio against the FP4 peak"},
    {"GB300", 0.745 / 0.786, true, NVFP4_OVER_FP8_B300,
     "ASSUMPTION: B300's MAMF ratio (no GB300 figure); MXFP8 x 0.951, NVFP4 1.81 x the FP8 "
     "GEMM (TE's B300 kernel benchmark)"},
    {"B200", 0.763 / 0.776, true, 0, "ml-engineering MAMF, B200 SXM FP8 76.3% / BF16 77.6% of peak; MXFP8 x 0.951 (TE's "
     "B300 kernel benchmark); NVFP4: ASSUMPTION, the FP8 ratio against the FP4 peak"},
    {"B300", 0.745 / 0.786, true, NVFP4_OVER_FP8_B300,
     "ml-engineering MAMF, B300 SXM FP8 74.5% / BF16 78.6% of peak; MXFP8 x 0.951, NVFP4 "
     "1.81 x the FP8 GEMM (TE's B300 kernel benchmark)"},
    {"H100", RATIO_PER_TENSOR, false, 0, "measured on H100 (bench/results/fp8_h100)"},
    {"H200", RATIO_PER_TENSOR, false, 0, "measured on H100 (bench/results/fp8_h100), same GH100 die"},
    {"H800", RATIO_PER_TENSOR, false, 0, "measured on H100 (bench/results/fp8_h100), same GH100 die"},
    {"H20", RATIO_PER_TENSOR, false, 0, "measured on H100 (bench/results/fp8_h100), same GH100 die"},
};

static int gpu_ratio_row(const system_spec *sys)
{
    for (size_t i = 0; i < sizeof gpu_ratios / sizeof *gpu_ratios; i++)
        if (strstr(sys->gpu_name, gpu_ratios[i].gpu)) return (int)i;
    return -1;
}

/* The rules' GEMM ratio, except rowwise on a system that measured its rowwise GEMMs against its
 * per-tensor ones in torchao's compiled block (gpu.fp8_rowwise_over_tensorwise_gemm): there the
 * per-tensor ratio times that measurement. On one H200 (torch 2.11.0+cu130, bench/fp8b19_probe.py,
 * bench/results/fp8b19_2026-11-29/probe.json) torch._scaled_mm ran the rowwise block's GEMMs
 * through cuBLASLt's nvjet outer-vector-scaled kernels in 7.6795 ms, the tensorwise block's in
 * 7.6798 ms (bf16 14.074), where H100's measurement (RATIO_ROWWISE) put rowwise 8% slower. */
static double rule_gemm_ratio(const system_spec *sys, const precision_rules *r)
{
    if (r->precision == PRECISION_FP8 && r->recipe == FP8_RECIPE_ROWWISE &&
        sys->fp8_rowwise_over_tensorwise_gemm > 0)
        return RATIO_PER_TENSOR * sys->fp8_rowwise_over_tensorwise_gemm;
    return r->gemm_efficiency_ratio;
}

double precision_gemm_ratio(const system_spec *sys, const layout *l)
{
    precision_rules r;
    precision_rules_of(l, &r);
    r.gemm_efficiency_ratio = rule_gemm_ratio(sys, &r);
    if (!precision_is_low(l)) return 1.0;
    /* A calibration profile's ratio (plan fit of plan calibrate's gemm_fp8 rows: per-tensor
     * scaled e4m3 GEMMs through cuBLASLt) replaces the table for FP8; blockwise scaling takes
     * the profile's own blockwise ratio (gemm_fp8_blockwise rows: the backend's cuBLASLt
     * VEC128 x BLK128x128 GEMMs, bench/results/fp8_backend_2026-11-27/blockwise_run) where it
     * has one, else keeps its measured cost relative to per-tensor scaling
     * (RATIO_BLOCKWISE / RATIO_PER_TENSOR). */
    if (l->precision == PRECISION_FP8 && precision_fp8_recipe(l) == FP8_RECIPE_BLOCKWISE &&
        sys->fp8_blockwise_gemm_ratio > 0)
        return sys->fp8_blockwise_gemm_ratio;
    if (l->precision == PRECISION_FP8 && sys->fp8_gemm_ratio > 0)
        return sys->fp8_gemm_ratio * r.gemm_efficiency_ratio / RATIO_PER_TENSOR;
    int row = gpu_ratio_row(sys);
    if (row < 0) return 1.0;
    bool hopper = gpu_ratios[row].ratio == RATIO_PER_TENSOR;
    if (hopper) return r.gemm_efficiency_ratio; /* the measured Hopper rows of rules_table */
    double ratio = gpu_ratios[row].ratio;
    if (!gpu_ratios[row].blackwell) return ratio;
    /* Blackwell's block-scaled GEMMs against the per-tensor FP8 one (TE's B300 benchmark) */
    bool mx = l->precision == PRECISION_MXFP8 ||
              (l->precision == PRECISION_FP8 && precision_fp8_recipe(l) == FP8_RECIPE_BLOCKWISE);
    if (mx) return ratio * MXFP8_OVER_FP8;
    if (l->precision == PRECISION_NVFP4 && gpu_ratios[row].nvfp4_over_fp8 > 0 &&
        sys->peak_fp4_flops_per_s > 0)
        return ratio * gpu_ratios[row].nvfp4_over_fp8 * sys->peak_fp8_flops_per_s /
               sys->peak_fp4_flops_per_s;
    return ratio;
}

bool precision_blackwell(const system_spec *sys)
{
    int row = gpu_ratio_row(sys);
    return row >= 0 && gpu_ratios[row].blackwell;
}

void precision_rules_on(const system_spec *sys, const layout *l, precision_rules *out)
{
    precision_rules_of(l, out);
    /* Transformer Engine's per-tensor FP8 (delayed scaling, and Megatron's tensorwise = TE
     * current scaling) on Blackwell: one FP8 copy serves both layouts, no transpose written
     * (header) */
    bool te_per_tensor = l->precision == PRECISION_FP8 &&
                         (out->recipe == FP8_RECIPE_DELAYED ||
                          (out->recipe == FP8_RECIPE_TENSORWISE &&
                           out->framework == FRAMEWORK_MEGATRON));
    if (te_per_tensor && precision_blackwell(sys)) {
        out->x_fwd_bytes -= 1.0;
        out->w_fwd_bytes -= 1.0;
        out->dy_bwd_bytes -= 1.0;
        /* (TE keeps one FP8 weight copy here too, not two: memory.c, which has no system,
         * still counts two; not priced) */
    }
}

bool precision_gemm_shape_ratios(const system_spec *sys, const layout *l, bool *blockwise,
                                 double *scale)
{
    *blockwise = false;
    *scale = 1.0;
    if (l->precision != PRECISION_FP8 || sys->fp8_gemm_shapes.n == 0) return false;
    *blockwise = precision_fp8_recipe(l) == FP8_RECIPE_BLOCKWISE;
    if (!*blockwise) {
        precision_rules r;
        precision_rules_of(l, &r);
        *scale = rule_gemm_ratio(sys, &r) / RATIO_PER_TENSOR;
    }
    return true;
}

const char *precision_gemm_ratio_source(const system_spec *sys)
{
    if (sys->fp8_gemm_shapes.n > 0)
        return "fp8: calibrated by shape, the profile's fp8_gemm_shapes (plan fit of plan "
               "calibrate's bf16 and FP8 GEMMs, each FP8 GEMM at its nearest measured shape); "
               "the single fitted ratio shown";
    if (sys->fp8_gemm_ratio > 0 && sys->fp8_blockwise_gemm_ratio > 0)
        return "fp8: calibrated, the profile's fp8_gemm ratio (plan fit of plan calibrate's FP8 "
               "GEMMs) and, for blockwise, its fp8_blockwise_gemm ratio (plan calibrate's "
               "gemm_fp8_blockwise GEMMs)";
    if (sys->fp8_gemm_ratio > 0)
        return "fp8: calibrated, the profile's fp8_gemm ratio (plan fit of plan calibrate's FP8 "
               "GEMMs; blockwise scaled by its measured cost over per-tensor)";
    int row = gpu_ratio_row(sys);
    return row < 0 ? "ASSUMPTION: no FP8 GEMM measurement for this GPU; the low-precision GEMM "
                     "reaches the same fraction of its peak as bf16 does (speedup = the "
                     "system's peak ratio)"
                   : gpu_ratios[row].source;
}

double precision_scale_swizzle_s(const system_spec *sys, const layout *l, double elements)
{
    double per_element = l->precision == PRECISION_MXFP8   ? 1.0 / 32
                         : l->precision == PRECISION_NVFP4 ? 1.0 / 16
                                                           : 0.0;
    if (per_element <= 0 || sys->scale_swizzle_bytes_per_s <= 0 || elements <= 0) return 0;
    double moved_s = 2.0 * elements * per_element / sys->scale_swizzle_bytes_per_s;
    return moved_s > sys->scale_swizzle_kernel_s ? moved_s : sys->scale_swizzle_kernel_s;
}

static bool te_nvfp4_sp(const layout *l)
{
    return l->precision == PRECISION_NVFP4 && l->framework == FRAMEWORK_MEGATRON && l->tp > 1 &&
           l->sp;
}

double precision_sp_shard_frac(const layout *l)
{
    return te_nvfp4_sp(l) ? 1.0 / l->tp : 1.0;
}

double precision_sp_gather_fixup_bytes(const layout *l)
{
    if (!te_nvfp4_sp(l) || l->tp_comm_overlap) return 0;
    precision_rules r;
    precision_rules_of(l, &r);
    return 2.0 * r.operand_bytes; /* data 0.5 + scales 1/16, read and written */
}

double precision_tp_gather_bytes(const layout *l)
{
    if (!precision_is_low(l) || l->framework != FRAMEWORK_MEGATRON) return 0;
    precision_rules r;
    precision_rules_of(l, &r);
    return r.operand_bytes;
}

double precision_tp_grad_gather_bytes(const layout *l)
{
    if (!precision_is_low(l) || l->framework != FRAMEWORK_MEGATRON) return 0;
    precision_rules r;
    precision_rules_of(l, &r);
    if (l->precision == PRECISION_MXFP8 || l->precision == PRECISION_NVFP4)
        return 2.0 * r.operand_bytes;
    if (l->precision == PRECISION_FP8 &&
        (r.recipe == FP8_RECIPE_DELAYED || r.recipe == FP8_RECIPE_TENSORWISE))
        return r.operand_bytes;
    return 0;
}

const char *precision_label(const layout *l)
{
    precision_rules r;
    precision_rules_of(l, &r);
    return r.name;
}
