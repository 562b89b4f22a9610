/*
 * bench_csv.c — CSV schema of `plan bench` through libcsv (csv_fwrite quotes every field that
 * needs it; csv_parse reads it back). See bench_csv.h.
 */
#include "bench_csv.h"
#include "units.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "input_file.h"
#include "layout_codec.h"
#include "precision.h"

/* ---- the columns ---- */

typedef enum { COL_TEXT, COL_INT, COL_REAL, COL_YESNO } col_kind;

typedef struct {
    const char *name;
    col_kind kind;
    size_t offset, size; /* of the bench_row member */
    const char *fmt;     /* COL_INT, COL_REAL: how the number is written */
    const char *absent;  /* a column files may lack (older versions): its value then; NULL:
                            every file has it */
} column;

#define TEXT(n, m) {n, COL_TEXT, offsetof(bench_row, m), sizeof ((bench_row *)0)->m, NULL, NULL}
#define INT(n, m) {n, COL_INT, offsetof(bench_row, m), sizeof(int), "%.0f", NULL}
#define REAL(n, m, f) {n, COL_REAL, offsetof(bench_row, m), sizeof(double), f, NULL}

/* Before and after the layout's columns. */
static const column head[] = {TEXT("model", model), REAL("params", params, "%.0f")};
static const column tail[] = {
    INT("gpus", gpus),
    TEXT("system", system),
    REAL("step_s", step_s, "%.6g"),
    REAL("tokens_per_s", tokens_per_s, "%.6g"),
    REAL("mfu", mfu, "%.4f"),
    REAL("memory_gib", memory_gib, "%.3f"),
    {"feasible", COL_YESNO, offsetof(bench_row, feasible), sizeof(bool), NULL, NULL},
    REAL("measured_step_s", measured_step_s, "%.6g"),
    REAL("measured_memory_gib", measured_memory_gib, "%.3f"),
    REAL("error_pct", error_pct, "%.2f"),
    TEXT("plan_version", version),
    /* issue 16: the search tries low precision where the GPU has it; files written before
     * were bf16 (added last, so the columns before it keep their positions) */
    {"precision", COL_TEXT, offsetof(bench_row, precision), sizeof ((bench_row *)0)->precision,
     NULL, "bf16"},
};

/* Where a bench_row keeps each layout field the codec makes a column (layout_codec.h). */
static bool layout_column(const layout_field *f, column *c)
{
    static const struct {
        layout_field_id id;
        column col;
    } members[] = {
        {LAYOUT_F_FRAMEWORK, TEXT(NULL, framework)}, {LAYOUT_F_SHARDING, TEXT(NULL, sharding)},
        {LAYOUT_F_TP, INT(NULL, tp)},   {LAYOUT_F_PP, INT(NULL, pp)},
        {LAYOUT_F_DP, INT(NULL, dp)},   {LAYOUT_F_CP, INT(NULL, cp)},
        {LAYOUT_F_EP, INT(NULL, ep)},   {LAYOUT_F_VPP, INT(NULL, vpp)},
        {LAYOUT_F_MBS, INT(NULL, mbs)}, {LAYOUT_F_GBS, INT(NULL, gbs)},
        {LAYOUT_F_SEQ, INT(NULL, seq)}, {LAYOUT_F_RECOMPUTE, TEXT(NULL, recompute)},
    };
    for (size_t i = 0; i < sizeof members / sizeof *members; i++)
        if (members[i].id == f->id) {
            *c = members[i].col;
            c->name = f->key;
            return true;
        }
    return false;
}

#undef TEXT
#undef INT
#undef REAL

enum { NCOLS_MAX = 64 };
static column columns[NCOLS_MAX];
static int ncols;
static int layout_first, layout_count; /* the layout's columns: columns[layout_first ...] */

/* The schema: head, the layout codec's CSV fields in their order, tail. */
static void init_columns(void)
{
    if (ncols) return;
    int n = 0;
    for (size_t i = 0; i < sizeof head / sizeof *head; i++) columns[n++] = head[i];
    const layout_field *lf[LAYOUT_CSV_MAX];
    int nl = layout_csv_fields(lf);
    layout_first = n;
    for (int i = 0; i < nl; i++)
        if (layout_column(lf[i], &columns[n])) n++;
    layout_count = n - layout_first;
    for (size_t i = 0; i < sizeof tail / sizeof *tail; i++) columns[n++] = tail[i];
    ncols = n;
}

static void *member(bench_row *r, const column *c) { return (char *)r + c->offset; }
static const void *cmember(const bench_row *r, const column *c)
{
    return (const char *)r + c->offset;
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

/* Set a row's cell from its text (as read from a file); false when a number is not one. */
static bool set_cell(bench_row *r, const column *c, const char *s)
{
    double v;
    switch (c->kind) {
    case COL_TEXT: snprintf(member(r, c), c->size, "%s", s); return true;
    case COL_YESNO: *(bool *)member(r, c) = !strcmp(s, "yes"); return true;
    case COL_INT:
        /* converted to int: a missing or huge value would be undefined behaviour (issue 18,
         * found by tests/fuzz/fuzz_csv) */
        if (!parse_num(s, &v) || !(v >= 0 && v <= 1e9)) return false;
        *(int *)member(r, c) = (int)v;
        return true;
    default:
        if (!parse_num(s, &v)) return false;
        *(double *)member(r, c) = v;
        return true;
    }
}

void bench_row_from_estimate(bench_row *r, const estimate *e, const char *system_name,
                             const char *version)
{
    init_columns();
    memset(r, 0, sizeof *r);
    snprintf(r->model, sizeof r->model, "%s", e->model_name);
    r->params = e->params_total;
    /* the layout's cells as the codec writes them, stored as a file's would be */
    const layout_field *lf[LAYOUT_CSV_MAX];
    int nl = layout_csv_fields(lf);
    for (int i = 0; i < nl; i++) {
        column c;
        char text[64];
        if (!layout_column(lf[i], &c)) continue;
        layout_field_text(lf[i], &e->layout, &e->training, LAYOUT_TEXT_CSV, text, sizeof text);
        set_cell(r, &c, text);
    }
    r->gpus = e->gpus;
    snprintf(r->system, sizeof r->system, "%s", system_name);
    r->step_s = e->time.step_s;
    r->tokens_per_s = e->tokens_per_s;
    r->mfu = e->mfu;
    r->memory_gib = e->memory.total_bytes / UNITS_GIB_BYTES;
    r->feasible = e->feasible;
    snprintf(r->precision, sizeof r->precision, "%s", precision_label(&e->layout));
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
    init_columns();
    for (int i = 0; i < ncols; i++) field(f, columns[i].name, i == ncols - 1);
    fflush(f);
}

void bench_csv_write_row(FILE *f, const bench_row *r)
{
    init_columns();
    for (int i = 0; i < ncols; i++) {
        const column *c = &columns[i];
        bool last = i == ncols - 1;
        switch (c->kind) {
        case COL_TEXT: field(f, cmember(r, c), last); break;
        case COL_YESNO: field(f, *(const bool *)cmember(r, c) ? "yes" : "no", last); break;
        case COL_INT: num(f, *(const int *)cmember(r, c), c->fmt, last); break;
        default: num(f, *(const double *)cmember(r, c), c->fmt, last);
        }
    }
    fflush(f); /* rows already written survive an interrupted sweep */
}

/* ---- reading ---- */

typedef struct {
    char **cells;   /* current row */
    int ncells, cap;
    int map[NCOLS_MAX]; /* column index in file for each schema column */
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

static void on_row(int ch, void *data)
{
    (void)ch;
    reader *r = data;
    r->line++;
    if (r->failed) goto done;
    if (!r->have_header) {
        for (int c = 0; c < ncols; c++) {
            r->map[c] = -1;
            for (int i = 0; i < r->ncells; i++)
                if (!strcmp(r->cells[i], columns[c].name)) r->map[c] = i;
            if (r->map[c] < 0 && !columns[c].absent) {
                snprintf(r->err, r->errlen,
                         "line 1 lacks the column '%s': is this a plan bench results file?",
                         columns[c].name);
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
    for (int c = 0; c < ncols; c++) {
        int i = r->map[c];
        const char *s = i < 0 ? columns[c].absent : i < r->ncells ? r->cells[i] : "";
        if (!set_cell(b, &columns[c], s)) {
            snprintf(r->err, r->errlen, "line %d, column '%s': '%s' is not a number", r->line,
                     columns[c].name, s);
            r->failed = true;
            goto done;
        }
    }
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
    init_columns();
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

/* Two cells of a column equal (texts, or numbers; NaN equals nothing, as before). */
static bool same_cell(const bench_row *a, const bench_row *b, const column *c)
{
    switch (c->kind) {
    case COL_TEXT: return !strcmp(cmember(a, c), cmember(b, c));
    case COL_YESNO: return *(const bool *)cmember(a, c) == *(const bool *)cmember(b, c);
    case COL_INT: return *(const int *)cmember(a, c) == *(const int *)cmember(b, c);
    default: return *(const double *)cmember(a, c) == *(const double *)cmember(b, c);
    }
}

bool bench_row_same_layout(const bench_row *a, const bench_row *b)
{
    init_columns();
    if (strcmp(a->model, b->model) || strcmp(a->system, b->system) || a->gpus != b->gpus)
        return false;
    for (int i = layout_first; i < layout_first + layout_count; i++)
        if (!same_cell(a, b, &columns[i])) return false;
    return !strcmp(a->precision, b->precision);
}

bool bench_row_same_config(const bench_row *a, const bench_row *b)
{
    return !strcmp(a->model, b->model) && !strcmp(a->system, b->system) &&
           a->gpus == b->gpus && !strcmp(a->framework, b->framework) &&
           !strcmp(a->sharding, b->sharding) && a->gbs == b->gbs && a->seq == b->seq;
}
