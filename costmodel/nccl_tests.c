/*
 * nccl_tests.c — the nccl-tests output reader (see nccl_tests.h for the formats).
 *
 * The text reader is a line scanner: "# Collective test starting" names the next test,
 * "# nThread" opens it, "#  Rank" lines count its ranks and hosts, the column header says where
 * the out-of-place time sits (older nccl-tests have no "root" column), and every other line
 * whose first field is a whole number is a result row. The JSON reader walks the -J document
 * with jansson.
 */
#include "nccl_tests.h"

#include <sys/stat.h>

#include "input_file.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE_BYTES (64L * 1024 * 1024)

static const struct {
    const char *name;
    collective_op op;
} programs[] = {
    {"all_reduce", COLL_ALL_REDUCE},         {"all_gather", COLL_ALL_GATHER},
    {"reduce_scatter", COLL_REDUCE_SCATTER}, {"alltoall", COLL_ALL_TO_ALL},
    {"all_to_all", COLL_ALL_TO_ALL},         {"sendrecv", COLL_SEND_RECV},
    {"send_recv", COLL_SEND_RECV},
};

/* Programs nccl-tests has that the cost model has no row for. */
static const char *const other_programs[] = {"broadcast", "reduce_perf", "gather", "scatter",
                                             "alltoallv", "hypercube"};

int nccl_tests_op_of_name(const char *name)
{
    if (!name) return -1;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    /* "alltoallv" starts like "alltoall": look for the longer names first. */
    if (strstr(base, "alltoallv")) return -1;
    for (size_t i = 0; i < sizeof programs / sizeof *programs; i++) {
        size_t len = strlen(programs[i].name);
        if (!strncmp(base, programs[i].name, len) &&
            (base[len] == '\0' || base[len] == '_' || base[len] == '.' || base[len] == '-'))
            return (int)programs[i].op;
    }
    return -1;
}

static bool is_other_program(const char *name)
{
    for (size_t i = 0; i < sizeof other_programs / sizeof *other_programs; i++)
        if (strstr(name, other_programs[i])) return true;
    return false;
}

void nccl_tests_free(nccl_tests_file *f)
{
    for (int i = 0; i < f->nruns; i++) free(f->runs[i].obs);
    memset(f, 0, sizeof *f);
}

static bool add_obs(nccl_tests_run *r, double bytes, double time_s)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        fit_collective_obs *o = realloc(r->obs, (size_t)cap * sizeof *o);
        if (!o) return false;
        r->obs = o;
        r->cap = cap;
    }
    r->obs[r->n++] = (fit_collective_obs){bytes, time_s};
    return true;
}

/* The file's bytes, NUL-terminated, or NULL with err set: opened through input_file.h (regular
 * files only, at most MAX_FILE_BYTES), so a FIFO or /dev/zero is refused, not waited on. */
static char *slurp(const char *path, long *len, cm_status *st, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t n = 0;
    *st = input_file_read(path, "nccl-tests output", "give the log nccl-tests printed",
                          MAX_FILE_BYTES, &buf, &n, err, errlen);
    if (*st != CM_OK) return NULL;
    *len = (long)n;
    return buf;
}

static bool looks_json(const char *buf)
{
    while (isspace((unsigned char)*buf)) buf++;
    return *buf == '{' && strstr(buf, "\"results\"") != NULL;
}

static bool looks_text(const char *buf)
{
    return (strstr(buf, "# nThread") || strstr(buf, "# Collective test starting")) &&
           strstr(buf, "busbw");
}

bool nccl_tests_detect(const char *path)
{
    /* only a regular file can be nccl-tests output; anything else goes to the CSV reader, whose
     * checked opener names what it is (input_file.h) */
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return false;
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char head[8193];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    const char *p = head;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '{') return strstr(p, "\"nccl_version\"") || strstr(p, "\"results\"") ||
                          strstr(p, "_perf");
    return strstr(head, "# nThread") || strstr(head, "# Collective test starting") ||
           strstr(head, "nccl-tests version");
}

/* Distinct host names of one run. */
typedef struct {
    char name[NCCL_TESTS_MAX_HOSTS][128];
    int n;
} host_set;

static void host_add(host_set *h, const char *name, size_t len)
{
    if (len == 0) return;
    if (len > 127) len = 127;
    for (int i = 0; i < h->n; i++)
        if (strlen(h->name[i]) == len && !strncmp(h->name[i], name, len)) return;
    if (h->n == NCCL_TESTS_MAX_HOSTS) return;
    memcpy(h->name[h->n], name, len);
    h->name[h->n][len] = '\0';
    h->n++;
}

/* Text reader state for the test being read. */
typedef struct {
    nccl_tests_file *out;
    bool open;        /* a test has begun (a "# nThread" line) */
    int op;           /* its operation, -1 unknown or unsupported */
    char program[128];
    int time_col;     /* field index of the out-of-place time in a row */
    host_set hosts;
    nccl_tests_run cur;
} text_state;

static cm_status close_run(text_state *s, const char *path, char *err, size_t errlen)
{
    if (!s->open) return CM_OK;
    s->open = false;
    s->cur.hosts = s->hosts.n;
    if (s->cur.n == 0 || s->op < 0) {
        if (s->cur.n > 0) s->out->skipped_runs++;
        free(s->cur.obs);
        memset(&s->cur, 0, sizeof s->cur);
        return CM_OK;
    }
    if (s->out->nruns == NCCL_TESTS_MAX_RUNS) {
        free(s->cur.obs);
        memset(&s->cur, 0, sizeof s->cur);
        return cm_fail(err, errlen, CM_EPARSE,
                       "'%s' holds more than %d nccl-tests runs: split the log", path,
                       NCCL_TESTS_MAX_RUNS);
    }
    s->cur.op = (collective_op)s->op;
    s->out->runs[s->out->nruns++] = s->cur;
    memset(&s->cur, 0, sizeof s->cur);
    return CM_OK;
}

/* Split line (modified in place) into at most max whitespace-separated fields. */
static int fields_of(char *line, char **f, int max)
{
    int n = 0;
    char *save = NULL;
    for (char *t = strtok_r(line, " \t\r", &save); t && n < max; t = strtok_r(NULL, " \t\r", &save))
        f[n++] = t;
    return n;
}

static bool whole_number(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return false;
    return true;
}

static cm_status read_text(char *buf, const char *path, nccl_tests_file *out, char *err,
                           size_t errlen)
{
    text_state s;
    memset(&s, 0, sizeof s);
    s.out = out;
    s.op = -1;
    char pending[128] = "";
    /* The file's name stands in for the test's when the log has no "starting" line. */
    int file_op = nccl_tests_op_of_name(path);
    cm_status st = CM_OK;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line && st == CM_OK;
         line = strtok_r(NULL, "\n", &save)) {
        const char *start = "# Collective test starting:";
        if (!strncmp(line, start, strlen(start))) {
            st = close_run(&s, path, err, errlen);
            char *p = line + strlen(start);
            while (isspace((unsigned char)*p)) p++;
            snprintf(pending, sizeof pending, "%.*s", (int)strcspn(p, " \t\r"), p);
            continue;
        }
        if (!strncmp(line, "# nThread", 9)) {
            st = close_run(&s, path, err, errlen);
            s.open = true;
            memset(&s.hosts, 0, sizeof s.hosts);
            snprintf(s.program, sizeof s.program, "%s", pending[0] ? pending : path);
            s.op = pending[0] ? nccl_tests_op_of_name(pending) : file_op;
            if (s.op < 0 && !pending[0] && !is_other_program(path)) {
                st = cm_fail(err, errlen, CM_EPARSE,
                             "'%s': cannot tell which nccl-tests program wrote this log (no "
                             "'# Collective test starting' line): keep that line or name the "
                             "file after the program (all_reduce_perf.txt)",
                             path);
            }
            pending[0] = '\0';
            s.time_col = 5;
            continue;
        }
        if (!s.open) continue;
        const char *rank = strstr(line, "Rank");
        if (line[0] == '#' && rank && strstr(line, " on ")) {
            s.cur.ranks++;
            const char *h = strstr(line, " on ") + 4;
            while (*h == ' ') h++;
            host_add(&s.hosts, h, strcspn(h, " \t\r"));
            continue;
        }
        char copy[1024];
        snprintf(copy, sizeof copy, "%s", line);
        char *f[64];
        if (line[0] == '#') {
            /* The column header: "# size count type redop root time algbw busbw ...". */
            int n = fields_of(copy + 1, f, 64);
            if (n > 2 && !strcmp(f[0], "size"))
                for (int i = 0; i < n; i++)
                    if (!strcmp(f[i], "time") || !strcmp(f[i], "cputime")) {
                        s.time_col = i;
                        break;
                    }
            continue;
        }
        int n = fields_of(copy, f, 64);
        if (n <= s.time_col || !whole_number(f[0])) continue;
        char *end;
        double t_us = strtod(f[s.time_col], &end);
        double bytes = strtod(f[0], NULL);
        if (*end || !(t_us > 0) || !(bytes > 0)) continue;
        if (!add_obs(&s.cur, bytes, t_us * 1e-6))
            st = cm_fail(err, errlen, CM_ENOMEM, "out of memory reading '%s'", path);
    }
    if (st == CM_OK) st = close_run(&s, path, err, errlen);
    else {
        free(s.cur.obs);
        s.cur.obs = NULL;
    }
    return st;
}

static cm_status read_json(const char *path, nccl_tests_file *out, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        return cm_fail(err, errlen, CM_EPARSE,
                       "nccl-tests JSON '%s' is not valid JSON (line %d: %s)", path, jerr.line,
                       jerr.text);
    cm_status st = CM_OK;
    const json_t *args = json_object_get(root, "args");
    const char *program = json_string_value(json_array_get(args, 0));
    int op = program ? nccl_tests_op_of_name(program) : nccl_tests_op_of_name(path);
    const json_t *config = json_object_get(root, "config");
    const json_t *devices = json_object_get(root, "devices");
    /* In older -J files "devices" sits inside "config". */
    if (!devices && config) devices = json_object_get(config, "devices");
    json_int_t threads = json_integer_value(json_object_get(config, "nthreads"));
    json_int_t gpus = json_integer_value(json_object_get(config, "ngpus"));
    size_t procs = json_is_array(devices) ? json_array_size(devices) : 0;
    const json_t *results = json_object_get(root, "results");
    if (!json_is_array(results) || threads < 1 || gpus < 1) {
        st = cm_fail(err, errlen, CM_EPARSE,
                     "'%s' lacks nccl-tests' \"results\" list or \"config\" (nthreads, ngpus): "
                     "is it a file written by nccl-tests -J?",
                     path);
        goto done;
    }
    if (op < 0) {
        if (program && is_other_program(program)) out->skipped_runs++;
        else
            st = cm_fail(err, errlen, CM_EPARSE,
                         "'%s': \"args\"[0] ('%s') is not an nccl-tests program the cost model "
                         "prices (all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
                         "alltoall_perf, sendrecv_perf)",
                         path, program ? program : "missing");
        goto done;
    }
    nccl_tests_run r = {.op = (collective_op)op};
    r.ranks = (int)(threads * gpus * (json_int_t)(procs ? procs : 1));
    host_set hosts;
    memset(&hosts, 0, sizeof hosts);
    for (size_t i = 0; i < procs; i++) {
        const char *h = json_string_value(json_object_get(json_array_get(devices, i), "hostname"));
        if (h) host_add(&hosts, h, strlen(h));
    }
    r.hosts = hosts.n ? hosts.n : 1;
    size_t i;
    const json_t *row;
    json_array_foreach(results, i, row) {
        const json_t *size = json_object_get(row, "size");
        const json_t *timing = json_object_get(row, "out_of_place");
        if (!json_is_object(timing)) timing = json_object_get(row, "in_place");
        const json_t *t = json_object_get(timing, "time");
        if (!t) t = json_object_get(timing, "cpu_time");
        /* nccl-tests writes "nan" as a string: such rows are skipped. */
        if (!json_is_number(size) || !json_is_number(t)) continue;
        double bytes = json_number_value(size), t_us = json_number_value(t);
        if (!(bytes > 0) || !(t_us > 0)) continue;
        if (!add_obs(&r, bytes, t_us * 1e-6)) {
            free(r.obs);
            st = cm_fail(err, errlen, CM_ENOMEM, "out of memory reading '%s'", path);
            goto done;
        }
    }
    if (r.n == 0) {
        free(r.obs);
        goto done;
    }
    out->runs[out->nruns++] = r;
done:
    json_decref(root);
    return st;
}

cm_status nccl_tests_read(const char *path, nccl_tests_file *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    long len = 0;
    cm_status st;
    char *buf = slurp(path, &len, &st, err, errlen);
    if (!buf) return st;
    if (looks_json(buf)) {
        free(buf);
        st = read_json(path, out, err, errlen);
    } else if (looks_text(buf)) {
        st = read_text(buf, path, out, err, errlen);
        free(buf);
    } else {
        free(buf);
        return cm_fail(err, errlen, CM_EPARSE,
                       "'%s' is neither nccl-tests text output (a '# nThread' line and a "
                       "busbw table) nor an nccl-tests -J JSON file",
                       path);
    }
    if (st != CM_OK) {
        nccl_tests_free(out);
        return st;
    }
    if (out->nruns == 0) {
        int skipped = out->skipped_runs;
        nccl_tests_free(out);
        return cm_fail(err, errlen, CM_EPARSE,
                       "'%s' holds no result rows of all_reduce, all_gather, reduce_scatter, "
                       "alltoall or sendrecv (%d test(s) of other operations skipped)",
                       path, skipped);
    }
    return CM_OK;
}

bool nccl_tests_spans_domains(const nccl_tests_run *r, const system_spec *sys)
{
    int domain = system_domain_gpus(sys);
    if (r->ranks > domain) return true;
    if (domain > sys->gpus_per_node) return false;
    return r->hosts > 1;
}
