/*
 * seed000 - glibc's old way of freeing memory (mprotect RW, touch,
 * mmap PROT_NONE MAP_FIXED) versus touch + madvise(MADV_DONTNEED), in N
 * threads at once.  Models seed 000 (Nick Piggin, linux-mm, April 2007).
 * See --help and tests/workloads/README.md.
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
#include <time.h>
#include <unistd.h>

#include "workload.h" /* logging, summary line, option helpers */

#define STACK_SIZE (256 * 1024)

static const char usage_text[] =
"Usage: seed000 [--threads N] [--iterations K] [--mode old|new] [--pages P]\n"
"               [--no-touch] [--log]\n"
"\n"
"Models seed 000 (Nick Piggin, linux-mm, April 2007, \"missing madvise\n"
"functionality\"): glibc's way of giving a page back, mprotect(PROT_READ|\n"
"PROT_WRITE), touch, mmap(PROT_NONE, MAP_FIXED) over it, versus touch +\n"
"madvise(MADV_DONTNEED).\n"
"With 2 threads and 1,000,000 iterations the old way made ~140,000 context\n"
"switches/s, >2 million faults and took ~80 s; the new way <100 context\n"
"switches and ~8 s (1 thread: 9.88 s vs 4.55 s).\n"
"\n"
"Each of N threads mmaps its own P-page region (the old mode reserves it\n"
"PROT_NONE, the new mode maps it read-write), then all start together and\n"
"run K iterations:\n"
"  old: mprotect(region, len, PROT_READ|PROT_WRITE); write one byte to every\n"
"       page; mmap(region, len, PROT_NONE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED)\n"
"  new: write one byte to every page; madvise(region, len, MADV_DONTNEED)\n"
"then munmap their region.  The main thread mmaps the threads' stacks (one\n"
"mapping, so glibc allocates none) and, with --log, the log buffers.\n"
"\n"
"Options:\n"
"  --threads N      worker threads (default 2, 1..1024)\n"
"  --iterations K   iterations per thread (default 2000; 0 is allowed)\n"
"  --mode old|new   old: mprotect+touch+mmap(PROT_NONE); new: touch+madvise\n"
"                   (default old)\n"
"  --pages P        pages per thread region (default 1)\n"
"  --no-touch       write no page: the calls alone, as fast as they go (a\n"
"                   burst for recorders)\n"
"  --log            print one line per memory call: main thread's lines\n"
"                   unprefixed, worker i's lines prefixed \"thread=<i> \" (buffered\n"
"                   per thread, printed after the join; the buffers are mmapped\n"
"                   with MAP_POPULATE and those calls are logged and counted too)\n"
"  --help           this text\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (addresses and flag\n"
"sets hex 0x.., lengths, fds, ints and offsets decimal, -errno negative\n"
"decimal; mmap's result hex), then always one line\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= mode= iterations= pages= ops=NAME:N,...\n"
"calls counts every memory call this program's code issued (not glibc's\n"
"startup ones); minflt..nivcsw are getrusage(RUSAGE_SELF) deltas and wall_ns\n"
"the time between the start barrier and the moment all workers finished the\n"
"loop (region mmap/munmap excluded); threads counts the main thread.\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those.\n";

enum mode { MODE_OLD, MODE_NEW };

static struct {
	unsigned long threads, iterations, pages;
	enum mode mode;
	int log, no_touch;
} opt = { 2, 2000, 1, MODE_OLD, 0, 0 };

static size_t page_size;
static pthread_barrier_t ready_barrier, go_barrier, done_barrier;

struct worker {
	pthread_t tid;
	int index;
	char prefix[32];
	struct mm_log log;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mm_log *l = &w->log;
	size_t len = opt.pages * page_size;
	int prot0 = opt.mode == MODE_OLD ? PROT_NONE : PROT_READ | PROT_WRITE;
	char *region;

	region = mmap(NULL, len, prot0, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	NOTE(l, OP_MMAP, res_ptr(region), 0, len, (uint64_t)prot0,
	     MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	if (region == MAP_FAILED)
		die("mmap of the thread region");

	pthread_barrier_wait(&ready_barrier);
	pthread_barrier_wait(&go_barrier);
	for (unsigned long i = 0; i < opt.iterations; i++) {
		if (opt.mode == MODE_OLD) {
			int r = mprotect(region, len, PROT_READ | PROT_WRITE);
			NOTE(l, OP_MPROTECT, res_int(r), P2U(region), len,
			     PROT_READ | PROT_WRITE);
			if (r)
				die("mprotect");
		}
		for (size_t off = 0; off < len && !opt.no_touch; off += page_size)
			*(volatile char *)(region + off) = (char)i;
		if (opt.mode == MODE_OLD) {
			const int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
			void *p = mmap(region, len, PROT_NONE, fl, -1, 0);
			NOTE(l, OP_MMAP, res_ptr(p), P2U(region), len, PROT_NONE,
			     (uint64_t)fl, I2U(-1), 0);
			if (p == MAP_FAILED)
				die("mmap(PROT_NONE, MAP_FIXED)");
		} else {
			int r = madvise(region, len, MADV_DONTNEED);
			NOTE(l, OP_MADVISE, res_int(r), P2U(region), len, MADV_DONTNEED);
			if (r)
				die("madvise(MADV_DONTNEED)");
		}
	}
	pthread_barrier_wait(&done_barrier);

	int r = munmap(region, len);
	NOTE(l, OP_MUNMAP, res_int(r), P2U(region), len);
	if (r)
		die("munmap of the thread region");
	return NULL;
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'k' },
		{ "mode", required_argument, NULL, 'm' },
		{ "pages", required_argument, NULL, 'p' },
		{ "no-touch", no_argument, NULL, 'n' },
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 't': opt.threads = parse_num("--threads", optarg, 1, 1024); break;
		case 'k': opt.iterations = parse_num("--iterations", optarg, 0, 1UL << 40); break;
		case 'p': opt.pages = parse_num("--pages", optarg, 1, 1UL << 20); break;
		case 'l': opt.log = 1; break;
		case 'n': opt.no_touch = 1; break;
		case 'm':
			if (!strcmp(optarg, "old"))
				opt.mode = MODE_OLD;
			else if (!strcmp(optarg, "new"))
				opt.mode = MODE_NEW;
			else
				usage_error("--mode: '%s' is not old or new", optarg);
			break;
		}
	}
}

int main(int argc, char **argv)
{
	static struct worker workers[1024];
	static struct mm_rec main_recs[8];
	struct mm_log mainlog = { .rec = main_recs, .cap = 8 };
	struct summary sum = { 0 };
	struct mark t0, t1;
	size_t nthreads, per_thread = 0, logbytes = 0;
	struct mm_rec *logbuf = NULL;
	pthread_attr_t attr;
	char *stacks;
	char extra[128];
	int r;

	prog = "seed000";
	libc_warmup();
	parse_args(argc, argv);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	nthreads = opt.threads;

	if (opt.log) {
		/* region mmap + munmap, then one or two calls per iteration */
		per_thread = 2 + opt.iterations * (opt.mode == MODE_OLD ? 2 : 1);
		if (per_thread > (1UL << 30) / sizeof(struct mm_rec) / nthreads)
			usage_error("--log: the log of %lu iterations x %zu threads would"
				    " not fit in 1 GiB", opt.iterations, nthreads);
		logbytes = nthreads * per_thread * sizeof(struct mm_rec);
		const int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
		logbuf = mmap(NULL, logbytes, PROT_READ | PROT_WRITE, fl, -1, 0);
		NOTE(&mainlog, OP_MMAP, res_ptr(logbuf), 0, logbytes,
		     PROT_READ | PROT_WRITE, (uint64_t)fl, I2U(-1), 0);
		if (logbuf == MAP_FAILED)
			die("mmap of the log buffers");
	}

	const int sfl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK;
	stacks = mmap(NULL, nthreads * STACK_SIZE, PROT_READ | PROT_WRITE, sfl, -1, 0);
	NOTE(&mainlog, OP_MMAP, res_ptr(stacks), 0, nthreads * STACK_SIZE,
	     PROT_READ | PROT_WRITE, (uint64_t)sfl, I2U(-1), 0);
	if (stacks == MAP_FAILED)
		die("mmap of the thread stacks");

	pthread_barrier_init(&ready_barrier, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&go_barrier, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&done_barrier, NULL, (unsigned)nthreads + 1);
	pthread_attr_init(&attr);
	for (size_t i = 0; i < nthreads; i++) {
		struct worker *w = &workers[i];

		w->index = (int)i;
		snprintf(w->prefix, sizeof w->prefix, "thread=%zu ", i);
		w->log.prefix = w->prefix;
		if (opt.log) {
			w->log.rec = logbuf + i * per_thread;
			w->log.cap = per_thread;
		}
		pthread_attr_setstack(&attr, stacks + i * STACK_SIZE, STACK_SIZE);
		thread_start(&w->tid, &attr, worker_main, w);
	}
	pthread_attr_destroy(&attr);

	pthread_barrier_wait(&ready_barrier); /* every region is mapped */
	mark_now(&t0, RUSAGE_SELF);
	pthread_barrier_wait(&go_barrier);
	pthread_barrier_wait(&done_barrier); /* every loop is done */
	mark_now(&t1, RUSAGE_SELF);
	for (size_t i = 0; i < nthreads; i++)
		pthread_join(workers[i].tid, NULL);

	r = munmap(stacks, nthreads * STACK_SIZE);
	NOTE(&mainlog, OP_MUNMAP, res_int(r), P2U(stacks), nthreads * STACK_SIZE);
	if (r)
		die("munmap of the thread stacks");

	if (opt.log) {
		mm_log_print(stdout, &mainlog);
		mainlog.nrec = 0;
		for (size_t i = 0; i < nthreads; i++) {
			if (workers[i].log.overflow) {
				fprintf(stderr, "%s: thread %zu: log buffer overflow\n", prog, i);
				exit(1);
			}
			mm_log_print(stdout, &workers[i].log);
		}
		r = munmap(logbuf, logbytes);
		NOTE(&mainlog, OP_MUNMAP, res_int(r), P2U(logbuf), logbytes);
		mm_log_print(stdout, &mainlog);
		if (r)
			die("munmap of the log buffers");
	}

	for (size_t i = 0; i < nthreads; i++)
		summary_add_calls(&sum, &workers[i].log);
	summary_add_calls(&sum, &mainlog);
	summary_add_usage(&sum, &t0.ru, &t1.ru);
	sum.wall_ns = ns_between(&t0.ts, &t1.ts);
	sum.threads = (int)nthreads + 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra, " mode=%s iterations=%lu pages=%lu",
		 opt.mode == MODE_OLD ? "old" : "new", opt.iterations, opt.pages);
	summary_print(stdout, "", &sum, extra);
	return stdout_write_error();
}
