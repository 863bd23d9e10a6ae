/*
 * rwrun.h - the rewrite tests' part of the unit-test toolkit, on top of
 * tgen.h: a trace with process 0 and threads 0 to 2 (rwt_open), rewritten
 * file to file with van_rewrite_trace(), read back and compared line by
 * line with the expected stream (the text `vmtrace dump` shows, without
 * the time column; calls flagged VMT_SC_REWRITTEN render with
 * " (rewritten)", process 0's lines start with the thread, others' with
 * "pN ").
 */
#ifndef VMT_RWRUN_H
#define VMT_RWRUN_H

#include <stdint.h>
#include "linux_abi.h"
#include "rewrite.h"
#include "tgen.h"

/* An uncommit: mmap(a, len, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED, -1, 0) = a */
#define RWT_UNCOMMIT(b, proc, thread, addr, len) \
	TG_PUT_SC(b, proc, thread, VMT_OP_MMAP, addr, addr, len, LX_PROT_NONE, PRIV_ANON_FIXED, FD_NONE, 0)

/* Process 0 with threads 0, 1 and 2, in a memfd; the stream shown leaves
 * these starts out. */
void rwt_open(struct tg_trace *b);

/* What a rewrite did (of at most 8 rules). */
struct rwt_result {
	char *text; /* the rewritten stream (malloc'd) */
	uint32_t nrules;
	uint64_t applied[8], removed[8];
	struct van_rewrite_count first; /* the first rule's counts */
	char note[400];			/* its note ("" without) */
	uint64_t events_in, events_out;
	struct van_rewrite_calls in, out;
};

/* Finish b's trace and rewrite it with `rules` (NULL: the default); the
 * output header must say so. */
struct rwt_result rwt_run(struct tg_trace *b, const char *rules);

/* Fail the test unless got is want, showing both. */
void rwt_expect(const char *got, const char *want);

/* The trace rewritten by `rules` must be exactly `want`, the first rule
 * applied `applied` times. */
void rwt_check(struct tg_trace *b, const char *rules, const char *want, uint64_t applied);

#endif
