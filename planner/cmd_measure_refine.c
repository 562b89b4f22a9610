/*
 * cmd_measure_refine.c — `plan measure --refine` (issue 4): search the plans that fit the local
 * GPUs, measure the best k of them with the backend (planner/measure_local.h), fit the step-level
 * terms the microbenchmarks cannot see (costmodel/refine.h) and show predicted-before,
 * predicted-after, held-out and measured step times side by side; write the refined profile.
 *
 * Which plans: the search's ranking (closed form, no simulator re-rank), restricted to layouts
 * the backend runs whole on these GPUs. `--pick spread` (default) takes, in rank order, the best
 * plan of each (framework, tp), then of each (framework, tp, sharding), then of each (framework,
 * tp, cp, sharding, mbs), then the rest: the top plans of one search are often near-copies of one
 * layout, which can neither separate the step terms nor test them; `--pick top` takes the plain
 * top k. A plan that fails to run (out of memory) is reported and the next one is taken.
 *
 * The honest figure: with `--holdout loo` (default) every plan is also predicted from a fit to
 * the others (leave-one-out); with `--holdout N`, N plans spread over the ranking are kept out of
 * the fit entirely and the profile is the fit to the rest. `--from FILE` refits the plans of an
 * earlier run (its --format json output or its profile) without a GPU.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "measure_local.h"
#include "profile.h"
#include "refine.h"
#include "search.h"

#define GIB 1073741824.0

typedef struct {
    int k;
    int holdout;      /* 0: leave-one-out */
    bool pick_top;
    const char *from;
    const char *out;
    const char *record; /* rewritten after every measured plan */
    unsigned terms;
    int steps, local;
    bool dry; /* list the plans that would be measured, without a GPU */
} refine_opts;

typedef struct {
    refine_obs obs;
    double spread, mem_meas, mem_pred;
    double before, before_sd, after, after_sd, held, held_sd;
    bool in_fit;
    int rank; /* position in the search ranking (1-based), 0 when read from a file */
} plan_row;

static void usage(void)
{
    printf("usage: plan measure --refine --model M [--system S] [--calibration P] [--gbs N]\n"
           "                    [--seq N] [--gpus N] [--framework F] [options]\n"
           "Measures the best plans for the local GPUs, fits the step-level terms (compute\n"
           "rate, exposed-communication speed, DP/FSDP overlap efficiency, per-layer fixed\n"
           "cost, FSDP2's compute rate) and shows predicted-before, predicted-after and\n"
           "measured step times.\n"
           "  --k N             plans to measure (default 6)\n"
           "  --pick spread|top spread over frameworks, tp and sharding (default) or plain top k\n"
           "  --holdout loo|N   leave-one-out (default) or keep N plans out of the fit\n"
           "  --terms LIST      terms to fit (default all): compute_scale, comm_scale,\n"
           "                    overlap_efficiency, layer_overhead_s, fsdp2_compute_scale\n"
           "  --from FILE       refit the plans of an earlier --format json output or profile\n"
           "  -o PROFILE.json   write the refined profile (use as --calibration PROFILE.json)\n"
           "  --record FILE     write the measurements after every plan (for --from: a run cut\n"
           "                    short keeps what it measured)\n"
           "  --dry-run         list the plans it would measure (no GPU; needs --gpus)\n"
           "  --steps N, --local-gpus N, --format human|json   as plan measure\n"
           "Use a small --gbs (e.g. 8): every plan runs warm-up + --steps steps.\n"
           "Exit status: 0 done, 2 bad input, 3 no GPU, 1 other errors.\n");
}

static int parse_terms(const char *s, unsigned *out)
{
    *out = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int k;
        for (k = 0; k < STEP_NTERMS && strcmp(tok, system_step_name(k)); k++) {}
        if (k == STEP_NTERMS) return -1;
        *out |= 1u << k;
    }
    return *out ? 0 : -1;
}

/* Pull --refine's own options out of argv; the rest goes to cli_parse. */
static int take_own(int *argc, char **argv, refine_opts *o)
{
    int j = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--refine")) continue;
        if (!strcmp(a, "--dry-run")) {
            o->dry = true;
            continue;
        }
        static const char *const names[] = {"--k", "--plans", "--holdout", "--pick", "--from",
                                            "-o", "--output", "--terms", "--steps",
                                            "--local-gpus", "--record", NULL};
        int w = -1;
        size_t len = 0;
        for (int n = 0; names[n]; n++) {
            len = strlen(names[n]);
            if (!strncmp(a, names[n], len) && (a[len] == '\0' || a[len] == '=')) {
                w = n;
                break;
            }
        }
        if (w < 0) {
            argv[j++] = argv[i];
            continue;
        }
        const char *v = a[len] == '=' ? a + len + 1 : (i + 1 < *argc ? argv[++i] : NULL);
        char msg[300];
        if (!v) {
            snprintf(msg, sizeof msg, "%s needs a value (see plan measure --refine --help)",
                     names[w]);
            return cli_error(msg);
        }
        char *end;
        long x = strtol(v, &end, 10);
        bool num_ok = *v && !*end;
        switch (w) {
        case 0:
        case 1:
            if (!num_ok || x < 2 || x > REFINE_MAX_PLANS) {
                snprintf(msg, sizeof msg, "--k needs an integer between 2 and %d, got '%s'",
                         REFINE_MAX_PLANS, v);
                return cli_error(msg);
            }
            o->k = (int)x;
            break;
        case 2:
            if (!strcmp(v, "loo")) {
                o->holdout = 0;
            } else if (num_ok && x >= 1 && x < REFINE_MAX_PLANS) {
                o->holdout = (int)x;
            } else {
                snprintf(msg, sizeof msg,
                         "--holdout takes loo (leave-one-out) or a number of plans, got '%s'", v);
                return cli_error(msg);
            }
            break;
        case 3:
            if (strcmp(v, "spread") && strcmp(v, "top")) {
                snprintf(msg, sizeof msg, "--pick takes spread or top, got '%s'", v);
                return cli_error(msg);
            }
            o->pick_top = !strcmp(v, "top");
            break;
        case 4: o->from = v; break;
        case 5:
        case 6: o->out = v; break;
        case 7:
            if (parse_terms(v, &o->terms)) {
                snprintf(msg, sizeof msg,
                         "--terms takes a comma-separated list of compute_scale, comm_scale, "
                         "overlap_efficiency, layer_overhead_s, fsdp2_compute_scale; got '%s'",
                         v);
                return cli_error(msg);
            }
            break;
        case 10: o->record = v; break;
        default:
            if (!num_ok || x < 1 || x > 1024) {
                snprintf(msg, sizeof msg, "%s needs an integer between 1 and 1024, got '%s'",
                         names[w], v);
                return cli_error(msg);
            }
            if (w == 8)
                o->steps = (int)x;
            else
                o->local = (int)x;
        }
    }
    *argc = j;
    return 0;
}

/* ---- layouts as JSON (the measurement records) ---- */

static json_t *layout_to_json(const layout *l)
{
    return json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:s, s:b, s:i, s:s, "
                     "s:i, s:b}",
                     "framework", layout_framework_name(l->framework), "tp", l->tp, "pp", l->pp,
                     "dp", l->dp, "cp", l->cp, "ep", l->ep, "etp", l->etp, "vpp", l->vpp, "mbs",
                     l->mbs, "sp", l->sp, "sharding", layout_sharding_name(l->sharding),
                     "reshard_after_forward", l->reshard_after_forward, "shard_size",
                     l->shard_size, "recompute", layout_recompute_name(l->recompute),
                     "recompute_layers", l->recompute_layers, "offload", l->offload);
}

static int layout_from_json(const json_t *j, int idx, layout *l, char *msg, size_t len)
{
    const char *fw = json_string_value(json_object_get(j, "framework"));
    layout_framework f;
    if (!json_is_object(j) || !fw || !layout_parse_framework(fw, &f)) {
        snprintf(msg, len, "plans[%d].layout needs \"framework\": fsdp2 or megatron", idx);
        return -1;
    }
    *l = layout_default(f);
    struct { const char *key; int *dst; } ints[] = {
        {"tp", &l->tp}, {"pp", &l->pp}, {"dp", &l->dp}, {"cp", &l->cp}, {"ep", &l->ep},
        {"etp", &l->etp}, {"vpp", &l->vpp}, {"mbs", &l->mbs}, {"shard_size", &l->shard_size},
        {"recompute_layers", &l->recompute_layers},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        const json_t *v = json_object_get(j, ints[i].key);
        if (!v) continue;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1 << 24) {
            snprintf(msg, len, "plans[%d].layout.%s must be a non-negative integer", idx,
                     ints[i].key);
            return -1;
        }
        *ints[i].dst = (int)json_integer_value(v);
    }
    struct { const char *key; bool *dst; } bools[] = {
        {"sp", &l->sp}, {"reshard_after_forward", &l->reshard_after_forward},
        {"offload", &l->offload},
    };
    for (size_t i = 0; i < sizeof bools / sizeof *bools; i++) {
        const json_t *v = json_object_get(j, bools[i].key);
        if (!v) continue;
        if (!json_is_boolean(v)) {
            snprintf(msg, len, "plans[%d].layout.%s must be true or false", idx, bools[i].key);
            return -1;
        }
        *bools[i].dst = json_is_true(v);
    }
    const char *sh = json_string_value(json_object_get(j, "sharding"));
    const char *rc = json_string_value(json_object_get(j, "recompute"));
    if ((json_object_get(j, "sharding") && (!sh || !layout_parse_sharding(sh, &l->sharding))) ||
        (json_object_get(j, "recompute") && (!rc || !layout_parse_recompute(rc, &l->recompute)))) {
        snprintf(msg, len, "plans[%d].layout: sharding must be ddp, distopt or fsdp and recompute "
                           "none, selective or full",
                 idx);
        return -1;
    }
    return 0;
}

static void short_name(const layout *l, char *buf, size_t len)
{
    snprintf(buf, len, "%s tp%d pp%d dp%d cp%d mbs%d %s%s%s%s",
             l->framework == FRAMEWORK_FSDP2 ? "fsdp2" : "megatron", l->tp, l->pp, l->dp, l->cp,
             l->mbs, layout_sharding_name(l->sharding),
             l->sharding == SHARDING_FSDP && !l->reshard_after_forward ? "-nr" : "",
             l->recompute == RECOMPUTE_NONE ? "" : " rc-",
             l->recompute == RECOMPUTE_NONE ? "" : layout_recompute_name(l->recompute));
}

static bool same_layout(const layout *a, const layout *b)
{
    return a->framework == b->framework && a->tp == b->tp && a->pp == b->pp && a->dp == b->dp &&
           a->cp == b->cp && a->ep == b->ep && a->etp == b->etp && a->vpp == b->vpp &&
           a->mbs == b->mbs && a->sp == b->sp && a->sharding == b->sharding &&
           a->reshard_after_forward == b->reshard_after_forward &&
           a->shard_size == b->shard_size && a->recompute == b->recompute &&
           a->recompute_layers == b->recompute_layers && a->offload == b->offload;
}

/* ---- measurement records (what --from reads; --record writes them as they come) ---- */

static json_t *plan_records(const plan_row *rows, int n)
{
    json_t *plist = json_array();
    for (int i = 0; i < n; i++) {
        const plan_row *r = &rows[i];
        char name[128];
        short_name(&r->obs.layout, name, sizeof name);
        json_t *p = json_pack("{s:s, s:o, s:i, s:f}", "name", name, "layout",
                              layout_to_json(&r->obs.layout), "rank", r->rank, "measured_step_s",
                              r->obs.measured_step_s);
        if (r->spread > 0) json_object_set_new(p, "measured_spread", json_real(r->spread));
        if (r->mem_meas > 0)
            json_object_set_new(p, "measured_memory_bytes", json_real(r->mem_meas));
        if (r->mem_pred > 0)
            json_object_set_new(p, "predicted_memory_bytes", json_real(r->mem_pred));
        json_array_append_new(plist, p);
    }
    return plist;
}

/* The record of a run; keeps its own reference to plist. */
static json_t *record_json(const cli_options *co, const model_spec *m, int gpus,
                           const char *device, json_t *plist)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:O}", "model", co->model,
                     "model_name", m->name, "system", co->system, "seq", co->training.seq_len,
                     "gbs", co->training.global_batch, "gpus", gpus, "device",
                     device[0] ? device : "(from file)", "plans", plist);
}

/* ---- reading an earlier run ---- */

static int read_from(const char *path, const cli_options *co, const model_spec *m,
                     plan_row *rows, int *n)
{
    char msg[CM_ERRLEN + 256];
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        FILE *f = fopen(path, "r");
        if (f) fclose(f);
        snprintf(msg, sizeof msg,
                 f ? "--from '%s' is not valid JSON (line %d: %s)" : "cannot read --from '%s'",
                 path, je.line, je.text);
        return cli_error(msg);
    }
    const json_t *src = json_object_get(root, "refine") ? json_object_get(root, "refine") : root;
    const json_t *plans = json_object_get(src, "plans");
    const char *model = json_string_value(json_object_get(src, "model"));
    const char *model_name = json_string_value(json_object_get(src, "model_name"));
    const json_t *seq = json_object_get(src, "seq"), *gbs = json_object_get(src, "gbs");
    int rc = 0;
    if (!json_is_array(plans) || json_array_size(plans) == 0) {
        snprintf(msg, sizeof msg,
                 "--from '%s' holds no \"plans\" list: give the --format json output of plan "
                 "measure --refine, or a profile it wrote",
                 path);
        rc = cli_error(msg);
    } else if ((model || model_name) && !(model && !strcmp(model, co->model)) &&
               !(model_name && !strcmp(model_name, m->name))) {
        snprintf(msg, sizeof msg, "--from '%s' was measured with --model %s: pass the same", path,
                 model ? model : model_name);
        rc = cli_error(msg);
    } else if ((seq && json_integer_value(seq) != co->training.seq_len) ||
               (gbs && json_integer_value(gbs) != co->training.global_batch)) {
        snprintf(msg, sizeof msg,
                 "--from '%s' was measured with --seq %lld --gbs %lld: pass the same", path,
                 (long long)json_integer_value(seq), (long long)json_integer_value(gbs));
        rc = cli_error(msg);
    } else if (json_array_size(plans) > REFINE_MAX_PLANS) {
        snprintf(msg, sizeof msg, "--from '%s': at most %d plans", path, REFINE_MAX_PLANS);
        rc = cli_error(msg);
    }
    for (size_t i = 0; !rc && i < json_array_size(plans); i++) {
        const json_t *p = json_array_get(plans, i);
        plan_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        const json_t *t = json_object_get(p, "measured_step_s");
        if (layout_from_json(json_object_get(p, "layout"), (int)i, &r->obs.layout, msg,
                             sizeof msg)) {
            rc = cli_error(msg);
            break;
        }
        if (!json_is_number(t) || !(json_number_value(t) > 0)) {
            snprintf(msg, sizeof msg, "--from '%s': plans[%zu].measured_step_s must be a positive "
                                      "number of seconds",
                     path, i);
            rc = cli_error(msg);
            break;
        }
        r->obs.measured_step_s = json_number_value(t);
        r->spread = json_number_value(json_object_get(p, "measured_spread"));
        r->mem_meas = json_number_value(json_object_get(p, "measured_memory_bytes"));
        r->rank = (int)json_integer_value(json_object_get(p, "rank"));
        *n = (int)i + 1;
    }
    json_decref(root);
    return rc;
}

/* ---- choosing and measuring plans ---- */

/* Every feasible layout the search evaluated (search_options.visit), ranked afterwards: the
 * ranking the search keeps (SEARCH_KEEP_MAX) can miss whole classes (tp 4, FSDP2). */
typedef struct {
    estimate *e;
    int n, cap;
} collected;

static void collect(const estimate *e, void *arg)
{
    collected *c = arg;
    if (!e->feasible) return;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 1024;
        estimate *p = realloc(c->e, (size_t)cap * sizeof *p);
        if (!p) return;
        c->e = p;
        c->cap = cap;
    }
    c->e[c->n++] = *e;
}

static int cmp_estimate(const void *a, const void *b)
{
    const estimate *x = a, *y = b;
    return search_better(x, y) ? -1 : search_better(y, x) ? 1 : 0;
}

static bool class_seen(const layout *sel, int nsel, const layout *l, int level)
{
    for (int i = 0; i < nsel; i++) {
        const layout *s = &sel[i];
        bool same = s->framework == l->framework && s->tp == l->tp;
        if (level >= 2) same &= s->sharding == l->sharding;
        if (level >= 3) same &= s->cp == l->cp && s->mbs == l->mbs;
        if (level >= 4) same &= same_layout(s, l);
        if (same) return true;
    }
    return false;
}

static int measure_plans(const refine_opts *ro, const cli_options *co, const model_spec *m,
                         const system_spec *sys, plan_row *rows, int *n, int *gpus_out,
                         char *device, size_t devlen)
{
    char err[CM_ERRLEN];
    measure_local *ml = NULL;
    int local;
    if (ro->dry) {
        local = ro->local ? ro->local : co->gpus;
        if (!local)
            return cli_error("--refine --dry-run needs --gpus N (or --local-gpus N): the GPUs "
                             "the plans would run on");
    } else {
        int rc = measure_local_open(&ml, ro->local, err, sizeof err);
        if (rc) {
            fprintf(stderr, "plan: error: %s\n", err);
            return rc;
        }
        local = measure_local_gpus(ml);
        snprintf(device, devlen, "%s", measure_local_device(ml));
    }
    int gpus = co->gpus ? co->gpus : local;
    if (gpus > local) {
        measure_local_close(ml);
        snprintf(err, sizeof err,
                 "--gpus %d is more than the %d local GPUs: --refine measures plans that run "
                 "whole here",
                 gpus, local);
        return cli_error(err);
    }
    *gpus_out = gpus;
    collected all = {0};
    search_options so = {.gpus = gpus, .keep = 1, .simulate = 0, .visit = collect,
                         .visit_arg = &all};
    so.frameworks[FRAMEWORK_FSDP2] = !co->framework_given || co->layout.framework == FRAMEWORK_FSDP2;
    so.frameworks[FRAMEWORK_MEGATRON] =
        !co->framework_given || co->layout.framework == FRAMEWORK_MEGATRON;
    search_result *sr = search_result_new();
    cm_status sst = search_run(m, sys, &co->training, &so, sr, err, sizeof err);
    search_result_free(sr);
    if (sst != CM_OK) {
        free(all.e);
        measure_local_close(ml);
        return cli_error(err);
    }
    qsort(all.e, (size_t)all.n, sizeof *all.e, cmp_estimate);
    /* Candidates: in rank order, those the backend runs whole here. */
    layout *cand = malloc((size_t)(all.n + 1) * sizeof *cand);
    int *cand_rank = malloc((size_t)(all.n + 1) * sizeof *cand_rank);
    int nc = 0, skipped = 0;
    for (int i = 0; i < all.n; i++) {
        const estimate *e = &all.e[i];
        bool dup = false;
        for (int j = 0; j < nc && !dup; j++) dup = same_layout(&cand[j], &e->layout);
        if (dup) continue;
        /* The CUDA context, cuBLAS and NCCL take ~5 GiB the estimate's reserve does not all
         * cover (bench/BACKEND.md): a plan predicted within 5% of the HBM would fail to run. */
        if (e->memory.total_bytes > 0.95 * e->memory.capacity_bytes) {
            skipped++;
            continue;
        }
        if (!measure_local_runs_whole(m, sys, &co->training, &e->layout, local, err,
                                      sizeof err)) {
            skipped++;
            continue;
        }
        cand_rank[nc] = i + 1;
        cand[nc++] = e->layout;
    }
    free(all.e);
    fprintf(stderr, "refine: %d of the feasible plans for %d GPUs run whole here (%d do not or "
                    "are within 5%% of the memory)\n",
            nc, gpus, skipped);
    /* Order of trial. */
    layout *order = malloc((size_t)(nc + 1) * sizeof *order);
    int *order_rank = malloc((size_t)(nc + 1) * sizeof *order_rank);
    bool *taken = calloc((size_t)nc + 1, sizeof *taken);
    int no = 0;
    for (int level = ro->pick_top ? 4 : 1; level <= 4; level++)
        for (int i = 0; i < nc; i++) {
            if (taken[i] || class_seen(order, no, &cand[i], level)) continue;
            taken[i] = true;
            order_rank[no] = cand_rank[i];
            order[no++] = cand[i];
        }
    free(cand);
    free(cand_rank);
    free(taken);
    *n = 0;
    if (ro->dry) {
        printf("plan measure --refine would measure, in this order, the first %d that run (of "
               "%d tried at most):\n",
               ro->k, ro->k + 6);
        for (int i = 0; i < no && i < ro->k + 6; i++) {
            char name[128];
            short_name(&order[i], name, sizeof name);
            estimate e;
            estimate_layout(m, sys, &co->training, &order[i], &e, NULL, 0);
            printf("  %2d  %-40s search rank %3d  predicted %.4f s  %.1f GiB\n", i + 1, name,
                   order_rank[i], e.time.step_s, e.memory.total_bytes / GIB);
        }
        free(order);
        free(order_rank);
        return -1;
    }
    for (int i = 0; i < no && *n < ro->k && i < ro->k + 6; i++) {
        char name[128];
        short_name(&order[i], name, sizeof name);
        fprintf(stderr, "refine: measuring %d/%d: %s (search rank %d)\n", *n + 1, ro->k, name,
                order_rank[i]);
        measure_local_result r;
        cm_status st = measure_local_run(ml, m, sys, &co->training, &order[i], ro->steps, &r,
                                         err, sizeof err);
        if (st != CM_OK || !r.whole) {
            fprintf(stderr, "refine: skipped %s: %s\n", name,
                    st != CM_OK ? err : "only a slice ran");
            continue;
        }
        plan_row *row = &rows[(*n)++];
        memset(row, 0, sizeof *row);
        row->obs.layout = order[i];
        row->obs.measured_step_s = r.step_s;
        row->spread = r.step_spread;
        row->mem_meas = r.peak_memory_bytes;
        row->rank = order_rank[i];
        fprintf(stderr, "refine:   measured %.4f s (predicted %.4f s), peak %.2f GiB\n", r.step_s,
                r.predicted_step_s, r.peak_memory_bytes / GIB);
        if (ro->record) {
            row->mem_pred = r.predicted_memory_bytes;
            json_t *plist = plan_records(rows, *n);
            json_t *rec = record_json(co, m, gpus, device, plist);
            if (json_dump_file(rec, ro->record, JSON_INDENT(1) | JSON_REAL_PRECISION(10)))
                fprintf(stderr, "refine: warning: cannot write --record %s\n", ro->record);
            json_decref(rec);
            json_decref(plist);
        }
    }
    measure_local_close(ml);
    free(order);
    free(order_rank);
    if (*n < 2) {
        fprintf(stderr, "plan: error: only %d plan(s) could be measured; the fit needs 2 or "
                        "more: raise --k or check the messages above\n",
                *n);
        return 1;
    }
    return 0;
}

/* ---- output ---- */

static double rel(double pred, double meas) { return (pred - meas) / meas; }

static void pct(FILE *f, double x)
{
    if (isfinite(x))
        fprintf(f, " %+7.1f%%", 100 * x);
    else
        fprintf(f, " %8s", "-");
}

static json_t *num_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static int cmp_rank(const void *a, const void *b)
{
    const plan_row *x = a, *y = b;
    if (x->before != y->before) return x->before < y->before ? -1 : 1;
    return 0;
}

int cmd_measure_refine(int argc, char **argv)
{
    refine_opts ro = {.k = 6, .holdout = 0, .terms = REFINE_ALL_TERMS, .steps = 3};
    char command[2048] = "plan";
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(command);
        snprintf(command + used, sizeof command - used, " %s", argv[i]);
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 0;
        }
    int rc = take_own(&argc, argv, &ro);
    if (rc) return rc;
    cli_options co;
    bool help;
    rc = cli_parse(argc, argv, &co, &help);
    if (rc) return rc;
    model_spec m;
    system_spec sys;
    if ((rc = cli_load_specs(&co, &m, &sys))) return rc;
    char err[CM_ERRLEN];
    if (training_check(&co.training, err, sizeof err) != CM_OK) return cli_error(err);

    static plan_row rows[REFINE_MAX_PLANS];
    int n = 0, gpus = 0;
    char device[256] = "";
    if (ro.from) {
        rc = read_from(ro.from, &co, &m, rows, &n);
        if (rc) return rc;
        for (int i = 0; i < n; i++)
            if (layout_gpus(&rows[i].obs.layout) > gpus) gpus = layout_gpus(&rows[i].obs.layout);
    } else {
        rc = measure_plans(&ro, &co, &m, &sys, rows, &n, &gpus, device, sizeof device);
        if (rc) return rc < 0 ? 0 : rc; /* < 0: --dry-run listed the plans */
    }
    /* Predictions before: the system as given. */
    for (int i = 0; i < n; i++) {
        plan_row *r = &rows[i];
        estimate e;
        if (estimate_layout(&m, &sys, &co.training, &r->obs.layout, &e, err, sizeof err) !=
            CM_OK) {
            char msg[CM_ERRLEN + 64];
            snprintf(msg, sizeof msg, "measured plan %d: %s", i + 1, err);
            return cli_error(msg);
        }
        r->before = e.time.step_s;
        r->before_sd = e.time.step_sd_s;
        r->mem_pred = e.memory.total_bytes;
    }
    qsort(rows, (size_t)n, sizeof *rows, cmp_rank);
    if (ro.holdout >= n - 1 && ro.holdout > 0) {
        snprintf(err, sizeof err, "--holdout %d leaves fewer than 2 of the %d plans to fit",
                 ro.holdout, n);
        return cli_error(err);
    }
    static refine_obs obs[REFINE_MAX_PLANS];
    bool held[REFINE_MAX_PLANS], in_fit[REFINE_MAX_PLANS];
    refine_pick_holdout(n, ro.holdout, held);
    for (int i = 0; i < n; i++) {
        obs[i] = rows[i].obs;
        in_fit[i] = !held[i];
        rows[i].in_fit = in_fit[i];
    }
    static refine_result fit;
    if (refine_fit(&m, &sys, &co.training, obs, n, in_fit, ro.terms, &fit, err, sizeof err) !=
        CM_OK)
        return cli_error(err);
    double hp[REFINE_MAX_PLANS], hsd[REFINE_MAX_PLANS];
    if (refine_holdout(&m, &sys, &co.training, obs, n, ro.holdout ? held : NULL, ro.terms, hp,
                       hsd, err, sizeof err) != CM_OK)
        return cli_error(err);
    static system_spec refined;
    refined = sys;
    refine_apply(&refined, &fit);
    double eb[REFINE_MAX_PLANS], ea[REFINE_MAX_PLANS], eh[REFINE_MAX_PLANS];
    int chosen_before = 0, chosen_after = 0, best = 0;
    for (int i = 0; i < n; i++) {
        plan_row *r = &rows[i];
        refine_predict(&m, &refined, &co.training, &r->obs.layout, &r->after, &r->after_sd, err,
                       sizeof err);
        r->held = hp[i];
        r->held_sd = hsd[i];
        double meas = r->obs.measured_step_s;
        eb[i] = rel(r->before, meas);
        ea[i] = r->in_fit ? rel(r->after, meas) : NAN;
        eh[i] = rel(r->held, meas);
        if (r->before < rows[chosen_before].before) chosen_before = i;
        if (r->after < rows[chosen_after].after) chosen_after = i;
        if (meas < rows[best].obs.measured_step_s) best = i;
    }
    double med_b = refine_median_abs(eb, n), med_a = refine_median_abs(ea, n),
           med_h = refine_median_abs(eh, n), max_h = 0;
    int nh = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(eh[i])) {
            max_h = fmax(max_h, fabs(eh[i]));
            nh++;
        }
    double gap_after = rows[chosen_after].obs.measured_step_s / rows[best].obs.measured_step_s - 1;
    double gap_before =
        rows[chosen_before].obs.measured_step_s / rows[best].obs.measured_step_s - 1;
    /* The whole search again under the refined terms: does the recommendation move? */
    search_result *sa = search_result_new(), *sb = search_result_new();
    search_options so = {.gpus = gpus, .keep = 1, .simulate = 0};
    so.frameworks[0] = so.frameworks[1] = true;
    bool searched = gpus > 0 &&
                    search_run(&m, &sys, &co.training, &so, sb, err, sizeof err) == CM_OK &&
                    search_run(&m, &refined, &co.training, &so, sa, err, sizeof err) == CM_OK &&
                    sa->count > 0 && sb->count > 0;
    char hold_desc[64];
    if (ro.holdout)
        snprintf(hold_desc, sizeof hold_desc, "fixed holdout of %d", ro.holdout);
    else
        snprintf(hold_desc, sizeof hold_desc, "leave-one-out");

    /* The measurement records: what --from reads back, also kept in the profile. */
    json_t *plist = plan_records(rows, n);
    json_t *record = record_json(&co, &m, gpus, device, plist);
    if (ro.out) {
        char date[32];
        time_t now = time(NULL);
        strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
        json_t *extra = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:O}", "name", ro.out, "description",
            "calibration profile with step-level terms fitted by plan measure --refine",
            "calibration_of", co.system, "date", date, "command", command, "refine", record);
        cm_status st = profile_write(ro.out, &refined, extra, err, sizeof err);
        json_decref(extra);
        if (st != CM_OK) {
            json_decref(record);
            json_decref(plist);
            search_result_free(sa);
            search_result_free(sb);
            return cli_error(err);
        }
    }

    if (co.format == FORMAT_JSON) {
        json_t *j = json_object();
        json_object_set_new(j, "model", json_string(m.name));
        json_object_set_new(j, "system", json_string(sys.name));
        json_object_set_new(j, "seq", json_integer(co.training.seq_len));
        json_object_set_new(j, "gbs", json_integer(co.training.global_batch));
        json_object_set_new(j, "gpus", json_integer(gpus));
        json_object_set_new(j, "device", json_string(device[0] ? device : "(from file)"));
        json_object_set_new(j, "holdout", json_string(hold_desc));
        json_t *pl = json_array();
        for (int i = 0; i < n; i++) {
            const plan_row *r = &rows[i];
            json_t *p = json_deep_copy(json_array_get(plist, (size_t)i));
            json_object_set_new(p, "in_fit", json_boolean(r->in_fit));
            json_object_set_new(p, "before_s", json_real(r->before));
            json_object_set_new(p, "before_sd_s", json_real(r->before_sd));
            json_object_set_new(p, "after_s", json_real(r->after));
            json_object_set_new(p, "after_sd_s", json_real(r->after_sd));
            json_object_set_new(p, "heldout_s", num_or_null(r->held));
            json_object_set_new(p, "heldout_sd_s", num_or_null(r->held_sd));
            json_object_set_new(p, "error_before", json_real(eb[i]));
            json_object_set_new(p, "error_after", num_or_null(ea[i]));
            json_object_set_new(p, "error_heldout", num_or_null(eh[i]));
            json_object_set_new(p, "residual", num_or_null(fit.residual[i]));
            json_array_append_new(pl, p);
        }
        json_object_set_new(j, "plans", pl);
        json_t *terms = json_object(), *cov = json_array();
        for (int k = 0; k < STEP_NTERMS; k++) {
            double before = sys.step.active ? sys.step.value[k] : system_step_default(k);
            json_object_set_new(
                terms, system_step_name(k),
                json_pack("{s:f, s:f, s:f, s:s}", "before", before, "after", fit.step.value[k],
                          "sd", sqrt(fit.step.cov[k][k]), "state",
                          refine_term_state_name(fit.state[k])));
            json_t *row = json_array();
            for (int u = 0; u < STEP_NTERMS; u++)
                json_array_append_new(row, json_real(fit.step.cov[k][u]));
            json_array_append_new(cov, row);
        }
        json_object_set_new(j, "terms", terms);
        json_object_set_new(j, "covariance", cov);
        json_object_set_new(j, "fit", json_pack("{s:i, s:i, s:f, s:i}", "points", fit.points,
                                                "free_terms", fit.free_terms, "rms_rel_residual",
                                                fit.rms_rel_residual, "iterations",
                                                fit.iterations));
        json_t *ej = json_object();
        json_object_set_new(ej, "before_median_abs", num_or_null(med_b));
        json_object_set_new(ej, "after_median_abs", num_or_null(med_a));
        json_object_set_new(ej, "heldout_median_abs", num_or_null(med_h));
        json_object_set_new(ej, "heldout_max_abs", nh ? json_real(max_h) : json_null());
        json_object_set_new(ej, "heldout_plans", json_integer(nh));
        json_object_set_new(j, "errors", ej);
        json_object_set_new(j, "ranking",
                            json_pack("{s:i, s:i, s:i, s:f, s:f}", "chosen_before",
                                      chosen_before + 1, "chosen_after", chosen_after + 1,
                                      "best_measured", best + 1, "chosen_before_gap", gap_before,
                                      "chosen_after_gap", gap_after));
        if (searched) {
            char a[128], b[128];
            short_name(&sb->ranked[0].layout, b, sizeof b);
            short_name(&sa->ranked[0].layout, a, sizeof a);
            json_object_set_new(j, "search",
                                json_pack("{s:s, s:f, s:s, s:f, s:f}", "best_before", b,
                                          "best_before_s", sb->ranked[0].time.step_s,
                                          "best_after", a, "best_after_s",
                                          sa->ranked[0].time.step_s, "best_after_sd_s",
                                          sa->ranked[0].time.step_sd_s));
        }
        if (ro.out) json_object_set_new(j, "profile", json_string(ro.out));
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(j);
    } else {
        printf("plan measure --refine: %s, seq %d, gbs %d, %d GPUs of %s on %s\n", m.display,
               co.training.seq_len, co.training.global_batch, gpus, sys.name,
               device[0] ? device : "(measurements read from a file)");
        printf("%d plans measured; held-out: %s\n\n", n, hold_desc);
        printf("  %-2s %-38s %9s %9s %8s %9s %8s %9s %8s\n", "#", "plan (by predicted-before)",
               "measured", "before", "err", "after", "err", "held-out", "err");
        for (int i = 0; i < n; i++) {
            const plan_row *r = &rows[i];
            char name[128];
            short_name(&r->obs.layout, name, sizeof name);
            printf("  %-2d %-38s %9.4f %9.4f", i + 1, name, r->obs.measured_step_s, r->before);
            pct(stdout, eb[i]);
            printf(" %9.4f", r->after);
            pct(stdout, rel(r->after, r->obs.measured_step_s));
            if (isfinite(r->held))
                printf(" %9.4f", r->held);
            else
                printf(" %9s", "(in fit)");
            pct(stdout, eh[i]);
            printf("%s\n", r->in_fit ? "" : "  held out");
        }
        printf("\n  step times in s; err = (predicted - measured) / measured; after = the refined "
               "terms (fitted on %s);\n  held-out = predicted by a fit that did not see the plan\n",
               ro.holdout ? "the plans not held out" : "all plans");
        printf("\nMedian |error|: before %.1f%%, after %.1f%% (plans in the fit), held-out %.1f%% "
               "(max %.1f%%, %d plans) <- the honest figure\n",
               100 * med_b, 100 * med_a, 100 * med_h, 100 * max_h, nh);
        printf("\nStep terms (%d plans in the fit, %d free terms, relative rms residual %.2f%%):\n",
               fit.points, fit.free_terms, 100 * fit.rms_rel_residual);
        for (int k = 0; k < STEP_NTERMS; k++) {
            double before = sys.step.active ? sys.step.value[k] : system_step_default(k);
            double v = fit.step.value[k], sd = sqrt(fit.step.cov[k][k]);
            bool ms = k == STEP_LAYER_OVERHEAD;
            printf("  %-24s %8.4g -> %-9.4g", system_step_name(k), ms ? before * 1e3 : before,
                   ms ? v * 1e3 : v);
            if (sd > 0)
                printf(" +- %-8.2g", ms ? sd * 1e3 : sd);
            else
                printf(" %-11s", "");
            printf("%s %s\n", ms ? "ms" : "  ", refine_term_state_name(fit.state[k]));
        }
        printf("\nRanking among the measured plans: chosen before #%d (measured %+.1f%% vs the "
               "best), after #%d (%+.1f%%); best measured #%d (%.4f s)\n",
               chosen_before + 1, 100 * gap_before, chosen_after + 1, 100 * gap_after, best + 1,
               rows[best].obs.measured_step_s);
        const char *what[2] = {"predicted-after", "measured"};
        for (int w = 0; w < 2; w++) { /* the re-ranked order, and the true one */
            bool used[REFINE_MAX_PLANS] = {false};
            printf("  order by %-16s", what[w]);
            for (int k = 0; k < n; k++) {
                int pick = -1;
                for (int i = 0; i < n; i++) {
                    double v = w ? rows[i].obs.measured_step_s : rows[i].after;
                    double pv = pick < 0 ? 0 : w ? rows[pick].obs.measured_step_s : rows[pick].after;
                    if (!used[i] && (pick < 0 || v < pv)) pick = i;
                }
                used[pick] = true;
                printf(" #%d", pick + 1);
            }
            printf("\n");
        }
        if (searched) {
            char a[128], b[128];
            short_name(&sb->ranked[0].layout, b, sizeof b);
            short_name(&sa->ranked[0].layout, a, sizeof a);
            printf("Whole search, %d GPUs: best before %s (%.4f s); after %s (%.4f +- %.4f s)\n",
                   gpus, b, sb->ranked[0].time.step_s, a, sa->ranked[0].time.step_s,
                   sa->ranked[0].time.step_sd_s);
        }
        if (ro.out)
            printf("\nwrote %s (use it as --system %s --calibration %s)\n", ro.out, co.system,
                   ro.out);
    }
    json_decref(record);
    json_decref(plist);
    search_result_free(sa);
    search_result_free(sb);
    return 0;
}
