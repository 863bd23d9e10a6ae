/*
 * exec_int.h - the executor's run-time state (internal to libvmreplay).
 *
 * rp_run() (exec.c) maps one shared area, forks the run process, waits,
 * and reads the results from the area.  The run process (runproc.c,
 * worker.c, watch.c, setup.c) replays: one replay thread per recorded
 * thread (per copy), one forked process per recorded process.  Everything
 * the threads and processes report goes into the shared area, so it
 * survives the forks.
 */
#ifndef VMREPLAY_EXEC_INT_H
#define VMREPLAY_EXEC_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "arena_int.h"
#include "model.h"
#include "vmtutil.h"

/* Completion counter of one replay thread: elements done, the lowest
 * count a sleeping thread waits for (0: nobody sleeps) and the word
 * sleepers sleep on (see wait_for() in worker.c).  One cache line each,
 * so posting is local. */
struct rp_ctl {
	uint32_t done;
	uint32_t want;
	uint32_t epoch;
	char pad[52];
} __attribute__((aligned(64)));

/* A divergence, rendered where it happened (the element is not kept). */
struct rp_divrec {
	uint64_t event;
	int64_t recorded, replayed;
	uint32_t thread; /* recorded thread index */
	uint32_t pad;
	char text[200];
};

/* What one replay thread reports. */
struct rp_slot {
	uint64_t start_ns, end_ns;
	uint64_t minflt, majflt, nvcsw, nivcsw;
	uint64_t user_ns, sys_ns;
	uint64_t wait_ns, waits, wakes;
	uint64_t elems, syscalls;
	uint64_t touched, touch_faults, fallbacks, skipped;
	uint64_t load_wait_ns; /* waiting for the load to publish elements */
	uint64_t load_vcsw, load_ivcsw; /* its switches while it waited (not
					   in nvcsw, nivcsw) */
	uint64_t ndiv;
	uint64_t div_by_op[VMT_OP__COUNT];
	struct rp_divrec div[RP_DIV_SHOWN];
	uint32_t ran;
	/* What it saw of itself (watched: it could, selfmon.c). */
	uint32_t watched;
	uint64_t call_off_cpu_ns, call_vcsw, call_ivcsw;
	uint64_t kind_faults[RP_FK__COUNT];
	uint64_t fault_samples, fault_lost;
	/* faults its forks and thread starts cost vmreplay's own memory
	 * (not in minflt) */
	uint64_t setup_minflt;
} __attribute__((aligned(64)));

struct rp_shared {
	int error;	/* first fatal error (-errno) */
	char msg[256];
	uint64_t t_start;
	uint64_t tick_start, t_end, tick_end; /* the op clock against the wall clock */
	uint64_t peak_vmas;
	int perf_ok;
	uint64_t perf_minor, perf_major, perf_cs;
	/* The getrusage of the whole replay tree from the gate to its end:
	 * the replay threads and vmreplay's set-up around them. */
	uint64_t tree_minor, tree_major, tree_vcsw, tree_ivcsw;
	uint32_t gate;	/* copies start when it turns 1 */
	uint32_t pad;
} __attribute__((aligned(64)));

struct rp_rt;

/* The code replay processes run, kept together (.text.hot): a process
 * forked for the replay takes a fault on each page of code it runs for
 * the first time, counted with the replay's. */
#define RP_RUN_CODE __attribute__((hot))

/* One replay thread (slot = copy * rt->tcap + thread). */
struct rp_wctx {
	struct rp_rt *rt;
	uint32_t tid, copy, slot;
	uint64_t *base;	      /* this copy's region bases */
	struct rp_ctl *ctl;   /* this copy's counters */
	struct rp_slot *out;
	struct rp_hist *hist; /* this slot's histograms, by op */
	struct rp_tsh *ts;    /* its stream */
	const char *blk;      /* the block of the element it executes */
	uint8_t *mincore;     /* vector buffer */
	size_t mincore_len;
	uintptr_t stack_top;  /* its replay loop's frame (run_stream's) */
};

struct rp_rt {
	const rp_trace *t;
	struct rp_options opt;
	uint64_t page, void_len;
	uint32_t nslots;	     /* tcap * scale */
	uint32_t tcap;		     /* threads this run has room for */
	uint32_t rcap;		     /* regions (per copy) */
	uint32_t nused;		     /* histograms per slot: VMT_OP__COUNT */
	int futex_private;	     /* single process: private futexes */
	int tsc;		     /* op latencies in TSC ticks (rp_ticks) */
	uint32_t watch_pages;	     /* each replay thread's perf ring (selfmon.c) */

	/* The shared area. */
	void *area;
	size_t area_len;
	struct rp_shared *sh;
	struct rp_ctl *ctl;
	struct rp_slot *slot;
	struct rp_hist *hist;

	struct rp_arena *arena;	   /* the trace's streams and files */
	struct rp_xplan **root_plan; /* per process: a root's plan, frozen */
	uint32_t nfiles_inherited;   /* files made before the run (their
					descriptors are inherited) */

	/* Private to each replay process (copied by fork). */
	uint64_t *base;	   /* rcap * scale, a NORESERVE mapping */
	/* Per copy: the region bases whose pages this process has written
	 * (a streamed trace's new regions come with its blocks). */
	uint32_t *base_ready;
	size_t base_len;
	uint32_t *live;	   /* threads running, per (process, copy) */
	int *fdc_rd, *fdc_rw; /* per file: this process's descriptor + 1 (0: not open) */
	struct rp_wctx *w; /* per slot (made when its thread starts) */
	pthread_attr_t attr;
	pid_t run_pgid;	   /* the run's process group (0: none of its own) */
	int life_fd;	   /* read end of a pipe only rp_run's process writes */
};

/* ops.c: system call numbers by op (shmdt: munmap of its stand-in), and
 * the replayed calls other than the loop's one-piece range op. */
extern const long rp_sysnr[VMT_OP__COUNT];
long rp_range_op(struct rp_wctx *w, const struct rp_elem *e);
long rp_mmap_op(struct rp_wctx *w, const struct rp_elem *e, uint64_t *t0, uint64_t *t1);
long rp_mremap_op(struct rp_wctx *w, const struct rp_elem *e, uint64_t *t0, uint64_t *t1);
long rp_brk_op(struct rp_wctx *w, const struct rp_elem *e, uint64_t *t0, uint64_t *t1);
/* Unmap the mapped pieces of e. */
void rp_unmap_pieces(struct rp_wctx *w, const struct rp_elem *e);
/* Forget the regions of e's pieces (a divergent munmap/mremap, an exec). */
void rp_poison(struct rp_wctx *w, const struct rp_elem *e);

/* setup.c: e, recorded by thread `thread` of process `proc`, as text. */
void rp_render_elem(const rp_trace *t, uint32_t thread, uint32_t proc, const struct rp_elem *e,
		    char *text, size_t len);
/* worker.c: the replay thread of thread tid in copy `copy` (made on
 * first use). */
struct rp_wctx *rt_wctx(struct rp_rt *rt, uint32_t copy, uint32_t tid);
/* worker.c: the first thread of a replay process: its own stream, then
 * wait for the other threads of the process. */
void rt_run_process(struct rp_wctx *w);
/* worker.c: the touch guard's handler of SIGSEGV and SIGBUS. */
void rt_install_guard(void);
/* worker.c: the process's mappings into the run's peak. */
void rt_sample_vmas(struct rp_rt *rt);
/* runproc.c: the body of the run process; never returns. */
void rp_child_main(struct rp_rt *rt) __attribute__((noreturn));

/* setup.c */
/* A forked replay process's page tables of the run's shared memory and
 * of code (w: its first thread), uncounted. */
void rt_populate_child(struct rp_rt *rt, struct rp_wctx *w);
int rt_setup_plan(struct rp_rt *rt, uint32_t copy, const struct rp_xplan *x);
/* File idx as this process maps it: its read-only or read-write handle
 * (opened from the loader's), -1 if it has none. */
int rt_file_fd(struct rp_rt *rt, uint32_t idx, int rw);
uint64_t rt_reserve(struct rp_rt *rt, uint64_t rec_start, uint64_t size, uint32_t copy, int *fallback);
uint64_t rt_count_vmas(void);
/* The message for a replay process's wait status; async-signal-safe. */
void rt_status_msg(char *buf, size_t size, int st);
/* A replay process ended with wait status st: unless it finished its
 * streams, the run ends (async-signal-safe). */
void rt_child_ended(struct rp_rt *rt, int st);
/* SIGCHLD watch: rt_child_ended for every child as it ends. */
void rt_watch_children(struct rp_rt *rt);
void rt_fatal(struct rp_rt *rt, int err, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));

/* metrics.c */
int rp_perf_open(int fds[3]);
void rp_perf_enable(int fds[3], int on);
int rp_perf_read(int fds[3], uint64_t out[3]);
int rp_tsc_usable(void);
void rp_clock_pair(int tsc, uint64_t *tick, uint64_t *ns);

/* The clock of op latencies, read twice per replayed call: the time stamp
 * counter where the kernel itself keeps time with it (rt->tsc), else
 * CLOCK_MONOTONIC.  Reading the TSC directly costs a fraction of
 * clock_gettime() (the vDSO's scaling, and here a cold vvar page after
 * every call), which is overhead on every op of a replay; the run measures
 * the ticks against CLOCK_MONOTONIC over its whole length (rp_shared) and
 * rp_run converts the histograms to nanoseconds. */
static inline uint64_t rp_ticks(int tsc)
{
#if defined(__x86_64__)
	if (tsc) {
		uint32_t lo, hi;
		__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
		return (uint64_t)hi << 32 | lo;
	}
#else
	(void)tsc;
#endif
	return vmt_now_ns();
}

/* A system call, returning -errno on failure.  On x86-64 the instruction
 * itself: the replayed call is the only thing between the two clock
 * reads, without libc's variadic wrapper and errno round trip. */
static inline long sc6(long nr, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f)
{
#if defined(__x86_64__)
	register uint64_t r10 __asm__("r10") = d;
	register uint64_t r8 __asm__("r8") = e;
	register uint64_t r9 __asm__("r9") = f;
	long r;
	__asm__ __volatile__("syscall"
			     : "=a"(r)
			     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			     : "rcx", "r11", "memory");
	return r;
#else
	long r = syscall(nr, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
#endif
}

/* The pieces of e, which w executes (in w's current block). */
static inline const struct rp_piece *rp_elem_pieces(const struct rp_wctx *w, const struct rp_elem *e)
{
	return (const struct rp_piece *)(w->blk + e->piece0);
}

static inline int failed(long r)
{
	return vmt_is_errno(r);
}

/* ---- a replay thread's loop (worker.c) and what it keeps apart as
 * vmreplay's own (watch.c) ---- */

struct rp_watch; /* selfmon.h */

/* What the loop reads for every element, gathered once per stream into
 * the replay thread's own frame.  After each replayed call and each fault
 * the kernel has pushed the loop's data out of this CPU's caches and TLB,
 * and every further line or page the loop reads costs a miss there:
 * cpu-clock profiles of the 1-thread seed-000 replay put the replay's
 * hottest user code on the loads of w->rt and rt->tsc between the syscall
 * and the second clock read (that wait was also counted as the op's
 * latency).  So per element the loop reads its stack (this struct), the
 * element (a one-piece range op alone: its piece and a single touch run
 * are inline, RF_PIECE1), the region bases and the op's histogram; the clock
 * kind is a constant of the loop (run_guarded), and the counters it bumps
 * are written back at the end of the stream. */
struct rp_hot {
	const struct rp_elem *elem; /* the current block's elements, */
	uint32_t first, end;  /* from thread index first, executable below end */
	uint32_t *done;	      /* this thread's completion count */
	const char *blk;      /* the current block (touch runs: offsets in it) */
	const uint64_t *base; /* w->base */
	struct rp_hist *hist; /* w->hist */
	uint64_t page;
	uint64_t syscalls, touched;
	uint32_t cur; /* the element whose touches run (the guard's resume point) */
	int ended;    /* its RK_END has run */
	/* The thread watching itself (selfmon.c; NULL: it cannot): the perf
	 * page's update count, read around each call (a word that never
	 * moves when not watching). */
	const volatile uint32_t *seq;
	struct rp_watch *watch;
	uint32_t forks_seen; /* rt_proc_forks as this thread last wrote its own pages */
	long nr[VMT_OP__COUNT]; /* rp_sysnr */
	uint8_t hidx[VMT_OP__COUNT];
};

/* Write-fault what the run writes into: counters, slots, histograms of
 * the ops the trace has (so far), region bases.  These fault pages, not
 * objects: they touch a page's first byte, which may lie in a neighbour's
 * allocator redzone, so ASan must not check them. */
__attribute__((no_sanitize_address)) static inline void prefault_w(void *p, size_t len, size_t ps)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1), end = (uintptr_t)p + len;
	for (; a < end; a += ps)
		__atomic_fetch_add((volatile char *)a, 0, __ATOMIC_RELAXED);
}

/* The count of w's threads running in its process (and copy). */
static inline uint32_t *live_of(struct rp_wctx *w)
{
	return &w->rt->live[w->ts->proc * w->rt->opt.scale + w->copy];
}

/* watch.c: the thread's self-watch (selfmon.c): started (h->watch,
 * h->seq; none if it cannot), its ring read now, its figures into the
 * thread's slot and closed. */
void rt_watch_start(struct rp_wctx *w, struct rp_hot *h);
void rt_watch_drain(struct rp_wctx *w, struct rp_hot *h);
void rt_watch_end(struct rp_wctx *w, struct rp_hot *h);
/* watch.c: after a fork, the pages of vmreplay's own that w's thread
 * writes (those of nw, the thread the fork starts, too), and those of its
 * watch and mincore vector, written again (copy-on-write). */
void rt_write_own_pages(struct rp_wctx *w, struct rp_wctx *nw);
void rt_write_watch_pages(struct rp_wctx *w, struct rp_hot *h);
/* watch.c: the forks this replay process made, and when the last began
 * (process-private: a forked child starts with its parent's values). */
extern uint32_t rt_proc_forks;
extern uint64_t rt_proc_fork_ns;
/* watch.c: another thread of this process forked: its own pages again. */
void rt_after_fork(struct rp_wctx *w, struct rp_hot *h);

static inline void fork_check(struct rp_wctx *w, struct rp_hot *h)
{
	if (__builtin_expect(__atomic_load_n(&rt_proc_forks, __ATOMIC_ACQUIRE) != h->forks_seen, 0))
		rt_after_fork(w, h);
}

#endif
