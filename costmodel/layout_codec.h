/*
 * layout_codec.h — the one table of a layout's fields (layout.h) and everything driven by it:
 * the layout as JSON (written by `plan --format json`, the measurement records of `plan refine`,
 * read back by `plan refine --from`), the layout columns of `plan bench`'s CSV, the short
 * one-line name ("megatron tp2 pp1 dp2 cp1 mbs4 fsdp"), equality, and the trainer-YAML key paths
 * that `--emit yaml` writes and `plan check` reads.
 *
 * One meaning per key: every value written is the resolved one (etp is the expert tensor-parallel
 * size even when the layout leaves it to default to tp; shard_size is the ranks one optimizer /
 * FSDP shard spans, dp*cp without HSDP). Reading accepts those and the raw 0 ("default") that
 * measurement files written before this codec hold, and stores the canonical form (0 where the
 * value is the default), so write -> read gives back the same layout.
 *
 * Two rows are the training shape, not the layout (gbs, seq): a layout is written with them
 * where a training spec is given (plan's JSON, the bench CSV) and without them otherwise.
 */
#ifndef PLAN_LAYOUT_CODEC_H
#define PLAN_LAYOUT_CODEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "layout.h"
#include "status.h"

typedef enum {
    LAYOUT_F_FRAMEWORK,
    LAYOUT_F_TP,
    LAYOUT_F_PP,
    LAYOUT_F_DP,
    LAYOUT_F_CP,
    LAYOUT_F_EP,
    LAYOUT_F_ETP,
    LAYOUT_F_VPP,
    LAYOUT_F_MBS,
    LAYOUT_F_GBS, /* training_spec.global_batch */
    LAYOUT_F_SEQ, /* training_spec.seq_len */
    LAYOUT_F_SP,
    LAYOUT_F_SHARDING,
    LAYOUT_F_RECOMPUTE,
    LAYOUT_F_RECOMPUTE_LAYERS,
    LAYOUT_F_RESHARD_AFTER_FORWARD,
    LAYOUT_F_SHARD_SIZE,
    LAYOUT_F_OFFLOAD,
    LAYOUT_F_PRECISION,  /* written only when not bf16 (outputs of bf16 plans stay as they were) */
    LAYOUT_F_FP8_RECIPE, /* written only with precision fp8 */
    LAYOUT_F_IMPL,
    LAYOUT_F_COMPILE,
    LAYOUT_F_OPTIMIZER_IMPL,
    LAYOUT_F_TP_COMM_OVERLAP,
    LAYOUT_F_OVERLAP_GRAD_REDUCE,
    LAYOUT_F_OVERLAP_PARAM_GATHER,
    LAYOUT_F_MOE_DISPATCHER,
    LAYOUT_F_PP_SCHEDULE, /* written only when set (not the 1F1B/interleaved default) */
    LAYOUT_F_ASYNC_TP,    /* written only when on */
    LAYOUT_F_FP8_PARAM_GATHER, /* the four low-precision knobs: written only when set */
    LAYOUT_F_BF16_LAYERS_START,
    LAYOUT_F_BF16_LAYERS_END,
    LAYOUT_F_MOE_FP8_DISPATCH,
    LAYOUT_F_OPTIMIZER_OFFLOAD_PCT,
    LAYOUT_F_ACTIVATION_OFFLOAD,
    LAYOUT_F_ACTIVATION_OFFLOAD_LAYERS, /* written only when set (0: all layers but the last) */
    LAYOUT_F_PP_FIRST_LAYERS, /* the uneven pipeline's first/last stage (issue 21): written */
    LAYOUT_F_PP_LAST_LAYERS,  /* only when set */
    LAYOUT_F_RECOMPUTE_MODULES, /* Megatron's selective recompute modules: written only when
                                   set, as "layernorm,moe_act" (recompute_modules.h) */
    LAYOUT_F_OPTIMIZER_BF16_STATES, /* Megatron's precision-aware optimizer, bf16 state:
                                       written only when on */
    LAYOUT_F_TE_CROSS_ENTROPY,      /* Megatron's fused TE cross entropy: written only when on */
    LAYOUT_F_CUDA_GRAPH_FULL_ITERATION, /* Megatron's full-iteration CUDA graph: written only
                                           when on */
    LAYOUT_F_RANK_ORDER, /* Megatron's rank order (issue 21): written only when not the default */
    LAYOUT_F_CP_ROTATE_ALLTOALL, /* torchtitan CP's K/V rotation by all-to-all: written only when on */
    LAYOUT_F_LOSS_EAGER, /* torch.compile without the loss: written only when on */
    LAYOUT_F_CUDA_GRAPH_ATTN, /* Megatron's per-layer CUDA graph of the attention block: written
                                 only when on */
    LAYOUT_F_MOE_DISPATCHER_SMS, /* the flex dispatcher's SMs: written only when set */
    LAYOUT_F_ROPE_UNFUSED, /* Megatron's --no-rope-fusion: written only when on */
    LAYOUT_F_RMS_NORM_UNFUSED, /* torchtitan 2024's own eager RMSNorm: written only when on */
    LAYOUT_F_MOE_EXPERT_PADDING, /* TEGroupedMLP's padding behind DeepEP: written only when on */
    LAYOUT_F_CUDA_GRAPHS, /* torchtitan's CUDA graphs, resolved true/false: written for torchtitan
                             layouts only */
    LAYOUT_F_SHARD_GRADS, /* Megatron-FSDP optim_grads (ZeRO-2): written only when on */
    LAYOUT_NFIELDS
} layout_field_id;

typedef enum {
    LAYOUT_KIND_INT,
    LAYOUT_KIND_BOOL,
    LAYOUT_KIND_FRAMEWORK,
    LAYOUT_KIND_SHARDING,
    LAYOUT_KIND_RECOMPUTE,
    LAYOUT_KIND_PRECISION,
    LAYOUT_KIND_FP8_RECIPE,
    LAYOUT_KIND_IMPL,
    LAYOUT_KIND_OPTIMIZER_IMPL,
    LAYOUT_KIND_MOE_DISPATCHER,
    LAYOUT_KIND_PP_SCHEDULE,
    LAYOUT_KIND_RECOMPUTE_MODULES, /* a bit set, written as Megatron's names joined by commas */
    LAYOUT_KIND_RANK_ORDER,
    LAYOUT_KIND_CUDA_GRAPHS, /* layout_cuda_graphs, written and read as its resolved bool */
} layout_field_kind;

typedef struct {
    layout_field_id id;
    const char *key;         /* JSON key; the CSV column name where csv is set */
    layout_field_kind kind;
    bool training;           /* held by training_spec (offset into it), not by layout */
    size_t offset;
    int (*resolved)(const layout *l); /* the value the default 0 stands for; NULL: as stored */
    const char *name_token;  /* short-name token ("tp" -> "tp4"); NULL: not in the name */
    bool name_always;        /* in the short name even at 1 (else only when above 1) */
    int csv_order;           /* position among plan bench's layout columns (1 first); 0: none */
    const char *yaml;        /* trainer-YAML path under strategy megatron (and fsdp2 where
                                yaml_fsdp2 is NULL); NULL: no key holds it */
    const char *yaml_fsdp2;  /* the path under strategy fsdp2 where it is another key */
} layout_field;

/* The table, in the order the JSON object lists the keys; layout_fields[i].id == i. */
#define LAYOUT_CSV_MAX LAYOUT_NFIELDS
extern const layout_field layout_fields[LAYOUT_NFIELDS];

const layout_field *layout_field_get(layout_field_id id);

/* The fields that are plan bench CSV columns, in column order; returns how many. */
int layout_csv_fields(const layout_field *out[LAYOUT_CSV_MAX]);

/* The field's value as an int (enums and bools too), resolved (etp, shard_size) unless raw.
 * t is needed for the training rows (0 without it). */
int layout_field_value(const layout_field *f, const layout *l, const training_spec *t);

/* The field's text: a number, true/false, or the enum's name. In CSV style sharding is "hsdp"
 * for FSDP within a shard group (plan bench's schema). */
typedef enum { LAYOUT_TEXT_PLAIN, LAYOUT_TEXT_CSV } layout_text_style;
void layout_field_text(const layout_field *f, const layout *l, const training_spec *t,
                       layout_text_style style, char *buf, size_t len);

/* ---- JSON ---- */

/* Set the layout's keys on obj in table order, resolved values; t non-NULL: also gbs and seq
 * in their place. Returns obj (NULL when out of memory). */
json_t *layout_json_set(json_t *obj, const layout *l, const training_spec *t);
/* A new object holding only the layout (no training rows). */
json_t *layout_to_json(const layout *l);

/*
 * Read a layout object: "framework" is required, every other key is optional (the framework's
 * default where absent). Accepts resolved values and the raw 0 of older files, stores the
 * canonical form. t non-NULL: gbs and seq are read into it where present. On failure err says
 * which key, prefixed by `where` (e.g. "plans[3].layout").
 */
cm_status layout_from_json(const json_t *j, const char *where, layout *l, training_spec *t,
                           char *err, size_t errlen);

/* ---- names and equality ---- */

/* "megatron tp2 pp1 dp2 cp1 mbs4 fsdp-nr rc-full": framework, the sizes (ep, vpp only above 1;
 * etp only where it differs from tp), sharding (-nr: no reshard after forward, +off: CPU
 * offload, hsdpN: HSDP shard group) and recompute when any. */
void layout_short_name(const layout *l, char *buf, size_t len);

/* The size tokens alone: "tp1 pp1 dp8 cp1 mbs1"; all: every sized field at any value
 * ("tp1 pp1 dp8 cp1 ep1 vpp1 mbs1"), else as layout_short_name() shows them. */
void layout_short_sizes(const layout *l, bool all, char *buf, size_t len);

/* Same layout: every layout field equal by its resolved value (an etp or shard_size left to
 * default equals the same size given explicitly). */
bool layout_equal(const layout *a, const layout *b);

/* ---- trainer YAML ---- */

/* The trainer-YAML path of a field under the given strategy (NULL when no key holds it), and
 * its last component, the key inside its section. */
const char *layout_yaml_path(layout_field_id id, layout_framework strategy);
const char *layout_yaml_key(layout_field_id id, layout_framework strategy);

#endif
