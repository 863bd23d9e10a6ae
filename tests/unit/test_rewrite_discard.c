/*
 * test_rewrite_discard.c - rules discard-before-unmap and free-before-dontneed: the shapes of V8's teardown and jemalloc's
 * decay, and every case where the discard must stay; what becomes of
 * the touches recorded with a dropped call.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "linux_abi.h"
#include "rewrite.h"
#include "rwrun.h"
#include "tgen.h"
#include "vmtrace.h"

#define Z 0x300000ull
#define K256 (256 * 1024ull)

#define MAP_LINE "t1 mmap(NULL, 262144, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x300000\n"
#define NONE_LINE "t1 mprotect(0x300000, 262144, PROT_NONE) = 0\n"
#define DN_LINE "t1 madvise(0x300000, 262144, MADV_DONTNEED) = 0\n"
#define UNMAP_LINE "t1 munmap(0x300000, 262144) = 0\n"

static void map(struct tg_trace *b, uint64_t type)
{
	TG_PUT_SC(b, 0, 1, VMT_OP_MMAP, (int64_t)Z, 0, K256, RW, type, FD_NONE, 0);
}

static void prot_none(struct tg_trace *b, uint32_t t)
{
	TG_PUT_SC(b, 0, t, VMT_OP_MPROTECT, 0, Z, K256, LX_PROT_NONE);
}

static void advise(struct tg_trace *b, uint32_t t, uint64_t len, uint64_t adv, int64_t res)
{
	TG_PUT_SC(b, 0, t, VMT_OP_MADVISE, res, Z, len, adv);
}

static void unmap(struct tg_trace *b, uint32_t t, uint64_t len)
{
	TG_PUT_SC(b, 0, t, VMT_OP_MUNMAP, 0, Z, len);
}

/* ---- discard-before-unmap ----------------------------------------------- */

/* V8 freeing a page: mprotect(PROT_NONE), madvise(MADV_DONTNEED), munmap.
 * Both discards go; the touch taken before the madvise shows pages of a
 * range that is PROT_NONE in the recording (a replay of it skips them), so
 * it goes with the mprotect. */
static void test_dun_v8(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	map(&b, PRIV_ANON);
	prot_none(&b, 1);
	tg_touch(&b, 0, 1, Z, 64, VMT_PAGE_WRITTEN);
	advise(&b, 1, K256, LX_MADV_DONTNEED, 0);
	tg_touch(&b, 0, 1, Z, 64, VMT_PAGE_ABSENT);
	unmap(&b, 1, K256);
	struct rwt_result r = rwt_run(&b, "discard-before-unmap");
	rwt_expect(r.text, MAP_LINE "t1 touch(0x300000, 64 pages: 64 absent, before op)\n" UNMAP_LINE);
	assert_int_equal(r.applied[0], 2);
	assert_int_equal(r.removed[0], 2);
	assert_int_equal(r.first.ndetails, 1);
	assert_int_equal(r.first.details[0].n, 1);
	/* 2 fewer calls, 1 fewer under the write lock */
	assert_int_equal(r.in.calls - r.out.calls, 2);
	assert_int_equal(r.in.write_locked - r.out.write_locked, 1);
	free(r.text);
}

/* A MADV_FREE alone before the munmap: it goes, its touch (pages of a
 * read-write range, replayed before the thread's next call) stays. */
static void test_dun_free(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	map(&b, PRIV_ANON);
	tg_touch(&b, 0, 1, Z, 64, VMT_PAGE_WRITTEN);
	advise(&b, 1, K256, LX_MADV_FREE, 0);
	unmap(&b, 1, K256);
	rwt_check(&b, "discard-before-unmap",
		  MAP_LINE "t1 touch(0x300000, 64 pages: 64 written, before op)\n" UNMAP_LINE, 1);
}

enum dun_miss {
	MISS_OTHER_THREAD, MISS_PART, MISS_USED, MISS_BETWEEN, MISS_SHARED, MISS_REMOVE,
	MISS_FAILED, MISS_GUARD, MISS_WIDE_TOUCH, MISS_FILE, MISS_LOCKED, MISS__COUNT
};

static void test_dun_not(void **state)
{
	for (int m = 0; m < MISS__COUNT; m++) {
		struct tg_trace b;
		rwt_open(&b);
		if (m == MISS_FILE) { /* a private file mapping */
			tg_file(&b, 0, 1, "/data/f", 42, K256, 0);
			TG_PUT_SC(&b, 0, 1, VMT_OP_MMAP, (int64_t)Z, 0, K256, RW, LX_MAP_PRIVATE, 3, 0);
		} else {
			map(&b, m == MISS_SHARED ? SHARED_ANON : PRIV_ANON);
		}
		if (m == MISS_LOCKED) /* mprotect works on locked memory */
			TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCK, 0, Z, K256);
		if (m == MISS_GUARD || m == MISS_WIDE_TOUCH || m == MISS_LOCKED) {
			prot_none(&b, 1);
			if (m == MISS_WIDE_TOUCH)
				tg_touch(&b, 0, 1, Z - PAGE, 65, VMT_PAGE_WRITTEN);
			else if (m == MISS_GUARD)
				tg_proc_exit(&b, 0, 1);
		} else {
			advise(&b, 1, K256, m == MISS_REMOVE ? LX_MADV_REMOVE : LX_MADV_DONTNEED,
			       m == MISS_FAILED ? -EINVAL : 0);
		}
		if (m == MISS_USED)
			tg_touch(&b, 0, 2, Z, 1, VMT_PAGE_WRITTEN);
		if (m == MISS_BETWEEN)
			TG_PUT_SC(&b, 0, 2, VMT_OP_MPROTECT, 0, Z, K256, RW);
		if (m != MISS_GUARD)
			unmap(&b, m == MISS_OTHER_THREAD ? 2 : 1, m == MISS_PART ? K256 / 2 : K256);
		struct rwt_result r = rwt_run(&b, "discard-before-unmap");
		if (r.applied[0] || r.events_in != r.events_out)
			fail_msg("case %d: applied %llu:\n%s", m, (unsigned long long)r.applied[0], r.text);
		free(r.text);
	}
}

/* ---- free-before-dontneed ----------------------------------------------- */

/* jemalloc's decay: the background thread (t1) frees lazily, later the
 * main thread (t2) purges the same extent with all its pages still
 * there.  The MADV_FREE goes, with the touch taken before it (t2's touch
 * shows the same pages, before the MADV_DONTNEED). */
static void test_fbd_jemalloc(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	map(&b, PRIV_ANON);
	tg_touch(&b, 0, 1, Z, 64, VMT_PAGE_WRITTEN);
	advise(&b, 1, K256, LX_MADV_FREE, 0);
	TG_PUT_SC(&b, 0, 2, VMT_OP_MMAP, 0x500000, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_touch(&b, 0, 2, Z, 64, VMT_PAGE_PRESENT);
	advise(&b, 2, K256, LX_MADV_DONTNEED, 0);
	struct rwt_result r = rwt_run(&b, "free-before-dontneed");
	rwt_expect(r.text, MAP_LINE
		   "t2 mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = 0x500000\n"
		   "t2 touch(0x300000, 64 pages: 64 present, before op)\n"
		   "t2 madvise(0x300000, 262144, MADV_DONTNEED) = 0\n");
	assert_int_equal(r.applied[0], 1);
	assert_int_equal(r.removed[0], 1);
	assert_int_equal(r.first.details[0].n, 1);
	free(r.text);
}

/* The same thread: the touch stays (its next call is the MADV_DONTNEED
 * or earlier). */
static void test_fbd_same_thread(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	map(&b, PRIV_ANON);
	tg_touch(&b, 0, 1, Z, 64, VMT_PAGE_WRITTEN);
	advise(&b, 1, K256, LX_MADV_FREE, 0);
	tg_touch(&b, 0, 1, Z, 64, VMT_PAGE_PRESENT);
	advise(&b, 1, K256, LX_MADV_DONTNEED, 0);
	rwt_check(&b, "free-before-dontneed",
		  MAP_LINE "t1 touch(0x300000, 64 pages: 64 written, before op)\n"
		  "t1 touch(0x300000, 64 pages: 64 present, before op)\n" DN_LINE, 1);
}

enum fbd_miss { FMISS_RECLAIMED, FMISS_NO_TOUCH, FMISS_PART, FMISS_BETWEEN, FMISS_UNMAP,
		FMISS_LOCKED, FMISS__COUNT };

static void test_fbd_not(void **state)
{
	for (int m = 0; m < FMISS__COUNT; m++) {
		struct tg_trace b;
		rwt_open(&b);
		map(&b, PRIV_ANON);
		if (m == FMISS_LOCKED)
			TG_PUT_SC(&b, 0, 1, VMT_OP_MLOCK2, 0, Z, K256, LX_MLOCK_ONFAULT);
		if (m != FMISS_NO_TOUCH)
			tg_touch(&b, 0, 1, Z, 64, VMT_PAGE_WRITTEN);
		advise(&b, 1, K256, LX_MADV_FREE, 0);
		if (m == FMISS_BETWEEN)
			TG_PUT_SC(&b, 0, 2, VMT_OP_MADVISE, 0, Z, PAGE, LX_MADV_WILLNEED);
		if (m == FMISS_UNMAP) {
			unmap(&b, 2, K256);
		} else {
			if (m != FMISS_NO_TOUCH)
				tg_touch(&b, 0, 2, Z, m == FMISS_RECLAIMED ? 40 : 64, VMT_PAGE_PRESENT);
			advise(&b, 2, m == FMISS_PART ? K256 / 2 : K256, LX_MADV_DONTNEED, 0);
		}
		struct rwt_result r = rwt_run(&b, "free-before-dontneed");
		if (r.applied[0] || r.events_in != r.events_out)
			fail_msg("case %d: applied %llu:\n%s", m, (unsigned long long)r.applied[0], r.text);
		free(r.text);
	}
}

/* Both rules: MADV_FREE, MADV_DONTNEED, munmap by one thread: only the
 * munmap is left. */
static void test_discard_compose(void **state)
{
	struct tg_trace b;
	rwt_open(&b);
	map(&b, PRIV_ANON);
	tg_touch(&b, 0, 1, Z, 8, VMT_PAGE_WRITTEN);
	advise(&b, 1, K256, LX_MADV_FREE, 0);
	tg_touch(&b, 0, 1, Z, 8, VMT_PAGE_PRESENT);
	advise(&b, 1, K256, LX_MADV_DONTNEED, 0);
	unmap(&b, 1, K256);
	struct rwt_result r = rwt_run(&b, "free-before-dontneed,discard-before-unmap");
	rwt_expect(r.text, MAP_LINE "t1 touch(0x300000, 8 pages: 8 written, before op)\n"
		   "t1 touch(0x300000, 8 pages: 8 present, before op)\n" UNMAP_LINE);
	assert_int_equal(r.applied[0], 1);
	assert_int_equal(r.applied[1], 1);
	free(r.text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dun_v8),
		cmocka_unit_test(test_dun_free),
		cmocka_unit_test(test_dun_not),
		cmocka_unit_test(test_fbd_jemalloc),
		cmocka_unit_test(test_fbd_same_thread),
		cmocka_unit_test(test_fbd_not),
		cmocka_unit_test(test_discard_compose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
