/*
 * replay.h - libvmreplay: load a vmrec trace and re-execute it on this
 * machine, measuring faults, context switches, per-op latency and
 * divergences (vmreplay(1)).
 *
 * Use: rp_options_default(), rp_trace_load(), then rp_run() as often as
 * wanted (each run is a fresh process tree, so runs are independent and can
 * alternate between traces, as --compare does), then rp_trace_free().
 *
 * Conventions: functions return 0 or a negative errno / VMT_E_* code and,
 * when given a message buffer, fill it with one lowercase line saying what
 * was wrong ("peak mapped memory 30.0 GiB exceeds --max-memory 12.0 GiB").
 * Nothing here prints or exits.
 */
#ifndef VMREPLAY_REPLAY_H
#define VMREPLAY_REPLAY_H

#include <stdint.h>
#include <stdio.h>
#include "vmtrace.h"

enum rp_order {
	RP_ORDER_RESOURCE = 0, /* overlapping ranges keep their recorded order */
	RP_ORDER_STRICT,       /* the recorded total order */
	RP_ORDER_FREE,	       /* per-thread order only */
};

enum rp_placement {
	RP_PLACE_KERNEL = 0, /* hint-less mmaps: this kernel chooses */
	RP_PLACE_EXACT,	     /* the recorded address (MAP_FIXED_NOREPLACE) */
};

enum rp_files {
	RP_FILES_SCRATCH = 0, /* sparse scratch files of the recorded size */
	RP_FILES_ORIGINAL,    /* the recorded path, read-only, if same size */
};

/* Progress of long work, for a display: RP_PROGRESS_LOAD (done and total:
 * bytes of the trace read so far and its size, 0 when unknown), called
 * every few thousand events of a load; RP_PROGRESS_RUN (done: ns since
 * the run started, 0 in the first report of each run; total: the trace's
 * recorded duration in ns), called as a run starts and then about 4 times
 * a second while it goes on (Linux 5.3 and later: pidfds).  From the
 * calling thread; the function decides what to show and when. */
enum rp_progress_what {
	RP_PROGRESS_LOAD = 1,
	RP_PROGRESS_RUN,
};
typedef void (*rp_progress_fn)(void *arg, int what, uint64_t done, uint64_t total);

/* A trace cut short (no footer: the recorder was killed). */
enum rp_truncated {
	RP_TRUNC_REFUSE = 0, /* refuse it, naming --truncated=replay */
	RP_TRUNC_REPLAY,     /* replay its events up to the last complete
				chunk; threads alive at the cut end there */
};

/* The clock of op latencies. */
enum rp_clock {
	RP_CLOCK_AUTO = 0,  /* the TSC where the kernel keeps time with it,
			       else CLOCK_MONOTONIC */
	RP_CLOCK_MONOTONIC, /* clock_gettime(CLOCK_MONOTONIC) */
};

/* --speed's range (a millionth of real time turns a second of the trace
 * into eleven days); the pacing saturates beyond. */
#define RP_SPEED_MIN 1e-6
#define RP_SPEED_MAX 1e9

struct rp_options {
	int order;	     /* enum rp_order */
	int placement;	     /* enum rp_placement */
	int files;	     /* enum rp_files */
	int clock;	     /* enum rp_clock */
	double speed;	     /* 0: as fast as possible; else recorded gaps / speed,
				speed in [RP_SPEED_MIN, RP_SPEED_MAX] */
	uint32_t scale;	     /* copies of the trace run at once (>= 1) */
	uint64_t max_memory; /* refuse traces needing more (bytes; 0: half of RAM) */
	int truncated;	     /* enum rp_truncated */
	uint64_t window;     /* bytes of loaded elements kept in memory (0:
				rp_window_default()): a trace that needs more
				is loaded as it is replayed, again for each run */
	int no_watch;	     /* the replay threads do not watch their own
				faults and waits (perf): the fidelity section
				then cannot say where faults differ, nor how
				long calls were off CPU */
	rp_progress_fn progress; /* NULL: none */
	void *progress_arg;
};

#define RP_WINDOW_MIN (4ull << 10)
/* The default window: a sixteenth of the machine's memory, from
 * RP_WINDOW_LOW to RP_WINDOW_HIGH.  A trace loaded whole replays alone
 * on the machine; one loaded as it runs shares it with its load (its
 * CPU, its waits), and a trace of a few million events (100 to 200
 * bytes each, loaded) is where that starts. */
#define RP_WINDOW_LOW (48ull << 20)
#define RP_WINDOW_HIGH (1ull << 30)
uint64_t rp_window_default(void);

void rp_options_default(struct rp_options *o);

/* ---- The command line (opts.c) ------------------------------------------ */

enum rp_action {
	RP_ACTION_RUN = 0,	/* replay */
	RP_ACTION_HELP,		/* print rp_usage() and the rules, exit 0 */
	RP_ACTION_VERSION,	/* print the version, exit 0 */
};

enum rp_mode {
	RP_MODE_REPLAY = 0, /* the trace as recorded */
	RP_MODE_REWRITE,    /* --rewrite: the trace rewritten by rules */
	RP_MODE_COMPARE,    /* --compare: both, alternately */
};

enum rp_vm_accel {
	RP_VM_AUTO = 0, /* KVM where a guest boots with it, else TCG */
	RP_VM_KVM,
	RP_VM_TCG,
};

#define RP_VM_MEMORY_MIN (128ull << 20) /* below, the kernel does not boot */
#define RP_VM_TIMEOUT_DEFAULT 600	/* seconds, boot to power-off */
#define RP_VM_CPUS_MAX 64
#define RP_KERNELS_MAX 8   /* --kernel images in one command */
#define RP_VM_SYSCTL_MAX 16 /* --vm-sysctl settings */
#define RP_VM_CMDLINE_MAX 512
/* Runs of each kernel by default: the fewest with which the two-sided
 * Mann-Whitney test can call a difference significant at 5% with room
 * for one run out of place (4 runs need a complete separation). */
#define RP_KERNEL_REPEAT_DEFAULT 5

/* What vmreplay's command line asks for. */
struct rp_args {
	int action;	    /* enum rp_action */
	int mode;	    /* enum rp_mode */
	const char *trace;  /* TRACE (points into argv) */
	const char *json;   /* --json=FILE, or NULL */
	const char *rules;  /* with --rewrite/--compare: the rule list */
	unsigned repeat;    /* runs (of each side with --compare) */
	int quiet;	    /* -q */
	int progress;	    /* 1 --progress, 0 --no-progress, -1 not given */
	struct rp_options o;
	/* --kernel: replay in a qemu guest that boots this kernel image. */
	const char *kernel;	/* the first --kernel=IMAGE, or NULL */
	const char *kernels[RP_KERNELS_MAX]; /* every --kernel, in order */
	unsigned nkernels;
	int host;		/* --host: on this machine too */
	unsigned host_pos;	/* its column: after this many kernels */
	unsigned vm_jobs;	/* --vm-jobs: guests at once (1) */
	const char *vm_sysctl[RP_VM_SYSCTL_MAX]; /* --vm-sysctl=KEY=VALUE, in order */
	unsigned nsysctl;
	char vm_cmdline[RP_VM_CMDLINE_MAX]; /* --vm-cmdline, joined by spaces */
	int json_dir;		/* --json names a directory (several kernels) */
	unsigned vm_cpus;	/* --vm-cpus (0: as many as this machine has) */
	uint64_t vm_memory;	/* --vm-memory, bytes (0: sized from the trace) */
	int vm_accel;		/* --vm-accel, enum rp_vm_accel */
	unsigned vm_timeout;	/* --vm-timeout, seconds */
	const char *vm_console; /* --vm-console=FILE, or NULL */
};

/* Parse vmreplay's command line into *a (options from rp_options_default,
 * then the command line).  clock_env is the value of VMREPLAY_CLOCK (NULL
 * when unset): "monotonic" chooses RP_CLOCK_MONOTONIC.  Returns 0, or
 * -EINVAL with a one-line reason (no "vmreplay:" prefix) in err. */
int rp_parse_args(int argc, char **argv, const char *clock_env, struct rp_args *a,
		  char *err, size_t errlen);

/* The file a --vm-sysctl setting ("KEY=VALUE") writes in the guest, into
 * path: a recorded mm setting's (vmt_mm_path: thp, overcommit, ...), a
 * sysctl's (vm.max_map_count: /proc/sys/vm/max_map_count), or the file
 * under /proc/sys or /sys named.  Returns 0, or -EINVAL with the reason
 * (zeropage, which no file sets, among them) in err. */
int rp_vm_sysctl_path(const char *setting, char *path, size_t pathlen, char *err,
		      size_t errlen);

/* The --help text, without the list of rewrite rules (static). */
const char *rp_usage(void);

/* The command line of the same replay inside a guest (vm.h): argv[0]
 * "vmreplay", a's options in canonical form (not --kernel and the --vm-*
 * options), --json=json if json is not NULL, --progress if progress is
 * set, else --no-progress, then "--" and trace.  The pointers go to
 * argv (room for max, NULL-terminated), the strings to buf (bufsize
 * bytes).  VMREPLAY_CLOCK is not an option: the caller passes it on.
 * Returns the argument count, or -ENOSPC. */
int rp_guest_args(const struct rp_args *a, const char *trace, const char *json, int progress,
		  char **argv, size_t max, char *buf, size_t bufsize);

typedef struct rp_trace rp_trace;

/* Read and validate the trace at path and prepare it for replay with
 * options o (the order and memory limit are applied here).  A trace whose
 * elements fit in o->window is loaded whole; of a longer one, the first
 * window's worth, and each rp_run loads the rest as the replay goes on
 * (and fails when it is bad further on).  On error returns <0, *out =
 * NULL and msg says why (without the path). */
int rp_trace_load(const char *path, const struct rp_options *o, rp_trace **out,
		  char *msg, size_t msglen);
/* The same for a trace read from fd (from its current offset; not closed:
 * the trace keeps a duplicate to read it again), e.g. a rewritten trace in
 * an unlinked temporary file.  name is what the reports call the trace. */
int rp_trace_load_fd(int fd, const char *name, const struct rp_options *o, rp_trace **out,
		     char *msg, size_t msglen);
void rp_trace_free(rp_trace *t);

struct rp_trace_info {
	uint64_t events;   /* events in the trace */
	uint64_t ops;	   /* syscall ops to replay (one copy) */
	uint64_t skipped;  /* recorded ops that cannot be replayed */
	uint32_t threads, procs;
	uint64_t peak_mapped, peak_touched; /* bytes, one copy */
	uint64_t own_bytes;	/* the replay's own memory for them (all copies) */
	int streamed;		/* the trace is longer than --window: the peaks
				   are those of what has been loaded so far */
	uint64_t touch_unmapped_pages;
	uint64_t lost_events;
	const char *cut; /* NULL, or (--truncated=replay) the reader's message
			    saying where the trace was cut short */
	const char *rec_mm; /* the recording machine's mm settings, as
			       vmt_host_mm_words words ("" if unknown) */
};
void rp_trace_get_info(const rp_trace *t, struct rp_trace_info *i);

/* ---- Results ------------------------------------------------------------ */

/* Log-linear latency histogram: values below 16 exactly, then 16
 * sub-buckets per power of two (at most 6% apart), up to 2^44. */
#define RP_HIST_SUB 16
#define RP_HIST_BUCKETS (16 + 40 * RP_HIST_SUB)
/* A log-linear histogram of samples in one unit (nanoseconds, or the run's
 * clock ticks until rp_run converts them). */
struct rp_hist {
	uint64_t count, errors, sum, max;
	uint64_t b[RP_HIST_BUCKETS];
};
static inline unsigned rp_hist_bucket(uint64_t v)
{
	if (__builtin_expect(v < 16, 0))
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 4 */
	unsigned idx = 16 + (e - 4) * RP_HIST_SUB + (unsigned)((v >> (e - 4)) & (RP_HIST_SUB - 1));
	return idx < RP_HIST_BUCKETS ? idx : RP_HIST_BUCKETS - 1;
}
/* Inline: the replay loop adds one sample per replayed call. */
static inline void rp_hist_add(struct rp_hist *h, uint64_t v)
{
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	h->b[rp_hist_bucket(v)]++;
}
/* The value below which a fraction q (0..1) of the samples lie (bucket
 * upper bound, clamped to max); 0 for an empty histogram. */
uint64_t rp_hist_quantile(const struct rp_hist *h, double q);
void rp_hist_merge(struct rp_hist *dst, const struct rp_hist *src);

/* The kinds of mapping the fidelity section tells faults apart by
 * (vmreplay(1), FIDELITY). */
enum rp_fkind {
	RP_FK_ANON = 0,	  /* private anonymous (thread stacks included) */
	RP_FK_PFILE,	  /* private file */
	RP_FK_SFILE,	  /* shared file */
	RP_FK_SHM,	  /* SysV segments, shared anonymous memory */
	RP_FK_STACK,	  /* the main thread's [stack] */
	RP_FK_HEAP,	  /* [heap]: brk */
	RP_FK_OTHER,	  /* none of the trace's mappings, or the kernel's
			     pages ([vdso], [vvar]): recorded, those; replayed,
			     their stand-ins, or vmreplay's own memory */
	RP_FK__COUNT
};

struct rp_op_result {
	uint64_t count, errors, mean_ns, p50_ns, p90_ns, p99_ns, max_ns;
};
/* Its numbers in JSON order (the keys are the field names), for the run
 * object and the --compare ratios alike. */
#define RP_OP_NUMBERS(X) X(count) X(errors) X(mean_ns) X(p50_ns) X(p90_ns) X(p99_ns) X(max_ns)

struct rp_thread_result {
	uint32_t thread, proc, copy; /* recorded thread/process index */
	uint64_t elems;		     /* elements executed */
	uint64_t minor_faults, major_faults, voluntary_cs, involuntary_cs;
	uint64_t user_ns, sys_ns;    /* CPU time (getrusage) */
	uint64_t wait_ns, waits;     /* time blocked on other threads, and how often */
	uint64_t wakes;		     /* posts of this thread that woke sleepers */
	uint64_t busy_ns;	     /* first to last element of this thread */
	/* What the thread saw of itself (watched: perf let it): its replayed
	 * calls' time off CPU and switches, and its faults by the kind of
	 * mapping they were in (sampled; lost: samples the kernel dropped or
	 * never took). */
	uint32_t watched;
	uint64_t call_off_cpu_ns, call_vcsw, call_ivcsw;
	uint64_t kind_faults[RP_FK__COUNT]; /* minor and major */
	uint64_t fault_samples, fault_samples_lost;
};

/* What reclaim did on the whole machine during a run: /proc/vmstat
 * deltas (ok: read at both ends); damon_pageout: a DAMON pageout scheme
 * was on (kdamond, /sys/kernel/mm/damon/admin). */
struct rp_reclaim {
	int ok, damon_pageout;
	uint64_t refault_anon, refault_file, pgsteal, pgscan, pswpin, pswpout, pgmajfault;
};
/* Read the counters now into *r (the deltas are taken by the caller). */
void rp_reclaim_read(struct rp_reclaim *r);
/* *d = after - before, field by field (ok only if both were). */
void rp_reclaim_delta(const struct rp_reclaim *before, const struct rp_reclaim *after,
		      struct rp_reclaim *d);

#define RP_DIV_SHOWN 10
struct rp_divergence {
	uint64_t event;	 /* event index in the trace */
	uint32_t thread; /* recorded thread index */
	uint32_t copy;
	int64_t recorded, replayed;
	char text[200];	 /* vmt_render_text of the recorded event */
};

struct rp_run_result {
	uint64_t wall_ns;  /* first to last replayed element */
	uint64_t start_ns; /* CLOCK_MONOTONIC when the elements were let go
			      (not a JSON number: a time, not a measure) */
	/* The replayed program's: each replay thread's own getrusage from its
	 * first element to its last, summed. */
	uint64_t minor_faults, major_faults;
	uint64_t voluntary_cs, involuntary_cs;
	uint64_t divergences, events, peak_vmas;
	uint64_t wait_ns;  /* summed over threads */
	uint64_t touched_pages, touch_faults; /* pages re-touched; touches that trapped */
	uint64_t fallbacks; /* --placement=exact requests that got another address */
	uint64_t skipped;   /* elements not replayable */
	uint64_t load_wait_ns; /* summed over threads: waiting for the load
				  (a trace loaded as it runs, --window); not
				  in their figures (nor their switches then) */
	uint64_t load_cpu_ns;  /* the load's CPU time while the replay ran
				  (this process's: the load beside it) */
	/* vmreplay's own set-up in the replay processes, not in the figures
	 * above: the tree's getrusage less the threads' own (forking the
	 * replay processes, starting, ending and waiting for threads). */
	uint64_t setup_minor, setup_major, setup_vcsw, setup_ivcsw;
	/* The perf software counters of the whole tree (the threads and the
	 * set-up; none of the faults of get_user_pages), and the threads' own
	 * sums (= minor_faults, major_faults). */
	int perf_ok;
	uint64_t perf_minor, perf_major, perf_cs;
	uint64_t rusage_minor, rusage_major;
	struct rp_op_result ops[VMT_OP__COUNT];
	uint64_t div_by_op[VMT_OP__COUNT];
	uint32_t ndiv_shown;
	struct rp_divergence div[RP_DIV_SHOWN];
	uint32_t nthreads;
	struct rp_thread_result *threads; /* malloc'd */
	struct rp_reclaim reclaim; /* during the run */
};
/* Its plain numbers in JSON order (the keys are the field names). */
#define RP_RUN_NUMBERS(X)                                                                     \
	X(wall_ns) X(minor_faults) X(major_faults) X(voluntary_cs) X(involuntary_cs)           \
	X(divergences) X(events) X(peak_vmas) X(wait_ns) X(touched_pages) X(touch_faults)     \
	X(fallbacks) X(skipped) X(load_wait_ns) X(load_cpu_ns)

/* Replay t once with options o (order and max_memory are taken from the
 * load; placement, files, speed, scale and progress from o).  The replay
 * runs in a child process tree, which ends with this process if it dies;
 * this function waits for it.  Returns 0 and fills
 * *res (free with rp_run_result_free), or <0 with msg. */
int rp_run(rp_trace *t, const struct rp_options *o, struct rp_run_result *res,
	   char *msg, size_t msglen);
void rp_run_result_free(struct rp_run_result *r);

/* Kill the process tree of the run in progress, if any (async-signal-safe:
 * for the program's SIGINT/SIGTERM handler). */
void rp_abort_current(void);

/* *med = the per-field median of runs[0..n) (threads and divergences are
 * those of the run whose wall time is the median).  n >= 1.  The result
 * shares no memory with runs; free it with rp_run_result_free. */
int rp_run_median(const struct rp_run_result *runs, unsigned n, struct rp_run_result *med);

/* ---- Reports ------------------------------------------------------------ */

/* The readable report: header, per-run rows (when n > 1), totals, per-op
 * latency, per-thread rows (when several threads), divergences.  quiet:
 * only the totals line.  Returns 0 or -EIO on a write error. */
int rp_report_text(FILE *f, const rp_trace *t, const struct rp_options *o,
		   const struct rp_run_result *runs, unsigned n,
		   const struct rp_run_result *med, int quiet);

/* The JSON of vmreplay(1), JSON OUTPUT: {"runs": [...], "median": {...}}
 * plus descriptive keys.  Returns 0 or -EIO. */
int rp_report_json(FILE *f, const rp_trace *t, const struct rp_options *o,
		   const struct rp_run_result *runs, unsigned n,
		   const struct rp_run_result *med);
/* Its pieces, for the --rewrite and --compare reports (compare.h): one run
 * object; the descriptive keys ("trace", "order", ...) without braces; and
 * "runs":[...],"median":{...} without braces. */
void rp_json_run(struct vmt_buf *b, const struct rp_run_result *r);
void rp_json_trace_keys(struct vmt_buf *b, const rp_trace *t, const struct rp_options *o);
void rp_json_runs(struct vmt_buf *b, const struct rp_run_result *runs, unsigned n,
		  const struct rp_run_result *med);
/* Write b to f and free it.  Returns 0, -ENOMEM (b ran out) or -EIO. */
int rp_json_emit(FILE *f, struct vmt_buf *b);

/* Text pieces, for the same reports: the options at the end of the header
 * line (" order=... placement=... scale=N[ speed=max]" and a newline); the
 * totals line, after `side` padded to 9 columns unless side is NULL; one
 * line per divergence shown of r. */
void rp_report_options(FILE *f, int order, const struct rp_options *o);
void rp_report_totals(FILE *f, const char *side, const struct rp_run_result *r);
void rp_report_div_list(FILE *f, const struct rp_run_result *r);

#endif
