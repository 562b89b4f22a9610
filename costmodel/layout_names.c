/*
 * layout_names.c — the names of a layout's enumerations (framework, sharding, recompute, MoE
 * dispatcher, pipeline schedule) as the command line, the JSON and the outputs spell them, and
 * their parsers (case-insensitive, with the other names users know them by).
 */
#include "layout.h"

#include <strings.h>

static const char *const framework_names[] = {"fsdp2", "megatron", "torchtitan"};
/* torch/distributed/pipelining/schedules.py get_schedule_class's keys (pytorch 1fd7abc) */
static const char *const pp_schedule_names[] = {"default", "1F1B", "Interleaved1F1B", "GPipe",
                                                "ZBVZeroBubble", "DualPipeV"};
static const char *const sharding_names[] = {"ddp", "distopt", "fsdp"};
static const char *const recompute_names[] = {"none", "selective", "full"};
static const char *const moe_dispatcher_names[] = {"alltoall", "allgather", "deepep", "hybridep"};

const char *layout_framework_name(layout_framework f) { return framework_names[f]; }
const char *layout_sharding_name(layout_sharding s) { return sharding_names[s]; }
const char *layout_recompute_name(layout_recompute r) { return recompute_names[r]; }

static int parse(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (s && strcasecmp(s, names[i]) == 0) return i;
    return -1;
}

int layout_parse_framework(const char *s, layout_framework *out)
{
    int i = parse(s, framework_names, LAYOUT_NFRAMEWORKS);
    if (i >= 0) *out = (layout_framework)i;
    return i >= 0;
}

int layout_parse_sharding(const char *s, layout_sharding *out)
{
    int i = parse(s, sharding_names, 3);
    /* Accept the ZeRO names users also know these by. */
    if (i < 0 && s) {
        if (!strcasecmp(s, "zero1") || !strcasecmp(s, "optim")) i = SHARDING_DISTOPT;
        if (!strcasecmp(s, "zero3") || !strcasecmp(s, "optim_grads_params")) i = SHARDING_FSDP;
    }
    if (i >= 0) *out = (layout_sharding)i;
    return i >= 0;
}

int layout_parse_recompute(const char *s, layout_recompute *out)
{
    int i = parse(s, recompute_names, 3);
    if (i >= 0) *out = (layout_recompute)i;
    return i >= 0;
}

const char *layout_moe_dispatcher_name(layout_moe_dispatcher d)
{
    return d >= 0 && d <= MOE_DISPATCH_HYBRIDEP ? moe_dispatcher_names[d] : "?";
}

int layout_parse_moe_dispatcher(const char *s, layout_moe_dispatcher *out)
{
    int i = parse(s, moe_dispatcher_names, 4);
    if (i >= 0) *out = (layout_moe_dispatcher)i;
    return i >= 0;
}

const char *layout_pp_schedule_name(layout_pp_schedule s)
{
    return s >= 0 && s < PP_SCHEDULE_COUNT ? pp_schedule_names[s] : "?";
}

int layout_parse_pp_schedule(const char *s, layout_pp_schedule *out)
{
    int i = parse(s, pp_schedule_names, PP_SCHEDULE_COUNT);
    if (i < 0 && s) { /* short spellings */
        if (!strcasecmp(s, "interleaved")) i = PP_SCHEDULE_INTERLEAVED_1F1B;
        if (!strcasecmp(s, "zbv") || !strcasecmp(s, "zero-bubble")) i = PP_SCHEDULE_ZBV;
    }
    if (i >= 0) *out = (layout_pp_schedule)i;
    return i >= 0;
}
