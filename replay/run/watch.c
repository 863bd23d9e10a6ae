/*
 * watch.c - what a replay thread keeps apart as vmreplay's own: its
 * self-watch (selfmon.c's perf ring: started, drained, its figures into
 * the thread's slot) and, after a fork, the pages of its own that it
 * writes again so that the copy-on-write faults are set-up, not the
 * replay's.
 *
 * Apart from worker.c's loop, which only asks here when it is time (a
 * ring half full, a fork seen: fork_check() and worker.c's watch_check()
 * stay inline there), and none of which runs per element.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif
#include "exec_int.h"
#include "selfmon.h"

/* ---- its own pages after a fork ---------------------------------------- */

/* The thread pointer: on x86-64 glibc's thread descriptor, with the
 * static TLS below it; on arm64 the end of the descriptor.  0: unknown. */
static uintptr_t thread_pointer(void)
{
	uintptr_t tp = 0;
#if defined(__x86_64__)
	__asm__("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__)
	__asm__("mrs %0, tpidr_el0" : "=r"(tp));
#endif
	return tp;
}

/* After a fork every private page is the child's too, copy-on-write, and
 * the next write to each, in parent or child, takes a fault.  On the
 * program's pages those are the recorded program's own (its touches
 * replay them); on vmreplay's they are the cost of replaying the fork
 * itself: libc's locks (which fork releases, in both), the thread's stack,
 * its descriptor and TLS (which the kernel writes too: rseq), its context
 * and its process's live count, each written again at once.  So those
 * pages are written here, right after the fork, and the parent keeps the
 * faults from the fork to here out of its thread's figures (they count as
 * vmreplay's set-up: the tree's less the threads'); the child writes them
 * before it starts counting.  (The stack from 16 KiB below this frame,
 * where the calls that follow go, up to the replay loop's frame.) */
RP_RUN_CODE void rt_write_own_pages(struct rp_wctx *w, struct rp_wctx *nw)
{
	size_t ps = w->rt->page;
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0), below = 16 << 10;
	if (w->stack_top > sp)
		prefault_w((void *)(sp - below), w->stack_top - sp + below, ps);
	uintptr_t tp = thread_pointer(), lo = (uintptr_t)pthread_self(), hi = lo + 1;
#if defined(__x86_64__)
	if (tp)
		lo = tp - 1; /* the static TLS */
#endif
#ifdef RSEQ_SIG
	if (tp && __rseq_size) {
		uintptr_t r = tp + (uintptr_t)__rseq_offset;
		lo = r < lo ? r : lo;
		hi = r + __rseq_size > hi ? r + __rseq_size : hi;
	}
#endif
	prefault_w((void *)lo, hi - lo, ps);
	prefault_w(nw, sizeof(*nw), ps);
	prefault_w(w, sizeof(*w), ps);
	prefault_w(live_of(w), sizeof(uint32_t), ps);
	prefault_w(live_of(nw), sizeof(uint32_t), ps);
}

/* The forks this replay process made, and when the last began: every
 * other thread of the process takes the same copy-on-write faults on
 * its own pages after it (its stack, TLS and the like, written again by
 * rt_after_fork()).  Process-private, as what they count is: a forked
 * child starts with its parent's values, which its threads take as seen.
 * (worker.c's fork_process() counts them, fork_check() compares.) */
uint32_t rt_proc_forks;
uint64_t rt_proc_fork_ns;

/* Another thread of this process forked (since this one last looked):
 * this one writes its own pages again (the forking thread wrote its own
 * and those of the child it started), and its faults in vmreplay's own
 * memory from the fork's start to here are set-up, not the replay's
 * (rp_selfmon_own).  Once per fork, where the thread next waits or
 * drains: its next element after a fork waits for it (load/order.c). */
RP_RUN_CODE __attribute__((noinline)) void rt_after_fork(struct rp_wctx *w, struct rp_hot *h)
{
	h->forks_seen = __atomic_load_n(&rt_proc_forks, __ATOMIC_ACQUIRE);
	uint64_t t0 = __atomic_load_n(&rt_proc_fork_ns, __ATOMIC_RELAXED);
	rt_write_own_pages(w, w);
	rt_write_watch_pages(w, h);
	if (h->watch)
		rp_selfmon_own(&h->watch->m, t0, vmt_now_ns());
}

/* ---- the thread's self-watch ------------------------------------------- */

/* Its calls' times as CLOCK_MONOTONIC (the switch records' clock): the
 * op clock against it, from the run's start to now. */
static void watch_clock(struct rp_wctx *w, struct rp_tick_ns *cv)
{
	struct rp_rt *rt = w->rt;
	memset(cv, 0, sizeof(*cv));
	if (!rt->tsc)
		return;
	uint64_t tick, ns;
	rp_clock_pair(1, &tick, &ns);
	cv->tick0 = rt->sh->tick_start;
	cv->ns0 = rt->sh->t_start;
	if (tick > cv->tick0 && ns > cv->ns0)
		cv->per_tick = (double)(ns - cv->ns0) / (double)(tick - cv->tick0);
	else
		cv->per_tick = 1.0;
}

/* Read the ring now (where the process's mappings are now). */
__attribute__((noinline)) void rt_watch_drain(struct rp_wctx *w, struct rp_hot *h)
{
	struct rp_tick_ns cv;
	fork_check(w, h);
	uint64_t t0 = vmt_now_ns();
	watch_clock(w, &cv);
	rp_fclass_defer(&h->watch->c, w->rt->t, w->base);
	rp_selfmon_drain(&h->watch->m, &h->watch->c, &cv);
	/* (the drain's own faults, drained next time, are set-up) */
	rp_selfmon_own(&h->watch->m, t0, vmt_now_ns());
}

/* h->seq when not watching: a word that never moves. */
static const volatile uint32_t seq_still;

/* Start watching: what it needs taken and written before the counted
 * stretch (its faults there are its own, not the replay's). */
RP_RUN_CODE void rt_watch_start(struct rp_wctx *w, struct rp_hot *h)
{
	h->seq = &seq_still;
	h->watch = NULL;
	if (w->rt->opt.no_watch)
		return;
	/* (mmap, not malloc: see selfmon.c's fork_safe_alloc) */
	struct rp_watch *x = mmap(NULL, sizeof(*x), PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x == MAP_FAILED)
		x = NULL;
	if (!x || rp_fclass_init(&x->c, w->rt->t) < 0 ||
	    rp_selfmon_open(&x->m, w->rt->watch_pages) < 0) {
		if (x) {
			rp_fclass_free(&x->c);
			munmap(x, sizeof(*x));
		}
		return;
	}
	h->watch = x;
	h->seq = &x->m.pc->lock;
}

/* What the thread's watch and its mincore vector write, written again
 * (after a fork: copy-on-write).  Of its noted calls, those up to the
 * ones noted now and a page more: a drain starts them again from the
 * first (many more between two drains are rare). */
void rt_write_watch_pages(struct rp_wctx *w, struct rp_hot *h)
{
	size_t ps = w->rt->page;
	if (w->mincore_len)
		prefault_w(w->mincore, w->mincore_len, ps);
	if (!h->watch)
		return;
	struct rp_selfmon *m = &h->watch->m;
	size_t sw = (m->nsw + 1) * sizeof(*m->sw) + ps;
	prefault_w(h->watch, sizeof(*h->watch), ps);
	prefault_w(m->sw, sw < m->capsw * sizeof(*m->sw) ? sw : m->capsw * sizeof(*m->sw), ps);
}

/* The last of the ring, and what the thread saw, into its slot. */
RP_RUN_CODE void rt_watch_end(struct rp_wctx *w, struct rp_hot *h)
{
	struct rp_watch *x = h->watch;
	if (!x)
		return;
	rt_watch_drain(w, h);
	struct rp_slot *o = w->out;
	o->watched = 1;
	o->call_off_cpu_ns = x->m.off_cpu_ns;
	o->call_vcsw = x->m.vcsw;
	o->call_ivcsw = x->m.ivcsw;
	for (int k = 0; k < RP_FK__COUNT; k++)
		o->kind_faults[k] = x->m.minor[k] + x->m.major[k];
	/* (its faults in its own memory while vmreplay worked are set-up) */
	o->minflt -= x->m.own_minor < o->minflt ? x->m.own_minor : o->minflt;
	/* (its forks' faults in vmreplay's own memory are not its own) */
	o->kind_faults[RP_FK_OTHER] -= o->setup_minflt < o->kind_faults[RP_FK_OTHER] ?
		o->setup_minflt : o->kind_faults[RP_FK_OTHER];
	o->fault_samples = x->m.samples;
	/* (a throttled event took no sample of some faults: unknown how
	 * many; the thread's own count says) */
	uint64_t faults = o->minflt + o->majflt;
	o->fault_lost = x->m.lost + (x->m.throttled && faults > x->m.samples ? faults - x->m.samples : 0);
	rp_selfmon_close(&x->m);
	rp_fclass_free(&x->c);
	munmap(x, sizeof(*x));
	h->watch = NULL;
	h->seq = &seq_still;
}
