/*
 * calib_csv.c — see calib_csv.h. libcsv calls on_field per cell and on_row per row; the first
 * row names the columns, so the reader finds them by name whatever their order.
 */
#include "calib_csv.h"

#include <csv.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_number.h"
#include "collective.h"
#include "input_file.h"

#define MAXCOLS 32

typedef struct {
    char *names[MAXCOLS];
    int ncols;
    char *cells[MAXCOLS];
    int n;
    int line;
    calib_csv *out;
    char err[CM_ERRLEN];
    bool failed;
} reader;

static int col(const reader *r, const char *name)
{
    for (int i = 0; i < r->ncols; i++)
        if (!strcmp(r->names[i], name)) return i;
    return -1;
}

static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->n >= MAXCOLS) return;
    char *c = malloc(len + 1);
    if (!c) {
        snprintf(r->err, sizeof r->err, "out of memory");
        r->failed = true;
        return;
    }
    memcpy(c, s, len);
    c[len] = '\0';
    r->cells[r->n++] = c;
}

/* The cell of column name as a positive finite number; false with the message otherwise. */
static bool positive_cell(reader *r, const char *name, double *out)
{
    const char *s = r->cells[col(r, name)];
    if (cli_number_double(s, out) && *out > 0) return true;
    snprintf(r->err, sizeof r->err, "line %d: %s '%.40s' is not a positive finite number",
             r->line, name, s);
    r->failed = true;
    return false;
}

static bool grow(void **p, int *cap, int n, size_t elem)
{
    if (n < *cap) return true;
    int ncap = *cap ? 2 * *cap : 32;
    void *q = realloc(*p, (size_t)ncap * elem);
    if (!q) return false;
    *p = q;
    *cap = ncap;
    return true;
}

static void on_row(int ch, void *data)
{
    (void)ch;
    reader *r = data;
    calib_csv *o = r->out;
    r->line++;
    if (r->failed) goto done;
    if (r->ncols == 0) {
        for (int i = 0; i < r->n; i++) r->names[i] = strdup(r->cells[i]);
        r->ncols = r->n;
        const char *need[] = {"op", "m", "n", "k", "bytes", "group_size", "span", "time_s", NULL};
        for (int i = 0; need[i]; i++)
            if (col(r, need[i]) < 0) {
                snprintf(r->err, sizeof r->err,
                         "line 1 lacks the column '%s': is this a plan calibrate CSV?", need[i]);
                r->failed = true;
                break;
            }
        goto done;
    }
    if (r->n < r->ncols) goto done;
    const char *op = r->cells[col(r, "op")];
    double t;
    if (!positive_cell(r, "time_s", &t)) goto done;
    bool fp8 = !strcmp(op, "gemm_fp8"), blk = !strcmp(op, "gemm_fp8_blockwise");
    if (fp8 || blk || !strcmp(op, "gemm")) {
        fit_gemm_obs g = {.time_s = t};
        fit_gemm_obs **list = blk ? &o->gemm_fp8_block : fp8 ? &o->gemm_fp8 : &o->gemm;
        int *cap = blk ? &o->capgemm_fp8_block : fp8 ? &o->capgemm_fp8 : &o->capgemm;
        int *cnt = blk ? &o->ngemm_fp8_block : fp8 ? &o->ngemm_fp8 : &o->ngemm;
        if (!positive_cell(r, "m", &g.m) || !positive_cell(r, "n", &g.n) ||
            !positive_cell(r, "k", &g.k))
            goto done;
        if (!grow((void **)list, cap, *cnt, sizeof **list)) {
            snprintf(r->err, sizeof r->err, "out of memory at line %d", r->line);
            r->failed = true;
            goto done;
        }
        (*list)[(*cnt)++] = g;
        goto done;
    }
    const collective_desc *d = collective_find(op);
    if (!d) {
        snprintf(r->err, sizeof r->err, "line %d: unknown op '%.40s'", r->line, op);
        r->failed = true;
        goto done;
    }
    long group;
    const char *gs = r->cells[col(r, "group_size")];
    if (!cli_number_long(gs, 1, 1000000, &group)) {
        snprintf(r->err, sizeof r->err,
                 "line %d: group_size '%.40s' is not an integer between 1 and 1000000", r->line,
                 gs);
        r->failed = true;
        goto done;
    }
    double bytes;
    if (!positive_cell(r, "bytes", &bytes)) goto done;
    int inter = !strcmp(r->cells[col(r, "span")], "inter");
    int k;
    for (k = 0; k < o->ncolls; k++)
        if (o->colls[k].op == (int)d->op && o->colls[k].group_size == group &&
            o->colls[k].spans_nodes == inter)
            break;
    if (k == o->ncolls) {
        if (k == CALIB_CSV_MAX_GROUPS) goto done;
        o->colls[k] = (calib_csv_collective){.op = d->op, .group_size = (int)group,
                                             .spans_nodes = inter};
        o->ncolls++;
    }
    calib_csv_collective *c = &o->colls[k];
    if (!grow((void **)&c->obs, &c->cap, c->n, sizeof *c->obs)) {
        snprintf(r->err, sizeof r->err, "out of memory at line %d", r->line);
        r->failed = true;
        goto done;
    }
    c->obs[c->n++] = (fit_collective_obs){bytes, t};
done:
    for (int i = 0; i < r->n; i++) free(r->cells[i]);
    r->n = 0;
}

void calib_csv_free(calib_csv *c)
{
    for (int i = 0; i < c->ncolls; i++) free(c->colls[i].obs);
    free(c->gemm);
    free(c->gemm_fp8);
    free(c->gemm_fp8_block);
    memset(c, 0, sizeof *c);
}

cm_status calib_csv_read(const char *path, calib_csv *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f;
    cm_status st = input_file_open(path, "calibrate CSV", NULL, INPUT_FILE_CSV_MAX_BYTES, &f,
                                   err, errlen);
    if (st != CM_OK) return st;
    reader r;
    memset(&r, 0, sizeof r);
    r.out = out;
    struct csv_parser p;
    csv_init(&p, CSV_APPEND_NULL | CSV_STRICT);
    char buf[65536];
    size_t n, total = 0;
    bool bad_csv = false, too_big = false;
    while (!r.failed && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        total += n;
        if ((too_big = input_file_over_cap(path, "calibrate CSV", INPUT_FILE_CSV_MAX_BYTES, total,
                                           err, errlen)))
            break;
        if (csv_parse(&p, buf, n, on_field, on_row, &r) != n) {
            bad_csv = true;
            break;
        }
    }
    if (!bad_csv && !too_big && !r.failed && csv_fini(&p, on_field, on_row, &r) != 0)
        bad_csv = true;
    fclose(f);
    if (bad_csv)
        st = cm_fail(err, errlen, CM_EPARSE, "'%s' is not valid CSV near line %d: %s", path,
                     r.line + 1, csv_strerror(csv_error(&p)));
    else if (too_big)
        st = CM_EIO;
    else if (r.failed || r.ncols == 0)
        st = cm_fail(err, errlen, CM_EPARSE, "%.200s: %s", path, r.ncols ? r.err : "empty file");
    csv_free(&p);
    for (int i = 0; i < r.ncols; i++) free(r.names[i]);
    for (int i = 0; i < r.n; i++) free(r.cells[i]);
    if (st != CM_OK) calib_csv_free(out);
    return st;
}
