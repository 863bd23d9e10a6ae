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

#include "workload.h" /* logging, summary line, option helpers */

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
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
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
		}
	}
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

/* Open (or create and fill) the file; *created tells whether to remove it. */
static int open_file(char *path, size_t pathlen, uint64_t size, int *created)
{
	static uint64_t chunk[(1 << 20) / sizeof(uint64_t)];
	uint64_t seed = 0x243f6a8885a308d3ULL;
	int fd = open_or_create(opt.file, size, path, pathlen, created);

	if (!*created)
		return fd;
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
	return stdout_write_error();
}
