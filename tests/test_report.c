/*
 * test_report.c — end-to-end tests of `plan report`: the HTML report of a small case holds every
 * section and every chart and is self-contained; the Markdown variant writes its PNG charts
 * beside it; bad input exits 2 with one line. With the argument "render" it instead renders the
 * HTML in headless Chromium and checks it loads (exit 77, skipped, when Chromium is absent).
 *
 * PLAN_EXE is the binary; PLAN_CHARTS is 1 when the build has cairo (set by meson).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan_run.h"

/* The small case: one dense and one MoE model on 8 and 16 GPUs. */
#define SMALL "report --system h100 --models 3b,mixtral-8x7b --gpus 8,16"
/* Charts of the small case: the size-ratio chart plus memory, step time and throughput per
 * model. */
#define SMALL_CHARTS (1 + 3 * 2)

static const char *const sections[] = {
    "decision", "threshold-size", "threshold-ep", "threshold-memory", "compare",
    "performance", "features", "config", "migration", "fsdp2-to-megatron",
    "megatron-to-fsdp2", "troubleshooting", "headroom", "nccl-timeouts", "nan", NULL,
};

static plan_run_result R;
static char tmpdir[256];

static void run(const char *args) { assert_int_equal(plan_run(&R, args), 0); }

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc(n + 1);
    if (s && fread(s, 1, n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(f);
    if (s) s[n] = '\0';
    if (len) *len = n;
    return s;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static bool charts_built(void)
{
    const char *c = getenv("PLAN_CHARTS");
    return c && !strcmp(c, "1");
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/plan_report_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *write_html(const char *name)
{
    char args[1024], path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    snprintf(args, sizeof args, SMALL " -o '%s'", path);
    run(args);
    if (R.status != 0) fail_msg("plan report exited %d: %s", R.status, R.err);
    char *html = slurp(path, NULL);
    assert_non_null(html);
    return html;
}

static void test_html(void **state)
{
    (void)state;
    char *html = write_html("guide.html");
    assert_true(strstr(R.out, "plan report: wrote") != NULL);
    assert_true(!strncmp(html, "<!DOCTYPE html>", 15));
    assert_non_null(strstr(html, "</html>"));
    for (const char *const *s = sections; *s; s++) {
        char id[96];
        snprintf(id, sizeof id, "id=\"%s\"", *s);
        if (!strstr(html, id)) fail_msg("section %s missing", *s);
        if (count(html, id) != 1) fail_msg("id %s is not unique", *s);
    }
    /* every model's per-model heading and recommended config */
    assert_non_null(strstr(html, "id=\"model-3b\""));
    assert_non_null(strstr(html, "id=\"model-mixtral-8x7b\""));
    assert_non_null(strstr(html, "id=\"config-mixtral-8x7b\""));
    assert_non_null(strstr(html, "class=\"language-yaml\""));
    /* the migration notes carry the documented conversion commands */
    assert_non_null(strstr(html, "convert-torch-dist-to-fsdp-dtensor"));
    assert_non_null(strstr(html, "convert-fsdp-dtensor-to-torch-dist"));
    assert_non_null(strstr(html, "--ckpt-format fsdp_dtensor"));
    /* self-contained: nothing fetched */
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "<link"));
    assert_null(strstr(html, "src=\"http"));
    if (charts_built()) {
        assert_int_equal(count(html, "<svg"), SMALL_CHARTS);
        assert_int_equal(count(html, "</svg>"), SMALL_CHARTS);
        assert_int_equal(count(html, "<figure"), SMALL_CHARTS);
        assert_non_null(strstr(html, "id=\"chart-3b-memory\""));
        assert_non_null(strstr(html, "id=\"chart-mixtral-8x7b-throughput\""));
        /* cairo's glyph/clip ids are prefixed per chart, so they never collide */
        assert_null(strstr(html, "<?xml"));
        assert_null(strstr(html, "id=\"glyph"));
        assert_null(strstr(html, "id=\"surface"));
        assert_null(strstr(html, "href=\"#glyph"));
    } else {
        assert_int_equal(count(html, "<svg"), 0);
        assert_non_null(strstr(html, "Charts are not included"));
    }
    free(html);
}

static void test_markdown(void **state)
{
    (void)state;
    char args[1024], path[512];
    snprintf(path, sizeof path, "%s/md/guide.md", tmpdir);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/md", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(args, sizeof args, SMALL " -o '%s'", path);
    run(args);
    if (R.status != 0) fail_msg("plan report exited %d: %s", R.status, R.err);
    char *md = slurp(path, NULL);
    assert_non_null(md);
    assert_true(!strncmp(md, "# ", 2));
    for (const char *const *s = sections; *s; s++) {
        char id[96];
        snprintf(id, sizeof id, "<a id=\"%s\"></a>", *s);
        if (!strstr(md, id)) fail_msg("section %s missing", *s);
    }
    assert_non_null(strstr(md, "```yaml"));
    if (!charts_built()) {
        assert_int_equal(count(md, "!["), 0);
        free(md);
        return;
    }
    assert_int_equal(count(md, "!["), SMALL_CHARTS);
    /* every image reference is a PNG file beside the .md */
    int found = 0;
    for (const char *p = strstr(md, "]("); p; p = strstr(p + 1, "](")) {
        const char *e = strchr(p, ')');
        if (!e || e - p > 200 || strncmp(e - 4, ".png", 4)) continue;
        char name[256], file[1024];
        snprintf(name, sizeof name, "%.*s", (int)(e - p - 2), p + 2);
        snprintf(file, sizeof file, "%s/%s", dir, name);
        size_t len = 0;
        char *png = slurp(file, &len);
        if (!png) fail_msg("image %s was not written", file);
        assert_true(len > 1000);
        assert_memory_equal(png, "\x89PNG\r\n\x1a\n", 8);
        free(png);
        found++;
    }
    assert_int_equal(found, SMALL_CHARTS);
    assert_non_null(strstr(R.out, "PNG"));
    free(md);
}

static void expect_usage_error(const char *args, const char *needle)
{
    run(args);
    if (R.status != 2) fail_msg("plan %s: exit %d, expected 2 (%s)", args, R.status, R.err);
    assert_int_equal(count(R.err, "\n"), 1);
    assert_true(!strncmp(R.err, "plan: error: ", 13));
    if (needle && !strstr(R.err, needle)) fail_msg("plan %s: '%s' not in: %s", args, needle, R.err);
}

static void test_bad_input(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "report --models 3b,no-such-model --gpus 8 -o '%s/x.html'",
             tmpdir);
    expect_usage_error(args, "no-such-model");
    expect_usage_error("report --models 3b --gpus 8 -o /nonexistent-dir/guide.html",
                       "cannot write");
    expect_usage_error("report --models 3b --gpus 8", "-o");
    snprintf(args, sizeof args, "report --models 3b --gpus 8 -o '%s/x.pdf'", tmpdir);
    expect_usage_error(args, ".html or .md");
    snprintf(args, sizeof args, "report --models 3b --gpus 0 -o '%s/x.html'", tmpdir);
    expect_usage_error(args, "--gpus");
    snprintf(args, sizeof args, "report --system no-such-system -o '%s/x.html'", tmpdir);
    expect_usage_error(args, "no-such-system");
    snprintf(args, sizeof args, "report --models 3b --gpus 8 --bench /nonexistent.csv -o "
                                "'%s/x.html'",
             tmpdir);
    expect_usage_error(args, NULL);
    snprintf(args, sizeof args, "report --frobnicate -o '%s/x.html'", tmpdir);
    expect_usage_error(args, "--frobnicate");
    /* nothing was written by the failed runs */
    char path[512];
    snprintf(path, sizeof path, "%s/x.html", tmpdir);
    assert_int_equal(access(path, F_OK), -1);
}

/* `test_report render`: load the HTML in headless Chromium. */
static int render(void)
{
    const char *cands[] = {getenv("PLAN_CHROMIUM"), "/usr/bin/chromium",
                           "/usr/bin/chromium-browser", NULL};
    const char *chromium = NULL;
    for (int i = 0; i < 3; i++)
        if (cands[i] && *cands[i] && access(cands[i], X_OK) == 0) {
            chromium = cands[i];
            break;
        }
    if (!chromium) {
        printf("chromium not installed: skipped\n");
        return 77;
    }
    if (setup(NULL)) return 1;
    char path[512], profile[512], cmd[4096], args[1024];
    snprintf(path, sizeof path, "%s/guide.html", tmpdir);
    snprintf(args, sizeof args, SMALL " -o '%s'", path);
    run(args);
    if (R.status != 0) {
        printf("plan report failed (%d): %s", R.status, R.err);
        teardown(NULL);
        return 1;
    }
    snprintf(profile, sizeof profile, "%s/profile", tmpdir);
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s' --headless --no-sandbox --disable-gpu "
             "--disable-background-networking --disable-component-update --disable-sync "
             "--no-first-run --user-data-dir='%s' --enable-logging=stderr --v=0 --dump-dom "
             "'file://%s' 2>'%s/chromium.err'",
             chromium, profile, path, tmpdir);
    FILE *p = popen(cmd, "r");
    static char dom[1 << 22];
    size_t n = p ? fread(dom, 1, sizeof dom - 1, p) : 0;
    dom[n] = '\0';
    int st = p ? pclose(p) : -1;
    char errpath[600];
    snprintf(errpath, sizeof errpath, "%s/chromium.err", tmpdir);
    char *err = slurp(errpath, NULL);
    int rc = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("chromium exited %d\n%s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, err ? err : "");
        rc = 1;
    } else if (!strstr(dom, "</html>") || !strstr(dom, "id=\"troubleshooting\"")) {
        printf("chromium's DOM is incomplete (%zu bytes)\n", n);
        rc = 1;
    } else if (charts_built() && count(dom, "<svg") != SMALL_CHARTS) {
        printf("chromium's DOM has %d <svg> elements, expected %d\n", count(dom, "<svg"),
               SMALL_CHARTS);
        rc = 1;
    } else if (err && (strstr(err, "Failed to load resource") || strstr(err, "Uncaught") ||
                       strstr(err, "CONSOLE"))) {
        printf("chromium reported page errors:\n%s\n", err);
        rc = 1;
    } else {
        printf("chromium rendered %zu bytes of DOM, %d charts\n", n, count(dom, "<svg"));
    }
    free(err);
    teardown(NULL);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "render")) return render();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html),
        cmocka_unit_test(test_markdown),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
