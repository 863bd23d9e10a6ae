/*
 * compare.h - vmreplay --rewrite and --compare: replay a trace as
 * rewritten by rules of the rewrite engine (analysis/rewrite/rewrite.h),
 * alone or alternating with the original, and report both side by side.
 *
 * The rewritten trace lives in an unlinked temporary file (memfd, else an
 * O_TMPFILE in $TMPDIR) and is loaded with rp_trace_load_fd, so a compare
 * replays exactly what `vmtrace rewrite` would have written.
 *
 * Conventions as in replay.h: 0 or a negative errno / VMT_E_* code, a
 * message buffer for what went wrong, no printing outside the report
 * functions' FILE, no exits.
 */
#ifndef VMREPLAY_COMPARE_H
#define VMREPLAY_COMPARE_H

#include <stdint.h>
#include <stdio.h>
#include "replay.h"
#include "rewrite.h"

#define RP_MAX_RULES 16

/* What a rewrite did: the canonical rule list and each rule's count. */
struct rp_rewrite_info {
	char rules[VAN_REWRITE_MAX_LIST + 1];
	uint32_t nrules;
	struct {
		char name[48];
		uint64_t applied;
	} rule[RP_MAX_RULES];
	uint64_t events_in, events_out;
	uint64_t overflows; /* early decisions forced by the engine's look-ahead limit */
	/* the calls of the trace as recorded and as rewritten: all, those
	 * that take mmap_lock for writing, those that change VMAs */
	struct van_rewrite_calls calls_in, calls_out;
};

/* Rewrite the trace at path by `rules` (NULL or "": the default list) and
 * load the result for replay with options o.  *info receives the rule
 * counts.  Errors: a bad rule list (-EINVAL, the engine's message), an
 * unreadable or damaged trace (the reader's code and message), or a
 * trace the loader refuses.  is_input_error (if not NULL) is set to 1 when
 * the fault lies with the arguments or the trace rather than this machine
 * (the program's exit 2 versus 1). */
int rp_load_rewritten(const char *path, const char *rules, const struct rp_options *o,
		      rp_trace **out, struct rp_rewrite_info *info, int *is_input_error,
		      char *msg, size_t msglen);

/* Both sides of a compare: n runs each and their medians. */
struct rp_compare {
	unsigned n;
	struct rp_run_result *base, *rew; /* n each */
	struct rp_run_result base_med, rew_med;
};

/* Replay base and rew alternately (base, rew, base, rew, ...) n times
 * each, so slow drifts of the machine hit both sides alike, then take the
 * medians.  On error the runs done so far are freed.  Free with
 * rp_compare_free. */
int rp_compare_run(rp_trace *base, rp_trace *rew, const struct rp_options *o,
		   unsigned n, struct rp_compare *c, char *msg, size_t msglen);
void rp_compare_free(struct rp_compare *c);

/* baseline / rewritten with the divisor taken as at least 1 (the "ratio"
 * of vmreplay(1), JSON OUTPUT). */
double rp_ratio(uint64_t base, uint64_t rew);

/* The one comparison table: per metric the two medians, their ratio, the
 * min-max of each side and whether the difference is clear (the ranges do
 * not overlap), then the rule counts and any divergences.  quiet: the
 * rule counts and one totals line per side.  Returns 0 or -EIO. */
int rp_compare_report_text(FILE *f, const rp_trace *base, const rp_trace *rew,
			   const struct rp_options *o, const struct rp_rewrite_info *info,
			   const struct rp_compare *c, int quiet);

/* {"trace":..., ..., "rewrite":LIST, "baseline":{"runs","median"},
 *  "rewritten":{"runs","median"}, "rules":{NAME:N}, "ratio":{...},
 *  "fidelity":{"baseline":{...},"rewritten":{...}}}
 * where ratio has every number of a run object (nested the same way, for
 * "ops" the ops either side ran), each the baseline median over the
 * rewritten one.  Returns 0, -ENOMEM or -EIO. */
int rp_compare_report_json(FILE *f, const rp_trace *base, const rp_trace *rew,
			   const struct rp_options *o, const struct rp_rewrite_info *info,
			   const struct rp_compare *c);

/* For --rewrite: the rule counts (one line), for the text report. */
int rp_rewrite_report_rules(FILE *f, const struct rp_rewrite_info *info);

/* For --rewrite --json: the normal report's object plus "rewrite" and
 * "rules".  Returns 0, -ENOMEM or -EIO. */
int rp_rewrite_report_json(FILE *f, const rp_trace *t, const struct rp_options *o,
			   const struct rp_rewrite_info *info, const struct rp_run_result *runs,
			   unsigned n, const struct rp_run_result *med);

#endif
