/*
 * diffmat.h - `vmtrace diff` of several vmreplay --json result files: the
 * table of several kernels (rtable.h).
 */
#ifndef VTC_DIFFMAT_H
#define VTC_DIFFMAT_H

#include <stddef.h>
#include "failon.h"

/* The table of the results in files paths[0..n) (the first the base) on
 * standard output (or with json, one JSON object: the table's members
 * and "failed"), with the conditions of cs checked against every column
 * but the base: a condition holds in a column whose statistic moved past
 * its limit and is significant or has too few runs to tell; a column
 * without results fails every --fail-on.  all: also the metrics that are
 * 0 in every run.  Returns the exit status: 0, 1 (a condition holds), 2
 * (unreadable file, not a result, a condition naming no metric, no file
 * with results). */
int vtc_diff_table(char *const *paths, size_t n, const struct vtc_conds *cs, int json, int all);

#endif
