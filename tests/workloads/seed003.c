/*
 * seed003 - sparse reads of a large file mapping that must stay locked:
 * MAP_LOCKED (populate all up front) versus mlock() of each page before its
 * first read versus mlock2(MLOCK_ONFAULT) of the whole range.  Models seed
 * 003 (Eric B Munson, linux-kernel, May 2015, lock-on-fault).
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
#include <sys/stat.h>
#include <sys/syscall.h>
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

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif
#ifndef MAP_LOCKED
#define MAP_LOCKED 0x2000
#endif
#define CAP_IPC_LOCK_BIT 14

static const char usage_text[] =
"Usage: seed003 [--size MiB] [--accesses K] [--mode locked|mlock|onfault]\n"
"               [--file PATH] [--cold] [--log]\n"
"\n"
"Models seed 003 (Eric B Munson, linux-kernel, May 2015, \"Allow user to\n"
"request memory to be locked on page fault\"): a 5 GB file of random data,\n"
"150,000 pages of it read.  Setup/processing averages (ms): MAP_PRIVATE|\n"
"MAP_LOCKED 9476.506/3.573; mlock() of each page before reading it\n"
"0.051/721.859; MAP_LOCKONFAULT 0.084/42.125 (protection changes in a\n"
"signal handler: 0.047/86.431).\n"
"\n"
"Creates a file of SIZE MiB (ftruncate, then pwrite of pseudo-random data),\n"
"then times setup and processing:\n"
"  locked   setup: mmap(PROT_READ, MAP_PRIVATE|MAP_LOCKED) (populates it all)\n"
"  mlock    setup: mmap(PROT_READ, MAP_PRIVATE); processing: mlock(page, 4096)\n"
"           before each read, as the seed did (repeats included)\n"
"  onfault  setup: mmap(PROT_READ, MAP_PRIVATE) + mlock2(MLOCK_ONFAULT) of the\n"
"           whole mapping (the mlock2 form of MAP_LOCKONFAULT)\n"
"processing reads one byte of K pseudo-random pages (fixed seed, so every\n"
"run reads the same pages); teardown is munlock of the whole mapping (mlock,\n"
"onfault) and munmap.  The file is removed at the end.\n"
"\n"
"Locking needs CAP_IPC_LOCK or an RLIMIT_MEMLOCK of SIZE MiB (mlock mode:\n"
"K pages, at most SIZE MiB): the program raises the limit with setrlimit\n"
"when it can and otherwise exits with 77 (skip) and says why on stderr.\n"
"\n"
"Options:\n"
"  --size MiB     file and mapping size (default 64)\n"
"  --accesses K   pages read (default 2000; 0 is allowed)\n"
"  --mode M       locked, mlock or onfault (default onfault)\n"
"  --file PATH    an existing file of at least SIZE MiB is used as is and\n"
"                 kept; otherwise PATH is created, filled and removed at the\n"
"                 end.  Default: a temporary file in $TMPDIR (or /tmp)\n"
"  --cold         fsync the file and drop it from the page cache\n"
"                 (POSIX_FADV_DONTNEED) before mapping, like the seed's\n"
"                 drop_caches, so faults read the disk (major faults)\n"
"  --log          print one line per memory call\n"
"  --help         this text\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (addresses and\n"
"flag sets hex 0x.., lengths, fds, ints and offsets decimal, -errno negative\n"
"decimal; mmap's result hex), then always one line\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= mode= size_mib= accesses= setup_ns= access_ns=\n"
"           teardown_ns= vmlck_kb= ops=NAME:N,...\n"
"minflt..nivcsw are getrusage(RUSAGE_SELF) deltas over setup, processing\n"
"and teardown; wall_ns is their sum; vmlck_kb is VmLck of /proc/self/status\n"
"after processing.\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those.\n";

enum mode { MODE_LOCKED, MODE_MLOCK, MODE_ONFAULT };
static const char *const mode_names[] = { "locked", "mlock", "onfault" };

static struct {
	unsigned long size_mib, accesses;
	enum mode mode;
	const char *file;
	int cold, log;
} opt = { 64, 2000, MODE_ONFAULT, NULL, 0, 0 };

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "accesses", required_argument, NULL, 'k' },
		{ "mode", required_argument, NULL, 'm' },
		{ "file", required_argument, NULL, 'f' },
		{ "cold", no_argument, NULL, 'c' },
		{ "log", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': opt.size_mib = parse_num("--size", optarg, 1, 1UL << 24); break;
		case 'k': opt.accesses = parse_num("--accesses", optarg, 0, 1UL << 40); break;
		case 'f': opt.file = optarg; break;
		case 'c': opt.cold = 1; break;
		case 'l': opt.log = 1; break;
		case 'm':
			if (!strcmp(optarg, "locked"))
				opt.mode = MODE_LOCKED;
			else if (!strcmp(optarg, "mlock"))
				opt.mode = MODE_MLOCK;
			else if (!strcmp(optarg, "onfault"))
				opt.mode = MODE_ONFAULT;
			else
				usage_error("--mode: '%s' is not locked, mlock or onfault", optarg);
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

/* xorshift64*: the same pseudo-random sequence on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rng_next(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* The number after "Key:" in /proc/self/status (read in `base`), or -1. */
static long proc_status_value(const char *key, int base)
{
	static char buf[8192];
	size_t keylen = strlen(key);
	ssize_t n;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (char *line = buf; *line;) {
		char *nl = strchr(line, '\n');

		if (!strncmp(line, key, keylen) && line[keylen] == ':')
			return (long)strtoull(line + keylen + 1, NULL, base);
		if (!nl)
			break;
		line = nl + 1;
	}
	return -1;
}

/* Make sure `need` bytes can be locked, or exit 77 saying why not. */
static void ensure_memlock(uint64_t need)
{
	struct rlimit rl;
	long cap;

	if (getrlimit(RLIMIT_MEMLOCK, &rl))
		die("getrlimit(RLIMIT_MEMLOCK)");
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return;
	/* Raise the soft limit up to the hard one (always allowed), or both
	 * (needs CAP_SYS_RESOURCE). */
	struct rlimit want = rl;
	want.rlim_cur = need;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		want.rlim_max = need;
	if (setrlimit(RLIMIT_MEMLOCK, &want) == 0)
		return;
	/* With CAP_IPC_LOCK the kernel ignores the limit. */
	cap = proc_status_value("CapEff", 16);
	if (cap >= 0 && (cap >> CAP_IPC_LOCK_BIT) & 1)
		return;
	fprintf(stderr, "%s: locking %" PRIu64 " KiB needs CAP_IPC_LOCK or RLIMIT_MEMLOCK of as"
		" much, but the limit is %llu KiB and cannot be raised (run as root or"
		" 'ulimit -l %" PRIu64 "' first)\n", prog, need >> 10,
		(unsigned long long)rl.rlim_cur >> 10, (need + 1023) >> 10);
	exit(77);
}

/* A file this program created, removed at exit even after die(). */
static char created_path[4096];
static void remove_created(void)
{
	if (created_path[0])
		unlink(created_path);
}

/* Open (or create and fill) the file; *created tells whether to remove it. */
static int open_file(char *path, size_t pathlen, uint64_t size, int *created)
{
	static uint64_t chunk[(1 << 20) / sizeof(uint64_t)];
	uint64_t seed = 0x243f6a8885a308d3ULL;
	struct stat st;
	int fd;

	*created = 0;
	if (opt.file && stat(opt.file, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size >= size) {
		snprintf(path, pathlen, "%s", opt.file);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die(path);
		return fd;
	}
	if (opt.file) {
		snprintf(path, pathlen, "%s", opt.file);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	} else {
		const char *dir = getenv("TMPDIR");

		snprintf(path, pathlen, "%s/vmrec-seed003-XXXXXX", dir && *dir ? dir : "/tmp");
		fd = mkostemp(path, O_CLOEXEC);
	}
	if (fd < 0)
		die(path);
	*created = 1;
	snprintf(created_path, sizeof created_path, "%s", path);
	atexit(remove_created);
	if (ftruncate(fd, (off_t)size))
		die(path);
	for (uint64_t off = 0; off < size; off += sizeof chunk) {
		size_t n = size - off < sizeof chunk ? (size_t)(size - off) : sizeof chunk;

		for (size_t i = 0; i < n / sizeof(uint64_t); i++) {
			seed += 0x9e3779b97f4a7c15ULL; /* splitmix64 */
			uint64_t z = seed;
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
			chunk[i] = z ^ (z >> 31);
		}
		for (size_t done = 0; done < n;) {
			ssize_t w = pwrite(fd, (char *)chunk + done, n - done, (off_t)(off + done));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				die(path);
			}
			done += (size_t)w;
		}
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct mm_log l = { 0 };
	struct summary sum = { 0 };
	struct mark t0, t1, t2, t3;
	char path[4096] = "", extra[256];
	uint64_t size, npages;
	size_t page;
	int fd, created, flags, r;
	unsigned sink = 0;
	long vmlck;
	char *p;

	prog = "seed003";
	libc_warmup();
	parse_args(argc, argv);
	page = (size_t)sysconf(_SC_PAGESIZE);
	size = (uint64_t)opt.size_mib << 20;
	npages = size / page;
	if (opt.log)
		l.out = stdout;
	/* mlock mode locks only the pages it reads; the others lock it all */
	if (opt.mode == MODE_MLOCK && opt.accesses < npages)
		ensure_memlock((uint64_t)opt.accesses * page);
	else
		ensure_memlock(size);
	fd = open_file(path, sizeof path, size, &created);
	if (opt.cold && (fdatasync(fd) || posix_fadvise(fd, 0, (off_t)size, POSIX_FADV_DONTNEED)))
		die("dropping the file from the page cache");

	mark_now(&t0, RUSAGE_SELF);
	flags = MAP_PRIVATE | (opt.mode == MODE_LOCKED ? MAP_LOCKED : 0);
	p = mmap(NULL, size, PROT_READ, flags, fd, 0);
	NOTE(&l, OP_MMAP, res_ptr(p), 0, size, PROT_READ, (uint64_t)flags, I2U(fd), 0);
	if (p == MAP_FAILED)
		die("mmap of the file");
	if (opt.mode == MODE_ONFAULT) {
		/* glibc has a wrapper since 2.27; the raw call works with any */
		r = (int)syscall(SYS_mlock2, p, size, MLOCK_ONFAULT);
		NOTE(&l, OP_MLOCK2, res_int(r), P2U(p), size, MLOCK_ONFAULT);
		if (r)
			die("mlock2(MLOCK_ONFAULT)");
	}
	mark_now(&t1, RUSAGE_SELF);
	for (unsigned long k = 0; k < opt.accesses; k++) {
		char *pg = p + (rng_next() % npages) * page;

		if (opt.mode == MODE_MLOCK) {
			r = mlock(pg, page);
			NOTE(&l, OP_MLOCK, res_int(r), P2U(pg), page);
			if (r)
				die("mlock");
		}
		sink += *(volatile unsigned char *)pg;
	}
	mark_now(&t2, RUSAGE_SELF);
	vmlck = proc_status_value("VmLck", 10);
	if (opt.mode != MODE_LOCKED) {
		r = munlock(p, size);
		NOTE(&l, OP_MUNLOCK, res_int(r), P2U(p), size);
		if (r)
			die("munlock");
	}
	r = munmap(p, size);
	NOTE(&l, OP_MUNMAP, res_int(r), P2U(p), size);
	if (r)
		die("munmap");
	mark_now(&t3, RUSAGE_SELF);
	(void)sink;

	close(fd);
	created_path[0] = 0;
	if (created && unlink(path))
		die(path);

	summary_add_calls(&sum, &l);
	summary_add_usage(&sum, &t0.ru, &t3.ru);
	sum.wall_ns = ns_between(&t0.ts, &t3.ts);
	sum.threads = 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra,
		 " mode=%s size_mib=%lu accesses=%lu setup_ns=%" PRId64 " access_ns=%" PRId64
		 " teardown_ns=%" PRId64 " vmlck_kb=%ld",
		 mode_names[opt.mode], opt.size_mib, opt.accesses, ns_between(&t0.ts, &t1.ts),
		 ns_between(&t1.ts, &t2.ts), ns_between(&t2.ts, &t3.ts), vmlck);
	summary_print(stdout, "", &sum, extra);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: write error on stdout\n", prog);
		return 1;
	}
	return 0;
}
