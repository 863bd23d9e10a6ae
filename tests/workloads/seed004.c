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

#include "workload.h" /* logging, summary line, option helpers */

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
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 'n': opt.pages = parse_num("--pages", optarg, 1, 1UL << 32); break;
		case 'r': opt.rounds = parse_num("--rounds", optarg, 0, 1UL << 32); break;
		case 'w': opt.write_only = 1; break;
		case 'l': opt.log = 1; break;
		}
	}
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
	return stdout_write_error();
}
