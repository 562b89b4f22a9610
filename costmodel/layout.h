/*
 * layout.h — the training spec (sequence, batch, precision) and the layout (how the work is
 * split: TP x PP x DP x CP, EP carved out of the data-parallel ranks, sharding, recompute,
 * framework), the framework rules of DESIGN.md, and the placement of rank groups on nodes.
 */
#ifndef PLAN_LAYOUT_H
#define PLAN_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "impl.h"
#include "model.h"
#include "status.h"
#include "system.h"

/* fsdp2: the guide's Hugging Face trainer path (FSDP2 + Ulysses, no TP/PP/EP); megatron:
 * Megatron-LM / Megatron-Core; torchtitan: PyTorch-native FSDP2/HSDP x DTensor TP (+SP, async
 * TP) x torch.distributed.pipelining x context parallel (ring attention) x EP (issue 19). */
typedef enum {
    FRAMEWORK_FSDP2 = 0, FRAMEWORK_MEGATRON = 1, FRAMEWORK_TORCHTITAN = 2
} layout_framework;
#define LAYOUT_NFRAMEWORKS 3
/* Pipeline schedule (issue 19). DEFAULT: 1F1B, or interleaved 1F1B with vpp > 1 (Megatron's
 * choice, and what layouts written before the field meant). The others are
 * torch.distributed.pipelining's (schedules.py get_schedule_class), which torchtitan runs
 * (--parallelism.pipeline_parallel_schedule); costmodel/pp_schedule.h holds their bubbles,
 * memory and rules. */
typedef enum {
    PP_SCHEDULE_DEFAULT = 0,
    PP_SCHEDULE_1F1B,
    PP_SCHEDULE_INTERLEAVED_1F1B,
    PP_SCHEDULE_GPIPE,
    PP_SCHEDULE_ZBV,       /* ScheduleZBVZeroBubble: 2 stages per rank in a V, B split in I+W */
    PP_SCHEDULE_DUALPIPEV, /* ScheduleDualPipeV: DeepSeek's DualPipe cut in half, a V */
    PP_SCHEDULE_COUNT
} layout_pp_schedule;
typedef enum { SHARDING_DDP = 0, SHARDING_DISTOPT = 1, SHARDING_FSDP = 2 } layout_sharding;
/* Rank placement (issue 21): the order in which Megatron lays the parallel dimensions over the
 * ranks, innermost first. DP_PP: its default "tp-cp-ep-dp-pp" (pipeline stages outermost, so the
 * pipeline crosses nodes first); PP_DP: "tp-cp-ep-pp-dp", --use-tp-pp-dp-mapping (the stages
 * of one pipeline side by side, data parallelism outermost). Megatron-LM d98e8a6
 * megatron/training/initialize.py:395 picks the order from that flag; layout_place.c places
 * the groups by it. */
typedef enum { RANK_ORDER_DP_PP = 0, RANK_ORDER_PP_DP = 1, RANK_ORDER_COUNT } layout_rank_order;
typedef enum { RECOMPUTE_NONE = 0, RECOMPUTE_SELECTIVE = 1, RECOMPUTE_FULL = 2 } layout_recompute;
typedef enum { ATTENTION_FLASH = 0, ATTENTION_UNFUSED = 1 } training_attention;
/* Number format of the decoder layers' Linear GEMMs (costmodel/precision.h holds the rules). */
typedef enum {
    PRECISION_BF16 = 0, PRECISION_FP8, PRECISION_MXFP8, PRECISION_NVFP4, PRECISION_COUNT
} layout_precision;
/* FP8 scaling recipe; 0 = the framework's default (Megatron/TE: delayed; fsdp2's torchao:
 * tensorwise; torchtitan: rowwise, the only float8 recipe its converter offers). Rowwise is
 * torchao's axiswise scaling (precision.c). */
typedef enum {
    FP8_RECIPE_DEFAULT = 0, FP8_RECIPE_DELAYED, FP8_RECIPE_TENSORWISE, FP8_RECIPE_BLOCKWISE,
    FP8_RECIPE_ROWWISE
} layout_fp8_recipe;
/* How MoE tokens reach their experts (costmodel/moe_dispatch.h): Megatron-Core's alltoall and
 * allgather token dispatchers, its flex dispatcher with the DeepEP or HybridEP backend. */
typedef enum {
    MOE_DISPATCH_ALLTOALL = 0,
    MOE_DISPATCH_ALLGATHER = 1,
    MOE_DISPATCH_DEEPEP = 2,
    MOE_DISPATCH_HYBRIDEP = 3,
} layout_moe_dispatcher;

/* torchtitan's CUDA-graphed forward + loss + backward (cuda_graphs.h): AUTO follows torchtitan
 * (on where it allows it); ON / OFF: --cuda-graphs / --no-cuda-graphs. */
typedef enum { CUDA_GRAPHS_AUTO = 0, CUDA_GRAPHS_ON = 1, CUDA_GRAPHS_OFF = 2 } layout_cuda_graphs;

typedef struct {
    int seq_len;               /* tokens per sequence */
    int global_batch;          /* sequences per optimizer step */
    training_attention attention; /* flash (fused, s^2 never stored) or unfused (2021 Megatron;
                                     under impl hf transformers' eager attention) */
    bool attention_set;        /* --attention given (hf_eager_attn.h: the default under impl hf
                                  follows the model's class, an explicit flash is checked) */
    bool grad_reduce_bf16;     /* reduce gradients in bf16 (--grad-reduce-in-bf16) */
    bool causal;               /* causal mask: flash attention skips the masked half */
    double moe_imbalance;      /* busiest expert rank's routed tokens / the mean (>= 1; 0 reads
                                  as 1: force-balanced, moe_dispatch.h) */
    double moe_capacity_factor;/* expert capacity / mean tokens per expert; 0 = dropless */
    bool moe_ep_overlap;       /* Megatron --overlap-moe-expert-parallel-comm (+ delay wgrad):
                                  dispatch/combine hidden behind the paired micro-batch */
    bool moe_shared_overlap;   /* Megatron --moe-shared-expert-overlap: dispatch/combine
                                  hidden behind the shared experts of the same pass */
    bool moe_expert_loop;      /* torchtitan's experts as a per-expert Python loop
                                  (use_grouped_mm=False; expert_loop.h), not grouped GEMMs */
    double moe_new_count_share;/* with the loop: the share of a step's per-expert row counts
                                  that the process has not run before, each a new GEMM shape
                                  for cuBLAS's heuristic (expert_loop.h); 0: every count seen
                                  before, a long run's warm cache */
    bool expandable_segments;  /* PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: segments
                                  grow, so the largest block needs no free block of its own
                                  (memory.h need_bytes) */
    bool no_expandable_segments; /* torch's default allocator where the framework would set
                                  expandable segments (torchtitan's launcher does): a run
                                  without PYTORCH_CUDA_ALLOC_CONF (memory_holes.h) */
    bool grad_accum_unfused;   /* weight gradients summed across micro-batches by a separate
                                  16-bit add (2021 Megatron-LM, no gradient accumulation
                                  fusion): grad_accum.h; false: fused into the wgrad GEMM */
    bool tp_dgrad_allreduce_sync; /* TP without SP: the column-parallel Linear's backward
                                  all-reduces its input gradient synchronously, as Megatron-LM
                                  did before 16c90445e7 (2021-09-02; the SC'21 scripts' 6985e58);
                                  false: asynchronously beside its wgrad GEMM (recipe_tp.c) */
    bool grad_buffer_divide;   /* Megatron-LM's local DDP of 2022 divides its whole fp32
                                  gradient buffer by the DP size in place before the all-reduce,
                                  at every DP size, DP 1 too (grad_accum.h) */
    bool pp_keep_outputs;      /* a torch.distributed.pipelining loop calling schedule.step()
                                  with its default return_outputs=True: the last stage keeps
                                  every micro-batch's output (memory_phases.h); torchtitan's
                                  trainer passes False */
    bool pp_fsdp_rs_held;      /* torch.distributed.pipelining before pytorch#144535
                                  (2025-01-10): FSDP2's last reduce-scatter input of each local
                                  stage stays referenced into the next step (memory_phases.h
                                  memory_pp_held_rs_input_bytes); false: the torch of today */
    bool hold_logits;          /* a native torch training loop that keeps the model's output (the
                                  bf16 logits) in a local through the backward (memory_phases.h
                                  memory_logits_held_bytes); torchtitan's trainer frees it first
                                  (`del pred`, torchtitan/trainer.py:795 at b5bcd76), the default */
    int one_rank_groups;       /* process groups of one rank the training program creates beyond
                                  those nccl_memory.h counts for the layout (a DeviceMesh
                                  dimension of size 1 that is not a fake backend: each one an
                                  eagerly split NCCL communicator of its own); 0, the default */
    bool moe_pad_index_copy;   /* a torch MoE that pads each expert's rows for the grouped GEMM by
                                  index_copy into a zero buffer (bench/realruns/prun_moe.py):
                                  autograd's IndexCopyBackward0 keeps the unpadded rows too
                                  (memory_activations.c); torchtitan gathers them (the default) */
    bool moe_gather_routing;   /* a torch MoE regrouping its routed tokens by gathers both ways
                                  and weighting the top-k outputs as a [T, k, h] fp32 product
                                  (bench/realruns/prun_moe.py): autograd runs an index_put_ with
                                  accumulate per gather (gather_moe.h); torchtitan's form (the
                                  default) is titan_moe.h's */
} training_spec;

typedef struct {
    layout_framework framework;
    int tp, pp, dp, cp;
    int ep;                    /* expert parallel, carved out of dp*cp (Megatron) */
    int etp;                   /* expert tensor parallel; 0 = same as tp */
    int vpp;                   /* virtual pipeline stages per rank (interleaved 1F1B) */
    /* Uneven pipeline (issue 21): decoder layers on the first / last stage, the other stages
     * sharing the rest evenly (Megatron's --decoder-first/last-pipeline-num-layers, written as
     * --pipeline-model-parallel-layout; torchtitan's first/last_stage_less_layers, where they
     * are the first and last VIRTUAL stage's and the others share the rest as evenly as it goes,
     * pp_split.c); 0 = the default split (layout_stage_layers; torchtitan's less 1 / 1). The
     * embedding and the head make those two stages heavier, so fewer layers there balance the
     * pipeline. */
    int pp_first_layers, pp_last_layers;
    int mbs;                   /* micro-batch size in sequences */
    bool sp;                   /* Megatron sequence parallel (with tp > 1) */
    layout_sharding sharding;
    bool reshard_after_forward;/* FSDP: free gathered params after forward (ZeRO-3) */
    int shard_size;            /* HSDP shard group size; 0 = the whole dp*cp group */
    layout_recompute recompute;
    int recompute_layers;      /* full recompute: layers per stage recomputed; 0 = all */
    unsigned recompute_modules;/* Megatron selective recompute's modules (recompute_modules.h
                                  RECOMPUTE_MOD_* bits); 0 = its default, core attention */
    bool offload;              /* FSDP2 CPU offload of params, grads and optimizer */
    /* Megatron CPU offload (issue 21; costmodel/offload.h): the share of the distributed
     * optimizer's state kept and stepped on the host (--optimizer-cpu-offload with
     * --optimizer-offload-fraction, in percent; 0: none), and the decoder layers' saved
     * activations parked in host memory between forward and backward. */
    int optimizer_offload_pct;
    bool activation_offload;
    int activation_offload_layers; /* with activation_offload: the first N decoder layers are
                                      offloaded (Megatron --cpu-offloading-num-layers N); 0 =
                                      layers - 1, the most Transformer Engine allows */
    layout_precision precision;/* Linear GEMMs' format; bf16 (0) unless asked (precision.h) */
    layout_fp8_recipe fp8_recipe; /* fp8 only; 0: the framework's default */

    layout_impl impl;          /* the layer code (impl.h); 0: the framework's default */
    bool compile;              /* torch.compile per block (fuses the eager elementwise ops) */
    layout_optimizer_impl optimizer_impl; /* AdamW path (impl.h); 0: the framework's default */
    /* Megatron overlap knobs (layout, since the search chooses them; off by default as in
     * Megatron-LM's arguments.py, all three store_true). Issue 15; costmodel/tp_overlap.h. */
    bool tp_comm_overlap;      /* --tp-comm-overlap: TE userbuffer AG/RS overlapped with GEMMs */
    bool overlap_grad_reduce;  /* --overlap-grad-reduce: bucketed DDP reduce during backward */
    bool overlap_param_gather; /* --overlap-param-gather: bucketed param AG during forward */
    layout_moe_dispatcher moe_dispatcher; /* MoE token dispatcher (EP > 1) */
    layout_pp_schedule pp_schedule; /* pipeline schedule; 0: 1F1B / interleaved by vpp */
    bool async_tp;             /* torchtitan --compile.enable_async_tensor_parallel (issue 19) */
    /* Low precision under Megatron (precision.h): --fp8-param-gather (FP8 parameters, no bf16
     * copy, the distributed optimizer's / Megatron-FSDP's all-gather in FP8), and
     * --first-last-layers-bf16 with --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16
     * (0 and 0: every decoder layer in low precision) */
    bool fp8_param_gather;
    int bf16_layers_start, bf16_layers_end;
    /* FP8 MoE dispatch (moe_dispatch.h): the dispatch and the combine's gradient sent in FP8
     * with block scales, the combine and the dispatch's gradient in bf16 */
    bool moe_fp8_dispatch;
    /* Megatron's precision-aware optimizer with bf16 state (--use-precision-aware-optimizer
     * --main-grads-dtype bf16 --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16; the fp32 master
     * copy stays): 2 + 2 + 2 bytes a parameter of gradients and Adam moments instead of
     * 4 + 4 + 4 (NVIDIA's DeepSeek-V3 and Kimi-K2 recipes). Distributed optimizer only. */
    bool optimizer_bf16_states;
    /* Megatron's fused cross entropy in Transformer Engine's kernel (--cross-entropy-loss-fusion
     * --cross-entropy-fusion-impl te; what Megatron-Bridge's performance recipes run): the loss
     * reads the bf16 logits and writes their gradient into them (TE triton/cross_entropy.py),
     * so no fp32 copy of the logits is kept (memory.c) and the loss moves 2 + 4 bytes a logit
     * (elementwise.c). Off: Megatron-LM's default, the vocab-parallel loss on fp32 logits.
     * Megatron-LM's validate_args refuses it since 2026-06 (168cb15d7, "stability issues"):
     * emitted for Megatron-Bridge only (emit_megatron.c says so). */
    bool te_cross_entropy;
    /* Megatron captures the whole forward-backward in one CUDA graph (TransformerConfig
     * cuda_graph_impl "full_iteration", Megatron-LM 2a75ac1 transformer_config.py 1039-1052; the
     * 26.06 Megatron-Bridge MXFP8 MoE recipes of GB200/GB300, with set_full_iter_cg_configs
     * padding each expert rank to a fixed capacity): the host replays the graph, so the MoE
     * layer's host time and its device-to-host sync (mcore_moe_host.h) are not priced. A
     * pricing knob: the emitters refuse it (the recipe's other settings come with it). */
    bool cuda_graph_full_iteration;
    /* Megatron replays each layer's attention block from a Transformer Engine CUDA graph
     * (cuda_graph_impl "transformer_engine" with "attn" in cuda_graph_scope; the Megatron-Bridge
     * perf recipes' scope attn/moe_router/moe_preprocess, e.g. v0.4.2 scripts/performance/
     * configs/qwen/qwen3_workload_base_configs.py): the host launches a graph instead of the
     * block's ops, so the attention block's host time (mcore_moe_host.h) is not priced; the
     * router and preprocess scopes are not a knob. A pricing knob: the emitters refuse it. */
    bool cuda_graph_attn;
    /* SMs the flex dispatcher's kernels hold (Megatron --moe-deepep-num-sms /
     * --moe-hybridep-num-sms; 0: Megatron's defaults, moe_dispatch.c). Megatron-Bridge's perf
     * recipes run HybridEP with 32 (v0.4.2 and v0.5.0 scripts/performance/utils/overrides.py
     * _set_common_perf_overrides): compute beside an overlapped exchange has that many fewer.
     * A pricing knob: the emitters refuse it. */
    int moe_dispatcher_sms;
    /* Megatron without Transformer Engine's fused RoPE (--no-rope-fusion; apply_rope_fusion
     * false): q and k go through Megatron's eager rope_utils._apply_rotary_pos_emb_bshd, and
     * multi-latent attention also splits q and kv and concatenates query and key eagerly
     * (mcore_unfused.h). Megatron-LM's own default is the fused kernel (arguments.py
     * --no-rope-fusion, store_false); Megatron-Bridge's DeepSeek provider defaults to unfused
     * (deepseek_provider.py apply_rope_fusion = False), which its perf scripts left in place
     * until v0.2.0 (fa0315ae2, the 25.09 rows). Emitted as --no-rope-fusion /
     * cfg.model.apply_rope_fusion = False; never searched (it only costs time). */
    bool rope_unfused;
    /* ZeRO-2 under Megatron: Megatron-FSDP's data-parallel sharding strategy "optim_grads"
     * (--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads): the optimizer state
     * and the fp32 main gradients sharded over dp x cp, the bf16 parameters replicated (no
     * gather per micro-batch; the updated shards gathered once a step, as the distributed
     * optimizer's). Each FSDP unit (decoder layer) reduce-scatters its gradients in every
     * micro-batch's backward, overlapped (megatron/core/distributed/fsdp/mcore_fsdp_adapter.py
     * 166-169: "optim_grads: Additionally, RS communication groups on all microbatches";
     * megatron_fsdp.py 331-337 forces overlap_grad_reduce), into the sharded accumulator.
     * The layout's sharding stays SHARDING_DISTOPT (what the parameters and optimizer do).
     * The Llama 3 paper's FSDP is this split (Dubey et al. 2024, arXiv 2407.21783, Sec. 3.3.2:
     * "shards optimizer states and gradients, but for model shards we do not reshard after
     * forward"; fp32 reduce-scatter). Never searched. */
    bool shard_grads;
    /* torchtitan's own RMSNorm of 2024 (torchtitan/models/norms.py RMSNorm at 9dec370, the
     * llama3 tomls' norm_type = "rmsnorm"): x.float(), pow(2).mean(-1), rsqrt, the product,
     * .type_as(x), * weight, i.e. the eager ops of Hugging Face's LlamaRMSNorm, in place of one
     * fused F.rms_norm kernel (nn.RMSNorm since torchtitan 3b39d7a, 2025-03-19). Priced for
     * eager native blocks only (elementwise.c); compiled blocks fuse either. A pricing knob for
     * runs of that torchtitan: no emitter writes it. */
    bool rms_norm_unfused;
    /* Megatron-Core's TEGroupedMLP pads the experts' rows to the FP8/FP4 alignment behind the
     * DeepEP dispatcher too (elementwise.c fused_layer prices the copies; behind alltoall and
     * allgather always, behind HybridEP never): DeepEP's permute aligns the counts itself only
     * from Megatron-LM 2edffadb (Megatron-Bridge v0.4.2; fused_permute_and_pad_with_probs,
     * moe_utils.py 372-374), not at 0d8e071 / b0cc270 (Bridge v0.2.0 / v0.3.0) nor in
     * megatron-core 0.14 / 0.15 (token_dispatcher.py _DeepepManager permute without align_size).
     * A pricing knob for runs of those versions: no emitter writes it. */
    bool moe_expert_padding;
    layout_rank_order rank_order; /* which of dp and pp is outermost (Megatron only) */
    /* torchtitan's context parallelism: how PyTorch's ring rotates K/V (torch.distributed.
     * tensor.experimental._attention set_rotate_method). false: "allgather", torch's default
     * (_ContextParallelOptions.rotate_method = ALL_GATHER, torch 2.11) and torchtitan's
     * (9dec370 config_manager.py experimental.context_parallel_rotate_method = "allgather");
     * true: "alltoall", the K/V passed around the ring one step at a time (layer_recipe.c). */
    bool cp_rotate_alltoall;
    /* torch.compile leaves the loss eager: torchtitan's compile.components without "loss"
     * (--compile.components model), as torchtitan ran before 2025 (9dec370 train.py: "TODO:
     * compiling loss function causes CUDA errors") and as bench/realruns' trainers run. false:
     * torchtitan's default since then, components ["model", "loss"] (b5bcd76
     * config/configs.py, components/loss.py _maybe_compile). Only with compile; see
     * layout_loss_compiled. */
    bool loss_eager;
    /* torchtitan runs each micro-batch's forward + loss + backward as one CUDA graph replay
     * (its default since f84224af0, TrainingConfig.disable_cuda_graphs; cuda_graphs.h): AUTO,
     * on where torchtitan allows it; read it through cuda_graphs_on() */
    layout_cuda_graphs cuda_graphs;
} layout;

/* The defaults a user gets when they name no option (seq 4096, gbs 1024, flash attention). */
training_spec training_default(void);
/* A layout of all ones under the given framework, with the framework's default sharding. */
layout layout_default(layout_framework fw);

const char *layout_framework_name(layout_framework f);
const char *layout_sharding_name(layout_sharding s);
const char *layout_recompute_name(layout_recompute r);
int layout_parse_framework(const char *s, layout_framework *out);
int layout_parse_sharding(const char *s, layout_sharding *out);
int layout_parse_recompute(const char *s, layout_recompute *out);
const char *layout_moe_dispatcher_name(layout_moe_dispatcher d);
int layout_parse_moe_dispatcher(const char *s, layout_moe_dispatcher *out);

const char *layout_pp_schedule_name(layout_pp_schedule s); /* torch's names: "1F1B", ... */
int layout_parse_pp_schedule(const char *s, layout_pp_schedule *out); /* case-insensitive */
const char *layout_rank_order_name(layout_rank_order o); /* "tp-cp-ep-dp-pp", ... */
int layout_parse_rank_order(const char *s, layout_rank_order *out); /* the name, or dp-pp / pp-dp */
/* The schedule l runs: the stored one, or 1F1B / Interleaved1F1B by vpp for DEFAULT. */
layout_pp_schedule layout_pp_schedule_of(const layout *l);
/* The pipeline rank that holds the model's head (final norm, output layer, loss): the last,
 * but rank 0 under the V schedules (ZBVZeroBubble, DualPipeV), whose rank r holds chunks r and
 * 2 pp - 1 - r, so the last chunk sits beside the first (torch ScheduleZBVZeroBubble's V-shaped
 * stage placement, as torchtitan builds it; measured: bench/results/mgpu8_2026-11-28). */
int layout_head_stage(const layout *l);
/* PyTorch runs the model (torch FSDP2's fully_shard, torch optimizers, eager or compiled
 * modules): the fsdp2 trainer path and torchtitan, not Megatron. */
bool layout_is_pytorch(const layout *l);
/* The cross entropy runs as one torch.compile graph (Inductor's fused reduction on the bf16
 * logits, no fp32 copy kept: memory.c, elementwise.c): PyTorch-native code (impl native) under
 * compile without loss_eager, and a loss on whole logits (tp 1; torchtitan's vocab-parallel loss
 * under TP is not modelled compiled). Measured: bench/results/compile_loss_2026-11-28. */
bool layout_loss_compiled(const layout *l);
/* Attention is split over CP ranks by ring attention (Megatron/TE, PyTorch's context_parallel
 * under torchtitan), not by Ulysses all-to-alls (the fsdp2 trainer path). */
bool layout_cp_is_ring(const layout *l);

int layout_gpus(const layout *l);
int layout_etp(const layout *l);
/* The implementation and optimizer path l runs (impl.h): the stored one, or the framework's
 * default for 0 (FSDP2: hf, foreach; Megatron: te, fused). */
int layout_impl_of(const layout *l);
int layout_optimizer_impl_of(const layout *l);
/* Micro-batches per optimizer step on each pipeline (gradient accumulation steps). */
int layout_microbatches(const layout *l, const training_spec *t);
/* Ranks that shard the optimizer / FSDP state: dp*cp, or the HSDP shard size. */
int layout_shard_group(const layout *l);
/* Data-parallel size of the expert weights: dp*cp*tp / (ep*etp). */
int layout_expert_dp(const layout *l);

/* Layers on pipeline stage (rank) s; uneven remainders go to the middle stages, not the
 * first; under torchtitan the sum of the rank's virtual stages (pp_split.c). */
int layout_stage_layers(const model_spec *m, const layout *l, int stage);
/* Multi-token-prediction modules the last stage runs: the model's num_nextn_predict_layers
 * under Megatron (which runs them when --mtp-num-layers is set, as plan's Megatron configs set
 * it from the model), 0 under Hugging Face and torchtitan training, which do not run them. */
int layout_mtp_layers(const model_spec *m, const layout *l);
int layout_max_stage_layers(const model_spec *m, const layout *l);
/* Layers of virtual chunk `chunk` of rank `rank` (virtual stage chunk * pp + rank, Megatron's
 * order): the rank's layers as even as they go, an uneven rank's gap in the chunk with the
 * embedding (rank 0, chunk 0) or the loss (last rank, last chunk); layers / (pp * vpp) when
 * the split is even. What emit_megatron.c writes and the step simulator (sim.c) runs. */
int layout_chunk_layers(const model_spec *m, const layout *l, int rank, int chunk);
/* Layers of virtual stage k (0 .. pp*vpp-1, in model order): torchtitan's split
 * (pp_split.c); otherwise layout_chunk_layers of rank k % pp, chunk k / pp. */
int layout_vstage_layers(const model_spec *m, const layout *l, int k);
/* torchtitan's _generate_llm_fqn_per_model_part: decoder layers of stage `stage` of `stages`
 * for `layers` layers with first/last_stage_less_layers a / b (pp_split.c). */
int layout_titan_generate(int layers, int stages, int a, int b, int stage);
/* The first/last_stage_less_layers (a, b) and stage count that make torchtitan split l's
 * layers as l's split does; false when no such keys exist (a "less" below 0, torchtitan's
 * checks, or a split its rule does not produce). */
bool layout_titan_split_keys(const model_spec *m, const layout *l, int *a, int *b, int *stages);
/* torchtitan's pipeline_parallel_layers_per_stage k giving l's pp*vpp stages (ceil(E/k)), 0 if
 * none does. */
int layout_titan_layers_per_stage(const model_spec *m, const layout *l);
/* The middle stage (1..pp-2) holding the most layers: 1 but under torchtitan's split, whose
 * middle ranks may differ by a layer or two (the V schedules). */
int layout_busiest_middle_stage(const model_spec *m, const layout *l);
/* Do the stages hold different layer counts (an uneven knob, or layers % pp)? Megatron needs
 * the split stated then (--pipeline-model-parallel-layout). */
bool layout_split_uneven(const model_spec *m, const layout *l);
/* The first global layer of stage `stage`. */
int layout_stage_start(const model_spec *m, const layout *l, int stage);

/*
 * Check divisibility and the framework rules (DESIGN.md "Framework rules"). On failure err names
 * the rule and the fix. gpus is the job's GPU count (0: not checked).
 */
/*
 * layout_check in two halves (speed12: a search lists each layout once per precision, and the
 * rules that read none of the precision fields need checking once): layout_check(l) is CM_OK
 * exactly when layout_check_base(precision_bf16_layout(l)) and layout_check_precision(l) both
 * are. _base: every rule but the precision ones, on a bf16 layout (its precision fields
 * bf16's); _precision: the rules that read precision, fp8_recipe, fp8_param_gather,
 * moe_fp8_dispatch or the bf16 first/last layers. Both: CM_OK or the first failure's status,
 * no message.
 */
cm_status layout_check_base(const model_spec *m, const training_spec *t, const layout *bf16);
cm_status layout_check_precision(const model_spec *m, const system_spec *sys, const layout *l);
cm_status layout_check(const model_spec *m, const system_spec *sys, const training_spec *t,
                       const layout *l, int gpus, char *err, size_t errlen);
cm_status training_check(const training_spec *t, char *err, size_t errlen);

/* One broken rule: a short stable name ("tp-divides-heads"), the status layout_check() would
 * return for it, and the message (what is wrong and how to fix it). */
typedef struct {
    const char *rule;
    cm_status code;
    char message[CM_ERRLEN];
} layout_violation;

/*
 * The same rules as layout_check(), each tested on its own, so a user sees every problem at
 * once (`plan check`). Writes up to max violations into out, in layout_check()'s order, and
 * returns how many rules are broken (0: the layout is valid; may exceed max). Non-positive or
 * absurd sizes are reported alone: the other rules cannot be evaluated on them.
 */
int layout_check_all(const model_spec *m, const system_spec *sys, const training_spec *t,
                     const layout *l, int gpus, layout_violation *out, int max);

/*
 * Placement in Megatron's rank order (l->rank_order; the default: tp innermost, then cp, dp, pp;
 * EP inside dp): a group of `size` ranks whose neighbours are `stride` ranks apart. Here a
 * "node" is the scale-up (NVLink) domain, system_domain_gpus(): the host on 8-GPU presets, the
 * rack on NVL72. members_per_node is how many of the group share a domain (1 when spread one
 * per domain); spans_nodes: the group leaves its domain and talks over the scale-out network.
 */
typedef struct {
    int size;
    int members_per_node;
    bool spans_nodes;
} layout_group;

layout_group layout_group_place(const system_spec *sys, int size, int stride);
layout_group layout_tp_group(const system_spec *sys, const layout *l);
layout_group layout_cp_group(const system_spec *sys, const layout *l);
layout_group layout_dp_group(const system_spec *sys, const layout *l); /* dp*cp, gradients */
layout_group layout_ep_group(const system_spec *sys, const layout *l);
layout_group layout_pp_group(const system_spec *sys, const layout *l);
layout_group layout_shard_place(const system_spec *sys, const layout *l);
/* The expert weights' data-parallel group (layout_expert_dp ranks): gradients of the experts. */
layout_group layout_expert_dp_group(const system_spec *sys, const layout *l);
/* Ranks apart of neighbours in l's DP and PP groups under its rank order (tp*cp and
 * tp*cp*dp by default; tp*cp*pp and tp*cp under --use-tp-pp-dp-mapping). */
int layout_dp_stride(const layout *l);
int layout_pp_stride(const layout *l);
/* Does the other rank order place some group of l differently on sys (pp > 1, dp > 1 and a
 * DP or PP group whose domain count changes)? The search tries PP_DP only there. */
bool layout_rank_order_matters(const system_spec *sys, const layout *l);
/* l under --use-tp-pp-dp-mapping into out where a Megatron search should try it: the order
 * matters (above) and breaks no rule of it. */
bool layout_rank_order_alternative(const system_spec *sys, const layout *l, layout *out);
/* The Megatron rules of the rank order into msg (rule name into *rule; msg NULL: no text);
 * false when l breaks none. */
bool layout_rank_order_rule(const layout *l, const char **rule, char *msg, size_t len);
/* The rules of --shard-grads (ZeRO-2 under Megatron, shard_grads.h), the same way. */
bool layout_shard_grads_rule(const layout *l, const char **rule, char *msg, size_t len);
/* Sentences on how l's TP, CP and EP groups sit on the NVLink domains (crossing hosts inside
 * a rack-scale domain; inside only when each domain runs whole groups; spanning domains) into
 * buf ("" when there is nothing to say). Returns how many of them leave the domain. */
int layout_domain_notes(const system_spec *sys, const layout *l, char *buf, size_t len);
/* One sentence naming the dimensions whose groups cross NVLink domains under l's rank order
 * ("DP 4 crosses domains (ranks 8 apart); PP 2 stays inside one (rank order tp-cp-ep-pp-dp)"),
 * "" for a layout inside one domain. Returns how many groups cross. */
int layout_span_summary(const system_spec *sys, const layout *l, char *buf, size_t len);

#endif
