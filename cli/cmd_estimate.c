/*
 * cmd_estimate.c — `plan estimate`: evaluate one given layout (memory, time, feasibility).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "estimate.h"
#include "output.h"
#include "sim.h"

static void usage(void)
{
    printf("usage: plan estimate --model M [--gpus N] [layout] [options]\n"
           "  --framework fsdp2|megatron|torchtitan (default megatron)\n"
           "  --exact-model        refuse the framework (error, exit 2) when its own model code\n"
           "                       cannot build the model as it is (plan --help)\n"
           "  --pp-schedule 1F1B|Interleaved1F1B|GPipe|ZBVZeroBubble|DualPipeV (torchtitan;\n"
           "                       default 1F1B, Interleaved1F1B with --vpp > 1)\n"
           "  --async-tp           torchtitan async TP (needs --compile, --tp > 1, SP)\n"
           "  --cp-rotate allgather|alltoall  torchtitan CP: how torch's ring moves K/V\n"
           "                       (default allgather, torch's and torchtitan's)\n"
           "  --compile-components model,loss|model  what --compile takes (torchtitan's\n"
           "                       compile.components; default model,loss: the loss fused)\n"
           "  --rank-order tp-cp-ep-dp-pp|tp-cp-ep-pp-dp  Megatron's rank placement (default\n"
           "                       the first; the second is --use-tp-pp-dp-mapping: PP inside)\n"
           "  --reshard-after-forward   (torchtitan with --pp > 1 defaults to never)\n"
           "  --tp N --pp N --dp N --cp N --ep N --etp N --vpp N --mbs N\n"
           "  --sp | --no-sp        Megatron sequence parallel (default on when tp > 1)\n"
           "  --sharding ddp|distopt|fsdp   (fsdp2 default fsdp, megatron default distopt)\n"
           "  --no-reshard-after-forward --shard-size N (HSDP) --offload\n"
           "  --recompute none|selective|full --recompute-layers N\n"
           "  --recompute-modules M,M (Megatron selective: core_attn moe_act layernorm\n"
           "                       mla_up_proj mlp moe shared_experts; default core_attn)\n"
           "  --bf16-optimizer-states  Megatron precision-aware optimizer: bf16 main grads\n"
           "                       and Adam moments (distributed optimizer)\n"
           "  --te-cross-entropy   Megatron's fused cross entropy in Transformer Engine's kernel\n"
           "                       (no fp32 logits; Megatron-Bridge's performance recipes)\n"
           "  --cuda-graph-full-iteration  Megatron captures forward+backward in one CUDA graph:\n"
           "                       no host time for its MoE layers (pricing only, not emitted)\n"
           "  --cuda-graph-attn    Megatron replays each attention block from a TE CUDA graph\n"
           "                       (scope attn): no host time for it (pricing only)\n"
           "  --no-rope-fusion     Megatron's eager RoPE (apply_rope_fusion off; MLA's split\n"
           "                       and concatenations too)\n"
           "  --shard-grads        Megatron-FSDP optim_grads (ZeRO-2; with the distributed\n"
           "                       optimizer): gradients sharded, reduce-scattered every\n"
           "                       micro-batch; parameters replicated (not searched)\n"
           "  --rms-norm-unfused   torchtitan 2024's own RMSNorm (before 3b39d7a): eager blocks\n"
           "                       run its unfused ops, not one F.rms_norm (pricing only)\n"
           "  --moe-expert-padding  Megatron-Core before 2edffadb: FP8/FP4 experts behind DeepEP\n"
           "                       are padded and unpadded by TEGroupedMLP (pricing only)\n"
           "  --cuda-graphs / --no-cuda-graphs  torchtitan replays forward+loss+backward from\n"
           "                       one CUDA graph (its default where it allows it: pp 1, ep 1)\n"
           "  --moe-dispatcher-sms N  SMs DeepEP/HybridEP hold (Megatron defaults 20 / 16;\n"
           "                       Bridge's perf recipes run HybridEP on 32; pricing only)\n"
           "  --optimizer-cpu-offload [--optimizer-offload-fraction F] --activation-offload\n"
           "                       Megatron CPU offload (distopt; activations: pp 1, no recompute)\n"
           "  --activation-offload-layers N  offload the first N decoder layers' activations\n"
           "                       (--cpu-offloading-num-layers; default all but the last)\n"
           "  --seq N --gbs N --system NAME|FILE --calibration FILE\n"
           "  --gemm-headroom bubble|on|off  GEMMs faster where the step draws less than the power\n"
           "                       cap (systems with a measured fit): bubble (default) counts\n"
           "                       the pipeline bubble's idle time, on also memory-bound\n"
           "                       kernels and exposed communication, off none\n"
           "  --attention flash|unfused --no-overlap --tp-comm-overlap\n"
           "  --overlap-grad-reduce --overlap-param-gather --grad-reduce-bf16\n"
           "  --pp-first-layers N --pp-last-layers N   uneven pipeline: decoder layers on the first /\n"
           "                       last stage, the others share the rest evenly (Megatron; under\n"
           "                       torchtitan the first/last virtual stage's, the rest as even as\n"
           "                       it goes: its first/last_stage_less_layers; default its 1 / 1)\n"
           "  --expandable-segments  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: no free block\n"
           "                       kept for the fp32 logits (allocator fragmentation, memory.h);\n"
           "                       torchtitan's default. --no-expandable-segments: torch's default\n"
           "                       allocator (a torchtitan run without its launcher's setting)\n"
           "  --pp-keep-outputs    a pipelining loop that keeps the last stage's outputs\n"
           "                       (schedule.step's default return_outputs=True; torchtitan\n"
           "                       passes False): its bf16 logits of every micro-batch held\n"
           "  --pp-fsdp-rs-held    torch before pytorch#144535 (2025-01-10): FSDP2 keeps each\n"
           "                       local stage's last fp32 reduce-scatter input (one block)\n"
           "                       into the next step (torchtitan's 2024-12 tables)\n"
           "  --hold-logits        a native loop that keeps the bf16 logits through the backward\n"
           "                       (no `del pred` before loss.backward(), as torchtitan does)\n"
           "  --one-rank-groups N  N process groups of one rank beyond the layout's (a device\n"
           "                       mesh's size-1 dimensions): an NCCL communicator each\n"
           "  --moe-pad-index-copy a torch MoE padding the experts' rows by index_copy: autograd\n"
           "                       keeps the unpadded rows too (2h bytes a routed copy)\n"
           "  --moe-gather-routing a torch MoE regrouping tokens by gathers both ways, top-k\n"
           "                       weights as a [T,k,h] fp32 product (parallel_run.py's EP layer)\n"
           "  --precision bf16|fp8|mxfp8|nvfp4 --fp8-recipe delayed|tensorwise|blockwise|rowwise\n"
           "                       the layout's format; without it bf16, whatever the GPU: an\n"
           "                       estimate is of one layout, and its format is part of it (the\n"
           "                       search, plan --model M --gpus N, tries the formats itself)\n"
           "  --fp8-param-gather (Megatron: FP8 parameters, FP8 all-gather; distopt or fsdp)\n"
           "  --bf16-first-layers N --bf16-last-layers N (Megatron --first-last-layers-bf16)\n"
           "  --moe-fp8-dispatch (DeepEP's FP8 dispatch; --moe-dispatcher deepep)\n"

           "  --impl hf|native|te   layer code (fsdp2 default hf, megatron default te)\n"
           "  --compile             torch.compile per block (fuses eager elementwise ops)\n"
           "  --optimizer-impl fused|foreach|for-loop   AdamW path (fsdp2 default foreach:\n"
           "                       torch's default on CUDA; megatron default fused)\n"
           "  --moe-dispatcher alltoall|allgather|deepep|hybridep --moe-imbalance R (busiest\n"
           "  expert rank / mean, default 1) --moe-capacity-factor C (0: dropless, default)\n"
           "  --moe-ep-overlap (Megatron --overlap-moe-expert-parallel-comm, pp 1 or vpp)\n"
           "  --moe-shared-expert-overlap (shared experts beside the alltoall exchange)\n"
           "  --moe-expert-loop (torchtitan: experts as a per-expert loop, use_grouped_mm off)\n"
           "  --moe-new-counts S   with the loop: share of a step's per-expert row counts new to\n"
           "                       the process (cuBLAS's heuristic per new GEMM shape; default 0)\n"
           "  --format human|json\n"
           "  --ops                also print the layer recipe: each GEMM, attention core,\n"
           "                       kernel and collective with its time per micro-batch\n"
           "  --simulate           also simulate the step (time_simulated); --trace FILE writes it\n"
           "                       as a Chrome/Perfetto trace (see plan simulate)\n"
           "  --emit yaml|megatron-args|bridge|torchtitan|json   print this layout's config\n"
           "dp defaults to gpus/(tp*pp*cp) when --gpus is given.\n"
           "exit status: 0 the layout fits, 1 it does not fit, 2 an error.\n");
}

int cmd_estimate(int argc, char **argv)
{
    cli_options o;
    bool help;
    int rc = cli_parse(argc, argv, &o, &help);
    if (rc) return rc;
    if (help) {
        usage();
        return 0;
    }
    if (!o.model_given)
        return cli_error("no model: give --model NAME|config.json (e.g. --model 8b)");
    /* the pipeline bubble's power headroom unless --gemm-headroom says otherwise
     * (gemm_headroom.h: GEMMs on ranks that idle in the bubble run faster, measured per rank) */
    cli_gemm_headroom_default(&o);
    layout l;
    model_spec m;
    system_spec sys;
    estimate e;
    if ((rc = cli_estimate(&o, &m, &sys, &l, &e))) return rc;
    char err[CM_ERRLEN];
    if (o.trace && !estimate_time_priced(&e)) {
        /* no step to simulate or trace: say why rather than write a trace of ~1e30 s */
        snprintf(err, sizeof err, "no trace: this layout has no step time: %s",
                 e.infeasible_reason);
        return cli_error(err);
    }
    if (o.simulate && estimate_time_priced(&e)) {
        /* Both figures: the closed form's and the step simulator's (time_simulated). */
        sim_workspace *w = sim_alloc();
        sim_options so = {.serialize = false, .trace = o.trace != NULL};
        if (!w) return cli_error("out of memory");
        /* the simulator's stages at the GEMM rate the closed form's power headroom found */
        system_spec ss = sys;
        if (e.time.gemm_headroom_rate > 1) ss.gemm_headroom_rate = e.time.gemm_headroom_rate;
        cm_status st = sim_estimate(w, &m, &ss, &o.training, &l, &so, &e, err, sizeof err);
        if (st == CM_OK && o.trace) st = output_write_trace(w, o.trace, err, sizeof err);
        sim_free(w);
        if (st != CM_OK) return cli_error(err);
    }
    if (o.emit != EMIT_NONE) {
        char *text = NULL;
        emit_context ctx = {.model_ref = o.model};
        if (emit_render(o.emit, &e, &m, &sys, &ctx, &text, err, sizeof err) != CM_OK)
            return cli_error(err);
        fputs(text, stdout);
        free(text);
        /* The config is written either way (the user asked for this layout); say so when it
         * will not fit, on stderr so a redirected config stays clean, and exit 1 as plan check
         * does. */
        if (!e.feasible) {
            fprintf(stderr, "plan: warning: this layout does not fit: %s\n", e.infeasible_reason);
            return 1;
        }
        return 0;
    }
    if (o.format == FORMAT_JSON) {
        json_t *j = output_estimate_json(&e, &m, &sys);
        json_object_set_new(j, "fits", json_boolean(e.feasible));
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        output_estimate_human(stdout, &e, &m, &sys);
        if (o.ops && estimate_time_priced(&e)) {
            fputc('\n', stdout);
            output_recipe_ops(stdout, &e, &m, &sys);
        }
    }
    /* exit 1 when the layout does not fit, as plan check (0 fits, 1 does not, 2 error) */
    return e.feasible ? 0 : 1;
}
