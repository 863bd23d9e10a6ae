/*
 * workload.h - what every workload program shares: the --log line format,
 * the raw-syscall wrappers that log, the summary line, option parsing
 * helpers, the file a program maps.  Header-only (static functions),
 * included once by each program after its system headers, so that the
 * programs under test stay self-contained and link against nothing of
 * vmrec.
 */
#ifndef VMREC_WORKLOAD_H
#define VMREC_WORKLOAD_H

#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sys/stat.h>
#include "linux_abi.h" /* names older libc headers lack */

#if !defined(__LP64__)
#error "the workloads log raw 64-bit syscall arguments: build them for a 64-bit target"
#endif

#define UNUSED __attribute__((unused))
#define MAX_ARGS 6

/* The memory-management ops of vmtrace(5), KINDS AND OPS (VMT_OP_* of
 * format/vmtrace.h), in that order. */
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
 * errors=", then `extra` (" key=value ..." or ""), then the process's whole
 * getrusage as it prints (" self=MINFLT,MAJFLT,NVCSW,NIVCSW children=...":
 * RUSAGE_SELF and RUSAGE_CHILDREN, for recorders that count them), then
 * ops=NAME:N,... */
static UNUSED void summary_print(FILE *f, const char *prefix, const struct summary *s,
				 const char *extra)
{
	struct rusage self, children;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	fprintf(f, "%ssummary: calls=%lu minflt=%ld majflt=%ld nvcsw=%ld nivcsw=%ld"
		" wall_ns=%" PRId64 " threads=%d procs=%d errors=%lu%s"
		" self=%ld,%ld,%ld,%ld children=%ld,%ld,%ld,%ld ops=",
		prefix, s->calls, s->minflt, s->majflt, s->nvcsw, s->nivcsw,
		s->wall_ns, s->threads, s->procs, s->errors, extra ? extra : "",
		self.ru_minflt, self.ru_majflt, self.ru_nvcsw, self.ru_nivcsw,
		children.ru_minflt, children.ru_majflt, children.ru_nvcsw, children.ru_nivcsw);
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

/* The last entries of every workload's longopts[]: --log (val 'l', the
 * program's own case) and --help (val 'h', handled by next_opt), then the
 * terminator. */
#define LOG_HELP_LONGOPTS \
	{ "log", no_argument, NULL, 'l' }, \
	{ "help", no_argument, NULL, 'h' }, \
	{ NULL, 0, NULL, 0 }

/* getopt_long for programs that take long options only and no operands:
 * the next option's val, or -1 after the last.  --help prints `usage` and
 * exits 0; an unknown option (getopt_long said what is wrong) or an
 * operand is a usage error. */
static UNUSED int next_opt(int argc, char **argv, const struct option *longopts,
			   const char *usage)
{
	int c = getopt_long(argc, argv, "", longopts, NULL);

	switch (c) {
	case 'h':
		fputs(usage, stdout);
		exit(0);
	case '?':
		try_help();
	case -1:
		if (optind < argc)
			usage_error("unexpected argument '%s'", argv[optind]);
	}
	return c;
}

/* Flush stdout at the end of main: 0, or 1 after saying on stderr that
 * writing it failed (main then returns 1). */
static UNUSED int stdout_write_error(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error on stdout\n", prog);
		return 1;
	}
	return 0;
}

/* A file this program created, removed at exit even after die(); clear
 * it once the program removed the file itself. */
static UNUSED char created_path[4096];

static UNUSED void remove_created(void)
{
	if (created_path[0])
		unlink(created_path);
}

/* Open `file` read-only if it is a regular file of at least `size` bytes
 * (*created = 0).  Else create it (or, when file is NULL, a temporary
 * $TMPDIR/vmrec-PROG-XXXXXX) read-write and empty for the caller to fill
 * (*created = 1): it is removed at exit.  Its name goes to path. */
static UNUSED int open_or_create(const char *file, uint64_t size, char *path, size_t pathlen,
				 int *created)
{
	struct stat st;
	int fd;

	*created = 0;
	if (file && stat(file, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size >= size) {
		snprintf(path, pathlen, "%s", file);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die(path);
		return fd;
	}
	if (file) {
		snprintf(path, pathlen, "%s", file);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	} else {
		const char *dir = getenv("TMPDIR");

		snprintf(path, pathlen, "%s/vmrec-%s-XXXXXX", dir && *dir ? dir : "/tmp", prog);
		fd = mkostemp(path, O_CLOEXEC);
	}
	if (fd < 0)
		die(path);
	*created = 1;
	snprintf(created_path, sizeof created_path, "%s", path);
	atexit(remove_created);
	return fd;
}

/* Start a thread (attr may be NULL), or die saying why. */
static UNUSED void thread_start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
				void *arg)
{
	int r = pthread_create(t, attr, fn, arg);
	if (r) {
		errno = r;
		die("pthread_create");
	}
}

/* Worker i's log: its lines prefixed "thread=<i> " (kept in prefix, len
 * bytes), with room for cap calls (0: none are logged). */
static UNUSED void worker_log_init(struct mm_log *l, char *prefix, size_t len, unsigned long i,
				   size_t cap)
{
	snprintf(prefix, len, "thread=%lu ", i);
	l->prefix = prefix;
	if (cap && !(l->rec = calloc(cap, sizeof(*l->rec))))
		die("calloc of the log");
	l->cap = cap;
}

/* A worker_log_init log after its thread's join: printed, its calls
 * counted into s, freed. */
static UNUSED void worker_log_report(struct mm_log *l, struct summary *s)
{
	mm_log_print(stdout, l);
	summary_add_calls(s, l);
	free(l->rec);
	l->rec = NULL;
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


#endif /* VMREC_WORKLOAD_H */
