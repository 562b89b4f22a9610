/*
 * report_classes.h — internal to libreport: the memory classes of `plan report` (DDP /
 * distributed optimizer / FSDP, with and without recompute, offload; report_class_name) and
 * which rung of the memory ladder each is on, and whether a layout uses a feature of the
 * feature-support matrix (report_feature_name). report_analysis.c's search visitors classify
 * every layout they see with these.
 */
#ifndef PLAN_REPORT_CLASSES_H
#define PLAN_REPORT_CLASSES_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "report_analysis.h"

/* Memory classes, from least to most intrusive (the "memory ladder" of section 1.4). Megatron
 * classes may use TP/PP/CP/EP to split the model; FSDP2 ones only data and Ulysses parallelism. */
enum {
    CLS_MEG_DDP, CLS_MEG_DDP_RC, CLS_MEG_DISTOPT, CLS_MEG_DISTOPT_RC, CLS_MEG_FSDP,
    CLS_MEG_FSDP_RC, CLS_MEG_OFFLOAD, CLS_FSDP2, CLS_FSDP2_RC, CLS_FSDP2_OFFLOAD, NCLS
};

/* The ladder level of each class: 0 DDP, 1 distributed optimizer, 2 full sharding,
 * 3 + recompute, 4 + CPU offload. */
extern const int report_class_level[REPORT_NCLASSES];

/* The memory class of layout l. */
int report_class_of(const layout *l);

/* The features (REPORT_F_*) layout l uses, bit f for feature f (whether the searches exercised
 * it): every layout a search evaluates is counted, so one call a layout. */
uint32_t report_feature_mask(const layout *l);

#endif
