/*
 * csv_table.h — a whole CSV file read into memory by libcsv, cells looked up by header name,
 * for the tests that read published-run tables (golden.c: ../shared/data/published_runs.csv;
 * published_runs.c, the runner of test_published_h100.c and test_published_blackwell.c:
 * tests/data/published_megatron_bridge_{h100,blackwell}.csv).
 */
#ifndef PLAN_TESTS_CSV_TABLE_H
#define PLAN_TESTS_CSV_TABLE_H

#include <stddef.h>

typedef struct csv_table csv_table;

/* Reads path; NULL with err set when it cannot be read or parsed. At most 256 rows of 80
 * columns are kept (further ones are dropped). */
csv_table *csv_table_read(const char *path, char *err, size_t errlen);
/* Data rows (the header not counted); row r is 1..csv_table_rows(t). */
int csv_table_rows(const csv_table *t);
/* The cell of row r under header `name`; "" where the row is short or the name is absent. */
const char *csv_table_cell(const csv_table *t, int r, const char *name);
/* Is there a column `name`? */
int csv_table_has_column(const csv_table *t, const char *name);
void csv_table_free(csv_table *t);

#endif
