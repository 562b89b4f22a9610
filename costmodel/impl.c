/*
 * impl.c — names, parsing and the per-implementation optimizer constants of impl.h (the sources
 * of each constant are in impl.h's comment).
 */
#include "impl.h"

#include <strings.h>

static const char *const impl_names[] = {"default", "hf", "native", "te"};
static const char *const optimizer_names[] = {"default", "fused", "foreach", "for-loop"};

const char *impl_name(layout_impl i)
{
    return i >= IMPL_DEFAULT && i <= IMPL_TE ? impl_names[i] : "?";
}

const char *optimizer_impl_name(layout_optimizer_impl o)
{
    return o >= OPTIMIZER_IMPL_DEFAULT && o <= OPTIMIZER_IMPL_FOR_LOOP ? optimizer_names[o] : "?";
}

static int find(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (s && strcasecmp(s, names[i]) == 0) return i;
    return -1;
}

int impl_parse(const char *s, layout_impl *out)
{
    int i = find(s, impl_names, 4);
    if (i >= 0) *out = (layout_impl)i;
    return i >= 0;
}

int optimizer_impl_parse(const char *s, layout_optimizer_impl *out)
{
    int i = find(s, optimizer_names, 4);
    if (i < 0 && s && strcasecmp(s, "forloop") == 0) i = OPTIMIZER_IMPL_FOR_LOOP;
    if (i >= 0) *out = (layout_optimizer_impl)i;
    return i >= 0;
}

double optimizer_impl_bytes_per_param(layout_optimizer_impl o)
{
    return o == OPTIMIZER_IMPL_FUSED ? 28.0 : 80.0;
}

double optimizer_impl_temp_bytes_per_param(layout_optimizer_impl o)
{
    return o == OPTIMIZER_IMPL_FOREACH ? 4.0 : 0.0;
}

int optimizer_impl_launches_per_tensor(layout_optimizer_impl o)
{
    return o == OPTIMIZER_IMPL_FOR_LOOP ? 8 : 0;
}
