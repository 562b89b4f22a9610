/*
 * hf_trainer_rules.c — see hf_trainer_rules.h: which transformers model types the Hugging Face
 * FSDP2 trainer cannot run under some layouts, and why.
 */
#include "hf_trainer_rules.h"

#include <stddef.h>
#include <string.h>

bool hf_rotary_tables_fp32(const char *model_type)
{
    static const char *const types[] = {"olmo2", "ernie4_5", "ernie4_5_moe"};
    if (!model_type) return false;
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (!strcmp(model_type, types[i])) return true;
    return false;
}
