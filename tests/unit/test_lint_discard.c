/*
 * test_lint_discard.c - the findings of `vmtrace lint` for calls that give
 * pages back for nothing, on synthetic traces in the shapes the real
 * programs showed: discard-before-unmap (V8's teardown: mprotect(PROT_NONE),
 * madvise(MADV_DONTNEED), munmap), free-before-dontneed (jemalloc's decay:
 * MADV_FREE, later MADV_DONTNEED of the same pages, from another thread),
 * discard-locked (malloc_trim under mlockall), file-map-churn (git reading
 * loose objects); each with its near misses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "lint.h"
#include "lintrun.h"
#include "tgen.h"
#include "vmtrace.h"

#define ZONE 0x7f6000000000ull
#define K256 (256 * 1024ull)

/* ---- discard-before-unmap ----------------------------------------------- */

enum dun_variant {
	DUN_V8,		/* mprotect(PROT_NONE), touch, madvise(DONTNEED), munmap */
	DUN_OTHER_THREAD, /* the munmap by another thread */
	DUN_PART,	/* the munmap of half the range */
	DUN_USED,	/* pages present again after the madvise */
	DUN_GUARD,	/* mprotect(PROT_NONE) without munmap */
	DUN_BETWEEN,	/* an mprotect(RW) between the madvise and the munmap */
	DUN_SHARED,	/* a shared mapping */
};

/* n pages of 256 KiB, each mapped, used and freed by thread 1. */
static void dun_trace(struct tg_trace *b, int n, enum dun_variant v)
{
	lr_thread(b, 0, 1);
	lr_thread(b, 0, 2);
	for (int i = 0; i < n; i++) {
		uint64_t a = ZONE + (uint64_t)i * K256;
		uint64_t type = v == DUN_SHARED ? SHARED_ANON : PRIV_ANON;
		TG_PUT_SC(b, 0, 1, VMT_OP_MMAP, (int64_t)a, 0, K256, RW, type, FD_NONE, 0);
		if (v != DUN_GUARD || !(i & 1))
			TG_PUT_SC(b, 0, 1, VMT_OP_MPROTECT, 0, a, K256, LX_PROT_NONE);
		tg_touch(b, 0, 1, a, 64, VMT_PAGE_WRITTEN);
		if (v == DUN_GUARD && (i & 1))
			continue;
		TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, a, K256, LX_MADV_DONTNEED);
		if (v == DUN_USED)
			tg_touch(b, 0, 2, a, 1, VMT_PAGE_WRITTEN);
		if (v == DUN_BETWEEN)
			TG_PUT_SC(b, 0, 2, VMT_OP_MPROTECT, 0, a, K256, RW);
		if (v == DUN_GUARD)
			continue;
		TG_PUT_SC(b, 0, v == DUN_OTHER_THREAD ? 2 : 1, VMT_OP_MUNMAP, 0, a,
			  v == DUN_PART ? K256 / 2 : K256);
	}
}

static void test_dun_found(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	dun_trace(&b, 32, DUN_V8);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_DISCARD_UNMAP);
	assert_int_equal(lr_evidence(f, "calls"), 64);
	assert_int_equal(lr_evidence(f, "unmaps"), 32);
	assert_int_equal(lr_evidence(f, "bytes"), 64 * K256);
	assert_string_equal(f->rule, "discard-before-unmap");
	assert_string_equal(f->example, "mprotect(0x7f6000000000, 262144, PROT_NONE) = 0");
	van_lint_free(l);
	/* 31 pages: 62 calls, below the threshold */
	lr_open(&b, NULL);
	dun_trace(&b, 31, DUN_V8);
	lr_expect_none(&b);
}

static void test_dun_near_misses(void **state)
{
	static const enum dun_variant vs[] = { DUN_OTHER_THREAD, DUN_PART, DUN_USED, DUN_BETWEEN,
					       DUN_SHARED };
	struct tg_trace b;
	int n;
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		lr_open(&b, NULL);
		dun_trace(&b, 100, vs[i]);
		van_lint *l = lr_lint(&b, &n);
		const struct van_lint_finding *f = lr_find(l, n, VAN_LINT_DISCARD_UNMAP);
		if (vs[i] == DUN_USED) {
			/* the mprotect(PROT_NONE) still came right before: the
			 * madvise did not */
			assert_non_null(f);
			assert_int_equal(lr_evidence(f, "calls"), 100);
		} else if (f) {
			fail_msg("variant %d: %s", (int)vs[i], f->summary);
		}
		van_lint_free(l);
	}
	/* guards: mprotect(PROT_NONE) of every other page, never unmapped */
	lr_open(&b, NULL);
	dun_trace(&b, 100, DUN_GUARD);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_find(l, n, VAN_LINT_DISCARD_UNMAP);
	assert_null(f);
	van_lint_free(l);
}

/* ---- free-before-dontneed ----------------------------------------------- */

enum fbd_variant {
	FBD_JEMALLOC, /* MADV_FREE by t1, MADV_DONTNEED by t2, all pages still there */
	FBD_RECLAIMED, /* fewer pages present at the MADV_DONTNEED */
	FBD_NO_TOUCH, /* no touch information */
	FBD_PART,     /* the MADV_DONTNEED covers half */
};

/* n extents of 1 MiB (256 pages, 200 present). */
static void fbd_trace(struct tg_trace *b, int n, enum fbd_variant v)
{
	lr_thread(b, 0, 1);
	lr_thread(b, 0, 2);
	TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, (int64_t)ZONE, 0, (uint64_t)n * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < n; i++) {
		uint64_t a = ZONE + (uint64_t)i * MiB;
		if (v != FBD_NO_TOUCH)
			tg_touch(b, 0, 1, a, 200, VMT_PAGE_WRITTEN);
		TG_PUT_SC(b, 0, 1, VMT_OP_MADVISE, 0, a, MiB, LX_MADV_FREE);
	}
	for (int i = 0; i < n; i++) {
		uint64_t a = ZONE + (uint64_t)i * MiB;
		if (v != FBD_NO_TOUCH)
			tg_touch(b, 0, 2, a, v == FBD_RECLAIMED ? 150 : 200, VMT_PAGE_PRESENT);
		TG_PUT_SC(b, 0, 2, VMT_OP_MADVISE, 0, a, v == FBD_PART ? MiB / 2 : MiB, LX_MADV_DONTNEED);
	}
}

static void test_fbd_found(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	fbd_trace(&b, 64, FBD_JEMALLOC);
	van_lint *l = lr_lint(&b, &n);
	/* 64 MiB freed with MADV_FREE once each: not madv-free-volume */
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_FREE_DONTNEED);
	assert_int_equal(lr_evidence(f, "calls"), 64);
	assert_int_equal(lr_evidence(f, "bytes"), 64 * MiB);
	assert_int_equal(lr_evidence(f, "other_thread"), 64);
	assert_string_equal(f->rule, "free-before-dontneed");
	assert_string_equal(f->example, "madvise(0x7f6000000000, 1048576, MADV_FREE) = 0");
	assert_int_equal(f->example_thread, 1);
	van_lint_free(l);
	/* 63 MiB: below the threshold */
	lr_open(&b, NULL);
	fbd_trace(&b, 63, FBD_JEMALLOC);
	lr_expect_none(&b);
}

static void test_fbd_near_misses(void **state)
{
	static const enum fbd_variant vs[] = { FBD_RECLAIMED, FBD_NO_TOUCH, FBD_PART };
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		struct tg_trace b;
		lr_open(&b, NULL);
		fbd_trace(&b, 100, vs[i]);
		lr_expect_none(&b);
	}
}

/* Without resident scans of what MADV_FREE gave, free-before-dontneed is
 * said to be unchecked, once there is enough for a finding. */
static void test_fbd_unchecked(void **state)
{
	static const struct {
		int n;
		enum fbd_variant v;
		int unchecked;
	} cs[] = { { 100, FBD_NO_TOUCH, 1 }, { 63, FBD_NO_TOUCH, 0 }, { 100, FBD_RECLAIMED, 0 } };
	for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		struct tg_trace b;
		int n;
		lr_open(&b, NULL);
		fbd_trace(&b, cs[i].n, cs[i].v);
		van_lint *l = lr_lint(&b, &n);
		assert_int_equal(n, 0);
		const char *why = van_lint_unchecked(l, VAN_LINT_FREE_DONTNEED);
		assert_int_equal(why != NULL, cs[i].unchecked);
		if (why)
			assert_non_null(strstr(why, "--touch=resident"));
		van_lint_free(l);
	}
}

/* ---- discard-locked ----------------------------------------------------- */

static void dlk_trace(struct tg_trace *b, int n, int lock)
{
	if (lock)
		TG_PUT_SC(b, 0, 0, VMT_OP_MLOCKALL, 0, LX_MCL_CURRENT | LX_MCL_FUTURE);
	TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, (int64_t)ZONE, 0, 64 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < n; i++)
		TG_PUT_SC(b, 0, 0, VMT_OP_MADVISE, lock ? -EINVAL : 0, ZONE + (uint64_t)i * MiB, MiB,
			  LX_MADV_DONTNEED);
}

static void test_discard_locked(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	dlk_trace(&b, 16, 1);
	van_lint *l = lr_lint(&b, &n);
	/* (mlockall populated 64 MiB nothing used: locked-untouched too) */
	const struct van_lint_finding *f = lr_find(l, n, VAN_LINT_DISCARD_LOCKED);
	assert_non_null(f);
	assert_int_equal(lr_evidence(f, "calls"), 16);
	assert_int_equal(lr_evidence(f, "bytes"), 16 * MiB);
	assert_null(f->rule);
	van_lint_free(l);
	/* 15, or on memory that is not locked */
	lr_open(&b, NULL);
	dlk_trace(&b, 15, 1);
	l = lr_lint(&b, &n);
	assert_null(lr_find(l, n, VAN_LINT_DISCARD_LOCKED));
	van_lint_free(l);
	lr_open(&b, NULL);
	dlk_trace(&b, 32, 0);
	lr_expect_none(&b);
}

/* ---- file-map-churn ----------------------------------------------------- */

/* n small files mapped one after the other; `live` of them stay mapped
 * before the oldest is unmapped. */
static void fmc_trace(struct tg_trace *b, int n, int live)
{
	for (int i = 0; i < n + live; i++) {
		if (i < n) {
			lr_map_file(b, 0, 0, 5000 + (uint64_t)i);
			TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, (int64_t)(ZONE + (uint64_t)i * PAGE), 0, 180,
				  LX_PROT_READ, LX_MAP_PRIVATE, 3, 0);
		}
		if (i >= live)
			TG_PUT_SC(b, 0, 0, VMT_OP_MUNMAP, 0, ZONE + (uint64_t)(i - live) * PAGE, 180);
	}
}

static void test_file_map_churn(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	fmc_trace(&b, 1000, 0);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_FILE_MAP_CHURN);
	assert_int_equal(lr_evidence(f, "pairs"), 1000);
	assert_int_equal(lr_evidence(f, "bytes"), 1000 * PAGE);
	assert_string_equal(f->example, "munmap(0x7f6000000000, 180) = 0");
	van_lint_free(l);
	/* a few alive at once still counts; many piling up does not */
	lr_open(&b, NULL);
	fmc_trace(&b, 1000, 16);
	l = lr_lint(&b, &n);
	assert_int_equal(lr_evidence(lr_only(l, n, VAN_LINT_FILE_MAP_CHURN), "pairs"), 1000);
	van_lint_free(l);
	lr_open(&b, NULL);
	fmc_trace(&b, 1000, 17);
	lr_expect_none(&b);
	lr_open(&b, NULL);
	fmc_trace(&b, 999, 0);
	lr_expect_none(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dun_found),
		cmocka_unit_test(test_dun_near_misses),
		cmocka_unit_test(test_fbd_found),
		cmocka_unit_test(test_fbd_near_misses),
		cmocka_unit_test(test_fbd_unchecked),
		cmocka_unit_test(test_discard_locked),
		cmocka_unit_test(test_file_map_churn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
