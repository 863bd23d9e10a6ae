/*
 * runproc.c - the run process around its replay threads: set up before
 * the gate (the lifeline to rp_run's process, its tables, the root
 * processes' stand-ins, what the run writes faulted in, the copies of the
 * first root and the other roots started), then its own first thread's
 * stream (worker.c), and at the end every descendant reaped and the
 * tree's getrusage and perf counters into the shared area.
 *
 * Apart from worker.c: none of it runs while the replay threads do, and
 * it uses the threads (rt_run_process) while they use nothing of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "exec_int.h"

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
	rt_run_process(w);
	return NULL;
}

/* Read-fault what the run reads (prefault_w, exec_int.h: what it writes).
 * These fault pages, not objects: they touch a page's first byte, which
 * may lie in a neighbour's allocator redzone, so ASan must not check them. */
__attribute__((no_sanitize_address)) static void prefault(const void *p, size_t len, size_t ps)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1), end = (uintptr_t)p + len;
	for (; a < end; a += ps)
		(void)*(volatile const char *)a;
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

/* The run process's tables, indexed by what the load may still create:
 * as large as the run allows, only their used pages cost memory. */
static void alloc_tables(struct rp_rt *rt)
{
	const rp_trace *t = rt->t;
	uint32_t K = rt->opt.scale;
	rt->base_len = (size_t)rt->rcap * K * sizeof(*rt->base);
	void *bp = mmap((void *)RP_HINT_BASES, rt->base_len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	rt->base = bp == MAP_FAILED ? NULL : bp;
	rt->live = calloc((size_t)(t->complete ? t->nprocs : RP_PCAP) * K + 1, sizeof(*rt->live));
	rt->base_ready = calloc(K, sizeof(*rt->base_ready));
	rt->w = calloc(rt->nslots, sizeof(*rt->w));
	size_t nf = t->complete ? t->nfiles + 1 : RP_FCAP;
	rt->fdc_rd = calloc(nf, sizeof(int));
	rt->fdc_rw = calloc(nf, sizeof(int));
	if (!rt->base || !rt->live || !rt->base_ready || !rt->w || !rt->fdc_rd || !rt->fdc_rw)
		rt_fatal(rt, -ENOMEM, "out of memory");
	pthread_attr_init(&rt->attr);
	pthread_attr_setdetachstate(&rt->attr, PTHREAD_CREATE_DETACHED);
}

/* Stand-ins of the root processes, per copy (children inherit); the
 * first root process, which this process replays. */
static uint32_t setup_roots(struct rp_rt *rt)
{
	const rp_trace *t = rt->t;
	uint32_t root = RP_VOID;
	int rc;
	for (uint32_t p = 0; p < t->nprocs; p++) {
		if (t->procs[p].parent != RP_VOID)
			continue;
		if (root == RP_VOID)
			root = p;
		if (!rt->root_plan[p])
			continue;
		for (uint32_t c = 0; c < rt->opt.scale; c++) {
			if ((rc = rt_setup_plan(rt, c, rt->root_plan[p])) < 0)
				rt_fatal(rt, rc, "cannot create stand-in mappings: %s", strerror(-rc));
			rt_wctx(rt, c, t->procs[p].first_thread)->out->fallbacks += (uint64_t)rc;
		}
	}
	return root;
}

/* What the run reads and writes, faulted in before it starts (its faults
 * are counted from the start); and each thread's largest mincore vector,
 * as the load knows it. */
static void prefault_run(struct rp_rt *rt)
{
	const rp_trace *t = rt->t;
	prefault_w(rt->sh, sizeof(*rt->sh), rt->page);
	for (uint32_t c = 0; c < rt->opt.scale; c++) {
		prefault_w(rt->base + (size_t)c * rt->rcap, (size_t)t->nregions * sizeof(*rt->base),
			   rt->page);
		rt->base_ready[c] = t->nregions;
		prefault_w(rt->ctl + (size_t)c * rt->tcap, t->nthreads * sizeof(*rt->ctl), rt->page);
		for (uint32_t i = 0; i < t->nthreads; i++) {
			struct rp_wctx *w = rt_wctx(rt, c, i);
			if (t->threads[i].mincore_max) {
				w->mincore_len = t->threads[i].mincore_max;
				if (!(w->mincore = malloc(w->mincore_len)))
					rt_fatal(rt, -ENOMEM, "out of memory");
				memset(w->mincore, 0, w->mincore_len);
			}
			prefault_w(w->out, sizeof(*w->out), rt->page);
			for (unsigned op = 1; op < VMT_OP__COUNT; op++)
				if (t->ops_used_mask & (1u << op))
					prefault_w(&w->hist[op], sizeof(w->hist[op]), rt->page);
		}
	}
	struct rp_arena *a = rt->arena;
	/* (the streams' counts are written too: want, epoch) */
	if (a->shared)
		prefault_w(a->threads, t->nthreads * sizeof(*a->threads), rt->page);
	else
		prefault(a->threads, t->nthreads * sizeof(*a->threads), rt->page);
	prefault(a->proc_rec, t->nprocs * sizeof(*a->proc_rec), rt->page);
	prefault(a->files, t->nfiles * sizeof(*a->files), rt->page);
	/* The element blocks: all of them, or streamed, as much of the pool
	 * as the window will use (its blocks are used again and again). */
	size_t pool = a->bump - a->pool0;
	if (!t->complete) {
		size_t want = t->window + ((size_t)2 << RP_BLK_SHIFT) * (t->nthreads + 16);
		if (want > a->size - a->pool0)
			want = a->size - a->pool0;
		pool = want > pool ? want : pool;
	}
	prefault((char *)a + a->pool0, pool, rt->page);
}

/* Copies 1..K-1 of the first root process, as threads waiting at the
 * gate; the array to join them. */
static pthread_t *start_copies(struct rp_rt *rt, uint32_t root)
{
	uint32_t K = rt->opt.scale;
	pthread_t *copies = calloc(K, sizeof(*copies));
	if (!copies)
		rt_fatal(rt, -ENOMEM, "out of memory");
	pthread_attr_t cattr;
	pthread_attr_init(&cattr);
	for (uint32_t c = 1; c < K; c++) {
		int rc = pthread_create(&copies[c], &cattr, copy_main,
					rt_wctx(rt, c, rt->t->procs[root].first_thread));
		if (rc)
			rt_fatal(rt, -rc, "cannot start copy %u: %s", c, strerror(rc));
	}
	return copies;
}

/* Further root processes (several attached programs), every copy of
 * them, are forked. */
static void fork_other_roots(struct rp_rt *rt, uint32_t root)
{
	const rp_trace *t = rt->t;
	for (uint32_t p = root + 1; p < t->nprocs; p++) {
		if (t->procs[p].parent != RP_VOID)
			continue;
		for (uint32_t c = 0; c < rt->opt.scale; c++) {
			pid_t pid = fork();
			if (pid < 0)
				rt_fatal(rt, -errno, "cannot fork: %s", strerror(errno));
			if (pid == 0) {
				if (rt->root_plan[p])
					rt_setup_plan(rt, c, rt->root_plan[p]);
				rt_run_process(rt_wctx(rt, c, t->procs[p].first_thread));
				_exit(0);
			}
		}
	}
}

/* Each replay thread's perf ring (selfmon.c): 1 MiB, less when there are
 * many threads (64 MiB in all), at least 8 pages. */
static uint32_t watch_ring_pages(const struct rp_rt *rt)
{
	uint64_t threads = (uint64_t)(rt->t->nthreads ? rt->t->nthreads : 1) * rt->opt.scale;
	uint64_t want = (64ull << 20) / (uint64_t)rt->page / threads;
	uint32_t pages = 256;
	while (pages > 8 && pages > want)
		pages /= 2;
	return pages;
}

/* Every descendant (orphans come to us: we are the subreaper; the SIGCHLD
 * watch may have reaped some, and ends the run at once if one was
 * killed). */
static void reap_all(struct rp_rt *rt)
{
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, __WALL)) > 0 || (pid < 0 && errno == EINTR))
		if (pid > 0)
			rt_child_ended(rt, st);
}

static uint64_t ru_sum(const struct rusage *a, const struct rusage *b, const struct rusage *c, int k)
{
	switch (k) {
	case 0:
		return (uint64_t)(a->ru_minflt - b->ru_minflt + c->ru_minflt);
	case 1:
		return (uint64_t)(a->ru_majflt - b->ru_majflt + c->ru_majflt);
	case 2:
		return (uint64_t)(a->ru_nvcsw - b->ru_nvcsw + c->ru_nvcsw);
	default:
		return (uint64_t)(a->ru_nivcsw - b->ru_nivcsw + c->ru_nivcsw);
	}
}

/* The tree's getrusage since *r0 into the shared area: this process's
 * own since then and every descendant's (all reaped: reap_all). */
static void read_tree(struct rp_rt *rt, const struct rusage *r0)
{
	struct rusage self, kids;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	rt->sh->tree_minor = ru_sum(&self, r0, &kids, 0);
	rt->sh->tree_major = ru_sum(&self, r0, &kids, 1);
	rt->sh->tree_vcsw = ru_sum(&self, r0, &kids, 2);
	rt->sh->tree_ivcsw = ru_sum(&self, r0, &kids, 3);
}

/* The perf counters of the whole run, into the shared area. */
static void read_perf(struct rp_rt *rt, int perf[3])
{
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

void rp_child_main(struct rp_rt *rt)
{
	int perf[3] = {-1, -1, -1};
	struct rusage r0;

	rt->run_pgid = setpgid(0, 0) == 0 ? getpid() : 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	watch_lifeline(rt);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	rt_install_guard();
	rt_watch_children(rt);
	alloc_tables(rt);
	uint32_t root = setup_roots(rt);
	prefault_run(rt);
	rt->watch_pages = watch_ring_pages(rt);
	rt->sh->perf_ok = rp_perf_open(perf) == 0;
	pthread_t *copies = start_copies(rt, root);
	if (rt->sh->perf_ok)
		rp_perf_enable(perf, 1);
	getrusage(RUSAGE_SELF, &r0);
	rp_clock_pair(rt->tsc, &rt->sh->tick_start, &rt->sh->t_start);
	__atomic_store_n(&rt->sh->gate, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &rt->sh->gate, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	fork_other_roots(rt, root);
	rt_run_process(rt_wctx(rt, 0, rt->t->procs[root].first_thread));
	for (uint32_t c = 1; c < rt->opt.scale; c++)
		pthread_join(copies[c], NULL);
	rt_sample_vmas(rt); /* at least the replayer's own */
	reap_all(rt);
	rp_clock_pair(rt->tsc, &rt->sh->tick_end, &rt->sh->t_end);
	if (rt->sh->perf_ok)
		read_perf(rt, perf);
	read_tree(rt, &r0);
	_exit(0);
}
