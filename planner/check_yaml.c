/*
 * check_yaml.c — reading a trainer YAML into a check_config for `plan check` (see check.h);
 * the rules are checked apart, in check.c. It exists so that the yr_reader (libyaml lookups typed
 * the way the trainer reads them, and the schema of the keys a layout depends on) is one module
 * and the check that runs after it another.
 *
 * The YAML is loaded with libyaml's document API (aliases stay references, so a hostile file
 * cannot expand) and only the keys the layout depends on are looked up; everything else in a
 * real trainer config (data, generator, algorithm ...) is ignored. Scalars are typed the way
 * PyYAML / OmegaConf read them (YAML 1.1 booleans, plain "null"/"~"), and a quoted number is an
 * error: the trainer would get a string.
 *
 * Every knob a file sets is honoured, including ones the chosen strategy does not use (a
 * megatron_config pipeline size under strategy fsdp2, cpu_offload under megatron): the user
 * wrote them, so a combination the framework cannot run is reported, not dropped.
 */
#include "pp_layout_parse.h"
#include "recompute_modules.h"
#include "check.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "layout_codec.h"
#include "precision.h"
#include "shard_grads.h"
#include "check_yaml_depth.h"
#include "yaml_read.h"

#define violation check_violation
#define note check_note

#define TRY(x)                                                                                  \
    do {                                                                                        \
        cm_status st_ = (x);                                                                    \
        if (st_ != CM_OK) return st_;                                                           \
    } while (0)

static const long BIG = 1L << 20;

/* ---- the schema ---- */

/* The keys and paths of the layout's fields (layout_codec.h: the ones --emit yaml writes), in
 * the megatron_config / trainer sections, and where strategy fsdp2 keeps them. */
#define YKEY(id) layout_yaml_key(id, FRAMEWORK_MEGATRON)
#define YPATH(id) layout_yaml_path(id, FRAMEWORK_MEGATRON)
#define FSDP2_KEY(id) layout_yaml_key(id, FRAMEWORK_FSDP2)
#define FSDP2_PATH(id) layout_yaml_path(id, FRAMEWORK_FSDP2)

/* TransformerConfig.recompute_modules (recompute_modules.h): a list of Megatron's module
 * names; absent or null is its default, core attention. */
static cm_status read_recompute_modules(yr_reader *r, const yaml_node_t *src, const char *prefix,
                                        layout *l)
{
    char path[192];
    snprintf(path, sizeof path, "%s.recompute_modules", prefix);
    const yaml_node_t *n = yr_child(r, src, "recompute_modules");
    l->recompute_modules = 0;
    if (!n || yr_is_null(n)) return CM_OK;
    if (n->type != YAML_SEQUENCE_NODE)
        return yr_bad(r, n,
                      "%s must be a list of module names (core_attn, moe_act, layernorm, "
                      "mla_up_proj, mlp, moe, shared_experts): fix the value",
                      path);
    unsigned mods = 0;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        const yaml_node_t *x = yaml_document_get_node(r->doc, *it);
        unsigned one;
        if (!x || x->type != YAML_SCALAR_NODE ||
            !recompute_modules_parse(yr_scalar_text(x), &one, NULL, 0)) {
            char v[64];
            if (x)
                yr_shown(x, v, sizeof v);
            else snprintf(v, sizeof v, "nothing");
            return yr_bad(r, x ? x : n,
                          "%s holds %s, not one of Megatron's modules (core_attn, moe_act, "
                          "layernorm, mla_up_proj, mlp, moe, shared_experts): fix the value",
                          path, v);
        }
        mods |= one;
    }
    l->recompute_modules = mods;
    return CM_OK;
}

static cm_status read_megatron_recompute(yr_reader *r, const yaml_node_t *mc, check_config *cfg,
                                         bool gc, bool gc_set, check_report *rep)
{
    /* SkyRL keeps these under megatron_config.transformer_config_kwargs; accept both places. */
    const yaml_node_t *tk = NULL;
    TRY(yr_section(r, mc, "transformer_config_kwargs",
                   "trainer.policy.megatron_config.transformer_config_kwargs", &tk));
    const yaml_node_t *src = mc;
    const char *granularity = YKEY(LAYOUT_F_RECOMPUTE);
    const char *num_layers = YKEY(LAYOUT_F_RECOMPUTE_LAYERS);
    if (!yr_child(r, mc, granularity) && tk && yr_child(r, tk, granularity)) src = tk;
    const char *prefix = src == tk ? "trainer.policy.megatron_config.transformer_config_kwargs"
                                   : "trainer.policy.megatron_config";
    char path[160];
    const char *gran = NULL, *method = NULL;
    snprintf(path, sizeof path, "%s.%s", prefix, granularity);
    TRY(yr_get_str(r, src, granularity, path, &gran));
    layout *l = &cfg->layout;
    if (!gran || !strcasecmp(gran, "none")) {
        l->recompute = RECOMPUTE_NONE;
        if (gc_set && gc) {
            l->recompute = RECOMPUTE_FULL;
            note(rep, "gradient_checkpointing is true and recompute_granularity is unset: read "
                      "as full recompute of every layer");
        }
        return CM_OK;
    }
    if (!strcasecmp(gran, "selective")) {
        l->recompute = RECOMPUTE_SELECTIVE;
    } else if (!strcasecmp(gran, "full")) {
        l->recompute = RECOMPUTE_FULL;
    } else {
        return yr_bad(r, yr_child(r, src, granularity),
                      "%s must be selective, full or null, got '%.40s': fix the value", path, gran);
    }
    if (gc_set && !gc)
        note(rep, "gradient_checkpointing is false but recompute_granularity is %s: Megatron "
                  "follows recompute_granularity",
             gran);
    snprintf(path, sizeof path, "%s.recompute_method", prefix);
    TRY(yr_get_str(r, src, "recompute_method", path, &method));
    int nl = 0;
    bool nl_set = false;
    char nlpath[160];
    snprintf(nlpath, sizeof nlpath, "%s.%s", prefix, num_layers);
    TRY(yr_get_int(r, src, num_layers, nlpath, 1, BIG, &nl, &nl_set));
    if (l->recompute == RECOMPUTE_SELECTIVE) return read_recompute_modules(r, src, prefix, l);
    if (!method) {
        note(rep, "recompute_granularity is full with no recompute_method: read as uniform "
                  "(every layer recomputed)");
        l->recompute_layers = 0;
    } else if (!strcasecmp(method, "uniform")) {
        l->recompute_layers = 0; /* uniform recomputes every layer, num_layers at a time */
    } else if (!strcasecmp(method, "block")) {
        if (!nl_set)
            return yr_bad(r, yr_child(r, src, "recompute_method"),
                          "recompute_method block needs %s (layers recomputed per pipeline "
                          "stage): add it",
                          nlpath);
        l->recompute_layers = nl;
    } else {
        return yr_bad(r, yr_child(r, src, "recompute_method"),
                      "%s must be uniform or block, got '%.40s': fix the value", path, method);
    }
    return CM_OK;
}

/* TransformerConfig.pipeline_model_parallel_layout (Megatron's layout string, pp_layout_parse.h):
 * the virtual stages and the first / last stage's decoder layers; plan models the middle stages
 * as equal, so a string that gives them different counts is refused. */
static cm_status read_pp_layout(yr_reader *r, const yaml_node_t *tk, layout *l)
{
    const char *key = "pipeline_model_parallel_layout";
    const char *path = "trainer.policy.megatron_config.transformer_config_kwargs."
                       "pipeline_model_parallel_layout";
    const char *text = NULL;
    TRY(yr_get_str(r, tk, key, path, &text));
    if (!text) return CM_OK;
    if (l->pp_first_layers || l->pp_last_layers)
        return yr_bad(r, yr_child(r, tk, key),
                      "%s cannot be set with num_layers_in_first/last_pipeline_stage "
                      "(transformer_config.py): keep one of them",
                      path);
    static int ranks[4096];
    int vpp = 0;
    char why[200];
    if (pp_layout_parse(text, l->pp, ranks, 4096, &vpp, why, sizeof why) < 0)
        return yr_bad(r, yr_child(r, tk, key), "%s: %s: fix the value", path, why);
    if (l->vpp > 1 && vpp != l->vpp)
        return yr_bad(r, yr_child(r, tk, key),
                      "%s has %d virtual stages a rank, virtual_pipeline_model_parallel_size says "
                      "%d (transformer_config.py asserts they agree): fix one",
                      path, vpp, l->vpp);
    for (int s = 2; s < l->pp - 1; s++)
        if (ranks[s] != ranks[1])
            return yr_bad(r, yr_child(r, tk, key),
                          "%s gives the middle pipeline stages different layer counts (%d on "
                          "stage 1, %d on stage %d): plan models an uneven first and last stage "
                          "only",
                          path, ranks[1], ranks[s], s);
    l->vpp = vpp;
    if (l->pp >= 2) {
        l->pp_first_layers = ranks[0];
        l->pp_last_layers = ranks[l->pp - 1];
    }
    return CM_OK;
}

/* The MoE dispatcher (emit_yaml.c): SkyRL's moe_token_dispatcher_type, absent = its default
 * alltoall (a956457 config.py:464); flex runs Megatron-Core's moe_flex_dispatcher_backend,
 * absent = deepep (transformer_config.py:806 at 71e418e, SkyRL's pin). The EP all-to-all and
 * shared-expert overlaps from transformer_config_kwargs (absent = off). */
static cm_status read_moe(yr_reader *r, const yaml_node_t *mc, const yaml_node_t *tk,
                          const char *P, check_config *cfg)
{
    layout *l = &cfg->layout;
    char path[160], bpath[160];
    if (tk) {
        snprintf(path, sizeof path, "%s.transformer_config_kwargs.overlap_moe_expert_parallel_comm",
                 P);
        TRY(yr_get_bool(r, tk, "overlap_moe_expert_parallel_comm", path,
                        &cfg->training.moe_ep_overlap, NULL));
        snprintf(path, sizeof path, "%s.transformer_config_kwargs.moe_shared_expert_overlap", P);
        TRY(yr_get_bool(r, tk, "moe_shared_expert_overlap", path,
                        &cfg->training.moe_shared_overlap, NULL));
    }
    const char *type = NULL, *backend = NULL;
    snprintf(path, sizeof path, "%s.moe_token_dispatcher_type", P);
    snprintf(bpath, sizeof bpath, "%s.transformer_config_kwargs.moe_flex_dispatcher_backend", P);
    TRY(yr_get_str(r, mc, "moe_token_dispatcher_type", path, &type));
    if (tk) TRY(yr_get_str(r, tk, "moe_flex_dispatcher_backend", bpath, &backend));
    layout_moe_dispatcher d = MOE_DISPATCH_ALLTOALL;
    if (type && strcmp(type, "alltoall") && strcmp(type, "allgather") && strcmp(type, "flex"))
        return yr_bad(r, yr_child(r, mc, "moe_token_dispatcher_type"),
                      "%s must be alltoall, allgather or flex, got '%.40s': fix the value", path,
                      type);
    if (type && !strcmp(type, "allgather")) d = MOE_DISPATCH_ALLGATHER;
    if (type && !strcmp(type, "flex")) {
        d = MOE_DISPATCH_DEEPEP;
        if (backend && !strcmp(backend, "hybridep")) d = MOE_DISPATCH_HYBRIDEP;
        else if (backend && strcmp(backend, "deepep"))
            return yr_bad(r, yr_child(r, tk, "moe_flex_dispatcher_backend"),
                          "%s must be deepep or hybridep (plan prices those two), got '%.40s': "
                          "fix the value",
                          bpath, backend);
    }
    l->moe_dispatcher = d;
    return CM_OK;
}

static cm_status read_megatron(yr_reader *r, const yaml_node_t *mc, check_config *cfg,
                               bool megatron, bool gc, bool gc_set, check_report *rep)
{
    layout *l = &cfg->layout;
    const char *P = "trainer.policy.megatron_config";
    char path[160];
#define MPATH(k) (snprintf(path, sizeof path, "%s.%s", P, k), path)
    bool set;
    TRY(yr_get_int(r, mc, YKEY(LAYOUT_F_TP), YPATH(LAYOUT_F_TP), 1, BIG, &l->tp, NULL));
    TRY(yr_get_int(r, mc, YKEY(LAYOUT_F_PP), YPATH(LAYOUT_F_PP), 1, BIG, &l->pp, NULL));
    /* SkyRL keeps TransformerConfig fields under transformer_config_kwargs and
     * OptimizerConfig's under optimizer_config_kwargs: read either place */
    const yaml_node_t *tk = NULL, *ok = NULL;
    TRY(yr_section(r, mc, "transformer_config_kwargs", MPATH("transformer_config_kwargs"), &tk));
    TRY(yr_section(r, mc, "optimizer_config_kwargs", MPATH("optimizer_config_kwargs"), &ok));
    TRY(read_moe(r, mc, tk, P, cfg));
    const yaml_node_t *vsrc = !yr_child(r, mc, YKEY(LAYOUT_F_VPP)) && tk ? tk : mc;
    const yaml_node_t *ssrc = !yr_child(r, mc, YKEY(LAYOUT_F_SP)) && tk ? tk : mc;
    TRY(yr_get_int(r, vsrc, YKEY(LAYOUT_F_VPP),
                   vsrc == tk ? YPATH(LAYOUT_F_VPP) : MPATH(YKEY(LAYOUT_F_VPP)), 1, BIG, &l->vpp,
                   NULL));
    if (tk) { /* the uneven pipeline split (issue 21): TransformerConfig's fields */
        TRY(yr_get_int(r, tk, YKEY(LAYOUT_F_PP_FIRST_LAYERS), YPATH(LAYOUT_F_PP_FIRST_LAYERS), 1,
                       BIG, &l->pp_first_layers, NULL));
        TRY(yr_get_int(r, tk, YKEY(LAYOUT_F_PP_LAST_LAYERS), YPATH(LAYOUT_F_PP_LAST_LAYERS), 1, BIG,
                       &l->pp_last_layers, NULL));
        TRY(read_pp_layout(r, tk, l));
    }
    TRY(yr_get_int(r, mc, YKEY(LAYOUT_F_EP), YPATH(LAYOUT_F_EP), 1, BIG, &l->ep, NULL));
    TRY(yr_get_bool(r, ssrc, YKEY(LAYOUT_F_SP),
                    ssrc == tk ? YPATH(LAYOUT_F_SP) : MPATH(YKEY(LAYOUT_F_SP)), &l->sp, NULL));
    const yaml_node_t *tcsrc = !yr_child(r, mc, YKEY(LAYOUT_F_TP_COMM_OVERLAP)) && tk ? tk : mc;
    TRY(yr_get_bool(r, tcsrc, YKEY(LAYOUT_F_TP_COMM_OVERLAP),
                    tcsrc == tk ? YPATH(LAYOUT_F_TP_COMM_OVERLAP)
                                : MPATH(YKEY(LAYOUT_F_TP_COMM_OVERLAP)),
                    &l->tp_comm_overlap, NULL));
    if (!megatron) {
        /* Under fsdp2 only the model-parallel sizes matter: they break a rule when above 1. */
        int cp = 1;
        TRY(yr_get_int(r, mc, YKEY(LAYOUT_F_CP), YPATH(LAYOUT_F_CP), 1, BIG, &cp, NULL));
        if (cp > 1)
            note(rep, "megatron_config.context_parallel_size %d is not used by strategy fsdp2; "
                      "its sequence split is sequence_parallel_size (Ulysses)",
                 cp);
        return CM_OK;
    }
    TRY(yr_get_int(r, mc, YKEY(LAYOUT_F_CP), YPATH(LAYOUT_F_CP), 1, BIG, &l->cp, NULL));
    TRY(yr_get_int(r, mc, YKEY(LAYOUT_F_ETP), YPATH(LAYOUT_F_ETP), 1, BIG, &l->etp, NULL));
    TRY(read_megatron_recompute(r, mc, cfg, gc, gc_set, rep));

    bool distopt = false, distopt_set, mfsdp = false, torch_fsdp2 = false, flag;
    const yaml_node_t *osrc = !yr_child(r, mc, YKEY(LAYOUT_F_SHARDING)) && ok ? ok : mc;
    TRY(yr_get_bool(r, osrc, YKEY(LAYOUT_F_SHARDING),
                    osrc == ok ? YPATH(LAYOUT_F_SHARDING) : MPATH(YKEY(LAYOUT_F_SHARDING)),
                    &distopt, &distopt_set));
    /* Megatron CPU offload (issue 21; costmodel/offload.h): OptimizerConfig's
     * optimizer_cpu_offload + optimizer_offload_fraction, TransformerConfig's cpu_offloading */
    if (ok) {
        bool off = false;
        const char *frac = NULL;
        TRY(yr_get_bool(r, ok, "optimizer_cpu_offload",
                        MPATH("optimizer_config_kwargs.optimizer_cpu_offload"), &off, NULL));
        TRY(yr_get_str(r, ok, "optimizer_offload_fraction",
                       MPATH("optimizer_config_kwargs.optimizer_offload_fraction"), &frac));
        double f = frac ? strtod(frac, NULL) : 1.0;
        if (off) l->optimizer_offload_pct = f <= 0 ? 0 : f >= 1 ? 100 : (int)(f * 100 + 0.5);
    }
    if (tk)
        TRY(yr_get_bool(r, tk, "cpu_offloading", MPATH("transformer_config_kwargs.cpu_offloading"),
                        &l->activation_offload, NULL));
    if (tk && l->activation_offload) /* check.c resolves num_layers - 1 to the default, 0 */
        TRY(yr_get_int(r, tk, YKEY(LAYOUT_F_ACTIVATION_OFFLOAD_LAYERS),
                       YPATH(LAYOUT_F_ACTIVATION_OFFLOAD_LAYERS), 1, BIG,
                       &l->activation_offload_layers, NULL));
    TRY(yr_get_bool(r, mc, "use_megatron_fsdp", MPATH("use_megatron_fsdp"), &mfsdp, NULL));
    { /* Megatron's rank order (issue 21): its rules, Megatron-FSDP's among them, are the
       * layout's (layout_place.c) */
        bool mapping = false;
        TRY(yr_get_bool(r, mc, "use_tp_pp_dp_mapping", MPATH("use_tp_pp_dp_mapping"), &mapping,
                        NULL));
        l->rank_order = mapping ? RANK_ORDER_PP_DP : RANK_ORDER_DP_PP;
    }
    TRY(yr_get_bool(r, mc, "use_torch_fsdp2", MPATH("use_torch_fsdp2"), &torch_fsdp2, NULL));
    const char *strategy = NULL, *ckpt = NULL;
    TRY(yr_get_str(r, mc, "data_parallel_sharding_strategy",
                   MPATH("data_parallel_sharding_strategy"), &strategy));
    TRY(yr_get_str(r, mc, "ckpt_format", MPATH("ckpt_format"), &ckpt));
    if (mfsdp) {
        l->sharding = SHARDING_FSDP;
        if (distopt_set && !distopt)
            violation(rep, CM_ERULE, "megatron-fsdp-required-flags",
                      "Megatron-FSDP needs the distributed optimizer (--use-distributed-"
                      "optimizer): set use_distributed_optimizer: true");
        if (strategy && !strcmp(strategy, "optim_grads")) {
            /* ZeRO-2 (costmodel/shard_grads.h): the distributed optimizer's replicated
             * parameters with the gradients sharded */
            l->sharding = SHARDING_DISTOPT;
            l->shard_grads = true;
        } else if (strategy && strcmp(strategy, "optim_grads_params")) {
            violation(rep, CM_ERULE, "megatron-fsdp-required-flags",
                      "Megatron-FSDP is planned with --data-parallel-sharding-strategy "
                      "optim_grads_params or optim_grads, got '%.40s': set "
                      "data_parallel_sharding_strategy to one of them",
                      strategy);
        }
        if (ckpt && strcmp(ckpt, "fsdp_dtensor"))
            violation(rep, CM_ERULE, "megatron-fsdp-checkpoint-format",
                      "Megatron-FSDP works with no checkpoint format but fsdp_dtensor, got "
                      "'%.40s': set ckpt_format: fsdp_dtensor",
                      ckpt);
        flag = false;
        TRY(yr_get_bool(r, mc, "gradient_accumulation_fusion",
                        MPATH("gradient_accumulation_fusion"), &flag, &set));
        if (set && flag)
            violation(rep, CM_ERULE, "megatron-fsdp-required-flags",
                      "Megatron-FSDP needs gradient_accumulation_fusion off "
                      "(--no-gradient-accumulation-fusion): set it to false");
        if (torch_fsdp2)
            violation(rep, CM_ERULE, "megatron-fsdp-vs-torch-fsdp2",
                      "Megatron-FSDP and torch FSDP2 are mutually exclusive: set one of "
                      "use_megatron_fsdp and use_torch_fsdp2 to false");
    } else if (torch_fsdp2) {
        l->sharding = SHARDING_FSDP; /* ZeRO-3 through torch FSDP2 inside Megatron */
        if (l->pp > 1)
            violation(rep, CM_ERULE, "megatron-torch-fsdp2-no-pp",
                      "torch FSDP2 under Megatron does not work with pipeline parallelism "
                      "(pipeline_model_parallel_size %d): use pp 1, or use_torch_fsdp2: false "
                      "with the distributed optimizer",
                      l->pp);
        note(rep, "use_torch_fsdp2 is estimated as FSDP (ZeRO-3) sharding under Megatron");
    } else {
        l->sharding = distopt ? SHARDING_DISTOPT : SHARDING_DDP;
    }
    TRY(yr_get_int(r, mc, YKEY(LAYOUT_F_SHARD_SIZE), YPATH(LAYOUT_F_SHARD_SIZE), 1, BIG,
                   &cfg->dopt_instances, NULL));

    const yaml_node_t *ddp = NULL;
    TRY(yr_section(r, mc, "ddp_config", MPATH("ddp_config"), &ddp));
    if (ddp) {
        training_spec *t = &cfg->training;
        bool fp32 = true, fp32_set;
        TRY(yr_get_bool(r, ddp, YKEY(LAYOUT_F_OVERLAP_GRAD_REDUCE),
                        YPATH(LAYOUT_F_OVERLAP_GRAD_REDUCE), &l->overlap_grad_reduce, NULL));
        TRY(yr_get_bool(r, ddp, YKEY(LAYOUT_F_OVERLAP_PARAM_GATHER),
                        YPATH(LAYOUT_F_OVERLAP_PARAM_GATHER), &l->overlap_param_gather, NULL));
        TRY(yr_get_bool(r, ddp, "grad_reduce_in_fp32", MPATH("ddp_config.grad_reduce_in_fp32"),
                        &fp32, &fp32_set));
        if (fp32_set) t->grad_reduce_bf16 = !fp32;
        bool avg = false, avg_set;
        TRY(yr_get_bool(r, ddp, "average_in_collective", MPATH("ddp_config.average_in_collective"),
                        &avg, &avg_set));
        if (mfsdp && avg_set && avg)
            violation(rep, CM_ERULE, "megatron-fsdp-required-flags",
                      "Megatron-FSDP runs with average_in_collective off (it sets "
                      "average_in_collective=False): set ddp_config.average_in_collective: "
                      "false");
    }
#undef MPATH
    return CM_OK;
}

/*
 * SkyRL's RL batch (skyrl/train/config/config.py, SkyRL a956457): trainer.train_batch_size
 * counts prompts, generator.n_samples_per_prompt responses are sampled for each, and every
 * trainer.policy_mini_batch_size prompts make one optimizer step; the sequence is the prompt
 * (trainer.max_prompt_length) plus the generation (generator.sampling_params.
 * max_generate_length) unless trainer.algorithm.max_seq_len says it. Applied when the config is
 * an RL one (a generator: section or policy_mini_batch_size); each value taken from SkyRL's
 * defaults is named in a note. The plan's own YAML (neither key) keeps train_batch_size as the
 * sequences of one optimizer step.
 */
static cm_status read_rl_batch(yr_reader *r, const yaml_node_t *root, const yaml_node_t *tr,
                               training_spec *t, bool gbs_set, bool seq_set, check_report *rep)
{
    const yaml_node_t *gen = NULL, *sampling = NULL, *algo = NULL;
    TRY(yr_section(r, root, "generator", "generator", &gen));
    int mini = 256, samples = 5, prompt = 512, generate = 1024, algo_seq = 0;
    bool mini_set, samples_set = false, prompt_set, generate_set = false, algo_seq_set = false;
    TRY(yr_get_int(r, tr, "policy_mini_batch_size", "trainer.policy_mini_batch_size", 1, 100000000,
                   &mini, &mini_set));
    if (!gen && !mini_set) return CM_OK;
    if (gen) {
        TRY(yr_get_int(r, gen, "n_samples_per_prompt", "generator.n_samples_per_prompt", 1, 1000000,
                       &samples, &samples_set));
        TRY(yr_section(r, gen, "sampling_params", "generator.sampling_params", &sampling));
        if (sampling)
            TRY(yr_get_int(r, sampling, "max_generate_length",
                           "generator.sampling_params.max_generate_length", 1, 16 * 1024 * 1024,
                           &generate, &generate_set));
    }
    TRY(yr_get_int(r, tr, "max_prompt_length", "trainer.max_prompt_length", 1, 16 * 1024 * 1024,
                   &prompt, &prompt_set));
    TRY(yr_section(r, tr, "algorithm", "trainer.algorithm", &algo));
    if (algo)
        TRY(yr_get_int(r, algo, "max_seq_len", "trainer.algorithm.max_seq_len", 1, 16 * 1024 * 1024,
                       &algo_seq, &algo_seq_set));

    int prompts = gbs_set ? t->global_batch : 1024;
    if (!gbs_set)
        note(rep, "trainer.train_batch_size is absent: 1024 prompts assumed (SkyRL's default)");
    if (!mini_set)
        note(rep, "trainer.policy_mini_batch_size is absent: 256 prompts assumed (SkyRL's "
                  "default)");
    if (!samples_set)
        note(rep, "generator.n_samples_per_prompt is absent: 5 assumed (SkyRL's default)");
    int per_step = mini < prompts ? mini : prompts;
    long seqs = (long)per_step * samples;
    if (seqs > 100000000)
        return yr_bad(r, tr,
                      "policy_mini_batch_size x n_samples_per_prompt = %ld sequences per "
                      "optimizer step is absurd: fix the values",
                      seqs);
    t->global_batch = (int)seqs;
    note(rep, "RL batch: %d prompts x %d samples = %ld sequences per optimizer step (the global "
              "batch estimated); train_batch_size %d prompts make %d optimizer steps per training "
              "step",
         per_step, samples, seqs, prompts, (prompts + per_step - 1) / per_step);
    if (seq_set) return CM_OK;
    if (algo_seq_set) {
        t->seq_len = algo_seq;
        return CM_OK;
    }
    if (!prompt_set)
        note(rep, "trainer.max_prompt_length is absent: 512 assumed (SkyRL's default)");
    if (!generate_set)
        note(rep, "generator.sampling_params.max_generate_length is absent: 1024 assumed "
                  "(SkyRL's default)");
    t->seq_len = prompt + generate;
    note(rep, "sequence length %d = max_prompt_length %d + max_generate_length %d", t->seq_len,
         prompt, generate);
    return CM_OK;
}

/* trainer.low_precision (issue 16; emit_yaml.c writes it for a low-precision plan): the
 * format, fp8 recipe and Megatron's knobs; without the section the plan is bf16. */
static cm_status read_low_precision(yr_reader *r, const yaml_node_t *tr, layout *l)
{
    const yaml_node_t *lp = NULL;
    const char *prec = NULL, *recipe = NULL, *P = "trainer.low_precision.";
    char path[96];
#define LPATH(k) (snprintf(path, sizeof path, "%s%s", P, k), path)
    TRY(yr_section(r, tr, "low_precision", "trainer.low_precision", &lp));
    if (!lp) return CM_OK;
    TRY(yr_get_str(r, lp, "precision", LPATH("precision"), &prec));
    if (prec && !precision_parse(prec, &l->precision))
        return yr_bad(r, yr_child(r, lp, "precision"),
                      "%s must be bf16, fp8, mxfp8 or nvfp4, got "
                      "'%.40s': fix the value",
                      LPATH("precision"), prec);
    TRY(yr_get_str(r, lp, "fp8_recipe", LPATH("fp8_recipe"), &recipe));
    if (recipe && !precision_parse_fp8_recipe(recipe, &l->fp8_recipe))
        return yr_bad(r, yr_child(r, lp, "fp8_recipe"),
                      "%s must be delayed, tensorwise, blockwise or "
                      "rowwise, got '%.40s': fix the value",
                      LPATH("fp8_recipe"), recipe);
    TRY(yr_get_bool(r, lp, "fp8_param_gather", LPATH("fp8_param_gather"), &l->fp8_param_gather,
                    NULL));
    TRY(yr_get_int(r, lp, "bf16_layers_start", LPATH("bf16_layers_start"), 0, BIG,
                   &l->bf16_layers_start, NULL));
    TRY(yr_get_int(r, lp, "bf16_layers_end", LPATH("bf16_layers_end"), 0, BIG, &l->bf16_layers_end,
                   NULL));
    return yr_get_bool(r, lp, "moe_fp8_dispatch", LPATH("moe_fp8_dispatch"), &l->moe_fp8_dispatch,
                       NULL);
#undef LPATH
}

static cm_status read_trainer(yr_reader *r, const yaml_node_t *root, check_config *cfg,
                              check_report *rep)
{
    const yaml_node_t *tr, *placement, *policy, *model, *fsdp, *mc;
    const yaml_node_t *tn = yr_child(r, root, "trainer");
    if (!tn || yr_is_null(tn))
        return yr_bad(r, NULL,
                      "no trainer: section: a trainer config has trainer.strategy, "
                      "trainer.placement and trainer.policy (plan --emit yaml writes one)");
    TRY(yr_section(r, root, "trainer", "trainer", &tr));
    TRY(yr_section(r, tr, "placement", "trainer.placement", &placement));
    TRY(yr_section(r, tr, "policy", "trainer.policy", &policy));
    TRY(yr_section(r, policy, "model", "trainer.policy.model", &model));
    TRY(yr_section(r, policy, "fsdp_config", "trainer.policy.fsdp_config", &fsdp));
    TRY(yr_section(r, policy, "megatron_config", "trainer.policy.megatron_config", &mc));

    const char *strategy = NULL;
    TRY(yr_get_str(r, tr, YKEY(LAYOUT_F_FRAMEWORK), YPATH(LAYOUT_F_FRAMEWORK), &strategy));
    bool megatron;
    if (!strategy) {
        megatron = mc != NULL;
        note(rep, "no trainer.strategy: read as %s (%s)", megatron ? "megatron" : "fsdp2",
             megatron ? "a megatron_config is present" : "no megatron_config");
    } else if (!strcasecmp(strategy, "megatron")) {
        megatron = true;
    } else if (!strcasecmp(strategy, "fsdp2") || !strcasecmp(strategy, "fsdp")) {
        megatron = false;
    } else {
        return yr_bad(r, yr_child(r, tr, "strategy"),
                      "trainer.strategy must be fsdp2 or megatron, got '%.40s': fix the value",
                      strategy);
    }
    cfg->layout = layout_default(megatron ? FRAMEWORK_MEGATRON : FRAMEWORK_FSDP2);
    cfg->layout.dp = 0; /* from the GPU count, in check_layout() */
    layout *l = &cfg->layout;
    training_spec *t = &cfg->training;

    /* placement: SkyRL's policy_num_nodes / policy_num_gpus_per_node are read too */
    int nodes = 0, gpn = 0, gpus = 0;
    TRY(yr_get_int(r, placement, "num_gpus", "trainer.placement.num_gpus", 1, 10000000, &gpus,
                   NULL));
    TRY(yr_get_int(r, placement, "policy_num_nodes", "trainer.placement.policy_num_nodes", 1,
                   1000000, &nodes, NULL));
    TRY(yr_get_int(r, placement, "num_nodes", "trainer.placement.num_nodes", 1, 1000000, &nodes,
                   NULL));
    TRY(yr_get_int(r, placement, "policy_num_gpus_per_node",
                   "trainer.placement.policy_num_gpus_per_node", 1, 4096, &gpn, NULL));
    TRY(yr_get_int(r, placement, "gpus_per_node", "trainer.placement.gpus_per_node", 1, 4096, &gpn,
                   NULL));
    cfg->num_nodes = nodes;
    cfg->gpus_per_node = gpn;
    if (gpus == 0 && nodes > 0 && gpn > 0) {
        if ((long)nodes * gpn > 10000000)
            return yr_bad(r, placement,
                          "trainer.placement asks for %ld GPUs: fix num_nodes or "
                          "gpus_per_node",
                          (long)nodes * gpn);
        gpus = nodes * gpn;
    } else if (gpus > 0 && nodes > 0 && gpn > 0 &&
               !((long)(nodes - 1) * gpn < gpus && gpus <= (long)nodes * gpn)) {
        violation(rep, CM_EINVAL, "placement",
                  "trainer.placement has num_nodes %d x gpus_per_node %d for num_gpus %d: "
                  "make them agree (num_gpus fills the nodes, the last one possibly partly)",
                  nodes, gpn, gpus);
    }
    cfg->num_gpus = gpus;

    const char *path = NULL;
    TRY(yr_get_str(r, model, "path", "trainer.policy.model.path", &path));
    if (path) snprintf(cfg->model, sizeof cfg->model, "%s", path);

    bool gc = false, gc_set;
    TRY(yr_get_bool(r, tr, FSDP2_KEY(LAYOUT_F_RECOMPUTE), FSDP2_PATH(LAYOUT_F_RECOMPUTE), &gc,
                    &gc_set));

    /* fsdp_config: honoured under both strategies (offload under megatron is a violation). */
    TRY(yr_get_bool(r, fsdp, YKEY(LAYOUT_F_OFFLOAD), YPATH(LAYOUT_F_OFFLOAD), &l->offload, NULL));
    TRY(yr_get_bool(r, fsdp, YKEY(LAYOUT_F_RESHARD_AFTER_FORWARD),
                    YPATH(LAYOUT_F_RESHARD_AFTER_FORWARD), &l->reshard_after_forward, NULL));
    int fsdp_size = -1;
    TRY(yr_get_int(r, fsdp, FSDP2_KEY(LAYOUT_F_SHARD_SIZE), FSDP2_PATH(LAYOUT_F_SHARD_SIZE), -1,
                   BIG, &fsdp_size, NULL));
    if (fsdp_size == 0)
        return yr_bad(r, yr_child(r, fsdp, "fsdp_size"),
                      "trainer.policy.fsdp_config.fsdp_size must be -1 (shard over every rank) or "
                      "a positive shard group size, got 0: fix the value");
    int ulysses = 1;
    TRY(yr_get_int(r, policy, FSDP2_KEY(LAYOUT_F_CP), FSDP2_PATH(LAYOUT_F_CP), 1, BIG, &ulysses,
                   NULL));

    if (megatron) {
        if (mc) TRY(read_megatron(r, mc, cfg, true, gc, gc_set, rep));
        else if (gc_set && gc) l->recompute = RECOMPUTE_FULL;
        if (ulysses > 1)
            violation(rep, CM_ERULE, "megatron-no-ulysses",
                      "sequence_parallel_size %d is the FSDP2 path's Ulysses split; Megatron "
                      "splits the sequence with context parallel: set sequence_parallel_size: 1 "
                      "and megatron_config.context_parallel_size: %d",
                      ulysses, ulysses);
        if (fsdp_size > 0)
            note(rep, "fsdp_config.fsdp_size applies to strategy fsdp2; under megatron the shard "
                      "group is megatron_config.num_distributed_optimizer_instances");
    } else {
        if (mc) TRY(read_megatron(r, mc, cfg, false, gc, gc_set, rep));
        l->cp = ulysses;
        l->recompute = gc ? RECOMPUTE_FULL : RECOMPUTE_NONE;
        l->shard_size = fsdp_size > 0 ? fsdp_size : 0;
    }

    TRY(yr_get_int(r, tr, YKEY(LAYOUT_F_MBS), YPATH(LAYOUT_F_MBS), 1, BIG, &l->mbs, NULL));
    bool gbs_set, seq_set;
    TRY(yr_get_int(r, tr, YKEY(LAYOUT_F_GBS), YPATH(LAYOUT_F_GBS), 1, 100000000, &t->global_batch,
                   &gbs_set));
    TRY(yr_get_int(r, tr, YKEY(LAYOUT_F_SEQ), "trainer.max_seq_len", 1, 16 * 1024 * 1024,
                   &t->seq_len, &seq_set));
    if (!seq_set) { /* SkyRL's place: trainer.algorithm.max_seq_len */
        const yaml_node_t *algo = NULL;
        TRY(yr_section(r, tr, "algorithm", "trainer.algorithm", &algo));
        if (algo)
            TRY(yr_get_int(r, algo, YKEY(LAYOUT_F_SEQ), YPATH(LAYOUT_F_SEQ), 1, 16 * 1024 * 1024,
                           &t->seq_len, &seq_set));
    }
    TRY(read_rl_batch(r, root, tr, t, gbs_set, seq_set, rep));
    bool flash = true, flash_set;
    TRY(yr_get_bool(r, tr, "flash_attn", "trainer.flash_attn", &flash, &flash_set));
    if (flash_set) t->attention = flash ? ATTENTION_FLASH : ATTENTION_UNFUSED;
    /* plan's own key (emit_yaml.c): the attention implementation the plan priced, as
     * transformers names it; it decides over flash_attn */
    const char *attn_impl = NULL;
    TRY(yr_get_str(r, tr, "attn_implementation", "trainer.attn_implementation", &attn_impl));
    if (attn_impl) {
        if (!strcmp(attn_impl, "eager"))
            t->attention = ATTENTION_UNFUSED;
        else if (!strcmp(attn_impl, "sdpa") || !strncmp(attn_impl, "flash_attention_", 16))
            t->attention = ATTENTION_FLASH;
        else
            return yr_bad(r, yr_child(r, tr, "attn_implementation"),
                          "trainer.attn_implementation \"%s\" is not one plan prices: give "
                          "eager, sdpa or flash_attention_2",
                          attn_impl);
        t->attention_set = true;
    }
    return read_low_precision(r, tr, l);
}

/* Does the file state the expandable-segments allocator (memory.h), as --emit yaml writes it
 * with --expandable-segments: "expandable_segments:True" in PYTORCH_CUDA_ALLOC_CONF or
 * PYTORCH_ALLOC_CONF? */
static bool states_expandable_segments(const char *text, size_t len)
{
    static const char key[] = "ALLOC_CONF=expandable_segments:True";
    size_t k = sizeof key - 1;
    for (size_t i = 0; i + k <= len; i++)
        if (text[i] == 'A' && !strncmp(text + i, key, k)) return true;
    return false;
}

cm_status check_read_yaml(const char *text, size_t len, check_config *cfg, check_report *rep,
                          char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    memset(rep, 0, sizeof *rep);
    cfg->training = training_default();
    cm_status depth_st = check_yaml_depth(text, len, err, errlen);
    if (depth_st != CM_OK) return depth_st;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory in the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        cm_status st = cm_fail(err, errlen, CM_EPARSE,
                               "%lu:%lu: not valid YAML (%s%s%s): fix the syntax",
                               (unsigned long)parser.problem_mark.line + 1,
                               (unsigned long)parser.problem_mark.column + 1,
                               parser.problem ? parser.problem : "unknown problem",
                               parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return st;
    }
    yr_reader r = {.doc = &doc, .err = err, .errlen = errlen};
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    cm_status st;
    if (!root)
        st = cm_fail(err, errlen, CM_EPARSE,
                     "the file is empty: give a trainer config (plan --emit yaml writes one)");
    else if (root->type != YAML_MAPPING_NODE)
        st = yr_bad(&r, root, "the document must be a mapping with a trainer: section, got %s",
                    root->type == YAML_SCALAR_NODE ? "a single value" : "a list");
    else
        st = read_trainer(&r, root, cfg, rep);
    if (st == CM_OK && states_expandable_segments(text, len))
        cfg->training.expandable_segments = true;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return st;
}
