/*
 * everyop - every memory-management op of DESIGN.md section 3, once each,
 * with known arguments, each issued as a raw syscall(2) so that what the
 * program logs is exactly what the kernel (and vmrec) saw.
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
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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

/* Numbers the build host's headers may predate (the same on every arch
 * that uses the unified syscall table: x86-64, arm64, ...). */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

static const char usage_text[] =
"Usage: everyop [--log]\n"
"\n"
"Issues every memory-management op of DESIGN.md section 3 once, as raw\n"
"syscall(2) calls with known arguments (P = page size), in this order:\n"
"   1 mmap(NULL, 4P, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = A\n"
"   2 mmap(NULL, 2P, PROT_READ|PROT_WRITE, MAP_SHARED, fd, P) = F   (a 4-page\n"
"     temporary file in $TMPDIR or /tmp, removed at the end)\n"
"   3 mprotect(A, P, PROT_READ)\n"
"   4 pkey_mprotect(A, P, PROT_READ|PROT_WRITE, -1)  (-1: no key, works\n"
"     without protection keys)\n"
"   5 madvise(A, 4P, MADV_DONTNEED)\n"
"   6 process_madvise(pidfd_open(getpid()), {A, 4P}, 1, MADV_COLD, 0)\n"
"   7 mlock(A, P)            8 munlock(A, P)\n"
"   9 mlock2(A, 4P, MLOCK_ONFAULT)    10 munlock(A, 4P)\n"
"  11 mlockall(MCL_CURRENT|MCL_ONFAULT)    12 munlockall()\n"
"  13 mremap(A, 4P, 8P, MREMAP_MAYMOVE, 0) = A2\n"
"  14 brk(0) = B, brk(B + P), brk(B)\n"
"  15 msync(F, 2P, MS_SYNC)\n"
"  16 mincore(A2, 8P, vec)\n"
"  17 remap_file_pages(F, P, 0, 3, 0)   (deprecated; emulated or failing)\n"
"  18 shmat(shmget(IPC_PRIVATE, P, 0600), NULL, 0) = S, shmdt(S), then\n"
"     shmctl(IPC_RMID) (shmget and shmctl are not memory ops: not logged)\n"
"  19 mmap(NULL, P, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0) = M,\n"
"     mseal(M, P, 0)   (fails with ENOSYS, EINVAL or EPERM on some kernels)\n"
"  20 munmap(A2 + 1, P): fails with EINVAL on purpose\n"
"  21 munmap(A2, 8P), munmap(F, 2P), munmap(M, P) (EPERM when M is sealed)\n"
"Pages are touched between the calls so that they act on present pages.\n"
"Every call is issued whatever the earlier ones returned (a failing shmget\n"
"still leads to shmat(-1) and shmdt); the program fails only when it cannot\n"
"make A, F or the file.\n"
"\n"
"Options:\n"
"  --log    print one line per memory call\n"
"  --help   this text\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (addresses and\n"
"flag sets hex 0x.., lengths, fds, ints and offsets decimal, -errno negative\n"
"decimal; results of mmap, mremap, brk and shmat hex), then always one line\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= failed=NAME:-ERRNO,... ops=NAME:N,...\n"
"with getrusage(RUSAGE_SELF) deltas and the time from the first mmap to the\n"
"last munmap; failed lists every call that returned -errno, in order\n"
"(\"-\" when none).\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those.\n";

static struct mm_log l;
static char failed[1024];

/* Issue raw syscall nr with the six arguments arg[] (those past the op's
 * own are 0 and ignored by the kernel), log it, return its result or -errno.
 * Every argument goes through uint64_t so that no int meets syscall()'s
 * variadic long parameters. */
static int64_t call(enum mm_op op, long nr, const uint64_t *arg)
{
	int64_t res = res_int(syscall(nr, arg[0], arg[1], arg[2], arg[3], arg[4], arg[5]));
	size_t n = strlen(failed);

	mm_note(&l, op, res, arg);
	if (is_errno(res))
		snprintf(failed + n, sizeof failed - n, "%s%s:%" PRId64, n ? "," : "",
			 op_info[op].name, res);
	return res;
}
#define CALL(op, nr, ...) call((op), (nr), (const uint64_t[MAX_ARGS]){ __VA_ARGS__ })

/* A file this program created, removed at exit even after die(). */
static char created_path[4096];
static void remove_created(void)
{
	if (created_path[0])
		unlink(created_path);
}

static void touch(void *p, size_t len, size_t page)
{
	for (size_t off = 0; off < len; off += page)
		((volatile char *)p)[off] = 1;
}

static void parse_args(int argc, char **argv, int *log)
{
	static const struct option longopts[] = {
		{ "log", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': *log = 1; break;
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
	static char filedata[4 << 16];
	static unsigned char vec[64];
	struct summary sum = { 0 };
	struct mark t0, t1;
	char path[4096], extra[1100];
	const char *dir = getenv("TMPDIR");
	int log = 0, fd, pidfd, shmid;
	uint64_t P, A, F, A2, B, S, M;
	int64_t r;
	struct iovec iov;

	prog = "everyop";
	libc_warmup();
	parse_args(argc, argv, &log);
	P = (uint64_t)sysconf(_SC_PAGESIZE);
	if (log)
		l.out = stdout;

	snprintf(path, sizeof path, "%s/vmrec-everyop-XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		die(path);
	snprintf(created_path, sizeof created_path, "%s", path);
	atexit(remove_created);
	memset(filedata, 'f', sizeof filedata);
	if (pwrite(fd, filedata, 4 * P <= sizeof filedata ? 4 * P : sizeof filedata, 0) < 0 ||
	    ftruncate(fd, (off_t)(4 * P)))
		die(path);

	mark_now(&t0, RUSAGE_SELF);
	/* 1, 2: an anonymous and a file mapping */
	r = CALL(OP_MMAP, SYS_mmap, 0, 4 * P, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	if (is_errno(r)) {
		errno = (int)-r;
		die("mmap of anonymous memory");
	}
	A = (uint64_t)r;
	r = CALL(OP_MMAP, SYS_mmap, 0, 2 * P, PROT_READ | PROT_WRITE, MAP_SHARED,
		 (uint64_t)fd, P);
	if (is_errno(r)) {
		errno = (int)-r;
		die("mmap of the file");
	}
	F = (uint64_t)r;
	touch((void *)A, 4 * P, P);

	/* 3-6: protection and advice */
	CALL(OP_MPROTECT, SYS_mprotect, A, P, PROT_READ);
	CALL(OP_PKEY_MPROTECT, SYS_pkey_mprotect, A, P, PROT_READ | PROT_WRITE, I2U(-1));
	CALL(OP_MADVISE, SYS_madvise, A, 4 * P, MADV_DONTNEED);
	touch((void *)A, 4 * P, P);
	pidfd = (int)syscall(SYS_pidfd_open, (long)getpid(), 0L);
	iov.iov_base = (void *)A;
	iov.iov_len = 4 * P;
	CALL(OP_PROCESS_MADVISE, SYS_process_madvise, I2U(pidfd), P2U(&iov), 1,
	     MADV_COLD, 0);
	if (pidfd >= 0)
		close(pidfd);

	/* 7-12: locking */
	CALL(OP_MLOCK, SYS_mlock, A, P);
	CALL(OP_MUNLOCK, SYS_munlock, A, P);
	CALL(OP_MLOCK2, SYS_mlock2, A, 4 * P, MLOCK_ONFAULT);
	CALL(OP_MUNLOCK, SYS_munlock, A, 4 * P);
	CALL(OP_MLOCKALL, SYS_mlockall, MCL_CURRENT | MCL_ONFAULT);
	CALL(OP_MUNLOCKALL, SYS_munlockall, 0);

	/* 13: grow and move */
	r = CALL(OP_MREMAP, SYS_mremap, A, 4 * P, 8 * P, MREMAP_MAYMOVE, 0);
	A2 = is_errno(r) ? A : (uint64_t)r;
	touch((void *)A2, 8 * P, P);

	/* 14: the program break, grown by a page and put back */
	B = (uint64_t)CALL(OP_BRK, SYS_brk, 0);
	CALL(OP_BRK, SYS_brk, B + P);
	CALL(OP_BRK, SYS_brk, B);

	/* 15-17: file mapping ops and residency */
	touch((void *)F, 2 * P, P);
	CALL(OP_MSYNC, SYS_msync, F, 2 * P, MS_SYNC);
	CALL(OP_MINCORE, SYS_mincore, A2, 8 * P, P2U(vec));
	CALL(OP_REMAP_FILE_PAGES, SYS_remap_file_pages, F, P, 0, 3, 0);

	/* 18: System V shared memory */
	shmid = shmget(IPC_PRIVATE, P, IPC_CREAT | 0600);
	r = CALL(OP_SHMAT, SYS_shmat, I2U(shmid), 0, 0);
	S = is_errno(r) ? 0 : (uint64_t)r;
	if (S)
		touch((void *)S, P, P);
	CALL(OP_SHMDT, SYS_shmdt, S);
	if (shmid >= 0)
		shmctl(shmid, IPC_RMID, NULL);

	/* 19: a page of its own to seal (a sealed mapping cannot be unmapped) */
	r = CALL(OP_MMAP, SYS_mmap, 0, P, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	M = is_errno(r) ? 0 : (uint64_t)r;
	CALL(OP_MSEAL, SYS_mseal, M, P, 0);

	/* 20: a call that fails on purpose: unaligned address */
	CALL(OP_MUNMAP, SYS_munmap, A2 + 1, P);

	/* 21: unmap everything */
	CALL(OP_MUNMAP, SYS_munmap, A2, 8 * P);
	CALL(OP_MUNMAP, SYS_munmap, F, 2 * P);
	CALL(OP_MUNMAP, SYS_munmap, M, P);
	mark_now(&t1, RUSAGE_SELF);

	close(fd);
	created_path[0] = 0;
	if (unlink(path))
		die(path);

	summary_add_calls(&sum, &l);
	summary_add_usage(&sum, &t0.ru, &t1.ru);
	sum.wall_ns = ns_between(&t0.ts, &t1.ts);
	sum.threads = 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra, " failed=%s", failed[0] ? failed : "-");
	summary_print(stdout, "", &sum, extra);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error on stdout\n", prog);
		return 1;
	}
	return 0;
}
