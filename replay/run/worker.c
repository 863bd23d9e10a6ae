/*
 * worker.c - the replay threads walking their element arrays (the run
 * process around them: runproc.c; what they keep apart as vmreplay's
 * own, their self-watch and their pages after a fork: watch.c).
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
#include <limits.h>
#include <linux/futex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "exec_int.h"
#include "selfmon.h"

/* ---- touches, guarded -------------------------------------------------- */

/* A touch that traps (the trace promised a page the replay's mapping does
 * not have: beyond the end of an original file, a protection a diverged
 * call did not set) must not kill the run: the element's remaining
 * touches are skipped, its call still replayed.  One guard per stream,
 * not per element (a sigsetjmp per op was a measurable part of the loop):
 * the loop raises tls_touching around an element's touches, and the
 * handler jumps back to the stream's guard only then; any other fault is
 * a real crash and goes to the handler there was before (the default
 * action, or a sanitizer's report). */
static __thread sigjmp_buf *tls_jb;
static __thread volatile sig_atomic_t tls_touching;
/* (what handled these before: a sanitizer's report, or the default) */
static struct sigaction prev_segv, prev_bus;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	if (tls_touching && tls_jb) {
		tls_touching = 0;
		siglongjmp(*tls_jb, 1);
	}
	/* fault again, under the handler that was there before (a signal
	 * sent, not a fault, would not come again: raised again) */
	sigaction(sig, sig == SIGBUS ? &prev_bus : &prev_segv, NULL);
	if (si->si_code <= 0)
		syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
	(void)uc;
}

void rt_install_guard(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, &prev_segv);
	sigaction(SIGBUS, &sa, &prev_bus);
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
		const struct rp_touch *tc = (const struct rp_touch *)(h->blk + e->touch0);
		for (uint32_t k = 0; k < e->ntouch; k++)
			touch_pages(h, tc[k].region, tc[k].off, tc[k].npages);
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
 * A sleeper registers the count it waits for in `want` (the lowest wanted
 * by any sleeper) and sleeps on `epoch`; a post that reaches `want`
 * clears it, bumps `epoch` and wakes every sleeper, and those not yet
 * satisfied register again.  So a post costs one load unless it
 * completes what somebody waits for (a thread waiting for the end of a
 * long stream costs that stream nothing), and no wake-up is lost: a
 * sleeper reads `epoch` before registering, so a post that cleared its
 * registration has also moved `epoch` past what it sleeps on.  (A flag
 * that posts cleared, sleeping on the counter itself, lost wake-ups: set,
 * post-and-clear, then sleep on the new value.)  poll_ns: the poster may
 * not post (a late wait, RP_DEP_LATE): sleep at most that long, doubling
 * up to 5 ms. */
RP_RUN_CODE static void await_count(uint32_t *cnt, uint32_t *want, uint32_t *epoch, uint32_t v, int priv,
			uint64_t poll_ns)
{
	uint64_t t0 = vmt_now_ns();
	for (unsigned i = 1;; i++) {
		cpu_relax();
		if (__atomic_load_n(cnt, __ATOMIC_ACQUIRE) >= v)
			return;
		if (!(i & 15) && vmt_now_ns() - t0 > 3000)
			break;
	}
	for (;;) {
		uint32_t ep = __atomic_load_n(epoch, __ATOMIC_SEQ_CST);
		uint32_t w = __atomic_load_n(want, __ATOMIC_SEQ_CST);
		while ((!w || w > v) &&
		       !__atomic_compare_exchange_n(want, &w, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			;
		if (__atomic_load_n(cnt, __ATOMIC_SEQ_CST) >= v)
			return;
		struct timespec to = {(time_t)(poll_ns / 1000000000u), (long)(poll_ns % 1000000000u)};
		syscall(SYS_futex, epoch, FUTEX_WAIT | (priv ? FUTEX_PRIVATE_FLAG : 0), ep,
			poll_ns ? &to : NULL, NULL, 0);
		if (__atomic_load_n(cnt, __ATOMIC_SEQ_CST) >= v)
			return;
		if (poll_ns && poll_ns < 5000000)
			poll_ns *= 2;
	}
}

RP_RUN_CODE static void wait_for(struct rp_wctx *w, const struct rp_dep *d)
{
	struct rp_ctl *c = &w->ctl[d->thread & ~RP_DEP_LATE];
	if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) >= d->seq)
		return;
	uint64_t t0 = vmt_now_ns();
	await_count(&c->done, &c->want, &c->epoch, d->seq, w->rt->futex_private,
		    (d->thread & RP_DEP_LATE) ? 50000 : 0);
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

RP_RUN_CODE static void pace(struct rp_wctx *w, uint64_t ts)
{
	/* (saturated: a slow factor over a long trace stays in range) */
	double gap = (double)ts / w->rt->opt.speed;
	uint64_t target = w->rt->sh->t_start + (gap < 0x1p62 ? (uint64_t)gap : (1ull << 62));
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

RP_RUN_CODE static void diverged(struct rp_wctx *w, const struct rp_elem *e, long r)
{
	struct rp_slot *o = w->out;
	if (o->ndiv < RP_DIV_SHOWN) {
		struct rp_divrec *d = &o->div[o->ndiv];
		d->event = e->event;
		d->recorded = e->result;
		d->replayed = r;
		d->thread = w->ts->rec;
		rp_render_elem(w->rt->t, w->ts->rec, w->rt->arena->proc_rec[w->ts->proc], e, d->text,
			       sizeof(d->text));
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

/* A call that left the CPU between [t0, t1]: noted, out of line. */
static __attribute__((noinline, cold)) void call_switched(struct rp_hot *h, uint64_t t0, uint64_t t1)
{
	rp_selfmon_switched(&h->watch->m, t0, t1);
}

/* After a replayed call: its latency, error and result check; s0 the
 * perf page's count before it (a call that moved it left the CPU). */
static inline __attribute__((always_inline)) void after_call(struct rp_wctx *w, struct rp_hot *h,
							     const struct rp_elem *e, long r,
							     uint64_t t0, uint64_t t1, uint32_t s0)
{
	if (__builtin_expect(*h->seq != s0, 0))
		call_switched(h, t0, t1);
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
	uint32_t s0 = *h->seq;
	uint64_t t0 = rp_ticks(tsc);
	long r = sc6(nr, a, len, a2, a3, a4, a5);
	uint64_t t1 = rp_ticks(tsc);
	after_call(w, h, e, r, t0, t1, s0);
}

/* Room in w's mincore vector for each piece of e (outside the timing). */
RP_RUN_CODE static void mincore_room(struct rp_wctx *w, const struct rp_elem *e)
{
	const struct rp_piece *pc = rp_elem_pieces(w, e);
	size_t need = 1;
	for (uint32_t i = 0; i < e->npieces; i++) {
		size_t n = (size_t)((pc[i].len + w->rt->page - 1) / w->rt->page);
		if (n > need)
			need = n;
	}
	if (need <= w->mincore_len)
		return;
	uint8_t *p = realloc(w->mincore, need);
	if (!p)
		rt_fatal(w->rt, -ENOMEM, "out of memory");
	memset(p, 0, need);
	w->mincore = p;
	w->mincore_len = need;
}

/* A range op rp_range_op executes: several pieces, a raw length, mincore,
 * a piece on no mapping or on a region that is gone. */
RP_RUN_CODE static __attribute__((noinline)) void range_call(struct rp_wctx *w, struct rp_hot *h,
						 const struct rp_elem *e)
{
	const int tsc = w->rt->tsc;
	if (e->op == VMT_OP_MINCORE)
		mincore_room(w, e);
	uint32_t s0 = *h->seq;
	uint64_t t0 = rp_ticks(tsc);
	long r = rp_range_op(w, e);
	uint64_t t1 = rp_ticks(tsc);
	after_call(w, h, e, r, t0, t1, s0);
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
	uint32_t s0;

	switch (e->how) {
	case RX_RANGE:
		if (e->flags & RF_PIECE1)
			piece1_call(w, h, e, tsc);
		else
			range_call(w, h, e);
		return;
	default:
		break;
	}
	s0 = *h->seq;
	switch (e->how) {
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
	after_call(w, h, e, r, t0, t1, s0);
}

/* ---- threads and processes --------------------------------------------- */

static void *thread_main(void *arg);

RP_RUN_CODE static void spawn(struct rp_wctx *w, uint32_t tid)
{
	struct rp_rt *rt = w->rt;
	struct rp_wctx *nw = rt_wctx(rt, w->copy, tid);
	uint32_t *live = &rt->live[rt->arena->threads[tid].proc * rt->opt.scale + w->copy];
	pthread_t th;
	struct rusage r0, r1;
	__atomic_add_fetch(live, 1, __ATOMIC_SEQ_CST);
	/* (what starting it costs this thread, its new stack's descriptor
	 * and TLS, libc's thread list: vmreplay's set-up, as a fork's) */
	getrusage(RUSAGE_THREAD, &r0);
	int rc = pthread_create(&th, &rt->attr, thread_main, nw);
	getrusage(RUSAGE_THREAD, &r1);
	if (rc)
		rt_fatal(rt, -rc, "cannot start replay thread %u: %s", rt->arena->threads[tid].rec,
			 strerror(rc));
	w->out->setup_minflt += (uint64_t)(r1.ru_minflt - r0.ru_minflt);
}

RP_RUN_CODE static void fork_process(struct rp_wctx *w, struct rp_hot *h, const struct rp_elem *e)
{
	struct rp_rt *rt = w->rt;
	struct rp_wctx *nw = rt_wctx(rt, w->copy, e->arg);
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	uint64_t t0 = vmt_now_ns();
	pid_t pid = fork();
	if (pid < 0)
		rt_fatal(rt, -errno, "cannot fork replay process %u: %s",
			 rt->arena->proc_rec[e->region], strerror(errno));
	/* (and the region bases of the copy, those of the regions so far:
	 * any op after the fork writes one of them) */
	uint64_t nb = e->aux < rt->rcap ? e->aux : rt->rcap;
	uint32_t ready = __atomic_load_n(&rt->base_ready[w->copy], __ATOMIC_ACQUIRE);
	if (nb < ready)
		nb = ready; /* (written ahead for a streamed trace's blocks) */
	if (pid == 0) {
		rt_write_own_pages(w, nw);
		prefault_w(w->base, nb * sizeof(*w->base), rt->page);
		rt_populate_child(rt, nw);
		nw->stack_top = 0;
		rt_run_process(nw);
		_exit(0);
	}
	rt_write_own_pages(w, nw);
	prefault_w(w->base, nb * sizeof(*w->base), rt->page);
	rt_write_watch_pages(w, h);
	__atomic_store_n(&rt_proc_fork_ns, t0, __ATOMIC_RELAXED);
	h->forks_seen = __atomic_add_fetch(&rt_proc_forks, 1, __ATOMIC_RELEASE);
	getrusage(RUSAGE_THREAD, &r1);
	w->out->setup_minflt += (uint64_t)(r1.ru_minflt - r0.ru_minflt);
}

/* exec: the old address space goes, the new one's stand-ins come.  The
 * faults sampled so far are of the old image: classified first, while
 * its regions are known (exec forgets them).  What this costs vmreplay's
 * own memory (the drain, the bases) is set-up: the faults the kernel
 * took in the new image as it exec'd are the next element's touches. */
RP_RUN_CODE static void exec_space(struct rp_wctx *w, struct rp_hot *h, const struct rp_elem *e)
{
	struct rp_rt *rt = w->rt;
	uint64_t t0 = vmt_now_ns();
	if (h->watch)
		rt_watch_drain(w, h);
	rp_unmap_pieces(w, e);
	rp_poison(w, e);
	int rc = rt_setup_plan(rt, w->copy, (const struct rp_xplan *)(uintptr_t)e->off2);
	if (rc < 0)
		rt_fatal(rt, rc, "cannot set up the address space after exec: %s", strerror(-rc));
	w->out->fallbacks += (uint64_t)rc;
	if (h->watch)
		rp_selfmon_own(&h->watch->m, t0, vmt_now_ns());
}

RP_RUN_CODE void rt_sample_vmas(struct rp_rt *rt)
{
	uint64_t n = rt_count_vmas(), cur = __atomic_load_n(&rt->sh->peak_vmas, __ATOMIC_RELAXED);
	while (n > cur && !__atomic_compare_exchange_n(&rt->sh->peak_vmas, &cur, n, 0, __ATOMIC_SEQ_CST,
						       __ATOMIC_RELAXED))
		;
}

RP_RUN_CODE static uint64_t tv_ns(const struct timeval *tv)
{
	return (uint64_t)tv->tv_sec * 1000000000u + (uint64_t)tv->tv_usec * 1000u;
}

/* Element i after its waits and touches: its call (or thread, process,
 * exec), and its post when another thread waits for it. */
RP_RUN_CODE static __attribute__((noinline)) void elem_rest(struct rp_wctx *w, struct rp_hot *h,
						const struct rp_elem *e, uint32_t i)
{
	switch (e->kind) {
	case RK_SYSCALL:
		do_syscall(w, h, e, w->rt->tsc);
		if (e->flags & RF_SAMPLE_VMAS)
			rt_sample_vmas(w->rt);
		break;
	case RK_SPAWN:
		spawn(w, e->arg);
		break;
	case RK_FORK:
		fork_process(w, h, e);
		break;
	case RK_EXEC:
		exec_space(w, h, e);
		break;
	case RK_SKIP:
		w->out->skipped++;
		break;
	case RK_TOUCH: /* (its touches are done) */
		break;
	case RK_END:
		h->ended = 1;
		break;
	default:
		break;
	}
	/* (e is read before the count is stored: the loader may then free
	 * its block) */
	if (e->flags & RF_POST)
		post(w, i + 1);
	else
		__atomic_store_n(h->done, i + 1, __ATOMIC_RELEASE);
}

/* Every 64 elements: drain a ring half full (watch.c), so that its
 * samples are read while the mappings they hit are still there. */
static inline void watch_check(struct rp_wctx *w, struct rp_hot *h)
{
	if (__builtin_expect(h->watch != NULL, 1) && rp_selfmon_due(&h->watch->m))
		rt_watch_drain(w, h);
}

/* An element off the short path (waits, pacing, threads, processes,
 * exec, mmap and the other calls): rare in the hot loops that decide the
 * replay's overhead, so out of line, with the clock kind read. */
RP_RUN_CODE static __attribute__((noinline)) void slow_elem(struct rp_wctx *w, struct rp_hot *h,
						const struct rp_elem *e, uint32_t i)
{
	const struct rp_dep *deps = (const struct rp_dep *)(h->blk + e->dep0);
	if (e->ndeps)
		__atomic_store_n(h->done, i, __ATOMIC_RELEASE); /* before it may block */
	for (uint32_t d = 0; d < e->ndeps; d++)
		wait_for(w, &deps[d]);
	fork_check(w, h);
	if (w->rt->opt.speed > 0)
		pace(w, e->ts);
	if (e->ntouch)
		do_touches(h, e, i);
	elem_rest(w, h, e, i);
	if (!((i + 1) & 63))
		watch_check(w, h);
}

/* A streamed trace's block names regions up to nreg: their bases' pages
 * written now, before its elements run (a new page of bases every 512
 * regions; a trace of many short-lived mappings makes one every few
 * hundred calls).  Those faults are vmreplay's, as loading the whole
 * trace first has them before the run: set-up. */
RP_RUN_CODE static __attribute__((noinline)) void bases_ahead(struct rp_wctx *w, uint32_t nreg)
{
	struct rp_rt *rt = w->rt;
	uint32_t *ready = &rt->base_ready[w->copy];
	uint32_t from = __atomic_load_n(ready, __ATOMIC_ACQUIRE);
	if (nreg > rt->rcap)
		nreg = rt->rcap;
	if (nreg <= from)
		return;
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	prefault_w(w->base + from, (size_t)(nreg - from) * sizeof(*w->base), rt->page);
	getrusage(RUSAGE_THREAD, &r1);
	w->out->setup_minflt += (uint64_t)(r1.ru_minflt - r0.ru_minflt);
	while (from < nreg && !__atomic_compare_exchange_n(ready, &from, nreg, 0, __ATOMIC_RELEASE,
							   __ATOMIC_ACQUIRE))
		;
}

/* The loop has run out of elements at i (thread index): go on in the
 * next block, or wait for the loader to publish more.  Out of line: once
 * per block or wait. */
RP_RUN_CODE static __attribute__((noinline)) void refill(struct rp_wctx *w, struct rp_hot *h, uint32_t i)
{
	struct rp_tsh *ts = w->ts;
	const struct rp_blk *b = (const struct rp_blk *)h->blk;
	for (;;) {
		uint32_t pub = __atomic_load_n(&ts->published, __ATOMIC_ACQUIRE);
		if (pub > i) {
			if (!b)
				b = __atomic_load_n(&ts->head, __ATOMIC_ACQUIRE);
			while (i >= b->first + __atomic_load_n(&b->n, __ATOMIC_ACQUIRE))
				b = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
			uint32_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
			if (__builtin_expect(b->nregions > __atomic_load_n(&w->rt->base_ready[w->copy],
									   __ATOMIC_RELAXED), 0))
				bases_ahead(w, b->nregions);
			h->blk = w->blk = (const char *)b;
			h->elem = b->elem;
			h->first = b->first;
			h->end = pub < b->first + n ? pub : b->first + n;
			return;
		}
		/* (the wait is vmreplay's, not the program's: its time and
		 * switches are counted apart, and its faults as set-up) */
		struct rusage r0, r1;
		getrusage(RUSAGE_THREAD, &r0);
		uint64_t t0 = vmt_now_ns();
		__atomic_store_n(h->done, i, __ATOMIC_RELEASE); /* before it blocks */
		/* the loader is another process: shared futexes; a timeout so
		 * that a run it ended is never slept through */
		await_count(&ts->published, &ts->want, &ts->epoch, i + 1, 0, 100000000);
		w->out->load_wait_ns += vmt_now_ns() - t0;
		getrusage(RUSAGE_THREAD, &r1);
		w->out->load_vcsw += (uint64_t)(r1.ru_nvcsw - r0.ru_nvcsw);
		w->out->load_ivcsw += (uint64_t)(r1.ru_nivcsw - r0.ru_nivcsw);
		w->out->setup_minflt += (uint64_t)(r1.ru_minflt - r0.ru_minflt);
	}
}

/* The loop.  It is kept compact in code as well as data: after each
 * fault and call the kernel has evicted much of this CPU's caches and
 * TLB, and every line or page of loop code or data touched per element is
 * fetched again.  (Measured on the 1-thread seed-000 trace with blocks of
 * this loop alternating with blocks of the workload's own loop on the
 * same region in one replay thread: 1.03-1.04 of it in all, of which the
 * two clock reads ~2%, the histogram ~1.5%, the touch guard ~1%.)  The
 * thread's completion count is stored every 64 elements of the short
 * path, after every other element, and before it may block: a late wait
 * (RP_DEP_LATE) reads it, and so does the loader, to free the blocks
 * every copy has passed.  (A store per element cost the 1-thread loop
 * 3%.)  A thread that waits has stored its count, so no two threads
 * wait for each other's stale counts. */
static inline __attribute__((always_inline)) void run_elems(struct rp_wctx *w, struct rp_hot *h,
							   uint32_t i, const int tsc)
{
	struct rp_rt *rt = w->rt;
	const uint32_t fast = rt->opt.speed > 0 ? 0 : RF_FAST; /* pacing: every element */

	while (!h->ended) {
		if (__builtin_expect(i == h->end, 0))
			refill(w, h, i);
		const struct rp_elem *e = &h->elem[i - h->first];
		if (__builtin_expect(!(e->flags & fast), 0)) {
			slow_elem(w, h, e, i);
			i++;
			continue;
		}
		if (__builtin_expect(e->ntouch != 0, 1)) /* (code layout) */
			do_touches(h, e, i);
		piece1_call(w, h, e, tsc);
		if (__builtin_expect(!(++i & 63), 0)) {
			__atomic_store_n(h->done, i, __ATOMIC_RELEASE);
			watch_check(w, h);
		}
	}
}

/* Elements from `from` on under the stream's touch guard; 1 when a touch
 * trapped (h->cur: its element, whose call has not run yet). */
RP_RUN_CODE static __attribute__((noinline)) int run_guarded(struct rp_wctx *w, struct rp_hot *h,
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

RP_RUN_CODE static void run_stream(struct rp_wctx *w)
{
	struct rp_rt *rt = w->rt;
	struct rp_hot h = {
		.done = &w->ctl[w->tid].done,
		.base = w->base,
		.hist = w->hist,
		.page = rt->page,
	};
	struct rusage r0, r1;

	h.forks_seen = __atomic_load_n(&rt_proc_forks, __ATOMIC_ACQUIRE);
	memcpy(h.nr, rp_sysnr, sizeof(h.nr));
	for (unsigned op = 0; op < VMT_OP__COUNT; op++)
		h.hidx[op] = (uint8_t)op;
	w->stack_top = (uintptr_t)__builtin_frame_address(0);
	if (!rt->t->complete) {
		/* Streamed, the run started before the load knew this thread
		 * or every op it makes (glibc's madvise of a thread's stack
		 * at its exit comes last): its report, its count and all its
		 * histograms written now, before it watches and counts. */
		prefault_w(w->out, sizeof(*w->out), rt->page);
		prefault_w(&w->ctl[w->tid], sizeof(w->ctl[w->tid]), rt->page);
		prefault_w(w->hist, (size_t)rt->nused * sizeof(*w->hist), rt->page);
	}
	rt_watch_start(w, &h);
	getrusage(RUSAGE_THREAD, &r0);
	w->out->ran = 1;
	w->out->start_ns = vmt_now_ns();
	for (uint32_t from = 0; run_guarded(w, &h, from); from = h.cur + 1) {
		/* The rest of the element whose touch trapped. */
		w->out->touch_faults++;
		elem_rest(w, &h, &h.elem[h.cur - h.first], h.cur);
	}
	w->out->end_ns = vmt_now_ns();
	w->out->syscalls += h.syscalls;
	w->out->touched += h.touched;
	w->out->elems = __atomic_load_n(h.done, __ATOMIC_RELAXED);
	getrusage(RUSAGE_THREAD, &r1);
	w->out->minflt = (uint64_t)(r1.ru_minflt - r0.ru_minflt);
	w->out->minflt -= w->out->setup_minflt < w->out->minflt ? w->out->setup_minflt : w->out->minflt;
	w->out->majflt = (uint64_t)(r1.ru_majflt - r0.ru_majflt);
	w->out->nvcsw = (uint64_t)(r1.ru_nvcsw - r0.ru_nvcsw);
	w->out->nivcsw = (uint64_t)(r1.ru_nivcsw - r0.ru_nivcsw);
	/* (waiting for a streamed load is not the program's) */
	w->out->nvcsw -= w->out->load_vcsw < w->out->nvcsw ? w->out->load_vcsw : w->out->nvcsw;
	w->out->nivcsw -= w->out->load_ivcsw < w->out->nivcsw ? w->out->load_ivcsw : w->out->nivcsw;
	w->out->user_ns = tv_ns(&r1.ru_utime) - tv_ns(&r0.ru_utime);
	w->out->sys_ns = tv_ns(&r1.ru_stime) - tv_ns(&r0.ru_stime);
	rt_watch_end(w, &h);
}

RP_RUN_CODE static void thread_done(struct rp_wctx *w)
{
	uint32_t *live = live_of(w);
	if (__atomic_sub_fetch(live, 1, __ATOMIC_SEQ_CST) == 0)
		syscall(SYS_futex, live, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}

RP_RUN_CODE static void *thread_main(void *arg)
{
	struct rp_wctx *w = arg;
	run_stream(w);
	thread_done(w);
	return NULL;
}

/* The first thread of a replay process: its own stream, then wait for the
 * other threads of the process. */
RP_RUN_CODE void rt_run_process(struct rp_wctx *w)
{
	uint32_t *live = live_of(w), v;
	__atomic_store_n(live, 1, __ATOMIC_SEQ_CST);
	run_stream(w);
	thread_done(w);
	while ((v = __atomic_load_n(live, __ATOMIC_SEQ_CST)) != 0)
		syscall(SYS_futex, live, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, v, NULL, NULL, 0);
}

RP_RUN_CODE struct rp_wctx *rt_wctx(struct rp_rt *rt, uint32_t copy, uint32_t tid)
{
	uint32_t s = copy * rt->tcap + tid;
	struct rp_wctx *w = &rt->w[s];
	if (w->rt)
		return w;
	w->rt = rt;
	w->tid = tid;
	w->copy = copy;
	w->slot = s;
	w->base = rt->base + (size_t)copy * rt->rcap;
	w->ctl = rt->ctl + (size_t)copy * rt->tcap;
	w->out = &rt->slot[s];
	w->hist = rt->hist + (size_t)s * rt->nused;
	w->ts = &rt->arena->threads[tid];
	return w;
}
