/*
 * seed001 - N processes each memset a large anonymous mapping and give it
 * back with madvise(MADV_FREE) or madvise(MADV_DONTNEED), L times.  Models
 * seed 001 (Minchan Kim, "mm: throttle MADV_FREE", February 2015).
 * See --help and tests/workloads/README.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
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

#define MAX_PROCS 256

static const char usage_text[] =
"Usage: seed001 [--procs N] [--size MiB] [--loops L] [--advice free|dontneed]\n"
"               [--log]\n"
"\n"
"Models seed 001 (Minchan Kim, linux-kernel, February 2015, \"mm: throttle\n"
"MADV_FREE\"): 12 processes each mmap 512 MiB and 5 times memset it and\n"
"madvise(MADV_FREE or MADV_DONTNEED) it.  On a 3 GiB machine: dontneed\n"
"0:48.89 elapsed (234 s system), MADV_FREE 1:30.67 (401 s system), MADV_FREE\n"
"throttled by the patch 0:36.52 (113 s system).\n"
"\n"
"The parent forks N children and releases them together; each child mmaps\n"
"SIZE MiB of private anonymous memory, L times memsets all of it and\n"
"madvises all of it, then munmaps it.  The parent issues no memory call.\n"
"\n"
"Options:\n"
"  --procs N               child processes (default 2, 1..256)\n"
"  --size MiB              mapping size per child (default 16)\n"
"  --loops L               memset+madvise rounds (default 5; 0 is allowed)\n"
"  --advice free|dontneed  MADV_FREE or MADV_DONTNEED (default free)\n"
"  --log                   print one line per memory call, prefixed\n"
"                          \"proc=<i> \" (child i = 1..N)\n"
"  --help                  this text\n"
"\n"
"Output: with --log, lines \"proc=<i> op=NAME args=A,B,... result=R\"\n"
"(addresses and flag sets hex 0x.., lengths, fds, ints and offsets decimal,\n"
"-errno negative decimal; mmap's result hex).  Each child's output (its log,\n"
"then \"proc=<i> summary: ...\" with its own getrusage(RUSAGE_SELF) deltas\n"
"and wall time from mmap to munmap) is kept in a temporary file and printed\n"
"by the parent in child order.  The last line is the total:\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= advice= size_mib= loops= ops=NAME:N,...\n"
"calls sums the children's calls.  minflt..nivcsw are the parent's\n"
"getrusage(RUSAGE_SELF) deltas from just before the first fork to after the\n"
"last wait plus the getrusage(RUSAGE_CHILDREN) deltas over the same span\n"
"(the children's whole lives, fork to exit).  wall_ns runs from the release\n"
"of the children to the last one reaped.  threads and procs count the parent.\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those.\n";

static struct {
	unsigned long procs, size_mib, loops;
	int advice;
	int log;
} opt = { 2, 16, 5, MADV_FREE, 0 };

/* What a child tells the parent through the report pipe: one write of
 * less than PIPE_BUF bytes, so atomic; N of them fit in the pipe. */
struct report {
	int index, failed;
	unsigned long calls, errors, per_op[OP__COUNT];
};

static const char *advice_name(int advice)
{
	return advice == MADV_FREE ? "free" : "dontneed";
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "procs", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "loops", required_argument, NULL, 'L' },
		{ "advice", required_argument, NULL, 'a' },
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 'n': opt.procs = parse_num("--procs", optarg, 1, MAX_PROCS); break;
		case 's': opt.size_mib = parse_num("--size", optarg, 1, 1UL << 22); break;
		case 'L': opt.loops = parse_num("--loops", optarg, 0, 1UL << 40); break;
		case 'l': opt.log = 1; break;
		case 'a':
			if (!strcmp(optarg, "free"))
				opt.advice = MADV_FREE;
			else if (!strcmp(optarg, "dontneed"))
				opt.advice = MADV_DONTNEED;
			else
				usage_error("--advice: '%s' is not free or dontneed", optarg);
			break;
		}
	}
}

/* An unlinked temporary file for one child's output. */
static int temp_output(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof path, "%s/vmrec-seed001-XXXXXX", dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		die("temporary output file");
	unlink(path);
	return fd;
}

/* Child i (1-based): wait for the release, run, report, exit. */
static void __attribute__((noreturn)) child(int index, int go_fd, int report_fd)
{
	char prefix[32], extra[64], c;
	struct mm_log l = { 0 };
	struct summary s = { 0 };
	struct report rep = { .index = index };
	size_t len = opt.size_mib << 20;
	struct mark t0, t1;
	char *p;
	int r;

	snprintf(prefix, sizeof prefix, "proc=%d ", index);
	l.prefix = prefix;
	if (opt.log)
		l.out = stdout;
	while (read(go_fd, &c, 1) < 0 && errno == EINTR)
		;

	mark_now(&t0, RUSAGE_SELF);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	NOTE(&l, OP_MMAP, res_ptr(p), 0, len, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	if (p == MAP_FAILED) {
		rep.failed = 1;
		fprintf(stderr, "%s: proc %d: mmap of %zu bytes: %s\n", prog, index, len,
			strerror(errno));
	} else {
		for (unsigned long i = 0; i < opt.loops; i++) {
			memset(p, (int)(i + 1), len);
			r = madvise(p, len, opt.advice);
			NOTE(&l, OP_MADVISE, res_int(r), P2U(p), len, (uint64_t)opt.advice);
			if (r) {
				rep.failed = 1;
				fprintf(stderr, "%s: proc %d: madvise: %s\n", prog, index,
					strerror(errno));
				break;
			}
		}
		r = munmap(p, len);
		NOTE(&l, OP_MUNMAP, res_int(r), P2U(p), len);
		if (r)
			rep.failed = 1;
	}
	mark_now(&t1, RUSAGE_SELF);

	summary_add_calls(&s, &l);
	summary_add_usage(&s, &t0.ru, &t1.ru);
	s.wall_ns = ns_between(&t0.ts, &t1.ts);
	s.threads = 1;
	s.procs = 1;
	snprintf(extra, sizeof extra, " advice=%s size_mib=%lu loops=%lu",
		 advice_name(opt.advice), opt.size_mib, opt.loops);
	summary_print(stdout, prefix, &s, extra);
	if (fflush(stdout))
		rep.failed = 1;

	rep.calls = l.calls;
	rep.errors = l.errors;
	memcpy(rep.per_op, l.per_op, sizeof rep.per_op);
	if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep)
		_exit(1);
	_exit(rep.failed);
}

int main(int argc, char **argv)
{
	static int out_fd[MAX_PROCS];
	static pid_t pids[MAX_PROCS];
	static char copybuf[1 << 16];
	struct summary sum = { 0 };
	struct mark s0, s1, c0, c1;
	struct timespec released;
	int go[2], rep[2], failed = 0;
	char extra[96];

	prog = "seed001";
	libc_warmup();
	parse_args(argc, argv);

	if (pipe2(go, O_CLOEXEC) || pipe2(rep, O_CLOEXEC))
		die("pipe");
	for (unsigned long i = 0; i < opt.procs; i++)
		out_fd[i] = temp_output();

	fflush(stdout);
	mark_now(&s0, RUSAGE_SELF);
	mark_now(&c0, RUSAGE_CHILDREN);
	for (unsigned long i = 0; i < opt.procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			close(go[1]);
			close(rep[0]);
			if (dup2(out_fd[i], STDOUT_FILENO) < 0)
				_exit(1);
			child((int)i + 1, go[0], rep[1]);
		}
	}
	close(go[0]);
	close(rep[1]);
	clock_gettime(CLOCK_MONOTONIC, &released);
	close(go[1]); /* every child's read() returns 0: go */

	for (unsigned long i = 0; i < opt.procs; i++) {
		int status;

		while (waitpid(pids[i], &status, 0) < 0)
			if (errno != EINTR)
				die("waitpid");
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "%s: proc %lu failed (wait status 0x%x)\n", prog,
				i + 1, status);
			failed = 1;
		}
	}
	mark_now(&s1, RUSAGE_SELF);
	mark_now(&c1, RUSAGE_CHILDREN);

	for (unsigned long i = 0; i < opt.procs; i++) {
		struct report r;
		ssize_t n = read(rep[0], &r, sizeof r);

		if (n != (ssize_t)sizeof r) {
			fprintf(stderr, "%s: a child sent no report\n", prog);
			failed = 1;
			break;
		}
		struct mm_log l = { .calls = r.calls, .errors = r.errors };
		memcpy(l.per_op, r.per_op, sizeof l.per_op);
		summary_add_calls(&sum, &l);
	}
	for (unsigned long i = 0; i < opt.procs; i++) {
		ssize_t n;
		off_t off = 0;

		while ((n = pread(out_fd[i], copybuf, sizeof copybuf, off)) > 0) {
			fwrite(copybuf, 1, (size_t)n, stdout);
			off += n;
		}
		close(out_fd[i]);
	}

	summary_add_usage(&sum, &s0.ru, &s1.ru);
	summary_add_usage(&sum, &c0.ru, &c1.ru);
	sum.wall_ns = ns_between(&released, &s1.ts);
	sum.threads = (int)opt.procs + 1;
	sum.procs = (int)opt.procs + 1;
	snprintf(extra, sizeof extra, " advice=%s size_mib=%lu loops=%lu",
		 advice_name(opt.advice), opt.size_mib, opt.loops);
	summary_print(stdout, "", &sum, extra);
	if (stdout_write_error())
		return 1;
	return failed;
}
