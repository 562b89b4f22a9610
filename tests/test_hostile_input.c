/*
 * test_hostile_input.c — inputs a hostile or unlucky user gives (issue 18), one test per case,
 * each of which once crashed, hung, ran without bound, ran with a silently changed value or
 * named the wrong cause:
 *  - every file reader (system JSON, calibration profile, sweep JSON, trainer YAML, results CSV
 *    of bench --compare and report --bench, calibrate CSV of plan fit) refuses a directory, a
 *    FIFO (without blocking), /dev/zero (without reading forever) and an unreadable file, and
 *    says which;
 *  - a sweep file with an unknown framework (was a write through an uninitialised index) or an
 *    out-of-range seq; numbers on the command line are strict (`--seq 1e9`, `--gbs 1024abc`);
 *  - layout flags given to the search are refused, naming the flag;
 *  - YAML: a 40,000-deep flow sequence is refused at once; a leading-zero integer is refused;
 *  - a system without a network: no multi-node plan fits, for any framework or sharding;
 *  - plan fit: NaN, infinite and overflowing cells are refused naming the line;
 *  - the simulator refuses more than SIM_MAX_CHUNKS and a trace of more than
 *    SIM_MAX_TRACE_EVENTS events;
 *  - (robust22) refine --from refuses absurd measured values and names a bad enum's field;
 *    options a command ignored are refused (compare-systems, check, calibrate --ops ",",
 *    --recompute-layers past a stage or without full recompute); names cut inside a UTF-8
 *    character no longer drop the JSON "model" object or break the emitted YAML.
 * Library calls where the library decides; the rest through `plan` (PLAN_EXE).
 */
#define _GNU_SOURCE /* setresuid (test_unprivileged.h) */
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "check.h"
#include "emit.h"
#include "fit.h"
#include "plan_run.h"
#include "sim.h"
#include "test_unprivileged.h"

static char tmpdir[256];
static plan_run_result run;

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static char *tmp(const char *name)
{
    static char paths[16][512];
    static int next;
    char *p = paths[next++ % 16];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

/* `plan <args>` must exit 2 with needle on stderr. */
static void expect_usage_error(const char *needle, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void expect_usage_error(const char *needle, const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    assert_int_equal(plan_run(&run, args), 0);
    if (run.status != 2 || !strstr(run.err, needle))
        fail_msg("plan %s: exit %d, wanted 2 with '%s'; stderr: %s", args, run.status, needle,
                 run.err);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "a reader blocked or ran without bound (alarm)\n";
    if (write(2, msg, sizeof msg - 1) < 0) _exit(3);
    _exit(3);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/plan_hostile_XXXXXX");
    if (!mkdtemp(tmpdir)) return -1;
    signal(SIGALRM, on_alarm);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_restore_root(); /* a failed test_permission leaves as nobody */
    char cmd[2 * sizeof tmpdir + 64];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s'; rm -rf '%s'", tmpdir, tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The readers and the command line that reaches each: %s is the file. */
static const struct {
    const char *what;
    const char *args;
} readers[] = {
    {"system file", "estimate --model 8b --gpus 8 --system %s"},
    {"system file", "estimate --model 8b --gpus 8 --calibration %s"},
    {"sweep file", "bench --sweep %s"},
    {"trainer YAML", "check %s --model 8b"},
    {"results file", "bench --compare %s %s"},
    {"results file", "report -o /dev/null --format md --models 8b --gpus 8 --bench %s"},
    {"calibrate CSV", "fit %s -o /dev/null"},
    {"model config", "estimate --model %s --gpus 8"},
    {"measurements file", "refine --from %s --model 8b --gbs 16"},
};

static void each_reader(const char *path, const char *needle)
{
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++) {
        char args[1024];
        snprintf(args, sizeof args, readers[i].args, path, path);
        alarm(60);
        expect_usage_error(needle, "%s", args);
        alarm(0);
        if (!strstr(run.err, readers[i].what))
            fail_msg("plan %s: the message does not name the %s: %s", args, readers[i].what,
                     run.err);
    }
}

/* A directory was "not valid JSON" or "no such file". */
static void test_directory(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    each_reader(tmpdir, "is a directory");
}

/* A FIFO blocked forever (fopen waits for a writer); the alarm turns that into a failure. */
static void test_fifo(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    char *fifo = tmp("fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    each_reader(fifo, "not a regular file");
}

/* /dev/zero was read forever by the CSV readers. */
static void test_dev_zero(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    each_reader("/dev/zero", "not a regular file");
}

/* Permission denied was reported as "no such file". Root reads anything, so as root the
 * readers run as nobody (test_unprivileged.h). */
static void test_permission(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    char *secret = tmp("secret");
    write_file(secret, "{}");
    assert_int_equal(chmod(secret, 0), 0);
    assert_int_equal(chmod(tmpdir, 0711), 0); /* nobody may reach the file, not read it */
    const char *need[] = {getenv("PLAN_EXE"), getenv("PLAN_DATA_DIR"), tmpdir, NULL};
    if (!test_drop_root(need)) skip();
    each_reader(secret, "permission denied");
    each_reader("/nonexistent/file", "no such file");
    test_restore_root();
}

/* An unknown framework in a sweep file wrote through an uninitialised index; seq and gbs were
 * narrowed to int unchecked. */
static void test_sweep_file(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    char *sweep = tmp("sweep.json");
    write_file(sweep, "{\"models\": [\"3b\"], \"gpus\": [8], \"frameworks\": [\"deepspeed\"]}");
    expect_usage_error("unknown framework 'deepspeed'", "bench --sweep %s", sweep);
    write_file(sweep, "{\"models\": [\"3b\"], \"gpus\": [8], \"seq\": 4294971392}");
    expect_usage_error("\"seq\" must be an integer between 1 and", "bench --sweep %s", sweep);
    write_file(sweep, "{\"models\": [\"3b\"], \"gpus\": [8], \"gbs\": 8.5}");
    expect_usage_error("\"gbs\" must be an integer", "bench --sweep %s", sweep);
}

/* atoi ran `--seq 1e9` with seq 1 and `--gbs 1024abc` with 1024; strtol took " 8" and "+8". */
static void test_strict_numbers(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    expect_usage_error("--seq needs an integer between 1 and", "bench --models 3b --gpus 8 --seq 1e9");
    expect_usage_error("--gbs needs an integer", "bench --models 3b --gpus 8 --gbs 1024abc");
    expect_usage_error("--gbs needs an integer", "bench --models 3b --gpus 8 --gbs -5");
    /* past the simulator's bound, and past int (was narrowed) */
    expect_usage_error("--gbs needs an integer between 1 and 100000000, got '100000001'",
                       "--model 8b --gpus 8 --gbs 100000001");
    expect_usage_error("--gbs needs an integer between 1 and 100000000, got '4294967297'",
                       "estimate --model 8b --gpus 8 --gbs 4294967297");
    expect_usage_error("--gpus needs an integer", "bench --models 3b --gpus 8,+16");
    expect_usage_error("--gpus needs an integer", "--model 8b --gpus ' 8'");
    expect_usage_error("--seq needs an integer", "report -o /dev/null --format md --seq 4096x");
    expect_usage_error("--gpus needs an integer", "report -o /dev/null --format md --gpus 8,16x");
}

/* The search ignored layout flags. */
static void test_search_layout_flags(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    expect_usage_error("--tp fixes a layout", "--model 8b --gpus 64 --tp 8 --pp 2 --offload");
    expect_usage_error("--offload fixes a layout", "--model 8b --gpus 64 --offload");
    expect_usage_error("--sharding fixes a layout", "--model 8b --gpus 64 --sharding fsdp");
    assert_int_equal(plan_run(&run, "--model 8b --gpus 8 --framework fsdp2 --no-simulate"), 0);
    assert_int_equal(run.status, 0);
}

static cm_status read_yaml(const char *text, check_config *cfg, char *err)
{
    check_report rep;
    return check_read_yaml(text, strlen(text), cfg, &rep, err, CM_ERRLEN);
}

/* libyaml took seconds on a 40,000-deep flow sequence. */
static void test_yaml_depth(void **state)
{
    (void)state;
    size_t depth = 40000;
    char *text = malloc(2 * depth + 16);
    assert_non_null(text);
    size_t n = (size_t)sprintf(text, "trainer: ");
    for (size_t i = 0; i < depth; i++) text[n++] = '[';
    for (size_t i = 0; i < depth; i++) text[n++] = ']';
    text[n] = '\0';
    check_config cfg;
    char err[CM_ERRLEN];
    alarm(20);
    cm_status st = read_yaml(text, &cfg, err);
    alarm(0);
    free(text);
    assert_int_not_equal(st, CM_OK);
    if (!strstr(err, "nest deeper than")) fail_msg("%s", err);
}

/* 010 is decimal 10 in YAML 1.2 and octal 8 in PyYAML's YAML 1.1: once read as 10 silently. */
static void test_yaml_leading_zero(void **state)
{
    (void)state;
    check_config cfg;
    char err[CM_ERRLEN];
    const char *text = "trainer:\n  strategy: megatron\n  policy:\n    megatron_config:\n"
                       "      tensor_model_parallel_size: 010\n";
    assert_int_not_equal(read_yaml(text, &cfg, err), CM_OK);
    if (!strstr(err, "leading zero") || !strstr(err, "tensor_model_parallel_size"))
        fail_msg("%s", err);
    /* Forms YAML 1.1 and 1.2 read differently (0o10: 8 or a string; 1_0: 10 or a string) or
     * that are no plain decimal (0x10) are refused too; +8 is 8 in both. */
    static const char *const other[] = {"0o10", "0x10", "1_0", "8.0"};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        char t[512];
        snprintf(t, sizeof t, "trainer:\n  strategy: megatron\n  policy:\n    megatron_config:\n"
                              "      tensor_model_parallel_size: %s\n", other[i]);
        assert_int_not_equal(read_yaml(t, &cfg, err), CM_OK);
        if (!strstr(err, "must be an integer")) fail_msg("%s: %s", other[i], err);
    }
    const char *plus = "trainer:\n  strategy: megatron\n  policy:\n    megatron_config:\n"
                       "      tensor_model_parallel_size: +8\n";
    if (read_yaml(plus, &cfg, err) != CM_OK) fail_msg("+8: %s", err);
    assert_int_equal(cfg.layout.tp, 8);
}

/* nics_per_node 0: an HSDP plan over 8 nodes "fit", its replica all-reduce unpriced. */
static void test_no_network(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    char path[600], *sys = tmp("nonet.json");
    snprintf(path, sizeof path, "%s/systems/h100.json", getenv("PLAN_DATA_DIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *nics = strstr(text, "\"nics_per_node\": 8");
    assert_non_null(nics);
    nics[strlen("\"nics_per_node\": ")] = '0';
    write_file(sys, text);
    static const char *const plans[] = {
        "--framework fsdp2 --shard-size 8", "--framework fsdp2",
        "--framework megatron --sharding fsdp", "--framework megatron --sharding ddp",
        "--framework megatron --pp 8",
    };
    for (size_t i = 0; i < sizeof plans / sizeof *plans; i++) {
        char args[1024];
        snprintf(args, sizeof args, "estimate --model 8b --gpus 64 --system %s %s", sys,
                 plans[i]);
        assert_int_equal(plan_run(&run, args), 0);
        if (!strstr(run.out, "INFEASIBLE") || !strstr(run.out, "no inter-node network"))
            fail_msg("plan %s fits without a network:\n%s%s", args, run.out, run.err);
    }
    char args[1024];
    snprintf(args, sizeof args, "--model 8b --gpus 64 --system %s --no-simulate", sys);
    assert_int_equal(plan_run(&run, args), 0);
    if (!strstr(run.out, "No layout fits")) fail_msg("%s", run.out);
}

/* Does text hold a number of 20 or more digits (the ~1e30 s a step without a network once
 * printed as "1616000000000000423946721320501248.00 s")? */
static bool has_huge_number(const char *text)
{
    int run_len = 0;
    for (const char *p = text; *p; p++) {
        run_len = (*p >= '0' && *p <= '9') ? run_len + 1 : 0;
        if (run_len >= 20) return true;
    }
    return strstr(text, "e+") != NULL;
}

/* The same plan without a network printed a step time of ~1e30 s (text, JSON, simulate, the
 * emitted config's header): now "infeasible: <reason>" in text, null and the reason in JSON. */
static void test_no_network_no_time(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    char path[600], *sys = tmp("nonet2.json");
    snprintf(path, sizeof path, "%s/systems/h100.json", getenv("PLAN_DATA_DIR"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *nics = strstr(text, "\"nics_per_node\": 8");
    assert_non_null(nics);
    nics[strlen("\"nics_per_node\": ")] = '0';
    write_file(sys, text);
    static const char *const plans[] = {"--framework fsdp2", "--framework megatron --pp 8"};
    static const char *const commands[] = {"estimate", "simulate"};
    for (size_t i = 0; i < sizeof plans / sizeof *plans; i++)
        for (size_t c = 0; c < 2; c++) {
            char args[1024];
            snprintf(args, sizeof args, "%s --model 8b --gpus 64 --system %s %s", commands[c],
                     sys, plans[i]);
            assert_int_equal(plan_run(&run, args), 0);
            if (run.status != 1 || has_huge_number(run.out) ||
                !strstr(run.out, "step time    infeasible: the plan spans 8 nodes but system"))
                fail_msg("plan %s: exit %d\n%s%s", args, run.status, run.out, run.err);
            snprintf(args, sizeof args,
                     "%s --model 8b --gpus 64 --system %s %s --format json | python3 -c '"
                     "import json,sys; d=json.load(sys.stdin); t=d[\"time\"]; "
                     "assert t[\"step_s\"] is None and d[\"tokens_per_s\"] is None, t; "
                     "assert \"no inter-node network\" in t[\"unpriced_reason\"], t; "
                     "assert t[\"compute_s\"] > 0, t; "
                     "assert t[\"host_paced_s\"] is None and t[\"gpu_only_step_s\"] is None, t; "
                     "print(\"json ok\")'",
                     commands[c], sys, plans[i]);
            assert_int_equal(plan_run(&run, args), 0);
            if (!strstr(run.out, "json ok") || has_huge_number(run.out))
                fail_msg("plan %s:\n%s%s", args, run.out, run.err);
        }
    char args[1024];
    snprintf(args, sizeof args,
             "estimate --model 8b --gpus 64 --system %s --framework fsdp2 --emit yaml", sys);
    assert_int_equal(plan_run(&run, args), 0);
    if (has_huge_number(run.out) || !strstr(run.out, "# predicted: infeasible, no step time"))
        fail_msg("plan %s:\n%s%s", args, run.out, run.err);
    expect_usage_error("no trace: this layout has no step time",
                       "estimate --model 8b --gpus 64 --system %s --trace %s", sys,
                       tmp("trace-nonet.json"));
}

/* plan fit wrote a profile of NaNs, exit 0, from NaN or overflowing cells. */
static void test_fit_non_finite(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    static const char *const bad[] = {"nan", "inf", "1e400", "-0.5", "12abc", "0x1p3z"};
    char *csv = tmp("calib.csv"), *out = tmp("profile.json");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "op,m,n,k,bytes,group_size,span,time_s\n"
                 "gemm,4096,4096,4096,,,,0.0002\n"
                 "gemm,8192,8192,8192,,,,0.0016\n"
                 "gemm,%s,2048,2048,,,,0.00003\n"
                 "gemm,16384,16384,16384,,,,0.0128\n",
                 bad[i]);
        write_file(csv, text);
        unlink(out);
        expect_usage_error("line 4: m", "fit %s -o %s", csv, out);
        assert_int_not_equal(access(out, F_OK), 0);
    }
    write_file(csv, "op,m,n,k,bytes,group_size,span,time_s\n"
                    "all_reduce,,,,1048576,8,intra,nan\n");
    expect_usage_error("line 2: time_s", "fit %s -o %s", csv, out);
    write_file(csv, "op,m,n,k,bytes,group_size,span,time_s\n"
                    "all_reduce,,,,1048576,1e1,intra,0.001\n");
    expect_usage_error("line 2: group_size", "fit %s -o %s", csv, out);
}

/* The fit itself refuses NaN observations (they passed `m <= 0`). */
static void test_fit_library(void **state)
{
    (void)state;
    system_spec sys;
    memset(&sys, 0, sizeof sys);
    sys.peak_bf16_flops_per_s = 989e12;
    sys.hbm_bandwidth_bytes_per_s = 3.35e12;
    sys.gemm_efficiency_max = 0.7;
    fit_gemm_obs g[3] = {{4096, 4096, 4096, 2e-4}, {NAN, 8192, 8192, 1.6e-3},
                         {16384, 16384, 16384, 1.28e-2}};
    fit_gemm_result gr;
    char err[CM_ERRLEN];
    assert_int_not_equal(fit_gemm(&sys, g, 3, &gr, err, sizeof err), CM_OK);
    if (!strstr(err, "finite")) fail_msg("%s", err);
    fit_collective_obs c[3] = {{1e6, 1e-4}, {INFINITY, 1e-3}, {1e8, 1e-2}};
    system_collective_fit cf;
    assert_int_not_equal(fit_collective(COLL_ALL_REDUCE, 8, false, c, 3, &cf, err, sizeof err),
                         CM_OK);
    if (!strstr(err, "finite")) fail_msg("%s", err);
}

/* bench --compare once joined the two files in O(n·m): 200,000 rows each took hours. Sorted,
 * it takes about a second (B holds A's rows in reverse order, every one unchanged). */
static void test_compare_join_bounded(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    enum { ROWS = 200000 };
    static const char header[] =
        "\"model\",\"params\",\"framework\",\"sharding\",\"tp\",\"pp\",\"dp\",\"cp\","
        "\"ep\",\"vpp\",\"mbs\",\"gbs\",\"seq\",\"recompute\",\"gpus\",\"system\","
        "\"step_s\",\"tokens_per_s\",\"mfu\",\"memory_gib\",\"feasible\","
        "\"measured_step_s\",\"measured_memory_gib\",\"error_pct\",\"plan_version\"\n";
    char *a = tmp("big_a.csv"), *b = tmp("big_b.csv");
    FILE *fa = fopen(a, "w"), *fb = fopen(b, "w");
    assert_non_null(fa);
    assert_non_null(fb);
    fputs(header, fa);
    fputs(header, fb);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ROWS; i++) {
            int r = k == 0 ? i : ROWS - 1 - i; /* B reversed */
            fprintf(k == 0 ? fa : fb,
                    "\"m%d\",\"3212749824\",\"megatron\",\"ddp\",\"1\",\"1\",\"8\",\"1\","
                    "\"1\",\"1\",\"2\",\"1024\",\"4096\",\"none\",\"8\",\"h100\","
                    "\"19.6765\",\"213163\",\"0.5760\",\"78.905\",\"yes\",\"\",\"\",\"\","
                    "\"0.1.0\"\n",
                    r);
        }
    assert_int_equal(fclose(fa), 0);
    assert_int_equal(fclose(fb), 0);
    char args[1200];
    snprintf(args, sizeof args, "bench --compare %s %s", a, b);
    alarm(120); /* about 1 s here; the O(n·m) join ran past it by hours */
    assert_int_equal(plan_run(&run, args), 0);
    alarm(0);
    if (run.status != 0 || !strstr(run.out, "0 changed, 200000 unchanged, 0 added, 0 removed"))
        fail_msg("plan %s: exit %d\n%s%s", args, run.status, run.out, run.err);
    unlink(a);
    unlink(b);
}

/* A display name holding a line break YAML 1.1 knows but C does not (NEL U+0085, LS U+2028,
 * PS U+2029) ended the emitted YAML's header comment: the rest of the line became YAML and the
 * file no longer read back; a C1 control (U+0086) or U+FFFF made it invalid YAML (found by
 * tests/fuzz/fuzz_emit). */
static void test_yaml_comment_unicode_breaks(void **state)
{
    (void)state;
    const char *dir = getenv("PLAN_DATA_DIR");
    if (!dir) skip();
    model_spec m;
    system_spec sys;
    char err[CM_ERRLEN];
    assert_int_equal(model_load("8b", dir, &m, err, sizeof err), CM_OK);
    assert_int_equal(system_load("h100", dir, &sys, err, sizeof err), CM_OK);
    snprintf(m.display, sizeof m.display,
             "a\xe2\x80\xa8" "b: c\xc2\x85" "- d\xe2\x80\xa9" "[e\xc2\x86" "f\xef\xbf\xbf" "g");
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_FSDP2);
    l.dp = 8;
    estimate e;
    assert_int_equal(estimate_layout(&m, &sys, &t, &l, &e, err, sizeof err), CM_OK);
    emit_context ctx = {.model_ref = "8b"};
    char *text = NULL;
    assert_int_equal(emit_yaml(&e, &m, &sys, &ctx, &text, err, sizeof err), CM_OK);
    check_config cfg;
    check_report rep;
    if (check_read_yaml(text, strlen(text), &cfg, &rep, err, sizeof err) != CM_OK)
        fail_msg("%s\n%s", err, text);
    assert_non_null(strstr(text, "# plan "));
    assert_non_null(strstr(text, "a?b: c?- d?[e?f?g on 8 x"));
    free(text);
}

/* A config.json's display name reached the report as markup: "[x](javascript:...)" became a
 * link, "**b**" bold, and a line break started a Markdown list item; a system JSON's GPU name
 * too. */
static void test_report_display_markup(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    char args[2048], path[600];
    snprintf(path, sizeof path, "%s/models/3b.json", getenv("PLAN_DATA_DIR"));
    char *evil = tmp("evil.json"), *html = tmp("evil.html"), *md = tmp("evil.md");
    snprintf(args, sizeof args,
             "--version >/dev/null; python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "d[\"_plan\"][\"display\"]=\"<i>E</i> [x](javascript:alert(1)) **b**\\n- item\"; "
             "json.dump(d,open(sys.argv[2],\"w\"))' %s %s",
             path, evil);
    assert_int_equal(plan_run(&run, args), 0);
    assert_int_equal(run.status, 0);
    /* and a system whose GPU name is markup too (the heading and sentences name it) */
    char sys_path[600], *evil_sys = tmp("evil_sys.json");
    snprintf(sys_path, sizeof sys_path, "%s/systems/h100.json", getenv("PLAN_DATA_DIR"));
    snprintf(args, sizeof args,
             "--version >/dev/null; python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "d[\"gpu\"][\"name\"]=\"G**w**[v](javascript:g)\"; "
             "json.dump(d,open(sys.argv[2],\"w\"))' %s %s",
             sys_path, evil_sys);
    assert_int_equal(plan_run(&run, args), 0);
    assert_int_equal(run.status, 0);
    snprintf(args, sizeof args, "report --models %s --gpus 8 --system %s --format html -o %s",
             evil, evil_sys, html);
    assert_int_equal(plan_run(&run, args), 0);
    if (run.status != 0) fail_msg("plan %s: %s", args, run.err);
    snprintf(args, sizeof args, "report --models %s --gpus 8 --system %s --format md -o %s",
             evil, evil_sys, md);
    assert_int_equal(plan_run(&run, args), 0);
    if (run.status != 0) fail_msg("plan %s: %s", args, run.err);
    static char text[1 << 21];
    FILE *f = fopen(html, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    if (strstr(text, "href=\"javascript") || strstr(text, "<strong>b</strong>") ||
        strstr(text, "<i>E") || strstr(text, "<strong>w</strong>"))
        fail_msg("the display name became HTML markup");
    assert_non_null(strstr(text, "&lt;i&gt;E&lt;/i&gt; [x](javascript:alert(1)) **b** - item"));
    assert_non_null(strstr(text, "on G**w**[v](javascript:g)"));
    f = fopen(md, "r");
    assert_non_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    if (strstr(text, "\n- item")) fail_msg("the display name started a Markdown list");
    /* unquoted only inside the emitted configs' code blocks, in their "# plan" comment line */
    static const char *const raw[] = {"[x](javascript", "[v](javascript:g)"};
    for (size_t i = 0; i < 2; i++)
        for (const char *at = text; (at = strstr(at, raw[i])); at++) {
            const char *line = at;
            while (line > text && line[-1] != '\n') line--;
            if (strncmp(line, "# plan ", 7)) fail_msg("markup outside a code block: %.80s", line);
        }
    assert_non_null(strstr(text, "\\[x\\](javascript:alert(1)) \\*\\*b\\*\\* - item"));
}

/* The simulator once ran 50 M chunks per plan (minutes per search) and traced millions of
 * events (gigabytes). */
static void test_sim_bounds(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    alarm(60);
    expect_usage_error("over the limit of",
                       "simulate --model 8b --gpus 8 --gbs 100000000 --no-simulate");
    expect_usage_error("the trace would hold more than",
                       "simulate --model 8b --gpus 8 --gbs 100000 --framework fsdp2 --trace %s",
                       tmp("trace.json"));
    /* The search keeps such plans by their closed form, in a bounded time. */
    assert_int_equal(plan_run(&run, "--model 8b --gpus 64 --gbs 100000000"), 0);
    alarm(0);
    assert_int_equal(run.status, 0);
    assert_non_null(strstr(run.out, "Recommended"));
}

/* plan refine --from: a measured step of 1e308 s (or 1e-300 s) was fitted, printing a 300-digit
 * step, +inf% and exit 0; a misspelt enum in a layout was answered with every enum of the
 * layout and not the one at fault (robust22). */
static void test_refine_from_values(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    static const char *form =
        "{\"plans\": [{\"layout\": {\"framework\": \"megatron\", \"tp\": 1, \"dp\": 8, "
        "\"mbs\": 1, \"sharding\": \"distopt\", \"recompute\": \"%s\"}, "
        "\"measured_step_s\": %s%s},"
        " {\"layout\": {\"framework\": \"megatron\", \"tp\": 2, \"dp\": 4, \"mbs\": 1, "
        "\"sharding\": \"distopt\"}, \"measured_step_s\": 40}]}";
    static const struct {
        const char *recompute, *step, *extra, *needle;
    } cases[] = {
        {"none", "1e308", "", "measured_step_s must be a number of seconds between 1e-06 and 86400"},
        {"none", "1e-300", "", "measured_step_s must be a number of seconds between"},
        {"none", "42", ", \"measured_spread\": -1", "measured_spread must be a number from 0"},
        {"none", "42", ", \"measured_memory_bytes\": 1e300", "measured_memory_bytes one of bytes"},
        {"bogus", "42", "", "plans[0].layout.recompute is 'bogus', which plan does not know: sharding must be"},
        {"none", "42", "", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text, form, cases[i].recompute, cases[i].step, cases[i].extra);
        write_file(tmp("measured.json"), text);
        if (cases[i].needle) {
            expect_usage_error(cases[i].needle, "refine --from %s --model 8b --gpus 8",
                               tmp("measured.json"));
            assert_ptr_equal(strchr(run.err, '\n'), run.err + strlen(run.err) - 1);
        } else {
            char args[1024];
            snprintf(args, sizeof args, "refine --from %s --model 8b --gpus 8", tmp("measured.json"));
            assert_int_equal(plan_run(&run, args), 0);
            if (run.status != 0) fail_msg("plan %s: exit %d: %s", args, run.status, run.err);
        }
    }
}

/* Values the command line took silently (robust22): compare-systems and plan check ignored the
 * shared options they do not use; calibrate --ops "," selected nothing and
 * ran nothing with exit 0, and a list past 255 characters lost its last names; a full-recompute
 * layer count past the stage's layers was printed as given ("1000 layers a stage"), and one
 * given with selective or no recompute was dropped (Megatron refuses it). */
static void test_silent_values(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE")) skip();
    expect_usage_error("--ops names no operation in ','", "calibrate --list --ops ,");
    char args[1024] = "calibrate --list --ops ";
    for (int i = 0; i < 60; i++) strcat(args, "gemm,");
    strcat(args, "all_reduce");
    expect_usage_error("--ops list is 310 characters, over 255", "%s", args);
    expect_usage_error("--recompute-layers 1000 is more than the 32 layers of the fullest pipeline "
                       "stage: give 1 to 32",
                       "estimate --model 8b --gpus 8 --recompute full --recompute-layers 1000");
    expect_usage_error("the 16 layers of the fullest",
                       "simulate --model 8b --gpus 8 --pp 2 --recompute full --recompute-layers 17");
    expect_usage_error("--recompute-layers counts the layers of full recompute",
                       "estimate --model 8b --gpus 8 --recompute selective --recompute-layers 4");
    /* compare-systems took every shared option and ignored most (--format json printed text) */
    expect_usage_error("plan compare-systems does not take --format",
                       "compare-systems --model 8b --gpus 8 --systems h100 --format json");
    expect_usage_error("does not take --tp", "compare-systems --model 8b --gpus 8 --tp 2");
    expect_usage_error("does not take --system:", "compare-systems --model 8b --gpus 8 -s h100");
    assert_int_equal(plan_run(&run, "compare-systems --model 8b --gpus 8 --systems h100 "
                                    "--seq 2048 --gbs 64 --precision bf16 --csv"), 0);
    assert_int_equal(run.status, 0);
    /* plan fit said "unknown option or missing value" without naming it */
    expect_usage_error("plan fit: unknown option '--tp'", "fit x.csv --tp 2");
    expect_usage_error("plan fit: this option needs a value: '-o'", "fit x.csv -o");
    /* plan check likewise (--trace wrote no trace, --format json printed text) */
    snprintf(args, sizeof args, "estimate --model 8b --gpus 8 --emit yaml > %s", tmp("c.yaml"));
    assert_int_equal(plan_run(&run, args), 0);
    assert_int_equal(run.status, 0);
    expect_usage_error("plan check does not take --trace", "check %s --trace %s", tmp("c.yaml"),
                       tmp("t.json"));
    expect_usage_error("plan check does not take --format", "check %s --format json",
                       tmp("c.yaml"));
    snprintf(args, sizeof args, "check %s --system h100 --gpus 8", tmp("c.yaml"));
    assert_int_equal(plan_run(&run, args), 0);
    assert_int_equal(run.status, 0);
    assert_int_equal(plan_run(&run, "estimate --model 8b --gpus 8 --pp 2 --recompute full "
                                    "--recompute-layers 16"), 0);
    assert_int_equal(run.status, 0);
    assert_non_null(strstr(run.out, "recompute full (16 layers a stage)"));
}

/* A name longer than its field was cut inside a UTF-8 character (a display name of 100 'é'
 * in 127 bytes), and a file name need not be UTF-8 at all: the JSON output then lost its whole
 * "model" object (jansson refuses such a string) and the emitted YAML was not UTF-8, so plan
 * check could not read it back (robust22). Names are now cut between characters and stray
 * bytes written as '?'. */
static void test_utf8_names(void **state)
{
    (void)state;
    if (!getenv("PLAN_EXE") || !getenv("PLAN_DATA_DIR")) skip();
    char preset[512], display[256] = "";
    snprintf(preset, sizeof preset, "%s/models/8b.json", getenv("PLAN_DATA_DIR"));
    json_error_t je;
    json_t *cfg = json_load_file(preset, 0, &je);
    assert_non_null(cfg);
    for (int i = 0; i < 100; i++) strcat(display, "\xc3\xa9"); /* é */
    json_object_set_new(json_object_get(cfg, "_plan"), "display", json_string(display));
    const char *paths[] = {tmp("long-display.json"), tmp("name-\xff\xfe.json")};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(json_dump_file(cfg, paths[k], 0), 0);
        char args[1024];
        snprintf(args, sizeof args, "estimate --model '%s' --gpus 8 --format json", paths[k]);
        assert_int_equal(plan_run(&run, args), 0);
        json_t *out = json_loads(run.out, 0, &je);
        assert_non_null(out);
        const json_t *model = json_object_get(out, "model");
        if (!json_is_object(model)) fail_msg("plan %s: no \"model\" object", args);
        if (k == 0)
            assert_int_equal(strlen(json_string_value(json_object_get(model, "display"))), 126);
        json_decref(out);
        snprintf(args, sizeof args, "estimate --model '%s' --gpus 8 --emit yaml > %s", paths[k],
                 tmp("emitted.yaml"));
        assert_int_equal(plan_run(&run, args), 0);
        assert_int_equal(run.status, 0);
        snprintf(args, sizeof args, "check %s --model '%s' --gpus 8", tmp("emitted.yaml"),
                 paths[k]);
        assert_int_equal(plan_run(&run, args), 0);
        if (run.status != 0) fail_msg("plan %s: exit %d: %s", args, run.status, run.err);
    }
    /* the file name's stray bytes as '?' */
    snprintf(preset, sizeof preset, "estimate --model '%s' --gpus 8 --format json", paths[1]);
    assert_int_equal(plan_run(&run, preset), 0);
    assert_non_null(strstr(run.out, "\"name\": \"name-??\""));
    json_decref(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directory),        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_dev_zero),         cmocka_unit_test(test_permission),
        cmocka_unit_test(test_sweep_file),       cmocka_unit_test(test_strict_numbers),
        cmocka_unit_test(test_search_layout_flags), cmocka_unit_test(test_yaml_depth),
        cmocka_unit_test(test_yaml_leading_zero), cmocka_unit_test(test_no_network),
        cmocka_unit_test(test_fit_non_finite),   cmocka_unit_test(test_fit_library),
        cmocka_unit_test(test_sim_bounds),       cmocka_unit_test(test_no_network_no_time),
        cmocka_unit_test(test_compare_join_bounded),
        cmocka_unit_test(test_yaml_comment_unicode_breaks),
        cmocka_unit_test(test_report_display_markup),
        cmocka_unit_test(test_refine_from_values),
        cmocka_unit_test(test_silent_values),
        cmocka_unit_test(test_utf8_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
