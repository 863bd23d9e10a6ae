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
#include "replay.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expected_result_matches),
		cmocka_unit_test(test_expected_result_differs),
		cmocka_unit_test(test_load_fd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
