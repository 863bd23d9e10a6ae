/*
 * lockorder - N threads racing calls that take mmap_lock for writing on
 * one address space: mmap(NULL, page) (whose address depends on which
 * thread's munmap went first), mprotect, munmap.  For recorders: a trace
 * must put these calls in the order the kernel serialized them, or a
 * page looks handed out twice.  See --help and tests/workloads/README.md.
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

static const char usage_text[] =
"Usage: lockorder [--threads N] [--iterations K] [--log]\n"
"\n"
"Each of N threads (default 2, 1..64) runs K iterations (default 10000) of\n"
"mmap(NULL, one page, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS),\n"
"mprotect(PROT_READ) and munmap of that page, all starting together, so\n"
"that one thread's mmap often gets the page another thread unmapped an\n"
"instant before.\n"
"\n"
"Output: with --log, one line per call as the other workloads print them\n"
"(worker i's prefixed \"thread=<i> \", printed after the join); then\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= iterations= ops=NAME:N,...\n";

static struct {
	unsigned long threads, iterations;
	int log;
} opt = { 2, 10000, 0 };

static pthread_barrier_t go;

struct worker {
	pthread_t tid;
	char prefix[32];
	struct mm_log log;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS;

	pthread_barrier_wait(&go);
	for (unsigned long i = 0; i < opt.iterations; i++) {
		char *p = mmap(NULL, page, PROT_READ | PROT_WRITE, fl, -1, 0);
		NOTE(&w->log, OP_MMAP, res_ptr(p), 0, page, PROT_READ | PROT_WRITE, (uint64_t)fl,
		     I2U(-1), 0);
		if (p == MAP_FAILED)
			die("mmap");
		int r = mprotect(p, page, PROT_READ);
		NOTE(&w->log, OP_MPROTECT, res_int(r), P2U(p), page, PROT_READ);
		r = munmap(p, page);
		NOTE(&w->log, OP_MUNMAP, res_int(r), P2U(p), page);
		if (r)
			die("munmap");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker workers[64];
	struct summary sum = { 0 };
	struct mark t0, t1;
	char extra[64];
	int c, r;
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'k' },
		LOG_HELP_LONGOPTS,
	};

	prog = "lockorder";
	libc_warmup();
	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 't': opt.threads = parse_num("--threads", optarg, 1, 64); break;
		case 'k': opt.iterations = parse_num("--iterations", optarg, 0, 1UL << 32); break;
		case 'l': opt.log = 1; break;
		}
	}
	size_t per = opt.log ? 3 * opt.iterations : 0;
	pthread_barrier_init(&go, NULL, (unsigned)opt.threads + 1);
	for (unsigned long i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];
		snprintf(w->prefix, sizeof w->prefix, "thread=%lu ", i);
		w->log.prefix = w->prefix;
		if (per && !(w->log.rec = calloc(per, sizeof(*w->log.rec))))
			die("calloc of the log");
		w->log.cap = per;
		r = pthread_create(&w->tid, NULL, worker_main, w);
		if (r) {
			errno = r;
			die("pthread_create");
		}
	}
	mark_now(&t0, RUSAGE_SELF);
	pthread_barrier_wait(&go);
	for (unsigned long i = 0; i < opt.threads; i++)
		pthread_join(workers[i].tid, NULL);
	mark_now(&t1, RUSAGE_SELF);
	for (unsigned long i = 0; i < opt.threads; i++) {
		mm_log_print(stdout, &workers[i].log);
		summary_add_calls(&sum, &workers[i].log);
		free(workers[i].log.rec);
	}
	summary_add_usage(&sum, &t0.ru, &t1.ru);
	sum.wall_ns = ns_between(&t0.ts, &t1.ts);
	sum.threads = (int)opt.threads + 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra, " iterations=%lu", opt.iterations);
	summary_print(stdout, "", &sum, extra);
	return stdout_write_error();
}
