/*
 * cli_number.h — strict parsing of the numbers given on the command line, shared by every
 * subcommand (issue 18: `plan bench --seq 1e9` once ran with seq 1 and `--gbs 1024abc` with
 * 1024, through atoi). A number is the whole argument: decimal digits with an optional leading
 * '-', no spaces, no '+', no exponent, no trailing text, in the range the flag documents. The
 * ranges every command shares are here, so `plan`, `plan bench` and `plan report` agree.
 */
#ifndef PLAN_CLI_NUMBER_H
#define PLAN_CLI_NUMBER_H

#include <stdbool.h>

#define CLI_MAX_GPUS 10000000L
#define CLI_MAX_SEQ (16L * 1024 * 1024)
#define CLI_MAX_GBS 100000000L

/* s as a decimal integer in [lo, hi]; false (out untouched) when it is anything else. */
bool cli_number_long(const char *s, long lo, long hi, long *out);

/* s as a finite decimal or exponent number ("1.5e-3"), nothing after it; false otherwise
 * (nan, inf, overflow, empty, trailing text). */
bool cli_number_double(const char *s, double *out);

#endif
