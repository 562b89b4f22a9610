/*
 * cmd_check.c — `plan check FILE.yaml`: read a trainer YAML (the schema --emit yaml writes),
 * list every framework rule it breaks with the fix, and estimate its memory and step time.
 *
 * Exit status: 0 the config is valid and fits; 1 valid but does not fit in memory; 2 a rule is
 * broken, or the input is unusable (not YAML, unknown model, no GPU count), which is one line
 * on stderr like every other bad input of plan.
 */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "check_torchtitan.h"
#include "units.h"
#include "cli.h"
#include "commands.h"
#include "input_file.h"
#include "emit.h"
#include "estimate.h"
#include "output.h"
#include "profile.h"

#define CHECK_MAX_FILE (16L * 1024 * 1024)

static void usage(void)
{
    printf("usage: plan check FILE.yaml|FILE.sh [--model M] [--system S] [--gpus N]\n"
           "  FILE.sh: a torchtitan command line (plan --emit torchtitan writes one: torchrun\n"
           "  ... -m torchtitan.train with --parallelism.*, --training.*, --compile.* and\n"
           "  activation-checkpoint:MODE), read back and checked the same way.\n"
           "  Reads a trainer config (trainer.strategy, trainer.placement, trainer.policy\n"
           "  .fsdp_config / .megatron_config, micro_train_batch_size_per_gpu, train_batch_size,\n"
           "  max_seq_len; plan --emit yaml writes one), prints every framework rule it breaks\n"
           "  with the fix, and its estimated memory and step time. FILE may be - (stdin).\n"
           "  --model M            model, when trainer.policy.model.path is not a preset, its\n"
           "                       Hugging Face repository or a local config.json\n"
           "  --system NAME|FILE   GPU system (default h100); --calibration FILE\n"
           "  --gemm-headroom bubble|on|off, --nvls on|off, --power-limit W   as plan estimate\n"
           "                       takes them (default bubble, as plan estimate: the same step\n"
           "                       for the same layout; a file the search wrote, which ranks at\n"
           "                       the sustained rate, names --gemm-headroom off where it differs)\n"
           "  --gpus N             GPU count, when trainer.placement has none (overrides it)\n"
           "  --emit yaml|megatron-args|bridge|json   print the config in that form once it "
           "passes\n"
           "exit status: 0 valid and fits, 1 valid but does not fit, 2 a rule is broken or the\n"
           "file is unusable\n");
}

/* Was this option value taken from the command line (not cli_parse's default)? getopt's
 * optarg points into argv: "--model x", "--model=x" or "-mx". */
static bool from_argv(const char *value, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (value == argv[i]) return true;
        const char *eq = strchr(argv[i], '=');
        if (eq && value == eq + 1) return true;
        if (argv[i][0] == '-' && argv[i][1] && argv[i][1] != '-' && value == argv[i] + 2)
            return true;
    }
    return false;
}

/* plan check takes the layout from the file; a layout or training flag would be silently
 * ignored, so it is an error instead. */
static bool layout_flags_given(const cli_options *o)
{
    layout d = layout_default(FRAMEWORK_MEGATRON);
    training_spec t = training_default();
    const layout *l = &o->layout;
    const training_spec *u = &o->training;
    return o->framework_given || o->dp_given || o->sharding_given || o->sp_given ||
           l->tp != d.tp || l->pp != d.pp || l->cp != d.cp || l->ep != d.ep || l->etp != d.etp ||
           l->vpp != d.vpp || l->mbs != d.mbs || l->recompute != d.recompute ||
           l->recompute_layers != d.recompute_layers || l->offload != d.offload ||
           l->pp_first_layers != d.pp_first_layers || l->pp_last_layers != d.pp_last_layers ||
           l->shard_size != d.shard_size || l->reshard_after_forward != d.reshard_after_forward ||
           u->seq_len != t.seq_len || u->global_batch != t.global_batch ||
           l->tp_comm_overlap != d.tp_comm_overlap ||
           l->overlap_grad_reduce != d.overlap_grad_reduce ||
           l->overlap_param_gather != d.overlap_param_gather || l->rank_order != d.rank_order ||
           u->attention != t.attention || u->grad_reduce_bf16 != t.grad_reduce_bf16;
}

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    if (strcmp(path, "-")) { /* a file: regular, under the cap, the cause named (input_file.h) */
        char *text;
        if (input_file_read(path, "trainer YAML", "give the path of a trainer YAML",
                            CHECK_MAX_FILE, &text, len, err, errlen) != CM_OK)
            return NULL;
        return text;
    }
    FILE *f = stdin;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
        if (n == cap) {
            if ((long)cap >= CHECK_MAX_FILE) {
                free(buf);
                buf = NULL;
                snprintf(err, errlen, "'%s' is larger than 16 MiB: that is not a trainer config",
                         path);
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                snprintf(err, errlen, "out of memory reading '%s'", path);
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (!buf && !err[0]) snprintf(err, errlen, "out of memory reading '%s'", path);
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

int cmd_check(int argc, char **argv)
{
    /* The file is the first argument (plan check FILE.yaml --gpus 64), or the last one when it
     * names a .yaml/.yml file (plan check --gpus 64 FILE.yaml). It is taken out of argv so the
     * shared option parser sees options only. */
    const char *file = NULL;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args) return cli_error("out of memory");
    int n = 0, skip = -1;
    if (argc >= 2 && (argv[1][0] != '-' || !strcmp(argv[1], "-"))) {
        skip = 1;
    } else if (argc >= 3) {
        const char *last = argv[argc - 1];
        size_t len = strlen(last);
        if (last[0] != '-' && ((len > 5 && !strcmp(last + len - 5, ".yaml")) ||
                               (len > 4 && !strcmp(last + len - 4, ".yml")) ||
                               (len > 3 && !strcmp(last + len - 3, ".sh"))))
            skip = argc - 1;
    }
    for (int i = 0; i < argc; i++)
        if (i != skip) args[n++] = argv[i];
    if (skip > 0) file = argv[skip];

    cli_options o;
    bool help;
    int rc = cli_parse(n, args, &o, &help);
    bool model_given = rc == 0 && from_argv(o.model, n, args);
    free(args);
    if (rc) return rc;
    if (help) {
        usage();
        return 0;
    }
    if (!file)
        return cli_error("no config to check: give the trainer YAML, plan check FILE.yaml "
                         "[--model M] [--system S] [--gpus N]");
    if (layout_flags_given(&o))
        return cli_error("plan check reads the layout and training shape from the YAML; layout "
                         "flags such as --tp or --seq do not apply: edit the file instead");
    /* the rest it ignored silently (--format json printed text, --trace wrote nothing) */
    static const char *const takes[] = {"model",         "gpus", "system",      "calibration",
                                        "emit",          "nvls", "power-limit", "gemm-headroom",
                                        "help",          NULL};
    const char *other = cli_given_other(&o, takes);
    if (other) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "plan check does not take --%s (it takes --model --gpus --system --calibration "
                 "--emit --nvls --power-limit --gemm-headroom): plan estimate takes it",
                 other);
        return cli_error(msg);
    }

    char err[CM_ERRLEN] = "";
    size_t len = 0;
    char *text = read_all(file, &len, err, sizeof err);
    if (!text) return cli_error(err);
    check_config cfg;
    check_report rep;
    /* issue 19: a torchtitan command line (what --emit torchtitan writes), else a trainer YAML */
    bool titan = check_is_torchtitan(text, len);
    if (!titan && memmem(text, len, "pretrain_gpt.py", 15) &&
        memmem(text, len, "--tensor-model-parallel-size", 28)) {
        /* a Megatron-LM command (--emit megatron-args): not a format plan check reads */
        free(text);
        char msg[CM_ERRLEN];
        snprintf(msg, sizeof msg,
                 "%s is a Megatron-LM command; plan check reads trainer YAML (--emit yaml) and "
                 "torchtitan commands (--emit torchtitan): check Megatron-LM flags with "
                 "Megatron-LM's own parser (bench/megatron_validate.py), or the plan's YAML",
                 file);
        return cli_error(msg);
    }
    cm_status st = titan ? check_read_torchtitan(text, len, &cfg, &rep, err, sizeof err)
                         : check_read_yaml(text, len, &cfg, &rep, err, sizeof err);
    free(text);
    if (st != CM_OK) {
        char msg[CM_ERRLEN + 256];
        snprintf(msg, sizeof msg, "%s:%s", file, err);
        /* reader messages start with LINE:COL when they have a position */
        if (!(err[0] >= '0' && err[0] <= '9')) snprintf(msg, sizeof msg, "%s: %s", file, err);
        return cli_error(msg);
    }

    model_spec m;
    system_spec sys;
    const char *dir = cli_data_dir();
    char model_name[512];
    if (model_given) {
        if (model_load(o.model, dir, &m, err, sizeof err) != CM_OK) return cli_error(err);
        snprintf(model_name, sizeof model_name, "%s", o.model);
    } else if (check_load_model(cfg.model, dir, &m, model_name, sizeof model_name, err,
                                sizeof err) != CM_OK) {
        return cli_error(err);
    }
    if (profile_load_system(o.system, dir, &sys, err, sizeof err) != CM_OK) return cli_error(err);
    if (o.calibration && profile_overlay(o.calibration, &sys, err, sizeof err) != CM_OK)
        return cli_error(err);
    /* --gemm-headroom, --nvls, --power-limit as plan estimate takes them, and without the
     * first plan estimate's default, the pipeline bubble's headroom (cli_gemm_headroom_default):
     * a config checked prints the step plan estimate prints for its layout. A file written by
     * the search, which ranks at the sustained rate, says --gemm-headroom off in its "plan check
     * FILE" line where the two differ (emit_check_headroom_flag) */
    cli_gemm_headroom_default(&o);
    sys.gemm_headroom_on = o.gemm_headroom_on;
    sys.gemm_headroom_bubble = o.gemm_headroom_bubble;
    if ((rc = cli_apply_system_knobs(o.nvls, o.power_limit_w, &sys))) return rc;

    if (titan && check_torchtitan_resolve(&m, &cfg, o.gpus, &rep) == 0)
        return cli_error("no GPU count: add torchrun --nproc-per-node N (and --nnodes), or give "
                         "--gpus N");
    int gpus = check_layout(&m, &sys, &cfg, o.gpus, &rep, err, sizeof err);
    if (gpus == 0) return cli_error(err);

    estimate e;
    bool valid = rep.nviolations == 0;
    if (valid && estimate_layout(&m, &sys, &cfg.training, &cfg.layout, &e, err, sizeof err) !=
                     CM_OK) {
        /* layout_check_all() and estimate_layout() check the same rules; this is a backstop */
        valid = false;
        rep.nviolations = 1;
        rep.violations[0].rule = "estimate";
        rep.violations[0].code = CM_ERULE;
        snprintf(rep.violations[0].message, sizeof rep.violations[0].message, "%s", err);
    }
    if (valid && o.emit != EMIT_NONE) {
        char *out = NULL;
        emit_context ctx = {.model_ref = model_name};
        if (emit_render(o.emit, &e, &m, &sys, &ctx, &out, err, sizeof err) != CM_OK)
            return cli_error(err);
        fputs(out, stdout);
        free(out);
        return e.feasible ? 0 : 1;
    }

    printf("%s: model %s (%s), system %s, %d GPUs\n", file, model_name, m.display, sys.name,
           gpus);
    if (!valid) {
        estimate shown = {.layout = cfg.layout};
        char line[256];
        output_layout_line(&shown, line, sizeof line);
        printf("layout: %s\n", line);
    }
    for (int i = 0; i < rep.nnotes; i++) printf("note: %s\n", rep.notes[i]);
    if (!valid) {
        printf("\n%d rule%s broken:\n", rep.nviolations, rep.nviolations == 1 ? "" : "s");
        for (int i = 0; i < rep.nviolations && i < CHECK_MAX_VIOLATIONS; i++)
        {
            printf("  [%s] %s\n", rep.violations[i].rule, rep.violations[i].message);
            const char *fix = titan ? check_torchtitan_fix(rep.violations[i].rule)
                                    : check_yaml_fix(rep.violations[i].rule);
            if (fix) printf("      %s %s\n", titan ? "in the command:" : "in the YAML:", fix);
        }
        if (rep.nviolations > CHECK_MAX_VIOLATIONS)
            printf("  ... and %d more\n", rep.nviolations - CHECK_MAX_VIOLATIONS);
        printf("\nNot estimated: fix the rules above, then run plan check again.\n");
        return CLI_EXIT_USAGE;
    }
    printf("\n");
    output_estimate_human(stdout, &e, &m, &sys);
    if (!e.feasible) {
        printf("\nValid, but does not fit: %s\n", e.infeasible_reason);
        return 1;
    }
    printf("\nOK: every framework rule holds and it fits (%.1f of %.1f GiB per GPU).\n",
           e.memory.total_bytes / UNITS_GIB_BYTES, e.memory.capacity_bytes / UNITS_GIB_BYTES);
    return 0;
}
