/*
 * bench_csv.c — CSV schema of `plan bench` through libcsv (csv_fwrite quotes every field that
 * needs it; csv_parse reads it back). See bench_csv.h.
 */
#include "bench_csv.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input_file.h"

static const char *const columns[] = {
    "model", "params", "framework", "sharding", "tp", "pp", "dp", "cp", "ep", "vpp", "mbs",
    "gbs", "seq", "recompute", "gpus", "system", "step_s", "tokens_per_s", "mfu", "memory_gib",
    "feasible", "measured_step_s", "measured_memory_gib", "error_pct", "plan_version", NULL,
};
enum { NCOLS = 25 };

void bench_row_from_estimate(bench_row *r, const estimate *e, const char *system_name,
                             const char *version)
{
    memset(r, 0, sizeof *r);
    const layout *l = &e->layout;
    snprintf(r->model, sizeof r->model, "%s", e->model_name);
    r->params = e->params_total;
    snprintf(r->framework, sizeof r->framework, "%s", layout_framework_name(l->framework));
    if (l->sharding == SHARDING_FSDP && l->shard_size > 0)
        snprintf(r->sharding, sizeof r->sharding, "hsdp");
    else
        snprintf(r->sharding, sizeof r->sharding, "%s", layout_sharding_name(l->sharding));
    r->tp = l->tp; r->pp = l->pp; r->dp = l->dp; r->cp = l->cp; r->ep = l->ep;
    r->vpp = l->vpp; r->mbs = l->mbs;
    r->gbs = e->training.global_batch;
    r->seq = e->training.seq_len;
    snprintf(r->recompute, sizeof r->recompute, "%s", layout_recompute_name(l->recompute));
    r->gpus = e->gpus;
    snprintf(r->system, sizeof r->system, "%s", system_name);
    r->step_s = e->time.step_s;
    r->tokens_per_s = e->tokens_per_s;
    r->mfu = e->mfu;
    r->memory_gib = e->memory.total_bytes / 1073741824.0;
    r->feasible = e->feasible;
    r->measured_step_s = r->measured_memory_gib = r->error_pct = NAN;
    snprintf(r->version, sizeof r->version, "%s", version);
}

static void field(FILE *f, const char *s, bool last)
{
    csv_fwrite(f, s, strlen(s));
    fputc(last ? '\n' : ',', f);
}

static void num(FILE *f, double v, const char *fmt, bool last)
{
    char buf[64] = "";
    if (!isnan(v)) snprintf(buf, sizeof buf, fmt, v);
    field(f, buf, last);
}

void bench_csv_write_header(FILE *f)
{
    for (int i = 0; columns[i]; i++) field(f, columns[i], columns[i + 1] == NULL);
    fflush(f);
}

void bench_csv_write_row(FILE *f, const bench_row *r)
{
    field(f, r->model, false);
    num(f, r->params, "%.0f", false);
    field(f, r->framework, false);
    field(f, r->sharding, false);
    int ints[] = {r->tp, r->pp, r->dp, r->cp, r->ep, r->vpp, r->mbs, r->gbs, r->seq};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) num(f, ints[i], "%.0f", false);
    field(f, r->recompute, false);
    num(f, r->gpus, "%.0f", false);
    field(f, r->system, false);
    num(f, r->step_s, "%.6g", false);
    num(f, r->tokens_per_s, "%.6g", false);
    num(f, r->mfu, "%.4f", false);
    num(f, r->memory_gib, "%.3f", false);
    field(f, r->feasible ? "yes" : "no", false);
    num(f, r->measured_step_s, "%.6g", false);
    num(f, r->measured_memory_gib, "%.3f", false);
    num(f, r->error_pct, "%.2f", false);
    field(f, r->version, true);
    fflush(f); /* rows already written survive an interrupted sweep */
}

/* ---- reading ---- */

typedef struct {
    char **cells;   /* current row */
    int ncells, cap;
    int map[NCOLS]; /* column index in file for each schema column */
    bool have_header;
    bench_row *rows;
    int nrows, rowcap;
    int line;
    char *err;
    size_t errlen;
    bool failed;
} reader;

static void on_field(void *s, size_t len, void *data)
{
    reader *r = data;
    if (r->ncells == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 32;
        r->cells = realloc(r->cells, r->cap * sizeof *r->cells);
    }
    char *c = malloc(len + 1);
    memcpy(c, s, len);
    c[len] = '\0';
    r->cells[r->ncells++] = c;
}

static bool parse_num(const char *s, double *out)
{
    if (!*s) {
        *out = NAN;
        return true;
    }
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return !errno && *end == '\0' && isfinite(*out); /* "nan", "inf": not numbers of a run */
}

static void on_row(int ch, void *data)
{
    (void)ch;
    reader *r = data;
    r->line++;
    if (r->failed) goto done;
    if (!r->have_header) {
        for (int c = 0; c < NCOLS; c++) {
            r->map[c] = -1;
            for (int i = 0; i < r->ncells; i++)
                if (!strcmp(r->cells[i], columns[c])) r->map[c] = i;
            if (r->map[c] < 0) {
                snprintf(r->err, r->errlen,
                         "line 1 lacks the column '%s': is this a plan bench results file?",
                         columns[c]);
                r->failed = true;
                goto done;
            }
        }
        r->have_header = true;
        goto done;
    }
    if (r->ncells == 1 && r->cells[0][0] == '\0') goto done; /* blank line */
    if (r->nrows == r->rowcap) {
        r->rowcap = r->rowcap ? 2 * r->rowcap : 64;
        r->rows = realloc(r->rows, r->rowcap * sizeof *r->rows);
    }
    bench_row *b = &r->rows[r->nrows];
    memset(b, 0, sizeof *b);
    double v[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        int i = r->map[c];
        const char *s = i < r->ncells ? r->cells[i] : "";
        switch (c) {
        case 0: snprintf(b->model, sizeof b->model, "%s", s); break;
        case 2: snprintf(b->framework, sizeof b->framework, "%s", s); break;
        case 3: snprintf(b->sharding, sizeof b->sharding, "%s", s); break;
        case 13: snprintf(b->recompute, sizeof b->recompute, "%s", s); break;
        case 15: snprintf(b->system, sizeof b->system, "%s", s); break;
        case 20: b->feasible = !strcmp(s, "yes"); break;
        case 24: snprintf(b->version, sizeof b->version, "%s", s); break;
        default:
            if (!parse_num(s, &v[c])) {
                snprintf(r->err, r->errlen, "line %d, column '%s': '%s' is not a number",
                         r->line, columns[c], s);
                r->failed = true;
                goto done;
            }
        }
    }
    /* Integer columns are converted to int below: a missing or huge value would be undefined
     * behaviour there, so it is an error naming the cell (found by tests/fuzz/fuzz_csv). */
    static const int int_cols[] = {4, 5, 6, 7, 8, 9, 10, 11, 12, 14};
    for (size_t k = 0; k < sizeof int_cols / sizeof *int_cols; k++) {
        int c = int_cols[k];
        if (!(v[c] >= 0 && v[c] <= 1e9)) {
            snprintf(r->err, r->errlen, "line %d, column '%s': '%s' is not a count between 0 "
                     "and 1000000000", r->line, columns[c], r->map[c] < r->ncells ?
                     r->cells[r->map[c]] : "");
            r->failed = true;
            goto done;
        }
    }
    b->params = v[1];
    b->tp = (int)v[4]; b->pp = (int)v[5]; b->dp = (int)v[6]; b->cp = (int)v[7];
    b->ep = (int)v[8]; b->vpp = (int)v[9]; b->mbs = (int)v[10]; b->gbs = (int)v[11];
    b->seq = (int)v[12]; b->gpus = (int)v[14];
    b->step_s = v[16]; b->tokens_per_s = v[17]; b->mfu = v[18]; b->memory_gib = v[19];
    b->measured_step_s = v[21]; b->measured_memory_gib = v[22]; b->error_pct = v[23];
    r->nrows++;
done:
    for (int i = 0; i < r->ncells; i++) free(r->cells[i]);
    r->ncells = 0;
}

int bench_csv_read(const char *path, bench_row **rows, char *err, size_t errlen)
{
    FILE *f;
    if (input_file_open(path, "results file", NULL, INPUT_FILE_CSV_MAX_BYTES, &f, err, errlen) !=
        CM_OK)
        return -1;
    reader r = {.err = err, .errlen = errlen};
    struct csv_parser p;
    csv_init(&p, CSV_APPEND_NULL | CSV_STRICT);
    char buf[65536];
    size_t n, total = 0;
    int status = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        total += n;
        if (input_file_over_cap(path, "results file", INPUT_FILE_CSV_MAX_BYTES, total, err,
                                errlen)) {
            status = -1;
            break;
        }
        if (csv_parse(&p, buf, n, on_field, on_row, &r) != n) {
            snprintf(err, errlen, "'%s' is not valid CSV near line %d: %s", path, r.line + 1,
                     csv_strerror(csv_error(&p)));
            status = -1;
            break;
        }
    }
    if (status == 0 && csv_fini(&p, on_field, on_row, &r) != 0) {
        snprintf(err, errlen, "'%s' is not valid CSV at its end: %s", path,
                 csv_strerror(csv_error(&p)));
        status = -1;
    }
    csv_free(&p);
    fclose(f);
    for (int i = 0; i < r.ncells; i++) free(r.cells[i]);
    free(r.cells);
    if (status == 0 && r.failed) {
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s: %s", path, err);
        snprintf(err, errlen, "%s", tmp);
        status = -1;
    }
    if (status == 0 && !r.have_header) {
        snprintf(err, errlen, "'%s' is empty: expected a plan bench results file", path);
        status = -1;
    }
    if (status != 0) {
        free(r.rows);
        return -1;
    }
    *rows = r.rows;
    return r.nrows;
}

bool bench_row_same_layout(const bench_row *a, const bench_row *b)
{
    return !strcmp(a->model, b->model) && !strcmp(a->system, b->system) &&
           a->gpus == b->gpus && !strcmp(a->framework, b->framework) &&
           !strcmp(a->sharding, b->sharding) && a->tp == b->tp && a->pp == b->pp &&
           a->dp == b->dp && a->cp == b->cp && a->ep == b->ep && a->vpp == b->vpp &&
           a->mbs == b->mbs && a->gbs == b->gbs && a->seq == b->seq &&
           !strcmp(a->recompute, b->recompute);
}

bool bench_row_same_config(const bench_row *a, const bench_row *b)
{
    return !strcmp(a->model, b->model) && !strcmp(a->system, b->system) &&
           a->gpus == b->gpus && !strcmp(a->framework, b->framework) &&
           !strcmp(a->sharding, b->sharding) && a->gbs == b->gbs && a->seq == b->seq;
}
