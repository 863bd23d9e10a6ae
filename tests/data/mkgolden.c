/*
 * mkgolden.c - writes the golden traces of tests/data with this version of
 * libvmtrace.  Run `make golden` only when the format version changes: the
 * files of older versions stay, so that newer readers keep reading them.
 * It writes the traces of the newest version (every-kind-1.4.zst); the
 * older ones were written by its earlier versions (git history), and stay.
 *
 * Every value is fixed (times, addresses, host), so the output is the same
 * on every machine.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "vmtrace.h"

static vmt_writer *w;
static uint64_t now = 1000000000ull; /* = header start_mono_ns */

static void put(struct vmt_event *ev)
{
	int err = vmt_writer_append(w, ev);
	if (err) {
		fprintf(stderr, "mkgolden: append kind %u: %s\n", ev->kind, vmt_strerror(err));
		exit(1);
	}
}

/* A SYSCALL of (proc, thread), the argument order of the unit tests'
 * toolkit (tests/unit/tgen.h), 1500 ns after the last one, lasting 700 ns. */
static void sc(uint32_t proc, uint32_t thread, uint32_t op, int64_t result, uint32_t stack,
	       int nargs, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct vmt_event ev = { .kind = VMT_EV_SYSCALL, .thread = thread, .proc = proc };
	now += 1500;
	ev.ts_ns = now;
	ev.u.sc = (struct vmt_syscall){ op, (uint32_t)nargs, { a0, a1, a2, a3, a4, a5 },
					result, now + 700, stack, 0, 0, 0, 0, 0 };
	put(&ev);
}

static vmt_writer *open_out(const char *dir, const char *name, int *fd, size_t chunk,
			    const char *recorder)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (*fd < 0) {
		perror(path);
		exit(1);
	}
	static const char *const argv[] = { "./golden-app", "--iterations", "3" };
	struct vmt_header h = {
		.arch = "x86_64", .page_size = 4096, .kernel = "6.18.0-golden",
		.hostname = "golden", .argc = 3, .argv = argv,
		.options = "touch=resident stacks=32", .recorder = recorder,
		.start_realtime_ns = 1764470000000000000ull, .start_mono_ns = 1000000000ull,
	};
	struct vmt_writer_opts o = { chunk, 1000000, 19 };
	int err;
	vmt_writer *wr = vmt_writer_create(*fd, &h, &o, &err);
	if (!wr) {
		fprintf(stderr, "mkgolden: %s\n", vmt_strerror(err));
		exit(1);
	}
	now = 1000000000ull;
	return wr;
}

/* The minor version being written. */
static int golden_minor;

/* A COUNTERS event (format 1.2) of the kind's scope; from 1.4, with some
 * of the recorder's own faults. */
static void counters(uint32_t proc, uint32_t thread, uint32_t scope, uint64_t minflt,
		     uint64_t nvcsw, uint32_t flags)
{
	struct vmt_event ev = { .kind = VMT_EV_COUNTERS, .thread = thread, .proc = proc,
				.ts_ns = now };
	ev.u.counters = (struct vmt_counters){ .scope = scope, .flags = flags, .minflt = minflt,
					       .majflt = minflt / 100, .nvcsw = nvcsw,
					       .nivcsw = nvcsw / 2, .utime_ns = minflt * 2000,
					       .stime_ns = minflt * 3000, .stops = 0,
					       .own_flt = golden_minor >= 4 ? minflt / 10 : 0 };
	put(&ev);
}

/* Every kind and op once.  minor: with what format 1.2 added (COUNTERS of
 * every thread, process and exec; the waits of some calls), 1.3 (the
 * flags of faults: a major one, the kernel's for a call) and 1.4 (the
 * recorder's own faults in COUNTERS). */
static void every_kind(const char *dir, const char *name, int cut, int minor)
{
	int fd, v12 = minor >= 2;
	char recorder[64];
	golden_minor = minor;
	snprintf(recorder, sizeof(recorder), "mkgolden (libvmtrace 1.%d)", minor);
	w = open_out(dir, name, &fd, 400, recorder);
	struct vmt_event ev = { 0 };
	const uint64_t A = 0x7f3a2c000000ull, F = 0x7f3a2b000000ull;

	ev = (struct vmt_event){ .kind = VMT_EV_PROCESS_START, .ts_ns = now };
	ev.u.process_start = (struct vmt_process_start){ VMT_NONE, 4242, VMT_PROC_ROOT };
	put(&ev);
	ev = (struct vmt_event){ .kind = VMT_EV_THREAD_START, .ts_ns = now };
	ev.u.thread_start = (struct vmt_thread_start){ VMT_NONE, 4242 };
	put(&ev);
	now += 100000;
	if (v12)
		counters(0, 0, VMT_CNT_EXEC, 31, 1, 0);
	ev = (struct vmt_event){ .kind = VMT_EV_EXEC, .ts_ns = now };
	ev.u.exec.path = "/usr/bin/golden-app";
	put(&ev);
	static const struct vmt_map_entry maps[] = {
		{ 0x555555554000ull, 0x555555556000ull, 0, 0x801, 131, VMT_PROT_R, "/usr/bin/golden-app" },
		{ 0x555555556000ull, 0x555555558000ull, 0x2000, 0x801, 131, VMT_PROT_R | VMT_PROT_X, "/usr/bin/golden-app" },
		{ 0x555555559000ull, 0x55555557a000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[heap]" },
		{ 0x7ffff7fc3000ull, 0x7ffff7fc7000ull, 0, 0, 0, VMT_PROT_R, "[vvar]" },
		{ 0x7ffffffde000ull, 0x7ffffffff000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[stack]" },
	};
	ev = (struct vmt_event){ .kind = VMT_EV_MAPS, .ts_ns = now };
	ev.u.maps = (struct vmt_maps){ 5, maps };
	put(&ev);
	static const uint64_t ips0[] = { 0x555555556123ull, 0x555555556200ull, 0x7ffff7dd0d90ull };
	ev = (struct vmt_event){ .kind = VMT_EV_STACK, .ts_ns = now };
	ev.u.stack = (struct vmt_stack){ 0, 3, ips0 };
	put(&ev);
	/* every op once, with realistic arguments */
	sc(0, 0, VMT_OP_MMAP, (int64_t)A, 0, 6, 0, 8192, 3, 0x22, (uint64_t)-1, 0);
	ev = (struct vmt_event){ .kind = VMT_EV_MAP_FILE, .ts_ns = now + 1000 };
	ev.u.file = (struct vmt_map_file){ "/var/tmp/golden.dat", 0x801, 4711, 65536, 0100002, 0100644 };
	put(&ev);
	sc(0, 0, VMT_OP_MMAP, (int64_t)F, VMT_NONE, 6, 0, 16384, 1, 0x2, 3, 4096);
	sc(0, 0, VMT_OP_MPROTECT, 0, 0, 3, A, 4096, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_PKEY_MPROTECT, 0, VMT_NONE, 4, A, 4096, 1, (uint64_t)-1, 0, 0);
	static const struct vmt_touch_run runs[] = { { 1, VMT_PAGE_WRITTEN }, { 1, VMT_PAGE_READ } };
	ev = (struct vmt_event){ .kind = VMT_EV_TOUCH, .ts_ns = now + 1000 };
	ev.u.touch = (struct vmt_touch){ A, 2, VMT_TOUCH_BEFORE_OP, 2, runs };
	put(&ev);
	sc(0, 0, VMT_OP_MADVISE, 0, VMT_NONE, 3, A, 8192, 4, 0, 0, 0);
	sc(0, 0, VMT_OP_PROCESS_MADVISE, -22, VMT_NONE, 5, 5, 0x7ffffffde100ull, 1, 20, 0, 0);
	if (minor >= 3) {
		/* a major fault on the file; the mlock's own, of pages it
		 * does not say, before its record */
		ev = (struct vmt_event){ .kind = VMT_EV_FAULT, .ts_ns = now += 1000 };
		ev.u.fault = (struct vmt_fault){ F + 0x10, 0x555555556180ull, VMT_FAULT_READ,
						 VMT_FLT_MAJOR };
		put(&ev);
		for (int i = 0; i < 2; i++) {
			ev = (struct vmt_event){ .kind = VMT_EV_FAULT, .ts_ns = now + 1200 };
			ev.u.fault = (struct vmt_fault){ 0, 0, 0, VMT_FLT_GUP | VMT_FLT_CALL };
			put(&ev);
		}
	}
	sc(0, 0, VMT_OP_MLOCK, 0, VMT_NONE, 2, A, 8192, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_MUNLOCK, 0, VMT_NONE, 2, A, 8192, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_MLOCK2, 0, VMT_NONE, 3, A, 8192, 1, 0, 0, 0);
	sc(0, 0, VMT_OP_MLOCKALL, 0, VMT_NONE, 1, 5, 0, 0, 0, 0, 0);
	if (v12) {
		/* a call that waited: blocked twice, preempted once */
		struct vmt_event wev = { .kind = VMT_EV_SYSCALL, .ts_ns = now += 1500 };
		wev.u.sc = (struct vmt_syscall){ .op = VMT_OP_MLOCK, .nargs = 2, .args = { A, 8192 },
						 .exit_ns = now + 90000, .stack_id = VMT_NONE,
						 .waits = 1, .vcsw = 2, .ivcsw = 1,
						 .off_cpu_ns = 85000 };
		put(&wev);
		now += 90000;
	}
	sc(0, 0, VMT_OP_MUNLOCKALL, 0, VMT_NONE, 0, 0, 0, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_MREMAP, (int64_t)(A + 0x100000), VMT_NONE, 5, A, 8192, 16384, 1, 0, 0);
	sc(0, 0, VMT_OP_BRK, 0x55555557a000ll, VMT_NONE, 1, 0, 0, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_BRK, 0x55555559b000ll, VMT_NONE, 1, 0x55555559b000ull, 0, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_MSYNC, 0, VMT_NONE, 3, F, 16384, 4, 0, 0, 0);
	sc(0, 0, VMT_OP_MINCORE, 0, VMT_NONE, 3, F, 16384, 0x7ffffffde200ull, 0, 0, 0);
	sc(0, 0, VMT_OP_REMAP_FILE_PAGES, 0, VMT_NONE, 5, F, 4096, 0, 2, 0, 0);
	ev = (struct vmt_event){ .kind = VMT_EV_MAP_FILE, .ts_ns = now + 1000 };
	ev.u.file = (struct vmt_map_file){ "shm:98306", 0, 98306, 65536, 0, 0600 };
	put(&ev);
	sc(0, 0, VMT_OP_SHMAT, 0x7f3a2a000000ll, VMT_NONE, 3, 98306, 0, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_SHMDT, 0, VMT_NONE, 1, 0x7f3a2a000000ull, 0, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_MSEAL, -22, VMT_NONE, 3, F, 16384, 0, 0, 0, 0);
	sc(0, 0, VMT_OP_MUNMAP, -22, VMT_NONE, 2, A + 1, 4096, 0, 0, 0, 0);
	/* a second thread and a fault */
	ev = (struct vmt_event){ .kind = VMT_EV_THREAD_START, .thread = 1, .ts_ns = now += 1000 };
	ev.u.thread_start = (struct vmt_thread_start){ 0, 4243 };
	put(&ev);
	ev = (struct vmt_event){ .kind = VMT_EV_FAULT, .thread = 1, .ts_ns = now += 1000 };
	ev.u.fault = (struct vmt_fault){ A + 0x100000, 0x555555556300ull, VMT_FAULT_WRITE, 0 };
	put(&ev);
	ev = (struct vmt_event){ .kind = VMT_EV_LOST, .thread = 1, .ts_ns = now += 1000 };
	ev.u.lost = (struct vmt_lost){ 3, VMT_LOST_FAULTS };
	put(&ev);
	sc(0, 1, VMT_OP_MUNMAP, 0, 0, 2, A + 0x100000, 16384, 0, 0, 0, 0);
	now += 1000;
	if (v12)
		counters(0, 1, VMT_CNT_THREAD, 12, 3, 0);
	ev = (struct vmt_event){ .kind = VMT_EV_THREAD_EXIT, .thread = 1, .ts_ns = now };
	ev.u.thread_exit.status = 0;
	put(&ev);
	/* a child process */
	ev = (struct vmt_event){ .kind = VMT_EV_PROCESS_START, .thread = 2, .proc = 1, .ts_ns = now += 1000 };
	ev.u.process_start = (struct vmt_process_start){ 0, 4250, VMT_PROC_FORK };
	put(&ev);
	ev = (struct vmt_event){ .kind = VMT_EV_THREAD_START, .thread = 2, .proc = 1, .ts_ns = now };
	ev.u.thread_start = (struct vmt_thread_start){ 0, 4250 };
	put(&ev);
	sc(1, 2, VMT_OP_MMAP, -12, VMT_NONE, 6, 0, 1ull << 46, 3, 0x22, (uint64_t)-1, 0);
	now += 1000;
	if (v12) /* (killed: /proc, at a resolution of ticks) */
		counters(1, 2, VMT_CNT_THREAD, 7, 0, VMT_CNT_TICKS);
	ev = (struct vmt_event){ .kind = VMT_EV_THREAD_EXIT, .thread = 2, .proc = 1, .ts_ns = now };
	ev.u.thread_exit.status = 128 + 9;
	put(&ev);
	if (v12)
		counters(1, 2, VMT_CNT_PROCESS, 7, 0, VMT_CNT_TICKS | VMT_CNT_SUM);
	ev = (struct vmt_event){ .kind = VMT_EV_PROCESS_EXIT, .thread = 2, .proc = 1, .ts_ns = now };
	ev.u.process_exit.status = 9;
	put(&ev);
	now += 1000;
	if (v12)
		counters(0, 0, VMT_CNT_THREAD, 140, 9, 0);
	ev = (struct vmt_event){ .kind = VMT_EV_THREAD_EXIT, .ts_ns = now };
	ev.u.thread_exit.status = 0;
	put(&ev);
	if (v12)
		counters(0, 0, VMT_CNT_PROCESS, 152, 12, VMT_CNT_SUM);
	ev = (struct vmt_event){ .kind = VMT_EV_PROCESS_EXIT, .ts_ns = now };
	ev.u.process_exit.status = 0;
	put(&ev);
	/* symbol tables, written at the end as the recorder does */
	static const char *const strs[] = { "/usr/bin/golden-app", "main", "work_loop",
					    "/usr/lib/x86_64-linux-gnu/libc.so.6" };
	for (uint32_t i = 0; i < 4; i++) {
		ev = (struct vmt_event){ .kind = VMT_EV_STRING, .ts_ns = now };
		ev.u.string = (struct vmt_string){ i, strs[i] };
		put(&ev);
	}
	static const struct vmt_symbol syms[] = {
		{ 0x555555556123ull, 0, 2, 0x23 },
		{ 0x555555556200ull, 0, 1, 0x40 },
		{ 0x7ffff7dd0d90ull, 3, VMT_NONE, 0x29d90 },
	};
	for (int i = 0; i < 3; i++) {
		ev = (struct vmt_event){ .kind = VMT_EV_SYMBOL, .ts_ns = now };
		ev.u.symbol = syms[i];
		put(&ev);
	}
	if (cut) {
		/* like a recorder killed with SIGKILL: chunks, no footer */
		vmt_writer_flush(w);
		vmt_writer_free(w);
		off_t end = lseek(fd, 0, SEEK_END);
		if (ftruncate(fd, end - 10)) {
			perror("ftruncate");
			exit(1);
		}
	} else {
		if (vmt_writer_finish(w)) {
			fprintf(stderr, "mkgolden: finish failed\n");
			exit(1);
		}
		vmt_writer_free(w);
	}
	close(fd);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/data";
	every_kind(dir, "every-kind-1.4.zst", 0, 4);
	return 0;
}
