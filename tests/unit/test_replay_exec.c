/*
 * test_replay_exec.c - replays of synthetic traces (written with
 * libvmtrace): every op, splits and punches, MAP_FIXED replacement, mremap
 * moves, brk, file mappings, stand-ins, threads under each ordering, forked
 * processes, exec, --scale, exact placement.  The recorded results are what
 * this kernel returns for the same calls, so a correct replay has zero
 * divergences; the counts of ops, errors and touched pages are checked too.
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
#include "execint.h"
#include "model.h"
#include "replay.h"
#include "rptw.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif

#define P TW_P
#define N VMT_NONE
#define A 0x7f1000000000ull /* recorded mapping addresses */
#define B 0x7f2000000000ull
#define C 0x7f3000000000ull
#define D 0x7f4000000000ull
#define E 0x7f5000000000ull
#define HEAP 0x555500000000ull
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define RW (PROT_READ | PROT_WRITE)

#define SC(t, th, op, res, ...) tw_sc(t, 0, th, VMT_OP_##op, res, __VA_ARGS__)

static int expect_divergences;

static void show(const struct rp_run_result *r)
{
	if (expect_divergences)
		return;
	for (uint32_t i = 0; i < r->ndiv_shown; i++)
		fprintf(stderr, "divergence: event %llu: %s; replayed %lld\n",
			(unsigned long long)r->div[i].event, r->div[i].text,
			(long long)r->div[i].replayed);
}

/* Load and replay path with o; return the loaded trace (for checks). */
static rp_trace *replay(const char *path, const struct rp_options *o, struct rp_run_result *r)
{
	char msg[512];
	rp_trace *t;
	int rc = rp_trace_load(path, o, &t, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "load: %s\n", msg);
	assert_int_equal(rc, 0);
	rc = rp_run(t, o, r, msg, sizeof(msg));
	if (rc)
		fprintf(stderr, "run: %s\n", msg);
	assert_int_equal(rc, 0);
	show(r);
	return t;
}

static void opts(struct rp_options *o)
{
	rp_options_default(o);
	o->max_memory = 1ull << 30;
}

/* replay(), and check that the replay did not diverge. */
static rp_trace *replay_clean(const char *path, const struct rp_options *o,
			      struct rp_run_result *r)
{
	rp_trace *t = replay(path, o, r);
	assert_int_equal(r->divergences, 0);
	return t;
}

/* Free a replay's result and its loaded trace. */
static void release(struct rp_run_result *r, rp_trace *tr)
{
	rp_run_result_free(r);
	rp_trace_free(tr);
}

/* A new trace (tw_open) with the start of every synthetic process: a
 * binary, a heap, a stack. */
static void begin(struct tw *t)
{
	static const struct tw_map m[] = {
		{0x555400000000ull, 0x555400002000ull, VMT_PROT_R, "/usr/bin/app"},
		{0x555400002000ull, 0x555400004000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app"},
		{0x555400004000ull, 0x555400005000ull, VMT_PROT_R | VMT_PROT_W, "/usr/bin/app"},
		{HEAP, HEAP + 4 * P, VMT_PROT_R | VMT_PROT_W, "[heap]"},
		{0x7ffd00000000ull, 0x7ffd00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
		{0x7ffd00030000ull, 0x7ffd00032000ull, VMT_PROT_R | VMT_PROT_X, "[vdso]"},
	};
	tw_open(t);
	tw_proc(t, 0, N, 0, N);
	tw_maps(t, 0, 0, m, sizeof(m) / sizeof(m[0]));
}

/* The end of a one-process trace: its main thread exits, the trace is
 * closed. */
static void finish(struct tw *t)
{
	tw_thread_exit(t, 0, 0);
	tw_close(t);
}

static void test_every_op(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;
	unsigned char vec[8];
	(void)vec;

	begin(&t);
	/* mmap, touch, discard, split and merge by mprotect, punch. */
	SC(&t, 0, MMAP, A, 0, 16 * P, RW, ANON, (uint64_t)-1, 0);
	tw_touch(&t, 0, 0, A, 16, VMT_PAGE_WRITTEN);
	SC(&t, 0, MADVISE, 0, A, 16 * P, MADV_DONTNEED, 0, 0, 0);
	SC(&t, 0, MPROTECT, 0, A + 4 * P, 4 * P, PROT_READ, 0, 0, 0);
	SC(&t, 0, MPROTECT, 0, A, 16 * P, RW, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, A + 8 * P, 2 * P, 0, 0, 0, 0);
	/* Across the hole: applied up to it, then ENOMEM. */
	SC(&t, 0, MPROTECT, -ENOMEM, A + 7 * P, 4 * P, PROT_READ, 0, 0, 0);
	SC(&t, 0, MADVISE, -ENOMEM, A + 6 * P, 6 * P, MADV_WILLNEED, 0, 0, 0);
	SC(&t, 0, MUNMAP, -EINVAL, A + 3, P, 0, 0, 0, 0);
	SC(&t, 0, MADVISE, -EINVAL, A, P, 12345, 0, 0, 0);
	SC(&t, 0, MLOCK, 0, A, 4 * P, 0, 0, 0, 0);
	SC(&t, 0, MUNLOCK, 0, A, 4 * P, 0, 0, 0, 0);
	SC(&t, 0, MLOCK2, 0, A + 1, 4 * P, MLOCK_ONFAULT, 0, 0, 0);
	SC(&t, 0, MUNLOCK, 0, A, 5 * P, 0, 0, 0, 0);
	SC(&t, 0, MINCORE, 0, A, 4 * P, 0x1000, 0, 0, 0);
	SC(&t, 0, MINCORE, -ENOMEM, A + 8 * P, P, 0x1000, 0, 0, 0);
	SC(&t, 0, MSYNC, 0, A, 4 * P, MS_ASYNC, 0, 0, 0);
	SC(&t, 0, PKEY_MPROTECT, 0, A, 2 * P, PROT_READ, (uint64_t)-1, 0, 0);
	SC(&t, 0, REMAP_FILE_PAGES, -EINVAL, A, P, 0, 0, 0, 0);
	SC(&t, 0, MLOCKALL, 0, MCL_CURRENT | MCL_ONFAULT, 0, 0, 0, 0, 0);
	SC(&t, 0, MUNLOCKALL, 0, 0, 0, 0, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, A, 16 * P, 0, 0, 0, 0); /* two pieces and a gap */
	SC(&t, 0, MUNMAP, 0, A, 16 * P, 0, 0, 0, 0); /* all gap */
	/* Sealing, then the seal holds. */
	SC(&t, 0, MMAP, B, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	SC(&t, 0, MSEAL, 0, B, 4 * P, 0, 0, 0, 0);
	SC(&t, 0, MUNMAP, -EPERM, B, 4 * P, 0, 0, 0, 0);
	/* Ops the replay cannot reproduce are skipped, not failed. */
	SC(&t, 0, PROCESS_MADVISE, 0, 3, 0x1000, 1, MADV_COLD, 0, 0);
	SC(&t, 0, SHMAT, (int64_t)C, 5, 0, 0, 0, 0, 0);
	SC(&t, 0, SHMDT, 0, C, 0, 0, 0, 0, 0);
	/* A recorded mmap failure that this machine reproduces. */
	SC(&t, 0, MMAP, -EINVAL, 0, 0, RW, ANON, (uint64_t)-1, 0);
	tw_thread_exit(&t, 0, 0);
	tw_proc_exit(&t, 0, 0);
	tw_close(&t);

	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 16);
	assert_int_equal(r.ops[VMT_OP_MMAP].count, 3);
	assert_int_equal(r.ops[VMT_OP_MUNMAP].count, 5);
	assert_int_equal(r.ops[VMT_OP_MUNMAP].errors, 2);
	assert_int_equal(r.ops[VMT_OP_MPROTECT].count, 3);
	assert_int_equal(r.ops[VMT_OP_MPROTECT].errors, 1);
	assert_int_equal(r.ops[VMT_OP_MINCORE].errors, 1);
	assert_int_equal(r.ops[VMT_OP_MSEAL].count, 1);
	assert_int_equal(r.ops[VMT_OP_MLOCKALL].count, 1);
	assert_int_equal(r.skipped, 3);
	assert_int_equal(r.events, 26);
	assert_int_equal(tr->nops, 26);
	assert_true(r.minor_faults >= 16);
	assert_true(r.wall_ns > 0);
	release(&r, tr);
	tw_remove(&t);
}

/* mremap: grow with a move, shrink in place, move onto part of another
 * region (MREMAP_FIXED), DONTUNMAP; MAP_FIXED replacing part of a region. */
static void test_remap_and_fixed(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;

	begin(&t);
	SC(&t, 0, MMAP, A, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
	SC(&t, 0, MREMAP, B, A, 4 * P, 8 * P, MREMAP_MAYMOVE, 0, 0);
	tw_touch(&t, 0, 0, B, 8, VMT_PAGE_WRITTEN);
	SC(&t, 0, MADVISE, 0, B, 8 * P, MADV_DONTNEED, 0, 0, 0);
	SC(&t, 0, MREMAP, B, B, 8 * P, 2 * P, 0, 0, 0); /* shrink */
	SC(&t, 0, MUNMAP, 0, A, 4 * P, 0, 0, 0, 0);	/* the old place: gone */
	SC(&t, 0, MMAP, C, 0, 8 * P, RW, ANON, (uint64_t)-1, 0);
	SC(&t, 0, MREMAP, C + 2 * P, B, 2 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_FIXED, C + 2 * P, 0);
	tw_touch(&t, 0, 0, C, 8, VMT_PAGE_WRITTEN);
	SC(&t, 0, MADVISE, 0, C, 8 * P, MADV_DONTNEED, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, B, 2 * P, 0, 0, 0, 0); /* moved away: nothing */
	/* DONTUNMAP keeps the source mapped (empty). */
	SC(&t, 0, MREMAP, D, C, 2 * P, 2 * P, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0, 0);
	tw_touch(&t, 0, 0, D, 2, VMT_PAGE_WRITTEN);
	SC(&t, 0, MUNMAP, 0, D, 2 * P, 0, 0, 0, 0);
	/* MAP_FIXED over the middle of C, then the whole range as one. */
	SC(&t, 0, MMAP, C + 3 * P, C + 3 * P, 2 * P, PROT_NONE, ANON | MAP_FIXED, (uint64_t)-1, 0);
	SC(&t, 0, MPROTECT, 0, C, 8 * P, PROT_READ, 0, 0, 0);
	SC(&t, 0, MPROTECT, 0, C, 8 * P, RW, 0, 0, 0);
	tw_touch(&t, 0, 0, C, 8, VMT_PAGE_WRITTEN);
	SC(&t, 0, MUNMAP, 0, C, 8 * P, 0, 0, 0, 0);
	/* MAP_FIXED where nothing was mapped: a new region. */
	SC(&t, 0, MMAP, D + 16 * P, D + 16 * P, 2 * P, RW, ANON | MAP_FIXED, (uint64_t)-1, 0);
	tw_touch(&t, 0, 0, D + 16 * P, 2, VMT_PAGE_WRITTEN);
	SC(&t, 0, MUNMAP, 0, D + 16 * P, 2 * P, 0, 0, 0, 0);
	/* Failing mremap of an unmapped range. */
	SC(&t, 0, MREMAP, -EFAULT, A, P, 2 * P, MREMAP_MAYMOVE, 0, 0);
	finish(&t);

	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 4 + 8 + 8 + 2 + 8 + 2);
	assert_int_equal(r.ops[VMT_OP_MREMAP].count, 5);
	assert_int_equal(r.ops[VMT_OP_MREMAP].errors, 1);
	assert_int_equal(r.touch_faults, 0);
	release(&r, tr);

	/* The same with the recorded addresses (free in this process). */
	o.placement = RP_PLACE_EXACT;
	tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.fallbacks, 0);
	release(&r, tr);
	tw_remove(&t);
}

/* A temporary file of len bytes 'x' (path: a mkstemp template, filled
 * in); its descriptor, and its stat in *st. */
static int x_file(char *path, size_t len, struct stat *st)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	char buf[4096];
	memset(buf, 'x', sizeof(buf));
	for (size_t n = 0; n < len; n += sizeof(buf)) {
		size_t k = len - n < sizeof(buf) ? len - n : sizeof(buf);
		assert_int_equal(write(fd, buf, k), (ssize_t)k);
	}
	assert_int_equal(fstat(fd, st), 0);
	return fd;
}

/* A recorded touch the replay's mapping does not allow traps (a trace is
 * untrusted: here pages of a --files=original mapping beyond the end of
 * its 1-page file, SIGBUS); the replayer counts it, skips the rest of that
 * element's touches, still replays its call, and goes on. */
static void test_touch_traps(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;
	char path[] = "/tmp/rptw-small.XXXXXX";
	struct stat st;
	close(x_file(path, P, &st));

	begin(&t);
	tw_file(&t, 0, 0, path, (uint64_t)st.st_ino, P, O_RDWR);
	SC(&t, 0, MMAP, A, 0, 4 * P, RW, MAP_PRIVATE, 3, 0);
	SC(&t, 0, MMAP, B, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_touch(&t, 0, 0, B, 2, VMT_PAGE_WRITTEN);	    /* before the trap: done */
	tw_touch(&t, 0, 0, A + 2 * P, 2, VMT_PAGE_WRITTEN); /* beyond the end */
	tw_touch(&t, 0, 0, B + 3 * P, 1, VMT_PAGE_WRITTEN); /* skipped */
	SC(&t, 0, MADVISE, 0, B, 4 * P, MADV_DONTNEED, 0, 0, 0);
	for (int i = 0; i < 3; i++) {
		tw_touch(&t, 0, 0, A + P, 1, VMT_PAGE_PRESENT); /* a read beyond */
		SC(&t, 0, MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
		tw_touch(&t, 0, 0, A, 1, VMT_PAGE_WRITTEN);
		tw_touch(&t, 0, 0, B, 4, VMT_PAGE_WRITTEN);
		SC(&t, 0, MADVISE, 0, B, 4 * P, MADV_DONTNEED, 0, 0, 0);
	}
	SC(&t, 0, MUNMAP, 0, A, 4 * P, 0, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, B, 4 * P, 0, 0, 0, 0);
	finish(&t);

	opts(&o);
	o.files = RP_FILES_ORIGINAL;
	rp_trace *tr;
	/* On the short path, then off it (any pacing takes every element
	 * there; a speed this high adds no waiting). */
	for (int slow = 0; slow < 2; slow++) {
		o.speed = slow ? 1e6 : 0;
		tr = replay_clean(t.path, &o, &r);
		uint32_t small = 0;
		for (uint32_t i = 0; i < tr->nfiles; i++)
			small += !strcmp(tr->files[i].path, path) && tr->files[i].original;
		assert_int_equal(small, 1);
		assert_int_equal(r.touch_faults, 4);
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 7);
		assert_int_equal(r.ops[VMT_OP_MUNMAP].count, 2);
		assert_int_equal(r.touched_pages, 2 + 3 * (1 + 4));
		release(&r, tr);
	}
	tw_remove(&t);

	/* A trap in an element another thread waits for: it still posts
	 * (else the main thread's munmap would wait forever: the alarm). */
	begin(&t);
	tw_file(&t, 0, 0, path, (uint64_t)st.st_ino, P, O_RDWR);
	SC(&t, 0, MMAP, A, 0, 4 * P, RW, MAP_PRIVATE, 3, 0);
	SC(&t, 0, MMAP, B, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_thread(&t, 0, 1, 0);
	tw_touch(&t, 0, 1, A + 2 * P, 1, VMT_PAGE_WRITTEN);
	SC(&t, 1, MADVISE, 0, B, 4 * P, MADV_DONTNEED, 0, 0, 0);
	tw_thread_exit(&t, 0, 1);
	SC(&t, 0, MUNMAP, 0, B, 4 * P, 0, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, A, 4 * P, 0, 0, 0, 0);
	finish(&t);
	o.speed = 0;
	alarm(20);
	tr = replay_clean(t.path, &o, &r);
	alarm(0);
	const struct rp_elem *mad = NULL;
	for (uint32_t i = 0; i < tr->threads[1].nelem; i++)
		if (tr->threads[1].elem[i].op == VMT_OP_MADVISE)
			mad = &tr->threads[1].elem[i];
	assert_non_null(mad);
	assert_true(mad->flags & RF_POST);
	assert_int_equal(r.touch_faults, 1);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 1);
	assert_int_equal(r.ops[VMT_OP_MUNMAP].count, 2);
	release(&r, tr);
	tw_remove(&t);
	unlink(path);
}

/* --speed=F honours the recorded gaps (divided by F), --speed=max
 * (0) does not: the second madvise and the munmap each came 60 ms after
 * the op before, and each gap is a sleep of the replay thread (one
 * voluntary context switch; the thread's end alone, paced, would catch
 * up with one sleep). */
static void test_speed(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;

	begin(&t);
	SC(&t, 0, MMAP, A, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	for (int i = 0; i < 2; i++) {
		tw_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
		SC(&t, 0, MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
		t.ts += 60000000;
	}
	SC(&t, 0, MUNMAP, 0, A, 4 * P, 0, 0, 0, 0);
	finish(&t);

	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_true(r.wall_ns < 60000000);
	assert_int_equal(r.touched_pages, 8);
	release(&r, tr);

	o.speed = 1;
	tr = replay_clean(t.path, &o, &r);
	assert_true(r.wall_ns >= 120000000);
	assert_int_equal(r.nthreads, 1);
	assert_true(r.threads[0].voluntary_cs >= 2);
	assert_int_equal(r.touched_pages, 8);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 2);
	release(&r, tr);

	o.speed = 4; /* a quarter of the gaps */
	tr = replay_clean(t.path, &o, &r);
	assert_true(r.wall_ns >= 30000000 && r.wall_ns < 120000000);
	release(&r, tr);
	tw_remove(&t);
}

/* brk on the emulated heap; stand-ins for snapshot mappings ops use. */
static void test_brk_and_standins(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;

	begin(&t);
	SC(&t, 0, BRK, (int64_t)(HEAP + 4 * P), 0, 0, 0, 0, 0, 0);
	SC(&t, 0, BRK, (int64_t)(HEAP + 20 * P + 100), HEAP + 20 * P + 100, 0, 0, 0, 0, 0);
	tw_touch(&t, 0, 0, HEAP, 21, VMT_PAGE_WRITTEN);
	SC(&t, 0, BRK, (int64_t)(HEAP + 8 * P), HEAP + 8 * P, 0, 0, 0, 0, 0);
	SC(&t, 0, BRK, (int64_t)(HEAP + 8 * P), 1, 0, 0, 0, 0, 0); /* below start: fails */
	SC(&t, 0, BRK, (int64_t)(HEAP + 8 * P), 0, 0, 0, 0, 0, 0);
	/* Ops on the binary and the stack from the snapshot. */
	SC(&t, 0, MPROTECT, 0, 0x555400004000ull, P, PROT_READ, 0, 0, 0);
	tw_touch(&t, 0, 0, 0x7ffd00020000ull, 1, VMT_PAGE_WRITTEN);
	tw_touch(&t, 0, 0, 0x555400000000ull, 2, VMT_PAGE_PRESENT);
	SC(&t, 0, MADVISE, 0, 0x7ffd00000000ull, 0x21000, MADV_DONTNEED, 0, 0, 0);
	SC(&t, 0, MADVISE, 0, 0x555400000000ull, 4 * P, MADV_WILLNEED, 0, 0, 0);
	finish(&t);

	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.ops[VMT_OP_BRK].count, 5);
	assert_int_equal(r.touched_pages, 21 + 1 + 2);
	assert_int_equal(r.touch_faults, 0);
	release(&r, tr);
	tw_remove(&t);
}

/* File mappings: scratch by default; --files=original maps the real file
 * read-only and never changes it. */
static void test_files(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;
	char path[] = "/tmp/rptw-file.XXXXXX";
	char buf[3 * 4096];
	memset(buf, 'x', sizeof(buf));
	struct stat st0;
	int fd = x_file(path, sizeof(buf), &st0);

	begin(&t);
	tw_file(&t, 0, 0, path, (uint64_t)st0.st_ino, sizeof(buf), O_RDWR);
	SC(&t, 0, MMAP, A, 0, 3 * P, RW, MAP_PRIVATE, 3, 0);
	tw_touch(&t, 0, 0, A, 3, VMT_PAGE_WRITTEN);
	tw_file(&t, 0, 0, "/gone/away.db", 99, 8 * P, O_RDWR);
	SC(&t, 0, MMAP, B, 0, 8 * P, RW, MAP_SHARED, 4, 0);
	tw_touch(&t, 0, 0, B, 8, VMT_PAGE_WRITTEN);
	SC(&t, 0, MSYNC, 0, B, 8 * P, MS_SYNC, 0, 0, 0);
	tw_file(&t, 0, 0, path, (uint64_t)st0.st_ino, sizeof(buf), O_RDONLY);
	SC(&t, 0, MMAP, C, 0, P, PROT_READ, MAP_SHARED, 5, P);
	tw_touch(&t, 0, 0, C, 1, VMT_PAGE_PRESENT);
	/* A shared mapping of a read-only fd cannot become writable. */
	SC(&t, 0, MPROTECT, -EACCES, C, P, RW, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, A, 3 * P, 0, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, B, 8 * P, 0, 0, 0, 0);
	SC(&t, 0, MUNMAP, 0, C, P, 0, 0, 0, 0);
	finish(&t);

	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 12);
	assert_int_equal(r.touch_faults, 0);
	release(&r, tr);

	o.files = RP_FILES_ORIGINAL;
	tr = replay_clean(t.path, &o, &r);
	for (uint32_t i = 0; i < tr->nfiles; i++) {
		if (!strcmp(tr->files[i].path, path))
			assert_int_equal(tr->files[i].original, 1); /* same size, read-only */
		else
			assert_int_equal(tr->files[i].original, 0); /* missing */
	}
	release(&r, tr);

	/* The real file is untouched. */
	char back[sizeof(buf)];
	assert_int_equal(pread(fd, back, sizeof(back), 0), (ssize_t)sizeof(back));
	assert_memory_equal(back, buf, sizeof(buf));
	struct stat st1;
	fstat(fd, &st1);
	assert_int_equal(st1.st_mtim.tv_sec, st0.st_mtim.tv_sec);
	assert_int_equal(st1.st_mtim.tv_nsec, st0.st_mtim.tv_nsec);
	close(fd);
	unlink(path);
	tw_remove(&t);
}

/* SysV shared memory: each attach maps the segment (a memfd stands in),
 * a read-only attach cannot be made writable, SHM_REMAP replaces a
 * mapping, shmdt unmaps; an attach without the segment's identity is
 * skipped. */
static void test_shm(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;

	begin(&t);
	tw_file(&t, 0, 0, "shm:7", 7, 4 * P, O_RDWR);
	SC(&t, 0, SHMAT, (int64_t)C, 7, 0, 0, 0, 0, 0);
	tw_touch(&t, 0, 0, C, 4, VMT_PAGE_WRITTEN);
	tw_file(&t, 0, 0, "shm:7", 7, 4 * P, O_RDONLY);
	SC(&t, 0, SHMAT, (int64_t)D, 7, 0, SHM_RDONLY, 0, 0, 0);
	tw_touch(&t, 0, 0, D, 4, VMT_PAGE_READ);
	SC(&t, 0, MPROTECT, -EACCES, D, 4 * P, RW, 0, 0, 0);
	SC(&t, 0, MMAP, (int64_t)E, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_file(&t, 0, 0, "shm:7", 7, 4 * P, O_RDWR);
	SC(&t, 0, SHMAT, (int64_t)E, 7, E, SHM_REMAP, 0, 0, 0);
	tw_touch(&t, 0, 0, E, 4, VMT_PAGE_WRITTEN);
	/* No identity (the recorder could not stat the segment): skipped. */
	SC(&t, 0, SHMAT, -EINVAL, 99, 0, 0, 0, 0, 0);
	/* A neighbour right after the first attach, and a detach whose
	 * segment size is stale (the recorder's table): only the attach's own
	 * mapping goes. */
	SC(&t, 0, MMAP, (int64_t)(C + 4 * P), 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_file(&t, 0, 0, "shm:7", 7, 8 * P, O_RDWR);
	SC(&t, 0, SHMDT, 0, C, 0, 0, 0, 0, 0);
	SC(&t, 0, MPROTECT, 0, C + 4 * P, 4 * P, PROT_READ, 0, 0, 0);
	tw_file(&t, 0, 0, "shm:7", 7, 4 * P, O_RDONLY);
	SC(&t, 0, SHMDT, 0, D, 0, 0, 0, 0, 0);
	tw_file(&t, 0, 0, "shm:7", 7, 4 * P, O_RDWR);
	SC(&t, 0, SHMDT, 0, E, 0, 0, 0, 0, 0);
	/* Detached: the range is free again. */
	SC(&t, 0, MPROTECT, -ENOMEM, C, P, PROT_READ, 0, 0, 0);
	finish(&t);

	opts(&o);
	for (int place = 0; place < 2; place++) {
		o.placement = place ? RP_PLACE_EXACT : RP_PLACE_KERNEL;
		rp_trace *tr = replay_clean(t.path, &o, &r);
		assert_int_equal(r.ops[VMT_OP_SHMAT].count, 3);
		assert_int_equal(r.ops[VMT_OP_SHMDT].count, 3);
		assert_int_equal(r.ops[VMT_OP_MPROTECT].count, 3);
		assert_int_equal(r.ops[VMT_OP_MPROTECT].errors, 2);
		assert_int_equal(r.skipped, 1);
		assert_int_equal(r.touched_pages, 12);
		assert_int_equal(r.touch_faults, 0);
		uint32_t segs = 0; /* one segment, however attached */
		for (uint32_t i = 0; i < tr->nfiles; i++)
			segs += tr->files[i].shm;
		assert_int_equal(segs, 1);
		release(&r, tr);
	}
	tw_remove(&t);
}

/* Three threads: two work on halves of the main thread's region, which
 * the main thread unmaps at the end. */
static void threads_trace(struct tw *t, int rounds)
{
	begin(t);
	SC(t, 0, MMAP, A, 0, 8 * P, RW, ANON, (uint64_t)-1, 0);
	tw_thread(t, 0, 1, 0);
	tw_thread(t, 0, 2, 0);
	for (int i = 0; i < rounds; i++) {
		tw_touch(t, 0, 1, A, 4, VMT_PAGE_WRITTEN);
		SC(t, 1, MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
		tw_touch(t, 0, 2, A + 4 * P, 4, VMT_PAGE_WRITTEN);
		SC(t, 2, MADVISE, 0, A + 4 * P, 4 * P, MADV_DONTNEED, 0, 0, 0);
	}
	tw_thread_exit(t, 0, 1);
	SC(t, 0, MPROTECT, 0, A, 8 * P, PROT_READ, 0, 0, 0);
	tw_touch(t, 0, 0, A, 8, VMT_PAGE_READ);
	SC(t, 0, MUNMAP, 0, A, 8 * P, 0, 0, 0, 0);
	tw_thread_exit(t, 0, 2);
	finish(t);
}

static void test_thread_orders(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;
	threads_trace(&t, 200);

	opts(&o);
	/* resource: the halves are independent; the mprotect waits for
	 * thread 1's end and thread 2's last madvise. */
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.nthreads, 3);
	assert_int_equal(r.touched_pages, 200 * 8 + 8);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 400);
	const struct rp_elem *mp = NULL;
	for (uint32_t i = 0; i < tr->threads[0].nelem; i++)
		if (tr->threads[0].elem[i].op == VMT_OP_MPROTECT)
			mp = &tr->threads[0].elem[i];
	assert_non_null(mp);
	assert_int_equal(mp->ndeps, 2);
	/* No madvise of thread 1 waits for thread 2, or the reverse. */
	for (uint32_t i = 0; i < tr->threads[1].nelem; i++)
		for (uint32_t d = 0; d < tr->threads[1].elem[i].ndeps; d++)
			assert_int_not_equal(tr->deps[tr->threads[1].elem[i].dep0 + d].thread, 2);
	/* A thread posts its progress only after the elements others wait
	 * for: every waited-for element is marked and nothing else, here
	 * one of each worker (both for the mprotect), so the madvise loops
	 * post nothing until their ends. */
	for (uint32_t d = 0; d < tr->ndeps; d++)
		assert_true(tr->threads[tr->deps[d].thread].elem[tr->deps[d].seq - 1].flags & RF_POST);
	uint32_t posted[3] = {0, 0, 0};
	for (uint32_t th = 0; th < 3; th++)
		for (uint32_t i = 0; i < tr->threads[th].nelem; i++)
			posted[th] += !!(tr->threads[th].elem[i].flags & RF_POST);
	assert_int_equal(posted[1], 1);
	assert_int_equal(posted[2], 1);
	/* The loop's short path takes the one-piece range ops that neither
	 * wait nor post: every madvise of the workers but the first (it
	 * waits for the main thread's mmap) and the last (posted), and the
	 * main thread's munmap (its mprotect waits, its mmap is no range op). */
	uint32_t fast[3] = {0, 0, 0};
	for (uint32_t th = 0; th < 3; th++)
		for (uint32_t i = 0; i < tr->threads[th].nelem; i++) {
			const struct rp_elem *e = &tr->threads[th].elem[i];
			if (!(e->flags & RF_FAST))
				continue;
			fast[th]++;
			assert_true(e->kind == RK_SYSCALL && e->how == RX_RANGE && e->npieces == 1);
			assert_true(!e->ndeps && !(e->flags & (RF_POST | RF_RAW_LEN | RF_SAMPLE_VMAS)));
			/* Its piece inline, and its one touch (the madvise
			 * loops' 4 written pages, the munmap's 8 read ones). */
			const struct rp_piece *pc = &tr->pieces[e->piece0];
			assert_true(e->region == pc->region && e->off2 == pc->off && e->aux == pc->len);
			assert_true(e->flags & RF_TOUCH1);
			const struct rp_touch *tc = &tr->touches[e->touch0];
			assert_int_equal(e->ntouch, 1);
			assert_int_equal(e->region2, tc->region);
			assert_int_equal((uint64_t)e->tpage * tr->page_size, tc->off);
			assert_int_equal(e->arg, th ? 4 | RP_TOUCH_WRITE : 8);
		}
	assert_int_equal(fast[0], 1);
	assert_int_equal(fast[1], 198);
	assert_int_equal(fast[2], 198);
	release(&r, tr);

	/* strict: every switch between threads is a wait. */
	o.order = RP_ORDER_STRICT;
	tr = replay_clean(t.path, &o, &r);
	uint64_t waits = 0;
	for (uint32_t i = 0; i < r.nthreads; i++)
		waits += r.threads[i].waits;
	assert_true(tr->ndeps >= 400);
	assert_true(waits > 0);
	release(&r, tr);

	/* free: only the structural ops are ordered. */
	o.order = RP_ORDER_FREE;
	tr = replay_clean(t.path, &o, &r);
	for (uint32_t i = 0; i < tr->threads[1].nelem; i++)
		assert_true(tr->threads[1].elem[i].ndeps <= 1);
	release(&r, tr);

	/* --scale=2: two copies, each in its own regions. */
	o.order = RP_ORDER_RESOURCE;
	o.scale = 2;
	tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.nthreads, 6);
	assert_int_equal(r.ops[VMT_OP_MADVISE].count, 800);
	release(&r, tr);
	tw_remove(&t);
}

/* Two threads that sleep on one counter, for different elements: the
 * main thread madvises two ranges in turn, each of the others works on
 * one of them and waits (resource order) for the main thread's next
 * madvise of its range. */
static void two_sleepers_trace(struct tw *t, int rounds)
{
	begin(t);
	SC(t, 0, MMAP, A, 0, 8 * P, RW, ANON, (uint64_t)-1, 0);
	tw_thread(t, 0, 1, 0);
	tw_thread(t, 0, 2, 0);
	for (int i = 0; i < rounds; i++) {
		SC(t, 0, MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
		SC(t, 0, MADVISE, 0, A + 4 * P, 4 * P, MADV_DONTNEED, 0, 0, 0);
		tw_touch(t, 0, 1, A, 4, VMT_PAGE_WRITTEN);
		SC(t, 1, MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
		tw_touch(t, 0, 2, A + 4 * P, 4, VMT_PAGE_WRITTEN);
		SC(t, 2, MADVISE, 0, A + 4 * P, 4 * P, MADV_DONTNEED, 0, 0, 0);
	}
	tw_thread_exit(t, 0, 1);
	tw_thread_exit(t, 0, 2);
	SC(t, 0, MUNMAP, 0, A, 8 * P, 0, 0, 0, 0);
	finish(t);
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
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;
	threads_trace(&t, 3000);
	opts(&o);
	alarm(60);
	for (int run = 0; run < 20; run++) {
		o.order = run & 1 ? RP_ORDER_FREE : RP_ORDER_RESOURCE;
		rp_trace *tr = replay_clean(t.path, &o, &r);
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 6000);
		uint64_t wakes = 0;
		for (uint32_t i = 0; i < r.nthreads; i++)
			wakes += r.threads[i].wakes;
		assert_true(wakes <= 4);
		release(&r, tr);
	}
	tw_remove(&t);

	two_sleepers_trace(&t, 2000);
	o.order = RP_ORDER_RESOURCE;
	for (int run = 0; run < 5; run++) {
		rp_trace *tr = replay_clean(t.path, &o, &r);
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 8000);
		release(&r, tr);
	}
	tw_remove(&t);
	alarm(0);
}

/* An assertion that failed inside test_no_lost_wakeups left its alarm
 * set: it must not kill a later test. */
static int cancel_alarm(void **state)
{
	(void)state;
	alarm(0);
	return 0;
}

/* Op latencies are timed with the TSC where the kernel keeps time with it
 * and converted to nanoseconds against CLOCK_MONOTONIC; with
 * VMREPLAY_CLOCK=monotonic, with clock_gettime.  A thread doing nothing
 * but calls spends most of its busy time inside them: the ops' summed
 * latency must lie between a quarter of its busy time and all of it.  A
 * conversion left out (ticks of a clock above 1.3 GHz) or inverted fails
 * one bound; preemption lands inside and between calls alike. */
int rp_tsc_usable(void); /* replay/metrics.c */

static uint64_t op_time_sum(const struct rp_run_result *r)
{
	uint64_t sum = 0;
	for (unsigned op = 1; op < VMT_OP__COUNT; op++)
		sum += r->ops[op].count * r->ops[op].mean_ns;
	return sum;
}

static void test_op_clock(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;
	begin(&t);
	SC(&t, 0, MMAP, A, 0, P, RW, ANON, (uint64_t)-1, 0);
	for (int i = 0; i < 10000; i++) {
		SC(&t, 0, MPROTECT, 0, A, P, PROT_READ, 0, 0, 0);
		SC(&t, 0, MPROTECT, 0, A, P, RW, 0, 0, 0);
	}
	finish(&t);
	if (!rp_tsc_usable())
		fprintf(stderr, "(the clocksource is not tsc: both runs time with CLOCK_MONOTONIC)\n");
	opts(&o);
	for (int mono = 0; mono < 2; mono++) {
		if (mono)
			setenv("VMREPLAY_CLOCK", "monotonic", 1);
		rp_trace *tr = replay(t.path, &o, &r);
		unsetenv("VMREPLAY_CLOCK");
		assert_int_equal(r.nthreads, 1);
		uint64_t busy = r.threads[0].busy_ns, ops = op_time_sum(&r);
		fprintf(stderr, "%s: calls %" PRIu64 " ns of %" PRIu64 " ns busy\n",
			mono ? "monotonic" : "op clock", ops, busy);
		assert_true(ops <= busy);
		assert_true(ops >= busy / 4);
		assert_true(r.ops[VMT_OP_MPROTECT].p50_ns <= r.ops[VMT_OP_MPROTECT].max_ns);
		release(&r, tr);
	}
	tw_remove(&t);
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
	alarm(20);
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
static void vfork_trace(struct tw *t, uint32_t how, int exec)
{
	static const struct tw_map after_exec[] = {
		{0x561100000000ull, 0x561100003000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/other"},
		{0x7ffe00000000ull, 0x7ffe00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};
	begin(t);
	SC(t, 0, MMAP, A, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_proc_how(t, 1, 0, 1, 0, how);
	for (int i = 0; i < 300; i++) { /* the child's own work first */
		tw_touch(t, 1, 1, A, 4, VMT_PAGE_WRITTEN);
		tw_sc(t, 1, 1, VMT_OP_MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
	}
	if (exec) {
		tw_exec(t, 1, 1, "/usr/bin/other");
		tw_maps(t, 1, 1, after_exec, 2);
	}
	tw_proc_exit(t, 1, 1);
	SC(t, 0, MUNMAP, 0, A, 4 * P, 0, 0, 0, 0);
	tw_proc_exit(t, 0, 0);
	tw_close(t);
}

/* How many waits the elements of thread th have on thread u; *seq: the
 * element of u the last of them waits for (0: none). */
static uint32_t waits_on(const rp_trace *tr, uint32_t th, uint32_t u, uint32_t *seq)
{
	uint32_t n = 0;
	*seq = 0;
	for (uint32_t i = 0; i < tr->threads[th].nelem; i++) {
		const struct rp_elem *e = &tr->threads[th].elem[i];
		for (uint32_t d = 0; d < e->ndeps; d++)
			if (tr->deps[e->dep0 + d].thread == u) {
				n++;
				*seq = tr->deps[e->dep0 + d].seq;
			}
	}
	return n;
}

static void test_vfork_waits(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;

	alarm(60); /* a wait that never ends fails the test */
	for (int exec = 1; exec >= 0; exec--) {
		vfork_trace(&t, VMT_PROC_VFORK, exec);
		opts(&o);
		rp_trace *tr = replay_clean(t.path, &o, &r);
		assert_int_equal(tr->nprocs, 2);
		uint32_t parent = tr->procs[0].first_thread, child = tr->procs[1].first_thread;
		uint32_t waited; /* the child element the munmap waits for */
		waits_on(tr, parent, child, &waited);
		assert_true(waited > 0);
		const struct rp_elem *x = &tr->threads[child].elem[waited - 1];
		assert_int_equal(x->kind, exec ? RK_EXEC : RK_END);
		assert_true(x->flags & RF_POST);
		assert_int_equal(waited, 301); /* after its 300 madvises */
		assert_int_equal(r.ops[VMT_OP_MADVISE].count, 300);
		release(&r, tr);

		/* free order keeps the wait; a fork's parent does not wait. */
		o.order = RP_ORDER_FREE;
		tr = replay_clean(t.path, &o, &r);
		assert_int_equal(waits_on(tr, parent, child, &waited), 1);
		release(&r, tr);
		tw_remove(&t);
	}
	/* An exec by another thread of the child releases the parent too. */
	static const struct tw_map after[] = {
		{0x7ffe00000000ull, 0x7ffe00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};
	begin(&t);
	SC(&t, 0, MMAP, A, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_proc_how(&t, 1, 0, 1, 0, VMT_PROC_VFORK);
	tw_thread(&t, 1, 2, 1);
	tw_sc(&t, 1, 2, VMT_OP_MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
	tw_exec(&t, 1, 2, "/usr/bin/other");
	tw_maps(&t, 1, 2, after, 1);
	tw_proc_exit(&t, 1, 2);
	SC(&t, 0, MUNMAP, 0, A, 4 * P, 0, 0, 0, 0);
	tw_proc_exit(&t, 0, 0);
	tw_close(&t);
	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	uint32_t execer = tr->procs[1].first_thread + 1, waited;
	waits_on(tr, tr->procs[0].first_thread, execer, &waited);
	assert_true(waited > 0);
	assert_int_equal(tr->threads[execer].elem[waited - 1].kind, RK_EXEC);
	release(&r, tr);
	tw_remove(&t);

	vfork_trace(&t, VMT_PROC_FORK, 1);
	opts(&o);
	tr = replay_clean(t.path, &o, &r);
	assert_int_equal(waits_on(tr, tr->procs[0].first_thread, tr->procs[1].first_thread, &waited),
			 0);
	release(&r, tr);
	tw_remove(&t);
	alarm(0);
}

/* A forked child with its own thread and an exec; both processes use the
 * inherited mapping. */
static void test_processes(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;
	static const struct tw_map after_exec[] = {
		{0x561100000000ull, 0x561100003000ull, VMT_PROT_R | VMT_PROT_X, "/usr/bin/other"},
		{0x561100003000ull, 0x561100004000ull, VMT_PROT_R | VMT_PROT_W, "/usr/bin/other"},
		{0x7ffe00000000ull, 0x7ffe00021000ull, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	};

	begin(&t);
	SC(&t, 0, MMAP, A, 0, 4 * P, RW, ANON, (uint64_t)-1, 0);
	tw_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
	tw_proc(&t, 1, 0, 1, 0); /* fork */
	tw_sc(&t, 1, 1, VMT_OP_MADVISE, 0, A, 4 * P, MADV_DONTNEED, 0, 0, 0);
	tw_thread(&t, 1, 2, 1);
	tw_sc(&t, 1, 2, VMT_OP_MMAP, (int64_t)B, 0, 2 * P, RW, ANON, (uint64_t)-1, 0);
	tw_touch(&t, 1, 2, B, 2, VMT_PAGE_WRITTEN);
	tw_sc(&t, 1, 2, VMT_OP_MUNMAP, 0, B, 2 * P, 0, 0, 0, 0);
	tw_thread_exit(&t, 1, 2);
	tw_touch(&t, 0, 0, A, 4, VMT_PAGE_WRITTEN);
	SC(&t, 0, MUNMAP, 0, A, 4 * P, 0, 0, 0, 0);
	tw_exec(&t, 1, 1, "/usr/bin/other");
	tw_maps(&t, 1, 1, after_exec, 3);
	tw_sc(&t, 1, 1, VMT_OP_MUNMAP, 0, A, 4 * P, 0, 0, 0, 0); /* gone with the exec */
	tw_sc(&t, 1, 1, VMT_OP_MPROTECT, 0, 0x561100003000ull, P, PROT_READ, 0, 0, 0);
	tw_touch(&t, 1, 1, 0x7ffe00020000ull, 1, VMT_PAGE_WRITTEN);
	tw_proc_exit(&t, 1, 1);
	tw_proc_exit(&t, 0, 0);
	tw_close(&t);

	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_int_equal(tr->nprocs, 2);
	assert_int_equal(r.nthreads, 3);
	int child_threads = 0;
	for (uint32_t i = 0; i < r.nthreads; i++)
		child_threads += r.threads[i].proc == 1;
	assert_int_equal(child_threads, 2);
	assert_int_equal(r.touched_pages, 4 + 2 + 4 + 1);
	assert_int_equal(r.touch_faults, 0);
	release(&r, tr);

	o.order = RP_ORDER_STRICT;
	tr = replay_clean(t.path, &o, &r);
	release(&r, tr);
	tw_remove(&t);
}

/* A replay that cannot do what was recorded reports it. */
static void test_divergences(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;

	begin(&t);
	for (int i = 0; i < 12; i++) /* "failed" there, works here */
		SC(&t, 0, MMAP, -ENOMEM, 0, P, RW, ANON, (uint64_t)-1, 0);
	SC(&t, 0, MADVISE, 0, A, P, MADV_DONTNEED, 0, 0, 0); /* nothing mapped */
	finish(&t);

	opts(&o);
	expect_divergences = 1;
	rp_trace *tr = replay(t.path, &o, &r);
	expect_divergences = 0;
	assert_int_equal(r.divergences, 13);
	assert_int_equal(r.ndiv_shown, RP_DIV_SHOWN);
	assert_int_equal(r.div_by_op[VMT_OP_MMAP], 12);
	assert_int_equal(r.div_by_op[VMT_OP_MADVISE], 1);
	assert_non_null(strstr(r.div[0].text, "mmap(NULL, 4096"));
	assert_non_null(strstr(r.div[0].text, "ENOMEM"));
	assert_true(r.div[0].replayed > 0);
	assert_true(r.div[0].event < r.div[1].event);
	release(&r, tr);
	tw_remove(&t);
}

/* --touch=faults traces: each fault in order, read as read. */
static void test_fault_touches(void **state)
{
	struct tw t;
	struct rp_options o;
	struct rp_run_result r;

	begin(&t);
	SC(&t, 0, MMAP, A, 0, 64 * P, RW, ANON, (uint64_t)-1, 0);
	for (int i = 0; i < 64; i++)
		tw_fault(&t, 0, 0, A + i * P + 8, VMT_FAULT_READ);
	for (int i = 0; i < 64; i++)
		tw_fault(&t, 0, 0, A + i * P + 16, VMT_FAULT_WRITE);
	SC(&t, 0, MUNMAP, 0, A, 64 * P, 0, 0, 0, 0);
	finish(&t);

	opts(&o);
	rp_trace *tr = replay_clean(t.path, &o, &r);
	assert_int_equal(r.touched_pages, 128);
	/* Read faults map the zero page, writes then copy: 2 per page. */
	assert_true(r.rusage_minor >= 128);
	release(&r, tr);
	tw_remove(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_op),
		cmocka_unit_test(test_remap_and_fixed),
		cmocka_unit_test_teardown(test_touch_traps, cancel_alarm),
		cmocka_unit_test(test_speed),
		cmocka_unit_test(test_brk_and_standins),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_shm),
		cmocka_unit_test(test_thread_orders),
		cmocka_unit_test_teardown(test_no_lost_wakeups, cancel_alarm),
		cmocka_unit_test(test_op_clock),
		cmocka_unit_test_teardown(test_fatal_ends_run, cancel_alarm),
		cmocka_unit_test_teardown(test_killed_ends_run, cancel_alarm),
		cmocka_unit_test(test_processes),
		cmocka_unit_test_teardown(test_vfork_waits, cancel_alarm),
		cmocka_unit_test(test_divergences),
		cmocka_unit_test(test_fault_touches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
