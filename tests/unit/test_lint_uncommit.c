/*
 * test_lint_uncommit.c - the prot-none-free finding of `vmtrace lint` on
 * synthetic traces in the shapes real programs use (seed 000's glibc,
 * today's glibc arenas under strict overcommit, HotSpot's G1 with its
 * uncommit and commit in two threads), with the numbers each must show,
 * and the near misses that must not count: memory never committed,
 * ranges half reservation, file mappings, locked memory, a commit with
 * another protection, ranges never committed again.  The real
 * recordings are in test_golden_real.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "lint.h"
#include "lintrun.h"
#include "tgen.h"
#include "vmtrace.h"

#define NORESERVE ((uint64_t)LX_MAP_NORESERVE)

/* An uncommit: mmap(a, len, PROT_NONE, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS|flags, -1, 0) = a. */
static uint64_t uncommit(struct tg_trace *b, uint32_t thread, uint64_t a, uint64_t len,
			 uint64_t flags, uint32_t stack)
{
	return tg_put(b, tg_with_stack(TG_SC(0, thread, VMT_OP_MMAP, (int64_t)a, a, len, LX_PROT_NONE,
					     PRIV_ANON_FIXED | flags, FD_NONE, 0),
				       stack));
}

/* A commit the way HotSpot makes it: mmap(a, len, RW, MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS). */
static void commit_map(struct tg_trace *b, uint32_t thread, uint64_t a, uint64_t len, uint32_t stack)
{
	tg_put(b, tg_with_stack(TG_SC(0, thread, VMT_OP_MMAP, (int64_t)a, a, len, RW, PRIV_ANON_FIXED,
				      FD_NONE, 0),
				stack));
}

static void commit_prot(struct tg_trace *b, uint32_t thread, uint64_t a, uint64_t len, uint64_t prot)
{
	TG_PUT_SC(b, 0, thread, VMT_OP_MPROTECT, 0, a, len, prot);
}

/* A reservation of len bytes at a: mmap(NULL, len, PROT_NONE, MAP_PRIVATE|
 * MAP_ANONYMOUS|MAP_NORESERVE). */
static void reserve(struct tg_trace *b, uint32_t thread, uint64_t a, uint64_t len)
{
	TG_PUT_SC(b, 0, thread, VMT_OP_MMAP, (int64_t)a, 0, len, LX_PROT_NONE, PRIV_ANON | NORESERVE,
		  FD_NONE, 0);
}

/* ---- seed 000: glibc's old free --------------------------------------- */

enum pnf_variant { PNF_REAL, PNF_NO_MPROTECT, PNF_REMAP_RW, PNF_FAILED };

/* Threads 1..nthreads each reserve a page PROT_NONE and cycle
 * mprotect(RW), mmap(PROT_NONE, MAP_FIXED) `cycles` times, as seed000
 * --mode old does, then unmap it.  Returns the index of the first
 * cycle's mmap. */
static uint64_t pnf_trace(struct tg_trace *b, int nthreads, int cycles, enum pnf_variant v,
			  uint32_t stack)
{
	const uint64_t R = 0x7f0000100000ull;
	uint64_t first = 0;
	for (int t = 1; t <= nthreads; t++) {
		lr_thread(b, 0, (uint32_t)t);
		TG_PUT_SC(b, 0, (uint32_t)t, VMT_OP_MMAP, (int64_t)(R + (uint64_t)t * 0x10000), 0,
			  PAGE, 0, PRIV_ANON, FD_NONE, 0);
	}
	for (int i = 0; i < cycles; i++)
		for (int t = 1; t <= nthreads; t++) {
			uint64_t a = R + (uint64_t)t * 0x10000;
			if (v != PNF_NO_MPROTECT)
				commit_prot(b, (uint32_t)t, a, PAGE, RW);
			int64_t res = v == PNF_FAILED ? -12 : (int64_t)a;
			uint64_t prot = v == PNF_REMAP_RW ? RW : 0;
			uint64_t k = tg_put(b, tg_with_stack(TG_SC(0, (uint32_t)t, VMT_OP_MMAP, res, a, PAGE, prot,
								   PRIV_ANON_FIXED, FD_NONE, 0), stack));
			if (!first)
				first = k;
		}
	for (int t = 1; t <= nthreads; t++)
		TG_PUT_SC(b, 0, (uint32_t)t, VMT_OP_MUNMAP, 0, R + (uint64_t)t * 0x10000, PAGE);
	return first;
}

static void test_pnf_found(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	uint64_t first = pnf_trace(&b, 2, 2000, PNF_REAL, VMT_NONE);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	/* Every uncommit is committed again but the last of each thread,
	 * which is unmapped: all are cycles. */
	assert_int_equal(lr_evidence(f, "cycles"), 4000);
	assert_int_equal(lr_evidence(f, "uncommits"), 4000);
	assert_int_equal(lr_evidence(f, "recommitted"), 3998);
	assert_int_equal(lr_evidence(f, "unmapped"), 2);
	assert_int_equal(lr_evidence(f, "left_uncommitted"), 0);
	assert_int_equal(lr_evidence(f, "recommitted_by_other_thread"), 0);
	assert_int_equal(lr_evidence(f, "recommits_with_more"), 0);
	assert_int_equal(lr_evidence(f, "threads"), 2);
	assert_int_equal(lr_evidence(f, "bytes"), 4000 * PAGE);
	/* mprotect(RW) of a reservation made without MAP_NORESERVE charges
	 * it: every uncommit dropped that charge. */
	assert_int_equal(lr_evidence(f, "charged_bytes"), 4000 * PAGE);
	assert_non_null(strstr(f->note, "dropped a commit charge"));
	assert_string_equal(f->rule, "prot-none-free");
	assert_int_equal(f->nparts, 2);
	assert_int_equal(f->parts[0].value, 2000);
	assert_int_equal(f->parts[0].thread, 1);
	assert_int_equal(f->parts[1].thread, 2);
	assert_int_equal(f->example_index, first);
	assert_int_equal(f->example_thread, 1);
	assert_string_equal(f->example, "mmap(0x7f0000110000, 4096, PROT_NONE, "
			    "MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS, -1, 0) = 0x7f0000110000");
	assert_int_equal(f->nframes, 0); /* no stacks recorded */
	assert_int_equal(f->nsites, 0);
	van_lint_free(l);
}

static void test_pnf_threshold_per_process(void **state)
{
	struct tg_trace b;
	int n;
	/* PNF_MIN_CYCLES - 1 cycles in all, spread over 3 threads */
	lr_open(&b, NULL);
	pnf_trace(&b, 3, 1, PNF_REAL, VMT_NONE);
	lr_expect_none(&b);
	/* 4 in one process, 2 in each of 2 threads: counted together */
	lr_open(&b, NULL);
	pnf_trace(&b, 2, 2, PNF_REAL, VMT_NONE);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	assert_int_equal(lr_evidence(f, "cycles"), 4);
	assert_int_equal(lr_evidence(f, "threads"), 2);
	van_lint_free(l);
	/* 20 threads: the 16 listed parts and the sum of the others */
	lr_open(&b, NULL);
	pnf_trace(&b, 20, 5, PNF_REAL, VMT_NONE);
	l = lr_lint(&b, &n);
	f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	assert_int_equal(lr_evidence(f, "threads"), 20);
	assert_int_equal(f->nparts, VAN_LINT_MAX_PARTS);
	assert_int_equal(f->parts_more, 4);
	assert_int_equal(f->parts_more_value, 4 * 5);
	van_lint_free(l);
}

/* ---- HotSpot G1 and glibc's arenas -------------------------------------- */

#define HEAP 0x7f5000000000ull

/* Stacks 0 (an uncommit) and 1 (a commit) from libjvm.so's mangled
 * functions, called through libc's mmap; the symbols at the end. */
static void jvm_stacks(struct tg_trace *b)
{
	static const uint64_t unc[] = { 0x7ffff7d30010ull, 0x7ffff1000100ull, 0x7ffff1000200ull };
	static const uint64_t com[] = { 0x7ffff7d30010ull, 0x7ffff1000300ull };
	tg_put(b, tg_ev_stack(0, 3, unc));
	tg_put(b, tg_ev_stack(1, 2, com));
}

static void jvm_symbols(struct tg_trace *b)
{
	static const char *const strs[] = {
		"/usr/lib/x86_64-linux-gnu/libc.so.6", "mmap64", "/usr/lib/jvm/lib/server/libjvm.so",
		"_ZN2os18pd_uncommit_memoryEPcmb", "_ZN23G1PageBasedVirtualSpace8uncommitEmm",
		"_ZN2os16pd_commit_memoryEPcmb",
	};
	for (uint32_t i = 0; i < 6; i++)
		tg_put(b, tg_ev_string(i, strs[i]));
	tg_put(b, tg_ev_symbol(0x7ffff7d30010ull, 0, 1, 0x13));
	tg_put(b, tg_ev_symbol(0x7ffff1000100ull, 2, 3, 0x19));
	tg_put(b, tg_ev_symbol(0x7ffff1000200ull, 2, 4, 0x12e));
	tg_put(b, tg_ev_symbol(0x7ffff1000300ull, 2, 5, 0x20));
}

/* G1: the VM thread (t1) commits a heap region of a NORESERVE
 * reservation, the service thread (t2) uncommits part of it, the VM
 * thread commits again: first a part of the uncommitted range, then the
 * rest of it with 2 MiB of reservation beyond.  Four rounds. */
static void g1_trace(struct tg_trace *b)
{
	lr_thread(b, 0, 1);
	lr_thread(b, 0, 2);
	jvm_stacks(b);
	reserve(b, 1, HEAP, 64 * MiB);
	commit_map(b, 1, HEAP, 8 * MiB, 1);
	for (int i = 0; i < 4; i++) {
		uint64_t top = HEAP + (8 + 2 * (uint64_t)i) * MiB; /* committed up to here */
		tg_touch(b, 0, 2, HEAP + 4 * MiB, 16, VMT_PAGE_WRITTEN);
		uncommit(b, 2, HEAP + 4 * MiB, top - HEAP - 4 * MiB, NORESERVE, 0);
		commit_map(b, 1, HEAP + 4 * MiB, 2 * MiB, 1);
		commit_map(b, 1, HEAP + 6 * MiB, top + 2 * MiB - HEAP - 6 * MiB, 1);
	}
	jvm_symbols(b);
}

static void test_pnf_g1(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, "touch=resident stacks=32");
	g1_trace(&b);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	assert_int_equal(lr_evidence(f, "cycles"), 4);
	assert_int_equal(lr_evidence(f, "recommitted"), 4);
	assert_int_equal(lr_evidence(f, "recommitted_by_other_thread"), 4);
	/* the second commit of each round also commits 2 MiB of reservation */
	assert_int_equal(lr_evidence(f, "recommits_with_more"), 4);
	assert_int_equal(lr_evidence(f, "threads"), 1);
	assert_int_equal(lr_evidence(f, "bytes"), (4 + 6 + 8 + 10) * MiB);
	assert_int_equal(f->parts[0].thread, 2);
	/* the call sites, demangled, past libc's wrapper */
	assert_int_equal(f->nsites, 2);
	assert_string_equal(f->sites[0].site, "os::pd_uncommit_memory(char*, unsigned long, bool) (libjvm.so)");
	assert_string_equal(f->sites[0].role, "uncommits");
	assert_int_equal(f->sites[0].calls, 4);
	assert_string_equal(f->sites[1].site, "os::pd_commit_memory(char*, unsigned long, bool) (libjvm.so)");
	assert_int_equal(f->sites[1].calls, 8);
	assert_int_equal(f->nframes, 3);
	assert_string_equal(f->frames[0], "mmap64+0x13 (libc.so.6)");
	assert_string_equal(f->frames[1], "os::pd_uncommit_memory(char*, unsigned long, bool)+0x19 (libjvm.so)");
	/* HotSpot commits without MAP_NORESERVE: charged */
	assert_int_equal(lr_evidence(f, "charged_bytes"), (4 + 6 + 8 + 10) * MiB);
	van_lint_free(l);
}

/* glibc's arena under strict overcommit: grow_heap commits with small
 * mprotects, shrink_heap uncommits a tail that spans several of them and
 * part of one (no MAP_NORESERVE), growing again re-commits with mprotect,
 * the last one also past what was uncommitted. */
static void glibc_trace(struct tg_trace *b, int rounds)
{
	const uint64_t K = 1024;
	reserve(b, 0, HEAP, 64 * MiB);
	for (uint64_t i = 0; i < 16; i++)
		commit_prot(b, 0, HEAP + i * 64 * K, 64 * K, RW);
	for (int r = 0; r < rounds; r++) {
		uncommit(b, 0, HEAP + 520 * K, 504 * K, 0, VMT_NONE);
		commit_prot(b, 0, HEAP + 520 * K, 100 * K, RW);
		commit_prot(b, 0, HEAP + 620 * K, 404 * K + 64 * K, RW);
	}
}

static void test_pnf_glibc(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, NULL);
	glibc_trace(&b, 4);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	assert_int_equal(lr_evidence(f, "cycles"), 4);
	assert_int_equal(lr_evidence(f, "uncommits"), 4);
	assert_int_equal(lr_evidence(f, "recommitted_by_other_thread"), 0);
	assert_int_equal(lr_evidence(f, "recommits_with_more"), 4);
	assert_int_equal(lr_evidence(f, "bytes"), 4 * 504 * 1024);
	van_lint_free(l);
	/* 3 rounds: below the threshold */
	lr_open(&b, NULL);
	glibc_trace(&b, 3);
	lr_expect_none(&b);
}

/* ---- near misses -------------------------------------------------------- */

static void test_pnf_near_misses(void **state)
{
	struct tg_trace b;
	/* mmap(PROT_NONE, MAP_FIXED) over a range never made writable */
	lr_open(&b, NULL);
	pnf_trace(&b, 2, 100, PNF_NO_MPROTECT, VMT_NONE);
	lr_expect_none(&b);
	/* mprotect(RW) then a read-write MAP_FIXED remap: a commit, not an
	 * uncommit */
	lr_open(&b, NULL);
	pnf_trace(&b, 2, 100, PNF_REMAP_RW, VMT_NONE);
	lr_expect_none(&b);
	/* the PROT_NONE mmap fails every time */
	lr_open(&b, NULL);
	pnf_trace(&b, 2, 100, PNF_FAILED, VMT_NONE);
	lr_expect_none(&b);
	/* the new way (seed000 --mode new): touch + madvise(DONTNEED) */
	lr_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, 0x7f0000100000ull, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 2000; i++)
		TG_PUT_SC(&b, 0, 0, VMT_OP_MADVISE, 0, 0x7f0000100000ull, PAGE, LX_MADV_DONTNEED);
	lr_expect_none(&b);
}

/* Uncommits that are not of committed memory, or whose range is not
 * committed again the same way: 10 rounds each, none counted. */
static void test_pnf_not_counted(void **state)
{
	struct tg_trace b;
	int n;
	/* half committed, half reservation: a partial overlap */
	lr_open(&b, NULL);
	reserve(&b, 0, HEAP, 4 * MiB);
	for (int i = 0; i < 10; i++) {
		commit_prot(&b, 0, HEAP, MiB, RW);
		uncommit(&b, 0, HEAP, 2 * MiB, NORESERVE, VMT_NONE);
	}
	lr_expect_none(&b);
	/* a file mapping remapped PROT_NONE */
	lr_open(&b, NULL);
	for (int i = 0; i < 10; i++) {
		lr_map_file(&b, 0, 0, 4711);
		TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, (int64_t)HEAP, HEAP, MiB, RW, 0x12 /* PRIVATE|FIXED */, 3, 0);
		uncommit(&b, 0, HEAP, MiB, 0, VMT_NONE);
		commit_map(&b, 0, HEAP, MiB, VMT_NONE);
	}
	lr_expect_none(&b);
	/* locked memory */
	lr_open(&b, NULL);
	reserve(&b, 0, HEAP, 4 * MiB);
	for (int i = 0; i < 10; i++) {
		commit_prot(&b, 0, HEAP, MiB, RW);
		TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, HEAP, MiB);
		uncommit(&b, 0, HEAP, MiB, 0, VMT_NONE);
	}
	lr_expect_none(&b);
	/* committed again with another protection, or never: uncommits,
	 * but no cycles */
	lr_open(&b, NULL);
	reserve(&b, 0, HEAP, 64 * MiB);
	for (uint64_t i = 0; i < 10; i++) {
		commit_prot(&b, 0, HEAP + i * MiB, MiB, RW);
		uncommit(&b, 0, HEAP + i * MiB, MiB, 0, VMT_NONE);
		if (i & 1)
			commit_prot(&b, 0, HEAP + i * MiB, MiB, LX_PROT_READ);
	}
	lr_expect_none(&b);
	/* committed RWX, uncommitted, committed again RW */
	lr_open(&b, NULL);
	reserve(&b, 0, HEAP, 64 * MiB);
	for (uint64_t i = 0; i < 10; i++) {
		commit_prot(&b, 0, HEAP + i * MiB, MiB, RW | LX_PROT_EXEC);
		uncommit(&b, 0, HEAP + i * MiB, MiB, 0, VMT_NONE);
		commit_prot(&b, 0, HEAP + i * MiB, MiB, RW);
	}
	van_lint *l = lr_lint(&b, &n);
	lr_none(l, n);
}

/* ---- call sites and notes ----------------------------------------------- */

static void test_pnf_call_site(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, "touch=resident stacks=32");
	static const uint64_t ips[] = { 0x7ffff7d30010ull, 0x555555556120ull };
	tg_put(&b, tg_ev_stack(0, 2, ips));
	pnf_trace(&b, 1, 10, PNF_REAL, 0);
	/* symbols come at the end of a recording */
	static const char *const strs[] = { "/usr/lib/libc.so.6", "mmap64", "/usr/bin/app", "old_free" };
	for (uint32_t i = 0; i < 4; i++)
		tg_put(&b, tg_ev_string(i, strs[i]));
	for (uint32_t i = 0; i < 2; i++)
		tg_put(&b, tg_ev_symbol(ips[i], 2 * i, 2 * i + 1, 0x10 + 0x10 * i));
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	assert_int_equal(f->nframes, 2);
	assert_non_null(strstr(f->frames[0], "mmap64"));
	assert_string_equal(f->frames[1], "old_free+0x20 (app)");
	/* the mprotects had no stack: one site */
	assert_int_equal(f->nsites, 1);
	assert_string_equal(f->sites[0].site, "old_free (app)");
	assert_int_equal(f->sites[0].calls, 10);
	van_lint_free(l);
}

/* A header that says the recording ran under strict overcommit: the note
 * says the rule leaves these uncommits alone. */
static void test_pnf_strict_overcommit(void **state)
{
	struct tg_trace b;
	int n;
	lr_open(&b, "touch=resident overcommit=2");
	pnf_trace(&b, 1, 10, PNF_REAL, VMT_NONE);
	van_lint *l = lr_lint(&b, &n);
	const struct van_lint_finding *f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	assert_non_null(strstr(f->note, "vm.overcommit_memory=2: rule prot-none-free leaves"));
	van_lint_free(l);
	/* "overcommit=20" is not that */
	lr_open(&b, "touch=resident overcommit=20");
	pnf_trace(&b, 1, 10, PNF_REAL, VMT_NONE);
	l = lr_lint(&b, &n);
	f = lr_only(l, n, VAN_LINT_PROT_NONE_FREE);
	assert_non_null(strstr(f->note, "does not say which mode"));
	van_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pnf_found),
		cmocka_unit_test(test_pnf_threshold_per_process),
		cmocka_unit_test(test_pnf_g1),
		cmocka_unit_test(test_pnf_glibc),
		cmocka_unit_test(test_pnf_near_misses),
		cmocka_unit_test(test_pnf_not_counted),
		cmocka_unit_test(test_pnf_call_site),
		cmocka_unit_test(test_pnf_strict_overcommit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
