/*
 * mapfiles - threads mapping one file at the same instant, their thread
 * ids alike modulo 64.  For recorders: each file mapping must keep its
 * own file, also when two threads' calls end together and a recorder
 * pairs a call with what it learnt of its file by thread.  See --help
 * and tests/workloads/README.md.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "workload.h" /* logging, summary line, option helpers */

static const char usage_text[] =
"Usage: mapfiles [--threads N] [--iterations K] [--spread S] [--log]\n"
"\n"
"Each of N worker threads (default 2, 1..16) runs K iterations (default\n"
"10000) of mmap(NULL, one page, PROT_READ, MAP_PRIVATE) of one file (a\n"
"temporary file of one page, removed at exit) and munmap of it, all\n"
"starting together.  Between one worker and the next, S threads (default\n"
"63) are started that only wait until the workers are done: thread ids\n"
"are handed out in turn, so the workers' ids differ by S + 1 (64).\n"
"\n"
"Output: with --log, one line per call as the other workloads print them\n"
"(worker i's prefixed \"thread=<i> \", printed after the join); then\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= iterations= ops=NAME:N,...\n";

static struct {
	unsigned long threads, iterations, spread;
	int log;
} opt = { 2, 10000, 63, 0 };

static pthread_barrier_t go;
static int fd;
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int done;
} idle = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };

struct worker {
	pthread_t tid;
	char prefix[32];
	struct mm_log log;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	pthread_barrier_wait(&go);
	for (unsigned long i = 0; i < opt.iterations; i++) {
		char *p = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
		NOTE(&w->log, OP_MMAP, res_ptr(p), 0, page, PROT_READ, MAP_PRIVATE, I2U(fd), 0);
		if (p == MAP_FAILED)
			die("mmap");
		int r = munmap(p, page);
		NOTE(&w->log, OP_MUNMAP, res_int(r), P2U(p), page);
		if (r)
			die("munmap");
	}
	return NULL;
}

static void *idle_main(void *arg)
{
	pthread_mutex_lock(&idle.lock);
	while (!idle.done)
		pthread_cond_wait(&idle.cv, &idle.lock);
	pthread_mutex_unlock(&idle.lock);
	return arg;
}

int main(int argc, char **argv)
{
	static struct worker workers[16];
	struct summary sum = { 0 };
	struct mark t0, t1;
	char extra[64], path[4096];
	int c, created;
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'k' },
		{ "spread", required_argument, NULL, 's' },
		LOG_HELP_LONGOPTS,
	};

	prog = "mapfiles";
	libc_warmup();
	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 't': opt.threads = parse_num("--threads", optarg, 1, 16); break;
		case 'k': opt.iterations = parse_num("--iterations", optarg, 0, 1UL << 32); break;
		case 's': opt.spread = parse_num("--spread", optarg, 0, 1024); break;
		case 'l': opt.log = 1; break;
		}
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	fd = open_or_create(NULL, page, path, sizeof path, &created);
	if (ftruncate(fd, (off_t)page))
		die("ftruncate");
	size_t per = opt.log ? 2 * opt.iterations : 0;
	size_t nidle = (opt.threads - 1) * opt.spread;
	pthread_t *idlers = calloc(nidle + 1, sizeof(*idlers));
	if (!idlers)
		die("calloc");
	pthread_barrier_init(&go, NULL, (unsigned)opt.threads + 1);
	for (unsigned long i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];
		worker_log_init(&w->log, w->prefix, sizeof w->prefix, i, per);
		if (i)
			for (unsigned long k = 0; k < opt.spread; k++)
				thread_start(&idlers[(i - 1) * opt.spread + k], NULL, idle_main, NULL);
		thread_start(&w->tid, NULL, worker_main, w);
	}
	mark_now(&t0, RUSAGE_SELF);
	pthread_barrier_wait(&go);
	for (unsigned long i = 0; i < opt.threads; i++)
		pthread_join(workers[i].tid, NULL);
	mark_now(&t1, RUSAGE_SELF);
	pthread_mutex_lock(&idle.lock);
	idle.done = 1;
	pthread_cond_broadcast(&idle.cv);
	pthread_mutex_unlock(&idle.lock);
	for (size_t k = 0; k < nidle; k++)
		pthread_join(idlers[k], NULL);
	free(idlers);
	for (unsigned long i = 0; i < opt.threads; i++)
		worker_log_report(&workers[i].log, &sum);
	summary_add_usage(&sum, &t0.ru, &t1.ru);
	sum.wall_ns = ns_between(&t0.ts, &t1.ts);
	sum.threads = (int)(opt.threads + nidle) + 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra, " iterations=%lu", opt.iterations);
	summary_print(stdout, "", &sum, extra);
	return stdout_write_error();
}
