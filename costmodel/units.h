/*
 * units.h — the conventions every module shares for what it shows people: the GiB in which
 * memory is printed, and the one sign convention of an error.
 *
 * Quantities inside the model are SI doubles with the unit in the name (_bytes, _s, ...);
 * only output converts. An error is always (predicted - measured) / measured: positive when
 * the model predicts more (a slower step, more memory) than was measured. plan measure,
 * plan refine, plan bench --measure, the backend's report and bench/realruns all use it.
 */
#ifndef PLAN_UNITS_H
#define PLAN_UNITS_H

/* Bytes in a GiB (2^30): memory is shown in GiB everywhere. */
#define UNITS_GIB_BYTES 1073741824.0

/* (predicted - measured) / measured; 0 when nothing was measured. */
static inline double units_rel_error(double predicted, double measured)
{
    return measured != 0 ? (predicted - measured) / measured : 0;
}

#endif
