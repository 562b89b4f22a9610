/*
 * cmd_bench.c — `plan bench`: sweeps of models x GPU counts x systems x frameworks/sharding
 * that write one CSV row per (model, framework, layout, system) — the best layout of each
 * framework and sharding — plus `--compare A.csv B.csv` and `--preset guide`.
 *
 * Rows are flushed as they are written and SIGINT stops the sweep after the current row, so an
 * interrupted sweep keeps every row it finished. Progress goes to stderr.
 */
#include <csv.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_csv.h"
#include "cli.h"
#include "cli_number.h"
#include "exact_model.h"
#include "commands.h"
#include "layout_codec.h"
#include "sweep_file.h"
#include "measure_local.h"
#include "units.h"
#include "whole_file.h"
#include "precision.h"
#include "precision_choice.h"
#include "profile.h"
#include "search.h"
#ifdef PLAN_HAVE_BACKEND
#include "backend.h"
#endif

#ifndef PLAN_VERSION
#define PLAN_VERSION "unknown"
#endif

#define MAXLIST SWEEP_FILE_MAX_LIST

static volatile sig_atomic_t interrupted = 0;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct {
    char *items[MAXLIST];
    int n;
} list;

/* Strings the lists point into live until exit; freed there so leak checkers stay quiet. */
static char *owned[4 * MAXLIST + 8];
static int nowned;
static void free_owned(void)
{
    while (nowned > 0) free(owned[--nowned]);
}
static char *own(char *p)
{
    if (nowned == 0) atexit(free_owned);
    if (nowned < (int)(sizeof owned / sizeof *owned)) owned[nowned++] = p;
    return p;
}

/* Split "a,b,c" into list (strings point into a copy kept for the run). */
static int split(const char *flag, const char *s, list *out)
{
    char *copy = own(strdup(s));
    out->n = 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        if (out->n == MAXLIST) {
            fprintf(stderr, "plan: error: --%s takes at most %d values\n", flag, MAXLIST);
            return CLI_EXIT_USAGE;
        }
        out->items[out->n++] = tok;
    }
    if (out->n == 0) {
        fprintf(stderr, "plan: error: --%s needs a comma-separated list\n", flag);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

static int parse_gpus(const list *l, int *gpus)
{
    for (int i = 0; i < l->n; i++) {
        int rc = cli_parse_int("gpus", l->items[i], 1, CLI_MAX_GPUS, &gpus[i]);
        if (rc) return rc;
    }
    return 0;
}

/* ---- the sweep ---- */

/* --measure (issue 5): run the row's layout on the local GPUs (measure_local.h, the engine of
 * plan measure) and fill its measured columns; error_pct = (predicted - measured) / measured
 * (units.h), as plan measure reports it. A row that cannot run whole here (more GPUs than this machine has,
 * does not fit in memory, a layout the backend does not run) keeps them empty, said on stderr. */
static void measure_row(measure_local *ml, int steps, const model_spec *m, const system_spec *sys,
                        const training_spec *t, const estimate *e, bench_row *row)
{
    const layout *l = &e->layout;
    char name[300], lname[128], err[CM_ERRLEN];
    layout_short_name(l, lname, sizeof lname);
    snprintf(name, sizeof name, "%s %s on %d GPUs", m->name, lname, e->gpus);
    int local = measure_local_gpus(ml);
    if (!e->feasible) {
        fprintf(stderr, "bench: not measured: %s: predicted not to fit (%s)\n", name,
                e->infeasible_reason);
        return;
    }
    if (e->gpus > local) {
        fprintf(stderr, "bench: not measured: %s: needs %d GPUs, this machine has %d\n", name,
                e->gpus, local);
        return;
    }
    if (!measure_local_runs_whole(m, sys, t, l, local, err, sizeof err)) {
        fprintf(stderr, "bench: not measured: %s: %s\n", name, err);
        return;
    }
    measure_local_result r;
    fprintf(stderr, "bench: measuring %s\n", name);
    if (measure_local_run(ml, m, sys, t, l, steps, &r, err, sizeof err) != CM_OK || !r.whole) {
        fprintf(stderr, "bench: not measured: %s: %s\n", name,
                r.whole ? err : "only a slice of it ran");
        return;
    }
    row->measured_step_s = r.step_s;
    row->measured_memory_gib = r.peak_memory_bytes / UNITS_GIB_BYTES;
    row->error_pct = 100 * units_rel_error(row->step_s, r.step_s);
    fprintf(stderr, "bench:   measured %.4f s (predicted %.4f s, %+.1f%%), %.2f GiB (predicted "
                    "%.2f)\n",
            r.step_s, row->step_s, row->error_pct, row->measured_memory_gib, row->memory_gib);
}

typedef struct {
    list models, systems, frameworks;
    const char *calibration;   /* profile overlaid on every system of the sweep */
    int gpus[MAXLIST];
    int ngpus;
    training_spec training;
    /* --precision (issue 16): a named format pins it; by default (auto) each system's search
     * tries bf16 and the low-precision formats its GPU has (precision_choice.h) */
    bool precision_pinned;
    bool precision_any; /* --precision any: auto's formats and NVFP4 */
    layout_precision precision;
    /* --exact-model: a model's rows only for the frameworks whose own code builds it as it is
     * (exact_model.h); the others' rows are left out, one stderr line each */
    bool exact_model;
} sweep;

/* The search's precisions on sys for the sweep's --precision; a pinned format that none of
 * the frameworks can run there is an error (the line says why), as plan --precision says. */
static int sweep_precisions(const sweep *sw, const system_spec *sys, const bool *frameworks,
                            unsigned *mask)
{
    if (!sw->precision_pinned) {
        *mask = sw->precision_any ? precision_choice_any_mask(sys) : precision_choice_auto_mask(sys);
        return 0;
    }
    char err[CM_ERRLEN] = "";
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        layout probe = layout_default((layout_framework)fw);
        probe.precision = sw->precision;
        if (frameworks[fw] && precision_check(sys, &probe, err, sizeof err) == CM_OK) {
            *mask = 1u << sw->precision;
            return 0;
        }
    }
    return cli_error(err);
}

/* --exact-model: some framework of the sweep must build m as it is, else the model would have
 * no row: the error names the first framework asked and what it lacks. 0 otherwise. */
static int exact_model_some(const sweep *sw, const bool *frameworks, const model_spec *m)
{
    if (!sw->exact_model) return 0;
    int first = -1;
    for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
        if (!frameworks[fw]) continue;
        if (exact_model_builds((layout_framework)fw, m)) return 0;
        if (first < 0) first = fw;
    }
    char why[1024], msg[1400];
    exact_model_reason((layout_framework)first, m, why, sizeof why);
    snprintf(msg, sizeof msg,
             "--exact-model: no framework of --frameworks builds %s as it is (%s: %s); drop "
             "--exact-model, add fsdp2 to --frameworks (it runs the model's own code), or "
             "leave the model out",
             m->display, layout_framework_name((layout_framework)first), why);
    return cli_error(msg);
}

static int run_sweep(const sweep *sw, FILE *out, measure_local *ml)
{
    const char *dir = cli_data_dir();
    char err[CM_ERRLEN];
    search_result *r = search_result_new();
    long total = (long)sw->systems.n * sw->models.n * sw->ngpus, done = 0, rows = 0;
    /* Every name must resolve before the file gets its header: bad input writes nothing. */
    bool frameworks[LAYOUT_NFRAMEWORKS] = {false};
    for (int f = 0; f < sw->frameworks.n; f++) {
        layout_framework fw;
        if (layout_parse_framework(sw->frameworks.items[f], &fw)) frameworks[fw] = true;
    }
    for (int s = 0; s < sw->systems.n; s++) {
        system_spec sys;
        unsigned mask;
        int prc;
        if (profile_load_system(sw->systems.items[s], dir, &sys, err, sizeof err) != CM_OK ||
            (sw->calibration &&
             profile_overlay(sw->calibration, &sys, err, sizeof err) != CM_OK)) {
            search_result_free(r);
            return cli_error(err);
        }
        if ((prc = sweep_precisions(sw, &sys, frameworks, &mask))) {
            search_result_free(r);
            return prc;
        }
    }
    for (int mi = 0; mi < sw->models.n; mi++) {
        model_spec m;
        if (model_load(sw->models.items[mi], dir, &m, err, sizeof err) != CM_OK) {
            search_result_free(r);
            return cli_error(err);
        }
        int erc = exact_model_some(sw, frameworks, &m);
        if (erc) {
            search_result_free(r);
            return erc;
        }
    }
    bench_csv_write_header(out);
    for (int s = 0; s < sw->systems.n && !interrupted; s++) {
        system_spec sys;
        if (profile_load_system(sw->systems.items[s], dir, &sys, err, sizeof err) != CM_OK ||
            (sw->calibration &&
             profile_overlay(sw->calibration, &sys, err, sizeof err) != CM_OK)) {
            search_result_free(r);
            return cli_error(err);
        }
        for (int mi = 0; mi < sw->models.n && !interrupted; mi++) {
            model_spec m;
            if (model_load(sw->models.items[mi], dir, &m, err, sizeof err) != CM_OK) {
                search_result_free(r);
                return cli_error(err);
            }
            for (int g = 0; g < sw->ngpus && !interrupted; g++) {
                search_options o = {.gpus = sw->gpus[g], .keep = 1,
                                    .exact_model = sw->exact_model};
                for (int f = 0; f < sw->frameworks.n; f++) {
                    layout_framework fw;
                    if (layout_parse_framework(sw->frameworks.items[f], &fw)) /* checked when read */
                        o.frameworks[fw] = true;
                }
                int prc = sweep_precisions(sw, &sys, o.frameworks, &o.precisions);
                if (prc) {
                    search_result_free(r);
                    return prc;
                }
                if (search_run(&m, &sys, &sw->training, &o, r, err, sizeof err) != CM_OK) {
                    search_result_free(r);
                    return cli_error(err);
                }
                done++;
                fprintf(stderr, "[%ld/%ld] %s on %d x %s: %ld layouts, %ld fit\n", done, total,
                        m.name, o.gpus, sys.name, r->evaluated, r->feasible);
                for (int fw = 0; fw < LAYOUT_NFRAMEWORKS && s == 0 && g == 0; fw++) {
                    char why[1024];
                    if (r->excluded[fw] &&
                        exact_model_reason((layout_framework)fw, &m, why, sizeof why))
                        fprintf(stderr, "bench: %s: no rows for %s (--exact-model): %s\n",
                                m.name, layout_framework_name((layout_framework)fw), why);
                }
                for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
                    if (!o.frameworks[fw]) continue;
                    bool any = false;
                    for (int sh = 0; sh < 3; sh++) {
                        if (!r->has_best_sharding[fw][sh]) continue;
                        bench_row row;
                        bench_row_from_estimate(&row, &r->best_sharding[fw][sh], sys.name,
                                                PLAN_VERSION);
                        if (ml)
                            measure_row(ml, 3, &m, &sys, &sw->training,
                                        &r->best_sharding[fw][sh], &row);
                        bench_csv_write_row(out, &row);
                        rows++;
                        any = true;
                    }
                    if (!any && r->has_closest[fw]) { /* say it does not fit, with the closest */
                        bench_row row;
                        bench_row_from_estimate(&row, &r->closest[fw], sys.name, PLAN_VERSION);
                        bench_csv_write_row(out, &row);
                        rows++;
                    }
                }
            }
        }
    }
    search_result_free(r);
    if (interrupted) {
        fprintf(stderr, "plan bench: interrupted; the %ld rows written so far are complete\n",
                rows);
        return 130;
    }
    fprintf(stderr, "plan bench: %ld rows\n", rows);
    return 0;
}

/* A sweep file (sweep_file.h): its lists and numbers replace the flags'. */
static int load_sweep_file(const char *path, sweep *sw)
{
    sweep_file f;
    char err[CM_ERRLEN];
    if (sweep_file_read(path, &f, err, sizeof err) != CM_OK) {
        sweep_file_free(&f);
        return cli_error(err);
    }
    sweep_file_list *from[3] = {&f.models, &f.systems, &f.frameworks};
    list *to[3] = {&sw->models, &sw->systems, &sw->frameworks};
    for (int k = 0; k < 3; k++) {
        if (!from[k]->n) continue;
        to[k]->n = 0;
        for (int i = 0; i < from[k]->n; i++) { /* the strings live until exit (own) */
            to[k]->items[to[k]->n++] = own(from[k]->names[i]);
            from[k]->names[i] = NULL;
        }
        from[k]->n = 0;
    }
    if (f.ngpus) {
        sw->ngpus = f.ngpus;
        memcpy(sw->gpus, f.gpus, (size_t)f.ngpus * sizeof *f.gpus);
    }
    if (f.seq) sw->training.seq_len = f.seq;
    if (f.gbs) sw->training.global_batch = f.gbs;
    sweep_file_free(&f);
    return 0;
}

/* ---- --compare ---- */

static void layout_key(const bench_row *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s %dx%s %s/%s tp%d pp%d dp%d cp%d ep%d v%d mbs%d %s%s%s", r->model,
             r->gpus, r->system, r->framework, r->sharding, r->tp, r->pp, r->dp, r->cp, r->ep,
             r->vpp, r->mbs, r->recompute, strcmp(r->precision, "bf16") ? " " : "",
             strcmp(r->precision, "bf16") ? r->precision : "");
}

/* The join of --compare in O((n + m) log n) (issue 18: it was a scan of A per row of B): A's
 * rows sorted by layout, and by configuration (model, system, GPUs, framework, sharding, batch,
 * sequence), each ties broken by row index, so a binary search finds the first row of A that a
 * scan would have found. */
typedef struct {
    const bench_row *row;
    int index;
} row_ref;

static int cmp_config(const bench_row *a, const bench_row *b)
{
    int c;
    if ((c = strcmp(a->model, b->model)) || (c = strcmp(a->system, b->system))) return c;
    if (a->gpus != b->gpus) return a->gpus < b->gpus ? -1 : 1;
    if ((c = strcmp(a->framework, b->framework)) || (c = strcmp(a->sharding, b->sharding)))
        return c;
    if (a->gbs != b->gbs) return a->gbs < b->gbs ? -1 : 1;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    return 0;
}

static int cmp_layout(const bench_row *a, const bench_row *b)
{
    int c = cmp_config(a, b);
    if (c) return c;
    const int x[] = {a->tp, a->pp, a->dp, a->cp, a->ep, a->vpp, a->mbs};
    const int y[] = {b->tp, b->pp, b->dp, b->cp, b->ep, b->vpp, b->mbs};
    for (int i = 0; i < 7; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return (c = strcmp(a->recompute, b->recompute)) ? c : strcmp(a->precision, b->precision);
}

static int by_layout(const void *p, const void *q)
{
    const row_ref *a = p, *b = q;
    int c = cmp_layout(a->row, b->row);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

static int by_config(const void *p, const void *q)
{
    const row_ref *a = p, *b = q;
    int c = cmp_config(a->row, b->row);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

/* First position in sorted[0..n) whose row is not below key under cmp. */
static int lower_bound(const row_ref *sorted, int n, const bench_row *key,
                       int (*cmp)(const bench_row *, const bench_row *))
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (cmp(sorted[mid].row, key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The next position at or after pos in by-config order whose row is not matched yet: skip
 * pointers with path compression (skip[p] == p: unmatched; skip[n]: the end). */
static int next_unmatched(int *skip, int pos)
{
    int root = pos;
    while (skip[root] != root) root = skip[root];
    while (skip[pos] != root) {
        int up = skip[pos];
        skip[pos] = root;
        pos = up;
    }
    return root;
}

static int compare(const char *a_path, const char *b_path)
{
    char err[CM_ERRLEN];
    bench_row *a, *b;
    int na = bench_csv_read(a_path, &a, err, sizeof err);
    if (na < 0) return cli_error(err);
    int nb = bench_csv_read(b_path, &b, err, sizeof err);
    if (nb < 0) {
        free(a);
        return cli_error(err);
    }
    char key[256];
    int changed = 0, same = 0, added = 0, removed = 0;
    printf("Comparing %s (A, %d rows) with %s (B, %d rows), joined on the layout\n\n", a_path,
           na, b_path, nb);
    printf("%-70s %9s %9s %8s %9s %9s\n", "layout", "A step_s", "B step_s", "change", "A GiB",
           "B GiB");
    bool *matched = calloc(na > 0 ? na : 1, sizeof *matched);
    row_ref *by_lay = malloc((size_t)(na > 0 ? na : 1) * sizeof *by_lay);
    row_ref *by_cfg = malloc((size_t)(na > 0 ? na : 1) * sizeof *by_cfg);
    int *cfg_pos = malloc((size_t)(na > 0 ? na : 1) * sizeof *cfg_pos);
    int *skip = malloc((size_t)(na + 1) * sizeof *skip);
    if (!matched || !by_lay || !by_cfg || !cfg_pos || !skip) {
        free(matched), free(by_lay), free(by_cfg), free(cfg_pos), free(skip), free(a), free(b);
        return cli_error("out of memory joining the results files");
    }
    for (int i = 0; i < na; i++) by_lay[i] = by_cfg[i] = (row_ref){&a[i], i};
    qsort(by_lay, (size_t)na, sizeof *by_lay, by_layout);
    qsort(by_cfg, (size_t)na, sizeof *by_cfg, by_config);
    for (int p = 0; p < na; p++) cfg_pos[by_cfg[p].index] = p;
    for (int p = 0; p <= na; p++) skip[p] = p;
    for (int j = 0; j < nb; j++) {
        int i = na, p = lower_bound(by_lay, na, &b[j], cmp_layout);
        if (p < na && bench_row_same_layout(by_lay[p].row, &b[j])) i = by_lay[p].index;
        if (i == na) { /* same model, system, GPUs, framework and sharding: the best moved */
            p = next_unmatched(skip, lower_bound(by_cfg, na, &b[j], cmp_config));
            if (p < na && bench_row_same_config(by_cfg[p].row, &b[j])) i = by_cfg[p].index;
        }
        layout_key(&b[j], key, sizeof key);
        if (i == na) {
            printf("%-70s %9s %9.3f %8s %9s %9.1f  added\n", key, "-", b[j].step_s, "", "-",
                   b[j].memory_gib);
            added++;
            continue;
        }
        matched[i] = true;
        skip[cfg_pos[i]] = cfg_pos[i] + 1;
        bool relaid = !bench_row_same_layout(&a[i], &b[j]);
        double d = (b[j].step_s - a[i].step_s) / a[i].step_s;
        bool moved = relaid || fabs(d) > 1e-4 || fabs(b[j].memory_gib - a[i].memory_gib) > 0.05 ||
                     a[i].feasible != b[j].feasible;
        if (!moved) {
            same++;
            continue;
        }
        changed++;
        printf("%-70s %9.3f %9.3f %+7.1f%% %9.1f %9.1f%s\n", key, a[i].step_s, b[j].step_s,
               100 * d, a[i].memory_gib, b[j].memory_gib,
               a[i].feasible != b[j].feasible ? (b[j].feasible ? "  now fits" : "  no longer fits")
                                              : "");
        if (relaid) {
            layout_key(&a[i], key, sizeof key);
            printf("  (best layout changed; it was %s)\n", key);
        }
    }
    for (int i = 0; i < na; i++) {
        if (matched[i]) continue;
        layout_key(&a[i], key, sizeof key);
        printf("%-70s %9.3f %9s %8s %9.1f %9s  removed\n", key, a[i].step_s, "-", "",
               a[i].memory_gib, "-");
        removed++;
    }
    free(matched), free(by_lay), free(by_cfg), free(cfg_pos), free(skip);
    printf("\n%d changed, %d unchanged, %d added, %d removed\n", changed, same, added, removed);
    free(a);
    free(b);
    return 0;
}

/* ---- --preset guide ---- */

static void csv_cell(FILE *f, const char *s, bool last)
{
    csv_fwrite(f, s, strlen(s));
    fputc(last ? '\n' : ',', f);
}

static int guide(FILE *out, const sweep *sw, const char *system)
{
    const training_spec *t = &sw->training;
    /* The FSDP2-vs-Megatron guide's table: dense 3B, 7B, 30B on 8-32 H100 under both
     * frameworks; Mixtral-8x7B and DeepSeek-V3 with Megatron (FSDP2 has no expert
     * parallelism; its best plan is shown where one fits). */
    static const struct { const char *model; int gpus[3]; } cases[] = {
        {"3b", {8, 16, 32}}, {"7b", {8, 16, 32}}, {"30b", {8, 16, 32}},
        {"mixtral-8x7b", {16, 32, 64}}, {"deepseek-v3", {256, 512, 1024}},
    };
    const char *dir = cli_data_dir();
    char err[CM_ERRLEN];
    system_spec sys;
    /* --system picks the cluster (h100 by default, as the guide): any preset, e.g.
     * gb200-nvl72, or a calibration profile. */
    if (profile_load_system(system, dir, &sys, err, sizeof err) != CM_OK) return cli_error(err);
    const bool all[LAYOUT_NFRAMEWORKS] = {true, true, true};
    unsigned mask;
    int prc = sweep_precisions(sw, &sys, all, &mask);
    if (prc) return prc;
    search_result *r = search_result_new();
    const char *hdr[] = {"Model", "Strategy", "GPUs", "Time/Step (s)",
                         "Throughput relative to FSDP2", "Layout", "Memory (GiB)", NULL};
    for (int i = 0; hdr[i]; i++) csv_cell(out, hdr[i], !hdr[i + 1]);
    printf("%-14s %-10s %5s %12s %12s  %s\n", "Model", "Strategy", "GPUs", "Time/Step", "vs FSDP2",
           "layout");
    for (size_t c = 0; c < sizeof cases / sizeof *cases && !interrupted; c++) {
        model_spec m;
        if (model_load(cases[c].model, dir, &m, err, sizeof err) != CM_OK) {
            search_result_free(r);
            return cli_error(err);
        }
        for (int g = 0; g < 3 && !interrupted; g++) {
            /* issue 19: torchtitan beside the guide's two */
            search_options o = {.gpus = cases[c].gpus[g], .keep = 1,
                                .frameworks = {true, true, true}, .precisions = mask,
                                .exact_model = sw->exact_model};
            if (search_run(&m, &sys, t, &o, r, err, sizeof err) != CM_OK) {
                search_result_free(r);
                return cli_error(err);
            }
            fprintf(stderr, "guide: %s on %d GPUs\n", m.name, o.gpus);
            for (int fw = 0; fw < LAYOUT_NFRAMEWORKS; fw++) {
                const char *strategy = fw == FRAMEWORK_FSDP2        ? "FSDP2"
                                       : fw == FRAMEWORK_TORCHTITAN ? "torchtitan"
                                                                    : "Megatron";
                char gpus[16], step[32] = "does not fit", rel[32] = "n/a", lay[128] = "",
                                mem[32] = "";
                snprintf(gpus, sizeof gpus, "%d", o.gpus);
                if (r->has_best[fw]) {
                    const estimate *e = &r->best[fw];
                    const layout *l = &e->layout;
                    snprintf(step, sizeof step, "%.2f", e->time.step_s);
                    if (r->has_best[FRAMEWORK_FSDP2])
                        snprintf(rel, sizeof rel, "%.2f",
                                 r->best[FRAMEWORK_FSDP2].time.step_s / e->time.step_s);
                    char sizes[96];
                    layout_short_sizes(l, true, sizes, sizeof sizes);
                    snprintf(lay, sizeof lay, "%s %s %s%s%s", sizes,
                             layout_sharding_name(l->sharding),
                             layout_recompute_name(l->recompute),
                             precision_is_low(l) ? " " : "",
                             precision_is_low(l) ? precision_label(l) : "");
                    snprintf(mem, sizeof mem, "%.1f", e->memory.total_bytes / UNITS_GIB_BYTES);
                }
                const char *cells[] = {m.display, strategy, gpus, step, rel, lay, mem};
                for (int i = 0; i < 7; i++) csv_cell(out, cells[i], i == 6);
                printf("%-14s %-10s %5s %12s %12s  %s\n", m.display, strategy, gpus, step, rel, lay);
            }
        }
    }
    fflush(out);
    search_result_free(r);
    return interrupted ? 130 : 0;
}

static void usage(void)
{
    printf("usage: plan bench --models 3b,7b,30b --gpus 8,32,64 [--systems h100,h200]\n"
           "                  [--frameworks fsdp2,megatron,torchtitan] [--seq N] [--gbs N] [--measure]\n"
           "                  [--precision auto|bf16|fp8|mxfp8|nvfp4] [--exact-model] [-o results.csv]\n"
           "       plan bench --sweep sweep.json [-o results.csv]\n"
           "       plan bench --compare A.csv B.csv\n"
           "       plan bench --preset guide [--system h100] [-o guide.csv]\n"
           "One CSV row per (model, framework, sharding, system, GPU count): the best layout of\n"
           "each; predicted columns always, measured ones with --measure (needs the CUDA\n"
           "backend): rows whose layout runs whole on the local GPUs are run (warm-up + 3\n"
           "steps each, so use a small --gbs, e.g. 8), the others keep the measured columns\n"
           "empty and say why on stderr. A sweep file is JSON with any of: models, gpus,\n"
           "systems, frameworks, seq, gbs. --precision auto (the default) searches bf16 and\n"
           "the 8-bit formats each system's GPU supports (FP8 on Hopper, also MXFP8 on\n"
           "Blackwell, bf16 alone without FP8), as plan does; any adds NVFP4 where the GPU\n"
           "has it; the column precision says which each row runs; a format pins it\n"
           "(--precision bf16: the bf16 sweep). The guide preset takes it too.\n"
           "--exact-model: a model's rows only for the frameworks whose own model code builds\n"
           "it as it is (FSDP2 always; Megatron-LM and torchtitan unless they lack one of its\n"
           "forms); each framework left out is one stderr line per model, no CSV row (the\n"
           "columns are unchanged); a model that no framework asked builds is an error.\n");
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"models", required_argument, NULL, 'm'}, {"model", required_argument, NULL, 'm'},
        {"gpus", required_argument, NULL, 'g'},   {"systems", required_argument, NULL, 's'},
        {"system", required_argument, NULL, 's'}, {"frameworks", required_argument, NULL, 'f'},
        {"seq", required_argument, NULL, 'q'},    {"gbs", required_argument, NULL, 'b'},
        {"sweep", required_argument, NULL, 'w'},  {"compare", no_argument, NULL, 'c'},
        {"preset", required_argument, NULL, 'p'}, {"measure", no_argument, NULL, 'M'},
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
        {"calibration", required_argument, NULL, 'C'},
        {"precision", required_argument, NULL, 'P'},
        {"exact-model", no_argument, NULL, 'X'},
        {NULL, 0, NULL, 0},
    };
    sweep sw;
    memset(&sw, 0, sizeof sw);
    sw.training = training_default();
    split("systems", "h100", &sw.systems);
    split("frameworks", "fsdp2,megatron,torchtitan", &sw.frameworks);
    const char *out_path = NULL, *sweep_path = NULL, *preset = NULL;
    bool do_compare = false, have_models = false, have_gpus = false, measure = false;
    list gl;
    int c, rc = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'm': rc = split("models", optarg, &sw.models); have_models = true; break;
        case 'g':
            rc = split("gpus", optarg, &gl);
            if (!rc) rc = parse_gpus(&gl, sw.gpus);
            sw.ngpus = gl.n;
            have_gpus = true;
            break;
        case 's': rc = split("systems", optarg, &sw.systems); break;
        case 'f':
            rc = split("frameworks", optarg, &sw.frameworks);
            for (int i = 0; !rc && i < sw.frameworks.n; i++) {
                layout_framework fw;
                if (!layout_parse_framework(sw.frameworks.items[i], &fw))
                    rc = cli_error("--frameworks takes fsdp2, megatron and/or torchtitan");
            }
            break;
        case 'q': rc = cli_parse_int("seq", optarg, 1, CLI_MAX_SEQ, &sw.training.seq_len); break;
        case 'b': rc = cli_parse_int("gbs", optarg, 1, CLI_MAX_GBS, &sw.training.global_batch); break;
        case 'w': sweep_path = optarg; break;
        case 'c': do_compare = true; break;
        case 'p': preset = optarg; break;
        case 'M': measure = true; break;
        case 'X': sw.exact_model = true; break;
        case 'o': out_path = optarg; break;
        case 'C': sw.calibration = optarg; break;
        case 'P':
            sw.precision_pinned = strcmp(optarg, "auto") && strcmp(optarg, "any");
            sw.precision_any = !strcmp(optarg, "any");
            if (sw.precision_pinned && !precision_parse(optarg, &sw.precision))
                rc = cli_error("--precision must be auto, any, bf16, fp8, mxfp8 or nvfp4 (auto, "
                               "the default: bf16 and the 8-bit formats each system's GPU "
                               "supports; any: also NVFP4)");
            break;
        case 'h': usage(); return 0;
        case ':': rc = cli_error("an option of plan bench needs a value (see plan bench --help)"); break;
        default: {
            char msg[200];
            snprintf(msg, sizeof msg, "unknown option '%s' for plan bench: see plan bench --help",
                     argv[optind - 1]);
            rc = cli_error(msg);
        }
        }
        if (rc) return rc;
    }
    if (do_compare) {
        if (argc - optind != 2)
            return cli_error("--compare needs two results files: plan bench --compare A.csv B.csv");
        return compare(argv[optind], argv[optind + 1]);
    }
    if (optind < argc) {
        char msg[200];
        snprintf(msg, sizeof msg, "unexpected argument '%s' for plan bench", argv[optind]);
        return cli_error(msg);
    }
    if (sweep_path && (rc = load_sweep_file(sweep_path, &sw))) return rc;
    measure_local *ml = NULL;
    if (measure && (preset || !sw.models.n || !sw.ngpus))
        return cli_error("--measure measures the rows of a sweep: give --models and --gpus (or "
                         "--sweep FILE), with a small --gbs");
    char err[CM_ERRLEN];
    if (training_check(&sw.training, err, sizeof err) != CM_OK) return cli_error(err);

    if (measure) {
        char merr[CM_ERRLEN];
        measure_local_failure why;
        if (measure_local_open(&ml, 0, &why, merr, sizeof merr) != CM_OK) {
            if (why == MEASURE_LOCAL_NO_BACKEND)
                return cli_error("--measure needs the CUDA backend (plan measure); this build "
                                 "has none: rebuild on a machine with CUDA, cuBLAS and NCCL");
            if (why == MEASURE_LOCAL_NOT_FIRST) return 0;
            fprintf(stderr, "plan: error: --measure: %s\n", merr);
#ifdef PLAN_HAVE_BACKEND
            if (why == MEASURE_LOCAL_FAILED_WORLD) bk_world_abort(1);
#endif
            return why == MEASURE_LOCAL_NO_GPU ? CLI_EXIT_NO_GPU : 1;
        }
        fprintf(stderr, "bench: measuring rows that fit on the %d local GPUs (%s)\n",
                measure_local_gpus(ml), measure_local_device(ml));
    }
    /* Written whole (whole_file.h): the rows go to a temporary file that replaces -o only when
     * the sweep ends (or is interrupted after a complete row); bad arguments, a failed sweep or
     * a full disk leave an existing results file as it was. */
    whole_file wf;
    if (whole_file_open(&wf, out_path ? out_path : "-", err, sizeof err) != CM_OK) {
        measure_local_close(ml);
        return cli_error(err);
    }
    FILE *out = wf.f;
    signal(SIGINT, on_sigint);
    if (preset) {
        if (strcmp(preset, "guide")) {
            whole_file_abort(&wf);
            measure_local_close(ml);
            return cli_error("unknown --preset: the only preset is 'guide'");
        }
        rc = guide(out, &sw, sw.systems.n ? sw.systems.items[0] : "h100");
    } else {
        if (!sw.models.n || !sw.ngpus) {
            whole_file_abort(&wf);
            measure_local_close(ml);
            return cli_error(have_models || have_gpus || sweep_path
                                 ? "a sweep needs both models and GPU counts (--models, --gpus)"
                                 : "nothing to run: give --models and --gpus, --sweep FILE, "
                                   "--compare A B or --preset guide");
        }
        rc = run_sweep(&sw, out, ml);
    }
    measure_local_close(ml);
    if (rc != 0 && rc != 130) { /* 130: interrupted, the rows written are complete */
        whole_file_abort(&wf);
        return rc;
    }
    if (whole_file_commit(&wf, err, sizeof err) != CM_OK) return cli_error(err);
    return rc;
}
