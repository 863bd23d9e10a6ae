/*
 * test_replay_rewritten.c - how the replayer treats calls a rewrite rule
 * made (VMT_SC_REWRITTEN): their result is the one the rule expects, and
 * it is checked like a recorded one, so a correct rewrite replays with
 * zero divergences and a wrong expectation shows up as a divergence; calls
 * without a result (VMT_SC_NO_RESULT) are never checked.  Also
 * rp_trace_load_fd, which --rewrite/--compare use on an unlinked file.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include "arena_int.h"
#include "replay.h"
#include "rewrite.h"
#include "rprun.h"

/* The seed-000 rewrite in small: mprotect(RW) of a PROT_NONE reservation,
 * touch, then frees as madvise(MADV_DONTNEED) flagged as rewritten with
 * result `rew_result`, and a call without a result. */
static void write_trace(struct tg_trace *t, int64_t rew_result)
{
	tg_trace_file(t);
	tg_proc(t, 0, 0, VMT_NONE, VMT_NONE);
	TG_PUT_SC(t, 0, 0, VMT_OP_MMAP, (int64_t)A, 0, 4 * PAGE, PROT_NONE, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(t, 0, 0, VMT_OP_MPROTECT, 0, A, 4 * PAGE, RW);
	struct vmt_event ev = TG_SC(0, 0, VMT_OP_MADVISE, rew_result, A, 4 * PAGE, MADV_DONTNEED);
	ev.u.sc.flags = VMT_SC_REWRITTEN;
	for (int i = 0; i < 3; i++) {
		tg_touch(t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
		tg_put(t, ev);
	}
	/* No exit stop seen: whatever result is stored means nothing. */
	ev = TG_SC(0, 0, VMT_OP_MADVISE, -EPERM, A, PAGE, MADV_WILLNEED);
	ev.u.sc.flags = VMT_SC_NO_RESULT;
	tg_put(t, ev);
	TG_PUT_SC(t, 0, 0, VMT_OP_MUNMAP, 0, A, 4 * PAGE);
	tg_thread_exit(t, 0, 0);
	tg_proc_exit(t, 0, 0);
	tg_finish(t);
}

static void run(const char *path, struct rp_run_result *r, int by_fd)
{
	struct rp_options o;
	char msg[512];
	rp_trace *tr;
	int rc;

	rp_options_default(&o);
	o.max_memory = 1ull << 30;
	if (by_fd) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		rc = rp_trace_load_fd(fd, "a name", &o, &tr, msg, sizeof(msg));
		/* The fd is the caller's: still open. */
		assert_int_equal(fcntl(fd, F_GETFD) >= 0, 1);
		close(fd);
	} else {
		rc = rp_trace_load(path, &o, &tr, msg, sizeof(msg));
	}
	if (rc)
		fprintf(stderr, "load: %s\n", msg);
	assert_int_equal(rc, 0);
	rc = rp_run(tr, &o, r, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "run: %s\n", msg);
	assert_int_equal(rc, 0);
	rp_trace_free(tr);
}

static void test_expected_result_matches(void **state)
{
	struct tg_trace t;
	struct rp_run_result r;
	write_trace(&t, 0);
	run(t.path, &r, 0);
	assert_int_equal(r.divergences, 0);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 4);
	assert_int_equal(r.ops[VMT_OP_MADVISE].errors, 0);
	assert_int_equal(r.touched_pages, 12);
	rp_run_result_free(&r);
	tg_remove(&t);
}

static void test_expected_result_differs(void **state)
{
	struct tg_trace t;
	struct rp_run_result r;
	/* A rule that claimed the madvise fails: each replayed success is a
	 * divergence, with the event's rendering. */
	write_trace(&t, -EINVAL);
	run(t.path, &r, 0);
	assert_int_equal(r.divergences, 3);
	assert_int_equal(r.div_by_op[VMT_OP_MADVISE], 3);
	assert_non_null(strstr(r.div[0].text, "MADV_DONTNEED"));
	assert_int_equal(r.div[0].recorded, -EINVAL);
	assert_int_equal(r.div[0].replayed, 0);
	rp_run_result_free(&r);
	tg_remove(&t);
}

static void test_load_fd(void **state)
{
	struct tg_trace t;
	struct rp_run_result r;
	write_trace(&t, 0);
	run(t.path, &r, 1);
	assert_int_equal(r.divergences, 0);
	assert_int_equal(r.events, 7);
	rp_run_result_free(&r);

	/* Not a trace: a clean error from the fd loader too. */
	struct rp_options o;
	char msg[256] = "";
	rp_trace *tr = (rp_trace *)&r;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	rp_options_default(&o);
	assert_true(rp_trace_load_fd(fd, "x", &o, &tr, msg, sizeof(msg)) < 0);
	assert_null(tr);
	assert_true(msg[0] != 0);
	close(fd);
	tg_remove(&t);
}

/* G1's shape: thread 1 commits a heap region, thread 2 uncommits half of
 * it, thread 1 commits that half again with reservation beyond, uses it
 * and discards a part of it. */
static void write_g1(struct tg_trace *t)
{
	rr_begin(t);
	tg_thread(t, 0, 1, 0);
	tg_thread(t, 0, 2, 0);
	TG_PUT_SC(t, 0, 1, VMT_OP_MMAP, (int64_t)A, 0, 64 * PAGE, PROT_NONE, PRIV_ANON | MAP_NORESERVE,
		  FD_NONE, 0);
	TG_PUT_SC(t, 0, 1, VMT_OP_MMAP, (int64_t)A, A, 32 * PAGE, RW, PRIV_ANON_FIXED, FD_NONE, 0);
	tg_touch(t, 0, 2, A + 16 * PAGE, 16, VMT_PAGE_WRITTEN);
	TG_PUT_SC(t, 0, 2, VMT_OP_MMAP, (int64_t)(A + 16 * PAGE), A + 16 * PAGE, 16 * PAGE, PROT_NONE,
		  PRIV_ANON_FIXED | MAP_NORESERVE, FD_NONE, 0);
	TG_PUT_SC(t, 0, 1, VMT_OP_MMAP, (int64_t)(A + 16 * PAGE), A + 16 * PAGE, 24 * PAGE, RW,
		  PRIV_ANON_FIXED, FD_NONE, 0);
	tg_touch(t, 0, 1, A + 16 * PAGE, 24, VMT_PAGE_WRITTEN);
	TG_PUT_SC(t, 0, 1, VMT_OP_MADVISE, 0, A + 16 * PAGE, 4 * PAGE, MADV_DONTNEED);
	tg_thread_exit(t, 0, 2);
	tg_thread_exit(t, 0, 1);
	rr_finish(t);
}

/* Element k of thread tid. */
static const struct rp_elem *el(const rp_trace *t, uint32_t tid, uint32_t k)
{
	const struct rp_elem *e = rp_trace_elem(t->arena, tid, k, NULL);
	assert_non_null(e);
	return e;
}

/* Element k of thread tid, with touches on the range of element `seq`
 * (1-based) of thread `on`, waits for it. */
static int waits_for(const rp_trace *t, uint32_t tid, uint32_t k, uint32_t on, uint32_t seq)
{
	const struct rp_blk *b;
	const struct rp_elem *e = rp_trace_elem(t->arena, tid, k, &b);
	const struct rp_dep *d = rp_elem_deps(b, e);
	for (uint32_t i = 0; i < e->ndeps; i++)
		if ((d[i].thread & ~RP_DEP_LATE) == on && d[i].seq >= seq)
			return 1;
	return 0;
}

static void test_rewritten_across_threads(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r0, r1;
	write_g1(&t);
	char out[] = "/tmp/rewritten.XXXXXX", err[256];
	int ofd = mkstemp(out), ifd = open(t.path, O_RDONLY | O_CLOEXEC);
	assert_true(ofd >= 0 && ifd >= 0);
	van_rewrite *rw = van_rewrite_new("prot-none-free", err, sizeof(err));
	assert_int_equal(van_rewrite_trace(rw, ifd, ofd, err, sizeof(err)), 0);
	/* the uncommit goes, its re-commit is cut to the reservation beyond */
	assert_int_equal(van_rewrite_counts(rw)->rules[0].applied, 1);
	assert_int_equal(van_rewrite_counts(rw)->rules[0].details[0].n, 1);
	van_rewrite_free(rw);
	close(ifd);
	close(ofd);

	rr_opts(&o);
	rp_trace *t0 = rr_replay_clean(t.path, &o, &r0);
	rp_trace *t1 = rr_replay_clean(out, &o, &r1);
	/* the same pages touched; the uncommit became the madvise */
	assert_int_equal(r1.touched_pages, r0.touched_pages);
	assert_int_equal(r1.ops[VMT_OP_MMAP].count + 1, r0.ops[VMT_OP_MMAP].count);
	assert_int_equal(r1.ops[VMT_OP_MADVISE].count, 2);
	/* Thread 1's madvise, with its touches of the range thread 2
	 * uncommitted, waits for thread 2's madvise (that was the uncommit):
	 * the edge the dropped part of the re-commit carried. */
	uint32_t tid2 = RP_VOID, tid1 = RP_VOID;
	for (uint32_t i = 0; i < t1->nthreads; i++) {
		if (t1->threads[i].rec == 2)
			tid2 = i;
		if (t1->threads[i].rec == 1)
			tid1 = i;
	}
	assert_true(tid1 != RP_VOID && tid2 != RP_VOID);
	const struct rp_thread *th2 = &t1->threads[tid2], *th1 = &t1->threads[tid1];
	uint32_t mad2 = UINT32_MAX, mad1 = UINT32_MAX;
	for (uint32_t k = 0; k < th2->nelem; k++)
		if (el(t1, tid2, k)->kind == RK_SYSCALL && el(t1, tid2, k)->op == VMT_OP_MADVISE)
			mad2 = k;
	for (uint32_t k = 0; k < th1->nelem; k++)
		if (el(t1, tid1, k)->kind == RK_SYSCALL && el(t1, tid1, k)->op == VMT_OP_MADVISE)
			mad1 = k;
	assert_true(mad2 != UINT32_MAX && mad1 != UINT32_MAX);
	assert_true(el(t1, tid1, mad1)->ntouch > 0);
	assert_true(waits_for(t1, tid1, mad1, tid2, mad2 + 1));
	/* and in the recording, the same element waited for the uncommit */
	const struct rp_thread *o2 = &t0->threads[tid2], *o1 = &t0->threads[tid1];
	uint32_t unc = UINT32_MAX, m1 = UINT32_MAX;
	for (uint32_t k = 0; k < o2->nelem; k++)
		if (el(t0, tid2, k)->kind == RK_SYSCALL && el(t0, tid2, k)->op == VMT_OP_MMAP)
			unc = k;
	for (uint32_t k = 0; k < o1->nelem; k++)
		if (el(t0, tid1, k)->kind == RK_SYSCALL && el(t0, tid1, k)->op == VMT_OP_MADVISE)
			m1 = k;
	assert_true(unc != UINT32_MAX && m1 != UINT32_MAX);
	assert_true(waits_for(t0, tid1, m1 - 1, tid2, unc + 1));
	rr_release(&r0, t0);
	rr_release(&r1, t1);
	unlink(out);
	tg_remove(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expected_result_matches),
		cmocka_unit_test(test_expected_result_differs),
		cmocka_unit_test(test_load_fd),
		cmocka_unit_test(test_rewritten_across_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
