/*
 * exact_model.c — which frameworks build a model as it is (exact_model.h).
 */
#include "exact_model.h"

#include <stdio.h>

#include "megatron_form.h"
#include "titan_form.h"

int exact_model_missing(layout_framework fw, const model_spec *m,
                        char items[][FORM_LIST_ITEM_CHARS])
{
    if (fw == FRAMEWORK_MEGATRON) return megatron_form_missing(m, items, FORM_LIST_MAX);
    if (fw == FRAMEWORK_TORCHTITAN) return titan_form_missing(m, items, FORM_LIST_MAX);
    return 0; /* FSDP2: the model's own modeling code */
}

bool exact_model_builds(layout_framework fw, const model_spec *m)
{
    char items[FORM_LIST_MAX][FORM_LIST_ITEM_CHARS];
    return exact_model_missing(fw, m, items) == 0;
}

/* "<code> cannot build: A; B (and N more: plan without --exact-model lists them)" */
static bool lacks_text(layout_framework fw, const model_spec *m, char *buf, size_t len)
{
    char items[FORM_LIST_MAX][FORM_LIST_ITEM_CHARS];
    int n = exact_model_missing(fw, m, items);
    if (len) buf[0] = '\0';
    if (n == 0) return false;
    char named[EXACT_MODEL_NAMED * (FORM_LIST_ITEM_CHARS + 2)];
    form_list_join((const char(*)[FORM_LIST_ITEM_CHARS])items,
                   n < EXACT_MODEL_NAMED ? n : EXACT_MODEL_NAMED, named, sizeof named);
    char more[96] = "";
    if (n > EXACT_MODEL_NAMED)
        snprintf(more, sizeof more, " (and %d more; plan without --exact-model lists them)",
                 n - EXACT_MODEL_NAMED);
    if (fw == FRAMEWORK_MEGATRON)
        snprintf(buf, len, "Megatron-LM's GPT layer cannot build: %s%s", named, more);
    else
        snprintf(buf, len, "no torchtitan %s model class has: %s%s", TITAN_FORM_COMMIT, named,
                 more);
    return true;
}

bool exact_model_reason(layout_framework fw, const model_spec *m, char *buf, size_t len)
{
    return lacks_text(fw, m, buf, len);
}

void exact_model_refusal(layout_framework fw, const model_spec *m, const char *how, char *buf,
                         size_t len)
{
    char lacks[EXACT_MODEL_NAMED * (FORM_LIST_ITEM_CHARS + 2) + 256];
    lacks_text(fw, m, lacks, sizeof lacks);
    snprintf(buf, len,
             "--exact-model: %s cannot build %s as it is (%s); drop --exact-model to plan "
             "%s anyway (the output lists what it would lack), or pick a framework that "
             "builds it (--framework fsdp2 runs the model's own code)",
             how, m->display, lacks, layout_framework_name(fw));
}
