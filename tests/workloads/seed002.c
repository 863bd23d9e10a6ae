/*
 * seed002 - thousands of small mappings that cannot merge: one 4 KiB private
 * mapping of the same file page N times, or N anonymous pages of alternating
 * protection; touch each, read the VMA count, unmap all.  Models seed 002
 * (Andrew Morton, linux-kernel, December 2001: get_unmapped_area over a long
 * VMA list).  See --help and tests/workloads/README.md.
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
#include <time.h>
#include <unistd.h>

#include "workload.h" /* logging, summary line, option helpers */

#define MAX_COUNT (1UL << 20)

static const char usage_text[] =
"Usage: seed002 [--count N] [--kind file|anon|anon-merge]\n"
"               [--touch read|write|none] [--file PATH] [--log]\n"
"\n"
"Models seed 002 (Andrew Morton, linux-kernel, December 2001, \"Re: your mail\n"
"on mmap() to the kernel list\"): a program that mmaps 4 KiB of one file\n"
"over and over slowed to 20 mappings/s at 300,000 mappings, while anonymous\n"
"mappings still ran at 1000/s: the anonymous ones merge into one VMA, the\n"
"file ones each stay a VMA and get_unmapped_area walked them all (19.8% of\n"
"the profile; the rest was the idle CPU).\n"
"\n"
"Maps N 4 KiB private mappings, touches one byte of each, reads the number\n"
"of lines of /proc/self/maps (the VMA count at its peak), then munmaps them\n"
"in mapping order.  Kinds:\n"
"  file        mmap(NULL, 4096, PROT_READ|PROT_WRITE, MAP_PRIVATE, fd, 0) of\n"
"              a one-page file, as the seed did.  Every mapping maps the SAME\n"
"              file offset 0, so two neighbours never have consecutive file\n"
"              offsets and the kernel can never merge them: N mappings are N\n"
"              VMAs whatever addresses the kernel picks.\n"
"  anon        anonymous pages with alternating protection (even i: PROT_READ|\n"
"              PROT_WRITE, odd i: PROT_READ), so that neighbours cannot merge\n"
"  anon-merge  anonymous PROT_READ|PROT_WRITE pages: neighbours merge (the\n"
"              seed's fast case)\n"
"\n"
"Options:\n"
"  --count N     mappings (default 2000, 0..1048576; vm.max_map_count limits\n"
"                it: a failing mmap is logged, reported on stderr, and the\n"
"                run goes on with the mappings made, then exits 1)\n"
"  --kind K      file, anon or anon-merge (default file)\n"
"  --touch T     read one byte of each mapping (default), write it (read-only\n"
"                pages are read), or none\n"
"  --file PATH   the file to map: an existing file of at least one page is\n"
"                used as is and kept; otherwise PATH is created with one page\n"
"                and removed at the end.  Default: a temporary file in\n"
"                $TMPDIR (or /tmp), removed at the end\n"
"  --log         print one line per memory call\n"
"  --help        this text\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (addresses and\n"
"flag sets hex 0x.., lengths, fds, ints and offsets decimal, -errno negative\n"
"decimal; mmap's result hex), then always one line\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= kind= count= mapped= start_vmas= peak_vmas= map_ns=\n"
"           touch_ns= unmap_ns= ops=NAME:N,...\n"
"minflt..nivcsw are getrusage(RUSAGE_SELF) deltas over the whole work\n"
"(map, touch, VMA count, unmap); wall_ns = map_ns + touch_ns + unmap_ns\n"
"(the /proc/self/maps reading excluded).  start_vmas is the VMA count before\n"
"the first mmap.\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those.\n";

enum kind { KIND_FILE, KIND_ANON, KIND_ANON_MERGE };
enum touch { TOUCH_READ, TOUCH_WRITE, TOUCH_NONE };
static const char *const kind_names[] = { "file", "anon", "anon-merge" };

static struct {
	unsigned long count;
	enum kind kind;
	enum touch touch;
	const char *file;
	int log;
} opt = { 2000, KIND_FILE, TOUCH_READ, NULL, 0 };

static char *addrs[MAX_COUNT];
static int prots[MAX_COUNT];

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "count", required_argument, NULL, 'n' },
		{ "kind", required_argument, NULL, 'k' },
		{ "touch", required_argument, NULL, 't' },
		{ "file", required_argument, NULL, 'f' },
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 'n': opt.count = parse_num("--count", optarg, 0, MAX_COUNT); break;
		case 'f': opt.file = optarg; break;
		case 'l': opt.log = 1; break;
		case 'k':
			if (!strcmp(optarg, "file"))
				opt.kind = KIND_FILE;
			else if (!strcmp(optarg, "anon"))
				opt.kind = KIND_ANON;
			else if (!strcmp(optarg, "anon-merge"))
				opt.kind = KIND_ANON_MERGE;
			else
				usage_error("--kind: '%s' is not file, anon or anon-merge", optarg);
			break;
		case 't':
			if (!strcmp(optarg, "read"))
				opt.touch = TOUCH_READ;
			else if (!strcmp(optarg, "write"))
				opt.touch = TOUCH_WRITE;
			else if (!strcmp(optarg, "none"))
				opt.touch = TOUCH_NONE;
			else
				usage_error("--touch: '%s' is not read, write or none", optarg);
			break;
		}
	}
}

/* Lines of /proc/self/maps, read with plain read(2) (no stdio allocation). */
static long count_vmas(void)
{
	static char buf[1 << 16];
	long lines = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("open /proc/self/maps");
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	if (n < 0)
		die("read /proc/self/maps");
	close(fd);
	return lines;
}

/* Open the file to map; *created tells whether to remove it at the end. */
static int open_file(char *path, size_t pathlen, size_t page, int *created)
{
	static char data[1 << 16];
	int fd = open_or_create(opt.file, page, path, pathlen, created);

	if (!*created)
		return fd;
	for (size_t i = 0; i < page && i < sizeof data; i++)
		data[i] = (char)('a' + i % 26);
	if (pwrite(fd, data, page < sizeof data ? page : sizeof data, 0) < 0 ||
	    ftruncate(fd, (off_t)page))
		die(path);
	return fd;
}

int main(int argc, char **argv)
{
	struct mm_log l = { 0 };
	struct summary sum = { 0 };
	struct mark t0, t1, t2, t3, t4;
	char path[4096] = "", extra[256];
	size_t page, mapped = 0;
	long start_vmas, peak_vmas;
	int fd = -1, created = 0, flags;
	unsigned sink = 0;

	prog = "seed002";
	libc_warmup();
	parse_args(argc, argv);
	page = (size_t)sysconf(_SC_PAGESIZE);
	if (opt.log)
		l.out = stdout;
	if (opt.kind == KIND_FILE)
		fd = open_file(path, sizeof path, page, &created);
	flags = opt.kind == KIND_FILE ? MAP_PRIVATE : MAP_PRIVATE | MAP_ANONYMOUS;
	start_vmas = count_vmas();

	mark_now(&t0, RUSAGE_SELF);
	for (size_t i = 0; i < opt.count; i++) {
		int prot = PROT_READ | PROT_WRITE;
		char *p;

		if (opt.kind == KIND_ANON && (i & 1))
			prot = PROT_READ;
		p = mmap(NULL, page, prot, flags, fd, 0);
		NOTE(&l, OP_MMAP, res_ptr(p), 0, page, (uint64_t)prot, (uint64_t)flags,
		     I2U(fd), 0);
		if (p == MAP_FAILED) {
			fprintf(stderr, "%s: mmap #%zu: %s (see vm.max_map_count); going on with %zu mappings\n",
				prog, i + 1, strerror(errno), mapped);
			break;
		}
		addrs[mapped] = p;
		prots[mapped++] = prot;
	}
	mark_now(&t1, RUSAGE_SELF);
	for (size_t i = 0; i < mapped && opt.touch != TOUCH_NONE; i++) {
		if (opt.touch == TOUCH_WRITE && (prots[i] & PROT_WRITE))
			*(volatile char *)addrs[i] = 1;
		else
			sink += *(volatile char *)addrs[i];
	}
	mark_now(&t2, RUSAGE_SELF);
	peak_vmas = count_vmas();
	mark_now(&t3, RUSAGE_SELF);
	for (size_t i = 0; i < mapped; i++) {
		int r = munmap(addrs[i], page);
		NOTE(&l, OP_MUNMAP, res_int(r), P2U(addrs[i]), page);
		if (r)
			die("munmap");
	}
	mark_now(&t4, RUSAGE_SELF);
	(void)sink;

	if (fd >= 0)
		close(fd);
	created_path[0] = 0;
	if (created && unlink(path))
		die(path);

	summary_add_calls(&sum, &l);
	summary_add_usage(&sum, &t0.ru, &t4.ru);
	sum.wall_ns = ns_between(&t0.ts, &t2.ts) + ns_between(&t3.ts, &t4.ts);
	sum.threads = 1;
	sum.procs = 1;
	snprintf(extra, sizeof extra,
		 " kind=%s count=%lu mapped=%zu start_vmas=%ld peak_vmas=%ld map_ns=%" PRId64
		 " touch_ns=%" PRId64 " unmap_ns=%" PRId64,
		 kind_names[opt.kind], opt.count, mapped, start_vmas, peak_vmas,
		 ns_between(&t0.ts, &t1.ts), ns_between(&t1.ts, &t2.ts),
		 ns_between(&t3.ts, &t4.ts));
	summary_print(stdout, "", &sum, extra);
	if (stdout_write_error())
		return 1;
	return mapped < opt.count;
}
