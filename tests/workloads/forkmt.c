/*
 * forkmt - a multi-threaded process that forks while its threads go on
 * working: after each fork every thread's next write to each of its pages
 * (its memory, its stack) is a copy-on-write fault.  See --help and
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

#define MAX_THREADS 16
#define MAX_FORKS 1000
#define STACK_SIZE (256 * 1024)

static const char usage_text[] =
"Usage: forkmt [--threads N] [--forks F] [--pages P] [--log]\n"
"\n"
"Not a seed scenario: a process whose threads work on while it forks, for\n"
"replays of forking servers and runtimes.  The main thread mmaps the stacks\n"
"of N worker threads (one mapping) and P pages of its own (written), and\n"
"starts the workers.  Then, F rounds, all threads in step (barriers):\n"
"  1. each worker mmaps P pages and writes them;\n"
"  2. the main thread forks; the child writes the main thread's P pages\n"
"     (copy-on-write) and exits 0 with no memory call; the main thread\n"
"     waits for it;\n"
"  3. each worker writes its P pages again (copy-on-write: the fork shared\n"
"     them) and munmaps them.\n"
"At the end the main thread joins the workers and munmaps its pages and\n"
"the stacks.\n"
"\n"
"Options:\n"
"  --threads N     worker threads, 1..16 (default 3)\n"
"  --forks F       rounds, each with one fork, 1..1000 (default 8)\n"
"  --pages P       pages each thread maps per round, and the main thread's,\n"
"                  1..4096 (default 16)\n"
"  --log           print one line per memory call: the main thread's lines\n"
"                  unprefixed, worker i's prefixed \"thread=<i> \"\n"
"  --help          this text\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (addresses and\n"
"flag sets hex 0x.., lengths, fds, ints and offsets decimal, -errno negative\n"
"decimal; mmap's result hex), then always\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= forks= pages= ops=NAME:N,...\n"
"calls counts the calls of every thread (4 + 2 N F).  minflt..nivcsw are\n"
"getrusage(RUSAGE_SELF) deltas plus getrusage(RUSAGE_CHILDREN) deltas over\n"
"the whole run after the warm-up, and wall_ns its time.  threads counts the\n"
"main thread, the workers and the children (1 + N + F), procs the\n"
"processes (1 + F).  Memory calls glibc makes on its own are not counted:\n"
"its startup calls and the brk(NULL), brk(+132 KiB) of malloc's first use,\n"
"which every workload makes at the start of main, so that a --help run\n"
"makes exactly those.\n";

static struct {
	unsigned long threads, forks, pages;
	int log;
} opt = { 3, 8, 16, 0 };

static size_t page_size;
static pthread_barrier_t step;

struct worker {
	pthread_t tid;
	char prefix[32];
	struct mm_rec recs[2 * MAX_FORKS];
	struct mm_log log;
};

static void write_pages(char *p, unsigned long n, char v)
{
	for (unsigned long i = 0; i < n; i++)
		((volatile char *)p)[i * page_size] = v;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mm_log *l = &w->log;
	size_t len = opt.pages * page_size;
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS;

	for (unsigned long r = 0; r < opt.forks; r++) {
		pthread_barrier_wait(&step);
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, fl, -1, 0);
		NOTE(l, OP_MMAP, res_ptr(p), 0, len, PROT_READ | PROT_WRITE, (uint64_t)fl, I2U(-1), 0);
		if (p == MAP_FAILED)
			die("mmap in a thread");
		write_pages(p, opt.pages, 1);
		pthread_barrier_wait(&step); /* the fork */
		pthread_barrier_wait(&step);
		write_pages(p, opt.pages, 2);
		int rc = munmap(p, len);
		NOTE(l, OP_MUNMAP, res_int(rc), P2U(p), len);
		if (rc)
			die("munmap in a thread");
	}
	return NULL;
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "forks", required_argument, NULL, 'f' },
		{ "pages", required_argument, NULL, 'p' },
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 't': opt.threads = parse_num("--threads", optarg, 1, MAX_THREADS); break;
		case 'f': opt.forks = parse_num("--forks", optarg, 1, MAX_FORKS); break;
		case 'p': opt.pages = parse_num("--pages", optarg, 1, 4096); break;
		case 'l': opt.log = 1; break;
		}
	}
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	static struct mm_rec main_recs[4];
	struct mm_log mainlog = { .rec = main_recs, .cap = 4 };
	struct summary sum = { 0 };
	struct mark s0, s1, c0, c1;
	pthread_attr_t attr;
	char extra[64];
	int r, failed = 0;

	prog = "forkmt";
	libc_warmup();
	parse_args(argc, argv);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = opt.pages * page_size, slen = opt.threads * STACK_SIZE;
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS, sfl = fl | MAP_STACK;

	mark_now(&s0, RUSAGE_SELF);
	mark_now(&c0, RUSAGE_CHILDREN);
	char *stacks = mmap(NULL, slen, PROT_READ | PROT_WRITE, sfl, -1, 0);
	NOTE(&mainlog, OP_MMAP, res_ptr(stacks), 0, slen, PROT_READ | PROT_WRITE, (uint64_t)sfl,
	     I2U(-1), 0);
	if (stacks == MAP_FAILED)
		die("mmap of the thread stacks");
	char *mine = mmap(NULL, len, PROT_READ | PROT_WRITE, fl, -1, 0);
	NOTE(&mainlog, OP_MMAP, res_ptr(mine), 0, len, PROT_READ | PROT_WRITE, (uint64_t)fl,
	     I2U(-1), 0);
	if (mine == MAP_FAILED)
		die("mmap");
	write_pages(mine, opt.pages, 1);

	pthread_barrier_init(&step, NULL, (unsigned)opt.threads + 1);
	pthread_attr_init(&attr);
	for (unsigned long i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];

		snprintf(w->prefix, sizeof w->prefix, "thread=%lu ", i);
		w->log.prefix = w->prefix;
		w->log.rec = w->recs;
		w->log.cap = 2 * opt.forks;
		pthread_attr_setstack(&attr, stacks + i * STACK_SIZE, STACK_SIZE);
		thread_start(&w->tid, &attr, worker_main, w);
	}
	pthread_attr_destroy(&attr);

	fflush(stdout);
	for (unsigned long round = 0; round < opt.forks; round++) {
		int status;

		pthread_barrier_wait(&step);
		pthread_barrier_wait(&step); /* the workers' pages are written */
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			write_pages(mine, opt.pages, 2);
			_exit(0);
		}
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR)
				die("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
		pthread_barrier_wait(&step);
	}
	for (unsigned long i = 0; i < opt.threads; i++)
		pthread_join(workers[i].tid, NULL);
	r = munmap(mine, len);
	NOTE(&mainlog, OP_MUNMAP, res_int(r), P2U(mine), len);
	if (r)
		die("munmap");
	r = munmap(stacks, slen);
	NOTE(&mainlog, OP_MUNMAP, res_int(r), P2U(stacks), slen);
	if (r)
		die("munmap of the thread stacks");
	mark_now(&s1, RUSAGE_SELF);
	mark_now(&c1, RUSAGE_CHILDREN);

	if (opt.log) {
		mm_log_print(stdout, &mainlog);
		for (unsigned long i = 0; i < opt.threads; i++)
			mm_log_print(stdout, &workers[i].log);
	}
	summary_add_calls(&sum, &mainlog);
	for (unsigned long i = 0; i < opt.threads; i++)
		summary_add_calls(&sum, &workers[i].log);
	summary_add_usage(&sum, &s0.ru, &s1.ru);
	summary_add_usage(&sum, &c0.ru, &c1.ru);
	sum.wall_ns = ns_between(&s0.ts, &s1.ts);
	sum.threads = (int)(1 + opt.threads + opt.forks);
	sum.procs = (int)(1 + opt.forks);
	snprintf(extra, sizeof extra, " forks=%lu pages=%lu", opt.forks, opt.pages);
	summary_print(stdout, "", &sum, extra);
	if (stdout_write_error())
		return 1;
	if (failed) {
		fprintf(stderr, "%s: a child failed\n", prog);
		return 1;
	}
	return 0;
}
