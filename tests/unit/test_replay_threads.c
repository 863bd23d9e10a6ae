/*
 * test_replay_threads.c - replays of synthetic traces with several threads
 * and processes: each ordering and its waits, lost wake-ups, forked and
 * vforked processes, exec, --scale, and the end of a run whose process
 * failed or was killed.  Zero divergences, and the waits the load
 * computed, are checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "exec_int.h"
#include "rprun.h"

/* Three threads: two work on halves of the main thread's region, which
 * the main thread unmaps at the end. */
/* Element i of thread th of a loaded trace, and its waits. */
static const struct rp_elem *elem_of(const rp_trace *tr, uint32_t th, uint32_t i)
{
	const struct rp_elem *e = rp_trace_elem(tr->arena, th, i, NULL);
	assert_non_null(e);
	return e;
}

static const struct rp_dep *deps_of(const rp_trace *tr, uint32_t th, uint32_t i)
{
	const struct rp_blk *b;
	const struct rp_elem *e = rp_trace_elem(tr->arena, th, i, &b);
	assert_non_null(e);
	return rp_elem_deps(b, e);
}

/* Waits of all elements. */
static uint64_t all_deps(const rp_trace *tr)
{
	uint64_t n = 0;
	for (uint32_t th = 0; th < tr->nthreads; th++)
		for (uint32_t i = 0; i < tr->threads[th].nelem; i++)
			n += elem_of(tr, th, i)->ndeps;
	return n;
}

static void threads_trace(struct tg_trace *t, int rounds)
{
	rr_begin(t);
	TG_PUT_SC(t, 0, 0, VMT_OP_MMAP, A, 0, 8 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_thread(t, 0, 1, 0);
	tg_thread(t, 0, 2, 0);
	for (int i = 0; i < rounds; i++) {
		tg_touch(t, 0, 1, A, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(t, 0, 1, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
		tg_touch(t, 0, 2, A + 4 * PAGE, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(t, 0, 2, VMT_OP_MADVISE, 0, A + 4 * PAGE, 4 * PAGE, MADV_DONTNEED);
	}
	tg_thread_exit(t, 0, 1);
	TG_PUT_SC(t, 0, 0, VMT_OP_MPROTECT, 0, A, 8 * PAGE, PROT_READ);
	tg_touch(t, 0, 0, A, 8, VMT_PAGE_READ);
	TG_PUT_SC(t, 0, 0, VMT_OP_MUNMAP, 0, A, 8 * PAGE);
	tg_thread_exit(t, 0, 2);
	rr_finish(t);
}

static void test_thread_orders(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	threads_trace(&t, 200);

	rr_opts(&o);
	/* resource: the halves are independent; the mprotect waits for
	 * thread 1's end and thread 2's last madvise. */
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.nthreads, 3);
	assert_int_equal(r.touched_pages, 200 * 8 + 8);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 400);
	const struct rp_elem *mp = NULL;
	for (uint32_t i = 0; i < tr->threads[0].nelem; i++)
		if (elem_of(tr, 0, i)->op == VMT_OP_MPROTECT)
			mp = elem_of(tr, 0, i);
	assert_non_null(mp);
	assert_int_equal(mp->ndeps, 2);
	/* No madvise of thread 1 waits for thread 2, or the reverse. */
	for (uint32_t i = 0; i < tr->threads[1].nelem; i++)
		for (uint32_t d = 0; d < elem_of(tr, 1, i)->ndeps; d++)
			assert_int_not_equal(deps_of(tr, 1, i)[d].thread & ~RP_DEP_LATE, 2);
	/* A thread posts its progress only after the elements others wait
	 * for: every waited-for element is marked and nothing else, here
	 * one of each worker (both for the mprotect), so the madvise loops
	 * post nothing until their ends. */
	for (uint32_t th = 0; th < 3; th++)
		for (uint32_t i = 0; i < tr->threads[th].nelem; i++)
			for (uint32_t d = 0; d < elem_of(tr, th, i)->ndeps; d++) {
				const struct rp_dep *x = &deps_of(tr, th, i)[d];
				assert_false(x->thread & RP_DEP_LATE);
				assert_true(elem_of(tr, x->thread, x->seq - 1)->flags & RF_POST);
			}
	uint32_t posted[3] = {0, 0, 0};
	for (uint32_t th = 0; th < 3; th++)
		for (uint32_t i = 0; i < tr->threads[th].nelem; i++)
			posted[th] += !!(elem_of(tr, th, i)->flags & RF_POST);
	assert_int_equal(posted[1], 1);
	assert_int_equal(posted[2], 1);
	/* The loop's short path takes the one-piece range ops that neither
	 * wait nor post: every madvise of the workers but the first (it
	 * waits for the main thread's mmap) and the last (posted), and the
	 * main thread's munmap (its mprotect waits, its mmap is no range op). */
	uint32_t fast[3] = {0, 0, 0};
	for (uint32_t th = 0; th < 3; th++)
		for (uint32_t i = 0; i < tr->threads[th].nelem; i++) {
			const struct rp_blk *b;
			const struct rp_elem *e = rp_trace_elem(tr->arena, th, i, &b);
			if (!(e->flags & RF_FAST))
				continue;
			fast[th]++;
			assert_true(e->kind == RK_SYSCALL && e->how == RX_RANGE && e->npieces == 1);
			assert_true(!e->ndeps && !(e->flags & (RF_POST | RF_RAW_LEN | RF_SAMPLE_VMAS)));
			/* Its piece inline, and its one touch (the madvise
			 * loops' 4 written pages, the munmap's 8 read ones). */
			const struct rp_piece *pc = rp_blk_at(b, e->piece0);
			assert_true(e->region == pc->region && e->off2 == pc->off && e->aux == pc->len);
			assert_true(e->flags & RF_TOUCH1);
			const struct rp_touch *tc = rp_blk_at(b, e->touch0);
			assert_int_equal(e->ntouch, 1);
			assert_int_equal(e->region2, tc->region);
			assert_int_equal((uint64_t)e->tpage * tr->page_size, tc->off);
			assert_int_equal(e->arg, th ? 4 | RP_TOUCH_WRITE : 8);
		}
	assert_int_equal(fast[0], 1);
	assert_int_equal(fast[1], 198);
	assert_int_equal(fast[2], 198);
	rr_release(&r, tr);

	/* strict: every switch between threads is a wait. */
	o.order = RP_ORDER_STRICT;
	tr = rr_replay_clean(t.path, &o, &r);
	uint64_t waits = 0;
	for (uint32_t i = 0; i < r.nthreads; i++)
		waits += r.threads[i].waits;
	assert_true(all_deps(tr) >= 400);
	assert_true(waits > 0);
	rr_release(&r, tr);

	/* free: only the structural ops are ordered. */
	o.order = RP_ORDER_FREE;
	tr = rr_replay_clean(t.path, &o, &r);
	for (uint32_t i = 0; i < tr->threads[1].nelem; i++)
		assert_true(elem_of(tr, 1, i)->ndeps <= 1);
	rr_release(&r, tr);

	/* --scale=2: two copies, each in its own regions. */
	o.order = RP_ORDER_RESOURCE;
	o.scale = 2;
	tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(r.nthreads, 6);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 800);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* Two threads that sleep on one counter, for different elements: the
 * main thread madvises two ranges in turn, each of the others works on
 * one of them and waits (resource order) for the main thread's next
 * madvise of its range. */
static void two_sleepers_trace(struct tg_trace *t, int rounds)
{
	rr_begin(t);
	TG_PUT_SC(t, 0, 0, VMT_OP_MMAP, A, 0, 8 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_thread(t, 0, 1, 0);
	tg_thread(t, 0, 2, 0);
	for (int i = 0; i < rounds; i++) {
		TG_PUT_SC(t, 0, 0, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
		TG_PUT_SC(t, 0, 0, VMT_OP_MADVISE, 0, A + 4 * PAGE, 4 * PAGE, MADV_DONTNEED);
		tg_touch(t, 0, 1, A, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(t, 0, 1, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
		tg_touch(t, 0, 2, A + 4 * PAGE, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(t, 0, 2, VMT_OP_MADVISE, 0, A + 4 * PAGE, 4 * PAGE, MADV_DONTNEED);
	}
	tg_thread_exit(t, 0, 1);
	tg_thread_exit(t, 0, 2);
	TG_PUT_SC(t, 0, 0, VMT_OP_MUNMAP, 0, A, 8 * PAGE);
	rr_finish(t);
}

/* A thread that waits for an element far ahead in another thread's
 * stream (here the main thread's mprotect, for the ends of the two busy
 * threads) sleeps while the others post thousands of times.  The old
 * single waiter flag lost the wake-up when a post cleared it between the
 * waiter setting it and reading the counter (this test hung every run);
 * the alarm turns a hang into a failure.  Only the posts that complete
 * what the sleeper waits for may wake it: the waiting costs the busy
 * threads no system calls.  Then two sleepers on one counter, waiting for
 * different elements, thousands of times (the order of the sleeper's
 * reads is what keeps them from losing a wake-up; this part runs that
 * path, it cannot force the narrow race). */
static void test_no_lost_wakeups(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	threads_trace(&t, 3000);
	rr_opts(&o);
	alarm(RR_HANG_S);
	for (int run = 0; run < 20; run++) {
		o.order = run & 1 ? RP_ORDER_FREE : RP_ORDER_RESOURCE;
		rp_trace *tr = rr_replay_clean(t.path, &o, &r);
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 6000);
		uint64_t wakes = 0;
		for (uint32_t i = 0; i < r.nthreads; i++)
			wakes += r.threads[i].wakes;
		assert_true(wakes <= 4);
		rr_release(&r, tr);
	}
	tg_remove(&t);

	two_sleepers_trace(&t, 2000);
	o.order = RP_ORDER_RESOURCE;
	for (int run = 0; run < 5; run++) {
		rp_trace *tr = rr_replay_clean(t.path, &o, &r);
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 8000);
		rr_release(&r, tr);
	}
	tg_remove(&t);
	alarm(0);
}

/* A run process (a process group with its shared area) whose body starts
 * replay processes, then waits forever as the run process waits for its
 * threads.  Returns once the run process was killed and nothing of its
 * group is left (its orphans are reaped by init), with the run's error in
 * the shared area (unmap it after use). */
static struct rp_shared *end_of_run(void (*body)(struct rp_rt *rt))
{
	struct rp_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	pid_t run = fork();
	assert_true(run >= 0);
	if (run == 0) {
		static struct rp_rt rt;
		rt.sh = sh;
		assert_int_equal(setpgid(0, 0), 0);
		rt.run_pgid = getpid();
		body(&rt);
		for (;;)
			pause();
	}
	int st;
	alarm(RR_HANG_S);
	assert_int_equal(waitpid(run, &st, 0), run);
	alarm(0);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	int left = 1;
	for (int i = 0; i < 200 && left; i++) {
		left = kill(-run, 0) == 0;
		if (left)
			usleep(10000);
	}
	assert_false(left);
	return sh;
}

/* A process that would wait forever and one that fails. */
static void fatal_body(struct rp_rt *rt)
{
	if (fork() == 0)
		for (;;)
			pause(); /* a replay process waiting forever */
	if (fork() == 0)
		rt_fatal(rt, -EIO, "replay process %d failed", 2);
}

/* A fatal error in one replay process ends the whole run: another replay
 * process, which could be waiting for the failed one's progress, goes
 * too, and the message is kept. */
static void test_fatal_ends_run(void **state)
{
	struct rp_shared *sh = end_of_run(fatal_body);
	assert_string_equal(sh->msg, "replay process 2 failed");
	assert_int_equal(sh->error, -EIO);
	munmap(sh, sizeof(*sh));
}

/* The SIGCHLD watch, and a replay process whose child is killed while it
 * waits (for that child's progress, say). */
static void killed_body(struct rp_rt *rt)
{
	rt_watch_children(rt);
	if (fork() == 0) {
		if (fork() == 0)
			raise(SIGKILL);
		for (;;)
			pause();
	}
}

/* A replay process killed by a signal (not through rt_fatal) ends the run
 * too, with a message; and the message for a failed exit. */
static void test_killed_ends_run(void **state)
{
	struct rp_shared *sh = end_of_run(killed_body);
	assert_string_equal(sh->msg, "a replay process was killed by signal 9");
	assert_int_equal(sh->error, -EIO);
	munmap(sh, sizeof(*sh));

	char msg[64];
	rt_status_msg(msg, sizeof(msg), 3 << 8);
	assert_string_equal(msg, "a replay process failed (status 3)");
	rt_status_msg(msg, 8, SIGSEGV);
	assert_string_equal(msg, "a repla");
	rt_status_msg(msg, sizeof(msg), SIGSEGV);
	assert_string_equal(msg, "a replay process was killed by signal 11");
}

/* A vfork's parent thread is suspended until the child's exec (or exit):
 * its next element waits for the child's RK_EXEC (or RK_END); a fork's
 * parent does not wait. */
static void vfork_trace(struct tg_trace *t, uint32_t how, int exec)
{
	static const struct tg_map after_exec[] = {
		{0x561100000000ull, 0x561100003000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/other"},
		{0x7ffe00000000ull, 0x7ffe00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};
	rr_begin(t);
	TG_PUT_SC(t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_proc_how(t, 1, 1, 0, 0, how);
	for (int i = 0; i < 300; i++) { /* the child's own work first */
		tg_touch(t, 1, 1, A, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(t, 1, 1, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
	}
	if (exec) {
		tg_exec(t, 1, 1, "/usr/bin/other");
		tg_maps(t, 1, 1, after_exec, 2);
	}
	tg_proc_exit(t, 1, 1);
	TG_PUT_SC(t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	tg_proc_exit(t, 0, 0);
	tg_finish(t);
}

/* How many waits the elements of thread th have on thread u; *seq: the
 * element of u the last of them waits for (0: none). */
static uint32_t waits_on(const rp_trace *tr, uint32_t th, uint32_t u, uint32_t *seq)
{
	uint32_t n = 0;
	*seq = 0;
	for (uint32_t i = 0; i < tr->threads[th].nelem; i++) {
		const struct rp_elem *e = elem_of(tr, th, i);
		for (uint32_t d = 0; d < e->ndeps; d++)
			if ((deps_of(tr, th, i)[d].thread & ~RP_DEP_LATE) == u) {
				n++;
				*seq = deps_of(tr, th, i)[d].seq;
			}
	}
	return n;
}

static void test_vfork_waits(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;

	alarm(RR_HANG_S); /* a wait that never ends fails the test */
	for (int exec = 1; exec >= 0; exec--) {
		vfork_trace(&t, VMT_PROC_VFORK, exec);
		rr_opts(&o);
		rp_trace *tr = rr_replay_clean(t.path, &o, &r);
		assert_int_equal(tr->nprocs, 2);
		uint32_t parent = tr->procs[0].first_thread, child = tr->procs[1].first_thread;
		uint32_t waited; /* the child element the munmap waits for */
		waits_on(tr, parent, child, &waited);
		assert_true(waited > 0);
		const struct rp_elem *x = elem_of(tr, child, waited - 1);
		assert_int_equal(x->kind, exec ? RK_EXEC : RK_END);
		assert_true(x->flags & RF_POST);
		assert_int_equal(waited, 301); /* after its 300 madvises */
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 300);
		rr_release(&r, tr);

		/* free order keeps the wait; a fork's parent does not wait. */
		o.order = RP_ORDER_FREE;
		tr = rr_replay_clean(t.path, &o, &r);
		assert_int_equal(waits_on(tr, parent, child, &waited), 1);
		rr_release(&r, tr);
		tg_remove(&t);
	}
	/* An exec by another thread of the child releases the parent too. */
	static const struct tg_map after[] = {
		{0x7ffe00000000ull, 0x7ffe00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};
	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_proc_how(&t, 1, 1, 0, 0, VMT_PROC_VFORK);
	tg_thread(&t, 1, 2, 1);
	TG_PUT_SC(&t, 1, 2, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
	tg_exec(&t, 1, 2, "/usr/bin/other");
	tg_maps(&t, 1, 2, after, 1);
	tg_proc_exit(&t, 1, 2);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	tg_proc_exit(&t, 0, 0);
	tg_finish(&t);
	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	uint32_t execer = tr->procs[1].first_thread + 1, waited;
	waits_on(tr, tr->procs[0].first_thread, execer, &waited);
	assert_true(waited > 0);
	assert_int_equal(elem_of(tr, execer, waited - 1)->kind, RK_EXEC);
	rr_release(&r, tr);
	tg_remove(&t);

	vfork_trace(&t, VMT_PROC_FORK, 1);
	rr_opts(&o);
	tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(waits_on(tr, tr->procs[0].first_thread, tr->procs[1].first_thread, &waited),
			 0);
	rr_release(&r, tr);
	tg_remove(&t);
	alarm(0);
}

/* A forked child with its own thread and an exec; both processes use the
 * inherited mapping. */
static void test_processes(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	static const struct tg_map after_exec[] = {
		{0x561100000000ull, 0x561100003000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/other"},
		{0x561100003000ull, 0x561100004000ull, VMT_PROT_R | VMT_PROT_W, "/usr/bin/other"},
		{0x7ffe00000000ull, 0x7ffe00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};

	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
	tg_proc(&t, 1, 1, 0, 0); /* fork */
	TG_PUT_SC(&t, 1, 1, VMT_OP_MADVISE, 0, A, 4 * PAGE, MADV_DONTNEED);
	tg_thread(&t, 1, 2, 1);
	TG_PUT_SC(&t, 1, 2, VMT_OP_MMAP, (int64_t)B, 0, 2 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&t, 1, 2, B, 2, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 1, 2, VMT_OP_MUNMAP, 0, B, 2 * PAGE);
	tg_thread_exit(&t, 1, 2);
	tg_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	tg_exec(&t, 1, 1, "/usr/bin/other");
	tg_maps(&t, 1, 1, after_exec, 3);
	TG_PUT_SC(&t, 1, 1, VMT_OP_MUNMAP, 0, A, 4 * PAGE); /* gone with the exec */
	TG_PUT_SC(&t, 1, 1, VMT_OP_MPROTECT, 0, 0x561100003000ull, PAGE, PROT_READ);
	tg_touch(&t, 1, 1, 0x7ffe00020000ull, 1, VMT_PAGE_WRITTEN);
	tg_proc_exit(&t, 1, 1);
	tg_proc_exit(&t, 0, 0);
	tg_finish(&t);

	rr_opts(&o);
	rp_trace *tr = rr_replay_clean(t.path, &o, &r);
	assert_int_equal(tr->nprocs, 2);
	assert_int_equal(r.nthreads, 3);
	int child_threads = 0;
	for (uint32_t i = 0; i < r.nthreads; i++)
		child_threads += r.threads[i].proc == 1;
	assert_int_equal(child_threads, 2);
	assert_int_equal(r.touched_pages, 4 + 2 + 4 + 1);
	assert_int_equal(r.touch_faults, 0);
	rr_release(&r, tr);

	o.order = RP_ORDER_STRICT;
	tr = rr_replay_clean(t.path, &o, &r);
	rr_release(&r, tr);
	tg_remove(&t);
}

/* A fork copies the whole address space: it waits for the other threads'
 * earlier elements, and their later ones wait for it.  (A munmap by
 * another thread recorded after the fork once ran before it now and then:
 * the child then unmapped that range again at its exec, where the
 * replayer's own memory could be by then.) */
static void test_fork_orders(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	static const struct tg_map after_exec[] = {
		{0x7ffe00000000ull, 0x7ffe00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};
	(void)state;

	rr_begin(&t);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, A, 0, 4 * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_thread(&t, 0, 1, 0);
	TG_PUT_SC(&t, 0, 1, VMT_OP_MMAP, (int64_t)B, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_proc(&t, 1, 2, 0, 0); /* thread 0 forks */
	TG_PUT_SC(&t, 0, 1, VMT_OP_MUNMAP, 0, B, PAGE);
	tg_thread_exit(&t, 0, 1);
	tg_exec(&t, 1, 2, "/usr/bin/other");
	tg_maps(&t, 1, 2, after_exec, 1);
	tg_proc_exit(&t, 1, 2);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	tg_proc_exit(&t, 0, 0);
	tg_finish(&t);

	for (int order = 0; order < 2; order++) {
		rr_opts(&o);
		o.order = order ? RP_ORDER_FREE : RP_ORDER_RESOURCE;
		rp_trace *tr = rr_replay_clean(t.path, &o, &r);
		uint32_t forker = tr->procs[0].first_thread, other = forker + 1, fork_at = 0, seq;
		while (elem_of(tr, forker, fork_at)->kind != RK_FORK)
			fork_at++;
		/* the fork waits for the other thread's mmap ... */
		const struct rp_elem *f = elem_of(tr, forker, fork_at);
		int waits = 0;
		for (uint32_t d = 0; d < f->ndeps; d++)
			waits += (deps_of(tr, forker, fork_at)[d].thread & ~RP_DEP_LATE) == other;
		assert_int_equal(waits, 1);
		/* ... and its munmap waits for the fork */
		assert_true(waits_on(tr, other, forker, &seq) >= 1);
		assert_true(seq >= fork_at + 1);
		rr_release(&r, tr);
	}
	tg_remove(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thread_orders),
		cmocka_unit_test_teardown(test_no_lost_wakeups, rr_cancel_alarm),
		cmocka_unit_test_teardown(test_fatal_ends_run, rr_cancel_alarm),
		cmocka_unit_test_teardown(test_killed_ends_run, rr_cancel_alarm),
		cmocka_unit_test(test_processes),
		cmocka_unit_test_teardown(test_vfork_waits, rr_cancel_alarm),
		cmocka_unit_test(test_fork_orders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
