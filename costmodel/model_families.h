/*
 * model_families.h — per model type rules of the config.json reader (model.c): the types plan
 * refuses, and the layer structure of the types whose layer is not Llama's (model_families.c).
 */
#ifndef PLAN_MODEL_FAMILIES_H
#define PLAN_MODEL_FAMILIES_H

#include <jansson.h>

#include "config_json.h"
#include "model.h"
#include "status.h"

/* CM_EPARSE with one line naming what plan lacks, for a type (or a layer kind) it cannot
 * represent; CM_OK otherwise. Called before any key is required. */
cm_status model_family_check(const json_t *cfg, const char *model_type, const char *path,
                             char *err, size_t errlen);

/* After the generic reading of cfg into spec: the type's norms, biases, blocks and router. */
cm_status model_family_apply(const json_t *cfg, const char *model_type, model_spec *spec,
                             const cj_src *s);

#endif
