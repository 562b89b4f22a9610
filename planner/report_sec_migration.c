/*
 * report_sec_migration.c — section 6 of `plan report`: migration notes both ways, with what each
 * model gains or loses by switching and the documented checkpoint conversions (sources cited).
 */
#include "report_sections.h"

#include <stdio.h>
#include <string.h>

#include "report_text.h"

#define SRC_FSDP_GUIDE "https://github.com/NVIDIA/Megatron-LM/blob/main/docs/discussions/megatron-fsdp-user-guide/megatron-fsdp-user-guide.md"
#define SRC_FSDP_FEATURE "https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/megatron_fsdp.md"
#define SRC_BRIDGE "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/main/examples/conversion/convert_checkpoints.py"
#define SRC_BRIDGE_GUIDE "https://docs.nvidia.com/nemo/megatron-bridge/latest/bridge-guide.html"

void report_section_migration(doc *d, const report *r)
{
    char lay0[256], lay1[256];
    doc_h(d, 2, "migration", "6. Migration notes");
    doc_p(d, "What each of your models gains or loses by switching, at the largest of your GPU "
             "counts where both frameworks fit:");
    for (int i = 0; i < r->nmodels; i++) {
        const report_model_result *mr = &r->models[i];
        const report_point *p = NULL;
        for (int g = r->ngpus - 1; g >= 0 && !p; g--) {
            const report_point *q = report_find_point(mr, r->gpus[g]);
            if (q && q->has_best[0] && q->has_best[1]) p = q;
        }
        if (!p) {
            doc_li(d, 0, "%s: no GPU count of yours where both fit; %s.", mr->display_doc,
                   report_primary_plan(r, mr) ? "see section 5 for the framework that does"
                                       : "it fits nowhere");
            continue;
        }
        const estimate *f = &p->best[FRAMEWORK_FSDP2], *m = &p->best[FRAMEWORK_MEGATRON];
        report_fmt_layout(f, lay0, sizeof lay0);
        report_fmt_layout(m, lay1, sizeof lay1);
        doc_li(d, 0, "%s on %d GPUs: FSDP2 (%s) %.2f s/step, %.1f GiB → Megatron (%s) %.2f "
                     "s/step, %.1f GiB: **%.2fx** %s.",
               mr->display_doc, p->gpus, lay0, f->time.step_s, f->memory.total_bytes / UNITS_GIB_BYTES,
               lay1, m->time.step_s, m->memory.total_bytes / UNITS_GIB_BYTES,
               f->time.step_s / m->time.step_s,
               f->time.step_s > m->time.step_s ? "faster on Megatron" : "(Megatron is slower)");
    }
    doc_list_end(d);

    doc_h(d, 3, "fsdp2-to-megatron", "6.1 FSDP2 → Megatron");
    doc_li(d, 0, "**Weights to Hugging Face format.** Save the trained model from the FSDP2 "
                 "job as a Hugging Face checkpoint (a full state dict, e.g. "
                 "`get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))` "
                 "then `save_pretrained`), or turn its DCP directory into one file with `python "
                 "-m torch.distributed.checkpoint.format_utils dcp_to_torch dcp_ckpt/ "
                 "torch_ckpt.pt` [(Megatron-FSDP feature guide, \"Checkpoint Conversion\")](%s).",
           SRC_FSDP_FEATURE);
    doc_li(d, 0, "**Import into Megatron** with Megatron Bridge: `python "
                 "examples/conversion/convert_checkpoints.py import --hf-model <hf dir or id> "
                 "--megatron-path <megatron ckpt dir>` [(Megatron Bridge)](%s); the Python API "
                 "is `AutoBridge.import_ckpt(hf_model_id=..., megatron_path=...)` [(bridge "
                 "guide)](%s). This writes a `torch_dist` checkpoint.",
           SRC_BRIDGE, SRC_BRIDGE_GUIDE);
    doc_li(d, 0, "**If the Megatron plan uses Megatron-FSDP**, it needs `--ckpt-format "
                 "fsdp_dtensor`; convert `torch_dist` → `fsdp_dtensor` as documented "
                 "[(Megatron-FSDP user guide, \"Checkpoint Conversion from 3D-Parallel to "
                 "Megatron-FSDP\")](%s):",
           SRC_FSDP_GUIDE);
    doc_li(d, 1, "run the N-D-parallel job (a very short run is enough) with "
                 "`--dump-param-to-param-group-map /path/to/param_to_param_group_map`;");
    doc_li(d, 1, "`python tools/checkpoint/checkpoint_inspector.py print-torch-dcp-in-json "
                 "/path/to/param_to_param_group_map` writes `param_to_param_group_map.json` "
                 "there;");
    doc_li(d, 1, "`torchrun --nproc_per_node=8 --nnodes=1 tools/checkpoint/checkpoint_inspector.py "
                 "convert-torch-dist-to-fsdp-dtensor --swiglu /path/to/input_torch_dist_checkpoint "
                 "/path/to/output_fsdp_dtensor_checkpoint --param-to-param-group-map-json "
                 "/path/to/param_to_param_group_map.json` (`--swiglu` for SwiGLU models such as "
                 "the Llama and Mixtral presets; multi-node: the guide's "
                 "`sbatch_checkpoint_convert.sh`);");
    doc_li(d, 1, "train with the required flags (section 2) and the converted checkpoint.");
    /* what the rule check lets Megatron do that it refuses FSDP2 (never restated here) */
    char err[CM_ERRLEN];
    bool sel_f2 = report_feature_check(r, REPORT_F_SELECTIVE, FRAMEWORK_FSDP2, err,
                                       sizeof err) == CM_OK;
    bool sel_meg = report_feature_check(r, REPORT_F_SELECTIVE, FRAMEWORK_MEGATRON, err,
                                        sizeof err) == CM_OK;
    doc_li(d, 0, "**Knobs that carry over**: micro-batch → `--micro-batch-size`, global batch → "
                 "`--global-batch-size`, `max_grad_norm` → `--clip-grad`, gradient checkpointing "
                 "→ `--recompute-granularity full`%s, Ulysses "
                 "size → `--context-parallel-size` (a different algorithm: ring attention, "
                 "needs the sequence divisible by 2·CP). FSDP2's `fsdp_size` / "
                 "`reshard_after_forward` / CPU offload have no one-to-one Megatron flag: take "
                 "the layout from section 5.",
           sel_meg && !sel_f2 ? " (or `selective`, which the rule check refuses FSDP2)"
           : sel_meg          ? " (or `selective`)"
                              : "");
    doc_li(d, 0, "Hugging Face checkpoints carry weights only: the optimizer state starts "
                 "fresh after the import.");
    doc_list_end(d);

    doc_h(d, 3, "megatron-to-fsdp2", "6.2 Megatron → FSDP2");
    doc_li(d, 0, "**From Megatron-FSDP (`fsdp_dtensor`) back to `torch_dist`** "
                 "[(Megatron-FSDP feature guide, \"Converting Megatron-FSDP (fsdp_dtensor) to "
                 "N-D Parallel (torch_dist) Checkpoints\")](%s): `python "
                 "tools/checkpoint/checkpoint_inspector.py convert-fsdp-dtensor-to-torch-dist "
                 "/path/to/input_fsdp_dtensor_checkpoint/ /path/to/output_torch_dist_checkpoint/`. "
                 "It runs on the CPU and holds the checkpoint in host memory (about 14 bytes per "
                 "parameter with optimizer state, about 2 with `--no-optimizer`; under `torchrun "
                 "--nproc_per_node N` the peak drops about N-fold).",
           SRC_FSDP_FEATURE);
    for (int i = 0; i < r->nmodels; i++) {
        double p = model_params_total(&r->models[i].m);
        doc_li(d, 1, "%s: about %.0f GB of host memory with optimizer state, %.0f GB with "
                     "`--no-optimizer`.",
               r->models[i].display_doc, 14 * p / 1e9, 2 * p / 1e9);
    }
    doc_li(d, 1, "A classic N-D-parallel job resuming with optimizer state from the converted "
                 "checkpoint must set `--dist-ckpt-optim-fully-reshardable --ckpt-format "
                 "torch_dist --use-distributed-optimizer --dist-ckpt-strictness log_all "
                 "--no-load-rng`; optimizer state cannot be loaded into a job with EP > 1 "
                 "(resume with EP 1, or weights only with `--finetune --no-load-optim`).");
    for (int i = 0; i < r->nmodels; i++) {
        const estimate *e = report_primary_plan(r, &r->models[i]);
        if (e && e->layout.framework == FRAMEWORK_MEGATRON && e->layout.ep > 1)
            doc_li(d, 2, "This applies to your %s plan (EP %d).", r->models[i].display_doc,
                   e->layout.ep);
    }
    doc_li(d, 0, "**Export to Hugging Face** with Megatron Bridge: `python "
                 "examples/conversion/convert_checkpoints.py export --hf-model <hf id or config "
                 "dir> --megatron-path <megatron ckpt dir> --hf-path <output dir>` [(Megatron "
                 "Bridge)](%s), then load it in the FSDP2 trainer (`from_pretrained`) and apply "
                 "`fully_shard`.",
           SRC_BRIDGE);
    /* the model parallelism Megatron has and FSDP2 lacks, from the rule check's probes */
    static const int mp_f[] = {REPORT_F_TP, REPORT_F_PP, REPORT_F_CP, REPORT_F_EP};
    static const char *const mp_label[] = {"TP", "PP", "CP", "EP"};
    char lost[64] = "";
    for (int k = 0; k < 4; k++)
        if (report_feature_check(r, mp_f[k], FRAMEWORK_MEGATRON, err, sizeof err) == CM_OK &&
            report_feature_check(r, mp_f[k], FRAMEWORK_FSDP2, err, sizeof err) != CM_OK) {
            size_t o = strlen(lost);
            snprintf(lost + o, sizeof lost - o, "%s%s", o ? ", " : "", mp_label[k]);
        }
    if (lost[0])
        doc_li(d, 0, "**What FSDP2 cannot keep** (refused by the rule check, section 4): %s. "
                     "Each GPU then holds a 1/DP shard of everything plus activations that %s "
                     "does not split; where FSDP2 does not fit (sections 1.4 and 3), switch only "
                     "with more GPUs or recompute/offload.",
               lost, lost);
    else
        doc_li(d, 0, "**FSDP2 keeps** the model parallelism of a Megatron plan (TP, PP, CP and "
                     "EP all pass its rule check, section 4).");
    doc_list_end(d);
}

