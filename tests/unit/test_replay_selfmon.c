/*
 * test_replay_selfmon.c - a thread watching itself through perf (the
 * replay's selfmon.c): its faults, sampled with their addresses, land in
 * the kind of mapping they were taken in, as many as it took; a "call"
 * that slept is seen to have left the CPU, for as long as it slept, and
 * as one voluntary switch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "selfmon.h"
#include "vmtutil.h"

static struct rp_selfmon m;
static int watching;

static int setup(void **state)
{
	watching = rp_selfmon_open(&m, 64) == 0;
	return 0;
}

static int teardown(void **state)
{
	rp_selfmon_close(&m);
	return 0;
}

static void test_fault_kinds(void **state)
{
	if (!watching)
		skip(); /* (no perf software events here) */
	long ps = sysconf(_SC_PAGESIZE);
	enum { N = 48, F = 8 };
	char *anon = mmap(NULL, N * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *shm = mmap(NULL, F * ps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(anon != MAP_FAILED && shm != MAP_FAILED);
	struct rp_frange r[2] = {
		{ .start = (uint64_t)anon, .end = (uint64_t)anon + N * ps, .region = 0, .kind = RP_FK_ANON },
		{ .start = (uint64_t)shm, .end = (uint64_t)shm + F * ps, .region = 1, .kind = RP_FK_SHM },
	};
	if (r[1].start < r[0].start) {
		struct rp_frange x = r[0];
		r[0] = r[1];
		r[1] = x;
	}
	r[0].maxend = r[0].end;
	r[1].maxend = r[1].end > r[0].end ? r[1].end : r[0].end;
	struct rp_fclass c = { .r = r, .n = 2, .cap = 2 };
	struct rp_tick_ns cv = { 0, 0, 0 };
	rp_selfmon_drain(&m, &c, &cv); /* what came before */
	memset(&m.minor, 0, sizeof(m.minor));
	m.samples = 0;
	struct rusage r0, r1;
	getrusage(RUSAGE_THREAD, &r0);
	for (int i = 0; i < N; i++)
		anon[i * ps] = 1;
	for (int i = 0; i < F; i++)
		shm[i * ps] = 1;
	getrusage(RUSAGE_THREAD, &r1);
	rp_selfmon_drain(&m, &c, &cv);
	if (m.throttled || m.lost)
		skip(); /* (the kernel took fewer samples than faults) */
	/* Every write fault of the two mappings, where it was taken. */
	assert_int_equal(m.minor[RP_FK_ANON], N);
	assert_int_equal(m.minor[RP_FK_SHM], F);
	/* ... and as many as the kernel counted for the thread, but for the
	 * odd fault of the test's own (its stack, getrusage's result) on
	 * either side of the counted stretch.  (Sanitized, the writes also
	 * fault in their shadow memory, elsewhere: the other faults are the
	 * sanitizer's, and only the kernel's total holds them all.) */
	uint64_t got = 0, want = (uint64_t)(r1.ru_minflt - r0.ru_minflt);
	for (int k = 0; k < RP_FK__COUNT; k++)
		got += m.minor[k];
#if !defined(__SANITIZE_ADDRESS__)
	assert_true(m.minor[RP_FK_OTHER] <= 2);
#endif
	assert_true(got + 2 >= want && got <= want + 2);
	munmap(anon, N * ps);
	munmap(shm, F * ps);
}

static void test_switched_call(void **state)
{
	if (!watching)
		skip();
	struct rp_fclass c = { .r = NULL };
	struct rp_tick_ns cv = { 0, 0, 0 }; /* ticks are ns */
	rp_selfmon_drain(&m, &c, &cv);
	m.off_cpu_ns = m.vcsw = m.ivcsw = 0;
	uint32_t s0 = rp_selfmon_seq(&m);
	uint64_t t0 = vmt_now_ns();
	struct timespec ts = { 0, 5000000 };
	nanosleep(&ts, NULL);
	uint64_t t1 = vmt_now_ns();
	uint32_t s1 = rp_selfmon_seq(&m);
	/* It left the CPU: the count moved. */
	assert_true(s1 != s0);
	rp_selfmon_switched(&m, t0, t1);
	rp_selfmon_drain(&m, &c, &cv);
	assert_true(m.vcsw >= 1);
	/* Off CPU at least the sleep (less what the wake-up took), at most
	 * the whole call. */
	assert_true(m.off_cpu_ns >= 4000000);
	assert_true(m.off_cpu_ns <= t1 - t0);
	assert_int_equal(m.nsw, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_kinds),
		cmocka_unit_test(test_switched_call),
	};
	return cmocka_run_group_tests_name("replay_selfmon", tests, setup, teardown);
}
