/*
 * rtable.h - the table of one trace replayed on several kernels, in the
 * manner of mmtests' compare-kernels.sh: one row per metric, one column
 * group per kernel (its median or mean, its coefficient of variation,
 * its ratio to the base column, a mark where the difference from the
 * base is significant over the runs), the first column that has results
 * being the base.  `vmreplay --kernel=A --kernel=B --host` prints it, and
 * `vmtrace diff BASE.json NEW1.json NEW2.json ...` prints it again from
 * the result files (vmreplay(1), SEVERAL KERNELS).
 *
 * A column comes from the text of one result file: a vmreplay --json
 * result, or the file vmreplay writes for a kernel that gave none
 * ({"error": why, ...}), so that a column says why it is empty.
 *
 * Conventions as in resultdiff.h: 0 or a negative errno, a message
 * buffer, no printing (the text and JSON go to a vmt_buf).
 */
#ifndef VAN_RTABLE_H
#define VAN_RTABLE_H

#include <stddef.h>
#include "resultdiff.h"

struct vmt_buf;

/* The settings of vmt_host_mm_words, as a table column shows them. */
#define VAN_RCOL_MM 8

struct van_rcol {
	char *label;	    /* the kernel release (or the image's version, or
			       the file's name): the column's name */
	char *path;	    /* the file it came from ("" when none) */
	char *error;	    /* no results: why; NULL when there are */
	struct van_result r; /* when !error */
	char *where;	    /* "tcg", "kvm" (a qemu guest) or "host" */
	int cpus;	    /* 0: unknown */
	double memory;	    /* the guest's memory, bytes; 0: unknown or the host */
	/* The mm settings where it ran and in the recording (NULL: not
	 * said), and those the guest was asked for but could not be set. */
	char *mm[VAN_RCOL_MM], *mm_rec[VAN_RCOL_MM];
	char *unset;	    /* "thp_defrag=defer: Invalid argument; ..." or NULL */
	/* CPU time others took while it ran, as a share of the machine
	 * (percent; -1: not measured): on the host (other processes, the
	 * other guests), and inside a guest (its kernel threads, its
	 * interrupts, its /init). */
	double host_noise, guest_noise;
};

/* Read one column from the text of a result file (untrusted: anything
 * else is refused with the reason in msg).  path names it ("" if none).
 * Returns 0, -EINVAL or -ENOMEM. */
int van_rcol_parse(const char *text, size_t len, const char *path, struct van_rcol *c,
		   char *msg, size_t msglen);
void van_rcol_free(struct van_rcol *c);

/* One cell: one column's runs of one metric. */
struct van_rcell {
	int have;	/* the column has results */
	double median, mean, sd, cv; /* cv: sd / mean * 100 (0 when the mean is 0) */
	double min, max;
	double ratio;	/* its statistic (median or mean, as the row shows)
			   over the base's, the divisor at least 1 */
	double change_pct; /* (stat - base) / |base| * 100; +-INFINITY from 0 */
	double p;	/* two-sided Mann-Whitney p-value against the base */
	int sig;	/* enum van_sig; -1 for the base column */
};

enum van_rsection {
	VAN_RS_COUNTS = 0, /* faults, switches, VMAs, calls: the replay's own */
	VAN_RS_TIMES,	   /* wall, latencies: emulated under TCG */
};

struct van_rtrow {
	const char *name;	/* points into a column's result */
	int timing;		/* a time (ns) */
	int section;		/* enum van_rsection */
	int mean;		/* the row shows means (rare events: a median of
				   0 hides them), else medians */
	struct van_rcell *cell; /* one per column */
};

struct van_rtable {
	const struct van_rcol *cols;
	size_t ncols;
	size_t base;		/* the first column with results (ncols: none has) */
	double alpha;
	size_t nrows;
	struct van_rtrow *rows; /* counts first, then times */
};

/* Build the table of cols[0..n) at significance level alpha: a row for
 * every metric of any column (in the first column's order, then those
 * others add; a metric a column lacks counts 0 in each of its runs),
 * the counts before the times.  cols must outlive the table.  Returns 0
 * or -ENOMEM. */
int van_rtable_build(const struct van_rcol *cols, size_t n, double alpha, struct van_rtable *t);
void van_rtable_free(struct van_rtable *t);

/* Is a row shown: all, or a metric not 0 in every run of every column. */
int van_rtable_shown(const struct van_rtable *t, const struct van_rtrow *row, int all);

/* The table as text: the header (each column's kernel, where it ran, its
 * CPUs and memory, runs, mm settings, noise, and why a column has no
 * results), the counts, the times (TCG columns marked), then the legend.
 * Appended to out. */
void van_rtable_text(const struct van_rtable *t, int all, struct vmt_buf *out);

/* The same as JSON members, without the braces around them:
 * "kind":"results-table","alpha":A,"base":I,"columns":[...],"metrics":[...]
 * (vmtrace(1), diff).  Appended to out. */
void van_rtable_json(const struct van_rtable *t, int all, struct vmt_buf *out);

/* The smallest equal number of runs per column with which a difference
 * can be significant at alpha (4 at 0.05). */
unsigned van_runs_needed(double alpha);

#endif
