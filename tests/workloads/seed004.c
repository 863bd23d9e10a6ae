/*
 * seed004 - read faults on fresh anonymous pages (which map the shared zero
 * page) followed by write faults on the same pages (copy-on-write from the
 * zero page), per page.  Models seed 004 (Eric Dumazet, "Re: [rfc] no
 * ZERO_PAGE?", April 2007).  See --help and tests/workloads/README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

static const char usage_text[] =
"Usage: seed004 [--pages N] [--rounds R] [--write-only] [--log]\n"
"\n"
"Models seed 004 (Eric Dumazet, linux-kernel, April 2007, \"Re: [rfc] no\n"
"ZERO_PAGE?\"): on a Pentium-M a write fault on a fresh page cost ~2,300\n"
"cycles, a read fault mapping the zero page ~890, and the later write fault\n"
"that replaces the zero page by a private copy ~2,660: read-then-write costs\n"
"more than writing at once.\n"
"\n"
"Each round mmaps N private anonymous pages, reads one byte of every page\n"
"(read faults: the zero page), then writes one byte of every page (write\n"
"faults: copy-on-write from the zero page), then munmaps them.\n"
"\n"
"Options:\n"
"  --pages N      pages per round (default 4096)\n"
"  --rounds R     rounds (default 3; 0 is allowed)\n"
"  --write-only   skip the read pass (the seed's case 1, for comparison)\n"
"  --log          print one line per memory call\n"
"  --help         this text\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (addresses and\n"
"flag sets hex 0x.., lengths, fds, ints and offsets decimal, -errno negative\n"
"decimal; mmap's result hex), then always one line\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= read_minflt= write_minflt= read_ns= write_ns= pages=\n"
"           rounds= ops=NAME:N,...\n"
"minflt..nivcsw are getrusage(RUSAGE_SELF) deltas over all rounds (mmap to\n"
"munmap) and wall_ns their time; read_minflt/read_ns and write_minflt/\n"
"write_ns cover only the read passes and the write passes, summed over the\n"
"rounds.  Transparent huge pages would change the fault counts: the\n"
"mapping is not madvised, so with THP \"enabled\" set to madvise or never\n"
"every fault is a 4 KiB one.\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those.\n";

static struct {
	unsigned long pages, rounds;
	int write_only, log;
} opt = { 4096, 3, 0, 0 };

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pages", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "write-only", no_argument, NULL, 'w' },
		{ "log", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': opt.pages = parse_num("--pages", optarg, 1, 1UL << 32); break;
		case 'r': opt.rounds = parse_num("--rounds", optarg, 0, 1UL << 32); break;
		case 'w': opt.write_only = 1; break;
		case 'l': opt.log = 1; break;
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

int main(int argc, char **argv)
{
	struct mm_log l = { 0 };
	struct summary sum = { 0 }, rd = { 0 }, wr = { 0 };
	struct mark t0, t1, a, b, c;
	int64_t read_ns = 0, write_ns = 0;
	char extra[256];
	size_t page, len;
	unsigned sink = 0;

	prog = "seed004";
	libc_warmup();
	parse_args(argc, argv);
	page = (size_t)sysconf(_SC_PAGESIZE);
	len = opt.pages * page;
	if (opt.log)
		l.out = stdout;

	mark_now(&t0, RUSAGE_SELF);
	for (unsigned long round = 0; round < opt.rounds; round++) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		NOTE(&l, OP_MMAP, res_ptr(p), 0, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
		if (p == MAP_FAILED)
			die("mmap");
		mark_now(&a, RUSAGE_SELF);
		if (!opt.write_only)
			for (size_t off = 0; off < len; off += page)
				sink += *(volatile unsigned char *)(p + off);
		mark_now(&b, RUSAGE_SELF);
		for (size_t off = 0; off < len; off += page)
			*(volatile unsigned char *)(p + off) = (unsigned char)round;
		mark_now(&c, RUSAGE_SELF);
		int r = munmap(p, len);
		NOTE(&l, OP_MUNMAP, res_int(r), P2U(p), len);
		if (r)
			die("munmap");
		summary_add_usage(&rd, &a.ru, &b.ru);
		summary_add_usage(&wr, &b.ru, &c.ru);
		read_ns += ns_between(&a.ts, &b.ts);
		write_ns += ns_between(&b.ts, &c.ts);
	}
	mark_now(&t1, RUSAGE_SELF);
	(void)sink;

	summary_add_calls(&sum, &l);
	summary_add_usage(&sum, &t0.ru, &t1.ru);
	sum.wall_ns = ns_between(&t0.ts, &t1.ts);
	sum.threads = 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra,
		 " read_minflt=%ld write_minflt=%ld read_ns=%" PRId64 " write_ns=%" PRId64
		 " pages=%lu rounds=%lu",
		 rd.minflt, wr.minflt, read_ns, write_ns, opt.pages, opt.rounds);
	summary_print(stdout, "", &sum, extra);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error on stdout\n", prog);
		return 1;
	}
	return 0;
}
