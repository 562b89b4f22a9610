/*
 * test_sim.c — the step simulator (costmodel/sim.h) against what it must reproduce exactly:
 * the 1F1B bubble (p-1)/(v m) (Narayanan et al. 2021, Sec. 2.2) with equal stages and no
 * overlap; with one stage, the sum of its parts (and the closed form, where that has no
 * overlap either); the schedule's invariants; and a trace that is valid trace-event JSON
 * (parsed back with jansson).
 */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "estimate_costs.h"
#include "pp_p2p_order.h"
#include "schedule.h"
#include "sim.h"

#define MAXL 1024

static const char *data_dir(void)
{
    const char *d = getenv("PLAN_DATA_DIR");
    return d ? d : "data";
}

static void load(const char *model, const char *system, model_spec *m, system_spec *s)
{
    char err[CM_ERRLEN];
    if (model_load(model, data_dir(), m, err, sizeof err) != CM_OK) fail_msg("%s", err);
    if (system_load(system, data_dir(), s, err, sizeof err) != CM_OK) fail_msg("%s", err);
}

static void assert_rel(double got, double want, double tol, const char *what)
{
    double d = fabs(got - want) / fmax(fabs(want), 1e-300);
    if (d > tol) fail_msg("%s: got %.15g, want %.15g (relative error %.3g)", what, got, want, d);
}

/* Equal stages: one layer per virtual stage, chunk times f/v and b/v. */
typedef struct {
    sim_layer layer[MAXL];
    int vs[MAXL];
    double zero[MAXL], grad[MAXL], opt[MAXL];
    sim_input in;
} synth;

static void synth_init(synth *x, int p, int v, int m, double f, double b, double grad_s,
                       double opt_s)
{
    memset(x, 0, sizeof *x);
    int nv = p * v;
    for (int k = 0; k < nv; k++) {
        x->vs[k] = 1;
        x->layer[k].fwd_s = f / v;
        x->layer[k].bwd_s = b / v;
    }
    for (int s = 0; s < p; s++) {
        x->grad[s] = grad_s;
        x->opt[s] = opt_s;
    }
    x->in = (sim_input){.pp = p, .vpp = v, .microbatches = m, .layers = nv, .layer = x->layer,
                        .vstage_layers = x->vs, .p2p_overlap = v > 1, .grad_sync_s = x->grad,
                        .param_sync_s = x->zero, .optimizer_s = x->opt};
}

/* Without overlap and with equal stages, the simulated pipeline is m micro-batches plus the
 * closed-form bubble (p-1)/v micro-batch times, i.e. a bubble fraction (p-1)/(v m), exactly. */
static void test_bubble_equal_stages(void **state)
{
    (void)state;
    static synth x;
    sim_workspace *w = sim_alloc();
    static const int ps[] = {2, 3, 4, 8, 16}, vs[] = {1, 2, 3, 4}, ms[] = {1, 4, 8, 16, 32, 128};
    int cases = 0;
    for (size_t a = 0; a < sizeof ps / sizeof *ps; a++)
        for (size_t b = 0; b < sizeof vs / sizeof *vs; b++)
            for (size_t c = 0; c < sizeof ms / sizeof *ms; c++) {
                int p = ps[a], v = vs[b], m = ms[c];
                if (v > 1 && m % p) continue;     /* Megatron's interleaving needs p | m */
                if (v == 1 && m < p) continue;    /* the formula assumes m >= p */
                for (int serialize = 0; serialize < 2; serialize++) {
                    double f = 0.37, bw = 0.81, g = 0.05, o = 0.003;
                    synth_init(&x, p, v, m, f, bw, g, o);
                    sim_options opt = {.serialize = serialize, .trace = false};
                    time_simulated r;
                    char err[CM_ERRLEN];
                    assert_int_equal(sim_run(w, &x.in, &opt, &r, err, sizeof err), CM_OK);
                    double ideal = m * (f + bw);
                    double pipeline = r.step_s - g - o;
                    double bubble_fraction = (pipeline - ideal) / ideal;
                    char what[96];
                    snprintf(what, sizeof what, "bubble fraction p %d v %d m %d", p, v, m);
                    assert_rel(bubble_fraction, (double)(p - 1) / (v * m), 1e-9, what);
                    assert_rel(r.bubble_s, (double)(p - 1) / v * (f + bw), 1e-9, what);
                    assert_rel(r.compute_busy_s, ideal, 1e-12, "busy time");
                    assert_rel(r.grad_sync_s + r.optimizer_s, g + o, 1e-9, "sync + optimizer");
                    cases++;
                }
            }
    assert_true(cases > 50);
    sim_free(w);
}

static estimate estimate_of(const model_spec *m, const system_spec *s, const training_spec *t,
                            const layout *l)
{
    estimate e;
    char err[CM_ERRLEN];
    if (estimate_layout(m, s, t, l, &e, err, sizeof err) != CM_OK) fail_msg("%s", err);
    return e;
}

/* One stage: the step is the sum of its parts. Without overlap that is every micro-batch's
 * forward and backward (exposed TP/CP/EP inside), every FSDP gather and reduce-scatter, the DP
 * reduction, the optimizer and the parameter all-gather; for DDP and the distributed optimizer
 * it is also exactly the closed form with its overlaps off. */
static void test_one_stage_sum_of_parts(void **state)
{
    (void)state;
    static const struct {
        const char *model;
        layout_framework fw;
        layout_sharding sh;
        int tp, dp, cp, mbs;
        layout_recompute rc;
        bool reshard;
    } cases[] = {
        {"8b", FRAMEWORK_MEGATRON, SHARDING_DISTOPT, 2, 4, 1, 1, RECOMPUTE_NONE, true},
        {"8b", FRAMEWORK_MEGATRON, SHARDING_DDP, 2, 4, 1, 2, RECOMPUTE_SELECTIVE, true},
        {"70b", FRAMEWORK_MEGATRON, SHARDING_DISTOPT, 8, 8, 2, 1, RECOMPUTE_FULL, true},
        {"mixtral-8x7b", FRAMEWORK_MEGATRON, SHARDING_DISTOPT, 2, 8, 1, 1, RECOMPUTE_NONE, true},
        {"8b", FRAMEWORK_FSDP2, SHARDING_FSDP, 1, 16, 1, 1, RECOMPUTE_NONE, true},
        {"8b", FRAMEWORK_FSDP2, SHARDING_FSDP, 1, 8, 2, 1, RECOMPUTE_FULL, false},
        {"30b", FRAMEWORK_MEGATRON, SHARDING_FSDP, 1, 64, 1, 1, RECOMPUTE_NONE, true},
    };
    sim_workspace *w = sim_alloc();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        model_spec m;
        system_spec s;
        load(cases[i].model, "h100", &m, &s);
        training_spec t = training_default();
        layout l = layout_default(cases[i].fw);
        l.overlap_grad_reduce = l.overlap_param_gather = false;
        l.sharding = cases[i].sh;
        l.tp = cases[i].tp;
        l.dp = cases[i].dp;
        l.cp = cases[i].cp;
        l.mbs = cases[i].mbs;
        l.sp = l.tp > 1;
        l.recompute = cases[i].rc;
        l.reshard_after_forward = cases[i].reshard;
        if (model_is_moe(&m)) l.ep = 2;
        estimate e = estimate_of(&m, &s, &t, &l);

        estimate_costs c;
        estimate_stage st;
        char err[CM_ERRLEN];
        assert_int_equal(estimate_stage_costs(&m, &s, &t, &l, &c, &st, err, sizeof err), CM_OK);
        double per_mb = c.head_fwd_s + c.head_bwd_s;
        for (int r = 0; r < 2; r++) /* the FSDP root unit: gathered like a layer, exposed */
            per_mb += c.root_gather_s[r] * (l.reshard_after_forward ? 2 : 1) + c.root_reduce_s[r];
        for (int j = 0; j < m.layers; j++) {
            const estimate_layer_costs *x = estimate_costs_layer(&c, j);
            per_mb += x->fwd_s + x->fwd_comm_s + x->bwd_s + x->recompute_s + x->bwd_comm_s;
            if (l.sharding == SHARDING_FSDP)
                per_mb += x->gather_s * (l.reshard_after_forward ? 2 : 1) + x->reduce_s;
        }
        double parts = c.microbatches * per_mb + st.grad_sync_s + st.optimizer_s +
                       st.param_sync_s;

        sim_options o = {.serialize = true, .trace = false};
        estimate es = e;
        assert_int_equal(sim_estimate(w, &m, &s, &t, &l, &o, &es, err, sizeof err), CM_OK);
        assert_true(es.simulated);
        char what[96];
        snprintf(what, sizeof what, "%s %s sum of parts", cases[i].model,
                 layout_sharding_name(l.sharding));
        assert_rel(es.time_sim.step_s, parts, 1e-9, what);
        assert_rel(es.time_sim.bubble_s + 1.0, 1.0, 1e-12, "no bubble on one stage");
        if (l.sharding != SHARDING_FSDP) {
            snprintf(what, sizeof what, "%s %s vs closed form", cases[i].model,
                     layout_sharding_name(l.sharding));
            assert_rel(es.time_sim.step_s, e.time.step_s, 1e-9, what);
        }
        /* Overlap helps on these bandwidth-bound layouts. (Not everywhere: each gradient
         * bucket pays its own collective latency, so small models on thousands of ranks can
         * simulate slower bucketed than in one collective, as Megatron's bucket sizing warns.) */
        o.serialize = false;
        estimate eo = e;
        assert_int_equal(sim_estimate(w, &m, &s, &t, &l, &o, &eo, err, sizeof err), CM_OK);
        assert_true(eo.time_sim.step_s <= es.time_sim.step_s * (1 + 1e-12));
    }
    sim_free(w);
}

/* The pieces the simulator gets add up to the closed form's per-stage sums. */
static void test_costs_match_closed_form(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("deepseek-v3", "h100", &m, &s);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 2;
    l.pp = 8;
    l.dp = 8;
    l.ep = 8;
    l.sp = true;
    estimate_costs c;
    estimate_stage st[8];
    char err[CM_ERRLEN];
    assert_int_equal(estimate_stage_costs(&m, &s, &t, &l, &c, st, err, sizeof err), CM_OK);
    int layers = 0;
    for (int k = 0; k < l.pp; k++) {
        double f = 0, b = 0, comm = 0;
        for (int j = st[k].first_layer; j < st[k].first_layer + st[k].layers; j++) {
            const estimate_layer_costs *x = estimate_costs_layer(&c, j);
            f += x->fwd_s;
            b += x->bwd_s + x->recompute_s;
            comm += x->fwd_comm_s + x->bwd_comm_s;
        }
        if (k == l.pp - 1) {
            f += c.head_fwd_s;
            b += c.head_bwd_s;
        }
        assert_rel(f, st[k].fwd_s, 1e-12, "stage forward");
        assert_rel(b, st[k].bwd_s, 1e-12, "stage backward");
        assert_rel(comm, st[k].tp_s + st[k].cp_s + st[k].ep_s, 1e-12, "stage comm");
        assert_rel(st[k].pp_s, 2.0 * l.vpp * c.p2p_s, 1e-12, "p2p");
        layers += st[k].layers;
    }
    assert_int_equal(layers, m.layers);
    /* the closed form's micro-batch time is its worst stage's */
    estimate e = estimate_of(&m, &s, &t, &l);
    assert_rel(st[c.worst_stage].total_s, e.time.microbatch_s, 1e-12, "worst stage");
}

/* Schedule invariants on real layouts: every chunk runs once; on each stage chunks do not
 * overlap and a micro-batch's forward precedes its backward; a forward starts after the
 * previous virtual stage's forward of the same micro-batch ended plus the p2p send, a
 * backward after the next virtual stage's backward plus the send. */
static void check_schedule(const char *model, int tp, int pp, int dp, int vpp, int mbs,
                           bool serialize)
{
    model_spec m;
    system_spec s;
    load(model, "h100", &m, &s);
    training_spec t = training_default();
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = tp;
    l.pp = pp;
    l.dp = dp;
    l.vpp = vpp;
    l.mbs = mbs;
    l.sp = tp > 1;
    estimate e = estimate_of(&m, &s, &t, &l);
    sim_workspace *w = sim_alloc();
    sim_options o = {.serialize = serialize, .trace = false};
    char err[CM_ERRLEN];
    assert_int_equal(sim_estimate(w, &m, &s, &t, &l, &o, &e, err, sizeof err), CM_OK);
    const sim_input *in = sim_input_of(w);
    int mb = e.microbatches, nv = pp * vpp;
    int n = sim_op_count(w);
    assert_int_equal(n, 2 * nv * mb);
    const sim_op *ops = sim_ops(w);
    /* index by (pass, vstage, micro-batch) */
    const sim_op **at = calloc((size_t)2 * nv * mb, sizeof *at);
    for (int i = 0; i < n; i++) {
        const sim_op *x = &ops[i];
        assert_int_equal(x->vstage, x->chunk * pp + x->stage);
        size_t k = ((size_t)x->pass * nv + x->vstage) * mb + x->microbatch;
        assert_null(at[k]); /* once */
        at[k] = x;
        assert_true(x->end_s >= x->start_s && x->start_s >= x->ready_s);
        if (i > 0 && ops[i - 1].stage == x->stage)
            assert_true(x->start_s >= ops[i - 1].end_s); /* one compute stream */
    }
    double c = in->p2p_s, eps = 1e-12 * e.time.step_s;
    for (int k = 0; k < nv; k++)
        for (int i = 0; i < mb; i++) {
            const sim_op *f = at[(size_t)k * mb + i], *b = at[((size_t)nv + k) * mb + i];
            assert_non_null(f);
            assert_non_null(b);
            assert_true(b->start_s >= f->end_s); /* forward before backward, same stage */
            if (k > 0) {
                const sim_op *prev = at[(size_t)(k - 1) * mb + i];
                assert_true(f->start_s + eps >= prev->end_s + c);
            }
            if (k < nv - 1) {
                const sim_op *next = at[((size_t)nv + k + 1) * mb + i];
                assert_true(b->start_s + eps >= next->end_s + c);
            }
        }
    free(at);
    /* The step ends after every stage's last chunk. */
    for (int i = 0; i < n; i++) assert_true(ops[i].end_s <= e.time_sim.step_s);
    sim_free(w);
}

static void test_schedule_invariants(void **state)
{
    (void)state;
    check_schedule("405b", 8, 16, 8, 1, 1, false); /* 1F1B, uneven stages, 128 micro-batches */
    check_schedule("405b", 8, 16, 8, 1, 1, true);
    check_schedule("70b", 4, 4, 4, 2, 1, false);   /* interleaved */
    check_schedule("70b", 8, 8, 1, 5, 1, true);
    check_schedule("8b", 1, 4, 2, 1, 64, false);   /* m = 8 < ... and m == p below */
    check_schedule("8b", 2, 4, 64, 2, 1, false);   /* m = 16 */
    check_schedule("8b", 1, 8, 128, 2, 1, false);  /* m == p: all warm-up */
}

/* A trace: valid JSON, a "traceEvents" array of complete events with ts/dur/pid/tid/name,
 * one process per stage and a thread per stream, names as documented. */
static void check_trace(const char *model, layout l, int expect_stages, const char *needle)
{
    model_spec m;
    system_spec s;
    load(model, "h100", &m, &s);
    training_spec t = training_default();
    estimate e = estimate_of(&m, &s, &t, &l);
    sim_workspace *w = sim_alloc();
    sim_options o = {.serialize = false, .trace = true};
    char err[CM_ERRLEN];
    assert_int_equal(sim_estimate(w, &m, &s, &t, &l, &o, &e, err, sizeof err), CM_OK);
    json_t *trace = sim_trace_json(w);
    assert_non_null(trace);
    char *text = json_dumps(trace, JSON_COMPACT);
    json_decref(trace);
    assert_non_null(text);
    json_error_t je;
    json_t *j = json_loads(text, 0, &je); /* parse back what a viewer reads */
    free(text);
    if (!j) fail_msg("trace is not valid JSON: %s", je.text);
    json_t *events = json_object_get(j, "traceEvents");
    assert_true(json_is_array(events));
    int nx = 0, forwards = 0, backwards = 0, optimizer = 0, found = 0;
    bool track[64][4] = {{false}}, named[64] = {false};
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        assert_non_null(ph);
        assert_non_null(name);
        json_t *pid = json_object_get(ev, "pid");
        assert_true(json_is_integer(pid));
        int p = (int)json_integer_value(pid);
        assert_true(p >= 0 && p < expect_stages);
        if (!strcmp(ph, "M")) {
            if (!strcmp(name, "process_name")) named[p] = true;
            continue;
        }
        assert_string_equal(ph, "X");
        json_t *ts = json_object_get(ev, "ts"), *dur = json_object_get(ev, "dur");
        json_t *tid = json_object_get(ev, "tid");
        assert_true(json_is_number(ts) && json_is_number(dur) && json_is_integer(tid));
        assert_true(json_number_value(ts) >= 0 && json_number_value(dur) >= 0);
        assert_true(json_number_value(ts) + json_number_value(dur) <=
                    e.time_sim.step_s * 1e6 * (1 + 1e-9));
        int tr = (int)json_integer_value(tid);
        assert_true(tr >= 0 && tr < 4);
        track[p][tr] = true;
        nx++;
        if (name[0] == 'F' && tr == 0) forwards++;
        if (name[0] == 'B' && tr == 0) backwards++;
        if (!strcmp(name, "optimizer")) optimizer++;
        if (strstr(name, needle)) found++;
    }
    int chunks = l.pp * l.vpp * e.microbatches;
    assert_int_equal(forwards, chunks);
    assert_int_equal(backwards, chunks);
    assert_int_equal(optimizer, expect_stages);
    assert_true(found > 0);
    assert_int_equal(nx, sim_trace_events(w));
    for (int p = 0; p < expect_stages; p++) {
        assert_true(named[p]);
        assert_true(track[p][0]); /* compute */
        if (expect_stages > 1) assert_true(track[p][p == 0 ? 1 : 2]); /* a p2p stream */
    }
    json_decref(j);
    sim_free(w);
}

static void test_trace_json(void **state)
{
    (void)state;
    layout l = layout_default(FRAMEWORK_MEGATRON);
    l.tp = 4;
    l.pp = 4;
    l.dp = 4;
    l.sp = true;
    l.overlap_grad_reduce = l.overlap_param_gather = true; /* layout knobs since issue 15 */
    check_trace("70b", l, 4, "RS bucket"); /* distributed optimizer, overlapped buckets */
    l.vpp = 2;
    check_trace("70b", l, 4, "AG bucket");
    layout f = layout_default(FRAMEWORK_FSDP2);
    f.dp = 64;
    check_trace("8b", f, 1, "AG layer");
    check_trace("8b", f, 1, "RS layer");
}

/* Bad input is refused, not simulated. */
static void test_bad_input(void **state)
{
    (void)state;
    static synth x;
    sim_workspace *w = sim_alloc();
    time_simulated r;
    char err[CM_ERRLEN] = "";
    synth_init(&x, 4, 2, 6, 1, 2, 0, 0); /* interleaved with m not a multiple of p */
    assert_int_equal(sim_run(w, &x.in, NULL, &r, err, sizeof err), CM_EINVAL);
    assert_non_null(strstr(err, "divisible"));
    synth_init(&x, 4, 1, 8, 1, 2, 0, 0);
    x.vs[0] = 2; /* layers do not add up */
    assert_int_equal(sim_run(w, &x.in, NULL, &r, err, sizeof err), CM_EINVAL);
    synth_init(&x, 4, 1, 8, 1, 2, 0, 0);
    x.in.microbatches = 0;
    assert_int_equal(sim_run(w, &x.in, NULL, &r, err, sizeof err), CM_EINVAL);
    /* and a good run after the bad ones still works */
    synth_init(&x, 4, 1, 8, 1, 2, 0, 0);
    assert_int_equal(sim_run(w, &x.in, NULL, &r, err, sizeof err), CM_OK);
    assert_rel(r.step_s, (8 + 3) * 3.0, 1e-12, "4 stages, 8 micro-batches");
    sim_free(w);
}

/* torch.distributed.pipelining's interleaved 1F1B (schedule.h schedule_pipeline_torch): with
 * m == p = 3, v = 2 torch keeps warm-ups of (v-1) m + 2 (p-1-s) = 7, 5, 3 chunk forwards where
 * Megatron runs all six forwards first; written out from schedules.py's loop by hand. */
static void test_torch_interleaved_order(void **state)
{
    (void)state;
    /* F or B, chunk, micro-batch */
    static const char *want[3] = {
        "F00 F01 F02 F10 F11 F12 B10 B11 B12 B00 B01 B02",
        "F00 F01 F02 F10 F11 F12 B10 B11 B12 B00 B01 B02",
        "F00 F01 F02 F10 B10 F11 B11 F12 B12 B00 B01 B02",
    };
    for (int s = 0; s < 3; s++) {
        schedule_op ops[64];
        int n = schedule_pipeline_torch(3, 2, 3, s, ops);
        assert_int_equal(n, 12);
        char got[128] = "";
        for (int i = 0; i < n; i++) {
            char one[8];
            snprintf(one, sizeof one, "%s%c%d%d", i ? " " : "", ops[i].backward ? 'B' : 'F',
                     ops[i].chunk, ops[i].microbatch);
            strcat(got, one);
        }
        assert_string_equal(got, want[s]);
    }
    /* Megatron's order differs on the last stage (every forward first when m == p) */
    schedule_op meg[64];
    assert_int_equal(schedule_pipeline(3, 2, 3, 2, meg), 12);
    assert_false(meg[4].backward);
    /* p | m with m != p: the same order as Megatron's */
    schedule_op a[64], b[64];
    for (int s = 0; s < 4; s++) {
        int na = schedule_pipeline_torch(4, 2, 8, s, a), nb = schedule_pipeline(4, 2, 8, s, b);
        assert_int_equal(na, nb);
        for (int i = 0; i < na; i++) {
            assert_int_equal(a[i].microbatch, b[i].microbatch);
            assert_int_equal(a[i].chunk, b[i].chunk);
            assert_int_equal(a[i].backward, b[i].backward);
        }
    }
    assert_int_equal(schedule_pipeline_torch(4, 2, 10, 0, a), 40); /* rounds 2 of 5 */
    assert_int_equal(schedule_pipeline_torch(4, 2, 9, 0, a), -1);  /* 9 % 2 rounds */
}

/* torch's send/receive lowering (_add_send_recv) of pp 2, v 2, m 4, stage 0, by hand: the ranks
 * take turns placing one compute op each; a placed op's SEND follows it, the receiver's RECV
 * goes to the end of the receiver's list. Stage 0 runs F0.0 F0.1 F2.0 F2.1 F0.2 B2.0 F0.3 B2.1
 * F2.2 B0.0 F2.3 B0.1 B2.2 B2.3 B0.2 B0.3 (virtual stage.micro-batch); each entry below is
 * {compute ops before it, receiving virtual stage, micro-batch, send, backward}. */
static void test_torch_p2p_lowering(void **state)
{
    (void)state;
    static const pp_p2p_op want[] = {
        {1, 1, 0, true, false},  {1, 2, 0, false, false}, {2, 1, 1, true, false},
        {2, 2, 1, false, false}, {3, 3, 0, true, false},  {4, 3, 1, true, false},
        {4, 2, 0, false, true},  {5, 1, 2, true, false},  {6, 1, 0, true, true},
        {6, 2, 1, false, true},  {7, 1, 3, true, false},  {7, 2, 2, false, false},
        {8, 1, 1, true, true},   {8, 0, 0, false, true},  {9, 3, 2, true, false},
        {9, 2, 3, false, false}, {10, 0, 1, false, true}, {11, 3, 3, true, false},
        {12, 2, 2, false, true}, {13, 1, 2, true, true},  {13, 2, 3, false, true},
        {14, 1, 3, true, true},  {14, 0, 2, false, true}, {15, 0, 3, false, true},
    };
    int p = 2, v = 2, m = 4, per = schedule_max_ops(v, m), cap = pp_p2p_max_ops(v, m);
    schedule_op sched[2 * 24];
    int nops[2], nout[2];
    for (int s = 0; s < p; s++) nops[s] = schedule_pipeline_torch(p, v, m, s, sched + s * per);
    pp_p2p_op out[2 * 32];
    assert_int_equal(pp_p2p_lower(p, v, m, sched, per, nops, out, nout), 0);
    assert_int_equal(nout[0], (int)(sizeof want / sizeof *want));
    for (int i = 0; i < nout[0]; i++) {
        assert_int_equal(out[i].after, want[i].after);
        assert_int_equal(out[i].dest_vstage, want[i].dest_vstage);
        assert_int_equal(out[i].microbatch, want[i].microbatch);
        assert_int_equal(out[i].send, want[i].send);
        assert_int_equal(out[i].backward, want[i].backward);
    }
    assert_int_equal(nout[1], nout[0]); /* every transfer has its two halves */
    /* stage 1 starts with the receive of F1.0, issued before any compute */
    assert_int_equal(out[cap].after, 0);
    assert_int_equal(out[cap].dest_vstage, 1);
    assert_false(out[cap].send);
}

/* One NCCL stream per stage (sim_input.p2p_stream): pp 3, v 2, m 3, chunk forward 1 and backward
 * 2, free transfers. With data-flow sends this order ends stage 0 at 24 = m (f + b) + the
 * interleaved bubble (p-1)/v (f + b); on one stream stage 0's receive of F2.0 (virtual stage 3)
 * is issued after F0.0 and stands before its send of F0.1, so stage 1 gets micro-batch 1 only
 * when stage 2 has sent micro-batch 0 on (at 3, not 2), and so on: stages end at 28, 26, 24
 * (bench/pp_torch_order.py's replay, written apart from sim.c, gives the same). */
static void test_torch_p2p_stream(void **state)
{
    (void)state;
    static synth x;
    synth_init(&x, 3, 2, 3, 2.0, 4.0, 0, 0);
    x.in.schedule = PP_SCHEDULE_INTERLEAVED_1F1B;
    x.in.p2p_stream = true;
    sim_workspace *w = sim_alloc();
    time_simulated r;
    char err[CM_ERRLEN];
    assert_int_equal(sim_run(w, &x.in, NULL, &r, err, sizeof err), CM_OK);
    const sim_stage_stats *st = sim_stages(w);
    assert_rel(st[0].compute_end_s, 28, 1e-12, "stage 0 end");
    assert_rel(st[1].compute_end_s, 26, 1e-12, "stage 1 end");
    assert_rel(st[2].compute_end_s, 24, 1e-12, "stage 2 end");
    assert_rel(st[0].busy_s, 18, 1e-12, "stage 0 busy");
    sim_free(w);
}

/* The closed form's bubble (pp_schedule.c, estimate.c) against the simulator that runs the same
 * stages op by op, torchtitan, Llama-3 8B, seq 4096, mbs 1, 8 micro-batches on H100:
 * interleaved 1F1B pp 4 v 2 under torch's one-stream p2p order (before the serialized warm-up
 * term the closed form was 9.6% under the simulator at 16 layers), and ZBV pp 4, its bubble made
 * of the other stages' time. Each on equal virtual stages (4 layers each: --pp-first-layers 4
 * --pp-last-layers 4, torchtitan's less 0 / 0) and at torchtitan's default split (less 1 / 1,
 * pp_split.c: 4/5/4/4/4/4/4/3, ranks 8/9/8/7 interleaved, 7/9/8/8 in the V).
 * Interleaved: +2.0% equal (bound 3%; +1.1% before the simulator ran rank 0's embedding copies,
 * below), +3.3% default (bound 4%: the closed form's fill and drain priced from the busiest
 * rank's chunks, not all the same size).
 * ZBV: the closed form prices the head on rank 0 (layout_head_stage; torchtitan b5bcd76
 * distributed/pipeline_parallel.py:551-567 gives rank r stages r and 2pp-1-r, and 357-467 the
 * last stage the norm and output: the norm, output and loss run on rank 0), as memory and the
 * simulator do, and the simulator runs rank 0's FSDP2 copies of the embedding (the fp32
 * gradient accumulation per micro-batch, root_copies_cost) that the closed form charges there:
 * -3.3% equal, -2.8% default, bound 4% (zbv20; they were -2.5% / -9.7% with the head on the last
 * rank, -4.6% / -4.2% with the head moved but the simulator without the copies). */
static void test_closed_form_vs_sim_torchtitan(void **state)
{
    (void)state;
    model_spec m;
    system_spec s;
    load("8b", "h100", &m, &s);
    training_spec t = training_default();
    t.seq_len = 4096;
    t.global_batch = 8;
    layout_pp_schedule kinds[4] = {PP_SCHEDULE_INTERLEAVED_1F1B, PP_SCHEDULE_ZBV,
                                   PP_SCHEDULE_INTERLEAVED_1F1B, PP_SCHEDULE_ZBV};
    double tol[4] = {0.03, 0.04, 0.04, 0.04};
    for (int i = 0; i < 4; i++) {
        layout l = layout_default(FRAMEWORK_TORCHTITAN);
        if (i < 2) l.pp_first_layers = l.pp_last_layers = 4; /* equal virtual stages */
        l.tp = l.dp = 1;
        l.pp = 4;
        l.vpp = 2;
        l.mbs = 1;
        l.pp_schedule = kinds[i];
        l.sharding = SHARDING_FSDP;
        l.reshard_after_forward = false; /* torchtitan under a pipeline (cli_layout_defaults) */
        estimate e = estimate_of(&m, &s, &t, &l);
        sim_workspace *w = sim_alloc();
        sim_options o = {.serialize = false, .trace = false};
        char err[CM_ERRLEN];
        assert_int_equal(sim_estimate(w, &m, &s, &t, &l, &o, &e, err, sizeof err), CM_OK);
        double rel = (e.time_sim.step_s - e.time.step_s) / e.time.step_s;
        print_message("  case %d: simulated %.4f s, closed form %.4f s (%+.1f%%)\n", i,
                      e.time_sim.step_s, e.time.step_s, 100 * rel);
        if (fabs(rel) > tol[i]) fail_msg("case %d: simulated %g s, closed form %g s", i,
                                         e.time_sim.step_s, e.time.step_s);
        sim_free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bubble_equal_stages),
        cmocka_unit_test(test_one_stage_sum_of_parts),
        cmocka_unit_test(test_costs_match_closed_form),
        cmocka_unit_test(test_schedule_invariants),
        cmocka_unit_test(test_trace_json),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_torch_interleaved_order),
        cmocka_unit_test(test_torch_p2p_lowering),
        cmocka_unit_test(test_torch_p2p_stream),
        cmocka_unit_test(test_closed_form_vs_sim_torchtitan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
