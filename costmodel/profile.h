/*
 * profile.h — calibration profiles (issue 4): reading one onto a system, loading one as a
 * system, and writing one.
 *
 * A profile is a system file (data/systems/README.md) that may give any subset of the fields,
 * plus what only a profile has: a "calibration" section (the GEMM efficiency's standard
 * deviation and one alpha-beta fit per collective operation, group size and span), a "step"
 * section (the step-level terms of costmodel/refine.h) and "calibration_of", the preset it was
 * fitted on. It overlays a preset and never edits it. `plan fit` and `plan measure --refine`
 * write profiles; --calibration overlays one and --system takes one in place of a preset.
 *
 * Sits above system.h (the preset fields and the fits' table) and collective.h (the operations'
 * names); neither includes this.
 */
#ifndef PLAN_PROFILE_H
#define PLAN_PROFILE_H

#include <stddef.h>

#include "status.h"
#include "system.h"

/* Profiles that may follow each other through "calibration_of" before a preset is reached. */
#define PROFILE_MAX_CHAIN 8

/* Load what --system names: a preset name under data_dir/systems/, a path to a full system JSON,
 * or a calibration profile, which loads the preset its "calibration_of" names (itself maybe a
 * profile, up to PROFILE_MAX_CHAIN deep; a cycle is an error), then the profile on top. */
cm_status profile_load_system(const char *name_or_path, const char *data_dir, system_spec *sys,
                              char *err, size_t errlen);

/* Overlay the profile at path (same schema, any subset of fields) on sys. */
cm_status profile_overlay(const char *path, system_spec *sys, char *err, size_t errlen);

/* Write sys's calibration (GEMM terms, collective fits, step terms when active) as a profile.
 * extra_json (a jansson object, may be NULL) is merged in
 * at the top level: name, date, commands, calibration_of. */
cm_status profile_write(const char *path, const system_spec *sys, const void *extra_json,
                        char *err, size_t errlen);

#endif
