/*
 * test_report.c — end-to-end tests of `plan report`: the HTML report of a small case holds every
 * section and every chart and is self-contained; the Markdown variant writes its PNG charts
 * beside it; bad input exits 2 with one line; the answer comes first and names the plan
 * `plan --model M --gpus N --precision bf16` recommends, with its per-GPU throughput. With the
 * argument "render"
 * it instead renders the HTML in headless Chromium, as a reader would see it: the page loads
 * with nothing fetched, the answer box and the whole answer table (a row per model) are on the
 * first screen, and every chart shows (exit 77, skipped, when Chromium is absent).
 *
 * PLAN_EXE is the binary; PLAN_CHARTS is 1 when the build has cairo (set by meson).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan_run.h"

/* The small case: one dense and one MoE model on 8 and 16 GPUs. */
#define SMALL "report --system h100 --models 3b,mixtral-8x7b --gpus 8,16"
/* Charts of the small case: the size-ratio chart plus, per model, memory, step-time breakdown,
 * tokens/s per GPU and MFU (issue 23 added the MFU chart: 1 + 3 * 2 before). */
#define SMALL_CHARTS (1 + 4 * 2)
/* The GPU count the small case's answer boxes lead with: the largest of --gpus. */
#define SMALL_TOP_GPUS 16

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

/* The text of the first match of "<tag ...>" .. "</tag>" from p, or NULL. */
static char *element(const char *p, const char *open, const char *close)
{
    const char *a = strstr(p, open);
    if (!a) return NULL;
    const char *b = strstr(a, close);
    if (!b) return NULL;
    size_t n = b - a + strlen(close);
    char *s = malloc(n + 1);
    memcpy(s, a, n);
    s[n] = '\0';
    return s;
}

/* n with thousands separators, as the report writes counts: 12497 -> "12,497". */
static void with_commas(long n, char *buf, size_t len)
{
    char d[32];
    snprintf(d, sizeof d, "%ld", n);
    size_t l = strlen(d), o = 0;
    for (size_t i = 0; i < l && o + 2 < len; i++) {
        if (i && (l - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = d[i];
    }
    buf[o] = '\0';
}

/* What `plan --model m --gpus g --precision bf16` prints: its "Recommended: " layout line and
 * the per-GPU tokens/s of "tokens/s N (M per GPU)". */
static void plan_recommends(const char *m, int g, char *line, size_t n, long *per_gpu,
                            double *tokens_per_s)
{
    char args[256];
    /* bf16 pinned: the report compares the frameworks in bf16 (its FP8 line prices the same
     * plan in FP8); plan's own default searches FP8 too (issue 16) */
    snprintf(args, sizeof args, "--model %s --gpus %d --precision bf16", m, g);
    run(args);
    if (R.status != 0) fail_msg("plan %s exited %d: %s", args, R.status, R.err);
    const char *rec = strstr(R.out, "Recommended: ");
    assert_non_null(rec);
    rec += strlen("Recommended: ");
    const char *eol = strchr(rec, '\n');
    snprintf(line, n, "%.*s", (int)(eol - rec), rec);
    const char *tok = strstr(rec, "tokens/s ");
    assert_non_null(tok);
    assert_int_equal(sscanf(tok, "tokens/s %lf (%ld per GPU)", tokens_per_s, per_gpu), 2);
}

/* The answer comes first: a box per model, before the table of contents and the detail, that
 * names the plan `plan --model M --gpus N --precision bf16` recommends on the largest GPU
 * count, with its per-GPU throughput (the job's tokens/s / GPUs) and what FP8 buys the plan. */
static void test_answer_first(void **state)
{
    (void)state;
    char *html = write_html("answer.html");
    const char *first_box = strstr(html, "<section class=\"box\"");
    assert_non_null(first_box);
    static const char first_id[] = "<section class=\"box\" id=\"answer-3b\"";
    assert_true(!strncmp(first_box, first_id, strlen(first_id)));
    const char *nav = strstr(html, "<nav"), *detail = strstr(html, "id=\"decision\"");
    assert_non_null(nav);
    assert_non_null(detail);
    assert_true(first_box < nav && nav < detail);
    assert_non_null(strstr(html, "href=\"#answer\"")); /* the contents list the answer too */
    /* before the first box: the title and one paragraph of context, no section */
    assert_int_equal(count(first_box, "<section class=\"box\""), 2); /* one per model */
    static const char *const models[] = {"3b", "mixtral-8x7b"};
    const char *from = html;
    for (int i = 0; i < 2; i++) {
        char open[96], line[512], want[640];
        snprintf(open, sizeof open, "<section class=\"box\" id=\"answer-%s\"", models[i]);
        char *box = element(from, open, "</section>");
        if (!box) fail_msg("no answer box for %s", models[i]);
        long per_gpu;
        double tps;
        plan_recommends(models[i], SMALL_TOP_GPUS, line, sizeof line, &per_gpu, &tps);
        /* plan's layout line, quoted as plan prints it (HTML has no character to escape in it) */
        snprintf(want, sizeof want, "<code>%s</code>", line);
        if (!strstr(box, want)) fail_msg("the %s box does not name plan's layout %s:\n%s",
                                          models[i], line, box);
        snprintf(want, sizeof want, "On your <strong>%d ", SMALL_TOP_GPUS);
        assert_non_null(strstr(box, want));
        char commas[32];
        with_commas(per_gpu, commas, sizeof commas);
        snprintf(want, sizeof want, "%s tokens/s per GPU", commas);
        if (!strstr(box, want)) fail_msg("the %s box lacks '%s' (plan: %.0f tokens/s on %d GPUs)",
                                          models[i], want, tps, SMALL_TOP_GPUS);
        assert_true(labs(per_gpu - lround(tps / SMALL_TOP_GPUS)) <= 1);
        assert_non_null(strstr(box, "the best "));     /* compared with the other framework */
        /* the table above the boxes gives the same plan and ratio, linking to the box */
        snprintf(want, sizeof want, "<a href=\"#answer-%s\">", models[i]);
        const char *trow = strstr(html, want);
        if (!trow || trow > first_box) fail_msg("no row for %s in the table above the boxes",
                                                 models[i]);
        const char *rend = strstr(trow, "</tr>");
        const char *ratio = strstr(box, "</strong> the speed of the best FSDP2 plan");
        if (ratio) {
            const char *rs = ratio;
            while (rs > box && strncmp(rs, "<strong>", 8)) rs--;
            snprintf(want, sizeof want, "%.*s", (int)(ratio - rs) + 9, rs);
            const char *hit = strstr(trow, want);
            if (!hit || hit > rend) fail_msg("the %s row lacks the box's ratio %s", models[i],
                                             want);
        }
        assert_non_null(strstr(box, "GiB headroom"));
        /* FP8 is priced now (issue 16): the box says what it buys this plan on the H100 */
        assert_non_null(strstr(box, "class=\"note\"><strong>FP8 (fp8-"));
        assert_non_null(strstr(box, "the bf16 speed"));
        from = strstr(from, open) + 1;
        free(box);
    }
    /* the per-GPU column of the performance table is tokens/s / GPUs too */
    assert_non_null(strstr(html, "tokens/s per GPU</th>"));
    free(html);
}

/* The searches the summary line reports: --systems' which-cluster ones (one per model and
 * system) are counted with the report's, as the progress line counts them. */
static long searches_of(const char *args)
{
    run(args);
    if (R.status != 0) fail_msg("plan %s: %s", args, R.err);
    const char *p = strstr(R.out, " searches, ");
    assert_non_null(p);
    while (p > R.out && p[-1] >= '0' && p[-1] <= '9') p--;
    return strtol(p, NULL, 10);
}

static void test_search_count_with_systems(void **state)
{
    (void)state;
    char args[1024];
    snprintf(args, sizeof args, "report --models 3b,mixtral-8x7b --gpus 8 -o '%s/n.html'",
             tmpdir);
    long plain = searches_of(args);
    snprintf(args, sizeof args, "report --models 3b,mixtral-8x7b --gpus 8 --systems h100,h200,"
                                "b200 -o '%s/n.html'",
             tmpdir);
    assert_int_equal(searches_of(args), plain + 2 * 3);
}

/* The same report on one thread and on four: the sweep past the largest count (3B and
 * Mixtral from 8 GPUs up, until every memory class fits) runs counts ahead of their stop
 * decision on the idle threads, and drops those past the sweep's end, so the file and its
 * search count are the same. */
static void test_threads_same_report(void **state)
{
    (void)state;
    char args[1024], path[2][300];
    long n[2];
    for (int i = 0; i < 2; i++) {
        snprintf(path[i], sizeof path[i], "%s/t%d.html", tmpdir, i);
        snprintf(args, sizeof args, "report --models 3b,mixtral-8x7b --gpus 8 -o '%s'", path[i]);
        setenv("PLAN_THREADS", i ? "4" : "1", 1);
        n[i] = searches_of(args);
    }
    unsetenv("PLAN_THREADS");
    assert_int_equal(n[0], n[1]);
    size_t la, lb;
    char *a = slurp(path[0], &la), *b = slurp(path[1], &lb);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
}

/* The message `plan` refuses args with (exit 2 and its one error line, without "plan:
 * error: "), or "" when plan accepts the layout (exit 0, or 1: valid but over memory). */
static void plan_verdict(const char *args, char *msg, size_t n)
{
    static plan_run_result v;
    assert_int_equal(plan_run(&v, args), 0);
    msg[0] = '\0';
    if (v.status == 0 || v.status == 1) return;
    assert_int_equal(v.status, 2);
    const char *m = strstr(v.err, "plan: error: ");
    assert_non_null(m);
    snprintf(msg, n, "%s", m + strlen("plan: error: "));
    msg[strcspn(msg, "\n")] = '\0';
}

/* The decision tree's statements about what a framework can do agree with what `plan` itself
 * enforces (the same rule code, issue 23): each sentence is checked against `plan estimate` of
 * the same layout, accepted or refused with the message the page quotes. Three rules once
 * stated wrongly: Megatron-FSDP with PP (valid), FSDP2's CPU offload with checkpointing
 * (valid), Megatron-FSDP's CPU offload (pp 1, no recompute). */
static void test_rule_statements(void **state)
{
    (void)state;
    char *html = write_html("rules.html");
    const char *base = "estimate --model mixtral-8x7b --gpus 64 --system h100";
    char args[512], msg[512], want[1024];
    /* EP: refused for FSDP2 with plan's message, accepted by Megatron and torchtitan */
    snprintf(args, sizeof args, "%s --framework fsdp2 --ep 2", base);
    plan_verdict(args, msg, sizeof msg);
    assert_true(msg[0]);
    snprintf(args, sizeof args, "%s --framework megatron --ep 2", base);
    plan_verdict(args, want, sizeof want);
    assert_string_equal(want, "");
    snprintf(args, sizeof args, "%s --framework torchtitan --ep 2", base);
    plan_verdict(args, want, sizeof want);
    assert_string_equal(want, "");
    snprintf(want, sizeof want, "expert parallelism: Megatron and torchtitan (refused for "
                                "FSDP2: %s)", msg);
    if (!strstr(html, want)) fail_msg("the decision tree lacks: %s", want);
    /* Megatron-FSDP with PP is valid */
    snprintf(args, sizeof args, "%s --framework megatron --sharding fsdp --pp 2", base);
    plan_verdict(args, want, sizeof want);
    assert_string_equal(want, "");
    assert_non_null(strstr(html, "together with PP: Megatron and torchtitan, refused for FSDP2"));
    /* CPU offload with recompute: valid for FSDP2, refused for Megatron with plan's message */
    snprintf(args, sizeof args, "%s --framework fsdp2 --offload --recompute full", base);
    plan_verdict(args, want, sizeof want);
    assert_string_equal(want, "");
    snprintf(args, sizeof args, "%s --framework megatron --sharding fsdp --offload --recompute "
                                "full", base);
    plan_verdict(args, msg, sizeof msg);
    assert_true(msg[0]);
    snprintf(want, sizeof want, "together with recompute: FSDP2 and torchtitan, refused for "
                                "Megatron: %s)", msg);
    if (!strstr(html, want)) fail_msg("the memory ladder lacks: %s", want);
    /* section 2 has a torchtitan column and an FP8 row, each backed by plans */
    assert_non_null(strstr(html, "\">torchtitan (PyTorch-native, section 2b)</th>"));
    assert_non_null(strstr(html, "<td>FP8 on that plan"));
    /* the hand-written restatements are gone */
    assert_null(strstr(html, "which never has EP"));
    assert_null(strstr(html, "get a column here once"));
    assert_null(strstr(html, "Megatron only (refused for FSDP2"));
    free(html);
}

/* Self-contained: every URL in the page is a link a reader may follow (<a href>) or an XML
 * namespace name; nothing is fetched (no script, style sheet, image or font from elsewhere). */
static void test_self_contained(void **state)
{
    (void)state;
    char *html = write_html("self.html");
    int links = 0;
    for (const char *p = strstr(html, "http"); p; p = strstr(p + 1, "http")) {
        if (strncmp(p, "http://", 7) && strncmp(p, "https://", 8)) continue;
        const char *q = p;
        while (q > html && q[-1] != ' ' && q[-1] != '<') q--;
        bool link = !strncmp(q, "href=\"", 6) && q - 3 >= html && !strncmp(q - 3, "<a ", 3);
        bool ns = !strncmp(q, "xmlns", 5);
        if (!link && !ns) fail_msg("external URL outside a link: %.80s", q);
        links += link;
    }
    assert_true(links > 0); /* the migration notes cite their sources */
    assert_null(strstr(html, "url(http"));
    assert_null(strstr(html, "@import"));
    assert_null(strstr(html, "<img"));
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

/* `test_report render`: the HTML in headless Chromium, as a reader sees it. */

static const char *chromium_path(void)
{
    const char *cands[] = {getenv("PLAN_CHROMIUM"), "/usr/bin/chromium",
                           "/usr/bin/chromium-browser", NULL};
    for (int i = 0; i < 3; i++)
        if (cands[i] && *cands[i] && access(cands[i], X_OK) == 0) return cands[i];
    return NULL;
}

#define CHROMIUM_FLAGS                                                                          \
    "--headless --no-sandbox --disable-gpu --hide-scrollbars --disable-background-networking " \
    "--disable-component-update --disable-sync --no-first-run --force-device-scale-factor=1 "

/* Screenshot of file://html at w x h into png; 0 when chromium wrote it. */
static int shoot(const char *chromium, const char *html, const char *png, int w, int h)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s' " CHROMIUM_FLAGS "--user-data-dir='%s/profile' "
             "--window-size=%d,%d --screenshot='%s' 'file://%s' >/dev/null 2>>'%s/shots.err'",
             chromium, tmpdir, w, h, png, html, tmpdir);
    int st = system(cmd);
    struct stat sb;
    return st == 0 && stat(png, &sb) == 0 && sb.st_size > 0 ? 0 : -1;
}

typedef struct {
    int w, h;
    long pixels_like;   /* pixels within 6 of the colour asked for */
    long dark;          /* pixels darker than mid grey (text, axes) */
    long size_bytes;
} shot_stats;

#ifdef PLAN_TEST_CAIRO
#include <cairo.h>
/* Read png and count the pixels close to rgb and the dark ones. */
static int shot_read(const char *png, int rgb, shot_stats *s)
{
    memset(s, 0, sizeof *s);
    struct stat sb;
    if (stat(png, &sb) != 0) return -1;
    s->size_bytes = sb.st_size;
    cairo_surface_t *img = cairo_image_surface_create_from_png(png);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(img);
        return -1;
    }
    cairo_surface_flush(img);
    s->w = cairo_image_surface_get_width(img);
    s->h = cairo_image_surface_get_height(img);
    int stride = cairo_image_surface_get_stride(img);
    const unsigned char *data = cairo_image_surface_get_data(img);
    int wr = (rgb >> 16) & 255, wg = (rgb >> 8) & 255, wb = rgb & 255;
    for (int y = 0; y < s->h; y++)
        for (int x = 0; x < s->w; x++) {
            uint32_t px = *(const uint32_t *)(data + y * stride + 4 * x);
            int r = (px >> 16) & 255, g = (px >> 8) & 255, b = px & 255;
            if (abs(r - wr) <= 6 && abs(g - wg) <= 6 && abs(b - wb) <= 6) s->pixels_like++;
            if (r + g + b < 3 * 128) s->dark++;
        }
    cairo_surface_destroy(img);
    return 0;
}
#else
static int shot_read(const char *png, int rgb, shot_stats *s)
{
    (void)rgb;
    memset(s, 0, sizeof *s);
    struct stat sb;
    if (stat(png, &sb) != 0) return -1;
    s->size_bytes = sb.st_size;
    s->w = s->h = -1; /* not decoded: no cairo in this build */
    return 0;
}
#endif

/* Where screenshots are kept: PLAN_SCREENSHOT_DIR when set (to look at them), else tmpdir. */
static const char *shot_dir(void)
{
    const char *d = getenv("PLAN_SCREENSHOT_DIR");
    return d && *d ? d : tmpdir;
}

#define BOX_RGB 0xf1f7fd   /* .box background in report.c's style sheet */
#define SERIES0_RGB 0x0072b2 /* chart.c's first series colour (Okabe-Ito blue) */

/* The top of the page as a reader first sees it (1200 x 900): the answer box is there. */
static int check_top(const char *chromium, const char *html)
{
    char png[600];
    snprintf(png, sizeof png, "%s/top.png", shot_dir());
    if (shoot(chromium, html, png, 1200, 900)) {
        printf("chromium wrote no screenshot of the top of the page\n");
        return 1;
    }
    shot_stats s;
    if (shot_read(png, BOX_RGB, &s)) {
        printf("cannot read %s\n", png);
        return 1;
    }
    printf("top of the page: %s, %d x %d, %ld bytes, %ld answer-box pixels\n", png, s.w, s.h,
           s.size_bytes, s.pixels_like);
#ifdef PLAN_TEST_CAIRO
    if (s.w != 1200 || s.h != 900) return printf("unexpected screenshot size\n"), 1;
    /* the answer box fills a good part of the first screen, and there is text on it */
    if (s.pixels_like < 1200L * 900 / 10) return printf("no answer box on the first screen\n"), 1;
    if (s.dark < 2000) return printf("no text on the first screen\n"), 1;
#endif
    return 0;
}

/* Each chart alone in a page with the report's head (style sheet): it shows, with its
 * takeaway line, and its first series is drawn. */
static int check_charts(const char *chromium, const char *html_text)
{
    const char *body = strstr(html_text, "<body>");
    if (!body) return printf("no <body>\n"), 1;
    int n = 0, rc = 0;
    for (const char *f = strstr(html_text, "<figure id=\"chart-"); f;
         f = strstr(f + 1, "<figure id=\"chart-")) {
        const char *e = strstr(f, "</figure>");
        if (!e) return printf("unterminated figure\n"), 1;
        char name[128];
        const char *q = f + strlen("<figure id=\"chart-");
        snprintf(name, sizeof name, "%.*s", (int)(strchr(q, '"') - q), q);
        char page[600], png[600];
        snprintf(page, sizeof page, "%s/chart-%s.html", tmpdir, name);
        snprintf(png, sizeof png, "%s/chart-%s.png", shot_dir(), name);
        FILE *out = fopen(page, "w");
        if (!out) return 1;
        fwrite(html_text, 1, body + strlen("<body>") - html_text, out);
        fwrite(f, 1, e + strlen("</figure>") - f, out);
        fputs("</body></html>\n", out);
        fclose(out);
        if (!strstr(f, "<p class=\"takeaway\">") || strstr(f, "<p class=\"takeaway\">") > e) {
            printf("chart %s has no takeaway line\n", name);
            rc = 1;
        }
        if (shoot(chromium, page, png, 900, 560)) {
            printf("chromium wrote no screenshot of chart %s\n", name);
            rc = 1;
            continue;
        }
        shot_stats s;
        if (shot_read(png, SERIES0_RGB, &s)) {
            printf("cannot read %s\n", png);
            rc = 1;
            continue;
        }
        printf("chart %s: %s, %d x %d, %ld bytes, %ld pixels of its first series\n", name, png,
               s.w, s.h, s.size_bytes, s.pixels_like);
#ifdef PLAN_TEST_CAIRO
        if (s.pixels_like < 40 || s.dark < 500) {
            printf("chart %s does not show (series or text missing)\n", name);
            rc = 1;
        }
#endif
        n++;
    }
    if (charts_built() && n != SMALL_CHARTS) {
        printf("%d charts shot, expected %d\n", n, SMALL_CHARTS);
        rc = 1;
    }
    return rc;
}

/* Every model's answer on the first screen (1200 x 900): a copy of the page with a script
 * that writes where the answer table ends and how many rows it has (the guide itself has no
 * script), laid out by Chromium and read back from its DOM. */
static int check_first_screen(const char *chromium, const char *html_text)
{
    const char *end = strstr(html_text, "</body>");
    if (!end) return printf("no </body>\n"), 1;
    char page[600], cmd[4096];
    snprintf(page, sizeof page, "%s/first-screen.html", tmpdir);
    FILE *out = fopen(page, "w");
    if (!out) return 1;
    fwrite(html_text, 1, end - html_text, out);
    fputs("<script>var t=document.querySelector('#answer ~ table');"
          "document.body.setAttribute('data-first',t?Math.round(t.getBoundingClientRect()"
          ".bottom+window.scrollY)+' '+(t.tBodies[0].rows.length):'none');</script>"
          "</body></html>\n",
          out);
    fclose(out);
    snprintf(cmd, sizeof cmd,
             "timeout 120 '%s' " CHROMIUM_FLAGS "--user-data-dir='%s/profile' "
             "--window-size=1200,900 --dump-dom 'file://%s' 2>/dev/null",
             chromium, tmpdir, page);
    FILE *p = popen(cmd, "r");
    static char dom[1 << 22];
    size_t n = p ? fread(dom, 1, sizeof dom - 1, p) : 0;
    dom[n] = '\0';
    if (p) pclose(p);
    const char *a = strstr(dom, "data-first=\"");
    int bottom = 0, rows = 0;
    if (!a || sscanf(a + strlen("data-first=\""), "%d %d", &bottom, &rows) != 2)
        return printf("no answer table found in the laid-out page\n"), 1;
    printf("answer table: %d rows, ends %d px down (first screen 900 px)\n", rows, bottom);
    if (rows != 2) return printf("the answer table has %d rows, expected one per model\n", rows), 1;
    if (bottom > 900) return printf("the answer table does not fit the first screen\n"), 1;
    return 0;
}

static int render(void)
{
    const char *chromium = chromium_path();
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
    if (rc == 0) {
        char *html = slurp(path, NULL);
        rc = !html || check_top(chromium, path) || check_first_screen(chromium, html) ||
             check_charts(chromium, html);
        free(html);
    }
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
        cmocka_unit_test(test_answer_first),
        cmocka_unit_test(test_self_contained),
        cmocka_unit_test(test_rule_statements),
        cmocka_unit_test(test_search_count_with_systems),
        cmocka_unit_test(test_threads_same_report),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
