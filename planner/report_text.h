/*
 * report_text.h — how `plan report` writes its numbers in prose and tables: parameter counts
 * ("8.0B"), layouts ("TP 2 · PP 1 · DP 4 ..."), GPU-count lists ("8, 16 and 32") and framework
 * names. Shared by the section files and the driver so every section writes them alike.
 */
#ifndef PLAN_REPORT_TEXT_H
#define PLAN_REPORT_TEXT_H

#include <stddef.h>

#include "estimate.h"

/* "FSDP2" or "Megatron". */
const char *report_fw_title(int fw);
/* "406B", "8.0B", "950M": no decimals from 100B up. */
void report_fmt_params(double p, char *buf, size_t n);
/* Compact layout: "TP 2 · PP 1 · DP 4 · CP 1 · mbs 1 · SP · distopt · recompute none" (FSDP2:
 * "DP 8 · Ulysses 1 · mbs 1 · FSDP · recompute none"). */
void report_fmt_layout(const estimate *e, char *buf, size_t n);
/* The layout in a few words, only what differs from the defaults: "Megatron TP 2 · DP 32",
 * "Megatron TP 1 · PP 32 · DP 4 · CP 2 · EP 8 · Megatron-FSDP", "FSDP2 DP 8 · Ulysses 2 · CPU
 * offload"; recompute is named when on. */
void report_fmt_layout_short(const estimate *e, char *buf, size_t n);
/* "12,497": a count with thousands separators. */
void report_fmt_count(double v, char *buf, size_t n);
/* "8, 16 and 32" */
void report_fmt_gpu_list(const int *g, int n, char *buf, size_t len);

#endif
