/*
 * failon.h - the --fail-on conditions of `vmtrace diff`, shared by the
 * diff of two traces (diff.c) and of two vmreplay results (diffres.c).
 */
#ifndef VTC_FAILON_H
#define VTC_FAILON_H

#include <stddef.h>

struct vmt_buf;

struct vtc_cond {
	char metric[48]; /* a name, a glob, or "any" */
	char text[96];	 /* the condition as written */
	int greater;	 /* '>' rather than '<' */
	int percent;
	double limit;	 /* signed */
};

struct vtc_conds {
	struct vtc_cond *c;
	size_t n;
};

/* Add the comma-separated conditions of arg ("METRIC>+N%,..." ) to cs.
 * Prints `vmtrace diff: bad --fail-on expression '...': why` and returns
 * -1 on a bad one. */
int vtc_conds_add(struct vtc_conds *cs, const char *arg);
void vtc_conds_free(struct vtc_conds *cs);

/* (new - base) / |base| * 100; 0 when equal, +-INFINITY from 0. */
double vtc_change_pct(double base, double nw);

/* Does condition c hold for a metric that went from base to nw? */
int vtc_cond_holds(const struct vtc_cond *c, double base, double nw);

/* Does c name the metric `name`?  `any` names every metric for which
 * in_any is set. */
int vtc_cond_matches(const struct vtc_cond *c, const char *name, int in_any);

/* Whether every condition of cs names a metric, "any" or one of the n
 * names that name(rows, i) gives (a glob: at least one): 0, or -1 after
 * `vmtrace diff: bad --fail-on expression '...': no metric '...'` (a typo
 * must not pass silently). */
int vtc_conds_known(const struct vtc_conds *cs, const char *(*name)(const void *rows, size_t i),
		    const void *rows, size_t n);

/* The start of a diff's JSON object: {"base":BASE,"new":NEW (the paths
 * as JSON strings), for the caller to go on with ",..." keys. */
void vtc_diff_json_head(struct vmt_buf *out, const char *base, const char *nw);

/* The start of a condition's entry in a diff's JSON "failed" list (the
 * nfail-th): {"expr":TEXT,"metric":NAME, for the caller to go on with
 * ",..." keys. */
void vtc_diff_json_fail(struct vmt_buf *out, int nfail, const struct vtc_cond *c,
			const char *metric);

/* The end of a diff: the verdict appended to out (with json, closing the
 * "failed" list and the object; as text only when there are nconds
 * conditions), then out written to standard output.  Returns the exit
 * status: 1 when nfail conditions held, 0 when none, 2 when out ran out
 * of memory (said on standard error, nothing written). */
int vtc_diff_verdict(struct vmt_buf *out, int json, size_t nconds, int nfail);

#endif
