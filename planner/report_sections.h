/*
 * report_sections.h — the answer boxes and the seven sections of `plan report`, one file each (report_sec_*.c).
 * Each writes its headings, prose, tables and charts through the document writer from a built
 * report; the numbers come from report_analysis.h, their wording from report_text.h. Prose is
 * fixed; text that is not ours (rule messages, file names) goes through doc_plain().
 */
#ifndef PLAN_REPORT_SECTIONS_H
#define PLAN_REPORT_SECTIONS_H

#include "doc_writer.h"
#include "report_analysis.h"

/* The answer first: a box per model with the recommended plan on the user's GPUs. */
void report_section_summary(doc *d, const report *r);
/* 1. The decision tree and its thresholds (model size, expert parallelism, memory). */
void report_section_decision(doc *d, const report *r);
/* 2. FSDP2, Megatron and torchtitan compared (each column backed by its plans, FP8 priced on them). */
void report_section_compare(doc *d, const report *r);
/* 2b. torchtitan (FSDP2 with TP, PP, CP and EP) against both, at the user's GPU counts
 * (issue 19): the three-way comparison where the numbers say which wins. */
void report_section_torchtitan(doc *d, const report *r);
/* 3. Performance per model and GPU count, with the charts. */
void report_section_performance(doc *d, const report *r);
/* 4. The feature-support matrix, checked against the rule code. */
void report_section_features(doc *d, const report *r);
/* 5. The recommended configuration per model, as YAML (and Megatron-LM flags). */
void report_section_config(doc *d, const report *r);
/* 6. Migration notes, both ways. */
void report_section_migration(doc *d, const report *r);
/* Which cluster: the same models on the systems of plan report --systems (issue 22); nothing
 * when none were given. */
void report_section_systems(doc *d, const report *r);
/* The Megatron-FSDP flags and checkpoint format of the guide's tables, from the emitter's argv
 * of a Megatron-FSDP probe plan against a distributed-optimizer one (report_flags.c): false
 * when the probes cannot be emitted. */
bool report_megatron_fsdp_rows(const report *r, char *flags, size_t flen, char *ckpt,
                               size_t clen);
/* 7. Troubleshooting: headroom and memory knobs, NCCL timeouts, gradient NaN. */
void report_section_troubleshooting(doc *d, const report *r);

#endif
