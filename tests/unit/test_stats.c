/*
 * test_stats.c - the metrics of stats.c on synthetic traces written with
 * vmt_writer, whose counts and peaks are known by construction.
 *
 * Also a trace generator for tests/e2e/stat_diff.sh and benchmarks:
 *   test_stats --gen OUT MMAPS FREES [STACKS [LOOPS]]
 * writes a trace where one process maps MMAPS separate pages (a peak of
 * 3 + MMAPS VMAs), unmaps them, and calls madvise(MADV_FREE) FREES times;
 * with STACKS=1 the calls carry stacks from the sites "grow (app)",
 * "release (app)" and "trim (app)" (under a libc frame); then LOOPS rounds
 * of mprotect(RW) + mmap(PROT_NONE, MAP_FIXED) on one page (seed 000).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats.h"
#include "tgen.h"
#include "vmtrace.h"

#define A0 0x7f0000000000ull

/* Three mappings, like a tiny program's start: text, data, stack. */
static void snapshot(struct tg_trace *g, uint32_t proc)
{
	static const struct vmt_map_entry e[] = {
		{ 0x400000, 0x401000, 0, 0x801, 42, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app" },
		{ 0x600000, 0x602000, 0x1000, 0x801, 42, VMT_PROT_R | VMT_PROT_W, "/usr/bin/app" },
		{ 0x7ffffffde000, 0x7ffffffff000, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[stack]" },
	};
	tg_put(g, tg_ev_maps(proc, 0, 3, e));
}

static void symbols(struct tg_trace *g)
{
	static const char *const strs[] = { "/usr/lib/libc.so.6", "/usr/bin/app", "mmap",
					    "grow", "release", "trim" };
	for (uint32_t i = 0; i < 6; i++)
		tg_put(g, tg_ev_string(i, strs[i]));
	static const uint64_t ips[] = { 0x1000, 0x2000, 0x3000, 0x4000 };
	static const uint32_t mod[] = { 0, 1, 1, 1 }, fn[] = { 2, 3, 4, 5 };
	for (uint32_t i = 0; i < 4; i++)
		tg_put(g, tg_ev_symbol(ips[i], mod[i], fn[i], 0x10));
}

static void stacks(struct tg_trace *g)
{
	/* libc's mmap under each application site; ids 0, 1, 2 */
	static const uint64_t s0[] = { 0x1000, 0x2000 }, s1[] = { 0x1000, 0x3000 },
			      s2[] = { 0x1000, 0x4000 };
	static const uint64_t *const all[] = { s0, s1, s2 };
	for (uint32_t i = 0; i < 3; i++)
		tg_put(g, tg_ev_stack(i, 2, all[i]));
}

/* The trace of `test_stats --gen` in fd (the toolkit aborts on an error). */
static void gen_trace_loops(int fd, unsigned mmaps, unsigned frees, int with_stacks,
			    unsigned loops)
{
	struct vmt_header h;
	struct tg_trace g;
	tg_header(&h);
	tg_trace_open(&g, fd, &h);
	tg_put(&g, tg_ev_process_start(0, 0, VMT_NONE, 100, VMT_PROC_ROOT));
	tg_put(&g, tg_ev_thread_start(0, 0, VMT_NONE, 100));
	snapshot(&g, 0);
	if (with_stacks)
		stacks(&g);
	uint32_t st0 = with_stacks ? 0 : VMT_NONE, st1 = with_stacks ? 1 : VMT_NONE,
		 st2 = with_stacks ? 2 : VMT_NONE;
	for (unsigned i = 0; i < mmaps; i++)
		tg_put(&g, tg_with_stack(TG_SC(0, 0, VMT_OP_MMAP, (int64_t)(A0 + 2 * i * PAGE), 0, PAGE,
					       RW, PRIV_ANON, FD_NONE, 0), st0));
	for (unsigned i = 0; i < mmaps; i++)
		tg_put(&g,
		       tg_with_stack(TG_SC(0, 0, VMT_OP_MUNMAP, 0, A0 + 2 * i * PAGE, PAGE), st1));
	for (unsigned i = 0; i < frees; i++)
		tg_put(&g,
		       tg_with_stack(TG_SC(0, 0, VMT_OP_MADVISE, 0, 0x600000, PAGE, LX_MADV_FREE), st2));
	/* seed 000's old way of freeing a page, `loops` times */
	uint64_t L = A0 + (1ull << 30);
	if (loops)
		tg_put(&g, TG_SC(0, 0, VMT_OP_MMAP, (int64_t)L, 0, PAGE, 0, PRIV_ANON, FD_NONE, 0));
	for (unsigned i = 0; i < loops; i++) {
		tg_put(&g, TG_SC(0, 0, VMT_OP_MPROTECT, 0, L, PAGE, RW));
		tg_put(&g,
		       TG_SC(0, 0, VMT_OP_MMAP, (int64_t)L, L, PAGE, 0, PRIV_ANON_FIXED, FD_NONE, 0));
	}
	if (with_stacks)
		symbols(&g);
	tg_proc_exit(&g, 0, 0);
	tg_finish(&g);
}

static void gen_trace(int fd, unsigned mmaps, unsigned frees, int with_stacks)
{
	gen_trace_loops(fd, mmaps, frees, with_stacks, 0);
}

static void read_back(int fd, struct van_stats *s)
{
	char msg[256];
	int err;
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	assert_non_null(r);
	assert_int_equal(van_stats_read(s, r), 0);
	vmt_reader_free(r);
}

static double metric(const struct van_stats *s, const char *name)
{
	size_t n;
	struct van_metric *m = van_stats_metrics(s, &n);
	assert_non_null(m);
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0) {
			double v = m[i].value;
			free(m);
			return v;
		}
	free(m);
	fail_msg("no metric %s", name);
	return -1;
}

/* ---- tests -------------------------------------------------------------- */

static void test_generated(void **state)
{
	int fd = tg_memfd("stats-gen");
	gen_trace(fd, 50, 7, 1);
	struct van_stats s;
	read_back(fd, &s);
	/* 2 starts + maps + 3 stacks + 50 mmap + 50 munmap + 7 madvise +
	 * 6 strings + 4 symbols + exit */
	assert_int_equal(s.events, 2 + 1 + 3 + 50 + 50 + 7 + 6 + 4 + 1);
	assert_int_equal(s.processes, 1);
	assert_int_equal(s.threads, 1);
	assert_int_equal(s.syscalls, 107);
	assert_int_equal(s.ops[VMT_OP_MMAP].count, 50);
	assert_int_equal(s.ops[VMT_OP_MMAP].bytes, 50 * PAGE);
	assert_int_equal(s.ops[VMT_OP_MUNMAP].count, 50);
	assert_int_equal(s.ops[VMT_OP_MADVISE].count, 7);
	assert_int_equal(s.nadvice, 1);
	assert_int_equal(s.advice[0].advice, 8);
	assert_int_equal(s.advice[0].s.count, 7);
	assert_int_equal(s.advice[0].s.bytes, 7 * PAGE);
	/* 3 snapshot VMAs + 50 separate pages */
	assert_int_equal(s.peak_vmas, 53);
	assert_int_equal(s.peak_mapped_bytes, (1 + 2 + 33 + 50) * PAGE);
	/* reached by the 50th mmap: event 6 + 50 (1-based), 1000 ns apart,
	 * starting 1000 ns after time 0 */
	assert_int_equal(s.peak_vmas_ns, 1000 + (6 + 49) * 1000);
	assert_int_equal(s.duration_ns, (s.events - 1) * 1000);
	assert_int_equal(metric(&s, "ops.mmap.count"), 50);
	assert_int_equal(metric(&s, "madvise.MADV_FREE.count"), 7);
	assert_int_equal(metric(&s, "peak_vmas"), 53);
	/* call sites: the first frame outside libc, by count */
	assert_true(s.has_stacks);
	assert_int_equal(s.nsites, 3);
	assert_string_equal(s.sites[0].name, "grow (app)");
	assert_int_equal(s.sites[0].count, 50);
	assert_int_equal(s.sites[0].op_count[VMT_OP_MMAP], 50);
	assert_string_equal(s.sites[1].name, "release (app)");
	assert_string_equal(s.sites[2].name, "trim (app)");
	assert_int_equal(s.sites[2].count, 7);
	van_stats_free(&s);
	close(fd);
}

/* Splits, merges, locks, errors, touches, faults, threads and a fork. */
/* A forked child runs its parent's program until it execs. */
static void test_child_program(void **state)
{
	struct tg_trace g;
	tg_trace_memfd(&g, "stats-child", NULL);
	tg_proc(&g, 0, 0, VMT_NONE, VMT_NONE);
	tg_exec(&g, 0, 0, "/usr/bin/server");
	tg_proc(&g, 1, 1, 0, 0);	/* a worker, never exec'd */
	tg_proc(&g, 2, 2, 0, 0);	/* execs a helper */
	tg_exec(&g, 2, 2, "/usr/bin/helper");
	tg_proc(&g, 3, 3, 2, 2);	/* the helper's child */
	tg_exec(&g, 0, 0, "/usr/bin/server2");
	tg_proc(&g, 4, 4, 0, 0);	/* forked after the re-exec */
	for (int p = 4; p >= 0; p--)
		tg_proc_exit(&g, (uint32_t)p, (uint32_t)p);
	tg_finish(&g);

	struct van_stats s;
	read_back(g.fd, &s);
	assert_int_equal(s.processes, 5);
	assert_string_equal(s.procs[0].path, "/usr/bin/server2");
	assert_string_equal(s.procs[1].path, "/usr/bin/server");
	assert_string_equal(s.procs[2].path, "/usr/bin/helper");
	assert_string_equal(s.procs[3].path, "/usr/bin/helper");
	assert_string_equal(s.procs[4].path, "/usr/bin/server2");
	van_stats_free(&s);
	(void)state;
}

static void test_peaks_and_counts(void **state)
{
	struct tg_trace g;
	tg_trace_memfd(&g, "stats-peaks", NULL);
	g.now -= 1000; /* the first event at time 0 */
	tg_put(&g, tg_ev_process_start(0, 0, VMT_NONE, 100, VMT_PROC_ROOT));
	tg_put(&g, tg_ev_thread_start(0, 0, VMT_NONE, 100));
	snapshot(&g, 0);					   /* 3 VMAs, 36 pages */
	TG_PUT_SC(&g, 0, 0, VMT_OP_MMAP, (int64_t)A0, 0, 3 * PAGE, RW, PRIV_ANON, FD_NONE, 0); /* 4 */
	TG_PUT_SC(&g, 0, 0, VMT_OP_MMAP, (int64_t)(A0 + 3 * PAGE), A0 + 3 * PAGE, 2 * PAGE, RW,
		  PRIV_ANON_FIXED, FD_NONE, 0);				/* merges: 4, 41 pages */
	TG_PUT_SC(&g, 0, 0, VMT_OP_MPROTECT, 0, A0 + PAGE, PAGE, 1);	/* 6 */
	TG_PUT_SC(&g, 0, 0, VMT_OP_MPROTECT, 0, A0 + PAGE, PAGE, RW); /* merges back: 4 */
	TG_PUT_SC(&g, 0, 0, VMT_OP_MMAP, -ENOMEM, 0, 1ull << 46, RW, PRIV_ANON, FD_NONE, 0); /* an error */
	TG_PUT_SC(&g, 0, 0, VMT_OP_MLOCK, 0, A0, 2 * PAGE);		/* 5 VMAs, 8K locked */
	TG_PUT_SC(&g, 0, 0, VMT_OP_MADVISE, -EINVAL, A0, PAGE, 9999);
	struct vmt_touch_run runs[] = { { 3, VMT_PAGE_WRITTEN }, { 2, VMT_PAGE_ABSENT },
					{ 1, VMT_PAGE_READ } };
	tg_put(&g, tg_ev_touch(0, 0, A0, 6, VMT_TOUCH_BEFORE_OP, 3, runs));
	TG_PUT_SC(&g, 0, 0, VMT_OP_MUNLOCK, 0, A0, 2 * PAGE); /* 4 VMAs */
	tg_fault(&g, 0, 0, A0, VMT_FAULT_WRITE);
	tg_fault(&g, 0, 0, A0, VMT_FAULT_READ);
	tg_put(&g, tg_ev_lost(0, 0, 5, VMT_LOST_FAULTS));
	tg_put(&g, tg_ev_thread_start(0, 1, VMT_NONE, 101));
	TG_PUT_SC(&g, 0, 1, VMT_OP_MUNMAP, 0, A0, 5 * PAGE); /* 3 VMAs */
	/* a fork: the child has the parent's 3 VMAs and maps 100 pages */
	tg_put(&g, tg_ev_process_start(1, 2, 0, 101, VMT_PROC_FORK));
	tg_put(&g, tg_ev_thread_start(1, 2, VMT_NONE, 102));
	TG_PUT_SC(&g, 1, 2, VMT_OP_MMAP, (int64_t)(A0 + 0x100000), 0, 100 * PAGE, RW, PRIV_ANON,
		  FD_NONE, 0);
	uint64_t big_at = g.now;
	tg_proc_exit(&g, 1, 2);
	tg_finish(&g);
	int fd = g.fd;

	struct van_stats s;
	read_back(fd, &s);
	assert_int_equal(s.processes, 2);
	assert_int_equal(s.threads, 3);
	assert_int_equal(s.syscalls, 10);
	assert_int_equal(s.errors, 2);
	assert_int_equal(s.ops[VMT_OP_MMAP].count, 4);
	assert_int_equal(s.ops[VMT_OP_MMAP].errors, 1);
	assert_int_equal(s.ops[VMT_OP_MMAP].bytes, (3 + 2 + 100) * PAGE); /* not the failed one */
	assert_int_equal(s.ops[VMT_OP_MPROTECT].count, 2);
	assert_int_equal(s.ops[VMT_OP_MADVISE].errors, 1);
	assert_int_equal(s.peak_vmas, 6);
	assert_int_equal(s.procs[0].peak_vmas, 6);
	assert_int_equal(s.procs[1].peak_vmas, 4);
	assert_int_equal(s.procs[1].pid, 101);
	assert_int_equal(s.procs[1].parent, 0);
	assert_int_equal(s.peak_mapped_bytes, (36 + 100) * PAGE);
	assert_int_equal(s.peak_mapped_ns, big_at - TG_START_NS);
	assert_int_equal(s.procs[0].peak_mapped_bytes, 41 * PAGE);
	assert_int_equal(s.peak_locked_bytes, 2 * PAGE);
	assert_int_equal(s.touched_pages, 4);
	assert_int_equal(s.touched_written_pages, 3);
	assert_int_equal(s.faults, 2);
	assert_int_equal(s.faults_write, 1);
	assert_int_equal(s.faults_read, 1);
	assert_int_equal(s.lost_faults, 5);
	assert_int_equal(s.thread[1].ops, 1);
	assert_int_equal(s.thread[2].proc, 1);
	assert_false(s.has_stacks);
	assert_int_equal(s.model_inexact, 0);
	van_stats_free(&s);
	close(fd);
}

/* The metric names are the same for every trace (diff joins on them). */
static void test_metric_names(void **state)
{
	int fd = tg_memfd("stats-names");
	gen_trace(fd, 1, 0, 0);
	struct van_stats s;
	read_back(fd, &s);
	size_t n;
	struct van_metric *m = van_stats_metrics(&s, &n);
	assert_non_null(m);
	static const char *const want[] = { "events", "processes", "threads", "duration_ns",
					    "ops.mmap.count", "ops.mmap.errors", "ops.mmap.bytes",
					    "ops.mseal.count", "peak_vmas", "peak_mapped_bytes",
					    "touched_pages", "madvise.MADV_DONTNEED.count" };
	for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
		size_t i;
		for (i = 0; i < n && strcmp(m[i].name, want[w]) != 0; i++)
			;
		if (i == n)
			fail_msg("metric %s missing", want[w]);
		if (strcmp(want[w], "duration_ns") == 0)
			assert_true(m[i].flags & VAN_METRIC_TIMING);
		else
			assert_false(m[i].flags & VAN_METRIC_TIMING);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(m[i].name, m[j].name) == 0)
				fail_msg("metric %s twice", m[i].name);
	free(m);
	van_stats_free(&s);
	close(fd);
}

/* A damaged trace: stats of the events before the damage, and the error. */
static void test_truncated(void **state)
{
	int fd = tg_memfd("stats-trunc");
	gen_trace(fd, 2000, 0, 0);
	size_t len;
	uint8_t *buf = tg_slurp(fd, &len);
	int cut = tg_memfd_with(buf, len - 40);
	char msg[256];
	int err;
	vmt_reader *r = vmt_reader_open_fd(cut, &err, msg, sizeof(msg));
	assert_non_null(r);
	struct van_stats s;
	assert_true(van_stats_read(&s, r) < 0);
	assert_true(s.ops[VMT_OP_MMAP].count > 0);
	van_stats_free(&s);
	vmt_reader_free(r);
	free(buf);
	close(cut);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "--gen") == 0) {
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0) {
			perror(argv[2]);
			return 2;
		}
		gen_trace_loops(fd, (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]),
				argc > 5 && atoi(argv[5]), argc > 6 ? (unsigned)atoi(argv[6]) : 0);
		close(fd);
		return 0;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_peaks_and_counts),
		cmocka_unit_test(test_child_program),
		cmocka_unit_test(test_metric_names),
		cmocka_unit_test(test_truncated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
