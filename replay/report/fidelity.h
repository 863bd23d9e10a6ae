/*
 * fidelity.h - how faithful a replay was (fidelity.c): its threads' own
 * counters against those the recorded run's kernel counted (COUNTERS
 * events, vmtrace(5)), judged by the tolerances of vmreplay(1), FIDELITY.
 * Internal to replay/report/.
 */
#ifndef VMREPLAY_FIDELITY_H
#define VMREPLAY_FIDELITY_H

#include <stdint.h>
#include <stdio.h>
#include "model.h"
#include "replay.h"

/* The tolerances (vmreplay(1) says the same): relative, with a floor
 * below which a difference is too small to tell (counts, or ns). */
#define RP_FID_FAULTS_TOL 0.02
#define RP_FID_FAULTS_FLOOR 2
#define RP_FID_CS_TOL 0.25
#define RP_FID_CS_FLOOR 10
#define RP_FID_OFFCPU_TOL 0.25
#define RP_FID_OFFCPU_FLOOR 1000000
#define RP_FID_WALL_TOL 0.05
#define RP_FID_WALL_FLOOR 5000000

/* One measure, replayed against recorded. */
struct rp_fid_num {
	uint64_t replay, recorded;
	uint8_t have;	/* both sides have it */
	uint8_t judged; /* held against its tolerance (else only shown) */
	uint8_t ok;	/* judged and within it */
	uint8_t pad;
};

enum { RP_FID_MINFLT, RP_FID_MAJFLT, RP_FID_VCS, RP_FID_IVCS, RP_FID_OFFCPU, RP_FID__N };

struct rp_fid_row {
	uint32_t rec;	  /* recorded thread or process index */
	uint32_t proc;	  /* a thread's recorded process */
	int32_t os_pid;	  /* a process's recorded pid */
	const char *path; /* a process's program (in the trace's memory) */
	struct rp_fid_num n[RP_FID__N];
	/* Faults by kind of mapping (processes): recorded (FAULT or TOUCH
	 * events), replayed (sampled, scaled up for what was lost). */
	uint8_t kinds_rec, kinds_rep;
	uint64_t rec_kind[RP_FK__COUNT], rep_kind[RP_FK__COUNT];
};

#define RP_FID_MAX_WARN 16
struct rp_fidelity {
	int have;	    /* the trace has its recorded run's counters */
	char why_not[160];  /* ... else why not */
	int speed1;	    /* replayed at --speed=1 */
	int no_watch;	    /* --no-watch: the replay sampled nothing */
	int rewritten;	    /* a rewritten trace: its recorded counters are
			       the original's, and differences are also the
			       rewrite's (no warnings) */
	struct rp_fid_row total;
	struct rp_fid_num wall;
	uint32_t missing;   /* recorded processes without counters (left out) */
	struct rp_fid_row *procs, *threads;
	uint32_t nprocs, nthreads;
	int ok;		    /* every judged measure within its tolerance */
	char verdict[320];  /* "faults 0.998, ..." */
	uint32_t nwarn;
	char warn[RP_FID_MAX_WARN][320];
	char reclaim[320];  /* "" when reclaim did nothing */
	char mm[320];	    /* "" when this machine's memory-management
			       settings are the recording's, else which differ:
			       "thp=always (recorded madvise)" */
	struct rp_reclaim rc; /* what it did */
	/* A trace loaded as the replay ran (longer than --window): the
	 * load's CPU time beside the replay threads, their time waiting for
	 * it (late: they did wait), and the line saying so ("" when the
	 * trace was loaded whole before the run). */
	int streamed, late;
	uint64_t load_cpu_ns, load_wait_ns;
	char load[400];
};

/* The fidelity of run r (one copy: the first) of trace t replayed with
 * options o, into *f.  0, or -ENOMEM. */
int rp_fidelity(const rp_trace *t, const struct rp_options *o, const struct rp_run_result *r,
		struct rp_fidelity *f);
void rp_fidelity_free(struct rp_fidelity *f);
/* The section for the readable report (quiet: the verdict line and the
 * warnings only), and its JSON value (an object). */
void rp_fidelity_text(FILE *out, const struct rp_fidelity *f, int quiet);
void rp_fidelity_json(struct vmt_buf *b, const struct rp_fidelity *f);
/* The three in one, for a report: computed, printed or appended, freed.
 * 0 or -ENOMEM. */
int rp_fidelity_report(FILE *out, const rp_trace *t, const struct rp_options *o,
		       const struct rp_run_result *r, int quiet);
int rp_fidelity_append(struct vmt_buf *b, const rp_trace *t, const struct rp_options *o,
		       const struct rp_run_result *r);

#endif
