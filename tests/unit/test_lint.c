/*
 * test_lint.c - the detectors of `vmtrace lint` on synthetic traces that
 * mimic the event streams of the seed workloads: each pattern is found with
 * the right numbers, and its near misses are not.
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
#include "tgen.h"
#include "vmtrace.h"

/* ---- traces ------------------------------------------------------------- */

/* A root process with one thread and a small address space (program,
 * heap, libc, stack): 6 VMAs. */
static void tb_open(struct tg_trace *b, const char *options)
{
	static const struct vmt_map_entry maps[] = {
		{ 0x555555554000ull, 0x555555556000ull, 0, 0x801, 131, VMT_PROT_R, "/usr/bin/app" },
		{ 0x555555556000ull, 0x555555558000ull, 0x2000, 0x801, 131, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app" },
		{ 0x555555559000ull, 0x55555557a000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[heap]" },
		{ 0x7ffff7d00000ull, 0x7ffff7d28000ull, 0, 0x801, 77, VMT_PROT_R, "/usr/lib/libc.so.6" },
		{ 0x7ffff7d28000ull, 0x7ffff7ebd000ull, 0x28000, 0x801, 77, VMT_PROT_R | VMT_PROT_X, "/usr/lib/libc.so.6" },
		{ 0x7ffffffde000ull, 0x7ffffffff000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[stack]" },
	};
	tg_trace_memfd(b, "lint", options);
	tg_put(b, tg_ev_process_start(0, 0, VMT_NONE, 1000, VMT_PROC_ROOT));
	tg_put(b, tg_ev_thread_start(0, 0, VMT_NONE, 1000));
	tg_put(b, tg_ev_maps(0, 0, 6, maps));
}

static void thread_start(struct tg_trace *b, uint32_t proc, uint32_t thread)
{
	tg_put(b, tg_ev_thread_start(proc, thread, 0, (int32_t)(1000 + thread)));
}

static void fork_child(struct tg_trace *b, uint32_t proc, uint32_t thread)
{
	tg_put(b, tg_ev_process_start(proc, thread, 0, (int32_t)(2000 + proc), VMT_PROC_FORK));
	thread_start(b, proc, thread);
}

/* A FAULT from the program's text. */
static void fault(struct tg_trace *b, uint32_t proc, uint32_t thread, uint64_t addr, uint32_t access)
{
	tg_put(b, tg_ev_fault(proc, thread, addr, 0x555555556100ull, access));
}

/* The MAP_FILE of an mmap of /tmp/data, just before the mmap that follows. */
static void map_file(struct tg_trace *b, uint32_t proc, uint32_t thread, uint64_t ino)
{
	tg_put_at(b, tg_ev_file(proc, thread, "/tmp/data", 0x801, ino, 1 << 30, 2, 0100644),
		  b->now + 1);
}

/* Finish the trace, read it back into a linter and decide. */
static vmt_lint *tb_lint(struct tg_trace *b, int *nfound)
{
	tg_finish(b);
	assert_int_equal(lseek(b->fd, 0, SEEK_SET), 0);
	int err;
	vmt_reader *r = vmt_reader_open_fd(b->fd, &err, NULL, 0);
	assert_non_null(r);
	vmt_lint *l = vmt_lint_new(vmt_reader_header(r));
	assert_non_null(l);
	struct vmt_event ev;
	uint64_t i = 0;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1)
		assert_int_equal(vmt_lint_event(l, i++, &ev), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(i, b->count);
	*nfound = vmt_lint_finish(l);
	assert_true(*nfound >= 0);
	vmt_reader_free(r);
	close(b->fd);
	return l;
}

static const struct vmt_lint_finding *find(const vmt_lint *l, int n, const char *id)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(vmt_lint_get(l, (uint32_t)i)->id, id))
			return vmt_lint_get(l, (uint32_t)i);
	return NULL;
}

static uint64_t evidence(const struct vmt_lint_finding *f, const char *key)
{
	for (uint32_t i = 0; i < f->nnums; i++)
		if (!strcmp(f->nums[i].key, key))
			return f->nums[i].value;
	fail_msg("finding %s has no evidence '%s'", f->id, key);
	return 0;
}

/* The only finding is `id`; returns it. */
static const struct vmt_lint_finding *only(const vmt_lint *l, int n, const char *id)
{
	if (n != 1 || strcmp(vmt_lint_get(l, 0)->id, id)) {
		for (int i = 0; i < n; i++)
			print_message("finding: %s\n", vmt_lint_get(l, (uint32_t)i)->id);
		fail_msg("want exactly the finding %s, got %d findings", id, n);
	}
	return vmt_lint_get(l, 0);
}

static void none(vmt_lint *l, int n)
{
	for (int i = 0; i < n; i++)
		print_message("unexpected finding: %s: %s\n", vmt_lint_get(l, (uint32_t)i)->id,
			      vmt_lint_get(l, (uint32_t)i)->summary);
	assert_int_equal(n, 0);
	vmt_lint_free(l);
}

/* The trace has no finding. */
static void expect_none(struct tg_trace *b)
{
	int n;
	vmt_lint *l = tb_lint(b, &n);
	none(l, n);
}

/* ---- seed 000: prot-none-free ------------------------------------------ */

enum pnf_variant { PNF_REAL, PNF_NO_MPROTECT, PNF_REMAP_RW, PNF_FAILED };

/* Threads 1..nthreads each reserve a page PROT_NONE and cycle
 * mprotect(RW), touch, mmap(PROT_NONE, MAP_FIXED) `cycles` times, as
 * seed000 --mode old does.  Returns the index of the first cycle's mmap. */
static uint64_t pnf_trace(struct tg_trace *b, int nthreads, int cycles, enum pnf_variant v,
			  uint32_t stack)
{
	const uint64_t R = 0x7f0000100000ull;
	uint64_t first = 0;
	for (int t = 1; t <= nthreads; t++) {
		thread_start(b, 0, (uint32_t)t);
		TG_PUT_SC(b, 0, (uint32_t)t, VMT_OP_MMAP, (int64_t)(R + (uint64_t)t * 0x10000), 0,
			  PAGE, 0, PRIV_ANON, FD_NONE, 0);
	}
	for (int i = 0; i < cycles; i++)
		for (int t = 1; t <= nthreads; t++) {
			uint64_t a = R + (uint64_t)t * 0x10000;
			if (v != PNF_NO_MPROTECT)
				TG_PUT_SC(b, 0, (uint32_t)t, VMT_OP_MPROTECT, 0, a, PAGE, RW);
			int64_t res = v == PNF_FAILED ? -12 : (int64_t)a;
			uint64_t prot = v == PNF_REMAP_RW ? RW : 0;
			uint64_t k = tg_put(b, tg_with_stack(TG_SC(0, (uint32_t)t, VMT_OP_MMAP, res, a, PAGE, prot,
								   PRIV_ANON_FIXED, FD_NONE, 0), stack));
			if (!first)
				first = k;
		}
	return first;
}

static void test_pnf_found(void **state)
{
	struct tg_trace b;
	int n;
	tb_open(&b, NULL);
	uint64_t first = pnf_trace(&b, 2, 2000, PNF_REAL, VMT_NONE);
	vmt_lint *l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_PROT_NONE_FREE);
	assert_int_equal(evidence(f, "cycles"), 4000);
	assert_int_equal(evidence(f, "threads"), 2);
	assert_int_equal(evidence(f, "bytes"), 4000 * PAGE);
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
	assert_false(vmt_lint_had_faults(l));
	vmt_lint_free(l);
}

static void test_pnf_threshold_per_thread(void **state)
{
	struct tg_trace b;
	int n;
	/* PNF_MIN_CYCLES - 1 cycles in each of 3 threads: 9 in all, but no
	 * thread has a free path. */
	tb_open(&b, NULL);
	pnf_trace(&b, 3, 3, PNF_REAL, VMT_NONE);
	expect_none(&b);
	tb_open(&b, NULL);
	pnf_trace(&b, 1, 4, PNF_REAL, VMT_NONE);
	vmt_lint *l = tb_lint(&b, &n);
	assert_int_equal(evidence(only(l, n, VMT_LINT_PROT_NONE_FREE), "cycles"), 4);
	vmt_lint_free(l);
	/* 20 threads: the 16 listed parts and the sum of the others */
	tb_open(&b, NULL);
	pnf_trace(&b, 20, 5, PNF_REAL, VMT_NONE);
	l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_PROT_NONE_FREE);
	assert_int_equal(evidence(f, "threads"), 20);
	assert_int_equal(f->nparts, VMT_LINT_MAX_PARTS);
	assert_int_equal(f->parts_more, 4);
	assert_int_equal(f->parts_more_value, 4 * 5);
	vmt_lint_free(l);
}

static void test_pnf_near_misses(void **state)
{
	struct tg_trace b;
	/* mmap(PROT_NONE, MAP_FIXED) over a range never made writable */
	tb_open(&b, NULL);
	pnf_trace(&b, 2, 100, PNF_NO_MPROTECT, VMT_NONE);
	expect_none(&b);
	/* mprotect(RW) then a read-write MAP_FIXED remap: not a free */
	tb_open(&b, NULL);
	pnf_trace(&b, 2, 100, PNF_REMAP_RW, VMT_NONE);
	expect_none(&b);
	/* the PROT_NONE mmap fails every time */
	tb_open(&b, NULL);
	pnf_trace(&b, 2, 100, PNF_FAILED, VMT_NONE);
	expect_none(&b);
	/* the new way (seed000 --mode new): touch + madvise(DONTNEED) */
	tb_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, 0x7f0000100000ull, 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	for (int i = 0; i < 2000; i++)
		TG_PUT_SC(&b, 0, 0, VMT_OP_MADVISE, 0, 0x7f0000100000ull, PAGE, 4);
	expect_none(&b);
}

static void test_call_site(void **state)
{
	struct tg_trace b;
	int n;
	tb_open(&b, "touch=resident stacks=32");
	static const uint64_t ips[] = { 0x7ffff7d30010ull, 0x555555556120ull };
	tg_put(&b, tg_ev_stack(0, 2, ips));
	pnf_trace(&b, 1, 10, PNF_REAL, 0);
	/* symbols come at the end of a recording */
	static const char *const strs[] = { "/usr/lib/libc.so.6", "mmap64", "/usr/bin/app", "old_free" };
	for (uint32_t i = 0; i < 4; i++)
		tg_put(&b, tg_ev_string(i, strs[i]));
	for (uint32_t i = 0; i < 2; i++)
		tg_put(&b, tg_ev_symbol(ips[i], 2 * i, 2 * i + 1, 0x10 + 0x10 * i));
	vmt_lint *l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_PROT_NONE_FREE);
	assert_int_equal(f->nframes, 2);
	assert_non_null(strstr(f->frames[0], "mmap64"));
	assert_non_null(strstr(f->frames[1], "old_free"));
	assert_string_equal(f->frames[1], "old_free+0x20 (app)");
	vmt_lint_free(l);
}

/* ---- seed 001: MADV_FREE volume ----------------------------------------- */

/* seed001: `procs` forked children each mmap `size`, then `loops` times
 * madvise(advice) all of it, then munmap. */
static void free_trace(struct tg_trace *b, int procs, int loops, uint64_t size, int advice)
{
	for (int p = 1; p <= procs; p++) {
		uint32_t t = (uint32_t)p;
		uint64_t a = 0x7f1000000000ull + (uint64_t)p * (1ull << 32);
		fork_child(b, (uint32_t)p, t);
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
	tb_open(&b, NULL);
	free_trace(&b, 2, 5, 16 * MiB, 8);
	vmt_lint *l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_MADV_FREE);
	assert_int_equal(evidence(f, "calls"), 10);
	assert_int_equal(evidence(f, "bytes"), 160 * MiB);
	assert_int_equal(evidence(f, "repeated_calls"), 8);
	assert_int_equal(evidence(f, "repeated_bytes"), 128 * MiB);
	assert_int_equal(evidence(f, "processes"), 2);
	assert_string_equal(f->rule, "free-to-dontneed");
	assert_int_equal(f->nparts, 2);
	assert_int_equal(f->parts[0].proc, 1);
	assert_int_equal(f->parts[0].value, 80 * MiB);
	assert_int_equal(f->parts[0].thread, VMT_NONE);
	/* the example is the first call on a range freed before */
	assert_int_equal(f->example_proc, 1);
	assert_non_null(strstr(f->example, "MADV_FREE"));
	vmt_lint_free(l);
}

static void test_free_near_misses(void **state)
{
	struct tg_trace b;
	/* the same volume with MADV_DONTNEED (seed001 --advice dontneed) */
	tb_open(&b, NULL);
	free_trace(&b, 2, 5, 16 * MiB, 4);
	expect_none(&b);
	/* a lot freed once per range: a trim, not a cycle */
	tb_open(&b, NULL);
	free_trace(&b, 3, 1, 100 * MiB, 8);
	expect_none(&b);
	/* freed again and again, but little: 2 x 5 x 6 MiB = 60 MiB */
	tb_open(&b, NULL);
	free_trace(&b, 2, 5, 6 * MiB, 8);
	expect_none(&b);
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
			map_file(b, 0, 0, 4711);
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
	tb_open(&b, NULL);
	frag_trace(&b, 2000, FRAG_FILE);
	vmt_lint *l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_FRAGMENTATION);
	assert_int_equal(evidence(f, "peak_vmas"), 6 + 2000);
	assert_int_equal(evidence(f, "small_maps"), 2000);
	/* the first mapping has no neighbour; every later one sits below the
	 * previous one, mapping the same offset 0 of the same file */
	assert_int_equal(evidence(f, "unmerged_small_maps"), 1999);
	assert_int_equal(evidence(f, "unmerged_offset_not_contiguous"), 1999);
	assert_null(f->rule);
	assert_non_null(strstr(f->summary, "offset"));
	assert_non_null(strstr(f->example, "MAP_PRIVATE, 3, 0)"));
	vmt_lint_free(l);

	tb_open(&b, NULL);
	frag_trace(&b, 2000, FRAG_ANON_ALT);
	l = tb_lint(&b, &n);
	f = only(l, n, VMT_LINT_FRAGMENTATION);
	assert_int_equal(evidence(f, "peak_vmas"), 6 + 2000);
	assert_int_equal(evidence(f, "unmerged_prot_differs"), 1999);
	vmt_lint_free(l);
}

static void test_frag_near_misses(void **state)
{
	struct tg_trace b;
	/* anonymous neighbours merge: one VMA (seed002 --kind anon-merge) */
	tb_open(&b, NULL);
	frag_trace(&b, 3000, FRAG_ANON_MERGE);
	expect_none(&b);
	/* many VMAs, but none of them next to another: nothing could merge */
	tb_open(&b, NULL);
	frag_trace(&b, 3000, FRAG_FILE_GAPS);
	expect_none(&b);
	/* unmerged, but the process stays below 1000 VMAs */
	tb_open(&b, NULL);
	frag_trace(&b, 900, FRAG_FILE);
	expect_none(&b);
}

/* ---- seed 003: locks ------------------------------------------------------ */

static const uint64_t L = 0x7f3000000000ull;

static void test_locked_found(void **state)
{
	struct tg_trace b;
	int n;
	/* seed003 --mode locked: MAP_LOCKED file mapping, 2000 reads */
	tb_open(&b, NULL);
	map_file(&b, 0, 0, 99);
	uint64_t k = TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, 1, 0x2 | LX_MAP_LOCKED, 3, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNMAP, 0, L, 64 * MiB);
	vmt_lint *l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_LOCKED_UNTOUCHED);
	assert_int_equal(evidence(f, "locked_bytes"), 64 * MiB);
	assert_int_equal(evidence(f, "locked_pages"), 16384);
	assert_int_equal(evidence(f, "used_pages"), 0);
	assert_int_equal(evidence(f, "locks"), 1);
	assert_int_equal(evidence(f, "lock_ns"), 500);
	assert_string_equal(f->rule, "mlock-onfault");
	assert_int_equal(f->example_index, k);
	assert_non_null(strstr(f->example, "MAP_LOCKED"));
	/* without FAULT events the summary says why use cannot be seen */
	assert_non_null(strstr(f->summary, "--touch=faults"));
	vmt_lint_free(l);

	/* mlock after a quarter of the pages were faulted in */
	tb_open(&b, "touch=faults");
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 32 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (uint64_t i = 0; i < 2048; i++)
		fault(&b, 0, 0, L + i * PAGE + 8, VMT_FAULT_WRITE);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L, 32 * MiB);
	l = tb_lint(&b, &n);
	f = only(l, n, VMT_LINT_LOCKED_UNTOUCHED);
	assert_int_equal(evidence(f, "locked_pages"), 8192);
	assert_int_equal(evidence(f, "used_pages"), 2048);
	assert_null(strstr(f->summary, "--touch=faults"));
	vmt_lint_free(l);

	/* mlockall(MCL_CURRENT) over a large mapping */
	tb_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 32 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCKALL, 0, 1);
	l = tb_lint(&b, &n);
	f = only(l, n, VMT_LINT_LOCKED_UNTOUCHED);
	assert_true(evidence(f, "locked_bytes") >= 32 * MiB);
	vmt_lint_free(l);
}

static void test_locked_near_misses(void **state)
{
	struct tg_trace b;
	/* seed003 --mode onfault: mlock2(MLOCK_ONFAULT) */
	tb_open(&b, NULL);
	map_file(&b, 0, 0, 99);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, 1, 0x2, 3, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK2, 0, L, 64 * MiB, 1);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNLOCK, 0, L, 64 * MiB);
	expect_none(&b);
	/* mlockall(MCL_CURRENT|MCL_ONFAULT) */
	tb_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCKALL, 0, 5);
	expect_none(&b);
	/* a small MAP_LOCKED mapping: 4 MiB */
	tb_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 4 * MiB, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	expect_none(&b);
	/* locked after most pages were used: 3/4 faulted before mlock */
	tb_open(&b, "touch=faults");
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 16 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (uint64_t i = 0; i < 3072; i++)
		fault(&b, 0, 0, L + i * PAGE, VMT_FAULT_WRITE);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L, 16 * MiB);
	expect_none(&b);
	/* a failed MAP_LOCKED mmap (RLIMIT_MEMLOCK) */
	tb_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, -11, 0, 64 * MiB, RW, PRIV_ANON | LX_MAP_LOCKED, FD_NONE, 0);
	expect_none(&b);
}

static void test_mlock_per_page(void **state)
{
	struct tg_trace b;
	int n;
	/* seed003 --mode mlock: mlock of each page before reading it */
	tb_open(&b, NULL);
	map_file(&b, 0, 0, 99);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, 1, 0x2, 3, 0);
	uint64_t first = 0;
	for (uint64_t i = 0; i < 64; i++) {
		uint64_t k = TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L + (i * 37 % 16384) * PAGE, PAGE);
		if (!i)
			first = k;
	}
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNLOCK, 0, L, 64 * MiB);
	vmt_lint *l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_MLOCK_PER_PAGE);
	assert_int_equal(evidence(f, "calls"), 64);
	assert_string_equal(f->rule, "mlock-onfault");
	assert_int_equal(f->example_index, first);
	vmt_lint_free(l);

	/* 63 calls, or 100 calls of 8 pages each: no finding */
	tb_open(&b, NULL);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, L, 0, 64 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	for (uint64_t i = 0; i < 63; i++)
		TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L + i * 2 * PAGE, PAGE);
	for (uint64_t i = 0; i < 100; i++)
		TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, L + MiB + i * 8 * PAGE, 8 * PAGE);
	expect_none(&b);
}

/* ---- seed 004: read-then-write ------------------------------------------ */

enum rtw_variant { RTW_REAL, RTW_WRITE_ONLY, RTW_DISCARDED, RTW_FILE, RTW_WRITE_READ };

static const uint64_t A = 0x7f4000000000ull;

/* seed004: a round maps `pages` anonymous pages, reads each, writes each. */
static void rtw_trace(struct tg_trace *b, uint64_t pages, enum rtw_variant v)
{
	if (v == RTW_FILE) {
		map_file(b, 0, 0, 5);
		TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, A, 0, pages * PAGE, RW, 0x2, 3, 0);
	} else {
		TG_PUT_SC(b, 0, 0, VMT_OP_MMAP, A, 0, pages * PAGE, RW, PRIV_ANON, FD_NONE, 0);
	}
	if (v == RTW_WRITE_READ)
		for (uint64_t i = 0; i < pages; i++)
			fault(b, 0, 0, A + i * PAGE, VMT_FAULT_WRITE);
	if (v != RTW_WRITE_ONLY)
		for (uint64_t i = 0; i < pages; i++)
			fault(b, 0, 0, A + i * PAGE + 100, VMT_FAULT_READ);
	if (v == RTW_DISCARDED)
		TG_PUT_SC(b, 0, 0, VMT_OP_MADVISE, 0, A, pages * PAGE, 4);
	if (v != RTW_WRITE_READ)
		for (uint64_t i = 0; i < pages; i++)
			fault(b, 0, 0, A + i * PAGE + 200, VMT_FAULT_WRITE);
	TG_PUT_SC(b, 0, 0, VMT_OP_MUNMAP, 0, A, pages * PAGE);
}

static void test_rtw_found(void **state)
{
	struct tg_trace b;
	int n;
	tb_open(&b, "touch=faults");
	for (int round = 0; round < 3; round++)
		rtw_trace(&b, 4096, RTW_REAL);
	vmt_lint *l = tb_lint(&b, &n);
	const struct vmt_lint_finding *f = only(l, n, VMT_LINT_READ_THEN_WRITE);
	assert_int_equal(evidence(f, "pages"), 3 * 4096);
	assert_int_equal(evidence(f, "read_first_pages"), 3 * 4096);
	assert_string_equal(f->rule, "populate");
	assert_true(vmt_lint_had_faults(l));
	/* example: the first write fault after a read, with the fault's ip */
	assert_string_equal(f->example, "fault(0x7f40000000c8, write, ip=0x555555556100)");
	assert_int_equal(f->nframes, 1);
	assert_string_equal(f->frames[0], "0x555555556100");
	vmt_lint_free(l);
}

static void test_rtw_near_misses(void **state)
{
	static const enum rtw_variant vs[] = { RTW_WRITE_ONLY, RTW_DISCARDED, RTW_FILE, RTW_WRITE_READ };
	struct tg_trace b;
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		tb_open(&b, "touch=faults");
		rtw_trace(&b, 4096, vs[i]);
		expect_none(&b);
	}
	/* RTW_MIN_PAGES - 1 pages */
	tb_open(&b, "touch=faults");
	rtw_trace(&b, 255, RTW_REAL);
	expect_none(&b);
}

/* ---- clean traces ---------------------------------------------------------- */

static void test_clean(void **state)
{
	struct tg_trace b;
	int n;
	tb_open(&b, NULL);
	/* an ordinary program: a few mappings, some protection changes, a
	 * heap that grows, a small lock, a DONTNEED, unmaps */
	TG_PUT_SC(&b, 0, 0, VMT_OP_MMAP, A, 0, 1 * MiB, RW, PRIV_ANON, FD_NONE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MPROTECT, 0, A, PAGE, 0);
	TG_PUT_SC(&b, 0, 0, VMT_OP_BRK, 0x55555559b000ll, 0x55555559b000ull);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MLOCK, 0, A + PAGE, PAGE);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MADVISE, 0, A + PAGE, 64 * PAGE, 4);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MADVISE, 0, A + PAGE, 64 * PAGE, 8);
	TG_PUT_SC(&b, 0, 0, VMT_OP_MUNMAP, 0, A, 1 * MiB);
	vmt_lint *l = tb_lint(&b, &n);
	assert_int_equal(n, 0);
	assert_null(vmt_lint_get(l, 0));
	assert_false(vmt_lint_had_faults(l));
	vmt_lint_free(l);

	/* every pattern at once: each is found, in the documented order */
	tb_open(&b, "touch=faults");
	pnf_trace(&b, 1, 10, PNF_REAL, VMT_NONE);
	free_trace(&b, 1, 5, 32 * MiB, 8);
	rtw_trace(&b, 512, RTW_REAL);
	l = tb_lint(&b, &n);
	assert_int_equal(n, 3);
	assert_string_equal(vmt_lint_get(l, 0)->id, VMT_LINT_PROT_NONE_FREE);
	assert_string_equal(vmt_lint_get(l, 1)->id, VMT_LINT_MADV_FREE);
	assert_string_equal(vmt_lint_get(l, 2)->id, VMT_LINT_READ_THEN_WRITE);
	assert_non_null(find(l, n, VMT_LINT_READ_THEN_WRITE));
	vmt_lint_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pnf_found),
		cmocka_unit_test(test_pnf_threshold_per_thread),
		cmocka_unit_test(test_pnf_near_misses),
		cmocka_unit_test(test_call_site),
		cmocka_unit_test(test_free_found),
		cmocka_unit_test(test_free_near_misses),
		cmocka_unit_test(test_frag_found),
		cmocka_unit_test(test_frag_near_misses),
		cmocka_unit_test(test_locked_found),
		cmocka_unit_test(test_locked_near_misses),
		cmocka_unit_test(test_mlock_per_page),
		cmocka_unit_test(test_rtw_found),
		cmocka_unit_test(test_rtw_near_misses),
		cmocka_unit_test(test_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
