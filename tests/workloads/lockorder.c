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
#include <fcntl.h>
#include <poll.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h" /* logging, summary line, option helpers */

static const char usage_text[] =
"Usage: lockorder [--threads N] [--iterations K] [--late-exit MS] [--log]\n"
"\n"
"Each of N threads (default 2, 1..64) runs K iterations (default 10000) of\n"
"mmap(NULL, one page, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS),\n"
"mprotect(PROT_READ) and munmap of that page, all starting together, so\n"
"that one thread's mmap often gets the page another thread unmapped an\n"
"instant before.\n"
"\n"
"--late-exit MS: instead, K rounds (default 10000) of one munmap whose exit\n"
"comes MS milliseconds after it let go of mmap_lock, while another thread's\n"
"mmap(NULL) takes the pages it freed and returns: the range is registered\n"
"with userfaultfd for unmap events, and its munmap waits for that event to\n"
"be read.  Worker 0 unmaps; worker 1 waits for the event, maps, sleeps MS\n"
"ms and reads it.  Without userfaultfd, exits with 77 (skip) and says why.\n"
"\n"
"Output: with --log, one line per call as the other workloads print them\n"
"(worker i's prefixed \"thread=<i> \", printed after the join); then\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= iterations= ops=NAME:N,...\n";

static struct {
	unsigned long threads, iterations, late_ms;
	int log;
} opt = { 2, 10000, 0, 0 };

static pthread_barrier_t go;

struct worker {
	pthread_t tid;
	unsigned long idx;
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

/* ---- --late-exit ---------------------------------------------------------- */

#define LATE_PAGES 16

static struct {
	int uffd;
	char *range;		    /* mapped, registered: worker 0's to unmap */
	pthread_barrier_t round;    /* both workers at a round's start */
} late;

/* A userfaultfd that reports unmaps, or exit 77. */
static int late_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		fprintf(stderr, "lockorder: skip: no userfaultfd: %s\n", strerror(errno));
		exit(77);
	}
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_EVENT_UNMAP };
	if (ioctl(fd, UFFDIO_API, &api)) {
		fprintf(stderr, "lockorder: skip: userfaultfd without unmap events: %s\n",
			strerror(errno));
		exit(77);
	}
	return fd;
}

static void late_register(char *p, size_t len)
{
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)p, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	if (ioctl(late.uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
}

/* Worker 1's mmap(NULL, len), logged and registered. */
static char *late_map(struct worker *w, size_t len)
{
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, fl, -1, 0);
	NOTE(&w->log, OP_MMAP, res_ptr(p), 0, len, PROT_READ | PROT_WRITE, (uint64_t)fl, I2U(-1),
	     0);
	if (p == MAP_FAILED)
		die("mmap");
	late_register(p, len);
	return p;
}

static void *late_worker(void *arg)
{
	struct worker *w = arg;
	size_t len = LATE_PAGES * (size_t)sysconf(_SC_PAGESIZE);
	int unmapper = w->idx == 0;

	if (!unmapper)
		late.range = late_map(w, len);
	pthread_barrier_wait(&go);
	for (unsigned long i = 0; i < opt.iterations; i++) {
		pthread_barrier_wait(&late.round);
		if (unmapper) {
			/* Returns once worker 1 has read the unmap event (and
			 * set late.range for the next round). */
			char *q = late.range;
			int r = munmap(q, len);
			NOTE(&w->log, OP_MUNMAP, res_int(r), P2U(q), len);
			if (r)
				die("munmap");
			continue;
		}
		/* The event is queued after the unmap let go of the lock. */
		struct pollfd pf = { .fd = late.uffd, .events = POLLIN };
		int pr;
		while ((pr = poll(&pf, 1, 10000)) < 0)
			if (errno != EINTR)
				die("poll");
		if (!pr) {
			errno = ETIMEDOUT;
			die("wait for the unmap event");
		}
		char *p = late_map(w, len);
		struct timespec d = { (time_t)(opt.late_ms / 1000), (long)(opt.late_ms % 1000) * 1000000 };
		while (nanosleep(&d, &d) && errno == EINTR)
			;
		/* (every event there is: none is left to wake the next
		 * round's poll early) */
		struct uffd_msg msg;
		int n = 0;
		while (read(late.uffd, &msg, sizeof(msg)) == sizeof(msg))
			n += msg.event == UFFD_EVENT_UNMAP;
		if (!n)
			die("read of the unmap event");
		late.range = p; /* (the next round's: worker 0 waits at the barrier) */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker workers[64];
	struct summary sum = { 0 };
	struct mark t0, t1;
	char extra[64];
	int c;
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "iterations", required_argument, NULL, 'k' },
		{ "late-exit", required_argument, NULL, 'x' },
		LOG_HELP_LONGOPTS,
	};

	prog = "lockorder";
	libc_warmup();
	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 't': opt.threads = parse_num("--threads", optarg, 1, 64); break;
		case 'k': opt.iterations = parse_num("--iterations", optarg, 0, 1UL << 32); break;
		case 'x': opt.late_ms = parse_num("--late-exit", optarg, 0, 60000); break;
		case 'l': opt.log = 1; break;
		}
	}
	if (opt.late_ms) {
		opt.threads = 2;
		late.uffd = late_uffd();
		pthread_barrier_init(&late.round, NULL, 2);
	}
	size_t per = opt.log ? 3 * opt.iterations : 0;
	pthread_barrier_init(&go, NULL, (unsigned)opt.threads + 1);
	for (unsigned long i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];
		worker_log_init(&w->log, w->prefix, sizeof w->prefix, i, per);
		w->idx = i;
		thread_start(&w->tid, NULL, opt.late_ms ? late_worker : worker_main, w);
	}
	mark_now(&t0, RUSAGE_SELF);
	pthread_barrier_wait(&go);
	for (unsigned long i = 0; i < opt.threads; i++)
		pthread_join(workers[i].tid, NULL);
	mark_now(&t1, RUSAGE_SELF);
	for (unsigned long i = 0; i < opt.threads; i++)
		worker_log_report(&workers[i].log, &sum);
	summary_add_usage(&sum, &t0.ru, &t1.ru);
	sum.wall_ns = ns_between(&t0.ts, &t1.ts);
	sum.threads = (int)opt.threads + 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra, " iterations=%lu", opt.iterations);
	if (opt.late_ms)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " late_ms=%lu",
			 opt.late_ms);
	summary_print(stdout, "", &sum, extra);
	return stdout_write_error();
}
