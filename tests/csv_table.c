/* csv_table.c — see csv_table.h. */
#include "csv_table.h"

#include <csv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXCOLS 80
#define MAXROWS 256

struct csv_table {
    char *cells[MAXROWS + 1][MAXCOLS];
    int ncols[MAXROWS + 1];
    int row, col;
};

static void on_field(void *s, size_t len, void *data)
{
    csv_table *t = data;
    if (t->row > MAXROWS || t->col >= MAXCOLS) return;
    char *c = malloc(len + 1);
    if (!c) return;
    memcpy(c, s, len);
    c[len] = '\0';
    t->cells[t->row][t->col++] = c;
}

static void on_row(int ch, void *data)
{
    (void)ch;
    csv_table *t = data;
    if (t->row <= MAXROWS) t->ncols[t->row] = t->col;
    t->row++;
    t->col = 0;
}

csv_table *csv_table_read(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read %s", path);
        return NULL;
    }
    csv_table *t = calloc(1, sizeof *t);
    struct csv_parser p;
    if (!t || csv_init(&p, CSV_APPEND_NULL) != 0) {
        snprintf(err, errlen, "out of memory reading %s", path);
        free(t);
        fclose(f);
        return NULL;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (csv_parse(&p, buf, n, on_field, on_row, t) != n) {
            snprintf(err, errlen, "%s: %s", path, csv_strerror(csv_error(&p)));
            fclose(f);
            csv_free(&p);
            csv_table_free(t);
            return NULL;
        }
    csv_fini(&p, on_field, on_row, t);
    csv_free(&p);
    fclose(f);
    return t;
}

int csv_table_rows(const csv_table *t)
{
    int rows = t->row - 1;
    return rows < 0 ? 0 : rows > MAXROWS ? MAXROWS : rows;
}

int csv_table_has_column(const csv_table *t, const char *name)
{
    for (int i = 0; i < t->ncols[0]; i++)
        if (t->cells[0][i] && !strcmp(t->cells[0][i], name)) return 1;
    return 0;
}

const char *csv_table_cell(const csv_table *t, int r, const char *name)
{
    if (r < 0 || r > MAXROWS) return "";
    for (int i = 0; i < t->ncols[0]; i++)
        if (t->cells[0][i] && !strcmp(t->cells[0][i], name))
            return i < t->ncols[r] && t->cells[r][i] ? t->cells[r][i] : "";
    return "";
}

void csv_table_free(csv_table *t)
{
    if (!t) return;
    for (int r = 0; r <= MAXROWS && r < t->row; r++)
        for (int c = 0; c < t->ncols[r]; c++) free(t->cells[r][c]);
    free(t);
}
