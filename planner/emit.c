/*
 * emit.c — a layout as the configs users paste into their trainer (see emit.h): the format
 * names, what every emitter shares (emit_internal.h: the model path, node counts, quoting for
 * each target language, the opening comment, the memstream), the JSON document that carries
 * every format, and emit_render's dispatch. Each format has its own file: emit_megatron.c
 * (Megatron-LM flags), emit_bridge.c (Megatron Bridge), emit_yaml.c (the trainer YAML) and
 * emit_torchtitan.c.
 *
 * Each format is a list of settings built from one layout, then rendered: the Megatron flags
 * are (flag, value) pairs so the text and the JSON array come from the same list; the YAML goes
 * through libyaml's emitter so quoting and nesting are always valid YAML.
 *
 * Flag and key names: Megatron-LM megatron/training/arguments.py; the Megatron-FSDP required and
 * recommended flags are DESIGN.md's "Framework rules"; Megatron Bridge's config tree
 * (cfg.model = the model provider / TransformerConfig, cfg.ddp = DistributedDataParallelConfig,
 * cfg.dist, cfg.optimizer, cfg.train, cfg.checkpoint); the trainer YAML follows the key names
 * SkyRL- and verl-style trainers use (trainer.strategy, trainer.policy.fsdp_config,
 * trainer.policy.megatron_config, micro_train_batch_size_per_gpu, train_batch_size).
 */
#include "emit.h"
#include "emit_internal.h"
#include "units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_headroom.h"
#include "output.h"


int emit_parse_format(const char *s, emit_format *out)
{
    static const struct {
        const char *name;
        emit_format f;
    } names[] = {{"yaml", EMIT_YAML},     {"megatron-args", EMIT_MEGATRON_ARGS},
                 {"megatron", EMIT_MEGATRON_ARGS}, {"bridge", EMIT_BRIDGE},
                 {"json", EMIT_JSON}, {"torchtitan", EMIT_TORCHTITAN}};
    for (size_t i = 0; s && i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].f;
            return 1;
        }
    return 0;
}

const char *emit_format_name(emit_format f)
{
    switch (f) {
    case EMIT_YAML: return "yaml";
    case EMIT_MEGATRON_ARGS: return "megatron-args";
    case EMIT_BRIDGE: return "bridge";
    case EMIT_JSON: return "json";
    case EMIT_TORCHTITAN: return "torchtitan";
    default: return "none";
    }
}

/* ---- shared pieces ---- */

/* The model path a trainer loads: the preset's Hugging Face repository, else what was typed. */
const char *emit_model_path(const model_spec *m, const emit_context *ctx)
{
    if (m->hf_repo[0]) return m->hf_repo;
    if (ctx && ctx->model_ref && *ctx->model_ref) return ctx->model_ref;
    return m->name;
}

int emit_nodes_of(int gpus, const system_spec *sys)
{
    int gpn = sys->gpus_per_node > 0 ? sys->gpus_per_node : 1;
    return (gpus + gpn - 1) / gpn;
}

int emit_even_nodes(int gpus, const system_spec *sys)
{
    int nodes = emit_nodes_of(gpus, sys);
    if (nodes < 1) nodes = 1;
    while (gpus % nodes) nodes++;
    return nodes;
}

/* ---- quoting for each target language (strings from config.json reach every output) ---- */

/* Text inside a '#' comment line: control characters (a newline would end the comment and start
 * a command) are written as '?', and so is what YAML forbids or reads as a line break even in a
 * comment (YAML 1.1 section 5.1: the C1 controls U+0080-U+009F, NEL U+0085 among them, and
 * U+FFFE/U+FFFF are not printable; LS U+2028 and PS U+2029 are line breaks; libyaml refuses or
 * breaks there: found by tests/fuzz/fuzz_emit). */
void emit_comment_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        const unsigned char *u = (const unsigned char *)s;
        if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f) { /* C1 controls, NEL */
            fputc('?', f);
            s++;
        } else if ((u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9)) ||
                   (u[0] == 0xef && u[1] == 0xbf && (u[2] == 0xbe || u[2] == 0xbf))) {
            fputc('?', f); /* LS, PS; U+FFFE, U+FFFF */
            s += 2;
        } else {
            fputc(*u < 0x20 || *u == 0x7f ? '?' : *s, f);
        }
    }
}

/* One shell word: bare when every byte is unambiguous, else in single quotes (inside which
 * nothing is special; a ' is written as '\''). */
static void shell_quote(FILE *f, const char *s)
{
    bool bare = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=./:,@%",
                    *p))
            bare = false;
    if (bare) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

void emit_shell_quote(FILE *f, const char *s) { shell_quote(f, s); }

/* A Python string literal: a JSON string is one (its escapes \" \\ \n \uXXXX are Python's). */
void emit_python_quote(FILE *f, const char *s)
{
    json_t *j = json_string(s);
    char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    if (q) {
        fputs(q, f);
    } else { /* not UTF-8: keep the ASCII, '?' for the rest */
        fputc('"', f);
        for (; *s; s++) {
            unsigned char c = (unsigned char)*s;
            if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
            else fputc(c >= 0x20 && c < 0x7f ? c : '?', f);
        }
        fputc('"', f);
    }
    free(q);
    json_decref(j);
}

const char *emit_check_headroom_flag(const estimate *e, const system_spec *sys)
{
    /* plan check defaults to the bubble's headroom, as plan estimate does: a prediction priced
     * that way needs no flag; one priced with every idle term needs "on"; one at the sustained
     * rate (the search's, or --gemm-headroom off) needs "off" where the bubble would have
     * counted (a pipeline on a system with the power fit; without a pipeline the two agree) */
    if (sys->gemm_headroom_on) return e->time.gemm_headroom_rate > 1 ? " --gemm-headroom on" : "";
    if (sys->gemm_headroom_bubble) return "";
    return gemm_headroom_fitted(sys) && e->layout.pp > 1 ? " --gemm-headroom off" : "";
}

/* The comment block every text format starts with: what was planned and what it predicts. */
void emit_header(FILE *f, const char *c, const estimate *e, const model_spec *m,
                   const system_spec *sys)
{
    char line[256];
    output_layout_line(e, line, sizeof line);
    fprintf(f, "%s plan %s: ", c, PLAN_VERSION);
    emit_comment_text(f, m->display);
    fprintf(f, " on %d x ", e->gpus);
    emit_comment_text(f, sys->gpu_name);
    fprintf(f, " (%d per node), seq %d, global batch %d sequences\n", sys->gpus_per_node,
            e->training.seq_len, e->training.global_batch);
    fprintf(f, "%s ", c);
    emit_comment_text(f, line);
    fputc('\n', f);
    if (estimate_time_priced(e))
        fprintf(f, "%s predicted: %.2f s/step, %.0f tokens/s, MFU %.1f%%, %.1f of %.1f GiB per "
                   "GPU (pipeline stage %d)\n",
                c, e->time.step_s, e->tokens_per_s, 100 * e->mfu,
                e->memory.total_bytes / UNITS_GIB_BYTES,
                e->memory.capacity_bytes / UNITS_GIB_BYTES, e->memory.stage);
    else /* no step time (a group crosses nodes with no network): the WARNING below says why */
        fprintf(f, "%s predicted: infeasible, no step time; %.1f of %.1f GiB per GPU (pipeline "
                   "stage %d)\n",
                c, e->memory.total_bytes / UNITS_GIB_BYTES,
                e->memory.capacity_bytes / UNITS_GIB_BYTES, e->memory.stage);
    if (!e->feasible) {
        fprintf(f, "%s WARNING: does not fit: ", c);
        emit_comment_text(f, e->infeasible_reason);
        fputc('\n', f);
    }
}

/* Closes the memstream (which is when open_memstream publishes its buffer) and hands it out. */
cm_status emit_finish(FILE *f, char **bufp, char **out, char *err, size_t errlen)
{
    int rc = fclose(f);
    char *buf = *bufp;
    if (rc != 0 || !buf) {
        free(buf);
        return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the config");
    }
    *out = buf;
    return CM_OK;
}

/* ---- JSON ---- */

/* json_string(), or for text that is not UTF-8 (a name cut inside a character) the same with
 * every non-ASCII byte as '?': a key is never dropped. */
json_t *emit_json_string_lossy(const char *s)
{
    json_t *j = json_string(s);
    if (j) return j;
    char *copy = strdup(s);
    if (!copy) return json_null();
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80) *p = '?';
    j = json_string(copy);
    free(copy);
    return j ? j : json_null();
}

json_t *emit_json(const estimate *e, const model_spec *m, const system_spec *sys,
                  const emit_context *ctx)
{
    json_t *o = output_estimate_json(e, m, sys);
    json_object_set_new(o, "fits", json_boolean(e->feasible));
    json_t *em = json_object();
    json_object_set_new(em, "format_version", json_integer(1));
    json_object_set_new(em, "model_path", emit_json_string_lossy(emit_model_path(m, ctx)));
    char *text = NULL;
    char err[CM_ERRLEN];
    json_object_set_new(em, "trainer_yaml",
                        emit_yaml(e, m, sys, ctx, &text, err, sizeof err) == CM_OK
                            ? emit_json_string_lossy(text)
                            : json_null());
    free(text);
    text = NULL;
    /* issue 19: the torchtitan command of a torchtitan plan (null for the others) */
    json_object_set_new(em, "torchtitan",
                        emit_torchtitan(e, m, sys, ctx, &text, err, sizeof err) == CM_OK
                            ? emit_json_string_lossy(text)
                            : json_null());
    free(text);
    text = NULL;
    json_t *args = NULL, *placeholders = NULL, *unsupported = NULL;
    if (e->layout.framework == FRAMEWORK_MEGATRON &&
        emit_megatron_argv(e, m, &args, &placeholders, &unsupported, err, sizeof err) == CM_OK) {
        json_object_set_new(em, "megatron_args", args);
        json_object_set_new(em, "megatron_placeholder_flags", placeholders);
        json_object_set_new(em, "megatron_unsupported", unsupported);
        json_t *env = json_object(), *set = json_object();
        int mc = emit_megatron_max_connections(&e->layout, sys);
        if (mc > 0) json_object_set_new(set, "CUDA_DEVICE_MAX_CONNECTIONS", json_string("1"));
        if (e->training.expandable_segments)
            json_object_set_new(set, "PYTORCH_CUDA_ALLOC_CONF",
                                json_string("expandable_segments:True"));
        json_object_set_new(env, "set", set);
        json_object_set_new(env, "unset", mc < 0 ? json_pack("[s]", "CUDA_DEVICE_MAX_CONNECTIONS")
                                                 : json_array());
        json_object_set_new(em, "environment", env);
        json_object_set_new(em, "bridge",
                            emit_bridge(e, m, sys, ctx, &text, err, sizeof err) == CM_OK
                                ? emit_json_string_lossy(text)
                                : json_null());
        free(text);
    } else {
        json_object_set_new(em, "megatron_args", json_null());
        json_object_set_new(em, "environment", json_null());
        json_object_set_new(em, "bridge", json_null());
    }
    json_object_set_new(o, "emit", em);
    return o;
}

cm_status emit_render(emit_format f, const estimate *e, const model_spec *m,
                      const system_spec *sys, const emit_context *ctx, char **out, char *err,
                      size_t errlen)
{
    /* a pricing knob (layout.h): the full-iteration graph comes with recipe settings plan
     * does not plan (fixed expert capacity, paged stashing) */
    if (e->layout.cuda_graph_full_iteration && f != EMIT_JSON)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan does not write --cuda-graph-full-iteration into a config (Megatron "
                       "needs the recipe's fixed expert capacity with it): set cuda_graph_impl "
                       "full_iteration in your recipe, or plan without it");
    if (e->layout.moe_dispatcher_sms && f != EMIT_JSON)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan does not write --moe-dispatcher-sms into a config: set "
                       "moe_deepep_num_sms / moe_hybridep_num_sms in your recipe, or plan "
                       "without it");
    if (e->layout.rms_norm_unfused && f != EMIT_JSON)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan does not write --rms-norm-unfused into a config (torchtitan 2024's "
                       "own RMSNorm; today's torchtitan has only nn.RMSNorm): plan without it");
    if (e->layout.moe_expert_padding && f != EMIT_JSON)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan does not write --moe-expert-padding into a config (the padding of "
                       "Megatron-Core before 2edffadb behind DeepEP): plan without it");
    if (e->layout.cuda_graph_attn && f != EMIT_JSON)
        return cm_fail(err, errlen, CM_EINVAL,
                       "plan does not write --cuda-graph-attn into a config: set cuda_graph_impl "
                       "transformer_engine with scope attn in your recipe, or plan without it");
    switch (f) {
    case EMIT_YAML: return emit_yaml(e, m, sys, ctx, out, err, errlen);
    case EMIT_MEGATRON_ARGS: return emit_megatron_args(e, m, sys, ctx, out, err, errlen);
    case EMIT_BRIDGE: return emit_bridge(e, m, sys, ctx, out, err, errlen);
    case EMIT_TORCHTITAN: return emit_torchtitan(e, m, sys, ctx, out, err, errlen);
    case EMIT_JSON: {
        json_t *j = emit_json(e, m, sys, ctx);
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
        json_decref(j);
        if (!s) return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the JSON");
        size_t n = strlen(s);
        char *r = malloc(n + 2);
        if (!r) {
            free(s);
            return cm_fail(err, errlen, CM_ENOMEM, "out of memory while writing the JSON");
        }
        memcpy(r, s, n);
        r[n] = '\n';
        r[n + 1] = '\0';
        free(s);
        *out = r;
        return CM_OK;
    }
    default:
        return cm_fail(err, errlen, CM_EINVAL,
                       "--emit must be yaml, megatron-args, bridge or json");
    }
}
