/*
 * check.c — the all-rules check behind `plan check` (see check.h): the report it fills, the
 * model a config names, the GPU count and data-parallel size, every framework rule at once, and
 * the YAML key to change for each broken rule. The trainer YAML is read in check_yaml.c and a
 * torchtitan command line in check_torchtitan.c; both hand their config to the check here.
 */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- report ---- */

void check_violation(check_report *rep, cm_status code, const char *rule, const char *fmt, ...)
{
    if (rep->nviolations < CHECK_MAX_VIOLATIONS) {
        layout_violation *v = &rep->violations[rep->nviolations];
        v->rule = rule;
        v->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->message, sizeof v->message, fmt, ap);
        va_end(ap);
    }
    rep->nviolations++;
}

void check_note(check_report *rep, const char *fmt, ...)
{
    if (rep->nnotes >= CHECK_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->notes[rep->nnotes++], CM_ERRLEN, fmt, ap);
    va_end(ap);
}
#define violation check_violation
#define note check_note

/* ---- model ---- */

static bool is_file(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISREG(s.st_mode);
}

static bool is_dir(const char *p)
{
    struct stat s;
    return stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

cm_status check_load_model(const char *ref, const char *data_dir, model_spec *m, char *name_out,
                           size_t name_len, char *err, size_t errlen)
{
    if (!ref || !*ref)
        return cm_fail(err, errlen, CM_EINVAL,
                       "the config names no model: add trainer.policy.model.path or give "
                       "--model");
    snprintf(name_out, name_len, "%s", ref);
    if (is_file(ref)) return model_load_json(ref, NULL, m, err, errlen);
    char path[1024];
    if (is_dir(ref)) { /* a Hugging Face checkpoint directory */
        snprintf(path, sizeof path, "%s/config.json", ref);
        if (is_file(path)) {
            snprintf(name_out, name_len, "%s", path);
            return model_load_json(path, NULL, m, err, errlen);
        }
    }
    if (!strchr(ref, '/')) {
        snprintf(path, sizeof path, "%s/models/%s.json", data_dir, ref);
        if (is_file(path)) return model_load_json(path, ref, m, err, errlen);
    }
    /* A Hugging Face repository id: the preset whose hf_repo it is. */
    char list[2048];
    model_list_presets(data_dir, list, sizeof list);
    char *save = NULL;
    for (char *name = strtok_r(list, ", ", &save); name; name = strtok_r(NULL, ", ", &save)) {
        snprintf(path, sizeof path, "%s/models/%s.json", data_dir, name);
        char e2[CM_ERRLEN];
        if (model_load_json(path, name, m, e2, sizeof e2) == CM_OK && m->hf_repo[0] &&
            !strcasecmp(m->hf_repo, ref)) {
            snprintf(name_out, name_len, "%s", name);
            return CM_OK;
        }
    }
    model_list_presets(data_dir, list, sizeof list);
    return cm_fail(err, errlen, CM_EINVAL,
                   "model '%.200s' is not a local config.json, a preset (%s) or the Hugging Face "
                   "repository of one: give --model with a preset or a config.json",
                   ref, list[0] ? list : "none found: set PLAN_DATA_DIR");
}

/* ---- the whole check ---- */

int check_layout(const model_spec *m, const system_spec *sys, check_config *cfg, int gpus,
                 check_report *rep, char *err, size_t errlen)
{
    layout *l = &cfg->layout;
    if (gpus > 0 && cfg->num_gpus > 0 && gpus != cfg->num_gpus)
        note(rep, "--gpus %d overrides trainer.placement.num_gpus %d", gpus, cfg->num_gpus);
    if (gpus <= 0 && cfg->num_gpus <= 0) {
        /* SkyRL's PlacementConfig defaults (skyrl/train/config/config.py, SkyRL a956457):
         * policy_num_nodes 1, policy_num_gpus_per_node 1 */
        if (cfg->num_nodes <= 0) {
            cfg->num_nodes = 1;
            note(rep, "trainer.placement.policy_num_nodes is absent: 1 node assumed (SkyRL's "
                      "default)");
        }
        if (cfg->gpus_per_node <= 0) {
            cfg->gpus_per_node = 1;
            note(rep, "trainer.placement.policy_num_gpus_per_node is absent: 1 GPU per node "
                      "assumed (SkyRL's default); give it, or --gpus N");
        }
        if ((long)cfg->num_nodes * cfg->gpus_per_node <= 10000000)
            cfg->num_gpus = cfg->num_nodes * cfg->gpus_per_node;
    }
    if (gpus <= 0) gpus = cfg->num_gpus;
    if (gpus <= 0) {
        cm_fail(err, errlen, CM_EINVAL,
                "no GPU count: add trainer.placement.num_gpus (or num_nodes and gpus_per_node) "
                "or give --gpus N");
        return 0;
    }
    if (cfg->gpus_per_node > sys->gpus_per_node)
        violation(rep, CM_EINVAL, "placement-fits-node",
                  "trainer.placement.gpus_per_node %d, but a %s node has %d GPUs: lower "
                  "gpus_per_node or give the right --system",
                  cfg->gpus_per_node, sys->name, sys->gpus_per_node);
    else if (cfg->gpus_per_node > 0 && cfg->gpus_per_node < sys->gpus_per_node &&
             gpus > cfg->gpus_per_node)
        note(rep, "placement uses %d of the %d GPUs per node; the estimate places ranks on full "
                  "nodes",
             cfg->gpus_per_node, sys->gpus_per_node);

    long mp = (long)l->tp * l->pp * l->cp;
    int check_gpus = gpus;
    if (mp > gpus || gpus % mp) {
        violation(rep, CM_EINVAL, "gpu-count",
                  "%d GPUs are not divisible by tp*pp*cp = %d*%d*%d = %ld (dp = GPUs / "
                  "(tp*pp*cp)): change the parallel sizes or the GPU count",
                  gpus, l->tp, l->pp, l->cp, mp);
        l->dp = 1;
        check_gpus = 0; /* reported here; do not report it again below */
    } else {
        l->dp = (int)(gpus / mp);
    }
    if (cfg->dopt_instances > 0) {
        if (l->sharding == SHARDING_DDP) {
            violation(rep, CM_ERULE, "hsdp-needs-sharding",
                      "num_distributed_optimizer_instances %d needs the distributed optimizer "
                      "or Megatron-FSDP: set use_distributed_optimizer: true or drop it",
                      cfg->dopt_instances);
        } else if ((l->dp * l->cp) % cfg->dopt_instances) {
            violation(rep, CM_ERULE, "hsdp-divides-dp",
                      "num_distributed_optimizer_instances %d must divide dp*cp = %d: pick a "
                      "divisor",
                      cfg->dopt_instances, l->dp * l->cp);
        } else {
            l->shard_size = l->dp * l->cp / cfg->dopt_instances;
        }
    }
    /* cpu_offloading_num_layers of all layers but the last is the layout's default (0) */
    if (l->activation_offload && l->activation_offload_layers == m->layers - 1)
        l->activation_offload_layers = 0;
    layout_violation v[CHECK_MAX_VIOLATIONS];
    int n = layout_check_all(m, sys, &cfg->training, l, check_gpus, v, CHECK_MAX_VIOLATIONS);
    for (int i = 0; i < n && i < CHECK_MAX_VIOLATIONS; i++)
        if (rep->nviolations + i < CHECK_MAX_VIOLATIONS)
            rep->violations[rep->nviolations + i] = v[i];
    rep->nviolations += n;
    return gpus;
}

const char *check_yaml_fix(const char *rule)
{
    static const struct {
        const char *rule, *fix;
    } fixes[] = {
        {"sizes", "the parallel sizes in trainer.policy.megatron_config and "
                  "sequence_parallel_size"},
        {"gpu-count", "trainer.placement.num_gpus, or the parallel sizes (tp*pp*cp must divide "
                      "it)"},
        {"tp-divides-heads", "trainer.policy.megatron_config.tensor_model_parallel_size"},
        {"pp-fits-layers", "trainer.policy.megatron_config.pipeline_model_parallel_size"},
        {"vpp-needs-pp", "megatron_config.transformer_config_kwargs."
                         "virtual_pipeline_model_parallel_size: null, or "
                         "pipeline_model_parallel_size >= 2"},
        {"vpp-divides-layers", "megatron_config.transformer_config_kwargs."
                               "virtual_pipeline_model_parallel_size or "
                               "pipeline_model_parallel_size"},
        {"batch-divisible", "trainer.train_batch_size or trainer.micro_train_batch_size_per_gpu"},
        {"vpp-microbatches", "trainer.train_batch_size or trainer.micro_train_batch_size_per_gpu"},
        {"sp-needs-tp", "megatron_config.transformer_config_kwargs.sequence_parallel: false, or "
                        "tensor_model_parallel_size "
                        "> 1"},
        {"cp-divides-seq", "trainer.algorithm.max_seq_len, or context_parallel_size (megatron) / "
                           "sequence_parallel_size (fsdp2)"},
        {"ep-needs-moe", "megatron_config.expert_model_parallel_size: 1"},
        {"moe-tp-needs-sp", "megatron_config.transformer_config_kwargs.sequence_parallel: true"},
        {"ep-divides-experts", "megatron_config.expert_model_parallel_size"},
        {"ep-within-dp", "megatron_config.expert_model_parallel_size or "
                         "expert_tensor_parallel_size"},
        {"hsdp-needs-sharding", "fsdp_config.fsdp_size: -1, or megatron_config."
                                "use_distributed_optimizer: true"},
        {"hsdp-divides-dp", "fsdp_config.fsdp_size (fsdp2) or megatron_config."
                            "num_distributed_optimizer_instances"},
        {"offload-pp1-no-recompute", "fsdp_config.cpu_offload: false, or pipeline size 1 with "
                                     "gradient_checkpointing: false"},
        {"offload-needs-fsdp", "fsdp_config.cpu_offload: false (offload is an FSDP2 feature)"},
        {"fsdp2-no-model-parallel", "trainer.strategy: megatron, or the megatron_config tensor/"
                                    "pipeline/expert sizes at 1"},
        {"fsdp2-sp-is-ulysses", "megatron_config.sequence_parallel: false (FSDP2 splits the "
                                "sequence with sequence_parallel_size)"},
        {"ulysses-divides-heads", "trainer.policy.sequence_parallel_size"},
        {"rank-order-not-with-megatron-fsdp", "megatron_config.use_tp_pp_dp_mapping: false"},
        {"rank-order-expert-dp", "megatron_config.use_tp_pp_dp_mapping: false, or "
                                 "expert_tensor_parallel_size x expert_model_parallel_size = "
                                 "tensor x context parallel size"},
    };
    for (size_t i = 0; rule && i < sizeof fixes / sizeof *fixes; i++)
        if (!strcmp(rule, fixes[i].rule)) return fixes[i].fix;
    return NULL;
}
