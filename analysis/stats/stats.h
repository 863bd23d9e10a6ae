/*
 * stats.h - the summary metrics of a trace, shared by `vmtrace stat` and
 * `vmtrace diff` (and usable by any other analysis).
 *
 * Feed every event in order to van_stats_add(), call van_stats_finish(),
 * then read the fields of struct van_stats, or the flat metric list of
 * van_stats_metrics() (names such as "ops.mmap.count", "peak_vmas") that
 * diff compares.  Memory does not grow with the length of the trace, only
 * with the number of processes, threads and distinct call stacks.
 *
 * Conventions as in vmtrace.h: 0 or -errno, no printing.
 */
#ifndef VAN_STATS_H
#define VAN_STATS_H

#include <stdint.h>
#include "vmtrace.h"

struct van_op_stats {
	uint64_t count;
	uint64_t errors;  /* result < 0 */
	uint64_t bytes;	  /* length of successful calls: the len argument
			     (mmap: the length; mremap: the new length; brk,
			     shmat, shmdt: the bytes mapped or unmapped) */
	uint64_t time_ns; /* sum of exit - entry times (not deterministic) */
};

/* madvise by advice: one entry per advice seen. */
struct van_advice_stats {
	uint64_t advice; /* MADV_* value */
	struct van_op_stats s;
};

struct van_proc_stats {
	int seen;
	int32_t pid;		/* 0 if no PROCESS_START */
	uint32_t parent;	/* VMT_NONE for a root */
	const char *path;	/* its program: the last EXEC path, else its parent's at
				   the fork, or "" (owned by the stats) */
	uint64_t ops, errors;
	uint64_t peak_vmas, peak_mapped_bytes, peak_locked_bytes;
	int exited;
	int32_t exit_status;	/* raw wait status */
};

struct van_thread_stats {
	int seen;
	int32_t tid;
	uint32_t proc;
	uint64_t ops, errors;
};

/* A call site: the first frame of a stack outside the C library and the
 * dynamic loader (the leaf when every frame is inside them), named by
 * function and module so two recordings match despite ASLR. */
struct van_site {
	char *name;	     /* "func (module)", "module+0x1234" or "0x..." */
	uint64_t count, errors;
	uint64_t op_count[VMT_OP__COUNT];
};

struct van_stats_priv;

struct van_stats {
	uint64_t events;
	uint64_t by_kind[VMT_EV__COUNT];
	uint32_t processes, threads; /* distinct indices seen */
	uint64_t start_ns;	     /* header's start (time 0) */
	uint64_t first_ns, last_ns;  /* timestamps of first/last event */
	uint64_t duration_ns;	     /* last - first */
	uint64_t syscalls, errors;
	struct van_op_stats ops[VMT_OP__COUNT];
	struct van_advice_stats *advice; /* sorted by advice value */
	uint32_t nadvice;
	/* Peaks of any one process's address space (the kernel's limits and
	 * costs are per process), and when they were first reached (ns
	 * since the start of recording). */
	uint64_t peak_vmas, peak_vmas_ns;
	uint64_t peak_mapped_bytes, peak_mapped_ns;
	uint64_t peak_locked_bytes, peak_locked_ns;
	uint64_t touched_pages;	/* present pages in TOUCH events */
	uint64_t touched_file_pages; /* of those, file pages not known to be
				       written (how many depends on the page
				       cache, not only on the program) */
	uint64_t touched_written_pages;
	uint64_t faults, faults_read, faults_write, faults_exec, faults_other;
	uint64_t lost_faults, lost_events;
	uint64_t model_inexact;	/* events the VMA model had to guess */
	struct van_proc_stats *procs; /* [nprocs], indexed by proc */
	size_t nprocs;
	struct van_thread_stats *thread; /* [nthreads], indexed by thread */
	size_t nthreads;
	int has_stacks;		/* some syscall had a stack */
	struct van_site *sites;	/* after finish: by count, descending */
	uint32_t nsites;
	struct van_stats_priv *priv;
};

/* Start collecting for a trace with header h (page size, start time).
 * Returns 0 or -ENOMEM. */
int van_stats_init(struct van_stats *s, const struct vmt_header *h);
/* Take in one event.  Returns 0, -ENOMEM, or VMT_E_CORRUPT for a bad
 * symbol table entry. */
int van_stats_add(struct van_stats *s, const struct vmt_event *ev);
/* Compute what needs the whole trace (call sites).  Returns 0/-ENOMEM. */
int van_stats_finish(struct van_stats *s);
void van_stats_free(struct van_stats *s);

/* Read every event of r into s (init, add..., finish).  Returns 0 at the
 * clean end, or the reader's negative error (s then holds the events
 * before the damage, finished), or -ENOMEM. */
int van_stats_read(struct van_stats *s, vmt_reader *r);

/* ---- flat metrics ------------------------------------------------------- */

#define VAN_METRIC_TIMING 0x1u /* depends on timing: not deterministic */
#define VAN_METRIC_ENV 0x2u    /* depends on the machine's state (page
				  cache): not deterministic either */
#define VAN_METRIC_NOISY (VAN_METRIC_TIMING | VAN_METRIC_ENV)

struct van_metric {
	char name[48];	/* "ops.mmap.count", "madvise.MADV_FREE.bytes", ... */
	double value;
	uint32_t flags;	/* VAN_METRIC_* */
};

/* Every metric of s, in a fixed order (the same names for every trace,
 * except that madvise.<ADVICE>.* exist only for known advice values).
 * Returns a malloc'd array and its length in *n, or NULL on -ENOMEM. */
struct van_metric *van_stats_metrics(const struct van_stats *s, size_t *n);

/* Name of an advice value ("MADV_DONTNEED"), or "MADV_<n>" in buf. */
const char *van_advice_name(uint64_t advice, char *buf, size_t len);

#endif
