/*
 * report_analysis.h — what `plan report` computes, before any of it is written: the searches
 * (one per model x GPU count, a GPU-count sweep per model, a dense model-size sweep), what they
 * found (struct report), and the small analyses the sections ask of it (which plan to
 * recommend, where a memory rung stops fitting, which knob frees memory, ...).
 *
 * Internal to libreport: report_build() and report_free() (report.h) live in
 * report_analysis.c, the analyses that only read a built report in report_numbers.c; the
 * section files (report_sections.h) only read a built report.
 */
#ifndef PLAN_REPORT_ANALYSIS_H
#define PLAN_REPORT_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench_csv.h"
#include "units.h"
#include "estimate.h"
#include "layout.h"
#include "model.h"
#include "report.h"
#include "status.h"
#include "system.h"

#ifndef PLAN_VERSION
#define PLAN_VERSION "unknown"
#endif


/* Memory classes (DDP / distributed optimizer / FSDP, with and without recompute, offload),
 * named by report_class_name; and the five rungs of the memory ladder they fall on: 0 DDP,
 * 1 distributed optimizer, 2 full sharding, 3 + recompute, 4 + CPU offload. */
#define REPORT_NCLASSES 10
#define REPORT_NLEVELS 5
extern const char *const report_class_name[REPORT_NCLASSES];
extern const char *const report_level_name[REPORT_NLEVELS];

/* Features of the feature-support matrix, named by report_feature_name; each has a probe layout
 * that report_feature_check passes through the planner's rule check. */
enum {
    REPORT_F_TP, REPORT_F_SP, REPORT_F_PP, REPORT_F_VPP, REPORT_F_CP, REPORT_F_EP, REPORT_F_ETP,
    REPORT_F_DDP, REPORT_F_DISTOPT, REPORT_F_FSDP, REPORT_F_HSDP, REPORT_F_NORESHARD,
    REPORT_F_SELECTIVE, REPORT_F_FULL, REPORT_F_OFFLOAD, REPORT_F_FSDP_PP, REPORT_F_OFFLOAD_RC,
    REPORT_F_OPT_OFFLOAD, REPORT_F_ACT_OFFLOAD
};
#define REPORT_NFEATURES 19
extern const char *const report_feature_name[REPORT_NFEATURES];

/* One model at one GPU count: each framework's best plan (or the closest when none fits), the
 * best Megatron plan without expert parallelism, and which memory classes fit. */
typedef struct {
    int gpus;
    long evaluated, feasible;
    int rec_fw;               /* framework of the plan `plan` recommends here (ranked first
                                 after the same simulator re-ranking); -1: nothing fits */
    bool has_best[2];
    estimate best[2];
    bool has_closest[2];
    estimate closest[2];
    bool has_noep;            /* best feasible Megatron plan with ep == 1 */
    estimate noep;
    bool has_noep_closest;    /* when no ep == 1 Megatron plan fits: the closest */
    estimate noep_closest;
    bool fits[REPORT_NCLASSES];
    /* issue 19: torchtitan's best plan, searched at the user's GPU counts only (the guide's
     * sweep stays FSDP2 vs Megatron); simulated like the others */
    bool titan_searched, has_titan, has_titan_closest;
    estimate titan, titan_closest;
} report_point;

typedef struct {
    model_spec m;
    /* m.display as our doc text (doc_plain: markup characters escaped), for every place the
     * report writes the name into text; a config.json's display name once became a link or
     * bold text in the report (issue 18, "Injection"). Chart titles take m.display as is. */
    char display_doc[2 * sizeof ((model_spec *)0)->display + 1];
    int npts;
    report_point *pts;        /* ascending GPU counts. Each holds what the sections read of it
                                 (report_analysis.c, point_need): past the user's counts, and
                                 below the smallest of several, only evaluated, fits and
                                 whether a plan fits (report_best_of non-NULL; feasible and
                                 the plans themselves not the whole search's: search.h
                                 fits_only); between them no best plan without EP; everything where
                                 the model fits at none of the user's counts */
    int min_gpus[REPORT_NCLASSES]; /* 0: never fits up to cap */
    int cap;                  /* the largest GPU count searched */
} report_model_result;

/* One member of the dense family swept for the Megatron-vs-FSDP2 threshold. */
typedef struct {
    double params;
    int layers, hidden;       /* its shape */
    bool has[REPORT_MAX_GPUS][2];
    double step[REPORT_MAX_GPUS][2];
    bool fsdp2_offload[REPORT_MAX_GPUS]; /* FSDP2's best plan needs CPU offload */
    bool fit_level[REPORT_MAX_GPUS][REPORT_NLEVELS];    /* some layout of that memory rung fits */
    bool fit_level_dp[REPORT_MAX_GPUS][REPORT_NLEVELS]; /* ... without TP or PP (DP only) */
} report_size_point;

#define REPORT_NSIZES 11

struct report {
    system_spec sys;
    char system_name[64];
    /* system_name and sys.gpu_name (from the command line and a system JSON) as our doc text
     * (doc_plain), for every place the report writes them into text (issue 18, "Injection") */
    char system_doc[2 * 64 + 1], gpu_doc[2 * sizeof ((system_spec *)0)->gpu_name + 1];
    char calibration[512];
    char bench_path[512];
    training_spec t;
    int nmodels;
    report_model_result models[REPORT_MAX_MODELS];
    int ngpus;
    int gpus[REPORT_MAX_GPUS];  /* ascending, no duplicates */
    bench_row *bench;
    int nbench;
    bool any_measured;
    report_size_point sizes[REPORT_NSIZES];
    model_spec probe;         /* an MoE model for the feature probes */
    long feat_count[2][REPORT_NFEATURES]; /* layouts with each feature the searches evaluated */
    report_stats stats;
    void (*progress)(long done, long total, void *arg); /* report_options' */
    void *progress_arg;
    long progress_total;      /* searches the build will run (shrinks when a sweep ends early) */
    const struct system_compare_table *which_cluster; /* report_options' (not owned) */
    int nwhich_cluster;
};

/* The point of a model at a GPU count, or NULL when that count was not searched. */
const report_point *report_find_point(const report_model_result *mr, int gpus);
/* The plan `plan --model M --gpus N` recommends at this point (the same search, re-ranked by
 * the step simulator as `plan` does), or NULL when nothing fits (or p is NULL). */
const estimate *report_best_of(const report_point *p);
/* How many times faster a is than b (b's step time / a's): simulated step times when both were
 * simulated, as `plan` compares the frameworks, else the closed form. */
double report_speedup(const estimate *a, const estimate *b);
/* Tokens per second per GPU of plan e. */
double report_tokens_per_gpu(const estimate *e);
/* The plan recommended for a model: the best at the largest of the user's GPU counts where one
 * fits; when none does, at the smallest swept count where one fits; NULL when none fits. */
const estimate *report_primary_plan(const report *r, const report_model_result *mr);

/* The size sweep at the g-th GPU count, summarized. */
typedef struct {
    int both;                  /* sizes where both frameworks fit */
    double rmin, rmax;         /* Megatron speed / FSDP2 speed over those */
    double cross_params;       /* the last upward crossing of 1 (Megatron ahead above it);
                                  0: none */
    int ncross;
    double fsdp2_last_fit;     /* largest size FSDP2 fits (0: none) */
    double meg_last_fit;
} report_size_summary;

report_size_summary report_summarize_sizes(const report *r, int g);
/* The largest swept dense size that fits on the g-th GPU count using memory rungs up to lev
 * (0 when none does); dp_only: without TP or PP. */
double report_largest_fit(const report *r, int g, int lev, bool dp_only);
/* The least intrusive ladder level that fits at point p (REPORT_NLEVELS: none), and which
 * frameworks offer it there. */
int report_fit_level(const report_point *p, bool *meg, bool *fsdp2);

double report_headroom_gib(const estimate *e);  /* capacity minus predicted peak */
double report_over_gib(const estimate *e);      /* predicted peak minus capacity */

/* A measured bench row for this estimate: same layout first (*same_layout true), else the same
 * model, system, GPU count and framework (another layout); NULL when none. */
const bench_row *report_measured_for(const report *r, const estimate *e, bool *same_layout);

/* Feature f's probe layout under framework fw (on 64 GPUs, the probe MoE model) through the
 * planner's rule check; err says which rule refuses it. */
cm_status report_feature_check(const report *r, int f, layout_framework fw, char *err,
                               size_t errlen);

/* The frameworks of the guide, in layout_framework order, and their names in its text. */
#define REPORT_NFRAMEWORKS 3
extern const char *const report_framework_name[REPORT_NFRAMEWORKS];

/* Which frameworks the rule check accepts feature f under, from its probes: ok[fw], and in words
 * ("all three frameworks", "Megatron and torchtitan", "Megatron only", "none of the
 * frameworks"); refusal gets each refusing rule's message after the frameworks it refuses
 * ("FSDP2: ...", "FSDP2 and torchtitan: ...; Megatron: ..."), empty when all accept. The
 * guide's statements about what a framework can do are made from this, never restated. */
void report_feature_support(const report *r, int f, bool ok[REPORT_NFRAMEWORKS], char *words,
                            size_t n, char *refusal, size_t rn);

/* The labels[i] of the features feats[i] (nf of them) the rule check accepts (accepted) or
 * refuses (!accepted) under fw, as "A, B and C" ("" for none): the guide's sentences about what
 * a framework lacks are made from this, never restated. */
void report_feature_list(const report *r, layout_framework fw, const int *feats,
                         const char *const *labels, int nf, bool accepted, char *buf, size_t n);

/* A plan with one memory knob turned. */
typedef struct {
    char name[96];
    bool valid;
    char why[CM_ERRLEN];   /* the rule, when not valid */
    estimate e;
} report_knob;

/* The plan b with each applicable memory knob turned alone; returns how many were filled. */
int report_knob_variants(const estimate *b, const model_spec *m, const system_spec *sys,
                         report_knob *out, int max);
/* The knob that frees at least 1 GiB for the least extra step time; -1 if none. */
int report_best_knob(const estimate *b, const report_knob *k, int n);

/* Plan e of model m with FP8 Linears in the framework's default recipe (precision.h), as
 * `--precision fp8` prices it; not CM_OK (why says) when the GPU or the layout refuses FP8. */
cm_status report_fp8_variant(const report *r, const model_spec *m, const estimate *e,
                             estimate *out, char *why, size_t n);

/* Framework fw's best fitting plan at point p (torchtitan: only where it was searched, the
 * user's GPU counts), or NULL. */
const estimate *report_framework_best(const report_point *p, int fw);

/* Plan e of model m with gradient reduction in bf16 toggled; false when it cannot be
 * estimated. */
bool report_grad_reduce_variant(const report *r, const model_spec *m, const estimate *e,
                                estimate *out);

#endif
