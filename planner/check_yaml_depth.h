/*
 * check_yaml_depth.h — refuse a YAML text that nests deeper than a trainer config can, before
 * libyaml builds a document of it (issue 18: a deep "[[[[..." took seconds to load).
 */
#ifndef PLAN_CHECK_YAML_DEPTH_H
#define PLAN_CHECK_YAML_DEPTH_H

#include <stddef.h>

#include "status.h"

/* CM_OK, or CM_EPARSE with err "LINE:COL: lists and mappings nest deeper than ..." */
cm_status check_yaml_depth(const char *text, size_t len, char *err, size_t errlen);

#endif
