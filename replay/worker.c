/*
 * worker.c - the run process: replay threads walking their element arrays.
 *
 * The loop is kept lean on purpose (the replay's own cost must stay small
 * next to what it measures, bench/replay.sh): per element it reads the
 * element, waits only when the load computed a dependency, touches pages,
 * and times the replayed syscall(s) with two reads of the op clock
 * (rp_ticks(): the TSC where usable).  No locks,
 * no allocation, no other syscalls.  A thread posts its progress to its
 * counter only after the elements some other thread waits for (RF_POST).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "execint.h"

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
	const struct rp_touch *touches; /* (several touch runs) */
	const uint64_t *base; /* w->base */
	struct rp_hist *hist; /* w->hist */
	uint64_t page;
	uint64_t syscalls, touched;
	uint32_t cur; /* the element whose touches run (the guard's resume point) */
	long nr[VMT_OP__COUNT]; /* rp_sysnr */
	uint8_t hidx[VMT_OP__COUNT];
};

/* ---- touches, guarded -------------------------------------------------- */

/* A touch that traps (the trace promised a page the replay's mapping does
 * not have: beyond the end of an original file, a protection a diverged
 * call did not set) must not kill the run: the element's remaining
 * touches are skipped, its call still replayed.  One guard per stream,
 * not per element (a sigsetjmp per op was a measurable part of the loop):
 * the loop raises tls_touching around an element's touches, and the
 * handler jumps back to the stream's guard only then; any other fault is
 * a real crash and takes its default action. */
static __thread sigjmp_buf *tls_jb;
static __thread volatile sig_atomic_t tls_touching;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	if (tls_touching && tls_jb) {
		tls_touching = 0;
		siglongjmp(*tls_jb, 1);
	}
	signal(sig, SIG_DFL); /* fault again, unhandled */
}

static void install_guard(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

/* Touch npw's pages (| RP_TOUCH_WRITE: write them) at off in region. */
static inline __attribute__((always_inline)) void touch_pages(struct rp_hot *h, uint32_t region,
							      uint64_t off, uint32_t npw)
{
	uint64_t b = h->base[region], ps = h->page;
	if (!b)
		return;
	volatile char *p = (volatile char *)(b + off);
	uint32_t n = npw & ~RP_TOUCH_WRITE;
	if (__builtin_expect((npw & RP_TOUCH_WRITE) != 0, 1))
		for (uint32_t j = 0; j < n; j++)
			p[(uint64_t)j * ps] = 1;
	else
		for (uint32_t j = 0; j < n; j++)
			(void)p[(uint64_t)j * ps];
	__asm__ __volatile__("" ::: "memory"); /* counted once all are done */
	h->touched += n;
	__asm__ __volatile__("" ::: "memory");
}

/* The element's touches.  The loop's state lives in its rp_hot, stored
 * (compiler barriers) before the touches and after each run of pages, so
 * after a trap it holds the resume point and the pages of the runs
 * completed so far. */
static inline __attribute__((always_inline)) void do_touches(struct rp_hot *h,
							     const struct rp_elem *e, uint32_t i)
{
	h->cur = i;
	__asm__ __volatile__("" ::: "memory");
	tls_touching = 1;
	if (__builtin_expect((e->flags & RF_TOUCH1) != 0, 1)) {
		touch_pages(h, e->region2, (uint64_t)e->tpage * h->page, e->arg);
	} else {
		for (uint32_t k = 0; k < e->ntouch; k++) {
			const struct rp_touch *tc = &h->touches[e->touch0 + k];
			touch_pages(h, tc->region, tc->off, tc->npages);
		}
	}
	tls_touching = 0;
}

/* ---- waiting ----------------------------------------------------------- */

static inline long futex(uint32_t *a, int op, uint32_t v, int priv)
{
	return syscall(SYS_futex, a, op | (priv ? FUTEX_PRIVATE_FLAG : 0), v, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Spin a little (the other thread is usually about to post), then sleep,
 * so waiting adds context switches only when it is long.
 *
 * A sleeper registers the element it waits for in the counter's `want`
 * (the lowest wanted by any sleeper) and sleeps on `epoch`; a post that
 * reaches `want` clears it, bumps `epoch` and wakes every sleeper, and
 * those not yet satisfied register again.  So a post costs one load
 * unless it completes what somebody waits for (a thread waiting for the
 * end of a long stream costs that stream nothing), and no wake-up is
 * lost: a sleeper reads `epoch` before registering, so a post that
 * cleared its registration has also moved `epoch` past what it sleeps
 * on.  (A flag that posts cleared, sleeping on the counter itself, lost
 * wake-ups: set, post-and-clear, then sleep on the new value.) */
static void wait_for(struct rp_wctx *w, const struct rp_dep *d)
{
	struct rp_ctl *c = &w->ctl[d->thread];
	if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) >= d->seq)
		return;
	uint64_t t0 = vmt_now_ns();
	for (unsigned i = 1;; i++) {
		cpu_relax();
		if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) >= d->seq)
			goto done;
		if (!(i & 15) && vmt_now_ns() - t0 > 3000)
			break;
	}
	for (;;) {
		uint32_t ep = __atomic_load_n(&c->epoch, __ATOMIC_SEQ_CST);
		uint32_t want = __atomic_load_n(&c->want, __ATOMIC_SEQ_CST);
		while ((!want || want > d->seq) &&
		       !__atomic_compare_exchange_n(&c->want, &want, d->seq, 0, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST))
			;
		if (__atomic_load_n(&c->done, __ATOMIC_SEQ_CST) >= d->seq)
			break;
		futex(&c->epoch, FUTEX_WAIT, ep, w->rt->futex_private);
		if (__atomic_load_n(&c->done, __ATOMIC_SEQ_CST) >= d->seq)
			break;
	}
done:
	w->out->wait_ns += vmt_now_ns() - t0;
	w->out->waits++;
}

static inline void post(struct rp_wctx *w, uint32_t v)
{
	struct rp_ctl *c = &w->ctl[w->tid];
	__atomic_store_n(&c->done, v, __ATOMIC_SEQ_CST);
	uint32_t want = __atomic_load_n(&c->want, __ATOMIC_SEQ_CST);
	if (want && v >= want && __atomic_exchange_n(&c->want, 0, __ATOMIC_SEQ_CST)) {
		__atomic_add_fetch(&c->epoch, 1, __ATOMIC_SEQ_CST);
		if (futex(&c->epoch, FUTEX_WAKE, INT_MAX, w->rt->futex_private) > 0)
			w->out->wakes++;
	}
}

static void pace(struct rp_wctx *w, uint64_t ts)
{
	uint64_t target = w->rt->sh->t_start + (uint64_t)((double)ts / w->rt->opt.speed);
	uint64_t now = vmt_now_ns();
	if (now >= target)
		return;
	if (target - now > 200000) {
		struct timespec sl;
		uint64_t wake = target - 100000;
		sl.tv_sec = (time_t)(wake / 1000000000u);
		sl.tv_nsec = (long)(wake % 1000000000u);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &sl, NULL) == EINTR)
			;
	}
	while (vmt_now_ns() < target)
		cpu_relax();
}

static void diverged(struct rp_wctx *w, const struct rp_elem *e, long r)
{
	struct rp_slot *o = w->out;
	if (o->ndiv < RP_DIV_SHOWN) {
		struct rp_divrec *d = &o->div[o->ndiv];
		d->event = e->event;
		d->replayed = r;
		d->tid = w->tid;
		d->elem = (uint32_t)(e - w->rt->t->threads[w->tid].elem);
	}
	o->ndiv++;
	o->div_by_op[e->op]++;
}

/* A result that differs from the recorded one: a divergence unless the
 * two are successes that may differ (addresses, without exact
 * placement; brk's differing result counts as bad). */
static __attribute__((noinline, cold)) void check_result(struct rp_wctx *w, const struct rp_elem *e,
							 long r, int bad)
{
	if (!bad && !failed(e->result) &&
	    !(w->rt->opt.placement == RP_PLACE_EXACT && (e->how == RX_MMAP || e->how == RX_MREMAP)))
		return;
	diverged(w, e, r);
	if ((e->flags & RF_UNMAP) || (e->how == RX_MREMAP && !bad))
		rp_poison(w, e);
}

/* After a replayed call: its latency, error and result check. */
static inline __attribute__((always_inline)) void after_call(struct rp_wctx *w, struct rp_hot *h,
							     const struct rp_elem *e, long r,
							     uint64_t t0, uint64_t t1)
{
	struct rp_hist *hg = &h->hist[h->hidx[e->op]];
	uint64_t d = t1 - t0;
	/* (A call that moved to another CPU may see its TSC a little
	 * behind: never a negative time.) */
	if (__builtin_expect((int64_t)d < 0, 0))
		d = 0;
	rp_hist_add(hg, d);
	int bad = e->how == RX_BRK ? r != e->result : failed(r);
	if (bad)
		hg->errors++;
	h->syscalls++;
	if (__builtin_expect((e->flags & RF_CHECK) && r != e->result, 0))
		check_result(w, e, r, bad);
}

/* A range op on [a, a + len) of the replay: nothing but the call between
 * the two clock reads (tsc, the clock kind, is a constant of each copy of
 * the loop: no memory load sits in the timed window). */
static inline __attribute__((always_inline)) void call_at(struct rp_wctx *w, struct rp_hot *h,
							  const struct rp_elem *e, uint64_t a,
							  uint64_t len, const int tsc)
{
	long nr = h->nr[e->op];
	uint64_t a2 = e->args[2], a3 = e->args[3], a4 = e->args[4], a5 = e->args[5];
	uint64_t t0 = rp_ticks(tsc);
	long r = sc6(nr, a, len, a2, a3, a4, a5);
	uint64_t t1 = rp_ticks(tsc);
	after_call(w, h, e, r, t0, t1);
}

/* A range op rp_range_op executes: several pieces, a raw length, mincore,
 * a piece on no mapping or on a region that is gone. */
static __attribute__((noinline)) void range_call(struct rp_wctx *w, struct rp_hot *h,
						 const struct rp_elem *e)
{
	const int tsc = w->rt->tsc;
	uint64_t t0 = rp_ticks(tsc);
	long r = rp_range_op(w, e);
	uint64_t t1 = rp_ticks(tsc);
	after_call(w, h, e, r, t0, t1);
}

/* An RF_PIECE1 range op: its one piece inline in the element. */
static inline __attribute__((always_inline)) void piece1_call(struct rp_wctx *w, struct rp_hot *h,
							      const struct rp_elem *e, const int tsc)
{
	uint64_t b = h->base[e->region];
	if (__builtin_expect(b != 0, 1))
		call_at(w, h, e, b + e->off2, e->aux, tsc);
	else
		range_call(w, h, e); /* its region is gone */
}

/* Any replayed call. */
static inline __attribute__((always_inline)) void do_syscall(struct rp_wctx *w, struct rp_hot *h,
							    const struct rp_elem *e, const int tsc)
{
	uint64_t t0, t1;
	long r;

	switch (e->how) {
	case RX_RANGE:
		if (e->flags & RF_PIECE1)
			piece1_call(w, h, e, tsc);
		else
			range_call(w, h, e);
		return;
	case RX_MMAP:
		r = rp_mmap_op(w, e, &t0, &t1);
		break;
	case RX_MREMAP:
		r = rp_mremap_op(w, e, &t0, &t1);
		break;
	case RX_BRK:
		r = rp_brk_op(w, e, &t0, &t1);
		break;
	default:
		t0 = rp_ticks(tsc);
		r = sc6(h->nr[e->op], e->args[0], 0, 0, 0, 0, 0);
		t1 = rp_ticks(tsc);
		break;
	}
	after_call(w, h, e, r, t0, t1);
}

/* ---- threads and processes --------------------------------------------- */

static void run_process(struct rp_wctx *w);

static void *thread_main(void *arg);

static void spawn(struct rp_wctx *w, uint32_t tid)
{
	struct rp_rt *rt = w->rt;
	struct rp_wctx *nw = &rt->w[w->copy * rt->t->nthreads + tid];
	uint32_t *live = &rt->live[rt->t->threads[tid].proc * rt->opt.scale + w->copy];
	pthread_t th;
	__atomic_add_fetch(live, 1, __ATOMIC_SEQ_CST);
	int rc = pthread_create(&th, &rt->attr, thread_main, nw);
	if (rc)
		rt_fatal(rt, -rc, "cannot start replay thread %u: %s", rt->t->threads[tid].rec,
			 strerror(rc));
}

static void fork_process(struct rp_wctx *w, const struct rp_elem *e)
{
	struct rp_rt *rt = w->rt;
	struct rp_wctx *nw = &rt->w[w->copy * rt->t->nthreads + e->arg];
	pid_t pid = fork();
	if (pid < 0)
		rt_fatal(rt, -errno, "cannot fork replay process %u: %s",
			 rt->t->procs[e->region].rec, strerror(errno));
	if (pid == 0) {
		run_process(nw);
		_exit(0);
	}
}

/* exec: the old address space goes, the new one's stand-ins come. */
static void exec_space(struct rp_wctx *w, const struct rp_elem *e)
{
	struct rp_rt *rt = w->rt;
	rp_unmap_pieces(w, e);
	rp_poison(w, e);
	int rc = rt_setup_plan(rt, w->copy, e->arg);
	if (rc < 0)
		rt_fatal(rt, rc, "cannot set up the address space after exec: %s", strerror(-rc));
	w->out->fallbacks += (uint64_t)rc;
}

static void sample_vmas(struct rp_rt *rt)
{
	uint64_t n = rt_count_vmas(), cur = __atomic_load_n(&rt->sh->peak_vmas, __ATOMIC_RELAXED);
	while (n > cur && !__atomic_compare_exchange_n(&rt->sh->peak_vmas, &cur, n, 0, __ATOMIC_SEQ_CST,
						       __ATOMIC_RELAXED))
		;
}

static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
}

/* Element i after its waits and touches: its call (or thread, process,
 * exec), and its post when another thread waits for it. */
static __attribute__((noinline)) void elem_rest(struct rp_wctx *w, struct rp_hot *h,
						const struct rp_elem *e, uint32_t i)
{
	switch (e->kind) {
	case RK_SYSCALL:
		do_syscall(w, h, e, w->rt->tsc);
		if (e->flags & RF_SAMPLE_VMAS)
			sample_vmas(w->rt);
		break;
	case RK_SPAWN:
		spawn(w, e->arg);
		break;
	case RK_FORK:
		fork_process(w, e);
		break;
	case RK_EXEC:
		exec_space(w, e);
		break;
	case RK_SKIP:
		w->out->skipped++;
		break;
	default:
		break;
	}
	if (e->flags & RF_POST)
		post(w, i + 1);
}

/* An element off the short path (waits, pacing, threads, processes,
 * exec, mmap and the other calls): rare in the hot loops that decide the
 * replay's overhead, so out of line, with the clock kind read. */
static __attribute__((noinline)) void slow_elem(struct rp_wctx *w, struct rp_hot *h, uint32_t i)
{
	const struct rp_elem *e = &w->rt->t->threads[w->tid].elem[i];
	const struct rp_dep *deps = w->rt->t->deps;
	for (uint32_t d = 0; d < e->ndeps; d++)
		wait_for(w, &deps[e->dep0 + d]);
	if (w->rt->opt.speed > 0)
		pace(w, e->ts);
	if (e->ntouch)
		do_touches(h, e, i);
	elem_rest(w, h, e, i);
}

/* The loop.  It is kept compact in code as well as data: after each
 * fault and call the kernel has evicted much of this CPU's caches and
 * TLB, and every line or page of loop code or data touched per element is
 * fetched again.  (Measured on the 1-thread seed-000 trace with blocks of
 * this loop alternating with blocks of the workload's own loop on the
 * same region in one replay thread: 1.03-1.04 of it in all, of which the
 * two clock reads ~2%, the histogram ~1.5%, the touch guard ~1%.) */
static inline __attribute__((always_inline)) void run_elems(struct rp_wctx *w, struct rp_hot *h,
							   uint32_t from, const int tsc)
{
	struct rp_rt *rt = w->rt;
	const struct rp_thread *th = &rt->t->threads[w->tid];
	const struct rp_elem *elem = th->elem;
	const uint32_t nelem = th->nelem;
	const uint32_t fast = rt->opt.speed > 0 ? 0 : RF_FAST; /* pacing: every element */

	for (uint32_t i = from; i < nelem; i++) {
		const struct rp_elem *e = &elem[i];
		if (__builtin_expect(!(e->flags & fast), 0)) {
			slow_elem(w, h, i);
			continue;
		}
		if (__builtin_expect(e->ntouch != 0, 1)) /* (code layout) */
			do_touches(h, e, i);
		piece1_call(w, h, e, tsc);
	}
}

/* Elements from..end under the stream's touch guard; 1 when a touch
 * trapped (h->cur: its element, whose call has not run yet). */
static __attribute__((noinline)) int run_guarded(struct rp_wctx *w, struct rp_hot *h,
						 uint32_t from)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 0)) {
		tls_jb = NULL;
		return 1;
	}
	tls_jb = &jb;
	if (w->rt->tsc)
		run_elems(w, h, from, 1);
	else
		run_elems(w, h, from, 0);
	tls_jb = NULL;
	return 0;
}

static void run_stream(struct rp_wctx *w)
{
	struct rp_rt *rt = w->rt;
	struct rp_hot h = {
		.touches = rt->t->touches,
		.base = w->base,
		.hist = w->hist,
		.page = rt->page,
	};
	const struct rp_thread *th = &rt->t->threads[w->tid];
	struct rusage r0, r1;

	memcpy(h.nr, rp_sysnr, sizeof(h.nr));
	memcpy(h.hidx, rt->hidx, sizeof(h.hidx));
	getrusage(RUSAGE_THREAD, &r0);
	w->out->ran = 1;
	w->out->start_ns = vmt_now_ns();
	for (uint32_t from = 0; run_guarded(w, &h, from); from = h.cur + 1) {
		/* The rest of the element whose touch trapped. */
		w->out->touch_faults++;
		elem_rest(w, &h, &th->elem[h.cur], h.cur);
	}
	w->out->end_ns = vmt_now_ns();
	w->out->syscalls += h.syscalls;
	w->out->touched += h.touched;
	w->out->elems = th->nelem;
	getrusage(RUSAGE_THREAD, &r1);
	w->out->minflt = (uint64_t)(r1.ru_minflt - r0.ru_minflt);
	w->out->majflt = (uint64_t)(r1.ru_majflt - r0.ru_majflt);
	w->out->nvcsw = (uint64_t)(r1.ru_nvcsw - r0.ru_nvcsw);
	w->out->nivcsw = (uint64_t)(r1.ru_nivcsw - r0.ru_nivcsw);
	w->out->user_ns = tv_ns(&r1.ru_utime) - tv_ns(&r0.ru_utime);
	w->out->sys_ns = tv_ns(&r1.ru_stime) - tv_ns(&r0.ru_stime);
}

static uint32_t *live_of(struct rp_wctx *w)
{
	return &w->rt->live[w->rt->t->threads[w->tid].proc * w->rt->opt.scale + w->copy];
}

static void thread_done(struct rp_wctx *w)
{
	uint32_t *live = live_of(w);
	if (__atomic_sub_fetch(live, 1, __ATOMIC_SEQ_CST) == 0)
		syscall(SYS_futex, live, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}

static void *thread_main(void *arg)
{
	struct rp_wctx *w = arg;
	run_stream(w);
	thread_done(w);
	return NULL;
}

/* The first thread of a replay process: its own stream, then wait for the
 * other threads of the process. */
static void run_process(struct rp_wctx *w)
{
	uint32_t *live = live_of(w), v;
	__atomic_store_n(live, 1, __ATOMIC_SEQ_CST);
	run_stream(w);
	thread_done(w);
	while ((v = __atomic_load_n(live, __ATOMIC_SEQ_CST)) != 0)
		syscall(SYS_futex, live, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, v, NULL, NULL, 0);
}

static void wait_gate(struct rp_rt *rt)
{
	while (!__atomic_load_n(&rt->sh->gate, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &rt->sh->gate, FUTEX_WAIT, 0, NULL, NULL, 0);
}

/* Copies 1..K-1 of a root process run in threads of the run process. */
static void *copy_main(void *arg)
{
	struct rp_wctx *w = arg;
	wait_gate(w->rt);
	run_process(w);
	return NULL;
}

static void prefault(void *p, size_t len, size_t ps)
{
	for (size_t o = 0; o < len; o += ps) {
		volatile char *c = (volatile char *)p + o;
		*c = *c;
	}
}

/* When rp_run's process ends, the last writer of the lifeline is gone
 * and the kernel signals its readers' owner: SIGKILL to the run's process
 * group, replay processes forked later included.  (Already gone: the
 * run ends here.)  Where the kernel refuses the watch (a sandbox), the run
 * goes on without it: the parent death signal still ends this process. */
static void watch_lifeline(struct rp_rt *rt)
{
	int fd = rt->life_fd, fl;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (fcntl(fd, F_SETOWN, rt->run_pgid ? -rt->run_pgid : getpid()) == 0 &&
	    fcntl(fd, F_SETSIG, SIGKILL) == 0 && (fl = fcntl(fd, F_GETFL)) >= 0)
		fcntl(fd, F_SETFL, fl | O_ASYNC);
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLIN)))
		_exit(1);
}

void rp_child_main(struct rp_rt *rt)
{
	const rp_trace *t = rt->t;
	uint32_t K = rt->opt.scale;
	int perf[3] = {-1, -1, -1}, rc;

	rt->run_pgid = setpgid(0, 0) == 0 ? getpid() : 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	watch_lifeline(rt);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	install_guard();
	rt_watch_children(rt);
	rt->base = calloc((size_t)t->nregions * K + 1, sizeof(*rt->base));
	rt->live = calloc((size_t)t->nprocs * K + 1, sizeof(*rt->live));
	rt->w = calloc(rt->nslots, sizeof(*rt->w));
	if (!rt->base || !rt->live || !rt->w)
		rt_fatal(rt, -ENOMEM, "out of memory");
	if ((rc = rt_open_files(rt)) < 0)
		rt_fatal(rt, rc, "cannot create scratch files: %s", strerror(-rc));
	pthread_attr_init(&rt->attr);
	pthread_attr_setdetachstate(&rt->attr, PTHREAD_CREATE_DETACHED);
	for (uint32_t c = 0; c < K; c++)
		for (uint32_t i = 0; i < t->nthreads; i++) {
			uint32_t s = c * t->nthreads + i;
			struct rp_wctx *w = &rt->w[s];
			w->rt = rt;
			w->tid = i;
			w->copy = c;
			w->slot = s;
			w->base = rt->base + (size_t)c * t->nregions;
			w->ctl = rt->ctl + (size_t)c * t->nthreads;
			w->out = &rt->slot[s];
			w->hist = rt->hist + (size_t)s * rt->nused;
			if (t->threads[i].mincore_max) {
				w->mincore = malloc(t->threads[i].mincore_max);
				if (!w->mincore)
					rt_fatal(rt, -ENOMEM, "out of memory");
				memset(w->mincore, 0, t->threads[i].mincore_max);
			}
		}
	/* Stand-ins of the root processes, per copy (children inherit). */
	uint32_t root = RP_VOID;
	for (uint32_t p = 0; p < t->nprocs; p++) {
		if (t->procs[p].parent != RP_VOID)
			continue;
		if (root == RP_VOID)
			root = p;
		if (t->procs[p].plan == RP_VOID)
			continue;
		for (uint32_t c = 0; c < K; c++) {
			if ((rc = rt_setup_plan(rt, c, t->procs[p].plan)) < 0)
				rt_fatal(rt, rc, "cannot create stand-in mappings: %s", strerror(-rc));
			rt->slot[c * t->nthreads + t->procs[p].first_thread].fallbacks += (uint64_t)rc;
		}
	}
	prefault(rt->area, rt->area_len, rt->page);
	rt->sh->perf_ok = rp_perf_open(perf) == 0;
	pthread_t *copies = calloc(K, sizeof(*copies));
	if (!copies)
		rt_fatal(rt, -ENOMEM, "out of memory");
	pthread_attr_t cattr;
	pthread_attr_init(&cattr);
	for (uint32_t c = 1; c < K; c++) {
		rc = pthread_create(&copies[c], &cattr, copy_main,
				    &rt->w[c * t->nthreads + t->procs[root].first_thread]);
		if (rc)
			rt_fatal(rt, -rc, "cannot start copy %u: %s", c, strerror(rc));
	}
	if (rt->sh->perf_ok)
		rp_perf_enable(perf, 1);
	rp_clock_pair(rt->tsc, &rt->sh->tick_start, &rt->sh->t_start);
	__atomic_store_n(&rt->sh->gate, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &rt->sh->gate, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	/* Further root processes (several attached programs) are forked. */
	for (uint32_t p = root + 1; p < t->nprocs; p++) {
		if (t->procs[p].parent != RP_VOID)
			continue;
		for (uint32_t c = 0; c < K; c++) {
			pid_t pid = fork();
			if (pid < 0)
				rt_fatal(rt, -errno, "cannot fork: %s", strerror(errno));
			if (pid == 0) {
				if (t->procs[p].plan != RP_VOID)
					rt_setup_plan(rt, c, t->procs[p].plan);
				run_process(&rt->w[c * t->nthreads + t->procs[p].first_thread]);
				_exit(0);
			}
		}
	}
	run_process(&rt->w[t->procs[root].first_thread]);
	for (uint32_t c = 1; c < K; c++)
		pthread_join(copies[c], NULL);
	sample_vmas(rt); /* at least the replayer's own */
	/* Every descendant (orphans come to us: we are the subreaper; the
	 * SIGCHLD watch may have reaped some, and ends the run at once if
	 * one was killed). */
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, __WALL)) > 0 || (pid < 0 && errno == EINTR))
		if (pid > 0)
			rt_child_ended(rt, st);
	rp_clock_pair(rt->tsc, &rt->sh->tick_end, &rt->sh->t_end);
	if (rt->sh->perf_ok) {
		uint64_t v[3];
		rp_perf_enable(perf, 0);
		if (rp_perf_read(perf, v) == 0) {
			rt->sh->perf_minor = v[0];
			rt->sh->perf_major = v[1];
			rt->sh->perf_cs = v[2];
		} else {
			rt->sh->perf_ok = 0;
		}
	}
	_exit(0);
}
