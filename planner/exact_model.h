/*
 * exact_model.h — which frameworks' own model code builds a model as it is (plan
 * --exact-model): FSDP2 always (it runs the model's own Hugging Face code), Megatron-LM when
 * its GPT layer has every form of the model (megatron_form.h), torchtitan when one of its
 * model classes has (titan_form.h). One place for the test, the one-line reason a framework
 * is left out, and the refusal of a framework the user named; the checks depend on the model
 * alone, never on the layout.
 */
#ifndef PLAN_EXACT_MODEL_H
#define PLAN_EXACT_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "form_list.h"
#include "layout.h"
#include "model.h"

/* The forms of m that framework fw's own model code cannot build, one sentence each, into
 * items (room for FORM_LIST_MAX); returns how many. 0: fw builds m as it is (always for
 * FSDP2). */
int exact_model_missing(layout_framework fw, const model_spec *m,
                        char items[][FORM_LIST_ITEM_CHARS]);

/* Does fw's own model code build m as it is? */
bool exact_model_builds(layout_framework fw, const model_spec *m);

/* Why fw is left out of an --exact-model search, in one line without a newline: the code that
 * lacks the forms and the first EXACT_MODEL_NAMED of them ("Megatron-LM's GPT layer cannot
 * build: ..."; how many more); false (buf "") when fw builds m. */
#define EXACT_MODEL_NAMED 2
bool exact_model_reason(layout_framework fw, const model_spec *m, char *buf, size_t len);

/* The error of a request for framework fw with --exact-model when fw cannot build m: what is
 * wrong and how to fix it (drop --exact-model, or another framework), one line without the
 * "plan: error: " prefix. how names how fw was chosen ("--framework megatron", or "plan
 * estimate's default framework, megatron"). */
void exact_model_refusal(layout_framework fw, const model_spec *m, const char *how, char *buf,
                         size_t len);

#endif
