/*
 * resultdiff.h - compare two sets of vmreplay results (the --json files of
 * two replays, e.g. of one trace on two kernels): per metric, the two
 * medians, their ratio and whether the difference is significant over the
 * runs of each side (two-sided Mann-Whitney U test).
 *
 * Conventions as in the other engines: 0 or a negative errno, a message
 * buffer for what was wrong, no printing.
 */
#ifndef VAN_RESULTDIFF_H
#define VAN_RESULTDIFF_H

#include <stddef.h>
#include <stdint.h>

/* ---- The test ------------------------------------------------------------ */

struct van_mwu {
	double u;     /* U of the first sample: pairs (a, b) with a > b, ties 1/2 */
	double p;     /* two-sided p-value */
	double p_min; /* the smallest p-value samples of these sizes can give */
	int exact;    /* 1: the exact permutation distribution (ties included);
			 0: the normal approximation (large samples) */
};

/* Two-sided Mann-Whitney U test of a[0..na) against b[0..nb).  The
 * p-value is exact, conditional on the ties present, up to 60 values in
 * all; beyond, the normal approximation with tie and continuity
 * correction.  Identical samples give p = 1.  Returns 0, -EINVAL when a
 * sample is empty, -ENOMEM. */
int van_mann_whitney(const double *a, size_t na, const double *b, size_t nb, struct van_mwu *r);

/* The smallest two-sided p-value of samples of na and nb values: every a
 * above every b, 2 / C(na + nb, na).  When it is not below the level, no
 * difference can be significant with so few runs. */
double van_mwu_min_p(size_t na, size_t nb);

/* Median as vmreplay takes it: the middle value, or for an even count the
 * lower middle plus half the gap, rounded down (v is sorted in place). */
double van_median(double *v, size_t n);

/* ---- Result files -------------------------------------------------------- */

/* One metric of a result file, one value per run. */
struct van_rmetric {
	char name[64];	/* "wall_ns", "ops.mmap.p99_ns", ... */
	double *v;	/* nruns values */
	int timing;	/* a time (ns): emulated under TCG */
};

/* The first copy's replay threads' own counts in a run (each copy
 * replays the whole trace): what a replay is held against its recorded
 * run by (vmtrace diff TRACE RESULT). */
enum { VAN_OWN_MINFLT, VAN_OWN_MAJFLT, VAN_OWN_VCS, VAN_OWN_IVCS, VAN_OWN_OFFCPU, VAN_OWN__N };

struct van_result {
	double speed;		/* 0: --speed=max */
	double *own[VAN_OWN__N]; /* nruns values each */
	int own_waits;		/* every thread of every run watched its calls'
				   waits (own[VAN_OWN_OFFCPU] holds them) */
	char *trace;		/* "trace" as the result names it ("" if absent) */
	double trace_events;	/* -1 if absent */
	char *kernel;		/* kernel release the replay ran on (NULL: unknown) */
	int cpus;		/* 0: unknown */
	char *accel;		/* "kvm", "tcg" for a replay in a guest; NULL on the host */
	unsigned nruns;
	size_t nmetrics;
	struct van_rmetric *m;
};

/* Does text look like a vmreplay --json result rather than a trace (its
 * first non-blank byte is '{')? */
int van_result_sniff(const char *text, size_t len);

/* Read a vmreplay --json result (a plain or --rewrite replay: "runs" and
 * "median"; a --compare result is refused, naming its two sides).  The
 * metrics: wall_ns, minor_faults, major_faults, voluntary_cs,
 * involuntary_cs, wait_ns, divergences, peak_vmas, events, and for every
 * op any run replayed, ops.OP.count, .errors, .p50_ns and .p99_ns.
 * Returns 0, or -EINVAL with msg ("not a vmreplay result: no \"runs\""),
 * -ENOMEM. */
int van_result_parse(const char *text, size_t len, struct van_result *r, char *msg,
		     size_t msglen);
void van_result_free(struct van_result *r);

enum van_sig {
	VAN_SIG_NO = 0,	 /* p >= alpha */
	VAN_SIG_YES,	 /* p < alpha */
	VAN_SIG_FEW,	 /* too few runs: even a complete separation has p >= alpha */
};

/* One row of a comparison. */
struct van_rrow {
	const char *name;	  /* points into the results */
	int timing;
	double base, new_;	  /* medians */
	double base_min, base_max, new_min, new_max;
	double ratio;		  /* new / base, the divisor taken as at least 1 */
	double change_pct;	  /* (new - base) / base * 100; +-INFINITY from 0 */
	double p;		  /* two-sided Mann-Whitney p-value */
	int sig;		  /* enum van_sig */
};

/* Rows for every metric of either result (base's order, then those only
 * new has; a metric a side lacks counts 0 in each of its runs), tested at
 * level alpha.  *rows is malloc'd; it points into a and b.  Returns 0 or
 * -ENOMEM. */
int van_result_compare(const struct van_result *a, const struct van_result *b, double alpha,
		       struct van_rrow **rows, size_t *n);

#endif
