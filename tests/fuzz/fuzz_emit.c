/*
 * fuzz_emit.c — libFuzzer harness for the emitters' round trips with hostile strings (issue 18,
 * "Injection"): the model's display name and Hugging Face repository (from a config.json: any
 * valid UTF-8) and the --model reference (from the command line: any bytes but NUL) come from
 * the input; the layout is one of a pool of searched plans (8b and Mixtral on 8, 64 and 512
 * GPUs, both frameworks). Every format is emitted and read back; a violated property aborts:
 *  - trainer YAML: every header line is a comment; plan check's reader reads it back as the
 *    same layout with the model path verbatim;
 *  - JSON: valid JSON with the display name and the model path verbatim, and the layout reads
 *    back (layout_from_json) as the same layout;
 *  - Megatron-LM flags (shell): header lines are comments; the torchrun command splits, by the
 *    POSIX shell's quoting rules, into exactly the argv of emit_megatron_argv, with no
 *    expansion, command substitution or control operator outside single quotes;
 *  - Bridge Python: every line is a comment, an import or a cfg statement (a newline in a string
 *    cannot start a statement).
 * An emitter may refuse a string (an error, no text); it may not crash or write it unquoted.
 * Input: byte 0 picks the plan, then display NUL repository NUL reference.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emit.h"
#include "estimate.h"
#include "layout_codec.h"
#include "search.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL_MAX 256
static model_spec models[2];
static system_spec sys;
static estimate pool[POOL_MAX];
static int pool_model[POOL_MAX];
static int npool;

static void die(const char *what, const char *text)
{
    fprintf(stderr, "fuzz_emit: %s\n%s\n", what, text ? text : "");
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir || !*dir) dir = PLAN_DATA_DIR_DEFAULT;
    char err[CM_ERRLEN];
    if (model_load("8b", dir, &models[0], err, sizeof err) != CM_OK ||
        model_load("mixtral-8x7b", dir, &models[1], err, sizeof err) != CM_OK ||
        system_load("h100", dir, &sys, err, sizeof err) != CM_OK)
        die(err, NULL);
    search_result *r = search_result_new();
    if (!r) die("out of memory", NULL);
    static const int gpus[] = {8, 64, 512};
    for (int mi = 0; mi < 2; mi++)
        for (size_t g = 0; g < sizeof gpus / sizeof *gpus; g++) {
            training_spec t = training_default();
            search_options so = {.gpus = gpus[g], .keep = 40, .frameworks = {true, true}};
            if (search_run(&models[mi], &sys, &t, &so, r, err, sizeof err) != CM_OK) die(err, NULL);
            for (int k = 0; k < r->count && npool < POOL_MAX; k++) {
                pool_model[npool] = mi;
                pool[npool++] = r->ranked[k];
            }
        }
    search_result_free(r);
    if (npool == 0) die("no plans in the pool", NULL);
    return 0;
}

/* The next NUL-terminated piece of the input (the rest when no NUL), into buf (cap bytes). */
static size_t next_piece(const uint8_t **p, const uint8_t *end, char *buf, size_t cap)
{
    size_t n = 0;
    while (*p < end && **p != 0) {
        if (n + 1 < cap) buf[n++] = (char)**p;
        (*p)++;
    }
    if (*p < end) (*p)++;
    buf[n] = '\0';
    return n;
}

/* Valid UTF-8 (what jansson hands the model loader): a string of a config.json could hold it. */
static bool utf8_ok(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    bool ok = j != NULL;
    json_decref(j);
    return ok;
}

/* Lines up to the first that starts with one of `cmds` are comments. */
static void header_is_comments(const char *text, const char *const *cmds, const char *what)
{
    for (const char *line = text; *line;) {
        for (const char *const *c = cmds; *c; c++)
            if (!strncmp(line, *c, strlen(*c))) return;
        if (*line != '#') die(what, text);
        const char *nl = strchr(line, '\n');
        if (!nl) return;
        line = nl + 1;
    }
}

/*
 * POSIX shell words of one command starting at s (up to an unquoted newline): quotes and
 * backslashes removed, backslash-newline joined. Aborts on what would make the shell do more
 * than pass words (expansion or substitution outside single quotes, a control operator, an
 * unterminated quote). Words after `after` only are checked this strictly: the emitter's own
 * "${NNODES:-2}" before it is intended.
 */
static int shell_words(const char *s, const char *after, char ***out, char **bufout,
                       const char *text)
{
    size_t cap = strlen(s) + 1;
    char *buf = malloc(cap);
    char **words = malloc(sizeof *words * (cap / 2 + 2));
    if (!buf || !words) die("out of memory", NULL);
    size_t used = 0;
    int n = 0;
    bool strict = false;
    while (*s) {
        while (*s == ' ' || *s == '\t' || (s[0] == '\\' && s[1] == '\n')) s += *s == '\\' ? 2 : 1;
        if (!*s || *s == '\n') break;
        if (*s == '#') die("a comment inside the command", text);
        char *w = buf + used;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
            char c = *s++;
            if (c == '\\') {
                if (!*s) die("a backslash at the end", text);
                if (*s == '\n') { s++; continue; }
                buf[used++] = *s++;
            } else if (c == '\'') {
                while (*s && *s != '\'') buf[used++] = *s++;
                if (!*s) die("an unterminated single quote", text);
                s++;
            } else if (c == '"') {
                while (*s && *s != '"') {
                    if (*s == '\\' && s[1] && strchr("$`\"\\\n", s[1])) {
                        if (s[1] != '\n') buf[used++] = s[1];
                        s += 2;
                        continue;
                    }
                    if (strict && (*s == '$' || *s == '`'))
                        die("an expansion inside double quotes", text);
                    buf[used++] = *s++;
                }
                if (!*s) die("an unterminated double quote", text);
                s++;
            } else if (strict && strchr("$`;&|<>()", c)) {
                die("an unquoted shell metacharacter", text);
            } else {
                buf[used++] = c;
            }
        }
        buf[used++] = '\0';
        words[n++] = w;
        if (!strict && !strcmp(w, after)) strict = true;
    }
    words[n] = NULL;
    *out = words;
    *bufout = buf;
    return n;
}

static void check_shell(const estimate *e, const model_spec *m, const emit_context *ctx)
{
    char *text = NULL, err[CM_ERRLEN];
    if (emit_megatron_args(e, m, &sys, ctx, &text, err, sizeof err) != CM_OK) return;
    static const char *const cmds[] = {"export ", "unset ", "torchrun ", NULL};
    header_is_comments(text, cmds, "a shell header line that is not a comment");
    const char *cmd = strstr(text, "\ntorchrun ");
    if (!cmd) die("no torchrun line", text);
    char **words, *buf;
    int n = shell_words(cmd + 1, "pretrain_gpt.py", &words, &buf, text);
    int first = 0;
    while (first < n && strcmp(words[first], "pretrain_gpt.py")) first++;
    if (first == n) die("no pretrain_gpt.py word", text);
    json_t *args = NULL;
    if (emit_megatron_argv(e, m, &args, NULL, NULL, err, sizeof err) != CM_OK)
        die("the argv failed where the text did not", err);
    if ((size_t)(n - first - 1) != json_array_size(args)) die("the shell splits other words", text);
    for (size_t i = 0; i < json_array_size(args); i++)
        if (strcmp(words[first + 1 + i], json_string_value(json_array_get(args, i))))
            die("a word differs from the argv", text);
    json_decref(args);
    free(buf);
    free(words);
    free(text);
}

static void check_bridge(const estimate *e, const model_spec *m, const emit_context *ctx)
{
    char *text = NULL, err[CM_ERRLEN];
    if (emit_bridge(e, m, &sys, ctx, &text, err, sizeof err) != CM_OK) return;
    static const char *const starts[] = {"#", "import ", "from ", "cfg", NULL};
    for (const char *line = text; *line;) {
        bool ok = *line == '\n';
        for (const char *const *st = starts; !ok && *st; st++)
            ok = !strncmp(line, *st, strlen(*st));
        if (!ok) die("a Python line that is no comment, import or cfg statement", text);
        const char *nl = strchr(line, '\n');
        if (!nl) break;
        line = nl + 1;
    }
    free(text);
}

static void same_layout(const layout *a, const layout *b, const char *what, const char *text)
{
    if (a->framework != b->framework || a->tp != b->tp || a->pp != b->pp || a->dp != b->dp ||
        a->cp != b->cp || a->ep != b->ep || a->vpp != b->vpp || a->mbs != b->mbs ||
        a->sp != b->sp || a->sharding != b->sharding || a->recompute != b->recompute ||
        a->offload != b->offload || a->shard_size != b->shard_size)
        die(what, text);
}

static void check_yaml(const estimate *e, const model_spec *m, const emit_context *ctx)
{
    char *text = NULL, err[CM_ERRLEN];
    if (emit_yaml(e, m, &sys, ctx, &text, err, sizeof err) != CM_OK) return;
    static const char *const cmds[] = {"trainer:", NULL};
    header_is_comments(text, cmds, "a YAML header line that is not a comment");
    check_config cfg;
    check_report rep;
    if (check_read_yaml(text, strlen(text), &cfg, &rep, err, sizeof err) != CM_OK)
        die(err, text);
    const char *want = m->hf_repo[0] ? m->hf_repo : ctx->model_ref;
    if (strcmp(cfg.model, want) && strlen(want) < sizeof cfg.model)
        die("the YAML's model path changed", text);
    check_layout(m, &sys, &cfg, e->gpus, &rep, err, sizeof err);
    same_layout(&e->layout, &cfg.layout, "the YAML reads back as another layout", text);
    free(text);
}

static void check_json(const estimate *e, const model_spec *m, const emit_context *ctx)
{
    char *text = NULL, err[CM_ERRLEN];
    if (emit_render(EMIT_JSON, e, m, &sys, ctx, &text, err, sizeof err) != CM_OK) return;
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j) die("the emitted JSON does not parse", text);
    const char *display = json_string_value(json_object_get(json_object_get(j, "model"),
                                                            "display"));
    if (!display || strcmp(display, m->display)) die("the JSON's display name changed", text);
    const char *path = json_string_value(json_object_get(json_object_get(j, "emit"),
                                                         "model_path"));
    if (path && utf8_ok(ctx->model_ref, strlen(ctx->model_ref)) && !m->hf_repo[0] &&
        strcmp(path, ctx->model_ref))
        die("the JSON's model path changed", text);
    layout back;
    training_spec t = e->training;
    if (layout_from_json(json_object_get(j, "layout"), "layout", &back, &t, err, sizeof err) !=
        CM_OK)
        die("the JSON's layout does not read back", err);
    same_layout(&e->layout, &back, "the JSON reads back as another layout", text);
    json_decref(j);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *p = data + 1, *end = data + size;
    int pick = data[0] % npool;
    model_spec m = models[pool_model[pick]];
    char display[sizeof m.display], repo[sizeof m.hf_repo], ref[1024];
    size_t nd = next_piece(&p, end, display, sizeof display);
    size_t nr = next_piece(&p, end, repo, sizeof repo);
    next_piece(&p, end, ref, sizeof ref);
    /* a config.json's strings are valid UTF-8 (jansson); an empty display keeps the preset's */
    if (!utf8_ok(display, nd) || !utf8_ok(repo, nr)) return 0;
    if (nd) memcpy(m.display, display, nd + 1);
    memcpy(m.hf_repo, repo, nr + 1);
    emit_context ctx = {.model_ref = ref[0] ? ref : m.name};
    const estimate *e = &pool[pick];
    check_yaml(e, &m, &ctx);
    check_json(e, &m, &ctx);
    if (e->layout.framework == FRAMEWORK_MEGATRON) {
        check_shell(e, &m, &ctx);
        check_bridge(e, &m, &ctx);
    }
    return 0;
}
