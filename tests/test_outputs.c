/*
 * test_outputs.c — outputs are written whole or not at all (DESIGN.md, Conventions; issue 18,
 * "Data loss"): whole_file.h through the library, and the commands that write files or
 * standard output, against a full disk (/dev/full), bad arguments and an existing file.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "plan_run.h"
#include "whole_file.h"

static plan_run_result res;

/* A fresh directory for one test. */
static void make_dir(char *dir, size_t n)
{
    snprintf(dir, n, "/tmp/plan_outputs_XXXXXX");
    assert_non_null(mkdtemp(dir));
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void read_text(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = '\0';
    fclose(f);
}

/* How many entries the directory holds (a leftover temporary file shows here). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_commit_replaces_abort_keeps(void **state)
{
    (void)state;
    char dir[64], path[128], buf[256], err[CM_ERRLEN];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    write_text(path, "old\n");
    whole_file w;
    assert_int_equal(whole_file_open(&w, path, err, sizeof err), CM_OK);
    fputs("new\n", w.f);
    read_text(path, buf, sizeof buf); /* not replaced until commit */
    assert_string_equal(buf, "old\n");
    whole_file_abort(&w);
    read_text(path, buf, sizeof buf);
    assert_string_equal(buf, "old\n");
    assert_int_equal(entries(dir), 1); /* no temporary file left */
    assert_int_equal(whole_file_open(&w, path, err, sizeof err), CM_OK);
    fputs("new\n", w.f);
    assert_int_equal(whole_file_commit(&w, err, sizeof err), CM_OK);
    read_text(path, buf, sizeof buf);
    assert_string_equal(buf, "new\n");
    assert_int_equal(entries(dir), 1);
    remove_dir(dir);
}

static void test_bad_targets(void **state)
{
    (void)state;
    char dir[64], err[CM_ERRLEN];
    make_dir(dir, sizeof dir);
    whole_file w;
    assert_int_not_equal(whole_file_open(&w, dir, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "is a directory"));
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.csv", dir);
    assert_int_not_equal(whole_file_open(&w, missing, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "No such file or directory"));
    /* A device is written in place, and a full one fails at commit, saying so. */
    assert_int_equal(whole_file_open(&w, "/dev/full", err, sizeof err), CM_OK);
    for (int i = 0; i < 10000; i++) fputs("0123456789", w.f);
    assert_int_not_equal(whole_file_commit(&w, err, sizeof err), CM_OK);
    assert_non_null(strstr(err, "disk full"));
    assert_non_null(strstr(err, "/dev/full"));
    remove_dir(dir);
}

static void test_stdout_full(void **state)
{
    (void)state;
    assert_int_equal(plan_run(&res, "--model 8b --gpus 8 >/dev/full"), 0);
    assert_int_not_equal(res.status, 0);
    assert_non_null(strstr(res.err, "standard output"));
    assert_non_null(strstr(res.err, "disk full"));
    assert_int_equal(plan_run(&res, "estimate --model 8b --gpus 8 --format json >/dev/full"), 0);
    assert_int_not_equal(res.status, 0);
    assert_non_null(strstr(res.err, "disk full"));
}

static void test_bench_keeps_existing_results(void **state)
{
    (void)state;
    char dir[64], path[128], args[512], buf[4096];
    make_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/results.csv", dir);
    write_text(path, "precious rows\n");
    /* bad arguments after -o: the file is checked and kept */
    snprintf(args, sizeof args, "bench -o '%s' --preset nonesuch", path);
    assert_int_equal(plan_run(&res, args), 0);
    assert_int_not_equal(res.status, 0);
    read_text(path, buf, sizeof buf);
    assert_string_equal(buf, "precious rows\n");
    snprintf(args, sizeof args, "bench -o '%s'", path);
    assert_int_equal(plan_run(&res, args), 0);
    assert_int_not_equal(res.status, 0);
    read_text(path, buf, sizeof buf);
    assert_string_equal(buf, "precious rows\n");
    assert_int_equal(entries(dir), 1);
    /* a good sweep replaces it whole */
    snprintf(args, sizeof args, "bench --models 8b --gpus 8 --frameworks fsdp2 -o '%s'", path);
    assert_int_equal(plan_run(&res, args), 0);
    assert_int_equal(res.status, 0);
    read_text(path, buf, sizeof buf);
    assert_true(strncmp(buf, "model,", 6) == 0 || strstr(buf, "model") == buf + 1);
    assert_null(strstr(buf, "precious"));
    assert_int_equal(entries(dir), 1);
    /* a full disk: non-zero, named */
    assert_int_equal(plan_run(&res, "bench --models 8b --gpus 8 -o /dev/full"), 0);
    assert_int_not_equal(res.status, 0);
    assert_non_null(strstr(res.err, "disk full"));
    remove_dir(dir);
}

static void test_report_full_disk(void **state)
{
    (void)state;
    assert_int_equal(plan_run(&res, "report --models 3b --gpus 8 --format md -o /dev/full"), 0);
    assert_int_not_equal(res.status, 0);
    assert_non_null(strstr(res.err, "disk full"));
}

/* A Markdown report is one output of several files: the guide and its PNG charts. A chart that
 * could not be written failed the report, but the charts written before it had replaced the old
 * ones beside the old guide (robust22): now nothing is put in place unless everything was
 * written. The chart that fails here is blocked by a directory of its name. */
static void test_report_charts_whole(void **state)
{
    (void)state;
    char dir[64], path[256], args[512], text[64];
    make_dir(dir, sizeof dir);
    snprintf(args, sizeof args, "report --models 3b --gpus 8 --format md -o '%s/r.md'", dir);
    assert_int_equal(plan_run(&res, args), 0);
    assert_int_equal(res.status, 0);
    int written = entries(dir);
    remove_dir(dir);
    if (written < 2) skip(); /* a build without cairo writes no PNG */
    make_dir(dir, sizeof dir);
    snprintf(args, sizeof args, "report --models 3b --gpus 8 --format md -o '%s/r.md'", dir);
    snprintf(path, sizeof path, "%s/r.md", dir);
    write_text(path, "old guide\n");
    snprintf(path, sizeof path, "%s/r-3b-memory.png", dir);
    write_text(path, "old chart\n");
    snprintf(path, sizeof path, "%s/r-size-ratio.png", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    assert_int_equal(plan_run(&res, args), 0);
    assert_int_not_equal(res.status, 0);
    assert_non_null(strstr(res.err, "r-size-ratio.png"));
    /* one line (a slow build prints progress lines before it) */
    const char *line = strstr(res.err, "plan: error: ");
    assert_non_null(line);
    assert_ptr_equal(strchr(line, '\n'), res.err + strlen(res.err) - 1);
    snprintf(path, sizeof path, "%s/r.md", dir);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "old guide\n");
    snprintf(path, sizeof path, "%s/r-3b-memory.png", dir);
    read_text(path, text, sizeof text);
    assert_string_equal(text, "old chart\n");
    assert_int_equal(entries(dir), 3); /* nothing new, no temporary file left */
    remove_dir(dir);
}

/* Every other writer (issue 18 audit): a full disk is a non-zero exit saying "disk full". */
static void test_every_writer_full_disk(void **state)
{
    (void)state;
    char dir[64], csv[128], res_csv[128], yaml[128], args[512];
    make_dir(dir, sizeof dir);
    snprintf(csv, sizeof csv, "%s/calib.csv", dir);
    write_text(csv, "op,m,n,k,bytes,group_size,span,time_s\ngemm,4096,4096,4096,,,,0.0002\n"
                    "gemm,8192,8192,8192,,,,0.0016\ngemm,16384,16384,16384,,,,0.0128\n");
    snprintf(res_csv, sizeof res_csv, "%s/results.csv", dir);
    snprintf(args, sizeof args, "bench --models 3b --gpus 8 --frameworks fsdp2 -o '%s'", res_csv);
    assert_int_equal(plan_run(&res, args), 0);
    assert_int_equal(res.status, 0);
    snprintf(yaml, sizeof yaml, "%s/cfg.yaml", dir);
    write_text(yaml, "trainer:\n  strategy: fsdp2\n");
    const char *cmds[] = {"fit '%s' -o /dev/full", "simulate --model 8b --gpus 8 --trace /dev/full",
                          "report --models 3b --gpus 8 --format html -o /dev/full",
                          "estimate --model 8b --gpus 8 --emit yaml >/dev/full",
                          "check '%s' --model 8b --gpus 8 >/dev/full",
                          "bench --compare '%s' '%s' >/dev/full"};
    const char *file[] = {csv, NULL, NULL, NULL, yaml, res_csv};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        snprintf(args, sizeof args, cmds[i], file[i], file[i]);
        assert_int_equal(plan_run(&res, args), 0);
        if (res.status == 0 || !strstr(res.err, "disk full"))
            fail_msg("plan %s: exit %d: %s", args, res.status, res.err);
    }
    remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_replaces_abort_keeps),
        cmocka_unit_test(test_bad_targets),
        cmocka_unit_test(test_stdout_full),
        cmocka_unit_test(test_bench_keeps_existing_results),
        cmocka_unit_test(test_report_full_disk),
        cmocka_unit_test(test_report_charts_whole),
        cmocka_unit_test(test_every_writer_full_disk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
