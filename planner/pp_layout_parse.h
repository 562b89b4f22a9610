/*
 * pp_layout_parse.h — reads Megatron-LM's pipeline layout string (--pipeline-model-parallel-
 * layout, TransformerConfig.pipeline_model_parallel_layout) back into decoder layers per
 * pipeline rank, for plan check. The grammar is Megatron's (megatron/core/transformer/
 * pipeline_parallel_layer_layout.py, parse_str_to_list at d98e8a6): commas are cosmetic,
 * "(...)*n" and "x*n" repeat, "|" separates the pp x vpp virtual stages in schedule order (stage
 * i is chunk i / pp of rank i % pp), "E" the embedding, "t" a decoder layer, "m" an MTP layer,
 * "L" the loss. emit_megatron.c's emit_pipeline_layout_text writes what this reads.
 */
#ifndef PLAN_PP_LAYOUT_PARSE_H
#define PLAN_PP_LAYOUT_PARSE_H

#include <stddef.h>

/* Decoder layers of each of the pp ranks into rank_layers (max entries), the virtual stages a
 * rank into *vpp. Returns 0, or -1 with err saying what is wrong (an unknown character, a
 * stage count that pp does not divide, a repeat past 100000 stages). */
int pp_layout_parse(const char *text, int pp, int *rank_layers, int max, int *vpp, char *err,
                    size_t errlen);

#endif
