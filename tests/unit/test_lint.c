/*
 * test_lint.c - the detectors of `vmtrace lint` on synthetic traces that
 * mimic the event streams of the seed workloads: each pattern is found with
 * the right numbers, and its near misses are not.  prot-none-free is in
 * test_lint_uncommit.c, the discard findings in test_lint_discard.c.
 *
 * Every trace goes through vmt_writer and vmt_reader (so the events are
 * valid ones) before the linter sees it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lint.h"
#include "lintrun.h"
#include "tgen.h"
#include "vmtrace.h"

/* ---- seed 001: MADV_FREE volume ----------------------------------------- */

/* seed001: `procs` forked children each mmap `size`, then `loops` times
 * madvise(advice) all of it, then munmap. */
static void free_trace(struct tg_trace *b, int procs, int loops, uint64_t size, int advice)
{
	for (int p = 1; p <= procs; p++) {
		uint32_t t = (uint32_t)p;
		uint64_t a = 0x7f1000000000ull + (uint64_t)p * (1ull << 32);
		lr_fork(b, (uint32_t)p, t);
		TG_PUT_SC(b, (uint32_t)p, t, VMT_OP_MMAP, a, 0, size, RW, PRIV_ANON, FD_NONE, 0);
		for (int i = 0; i < loops; i++)
			TG_PUT_SC(b, (uint32_t)p, t, VMT_OP_MADVISE, 0, a, size, (uint64_t)advice);
		TG_PUT_SC(b, (uint32_t)p, t, VMT_OP_MUNMAP, 0, a, size);
	}
}

static void test_free_found(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	free_trace(&b, 2, 5, 16 * MiB, 8);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_MADV_FREE);
	assert_int_equal(lr_evidence(f, "calls"), 10);
	assert_int_equal(lr_evidence(f, "bytes"), 160 * MiB);
	assert_int_equal(lr_evidence(f, "repeated_calls"), 8);
	assert_int_equal(lr_evidence(f, "repeated_bytes"), 128 * MiB);
	assert_int_equal(lr_evidence(f, "processes"), 2);
	assert_string_equal(f->rule, "free-to-dontneed");
	assert_int_equal(f->nparts, 2);
	assert_int_equal(f->parts[0].proc, 1);
	assert_int_equal(f->parts[0].value, 80 * MiB);
	assert_int_equal(f->parts[0].thread, VMT_NONE);
	/* the example is the first call on a range freed before */
	assert_int_equal(f->example_proc, 1);
	assert_non_null(strstr(f->example, "MADV_FREE"));
	van_lint_free(l);
}

static void test_free_near_misses(void **state)
{
	struct tg_trace b;
	/* the same volume with MADV_DONTNEED (seed001 --advice dontneed) */
	lr_open(&b, NULL);
	free_trace(&b, 2, 5, 16 * MiB, 4);
	lr_expect_none(&b);
	/* a lot freed once per range: a trim, not a cycle */
	lr_open(&b, NULL);
	free_trace(&b, 3, 1, 100 * MiB, 8);
	lr_expect_none(&b);
	/* freed again and again, but little: 2 x 5 x 6 MiB = 60 MiB */
	lr_open(&b, NULL);
	free_trace(&b, 2, 5, 6 * MiB, 8);
	lr_expect_none(&b);
}

/* ---- seed 002: fragmentation --------------------------------------------- */

enum frag_kind { FRAG_FILE, FRAG_ANON_ALT, FRAG_ANON_MERGE, FRAG_FILE_GAPS };

/* seed002: `count` 4 KiB mappings placed top-down next to each other (or
 * one page apart for FRAG_FILE_GAPS), then unmapped. */
static void frag_trace(struct tg_trace *b, int count, enum frag_kind k)
{
	const uint64_t top = 0x7f2000000000ull;
	uint64_t step = k == FRAG_FILE_GAPS ? 2 * PAGE : PAGE;
	for (int i = 0; i < count; i++) {
		uint64_t a = top - (uint64_t)(i + 1) * step;
		if (k == FRAG_FILE || k == FRAG_FILE_GAPS) {
			lr_map_file(b, 0, 0, 4711);
			TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, a, 0, PAGE, RW, 0x2, 3, 0);
		} else {
			int prot = k == FRAG_ANON_ALT && (i & 1) ? 1 : RW;
			TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, a, 0, PAGE, (uint64_t)prot, PRIV_ANON,
				  FD_NONE, 0);
		}
	}
	for (int i = 0; i < count; i++)
		TG_PUT_SC(b, 0, 0, VMT_OP_MUNMAP, 0, top - (uint64_t)(i + 1) * step, PAGE);
}

static void test_frag_found(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	frag_trace(&b, 2000, FRAG_FILE);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_FRAGMENTATION);
	assert_int_equal(lr_evidence(f, "peak_vmas"), 6 + 2000);
	assert_int_equal(lr_evidence(f, "small_maps"), 2000);
	/* the first mapping has no neighbour; every later one sits below the
	 * previous one, mapping the same offset 0 of the same file */
	assert_int_equal(lr_evidence(f, "unmerged_small_maps"), 1999);
	assert_int_equal(lr_evidence(f, "unmerged_offset_not_contiguous"), 1999);
	assert_null(f->rule);
	assert_non_null(strstr(f->summary, "offset"));
	assert_non_null(strstr(f->example, "MAP_PRIVATE, 3, 0)"));
	van_lint_free(l);

	lr_open(&b, NULL);
	frag_trace(&b, 2000, FRAG_ANON_ALT);
	l = lr_lint(&b, &n);
	f = lr_only(l, n, VAN_LINT_FRAGMENTATION);
	assert_int_equal(lr_evidence(f, "peak_vmas"), 6 + 2000);
	assert_int_equal(lr_evidence(f, "unmerged_prot_differs"), 1999);
	van_lint_free(l);
}

static void test_frag_near_misses(void **state)
{
	struct tg_trace b;
	/* anonymous neighbours merge: one VMA (seed002 --kind anon-merge) */
	lr_open(&b, NULL);
	frag_trace(&b, 3000, FRAG_ANON_MERGE);
	lr_expect_none(&b);
	/* many VMAs, but none of them next to another: nothing could merge */
	lr_open(&b, NULL);
	frag_trace(&b, 3000, FRAG_FILE_GAPS);
	lr_expect_none(&b);
	/* unmerged, but the process stays below 1000 VMAs */
	lr_open(&b, NULL);
	frag_trace(&b, 900, FRAG_FILE);
	lr_expect_none(&b);
}

/* ---- seed 003: locks ------------------------------------------------------ */

static const uint64_t L = 0x7f3000000000ull;

static void test_locked_found(void **state)
{
	struct tg_trace b;
	int n;
	/* seed003 --mode locked: MAP_LOCKED file mapping, 2000 reads */
	lr_open(&b, NULL);
	lr_map_file(&b, 0, 0, 99);
	uint64_t k = TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, 1, 0x2 | LX_MAP_LOCKED, 3, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNMAP, 0, L, 64 * MiB);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_LOCKED_UNTOUCHED);
	assert_int_equal(lr_evidence(f, "locked_bytes"), 64 * MiB);
	assert_int_equal(lr_evidence(f, "locked_pages"), 16384);
	assert_int_equal(lr_evidence(f, "used_pages"), 0);
	assert_int_equal(lr_evidence(f, "locks"), 1);
	assert_int_equal(lr_evidence(f, "lock_ns"), 500);
	assert_string_equal(f->rule, "mlock-onfault");
	assert_int_equal(f->example_index, k);
	assert_non_null(strstr(f->example, "MAP_LOCKED"));
	/* without FAULT events the summary says why use cannot be seen */
	assert_non_null(strstr(f->summary, "--touch=faults"));
	van_lint_free(l);

	/* mlock after a quarter of the pages were faulted in */
	lr_open(&b, "touch=faults");
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 32 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (uint64_t i = 0; i < 2048; i++)
		lr_fault(&b, 0, 0, L + i * PAGE + 8, VMT_FAULT_WRITE);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L, 32 * MiB);
	l = lr_lint(&b, &n);
	f = lr_only(l, n, VAN_LINT_LOCKED_UNTOUCHED);
	assert_int_equal(lr_evidence(f, "locked_pages"), 8192);
	assert_int_equal(lr_evidence(f, "used_pages"), 2048);
	assert_null(strstr(f->summary, "--touch=faults"));
	van_lint_free(l);

	/* mlockall(MCL_CURRENT) over a large mapping */
	lr_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 32 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCKALL, 0, 1);
	l = lr_lint(&b, &n);
	f = lr_only(l, n, VAN_LINT_LOCKED_UNTOUCHED);
	assert_true(lr_evidence(f, "locked_bytes") >= 32 * MiB);
	van_lint_free(l);
}

static void test_locked_near_misses(void **state)
{
	struct tg_trace b;
	/* seed003 --mode onfault: mlock2(MLOCK_ONFAULT) */
	lr_open(&b, NULL);
	lr_map_file(&b, 0, 0, 99);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, 1, 0x2, 3, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK2, 0, L, 64 * MiB, 1);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNLOCK, 0, L, 64 * MiB);
	lr_expect_none(&b);
	/* mlockall(MCL_CURRENT|MCL_ONFAULT) */
	lr_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCKALL, 0, 5);
	lr_expect_none(&b);
	/* a small MAP_LOCKED mapping: 4 MiB */
	lr_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 4 * MiB, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	lr_expect_none(&b);
	/* locked after most pages were used: 3/4 faulted before mlock */
	lr_open(&b, "touch=faults");
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 16 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (uint64_t i = 0; i < 3072; i++)
		lr_fault(&b, 0, 0, L + i * PAGE, VMT_FAULT_WRITE);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L, 16 * MiB);
	lr_expect_none(&b);
	/* a failed MAP_LOCKED mmap (RLIMIT_MEMLOCK) */
	lr_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, -11, 0, 64 * MiB, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	lr_expect_none(&b);
}

static void test_mlock_per_page(void **state)
{
	struct tg_trace b;
	int n;
	/* seed003 --mode mlock: mlock of each page before reading it */
	lr_open(&b, NULL);
	lr_map_file(&b, 0, 0, 99);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, 1, 0x2, 3, 0);
	uint64_t first = 0;
	for (uint64_t i = 0; i < 64; i++) {
		uint64_t k = TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L + (i * 37 % 16384) * PAGE, PAGE);
		if (!i)
			first = k;
	}
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNLOCK, 0, L, 64 * MiB);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_MLOCK_PER_PAGE);
	assert_int_equal(lr_evidence(f, "calls"), 64);
	assert_string_equal(f->rule, "mlock-onfault");
	assert_int_equal(f->example_index, first);
	van_lint_free(l);

	/* 63 calls, or 100 calls of 8 pages each: no finding */
	lr_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (uint64_t i = 0; i < 63; i++)
		TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L + i * 2 * PAGE, PAGE);
	for (uint64_t i = 0; i < 100; i++)
		TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L + MiB + i * 8 * PAGE, 8 * PAGE);
	lr_expect_none(&b);
}

/* ---- seed 004: read-then-write ------------------------------------------ */

enum rtw_variant { RTW_REAL, RTW_WRITE_ONLY, RTW_DISCARDED, RTW_FILE, RTW_WRITE_READ };

static const uint64_t A = 0x7f4000000000ull;

/* seed004: a round maps `pages` anonymous pages, reads each, writes each. */
static void rtw_trace(struct tg_trace *b, uint64_t pages, enum rtw_variant v)
{
	if (v == RTW_FILE) {
		lr_map_file(b, 0, 0, 5);
		TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, A, 0, pages * PAGE, RW, 0x2, 3, 0);
	} else {
		TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, A, 0, pages * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	}
	if (v == RTW_WRITE_READ)
		for (uint64_t i = 0; i < pages; i++)
			lr_fault(b, 0, 0, A + i * PAGE, VMT_FAULT_WRITE);
	if (v != RTW_WRITE_ONLY)
		for (uint64_t i = 0; i < pages; i++)
			lr_fault(b, 0, 0, A + i * PAGE + 100, VMT_FAULT_READ);
	if (v == RTW_DISCARDED)
		TG_PUT_SC(b, 0, 0, VMT_OP_MADVISE, 0, A, pages * PAGE, 4);
	if (v != RTW_WRITE_READ)
		for (uint64_t i = 0; i < pages; i++)
			lr_fault(b, 0, 0, A + i * PAGE + 200, VMT_FAULT_WRITE);
	TG_PUT_SC(b, 0, 0, VMT_OP_MUNMAP, 0, A, pages * PAGE);
}

static void test_rtw_found(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, "touch=faults");
	for (int round = 0; round < 3; round++)
		rtw_trace(&b, 4096, RTW_REAL);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_READ_THEN_WRITE);
	assert_int_equal(lr_evidence(f, "pages"), 3 * 4096);
	assert_int_equal(lr_evidence(f, "read_first_pages"), 3 * 4096);
	assert_string_equal(f->rule, "populate");
	assert_true(van_lint_had_faults(l));
	assert_null(van_lint_unchecked(l, VAN_LINT_READ_THEN_WRITE));
	/* example: the first write fault after a read, with the fault's ip */
	assert_string_equal(f->example, "fault(0x7f40000000c8, write, ip=0x555555556100)");
	assert_int_equal(f->nframes, 1);
	assert_string_equal(f->frames[0], "0x555555556100");
	van_lint_free(l);
}

static void test_rtw_near_misses(void **state)
{
	static const enum rtw_variant vs[] = { RTW_WRITE_ONLY, RTW_DISCARDED, RTW_FILE, RTW_WRITE_READ };
	struct tg_trace b;
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		lr_open(&b, "touch=faults");
		rtw_trace(&b, 4096, vs[i]);
		lr_expect_none(&b);
	}
	/* RTW_MIN_PAGES - 1 pages */
	lr_open(&b, "touch=faults");
	rtw_trace(&b, 255, RTW_REAL);
	lr_expect_none(&b);
}

/* Recorded on a kernel without the zero page, the same faults are no
 * finding (that kernel would not take the second fault), and the lint
 * says it could not look. */
static void test_rtw_no_zero_page(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, "touch=faults overcommit=0 zeropage=0");
	rtw_trace(&b, 4096, RTW_REAL);
	van_lint *l = lr_lint(&b, &n);
	assert_int_equal(n, 0);
	const char *why = van_lint_unchecked(l, VAN_LINT_READ_THEN_WRITE);
	assert_non_null(why);
	assert_non_null(strstr(why, "zeropage=0"));
	assert_null(van_lint_unchecked(l, VAN_LINT_PROT_NONE_FREE));
	van_lint_free(l);
	/* zeropage=1 says what an absent word says */
	lr_open(&b, "touch=faults zeropage=1");
	rtw_trace(&b, 4096, RTW_REAL);
	l = lr_lint(&b, &n);
	lr_only(l, n, VAN_LINT_READ_THEN_WRITE);
	van_lint_free(l);
}

/* ---- clean traces ---------------------------------------------------------- */

static void test_clean(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	/* an ordinary program: a few mappings, some protection changes, a
	 * heap that grows, a small lock, a DONTNEED, unmaps */
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, A, 0, 1 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MPROTECT, 0, A, PAGE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_BRK, 0x55555559b000ll, 0x55555559b000ull);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, A + PAGE, PAGE);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MADVISE, 0, A + PAGE, 64 * PAGE, 4);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MADVISE, 0, A + PAGE, 64 * PAGE, 8);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNMAP, 0, A, 1 * MiB);
	van_lint *l = lr_lint(&b, &n);
	assert_int_equal(n, 0);
	assert_null(van_lint_get(l, 0));
	assert_false(van_lint_had_faults(l));
	assert_non_null(strstr(van_lint_unchecked(l, VAN_LINT_READ_THEN_WRITE), "no FAULT events"));
	van_lint_free(l);

	/* every pattern at once: each is found, in the documented order */
	lr_open(&b, "touch=faults");
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, 0x7f0000100000ll, 0, PAGE, 0, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 10; i++) { /* seed 000: mprotect(RW), mmap(PROT_NONE) */
		TG_PUT_SC(&b, 0, 0, VMT_OP_MPROTECT, 0, 0x7f0000100000ull, PAGE, RW);
		TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, 0x7f0000100000ll, 0x7f0000100000ull, PAGE, 0,
			  PRIV_ANON_FIXED, FD_NONE, 0);
	}
	free_trace(&b, 1, 5, 32 * MiB, 8);
	rtw_trace(&b, 512, RTW_REAL);
	l = lr_lint(&b, &n);
	assert_int_equal(n, 3);
	assert_string_equal(van_lint_get(l, 0)->id, VAN_LINT_PROT_NONE_FREE);
	assert_string_equal(van_lint_get(l, 1)->id, VAN_LINT_MADV_FREE);
	assert_string_equal(van_lint_get(l, 2)->id, VAN_LINT_READ_THEN_WRITE);
	assert_non_null(lr_find(l, n, VAN_LINT_READ_THEN_WRITE));
	van_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_found),
		cmocka_unit_test(test_free_near_misses),
		cmocka_unit_test(test_frag_found),
		cmocka_unit_test(test_frag_near_misses),
		cmocka_unit_test(test_locked_found),
		cmocka_unit_test(test_locked_near_misses),
		cmocka_unit_test(test_mlock_per_page),
		cmocka_unit_test(test_rtw_found),
		cmocka_unit_test(test_rtw_near_misses),
		cmocka_unit_test(test_rtw_no_zero_page),
		cmocka_unit_test(test_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
