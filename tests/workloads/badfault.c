/*
 * badfault - page faults the kernel does not count in a task's rusage
 * (min_flt, maj_flt) beside faults it counts that no instruction took,
 * so that a recorder's fault events can be held to the kernel's own
 * count.  See --help and tests/workloads/README.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workload.h" /* logging, summary line, option helpers */

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static const char usage_text[] =
"Usage: badfault [--pages N] [--log]\n"
"\n"
"Takes page faults that the kernel does not count in its rusage (minflt,\n"
"majflt), beside faults it counts that no instruction took: what a\n"
"recorder's page-fault events must tell apart to match the kernel's count.\n"
"N pages of each kind, in this order:\n"
"  barrier   reads of PROT_NONE pages: the SIGSEGV handler mprotects the\n"
"            page readable and writable and the read is done again, as a\n"
"            garbage collector's barrier does.  The first fault is not\n"
"            counted (an access error), the second is.\n"
"  sigbus    reads of a file mapping's page past the end of the file: each\n"
"            SIGBUS is caught (siglongjmp).  Not counted (an error).\n"
"  retry     reads of pages a userfaultfd resolves, from a second thread\n"
"            that interrupts each waiting fault once with a signal first:\n"
"            the fault goes back to user space uncounted, the handler runs,\n"
"            the read faults again and is counted once the page is there.\n"
"            Left out (retry=0 in the summary) where the kernel refuses a\n"
"            userfaultfd.\n"
"  kernel    one-byte read()s of the file into fresh pages: faults the\n"
"            kernel takes on the program's memory for it, counted.\n"
"  populate  mmap(MAP_POPULATE) and madvise(MADV_POPULATE_WRITE) of fresh\n"
"            pages: faults the kernel takes for the call (through\n"
"            get_user_pages), counted though no instruction faulted.  A\n"
"            madvise the kernel refuses (before Linux 5.14) is logged and\n"
"            its pages left out.\n"
"\n"
"Options:\n"
"  --pages N   pages of each kind (default 64)\n"
"  --log       print one line per memory call\n"
"  --help      this text\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (the calls of\n"
"the signal handler and of the second thread among them), then always one\n"
"line\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= uncounted= retry= populated= pages= barrier_at= sigbus_at=\n"
"           retry_at= self= children= ops=NAME:N,...\n"
"minflt..nivcsw are getrusage(RUSAGE_SELF) deltas from the first mmap to\n"
"the last munmap.  uncounted is the number of fault exceptions the program\n"
"took that the kernel did not count (N barrier + N sigbus + N retry);\n"
"retry is 1 when the retry kind ran; populated the pages the populate\n"
"kind's calls faulted in (2 N when both succeeded); barrier_at, sigbus_at\n"
"and retry_at where the barrier's N pages were, the page past the end of\n"
"the file, the retry kind's N pages (0: not run).  (So a count of\n"
"the fault exceptions, 3 N more than the kernel's, and one of the faults\n"
"instructions took, 2 N fewer, are both off.)\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those.\n";

static struct {
	unsigned long pages;
	int log;
} opt = { 64, 0 };

static size_t page;
static struct mm_log lg; /* (the handler logs too: buffered, no stdio) */
static sigjmp_buf bus_env;
static volatile sig_atomic_t interrupted;

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pages", required_argument, NULL, 'n' },
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 'n': opt.pages = parse_num("--pages", optarg, 1, 1UL << 20); break;
		case 'l': opt.log = 1; break;
		}
	}
}

static char *map_anon(size_t len, int prot, int flags)
{
	char *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	NOTE(&lg, OP_MMAP, res_ptr(p), 0, len, I2U(prot), I2U(MAP_PRIVATE | MAP_ANONYMOUS | flags),
	     I2U(-1), 0);
	return p;
}

static void unmap(void *p, size_t len)
{
	int r = munmap(p, len);
	NOTE(&lg, OP_MUNMAP, res_int(r), P2U(p), len);
	if (r)
		die("munmap");
}

/* The barrier: the faulting page made accessible, the read done again. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	char *pg = (char *)((uintptr_t)si->si_addr & ~(uintptr_t)(page - 1));
	int r = mprotect(pg, page, PROT_READ | PROT_WRITE);
	NOTE(&lg, OP_MPROTECT, res_int(r), P2U(pg), page, PROT_READ | PROT_WRITE);
	if (r)
		_exit(3);
}

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_env, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	interrupted++;
}

static void handle(int sig, void (*fn)(int), void (*act)(int, siginfo_t *, void *))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	if (act) {
		sa.sa_sigaction = act;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = fn;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		die("sigaction");
}

struct resolver {
	int uffd;
	pid_t tid; /* the faulting thread */
	char *src; /* a page of what the resolved pages hold */
	unsigned long n;
	int failed;
};

/* Each fault: seen waiting, interrupted by a signal, seen waiting again
 * (the read faulted anew after the handler), then resolved. */
static void *resolve(void *arg)
{
	struct resolver *rs = arg;
	for (unsigned long i = 0; i < rs->n; i++) {
		struct uffd_msg m;
		uint64_t addr = 0;
		for (int round = 0; round < 2; round++) {
			if (read(rs->uffd, &m, sizeof(m)) != (ssize_t)sizeof(m) ||
			    m.event != UFFD_EVENT_PAGEFAULT) {
				rs->failed = 1;
				return NULL;
			}
			addr = m.arg.pagefault.address & ~(uint64_t)(page - 1);
			if (round == 0 && syscall(SYS_tgkill, getpid(), rs->tid, SIGUSR1)) {
				rs->failed = 1;
				return NULL;
			}
		}
		struct uffdio_copy c = { .dst = addr, .src = P2U(rs->src), .len = page };
		if (ioctl(rs->uffd, UFFDIO_COPY, &c)) {
			rs->failed = 1;
			return NULL;
		}
	}
	return NULL;
}

/* The retry kind; 0 where the kernel has no userfaultfd for us. */
static int retry_kind(unsigned long n, char **where)
{
	int uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (uffd < 0)
		return 0;
	struct uffdio_api api = { .api = UFFD_API };
	if (ioctl(uffd, UFFDIO_API, &api)) {
		close(uffd);
		return 0;
	}
	size_t len = n * page, stack_len = 1 << 20;
	char *p = map_anon(len, PROT_READ | PROT_WRITE, 0);
	char *src = map_anon(page, PROT_READ | PROT_WRITE, 0);
	char *stack = map_anon(stack_len, PROT_READ | PROT_WRITE, 0);
	if (p == MAP_FAILED || src == MAP_FAILED || stack == MAP_FAILED)
		die("mmap");
	memset(src, 0x5a, page);
	struct uffdio_register reg = { .range = { P2U(p), len }, .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	struct resolver rs = { uffd, (pid_t)syscall(SYS_gettid), src, n, 0 };
	*where = p;
	pthread_attr_t at;
	pthread_t th;
	pthread_attr_init(&at);
	pthread_attr_setstack(&at, stack, stack_len);
	thread_start(&th, &at, resolve, &rs);
	unsigned sink = 0;
	for (unsigned long i = 0; i < n && !rs.failed; i++) {
		interrupted = 0;
		sink += *(volatile unsigned char *)(p + i * page);
		if (interrupted != 1) {
			fprintf(stderr, "badfault: the read of retry page %lu was interrupted %d times\n",
				i, (int)interrupted);
			exit(1);
		}
	}
	(void)sink;
	pthread_join(th, NULL);
	if (rs.failed) {
		fprintf(stderr, "badfault: the userfaultfd thread failed: %s\n", strerror(errno));
		exit(1);
	}
	close(uffd);
	unmap(p, len);
	unmap(src, page);
	unmap(stack, stack_len);
	return 1;
}

int main(int argc, char **argv)
{
	struct summary sum = { 0 };
	struct mark t0, t1;
	char extra[256], path[4096];
	unsigned sink = 0;
	int created;

	prog = "badfault";
	libc_warmup();
	parse_args(argc, argv);
	page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = opt.pages, len = n * page;
	/* (room for every call: the handler's, the thread's) */
	lg.cap = 64 + n;
	lg.rec = calloc(lg.cap, sizeof(*lg.rec));
	if (!lg.rec)
		die("calloc");
	handle(SIGSEGV, NULL, on_segv);
	handle(SIGBUS, on_bus, NULL);
	handle(SIGUSR1, on_usr1, NULL);
	/* A file of one page, for sigbus (its second page) and kernel. */
	int fd = open_or_create(NULL, 0, path, sizeof(path), &created);
	char buf[4096];
	memset(buf, 1, sizeof(buf));
	if (pwrite(fd, buf, sizeof(buf) < page ? sizeof(buf) : page, 0) < 0)
		die("pwrite");

	mark_now(&t0, RUSAGE_SELF);
	/* barrier */
	char *p = map_anon(len, PROT_NONE, 0), *barrier_at = p, *sigbus_at, *retry_at = NULL;
	if (p == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < n; i++)
		sink += *(volatile unsigned char *)(p + i * page);
	unmap(p, len);

	/* sigbus: the file has one page, its mapping two */
	p = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, fd, 0);
	NOTE(&lg, OP_MMAP, res_ptr(p), 0, 2 * page, PROT_READ, MAP_SHARED, I2U(fd), 0);
	if (p == MAP_FAILED)
		die("mmap");
	sigbus_at = p + page;
	for (size_t i = 0; i < n; i++)
		if (!sigsetjmp(bus_env, 1))
			sink += *(volatile unsigned char *)(p + page);
	unmap(p, 2 * page);

	int retried = retry_kind(n, &retry_at);

	/* kernel */
	p = map_anon(len, PROT_READ | PROT_WRITE, 0);
	if (p == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < n; i++)
		if (pread(fd, p + i * page, 1, 0) != 1)
			die("pread");
	unmap(p, len);

	/* populate */
	unsigned long populated = 0;
	p = map_anon(len, PROT_READ | PROT_WRITE, MAP_POPULATE);
	if (p == MAP_FAILED)
		die("mmap");
	populated += n;
	unmap(p, len);
	p = map_anon(len, PROT_READ | PROT_WRITE, 0);
	if (p == MAP_FAILED)
		die("mmap");
	int r = madvise(p, len, MADV_POPULATE_WRITE);
	NOTE(&lg, OP_MADVISE, res_int(r), P2U(p), len, MADV_POPULATE_WRITE);
	populated += r ? 0 : n;
	unmap(p, len);
	mark_now(&t1, RUSAGE_SELF);
	(void)sink;
	close(fd);

	if (opt.log)
		mm_log_print(stdout, &lg);
	if (lg.overflow) {
		fprintf(stderr, "badfault: more calls than the log holds\n");
		return 1;
	}
	summary_add_calls(&sum, &lg);
	summary_add_usage(&sum, &t0.ru, &t1.ru);
	sum.wall_ns = ns_between(&t0.ts, &t1.ts);
	sum.threads = 1 + retried;
	sum.procs = 1;
	snprintf(extra, sizeof extra,
		 " uncounted=%zu retry=%d populated=%lu pages=%zu barrier_at=%p sigbus_at=%p"
		 " retry_at=%p",
		 (2 + (size_t)retried) * n, retried, populated, n, (void *)barrier_at,
		 (void *)sigbus_at, (void *)retry_at);
	summary_print(stdout, "", &sum, extra);
	return stdout_write_error();
}
