/*
 * everyop - every memory-management op of vmtrace(5) (KINDS AND OPS),
 * once each, with known arguments, each issued as a raw syscall(2) so that
 * what the program logs is exactly what the kernel (and vmrec) saw.
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

#include "workload.h" /* logging, summary line, option helpers */

/* Numbers the build host's headers may predate (the same on every arch
 * that uses the unified syscall table: x86-64, arm64, ...). */

static const char usage_text[] =
"Usage: everyop [--log]\n"
"\n"
"Issues every memory-management op of vmtrace(5) once, as raw\n"
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

static void touch(void *p, size_t len, size_t page)
{
	for (size_t off = 0; off < len; off += page)
		((volatile char *)p)[off] = 1;
}

static void parse_args(int argc, char **argv, int *log)
{
	static const struct option longopts[] = {
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 'l': *log = 1; break;
		}
	}
}

int main(int argc, char **argv)
{
	static char filedata[4 << 16];
	static unsigned char vec[64];
	struct summary sum = { 0 };
	struct mark t0, t1;
	char path[4096], extra[1100];
	int log = 0, created, fd, pidfd, shmid;
	uint64_t P, A, F, A2, B, S, M;
	int64_t r;
	struct iovec iov;

	prog = "everyop";
	libc_warmup();
	parse_args(argc, argv, &log);
	P = (uint64_t)sysconf(_SC_PAGESIZE);
	if (log)
		l.out = stdout;

	fd = open_or_create(NULL, 0, path, sizeof path, &created);
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
	return stdout_write_error();
}
