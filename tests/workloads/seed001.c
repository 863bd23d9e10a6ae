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

/* ==== Common scaffolding.  This block is repeated verbatim in every
 * workload program: the workloads are self-contained on purpose, so that the
 * programs under test link against nothing of vmrec. ==== */

#if !defined(__LP64__)
#error "the workloads log raw 64-bit syscall arguments: build them for a 64-bit target"
#endif

#define UNUSED __attribute__((unused))
#define MAX_ARGS 6

/* The memory-management ops of DESIGN.md section 3, in that order. */
enum mm_op {
	OP_MMAP, OP_MUNMAP, OP_MPROTECT, OP_PKEY_MPROTECT, OP_MADVISE,
	OP_PROCESS_MADVISE, OP_MLOCK, OP_MLOCK2, OP_MUNLOCK, OP_MLOCKALL,
	OP_MUNLOCKALL, OP_MREMAP, OP_BRK, OP_MSYNC, OP_MINCORE,
	OP_REMAP_FILE_PAGES, OP_SHMAT, OP_SHMDT, OP_MSEAL, OP__COUNT
};

/* How each argument is printed in --log lines: x = hex with 0x (addresses,
 * flag sets), u = unsigned decimal (lengths, counts, page offsets), i = C int
 * (fds, advice, keys, ids), l = signed 64-bit decimal (file offsets).  The
 * result: a = hex address, i = decimal; -errno is always negative decimal. */
static const struct {
	const char *name, *args;
	char res;
} op_info[OP__COUNT] = {
	[OP_MMAP] = { "mmap", "xuxxil", 'a' },
	[OP_MUNMAP] = { "munmap", "xu", 'i' },
	[OP_MPROTECT] = { "mprotect", "xux", 'i' },
	[OP_PKEY_MPROTECT] = { "pkey_mprotect", "xuxi", 'i' },
	[OP_MADVISE] = { "madvise", "xui", 'i' },
	[OP_PROCESS_MADVISE] = { "process_madvise", "ixuix", 'i' },
	[OP_MLOCK] = { "mlock", "xu", 'i' },
	[OP_MLOCK2] = { "mlock2", "xux", 'i' },
	[OP_MUNLOCK] = { "munlock", "xu", 'i' },
	[OP_MLOCKALL] = { "mlockall", "x", 'i' },
	[OP_MUNLOCKALL] = { "munlockall", "", 'i' },
	[OP_MREMAP] = { "mremap", "xuuxx", 'a' },
	[OP_BRK] = { "brk", "x", 'a' },
	[OP_MSYNC] = { "msync", "xux", 'i' },
	[OP_MINCORE] = { "mincore", "xux", 'i' },
	[OP_REMAP_FILE_PAGES] = { "remap_file_pages", "xuxux", 'i' },
	[OP_SHMAT] = { "shmat", "ixx", 'a' },
	[OP_SHMDT] = { "shmdt", "x", 'i' },
	[OP_MSEAL] = { "mseal", "xux", 'i' },
};

/* One memory call as the kernel saw it. */
struct mm_rec {
	uint32_t op;
	int64_t res; /* return value, or -errno */
	uint64_t arg[MAX_ARGS];
};

/* Accounting of the memory calls one thread (or process) issued itself.
 * Logging: cap > 0 buffers records in rec[] (printed later, e.g. after a
 * join); else out != NULL prints each call at once; else it only counts. */
struct mm_log {
	unsigned long calls, errors, per_op[OP__COUNT];
	struct mm_rec *rec;
	size_t nrec, cap;
	int overflow;
	FILE *out;
	const char *prefix; /* "" or e.g. "thread=1 " */
};

static const char *prog; /* program name for messages */

#define P2U(p) ((uint64_t)(uintptr_t)(p))
#define I2U(v) ((uint64_t)(int64_t)(v))
#define NOTE(l, op, res, ...) mm_note((l), (op), (res), (const uint64_t[MAX_ARGS]){ __VA_ARGS__ })

static UNUSED int is_errno(int64_t r)
{
	return r < 0 && r >= -4095;
}

/* The result of a libc call that returns -1 and sets errno on failure
 * (raw syscall(2) included): what the kernel returned. */
static UNUSED int64_t res_int(long r)
{
	return r == -1 ? -(int64_t)errno : (int64_t)r;
}

static UNUSED int64_t res_ptr(void *p)
{
	return p == MAP_FAILED ? -(int64_t)errno : (int64_t)(uintptr_t)p;
}

static UNUSED void rec_print(FILE *f, const char *prefix, const struct mm_rec *r)
{
	const char *fmt = op_info[r->op].args;

	fprintf(f, "%sop=%s args=", prefix, op_info[r->op].name);
	for (int i = 0; fmt[i]; i++) {
		uint64_t v = r->arg[i];

		if (i)
			fputc(',', f);
		switch (fmt[i]) {
		case 'x': fprintf(f, "0x%" PRIx64, v); break;
		case 'u': fprintf(f, "%" PRIu64, v); break;
		case 'i': fprintf(f, "%d", (int)(int32_t)(uint32_t)v); break;
		default: fprintf(f, "%" PRId64, (int64_t)v); break;
		}
	}
	if (op_info[r->op].res == 'a' && !is_errno(r->res))
		fprintf(f, " result=0x%" PRIx64 "\n", (uint64_t)r->res);
	else
		fprintf(f, " result=%" PRId64 "\n", r->res);
}

static UNUSED void mm_note(struct mm_log *l, enum mm_op op, int64_t res,
			   const uint64_t *arg)
{
	l->calls++;
	l->per_op[op]++;
	if (is_errno(res))
		l->errors++;
	if (l->cap) {
		if (l->nrec == l->cap) {
			l->overflow = 1;
			return;
		}
		struct mm_rec *r = &l->rec[l->nrec++];
		r->op = op;
		r->res = res;
		memcpy(r->arg, arg, sizeof r->arg);
	} else if (l->out) {
		struct mm_rec r = { .op = op, .res = res };
		memcpy(r.arg, arg, sizeof r.arg);
		rec_print(l->out, l->prefix ? l->prefix : "", &r);
	}
}

static UNUSED void mm_log_print(FILE *f, const struct mm_log *l)
{
	for (size_t i = 0; i < l->nrec; i++)
		rec_print(f, l->prefix ? l->prefix : "", &l->rec[i]);
}

/* Resource usage and time at one instant. */
struct mark {
	struct rusage ru;
	struct timespec ts;
};

static UNUSED void mark_now(struct mark *m, int who)
{
	getrusage(who, &m->ru);
	clock_gettime(CLOCK_MONOTONIC, &m->ts);
}

static UNUSED int64_t ns_between(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000 + (b->tv_nsec - a->tv_nsec);
}

struct summary {
	unsigned long calls, errors, per_op[OP__COUNT];
	long minflt, majflt, nvcsw, nivcsw;
	int64_t wall_ns;
	int threads, procs;
};

/* Add the rusage counters that grew from a to b. */
static UNUSED void summary_add_usage(struct summary *s, const struct rusage *a,
				     const struct rusage *b)
{
	s->minflt += b->ru_minflt - a->ru_minflt;
	s->majflt += b->ru_majflt - a->ru_majflt;
	s->nvcsw += b->ru_nvcsw - a->ru_nvcsw;
	s->nivcsw += b->ru_nivcsw - a->ru_nivcsw;
}

static UNUSED void summary_add_calls(struct summary *s, const struct mm_log *l)
{
	s->calls += l->calls;
	s->errors += l->errors;
	for (int i = 0; i < OP__COUNT; i++)
		s->per_op[i] += l->per_op[i];
}

/* "summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=
 * errors=", then `extra` (" key=value ..." or ""), then ops=NAME:N,... */
static UNUSED void summary_print(FILE *f, const char *prefix, const struct summary *s,
				 const char *extra)
{
	fprintf(f, "%ssummary: calls=%lu minflt=%ld majflt=%ld nvcsw=%ld nivcsw=%ld"
		" wall_ns=%" PRId64 " threads=%d procs=%d errors=%lu%s ops=",
		prefix, s->calls, s->minflt, s->majflt, s->nvcsw, s->nivcsw,
		s->wall_ns, s->threads, s->procs, s->errors, extra ? extra : "");
	for (int i = 0, n = 0; i < OP__COUNT; i++)
		if (s->per_op[i])
			fprintf(f, "%s%s:%lu", n++ ? "," : "", op_info[i].name, s->per_op[i]);
	fputc('\n', f);
}

static UNUSED __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static UNUSED __attribute__((noreturn, format(printf, 1, 2))) void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", prog);
	exit(2);
}

static UNUSED __attribute__((noreturn)) void try_help(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
	exit(2);
}

static UNUSED unsigned long parse_num(const char *opt, const char *s, unsigned long min,
				      unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || v < min || v > max)
		usage_error("%s: '%s' is not a number from %lu to %lu", opt, s, min, max);
	return v;
}

/* Run before anything else in main, whatever the options (--help too):
 * a static stdout buffer, so stdio never allocates, and glibc's malloc heap
 * initialised now (brk(NULL), brk(+132 KiB)).  Then the libc-internal memory
 * calls after startup are the same for every run of every workload (later
 * small allocations such as a thread's DTV fit in that heap), and a test
 * can subtract a recorded `--help` run as the baseline. */
static UNUSED void libc_warmup(void)
{
	static char stdout_buf[1 << 16];
	void *volatile p;

	setvbuf(stdout, stdout_buf, _IOFBF, sizeof stdout_buf);
	p = malloc(1);
	free(p);
}

/* ==== end of common scaffolding ==== */

#ifndef MADV_FREE
#define MADV_FREE 8
#endif
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
		{ "log", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
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
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			try_help(); /* getopt_long said what is wrong */
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
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
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error on stdout\n", prog);
		return 1;
	}
	return failed;
}
