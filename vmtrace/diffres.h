/*
 * diffres.h - `vmtrace diff` of two vmreplay --json result files.
 */
#ifndef VTC_DIFFRES_H
#define VTC_DIFFRES_H

#include "failon.h"

/* 1 when the file at path holds JSON (a vmreplay result) rather than a
 * trace: its first non-blank byte is '{'.  0 otherwise, also when it
 * cannot be read (the trace reader then says why). */
int vtc_diff_is_result(const char *path);

/* Compare the results in files pa (base) and pb (new): the table (or with
 * json, one JSON object) on standard output, the failed conditions of cs.
 * all: also the metrics that are 0 in every run of both.  Returns the
 * exit status: 0, 1 (a condition holds), 2 (unreadable file, not a
 * result, a condition naming no metric). */
int vtc_diff_results(const char *pa, const char *pb, const struct vtc_conds *cs, int json,
		     int all);

/* Read a vmreplay --json result from path into *r (free with
 * van_result_free).  0, or -1 with a message on standard error. */
struct van_result;
int vtc_diff_load_result(const char *path, struct van_result *r);

/* A result held against the recorded run of the trace it replayed
 * (difffid.c): the trace's own counters as the base, the replay's medians
 * over its runs as new, judged by vmreplay(1)'s tolerances.  Output and
 * exit status as vtc_diff_results ('any': every judged measure); 2 also
 * for a trace without counters. */
int vtc_diff_trace_result(const char *trace, const char *result, const struct vtc_conds *cs,
			  int json, int all);

#endif
