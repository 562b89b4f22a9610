/*
 * check_torchtitan.c — `plan check` of a torchtitan command line (issue 19): the text
 * `--emit torchtitan` writes, or a hand-written `torchrun ... -m torchtitan.train ...` /
 * `./run_train.sh ...` line with --section.option overrides (check_torchtitan.h).
 *
 * Reading is in two steps because the flags are in torchtitan's units, which need the model and
 * the GPU count to become a layout: tokens per micro-batch per data-parallel rank and per step
 * (training.num_tokens_per_microbatch_per_dp_rank, num_tokens_per_train_step) become sequences
 * once the sequence (training.max_context_length) and the data-parallel size are known; the
 * stages per rank follow from parallelism.pipeline_parallel_layers_per_stage and the model's
 * layers (torchtitan/distributed/pipeline_parallel.py _get_pipeline_metadata). Flag meanings and
 * defaults: torchtitan b5bcd76 torchtitan/config/configs.py (see emit_torchtitan.c).
 */
#include "check_torchtitan.h"
#include "precision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_number.h"
#include "cuda_graphs.h"

/* ---- shell words ---- */

/* Splits text into shell words: blanks separate, a backslash-newline joins lines, '...' and
 * "..." quote (the quotes dropped; "${VAR:-x}" kept as written), '#' starts a comment at the
 * start of a word. Calls take(word) for each; returns false when a quote is not closed. */
static bool shell_words(const char *text, size_t len, void (*take)(const char *w, void *arg),
                        void *arg)
{
    char *w = malloc(len + 1);
    if (!w) return false;
    size_t n = 0;
    bool in_word = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\\' && i + 1 < len && text[i + 1] == '\n') {
            i++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            if (in_word) {
                w[n] = '\0';
                take(w, arg);
                n = 0;
                in_word = false;
            }
            if (c == '\n') take("\n", arg); /* a command ends at the end of a line */
            continue;
        }
        if (c == '#' && !in_word) {
            while (i < len && text[i] != '\n') i++;
            take("\n", arg);
            continue;
        }
        in_word = true;
        if (c == '\'' || c == '"') {
            size_t j = i + 1;
            while (j < len && text[j] != c) j++;
            if (j >= len) {
                free(w);
                return false;
            }
            memcpy(w + n, text + i + 1, j - i - 1);
            n += j - i - 1;
            i = j;
            continue;
        }
        w[n++] = c;
    }
    if (in_word) {
        w[n] = '\0';
        take(w, arg);
    }
    free(w);
    return true;
}

/* ---- the flags ---- */

typedef struct {
    check_config *cfg;
    check_report *rep;
    char pending[96];     /* a --flag waiting for its value */
    bool command;         /* inside the torchrun / torchtitan.train command */
    bool bad;
    char bad_msg[CM_ERRLEN];
    int nproc, nnodes;
    bool components;      /* reading --compile.components' list (tyro: space-separated) */
} reader;

#define note check_note
#define add_violation check_violation

/* An integer value: a number, or the default of a "${VAR:-N}" expansion. */
static bool int_value(reader *r, const char *flag, const char *v, long lo, long hi, long *out)
{
    const char *d = strstr(v, ":-");
    char num[64];
    if (!strncmp(v, "${", 2) && d) {
        snprintf(num, sizeof num, "%s", d + 2);
        char *brace = strchr(num, '}');
        if (brace) *brace = '\0';
        v = num;
    }
    if (cli_number_long(v, lo, hi, out)) return true;
    if (!r->bad) {
        r->bad = true;
        snprintf(r->bad_msg, sizeof r->bad_msg,
                 "%s needs an integer between %ld and %ld, got '%s'", flag, lo, hi, v);
    }
    return false;
}

static bool is(const char *flag, const char *name) { return !strcmp(flag, name); }

/* Flags that take no value (tyro booleans and their --x.no-y forms). */
static bool take_switch(reader *r, const char *f)
{
    layout *l = &r->cfg->layout;
    if (is(f, "--parallelism.enable_sequence_parallel")) l->sp = true;
    else if (is(f, "--parallelism.no-enable_sequence_parallel")) l->sp = false;
    else if (is(f, "--compile.enable")) l->compile = true;
    else if (is(f, "--compile.no-enable")) l->compile = false;
    else if (is(f, "--compile.enable_async_tensor_parallel")) l->async_tp = true;
    else if (is(f, "--compile.no-enable_async_tensor_parallel")) l->async_tp = false;
    else if (is(f, "--training.enable_cpu_offload")) l->offload = true;
    else if (is(f, "--training.no-enable_cpu_offload")) l->offload = false;
    else if (is(f, "--training.disable_cuda_graphs")) l->cuda_graphs = CUDA_GRAPHS_OFF;
    else if (is(f, "--training.no-disable_cuda_graphs")) l->cuda_graphs = CUDA_GRAPHS_ON;
    else return false;
    return true;
}

static void take_value(reader *r, const char *f, const char *v)
{
    check_config *c = r->cfg;
    layout *l = &c->layout;
    long x;
    const long big = 1L << 20;
    if (is(f, "--nproc-per-node") || is(f, "--nproc_per_node")) {
        if (int_value(r, f, v, 1, 4096, &x)) r->nproc = (int)x;
    } else if (is(f, "--nnodes")) {
        if (int_value(r, f, v, 1, 1000000, &x)) r->nnodes = (int)x;
    } else if (is(f, "--parallelism.data_parallel_replicate_degree")) {
        if (int_value(r, f, v, 1, 10000000, &x)) c->titan_replicate = (int)x;
    } else if (is(f, "--parallelism.data_parallel_shard_degree")) {
        if (int_value(r, f, v, -1, 10000000, &x)) c->titan_shard = x == 0 ? -2 : (int)x;
    } else if (is(f, "--parallelism.tensor_parallel_degree")) {
        if (int_value(r, f, v, 1, big, &x)) l->tp = (int)x;
    } else if (is(f, "--parallelism.pipeline_parallel_degree")) {
        if (int_value(r, f, v, 1, big, &x)) l->pp = (int)x;
    } else if (is(f, "--parallelism.context_parallel_degree")) {
        if (int_value(r, f, v, 1, big, &x)) l->cp = (int)x;
    } else if (is(f, "--parallelism.expert_parallel_degree")) {
        if (int_value(r, f, v, 1, big, &x)) l->ep = (int)x;
    } else if (is(f, "--parallelism.pipeline_parallel_layers_per_stage")) {
        if (int_value(r, f, v, 1, big, &x)) c->titan_layers_per_stage = (int)x;
    } else if (is(f, "--parallelism.pipeline_parallel_first_stage_less_layers")) {
        if (int_value(r, f, v, 0, big, &x)) c->titan_first_less = (int)x;
    } else if (is(f, "--parallelism.pipeline_parallel_last_stage_less_layers")) {
        if (int_value(r, f, v, 0, big, &x)) c->titan_last_less = (int)x;
    } else if (is(f, "--parallelism.num_pp_microbatches")) {
        if (int_value(r, f, v, 1, 100000000, &x)) c->titan_pp_microbatches = (int)x;
    } else if (is(f, "--parallelism.pipeline_parallel_schedule")) {
        if (!layout_parse_pp_schedule(v, &l->pp_schedule) && !r->bad) {
            r->bad = true;
            snprintf(r->bad_msg, sizeof r->bad_msg,
                     "--parallelism.pipeline_parallel_schedule '%s' is not one plan models: use "
                     "1F1B, Interleaved1F1B, GPipe, ZBVZeroBubble or DualPipeV",
                     v);
        }
    } else if (is(f, "--parallelism.fsdp_reshard_after_forward")) {
        if (is(v, "always")) c->titan_reshard = 1;
        else if (is(v, "never")) c->titan_reshard = 0;
        else if (is(v, "default")) c->titan_reshard = -1;
        else if (!r->bad) {
            r->bad = true;
            snprintf(r->bad_msg, sizeof r->bad_msg,
                     "--parallelism.fsdp_reshard_after_forward must be default, always or never, "
                     "got '%s'",
                     v);
        }
    } else if (is(f, "--training.num_tokens_per_microbatch_per_dp_rank")) {
        if (int_value(r, f, v, 1, 1L << 40, &x)) c->titan_tokens_mb = x;
    } else if (is(f, "--training.num_tokens_per_train_step")) {
        if (int_value(r, f, v, -1, 1L << 50, &x)) c->titan_tokens_step = x;
    } else if (is(f, "--training.max_context_length")) {
        if (int_value(r, f, v, 1, 16L * 1024 * 1024, &x)) c->training.seq_len = (int)x;
    } else if (is(f, "--optimizer.implementation")) {
        layout_optimizer_impl o;
        if (optimizer_impl_parse(v, &o) && o != OPTIMIZER_IMPL_DEFAULT) l->optimizer_impl = o;
        else note(r->rep, "--optimizer.implementation %s: not modelled, fused assumed", v);
    } else if (is(f, "--compile.components")) {
        /* one comma-separated word (torchtitan's list_str_rule, config/manager.py) or, as
         * before, words up to the next flag (take_word reads the rest) */
        l->loss_eager = true;
        for (const char *p = v; *p;) {
            size_t n = strcspn(p, ",");
            if (n == 4 && !strncmp(p, "loss", 4)) l->loss_eager = false;
            p += n + (p[n] == ',');
        }
        r->components = true;
    } else if (is(f, "--hf_assets_path")) {
        if (!c->model[0]) snprintf(c->model, sizeof c->model, "%s", v);
    }
    /* any other --section.option (checkpointing, metrics, data ...) does not change the plan */
}

/* Is f one of the switches take_switch knows? */
static bool is_switch(const char *f)
{
    static const char *const names[] = {
        "--parallelism.enable_sequence_parallel", "--parallelism.no-enable_sequence_parallel",
        "--compile.enable", "--compile.no-enable", "--compile.enable_async_tensor_parallel",
        "--compile.no-enable_async_tensor_parallel", "--training.enable_cpu_offload",
        "--training.no-enable_cpu_offload", "--training.disable_cuda_graphs",
        "--training.no-disable_cuda_graphs"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(f, names[i])) return true;
    return false;
}

static void take_word(const char *w, void *arg)
{
    reader *r = arg;
    check_config *c = r->cfg;
    if (!strcmp(w, "\n")) { /* a line ends: a pending flag had no value */
        r->pending[0] = '\0';
        r->components = false;
        return;
    }
    if (r->components && strncmp(w, "--", 2)) { /* more of --compile.components' list */
        if (!strcmp(w, "loss")) c->layout.loss_eager = false;
        if (strncmp(w, "activation", 10)) return;
    }
    r->components = false;
    if (r->pending[0]) {
        if (!strncmp(w, "--", 2) || !strncmp(w, "activation", 10)) {
            r->pending[0] = '\0'; /* the pending flag was a switch plan does not model */
        } else {
            take_value(r, r->pending, w);
            r->pending[0] = '\0';
            return;
        }
    }
    if (!strcmp(w, "torchtitan.train") || strstr(w, "run_train.sh")) {
        r->command = true;
        c->torchtitan = true;
        return;
    }
    /* activation checkpointing: trainer.py's tyro subcommand */
    if (!strncmp(w, "activation-checkpoint:", 22) || !strncmp(w, "activation_checkpoint:", 22)) {
        const char *mode = w + 22;
        layout_recompute rc;
        if (layout_parse_recompute(mode, &rc)) {
            c->layout.recompute = rc;
            c->titan_ac_given = true;
        } else if (!r->bad) {
            r->bad = true;
            snprintf(r->bad_msg, sizeof r->bad_msg,
                     "%s: plan models activation checkpointing none, selective or full", w);
        }
        return;
    }
    if (strncmp(w, "--", 2)) return;
    const char *eq = strchr(w, '=');
    if (eq) {
        char f[96];
        size_t n = (size_t)(eq - w) < sizeof f - 1 ? (size_t)(eq - w) : sizeof f - 1;
        memcpy(f, w, n);
        f[n] = '\0';
        take_value(r, f, eq + 1);
        return;
    }
    if (is_switch(w)) {
        take_switch(r, w);
        return;
    }
    snprintf(r->pending, sizeof r->pending, "%s", w);
}

bool check_is_torchtitan(const char *text, size_t len)
{
    /* a YAML trainer config never holds these; a torchtitan command line always names one */
    size_t n = len < 1 << 20 ? len : 1 << 20;
    char *s = malloc(n + 1);
    if (!s) return false;
    memcpy(s, text, n);
    s[n] = '\0';
    bool yes = strstr(s, "torchtitan.train") || strstr(s, "run_train.sh") ||
               strstr(s, "--parallelism.");
    /* a trainer YAML that mentions them (in a comment) is still a YAML */
    if (!strncmp(s, "trainer:", 8) || strstr(s, "\ntrainer:")) yes = false;
    free(s);
    return yes;
}

/* Does a line of text start with prefix? */
static bool has_line(const char *text, size_t len, const char *prefix)
{
    size_t k = strlen(prefix);
    for (size_t i = 0; i + k <= len; i++)
        if ((i == 0 || text[i - 1] == '\n') && !strncmp(text + i, prefix, k)) return true;
    return false;
}

cm_status check_read_torchtitan(const char *text, size_t len, check_config *cfg,
                                check_report *rep, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    memset(rep, 0, sizeof *rep);
    cfg->training = training_default();
    cfg->training.seq_len = 2048; /* TrainingConfig.max_context_length's default */
    cfg->layout = layout_default(FRAMEWORK_TORCHTITAN);
    cfg->layout.recompute = RECOMPUTE_SELECTIVE; /* Trainer.Config: SelectiveAC by default */
    cfg->titan_shard = -1;                       /* data_parallel_shard_degree default */
    cfg->titan_replicate = 1;
    cfg->titan_first_less = cfg->titan_last_less = 1;
    cfg->titan_reshard = -1;
    cfg->titan_tokens_mb = 16384; /* num_tokens_per_microbatch_per_dp_rank default */
    cfg->titan_tokens_step = -1;
    cfg->layout.sp = true; /* enable_sequence_parallel default */
    /* TrainingConfig.disable_cuda_graphs is False (f84224af0): a command without
     * --training.disable_cuda_graphs runs them, and their rules apply (cuda_graphs.h) */
    cfg->layout.cuda_graphs = CUDA_GRAPHS_ON;
    /* "# model: REF" (what --emit torchtitan writes) names the model */
    const char *mk = NULL;
    for (size_t i = 0; i + 9 <= len; i++)
        if ((i == 0 || text[i - 1] == '\n') && !strncmp(text + i, "# model: ", 9)) {
            mk = text + i + 9;
            break;
        }
    if (mk) {
        size_t n = 0;
        while (mk + n < text + len && mk[n] != '\n' && n < sizeof cfg->model - 1) n++;
        memcpy(cfg->model, mk, n);
        cfg->model[n] = '\0';
    }
    reader r = {.cfg = cfg, .rep = rep};
    if (!shell_words(text, len, take_word, &r))
        return cm_fail(err, errlen, CM_EPARSE, "a quote is not closed: fix the command line");
    if (r.bad) return cm_fail(err, errlen, CM_EPARSE, "%s", r.bad_msg);
    /* "# CP rotate method alltoall" (what --emit torchtitan writes for it with CP: no flag sets
     * it in today's torchtitan, emit_torchtitan.c); without CP it means nothing */
    static const char rot[] = "# CP rotate method alltoall";
    if (cfg->layout.cp > 1 && has_line(text, len, rot)) cfg->layout.cp_rotate_alltoall = true;
    /* the low-precision converter (issue 16): torchtitan sets it in the config function, not
     * by a flag, so --emit torchtitan states it as a comment (emit_torchtitan.c); a recipe its
     * converter lacks ("NOT in this torchtitan") reads as bf16, as such a run would train */
    if (has_line(text, len, "# float8 (fp8-rowwise): in the config function")) {
        cfg->layout.precision = PRECISION_FP8;
        cfg->layout.fp8_recipe = FP8_RECIPE_ROWWISE;
    } else if (has_line(text, len, "# mxfp8: in the config function")) {
        cfg->layout.precision = PRECISION_MXFP8;
    } else if (has_line(text, len, "# nvfp4: in the config function")) {
        /* torchtitan b5bcd76 ships the converter (components/quantization/nvfp4.py; its
         * config functions llama3_debugmodel_nvfp4, llama3_8b_first_85_pct_layers_nvfp4):
         * the comment names it as for MXFP8 (cfg21: read back as bf16 before) */
        cfg->layout.precision = PRECISION_NVFP4;
    }
    /* the MoE dispatcher the config function picks (emit_torchtitan.c writes the line) */
    if (has_line(text, len, "# MoE dispatcher (deepep): in the config function"))
        cfg->layout.moe_dispatcher = MOE_DISPATCH_DEEPEP;
    else if (has_line(text, len, "# MoE dispatcher (hybridep): in the config function"))
        cfg->layout.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
    if (!cfg->torchtitan)
        return cm_fail(err, errlen, CM_EPARSE,
                       "no torchtitan command (torchrun ... -m torchtitan.train, or "
                       "run_train.sh): give the line --emit torchtitan writes");
    if (r.nproc > 0) {
        cfg->gpus_per_node = r.nproc;
        cfg->num_nodes = r.nnodes > 0 ? r.nnodes : 1;
        cfg->num_gpus = cfg->gpus_per_node * cfg->num_nodes;
    }
    if (!cfg->titan_ac_given)
        note(rep, "no activation-checkpoint:MODE: torchtitan's default, selective, assumed "
                  "(trainer.py; the --config function may choose another)");
    return CM_OK;
}

int check_torchtitan_resolve(const model_spec *m, check_config *cfg, int gpus,
                             check_report *rep)
{
    layout *l = &cfg->layout;
    training_spec *t = &cfg->training;
    if (gpus <= 0) gpus = cfg->num_gpus;
    if (gpus <= 0) return 0;
    long mp = (long)l->tp * l->pp * l->cp;
    int dp = mp > 0 && gpus % mp == 0 ? (int)(gpus / mp) : 0;
    /* the schedule as torchtitan runs it: "1F1B" unless given (ParallelismConfig), none
     * without a pipeline (the setting is ignored there) */
    if (l->pp == 1) l->pp_schedule = PP_SCHEDULE_DEFAULT;
    else if (l->pp_schedule == PP_SCHEDULE_DEFAULT) l->pp_schedule = PP_SCHEDULE_1F1B;
    /* stages per rank (pipeline_parallel.py _get_pipeline_metadata) */
    layout_pp_schedule sched = layout_pp_schedule_of(l);
    bool single = sched == PP_SCHEDULE_1F1B || sched == PP_SCHEDULE_GPIPE;
    l->vpp = 1;
    if (l->pp > 1 && !single) {
        l->vpp = 2; /* the default for multi-stage schedules */
        if (cfg->titan_layers_per_stage > 0) {
            long stages = (m->layers + cfg->titan_first_less + cfg->titan_last_less +
                           cfg->titan_layers_per_stage - 1) /
                          cfg->titan_layers_per_stage;
            if (stages % l->pp)
                add_violation(rep, CM_ERULE, "torchtitan-stages",
                              "%ld virtual stages (ceil((%d layers + %d + %d) / %d per stage)) "
                              "must be divisible by the pipeline degree %d "
                              "(pipeline_parallel.py): change "
                              "--parallelism.pipeline_parallel_layers_per_stage",
                              stages, m->layers, cfg->titan_first_less, cfg->titan_last_less,
                              cfg->titan_layers_per_stage, l->pp);
            else
                l->vpp = (int)(stages / l->pp);
        }
    }
    if (l->pp > 1) {
        /* torchtitan's split (pipeline_parallel.py _generate_llm_fqn_per_model_part,
         * layout_titan_generate): (layers + less_first + less_last) over the stages, the first
         * `extra` stages one more, the first and last stage giving their "less" to the
         * embedding and the head. Read back as plan's fields (pp_split.c): 0 / 0 for the
         * default less 1 / 1, else the first and last virtual stage's layers, which plan's
         * rule (the rest as even as it goes, the extra on the earliest) spreads as
         * torchtitan does; an end stage left without a decoder layer has no field value. */
        int a = cfg->titan_first_less, b = cfg->titan_last_less;
        int stages = l->pp * l->vpp;
        l->pp_first_layers = l->pp_last_layers = 0;
        if (a != 1 || b != 1) {
            int first = layout_titan_generate(m->layers, stages, a, b, 0);
            int last = layout_titan_generate(m->layers, stages, a, b, stages - 1);
            if (first >= 1 && last >= 1) {
                l->pp_first_layers = first;
                l->pp_last_layers = last;
            } else {
                note(rep, "pipeline_parallel_first/last_stage_less_layers %d/%d leave an end stage "
                          "without a decoder layer (%d / %d), which plan's fields state only for "
                          "the default 1/1 split: it prices torchtitan's default split instead",
                     a, b, first, last);
            }
        }
    }
    /* reshard after forward: "default" is not pp_enabled (distributed/fsdp.py) */
    l->reshard_after_forward = cfg->titan_reshard >= 0 ? cfg->titan_reshard == 1 : l->pp == 1;
    /* f84224af0's commit message: "FSDP reshard_after_forward=always is unsupported" under CUDA
     * graphs (its all-gathers on FSDP's own streams: CUDA_ERROR_STREAM_CAPTURE_ISOLATION) */
    if (cfg->titan_reshard == 1 && l->cuda_graphs == CUDA_GRAPHS_ON)
        add_violation(rep, CM_ERULE, "cuda-graphs-reshard-always",
                      "--parallelism.fsdp_reshard_after_forward always fails at CUDA graph capture "
                      "(torchtitan f84224af0), which this command runs (no "
                      "--training.disable_cuda_graphs): write default (at PP 1 it reshards the "
                      "decoder layers the same) or never, or add --training.disable_cuda_graphs");
    /* batch in tokens */
    if (cfg->titan_tokens_mb % t->seq_len)
        add_violation(rep, CM_ERULE, "torchtitan-tokens-per-sequence",
                      "--training.num_tokens_per_microbatch_per_dp_rank %ld is not a whole number "
                      "of sequences of --training.max_context_length %d: make it a multiple",
                      cfg->titan_tokens_mb, t->seq_len);
    else
        l->mbs = (int)(cfg->titan_tokens_mb / t->seq_len);
    int pp_micro = l->pp > 1 ? (cfg->titan_pp_microbatches > 0 ? cfg->titan_pp_microbatches : 1)
                             : 1;
    long step = cfg->titan_tokens_step;
    if (step < 0 && dp > 0) step = cfg->titan_tokens_mb * pp_micro * dp; /* trainer.py default */
    if (step > 0) {
        if (step % t->seq_len)
            add_violation(rep, CM_ERULE, "torchtitan-tokens-per-sequence",
                          "--training.num_tokens_per_train_step %ld is not a whole number of "
                          "sequences of %d tokens",
                          step, t->seq_len);
        else if (step / t->seq_len > 100000000)
            add_violation(rep, CM_EINVAL, "torchtitan-tokens-per-sequence",
                          "--training.num_tokens_per_train_step %ld is %ld sequences, above "
                          "100000000: lower it",
                          step, step / t->seq_len);
        else
            t->global_batch = (int)(step / t->seq_len);
        if (dp > 0 && step % (cfg->titan_tokens_mb * pp_micro * dp))
            add_violation(rep, CM_ERULE, "torchtitan-accumulation",
                          "num_tokens_per_train_step %ld must be divisible by the tokens of one "
                          "gradient accumulation iteration, %ld x %d micro-batches x dp %d "
                          "(trainer.py)",
                          step, cfg->titan_tokens_mb, pp_micro, dp);
        else if (dp > 0 && l->pp > 1 && step / (cfg->titan_tokens_mb * pp_micro * dp) > 1)
            note(rep, "%ld pipeline schedules per step (gradient accumulation around "
                      "num_pp_microbatches %d): plan models one schedule of every micro-batch, "
                      "with one fill and drain",
                 step / (cfg->titan_tokens_mb * pp_micro * dp), pp_micro);
    }
    /* HSDP: dp_replicate x dp_shard (x cp in the FSDP mesh) must be the data-parallel ranks
     * (parallel_dims.py _validate) */
    if (dp > 0) {
        int shard = cfg->titan_shard == -1 ? dp / cfg->titan_replicate : cfg->titan_shard;
        if (cfg->titan_shard < -1 || shard < 1 || (long)cfg->titan_replicate * shard != dp)
            add_violation(rep, CM_EINVAL, "torchtitan-dp-degrees",
                          "data_parallel_replicate_degree %d x data_parallel_shard_degree %d must "
                          "be the %d data-parallel ranks left by tp %d, pp %d, cp %d on %d GPUs "
                          "(parallel_dims.py): change the degrees",
                          cfg->titan_replicate, shard, dp, l->tp, l->pp, l->cp, gpus);
        else if (cfg->titan_replicate > 1)
            cfg->dopt_instances = cfg->titan_replicate; /* check_layout: shard = dp*cp / this */
    }
    if (l->ep > 1) l->etp = 1; /* torchtitan keeps experts whole (config/configs.py) */
    if (l->tp == 1) l->sp = false; /* enable_sequence_parallel acts on the TP mesh only */
    return gpus;
}

const char *check_torchtitan_fix(const char *rule)
{
    static const struct {
        const char *rule, *fix;
    } fixes[] = {
        {"tp-divides-heads", "--parallelism.tensor_parallel_degree"},
        {"gpu-count", "torchrun --nproc-per-node/--nnodes, or the parallel degrees"},
        {"pp-fits-layers", "--parallelism.pipeline_parallel_degree"},
        {"pp-schedule-stages", "--parallelism.pipeline_parallel_schedule / "
                               "pipeline_parallel_layers_per_stage"},
        {"pp-schedule-no-compile", "--compile.no-enable, or another "
                                   "--parallelism.pipeline_parallel_schedule"},
        {"async-tp-needs-compile", "--compile.enable with tensor_parallel_degree > 1 and "
                                   "enable_sequence_parallel"},
        {"dualpipev-microbatches", "--parallelism.num_pp_microbatches"},
        {"cp-divides-seq", "--parallelism.context_parallel_degree or "
                           "--training.max_context_length"},
        {"ep-divides-experts", "--parallelism.expert_parallel_degree"},
        {"batch-divisible", "--training.num_tokens_per_train_step"},
        {"torchtitan-hsdp-covers-cp", "--parallelism.data_parallel_shard_degree"},
        {"torchtitan-sp-tokens", "--training.num_tokens_per_microbatch_per_dp_rank"},
        {"cuda-graphs-no-pp", "--training.disable_cuda_graphs"},
        {"cuda-graphs-blocking-ep", "--training.disable_cuda_graphs"},
    };
    for (size_t i = 0; i < sizeof fixes / sizeof *fixes; i++)
        if (!strcmp(rule, fixes[i].rule)) return fixes[i].fix;
    return NULL;
}
