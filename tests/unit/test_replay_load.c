/*
 * test_replay_load.c - the replayer against bad and hostile traces:
 * truncated files, garbage, impossible results, absurd sizes, broken
 * thread structure (clean errors with a message); ops and touches on
 * unmapped addresses (replayed harmlessly, reported); and random op
 * streams, which must load and replay without ever crashing the replay.
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
#include "model.h"
#include "replay.h"
#include "rprun.h"

static void opts(struct rp_options *o)
{
	rp_options_default(o);
	o->max_memory = 256ull << 20;
}

/* Load must fail with a message containing `want`. */
static void load_fails(const char *path, const struct rp_options *o, const char *want)
{
	char msg[512] = "";
	rp_trace *t = (rp_trace *)1;
	int rc = rp_trace_load(path, o, &t, msg, sizeof(msg));
	if (rc == 0 || (want && !strstr(msg, want)))
		fprintf(stderr, "load of %s: rc %d, message '%s', wanted '%s'\n", path, rc, msg,
			want ? want : "");
	assert_true(rc < 0);
	assert_null(t);
	assert_true(msg[0] != 0);
	if (want)
		assert_non_null(strstr(msg, want));
}

static void small_trace(struct tg_trace *t)
{
	tg_trace_file(t);
	tg_proc(t, 0, 0, VMT_NONE, VMT_NONE);
	for (int i = 0; i < 50; i++) {
		TG_PUT_SC(t, 0, 0, VMT_OP_MMAP, (int64_t)(A + i * 16 * PAGE), 0, 4 * PAGE, RW,
			  PRIV_ANON, FD_NONE, 0);
		tg_touch(t, 0, 0, A + i * 16 * PAGE, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(t, 0, 0, VMT_OP_MUNMAP, 0, A + i * 16 * PAGE, 4 * PAGE);
	}
	tg_thread_exit(t, 0, 0);
	tg_finish(t);
}

static void test_truncated_and_garbage(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	opts(&o);
	small_trace(&t);
	FILE *f = fopen(t.path, "rb");
	assert_non_null(f);
	static char buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_true(len > 100);
	char cut[] = "/tmp/tgen-cut.XXXXXX";
	int fd = mkstemp(cut);
	assert_true(fd >= 0);
	/* Every prefix that ends inside the data is an error, never a crash. */
	for (size_t n = 0; n < len; n += (n < 200 ? 7 : 61)) {
		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
		load_fails(cut, &o, NULL);
	}
	/* Garbage, and a flipped byte in the middle. */
	memset(buf, 0x5a, 4096);
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, buf, 4096, 0), 4096);
	load_fails(cut, &o, NULL);
	close(fd);
	unlink(cut);
	load_fails("/nonexistent/trace.zst", &o, "No such file");
	tg_remove(&t);
}

static void test_impossible_results(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	opts(&o);

	/* An mmap "succeeding" at an unaligned address. */
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, (int64_t)(A + 12), 0, PAGE, RW, PRIV_ANON, FD_NONE, 0);
	tg_finish(&t);
	load_fails(t.path, &o, "not a possible mapping");
	tg_remove(&t);

	/* MAP_FIXED succeeding somewhere else than asked. */
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, (int64_t)A, A + PAGE, PAGE, RW, PRIV_ANON_FIXED, FD_NONE, 0);
	tg_finish(&t);
	load_fails(t.path, &o, "not a possible mapping");
	tg_remove(&t);

	/* brk below the heap it started. */
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, 0x555500100000ll, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_BRK, 0x555500000000ll, 0x555500000000ull);
	tg_finish(&t);
	load_fails(t.path, &o, "outside the heap");
	tg_remove(&t);
}

static void test_absurd_sizes(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	opts(&o);

	/* 64 TiB mapped and accessible: refused up front. */
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, 0x100000000000ll, 0, 1ull << 46, RW, PRIV_ANON, FD_NONE, 0);
	tg_finish(&t);
	load_fails(t.path, &o, "max-memory");
	tg_remove(&t);

	/* Many small mappings adding up; --scale multiplies. */
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	for (int i = 0; i < 40; i++) {
		TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, (int64_t)(A + (uint64_t)i * (8ull << 20)), 0,
			  8ull << 20, RW, PRIV_ANON, FD_NONE, 0);
		tg_touch(&t, 0, 0, A + (uint64_t)i * (8ull << 20), 2048, VMT_PAGE_WRITTEN);
	}
	tg_finish(&t);
	char msg[256];
	rp_trace *tr;
	o.max_memory = 1ull << 30; /* 320 MiB fit */
	assert_int_equal(rp_trace_load(t.path, &o, &tr, msg, sizeof(msg)), 0);
	rp_trace_free(tr);
	o.max_memory = 200ull << 20;
	load_fails(t.path, &o, "exceeds --max-memory");
	o.max_memory = 1ull << 30;
	o.scale = 8;
	load_fails(t.path, &o, "exceeds --max-memory");
	tg_remove(&t);

	/* PROT_NONE reservations cost nothing: accepted. */
	opts(&o);
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, 0x100000000000ll, 0, 1ull << 40, PROT_NONE,
		  PRIV_ANON | MAP_NORESERVE, FD_NONE, 0);
	tg_finish(&t);
	assert_int_equal(rp_trace_load(t.path, &o, &tr, msg, sizeof(msg)), 0);
	rp_trace_free(tr);
	tg_remove(&t);
}

static void test_bad_structure(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	opts(&o);

	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	tg_thread_exit(&t, 0, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, PAGE);
	tg_finish(&t);
	load_fails(t.path, &o, "after its exit");
	tg_remove(&t);

	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	TG_PUT_SC(&t, 7, 3, VMT_OP_MUNMAP, 0, A, PAGE);
	tg_finish(&t);
	load_fails(t.path, &o, "never started");
	tg_remove(&t);

	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	tg_thread(&t, 0, 0, VMT_NONE);
	tg_finish(&t);
	load_fails(t.path, &o, "started twice");
	tg_remove(&t);

	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	tg_proc(&t, 1, 1, 5, 0);
	tg_finish(&t);
	load_fails(t.path, &o, "unknown parent");
	tg_remove(&t);

	tg_trace_file(&t);
	tg_finish(&t);
	load_fails(t.path, &o, "no threads");
	tg_remove(&t);

	/* A second root process whose thread never starts: it has no place
	 * in the run (the run used to start it as thread "none" and crash;
	 * found by fuzz_replay). */
	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	tg_put(&t, tg_ev_process_start(1, 1, VMT_NONE, 1001, VMT_PROC_ROOT));
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A, PAGE);
	tg_thread_exit(&t, 0, 0);
	tg_finish(&t);
	load_fails(t.path, &o, "process 1 never had a thread");
	tg_remove(&t);
}

/* Ops and touches on addresses the trace never mapped replay on nothing
 * (the void) and are reported; nothing of the replayer is hit. */
static void test_unmapped_addresses(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	char msg[256];
	rp_trace *tr;
	opts(&o);

	tg_trace_file(&t);
	tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
	/* What a hostile trace might aim at: everything. */
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, 0, 1ull << 47);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MADVISE, 0, 0x1000, (1ull << 47) - 0x1000, MADV_DONTNEED);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MPROTECT, 0, 0x400000, 1ull << 40, PROT_NONE);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, 0x400000, 0x400000, PAGE, RW, PRIV_ANON_FIXED, FD_NONE, 0);
	tg_touch(&t, 0, 0, 0x400000, 1, VMT_PAGE_WRITTEN);
	tg_touch(&t, 0, 0, 0x7fff00000000ull, 1000, VMT_PAGE_WRITTEN);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, 0xffffffffffff0000ull, 0x20000);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MREMAP, (int64_t)A, 0x400000, PAGE, 2 * PAGE, MREMAP_MAYMOVE, 0);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MSYNC, 0, UINT64_MAX - PAGE + 1, PAGE, MS_SYNC);
	TG_PUT_SC(&t, 0, 0, VMT_OP_MLOCK, 0, 0x10, 1ull << 50);
	tg_thread_exit(&t, 0, 0);
	tg_finish(&t);
	assert_int_equal(rp_trace_load(t.path, &o, &tr, msg, sizeof(msg)), 0);
	assert_true(tr->touch_unmapped_pages >= 1000);
	assert_int_equal(rp_run(tr, &o, &r, msg, sizeof(msg)), 0);
	assert_true(r.divergences >= 3); /* what "succeeded" on nothing */
	assert_int_equal(r.touched_pages, 1);
	rp_run_result_free(&r);
	rp_trace_free(tr);
	tg_remove(&t);
}

/* Random op streams over a few overlapping addresses, with random
 * results: load errors are fine, crashes are not; a replay that loads must
 * run to its end (divergences are expected). */
static void test_random_streams(void **state)
{
	static const uint32_t ops[] = {
		VMT_OP_MMAP, VMT_OP_MMAP, VMT_OP_MUNMAP, VMT_OP_MPROTECT, VMT_OP_MADVISE,
		VMT_OP_MREMAP, VMT_OP_BRK, VMT_OP_MLOCK, VMT_OP_MUNLOCK, VMT_OP_MSYNC,
		VMT_OP_MINCORE, VMT_OP_MSEAL, VMT_OP_PKEY_MPROTECT, VMT_OP_MLOCK2};
	uint64_t rng = 0xfeedface12345678ull;
	struct rp_options o;
	opts(&o);
	int loaded = 0, rounds = getenv("RP_ROUNDS") ? atoi(getenv("RP_ROUNDS")) : 60;
	for (int round = 0; round < rounds; round++) {
		struct tg_trace t;
		tg_trace_file(&t);
		tg_proc(&t, 0, 0, VMT_NONE, VMT_NONE);
		int threads = 1 + (int)(tg_rand(&rng) % 3);
		for (int k = 1; k < threads; k++)
			tg_thread(&t, 0, (uint32_t)k, 0);
		for (int i = 0; i < 80; i++) {
			uint32_t op = ops[tg_rand(&rng) % (sizeof(ops) / sizeof(ops[0]))];
			uint32_t th = (uint32_t)(tg_rand(&rng) % (uint64_t)threads);
			uint64_t a = A + (tg_rand(&rng) % 32) * PAGE, len = (1 + tg_rand(&rng) % 8) * PAGE;
			uint64_t x = tg_rand(&rng);
			if (x % 7 == 0)
				a += x % 100; /* unaligned */
			int64_t res = x % 3 == 0 ? -(int64_t)(1 + x % 40) : 0;
			uint64_t a2 = tg_rand(&rng) % 8, a3 = tg_rand(&rng) % 64;
			if (op == VMT_OP_MMAP) {
				a2 = RW;
				a3 = PRIV_ANON | (x % 2 ? MAP_FIXED : 0);
				if (!res)
					res = (int64_t)a & ~(int64_t)(PAGE - 1);
				if (a3 & MAP_FIXED)
					a = (uint64_t)res;
			} else if (op == VMT_OP_MREMAP) {
				a3 = MREMAP_MAYMOVE;
				if (!res)
					res = (int64_t)(A + (tg_rand(&rng) % 64) * PAGE);
			} else if (op == VMT_OP_BRK) {
				a = 0x555500000000ull + (tg_rand(&rng) % 16) * PAGE;
				res = (int64_t)(x % 2 ? a : 0x555500000000ull);
			} else if (op == VMT_OP_MADVISE) {
				static const uint64_t adv[] = {MADV_DONTNEED, MADV_WILLNEED, MADV_FREE,
							       MADV_NORMAL, 100, 101, 12345};
				a2 = adv[tg_rand(&rng) % 7];
			}
			uint64_t args[] = {a, len, a2, a3, tg_rand(&rng) % 2 ? A : 0, 0};
			tg_put(&t, tg_ev_sc(0, th, op, res, vmt_op_info(op)->nargs, args));
			if (tg_rand(&rng) % 4 == 0)
				tg_touch(&t, 0, th, A + (tg_rand(&rng) % 32) * PAGE, 1 + tg_rand(&rng) % 4,
					 (uint32_t)(1 + tg_rand(&rng) % 3));
		}
		tg_finish(&t);
		char msg[512];
		rp_trace *tr;
		o.order = (int)(tg_rand(&rng) % 3);
		o.placement = (int)(tg_rand(&rng) % 2);
		if (rp_trace_load(t.path, &o, &tr, msg, sizeof(msg)) == 0) {
			struct rp_run_result r;
			loaded++;
			int rc = rp_run(tr, &o, &r, msg, sizeof(msg));
			if (rc)
				fprintf(stderr, "round %d: %s\n", round, msg);
			assert_int_equal(rc, 0);
			rp_run_result_free(&r);
			rp_trace_free(tr);
		} else {
			assert_true(msg[0] != 0);
		}
		tg_remove(&t);
	}
	assert_true(loaded > 10);
}

/* A trace that fits its window is loaded once, for every run: its file
 * can go.  A longer one is loaded again for each run (here the file is
 * emptied under it: the second run fails, cleanly). */
static void test_load_again(void **state)
{
	struct tg_trace t;
	struct rp_options o;
	struct rp_run_result r;
	char msg[512];
	(void)state;
	/* (with a MAPS snapshot: a run starts only once its root processes
	 * have theirs) */
	rr_begin(&t);
	for (int i = 0; i < 50; i++) {
		TG_PUT_SC(&t, 0, 0, VMT_OP_MMAP, (int64_t)(A + i * 16 * PAGE), 0, 4 * PAGE, RW,
			  PRIV_ANON, FD_NONE, 0);
		tg_touch(&t, 0, 0, A + i * 16 * PAGE, 4, VMT_PAGE_WRITTEN);
		TG_PUT_SC(&t, 0, 0, VMT_OP_MUNMAP, 0, A + i * 16 * PAGE, 4 * PAGE);
	}
	rr_finish(&t);
	for (int streamed = 0; streamed < 2; streamed++) {
		char copy[] = "/tmp/tgen-again.XXXXXX";
		int fd = mkstemp(copy), in = open(t.path, O_RDONLY);
		char buf[65536];
		ssize_t n;
		assert_true(fd >= 0 && in >= 0);
		while ((n = read(in, buf, sizeof(buf))) > 0)
			assert_int_equal(write(fd, buf, (size_t)n), n);
		close(in);
		close(fd);
		opts(&o);
		o.window = streamed ? 1 : 0;
		rp_trace *tr;
		assert_int_equal(rp_trace_load(copy, &o, &tr, msg, sizeof(msg)), 0);
		assert_int_equal(rp_run(tr, &o, &r, msg, sizeof(msg)), 0);
		assert_int_equal(r.events, 100);
		rp_run_result_free(&r);
		assert_int_equal(truncate(copy, 0), 0);
		msg[0] = 0;
		int rc = rp_run(tr, &o, &r, msg, sizeof(msg));
		if (streamed) {
			assert_true(rc < 0);
			assert_true(msg[0] != 0);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(r.events, 100);
			rp_run_result_free(&r);
		}
		rp_trace_free(tr);
		unlink(copy);
	}
	tg_remove(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncated_and_garbage),
		cmocka_unit_test(test_impossible_results),
		cmocka_unit_test(test_absurd_sizes),
		cmocka_unit_test(test_bad_structure),
		cmocka_unit_test(test_unmapped_addresses),
		cmocka_unit_test(test_random_streams),
		cmocka_unit_test(test_load_again),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
