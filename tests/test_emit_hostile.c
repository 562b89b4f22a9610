/*
 * test_emit_hostile.c — hostile strings through every emitter, part of the test_emit_megatron
 * program (test_emit_megatron.h): _plan.display and _plan.hf_repo with a newline, $(...),
 * backquotes, quotes and backslashes. The shell text, run by bash with torchrun stubbed, passes
 * exactly the JSON's argv and runs nothing; the Bridge Python parses and names the repository
 * verbatim; the YAML reads back the same path; the JSON is valid; every comment stays a
 * comment; torchtitan's command runs with torchrun stubbed and reads back (robust22). Apart from the Megatron flags' own tests because it covers every format.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "check_torchtitan.h"
#include "test_emit_megatron.h"

static const char hostile[] = "evil\n$(touch /tmp/plan_pwned_$$)`touch /tmp/plan_pwned_bq`"
                              "'q\"d\\b;rm -rf x #";

/* A copy of the 8b preset whose display and repository name are hostile. */
static model_spec hostile_model(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/8b.json", data_dir());
    json_error_t je;
    json_t *cfg = json_load_file(path, 0, &je);
    if (!cfg) fail_msg("%s: %s", path, je.text);
    json_t *plan = json_object_get(cfg, "_plan");
    assert_non_null(plan);
    json_object_set_new(plan, "display", json_string(hostile));
    json_object_set_new(plan, "hf_repo", json_string(hostile));
    snprintf(path, sizeof path, "%s/config.json", dir);
    assert_int_equal(json_dump_file(cfg, path, JSON_INDENT(2)), 0);
    json_decref(cfg);
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load_json(path, "hostile", &m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_non_null(strstr(m.hf_repo, "$(touch"));
    return m;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Every line that is not a command of ours is a comment. */
static void comments_stay_comments(const char *text, const char *const *allowed_starts)
{
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        bool ok = line[0] == '#';
        for (const char *const *a = allowed_starts; !ok && *a; a++)
            ok = !strncmp(line, *a, strlen(*a));
        if (!ok) fail_msg("unexpected line: %.*s", (int)len, line);
        line = end ? end + 1 : line + len;
    }
}

void test_hostile_strings(void **state)
{
    (void)state;
    char dir[] = "/tmp/plan_hostile_XXXXXX";
    assert_non_null(mkdtemp(dir));
    model_spec m = hostile_model(dir);
    system_spec sys = load_system("h100");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2; l.pp = 3; l.dp = 4; l.sp = true; /* 32 layers on 3 stages: a layout string */
    t.global_batch = 96;
    estimate e;
    char err[CM_ERRLEN], path[600], cmd[2048];
    if (estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    emit_context ctx = {.model_ref = hostile};
    unlink("/tmp/plan_pwned_bq");

    /* shell: run it with torchrun stubbed; it must pass exactly the JSON's argv */
    char *text = NULL;
    assert_int_equal(emit_megatron_args(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    /* the header is comments up to the first command (a quoted flag value may span lines:
     * the run below shows the shell reads it as one word) */
    const char *line = text;
    while (*line == '#') line = strchr(line, '\n') + 1;
    assert_true(!strncmp(line, "export ", 7) || !strncmp(line, "unset ", 6) ||
                !strncmp(line, "torchrun ", 9));
    snprintf(path, sizeof path, "%s/run.sh", dir);
    write_text(path, text);
    free(text);
    json_t *args = NULL;
    assert_int_equal(emit_megatron_argv(&e, &m, &args, NULL, NULL, err, sizeof err), CM_OK);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && bash -c 'torchrun() { printf \"%%s\\n\" \"$@\" > argv.txt; }; "
             ". ./run.sh' 2> bash.err",
             dir);
    if (system("command -v bash > /dev/null 2>&1") == 0) {
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof path, "%s/argv.txt", dir);
        char *got = read_text(path);
        assert_non_null(got);
        /* torchrun's own 10 words, then pretrain_gpt.py, then the flags */
        char *p = strstr(got, "pretrain_gpt.py\n");
        assert_non_null(p);
        p += strlen("pretrain_gpt.py\n");
        /* the hostile repository is one argv token holding newlines: compare token by token
         * from the JSON, each followed by the newline printf wrote */
        for (size_t i = 0; i < json_array_size(args); i++) {
            const char *want = json_string_value(json_array_get(args, i));
            size_t n = strlen(want);
            if (strncmp(p, want, n) || p[n] != '\n')
                fail_msg("argv token %zu: wanted '%s', the shell passed '%.60s'", i, want, p);
            p += n + 1;
        }
        assert_string_equal(p, "");
        assert_int_equal(access("/tmp/plan_pwned_bq", F_OK), -1);
    }
    assert_string_equal(arg_value(args, "--tokenizer-model"), hostile);
    json_decref(args);

    /* Python: parses, and the repository reaches AutoBridge verbatim */
    assert_int_equal(emit_bridge(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    static const char *const py_starts[] = {"import ", "from ", "cfg", "", NULL};
    comments_stay_comments(text, py_starts);
    snprintf(path, sizeof path, "%s/bridge.py", dir);
    write_text(path, text);
    free(text);
    if (system("command -v python3 > /dev/null 2>&1") == 0) {
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import ast,json,sys\n"
                 "t=ast.parse(open(sys.argv[1]).read())\n"
                 "s=[n.value for n in ast.walk(t) if isinstance(n,ast.Constant) and "
                 "isinstance(n.value,str)]\n"
                 "print(json.dumps(s))' '%s/bridge.py' > '%s/strings.json'",
                 dir, dir);
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof path, "%s/strings.json", dir);
        json_error_t je;
        json_t *strings = json_load_file(path, 0, &je);
        assert_non_null(strings);
        bool found = false;
        for (size_t i = 0; i < json_array_size(strings); i++)
            found |= !strcmp(json_string_value(json_array_get(strings, i)), hostile);
        assert_true(found);
        json_decref(strings);
    }

    /* YAML: the path reads back verbatim, the header stays comments */
    assert_int_equal(emit_yaml(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    for (const char *line = text; line && *line == '#'; line = strchr(line, '\n') + 1)
        assert_non_null(strchr(line, '\n'));
    check_config cfg;
    check_report rep;
    if (check_read_yaml(text, strlen(text), &cfg, &rep, err, sizeof err) != CM_OK)
        fail_msg("the YAML does not read back: %s\n%s", err, text);
    assert_string_equal(cfg.model, hostile);
    free(text);

    /* JSON: valid, and the strings verbatim */
    assert_int_equal(emit_render(EMIT_JSON, &e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    if (!j) fail_msg("not JSON: %s", je.text);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "model"), "display")),
                        hostile);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "emit"),
                                                          "model_path")),
                        hostile);
    json_decref(j);
    free(text);

    /* torchtitan's command (robust22: the one emitter the test did not cover): the names stay
     * in comments, bash runs it with torchrun stubbed and nothing else, plan check reads it */
    l = layout_default(FRAMEWORK_TORCHTITAN);
    l.tp = 2; l.pp = 2; l.dp = 2; l.sp = true; l.sharding = SHARDING_FSDP;
    if (estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    assert_int_equal(emit_render(EMIT_TORCHTITAN, &e, &m, &sys, &ctx, &text, err, sizeof err),
                     CM_OK);
    line = text;
    while (*line == '#') line = strchr(line, '\n') + 1;
    assert_true(!strncmp(line, "export ", 7) || !strncmp(line, "torchrun ", 9));
    assert_null(strstr(line, "touch")); /* no name past the comments */
    snprintf(path, sizeof path, "%s/titan.sh", dir);
    write_text(path, text);
    if (check_read_torchtitan(text, strlen(text), &cfg, &rep, err, sizeof err) != CM_OK)
        fail_msg("the torchtitan command does not read back: %s\n%s", err, text);
    free(text);
    if (system("command -v bash > /dev/null 2>&1") == 0) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && bash -c 'torchrun() { printf \"%%s\\n\" \"$@\" > titan_argv.txt; }; "
                 ". ./titan.sh' 2> bash.err",
                 dir);
        assert_int_equal(system(cmd), 0);
        snprintf(path, sizeof path, "%s/titan_argv.txt", dir);
        char *got = read_text(path);
        assert_non_null(got);
        assert_non_null(strstr(got, "torchtitan.train\n"));
        assert_int_equal(access("/tmp/plan_pwned_bq", F_OK), -1);
    }

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}
