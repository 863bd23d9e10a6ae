/*
 * pacer - calls at a known pace, each stamped with its time in a shared
 * file that outlives the program, in a tree of processes.  For recorders
 * that are killed: what reached the trace is checked against the stamps,
 * and the tree against what is left running.  See --help and
 * tests/workloads/README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h" /* logging, summary line, option helpers */

static const char usage_text[] =
"Usage: pacer --stamps FILE [--threads N] [--calls K] [--interval-us U]\n"
"             [--depth D] [--no-touch] [--exit N]\n"
"\n"
"A process tree of D+1 processes (default D 0; the first forks a child,\n"
"which forks the next: children and grandchildren), each with N worker\n"
"threads (default 1, 1..16).  Each worker makes K calls (default 100000) of\n"
"madvise(MADV_DONTNEED) on a page of its own, writing one byte of it first\n"
"unless --no-touch, one call every U microseconds (default 0: as fast as\n"
"they go).  After each call it stores the CLOCK_MONOTONIC time (ns) at\n"
"which the call returned in FILE, which every process maps shared, so that\n"
"the stamps outlive a killed program.  A worker stops early once word 4 of\n"
"FILE is not 0 (another program may write it: the calls go on for as long\n"
"as it needs, on a machine of any speed).\n"
"\n"
"FILE (created or truncated): 8-byte little-endian words.  Words 0-4:\n"
"\"pacer1\\0\\0\", processes, threads per process, K, stop.  Then one slot per\n"
"worker, process by process: its process id, its page's address, how many\n"
"of its calls have returned, then K stamps.  A slot's pid is 0 until its\n"
"process starts.\n"
"\n"
"--exit N: the first process exits with status N (default 0) once the tree\n"
"has ended.\n"
"\n"
"Output: the summary line of the first process, once the tree has ended:\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= ops=NAME:N,...   (its own threads' calls only)\n";

static struct {
	unsigned long threads, calls, interval_us, depth;
	int no_touch, exit_status;
	const char *stamps;
} opt = { 1, 100000, 0, 0, 0, 0, NULL };

enum { HDR_WORDS = 5, SLOT_HDR = 3, STOP_WORD = 4 };

static uint64_t *words; /* the stamps file, mapped shared */
static size_t page;

struct worker {
	pthread_t tid;
	uint64_t *slot;
	struct mm_log log;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS;
	char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, fl, -1, 0);
	NOTE(&w->log, OP_MMAP, res_ptr(p), 0, page, PROT_READ | PROT_WRITE, (uint64_t)fl, I2U(-1), 0);
	if (p == MAP_FAILED)
		die("mmap");
	w->slot[1] = P2U(p);
	struct timespec gap = { (time_t)(opt.interval_us / 1000000),
				(long)(opt.interval_us % 1000000) * 1000 };
	for (unsigned long i = 0; i < opt.calls && !__atomic_load_n(&words[STOP_WORD], __ATOMIC_RELAXED);
	     i++) {
		if (!opt.no_touch)
			*(volatile char *)p = 1;
		int r = madvise(p, page, MADV_DONTNEED);
		uint64_t t = mono_ns();
		NOTE(&w->log, OP_MADVISE, res_int(r), P2U(p), page, MADV_DONTNEED);
		w->slot[SLOT_HDR + i] = t;
		__atomic_store_n(&w->slot[2], i + 1, __ATOMIC_RELEASE);
		if (opt.interval_us)
			nanosleep(&gap, NULL);
	}
	return NULL;
}

/* Process number `level` of the tree: its workers, and its child. */
static void run_level(unsigned long level, struct summary *sum)
{
	static struct worker workers[16];
	size_t per_slot = SLOT_HDR + opt.calls;
	pid_t child = -1;
	struct mark t0, t1;

	if (level < opt.depth) {
		child = fork();
		if (child < 0)
			die("fork");
		if (child == 0) {
			run_level(level + 1, NULL);
			_exit(0);
		}
	}
	mark_now(&t0, RUSAGE_SELF);
	for (unsigned long i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];
		w->slot = words + HDR_WORDS + (level * opt.threads + i) * per_slot;
		w->slot[0] = (uint64_t)getpid();
		thread_start(&w->tid, NULL, worker_main, w);
	}
	for (unsigned long i = 0; i < opt.threads; i++)
		pthread_join(workers[i].tid, NULL);
	if (child > 0)
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	mark_now(&t1, RUSAGE_SELF);
	if (!sum)
		return;
	for (unsigned long i = 0; i < opt.threads; i++)
		summary_add_calls(sum, &workers[i].log);
	summary_add_usage(sum, &t0.ru, &t1.ru);
	sum->wall_ns = ns_between(&t0.ts, &t1.ts);
	sum->threads = (int)opt.threads + 1;
	sum->procs = (int)opt.depth + 1;
}

int main(int argc, char **argv)
{
	struct summary sum = { 0 };
	int c;
	static const struct option longopts[] = {
		{ "stamps", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "calls", required_argument, NULL, 'k' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "depth", required_argument, NULL, 'd' },
		{ "no-touch", no_argument, NULL, 'n' },
		{ "exit", required_argument, NULL, 'x' },
		LOG_HELP_LONGOPTS,
	};

	prog = "pacer";
	libc_warmup();
	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 's': opt.stamps = optarg; break;
		case 't': opt.threads = parse_num("--threads", optarg, 1, 16); break;
		case 'k': opt.calls = parse_num("--calls", optarg, 1, 1UL << 28); break;
		case 'i': opt.interval_us = parse_num("--interval-us", optarg, 0, 10000000); break;
		case 'd': opt.depth = parse_num("--depth", optarg, 0, 8); break;
		case 'n': opt.no_touch = 1; break;
		case 'x': opt.exit_status = (int)parse_num("--exit", optarg, 0, 255); break;
		case 'l': break; /* --log: nothing to log but the summary */
		}
	}
	if (!opt.stamps)
		usage_error("--stamps FILE is needed");
	page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t nwords = HDR_WORDS + (opt.depth + 1) * opt.threads * (SLOT_HDR + opt.calls);
	int fd = open(opt.stamps, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)(nwords * 8)) < 0)
		die(opt.stamps);
	words = mmap(NULL, nwords * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (words == MAP_FAILED)
		die("mmap of the stamps");
	close(fd);
	memcpy(words, "pacer1\0\0", 8);
	words[1] = opt.depth + 1;
	words[2] = opt.threads;
	words[3] = opt.calls;
	run_level(0, &sum);
	summary_print(stdout, "", &sum, "");
	return stdout_write_error() ? 1 : opt.exit_status;
}
