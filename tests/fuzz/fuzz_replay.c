/*
 * fuzz_replay.c - libFuzzer target for the semantic layers above the
 * reader: the input is read as a program that writes a *valid-looking*
 * trace (every event kind, addresses and lengths from a small vocabulary
 * so that ops overlap, split, move and replace each other, threads and
 * processes that start, fork, vfork, exec and exit in any order, and a
 * few absurd values).  That trace is linted and summed up as vmtrace lint
 * and stat do, loaded for replay here, under the sanitizers (validation,
 * address-space simulation, ordering; sometimes rewritten first, as by
 * --rewrite) and, when it loads, replayed for real by vmreplay with the
 * same options (a build without sanitizers: see the Makefile).
 *
 * What must hold: lint and stat take any such trace; the load ends in
 * success or one clear error; the replay ends in a result or one clear
 * error, never in a replay process killed by a signal (the replayer's own
 * memory hit by a replayed op, a touch outside its regions) or a hang
 * (libFuzzer's -timeout).  Divergences are expected: the recorded results
 * are invented.
 *
 *   make fuzz-replay FUZZ_SECONDS=600      (corpus in build/fuzz/corpus-fuzz_replay)
 *   FUZZ_REPLAY_SAVE=t.zst build/fuzz/fuzz_replay crash-...   (its trace)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "compare.h"
#include "lint.h"
#include "replay.h"
#include "stats.h"
#include "vmtrace.h"

#define PG 4096ull
#define BASE 0x7f1000000000ull /* recorded mappings: 8 slots, 1 MiB apart */
#define HEAP 0x555500000000ull
#define MAX_EVENTS 400
#define REWRITE_ALL "prot-none-free,populate,mlock-onfault,dontneed-to-free"

struct in {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint64_t take64(struct in *in)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | take(in);
	return v;
}

/* An address: mostly page-aligned inside one of 8 slots (so ranges meet),
 * sometimes the heap, a snapshot's mapping, or something absurd. */
static uint64_t addr(struct in *in)
{
	unsigned b = take(in);
	if (b < 0xe0)
		return BASE + (uint64_t)(b & 7) * 0x100000 + (uint64_t)(b >> 3) * PG;
	switch (b & 15) {
	case 0: return 0;
	case 1: return HEAP + (uint64_t)(take(in) & 31) * PG;
	case 2: return BASE + 1;			 /* unaligned */
	case 3: return 0x7ffd00000000ull;		 /* the snapshot's stack */
	case 4: return 1ull << 47;			 /* past user space */
	case 5: return ~0ull & ~(PG - 1);
	case 6: return PG;				 /* below mmap_min_addr */
	case 7: return take64(in);
	default: return BASE + (uint64_t)(b & 7) * 0x100000 - PG; /* below a slot */
	}
}

static uint64_t len(struct in *in)
{
	unsigned b = take(in);
	if (b < 0xf0)
		return (uint64_t)(b % 48 + 1) * PG;
	switch (b & 7) {
	case 0: return 0;
	case 1: return 1;
	case 2: return PG - 1;
	case 3: return 1ull << 40;
	case 4: return ~0ull;
	case 5: return 0x100000; /* a whole slot */
	default: return take64(in);
	}
}

static int64_t result(struct in *in, int64_t ok)
{
	static const int errs[] = {ENOMEM, EINVAL, EFAULT, EACCES, EPERM, EAGAIN, EEXIST, EBUSY};
	unsigned b = take(in);
	if (b < 0xd0)
		return ok;
	if (b < 0xf8)
		return -errs[b & 7];
	return (int64_t)take64(in);
}

static void sc_args(struct in *in, struct vmt_syscall *s)
{
	static const uint64_t mflags[] = {
		MAP_PRIVATE | MAP_ANONYMOUS, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		MAP_SHARED | MAP_ANONYMOUS, MAP_PRIVATE, MAP_SHARED,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		MAP_PRIVATE | MAP_ANONYMOUS | 0x100000 /* FIXED_NOREPLACE */,
		MAP_PRIVATE | MAP_FIXED, MAP_SHARED | MAP_FIXED,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
	};
	static const uint64_t advice[] = {
		MADV_DONTNEED, 8 /* FREE */, 9 /* REMOVE */, MADV_WILLNEED, MADV_DONTFORK,
		MADV_DOFORK, 14 /* HUGEPAGE */, 20 /* COLD */, 21 /* PAGEOUT */,
		22 /* POPULATE_READ */, 23 /* POPULATE_WRITE */, 24 /* DONTNEED_LOCKED */,
		25 /* COLLAPSE */, 100 /* HWPOISON */, 101 /* SOFT_OFFLINE */, 102 /* GUARD_INSTALL */,
	};
	uint64_t a = addr(in), l = len(in);
	unsigned x = take(in);
	s->nargs = 6;
	memset(s->args, 0, sizeof(s->args));
	s->args[0] = a;
	s->args[1] = l;
	switch (s->op) {
	case VMT_OP_MMAP:
		s->args[2] = x & 7;
		s->args[3] = (x & 0x80) ? take64(in) : mflags[take(in) % 12];
		s->args[4] = (s->args[3] & MAP_ANONYMOUS) ? ~0ull : 3;
		s->args[5] = (uint64_t)(take(in) & 3) * PG;
		s->result = result(in, (int64_t)((s->args[3] & MAP_FIXED) ? a : addr(in)));
		break;
	case VMT_OP_MPROTECT:
	case VMT_OP_PKEY_MPROTECT:
		s->args[2] = (x & 0x80) ? x : (x & 7);
		s->args[3] = x >> 6;
		s->result = result(in, 0);
		break;
	case VMT_OP_MADVISE:
		s->args[2] = (x & 0x80) ? x : advice[x & 15];
		s->result = result(in, 0);
		break;
	case VMT_OP_MREMAP:
		s->args[2] = len(in);
		s->args[3] = x & 7; /* MAYMOVE 1, FIXED 2, DONTUNMAP 4 */
		s->args[4] = addr(in);
		s->result = result(in, (int64_t)((x & 2) ? s->args[4] : (x & 1) ? addr(in) : a));
		break;
	case VMT_OP_BRK:
		s->nargs = 1;
		s->result = result(in, (int64_t)(x & 1 ? a : HEAP + (uint64_t)(x & 63) * PG));
		break;
	case VMT_OP_MLOCKALL:
		/* Always MCL_ONFAULT: locking every current mapping of a
		 * sanitized process would fault in its terabytes of shadow. */
		s->nargs = 1;
		s->args[0] = (x & 3) | 4;
		s->result = result(in, 0);
		break;
	case VMT_OP_MUNLOCKALL:
		s->nargs = 0;
		s->result = result(in, 0);
		break;
	case VMT_OP_SHMAT:
		s->args[0] = x & 3;		   /* shmid */
		s->args[1] = (x & 4) ? a : 0;	   /* address */
		s->args[2] = (x & 8) ? 010000 : 0; /* SHM_RDONLY */
		s->result = result(in, (int64_t)(x & 4 ? a : addr(in)));
		break;
	case VMT_OP_SHMDT:
		s->nargs = 1;
		s->result = result(in, 0);
		break;
	default: /* munmap, mlock, mlock2, munlock, msync, mincore, remap, mseal, process_madvise */
		s->args[2] = x & 7;
		s->args[3] = take(in) & 3;
		s->result = result(in, 0);
		break;
	}
	if (!(take(in) & 0x3f))
		s->flags = VMT_SC_NO_RESULT;
}

/* A SYSCALL of op, its arguments and result from the input. */
static void sc_event(struct in *in, struct vmt_event *ev, uint32_t op)
{
	ev->kind = VMT_EV_SYSCALL;
	ev->u.sc.op = op;
	sc_args(in, &ev->u.sc);
	ev->u.sc.exit_ns = ev->ts_ns + 1000;
	ev->u.sc.stack_id = VMT_NONE;
	/* (1.2: what the call waited for, now and then) */
	if (!(ev->u.sc.flags & VMT_SC_NO_RESULT) && !(take(in) & 7)) {
		ev->u.sc.waits = 1;
		ev->u.sc.off_cpu_ns = take(in) * 3; /* (within its 1000 ns) */
		ev->u.sc.vcsw = take(in) & 3;
		ev->u.sc.ivcsw = take(in) & 1;
	}
}

static const struct vmt_map_entry snap[] = {
	{0x555400000000ull, 0x555400002000ull, 0, 0, 0, VMT_PROT_R, "/usr/bin/app"},
	{0x555400002000ull, 0x555400004000ull, 0x2000, 0, 0, VMT_PROT_R | VMT_PROT_X, "/usr/bin/app"},
	{HEAP, HEAP + 4 * PG, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[heap]"},
	{BASE, BASE + 16 * PG, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, ""},
	{BASE + 0x100000, BASE + 0x100000 + 8 * PG, 0, 0, 0, VMT_PROT_R | VMT_PROT_W | VMT_MAPS_SHARED,
	 "/etc/hostname"},
	{BASE + 0x300000, BASE + 0x300000 + 4 * PG, 0, 0, 0, VMT_PROT_R | VMT_PROT_W | VMT_MAPS_SHARED,
	 "/SYSV00000000 (deleted)"},
	{0x7ffd00000000ull, 0x7ffd00021000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_W, "[stack]"},
	{0x7ffd00030000ull, 0x7ffd00032000ull, 0, 0, 0, VMT_PROT_R | VMT_PROT_X, "[vdso]"},
};

/* One event from the input into *ev (storage in runs/ents). */
static void event(struct in *in, struct vmt_event *ev, struct vmt_touch_run *runs,
		 struct vmt_map_entry *ents)
{
	static const char *paths[] = {"/etc/hostname", "/etc/passwd", "", "/dev/zero",
				      "/nonexistent/file", "relative", "/SYSV00000001 (deleted)", "/"};
	unsigned k = take(in);
	/* Threads 2p and 2p+1 belong to process p, mostly. */
	ev->thread = take(in) % 6;
	ev->proc = (take(in) & 15) ? ev->thread / 2 : take(in) % 3;
	if (k < 0x90) {
		sc_event(in, ev, k % 20 ? k % 20 : VMT_OP_MADVISE);
		return;
	}
	switch (k & 15) {
	case 0:
	case 1:
		ev->kind = VMT_EV_TOUCH;
		ev->u.touch.start = addr(in) & ~(PG - 1);
		ev->u.touch.reason = take(in) % 3;
		ev->u.touch.nruns = take(in) % 4 + 1;
		ev->u.touch.npages = 0;
		for (uint32_t i = 0; i < ev->u.touch.nruns; i++) {
			unsigned b = take(in);
			runs[i].pages = b & 0x80 ? (uint64_t)take64(in) % (1ull << 30) + 1 : b % 40 + 1;
			runs[i].state = (b >> 5) & 3;
			ev->u.touch.npages += runs[i].pages;
		}
		ev->u.touch.runs = runs;
		return;
	case 2:
		ev->kind = VMT_EV_FAULT;
		ev->u.fault.addr = addr(in) + (take(in) & 0x7f);
		ev->u.fault.ip = 0x555400002100ull;
		ev->u.fault.access = take(in) & 7;
		ev->u.fault.flags = take(in) & VMT_FLT__ALL;
		return;
	case 3:
		ev->kind = VMT_EV_MAP_FILE;
		ev->u.file.path = paths[take(in) & 7];
		ev->u.file.dev = 0x801;
		ev->u.file.ino = take(in);
		ev->u.file.size = len(in);
		ev->u.file.open_flags = take(in) & 3; /* O_RDONLY, O_WRONLY, O_RDWR */
		ev->u.file.mode = 0100644;
		return;
	case 4:
		ev->kind = VMT_EV_THREAD_START;
		ev->u.thread_start.parent_thread = take(in) % 7 == 6 ? VMT_NONE : take(in) % 6;
		ev->u.thread_start.os_tid = 100 + (int)ev->thread;
		return;
	case 5:
		ev->kind = VMT_EV_THREAD_EXIT;
		ev->u.thread_exit.status = 0;
		return;
	case 6:
	case 7:
		ev->kind = VMT_EV_PROCESS_START;
		ev->u.process_start.parent_proc = take(in) % 4 == 3 ? VMT_NONE : take(in) % 3;
		ev->u.process_start.os_pid = 1000 + (int)ev->proc;
		ev->u.process_start.how = take(in) % 5;
		return;
	case 8:
		ev->kind = VMT_EV_EXEC;
		ev->u.exec.path = paths[take(in) & 7];
		return;
	case 9:
		ev->kind = VMT_EV_PROCESS_EXIT;
		ev->u.process_exit.status = 0;
		return;
	case 10:
	case 11: {
		/* A snapshot: some of the fixed entries, in order. */
		unsigned mask = take(in) | (take(in) & 1) << 8, n = 0;
		for (unsigned i = 0; i < sizeof(snap) / sizeof(snap[0]); i++)
			if (mask & (1u << i))
				ents[n++] = snap[i];
		ev->kind = VMT_EV_MAPS;
		ev->u.maps.count = n;
		ev->u.maps.entries = ents;
		return;
	}
	case 12:
		ev->kind = VMT_EV_LOST;
		ev->u.lost.count = take(in) + 1;
		ev->u.lost.what = take(in) % 2 + 1;
		return;
	case 13:
		/* The recorded run's counters (1.2): any scope, any numbers,
		 * anywhere (the fidelity section holds the replay against
		 * them). */
		ev->kind = VMT_EV_COUNTERS;
		ev->u.counters.scope = take(in) % 3;
		ev->u.counters.flags = take(in) & 1;
		if (ev->u.counters.scope == VMT_CNT_PROCESS && (take(in) & 1))
			ev->u.counters.flags |= VMT_CNT_SUM;
		ev->u.counters.minflt = take(in) & 1 ? take64(in) : take(in);
		ev->u.counters.majflt = take(in);
		ev->u.counters.nvcsw = take(in) & 1 ? take64(in) : take(in);
		ev->u.counters.nivcsw = take(in);
		ev->u.counters.utime_ns = take64(in) >> 1;
		ev->u.counters.stime_ns = take(in);
		ev->u.counters.stops = take(in);
		return;
	default: /* more syscalls on a thread of the first process */
		ev->proc = 0;
		ev->thread = 0;
		sc_event(in, ev, take(in) % 2 ? VMT_OP_MADVISE : VMT_OP_MUNMAP);
		return;
	}
}

/* The trace in fd through vmtrace's consumers of whole traces: lint (and
 * its address-space model) and stat. */
static void analyse(int fd)
{
	int err = 0;
	char msg[320];
	vmt_reader *r = vmt_reader_open_fd(fd, &err, msg, sizeof(msg));
	if (!r)
		abort(); /* it was just written */
	van_lint *l = van_lint_new(vmt_reader_header(r));
	struct van_stats st;
	if (!l || van_stats_init(&st, vmt_reader_header(r)) < 0)
		abort();
	struct vmt_event ev;
	int rc;
	while ((rc = vmt_reader_next(r, &ev)) == 1) {
		if (van_lint_event(l, vmt_reader_event_index(r) - 1, &ev) < 0 || van_stats_add(&st, &ev) < 0)
			abort();
	}
	if (rc < 0 || van_lint_finish(l) < 0 || van_stats_finish(&st) < 0)
		abort();
	van_stats_free(&st);
	van_lint_free(l);
	vmt_reader_free(r);
	lseek(fd, 0, SEEK_SET);
}

/* A result that is one clear error: negative with a message. */
static void clear_error(int rc, const char *msg, const char *what)
{
	if (rc < 0 && msg[0])
		return;
	fprintf(stderr, "%s: rc %d without a message\n", what, rc);
	abort();
}

/* Replay the trace in fd with the plain vmreplay (see the Makefile) and
 * the options of o: it must end in success or in one clear failure
 * ("vmreplay: ..."), never by a signal of its own or of a replay
 * process, and never with a usage or input error (the same load just
 * succeeded here). */
static void replay(int fd, const struct rp_options *o, const char *rules)
{
	static const char *order[] = {"resource", "strict", "free"};
	char a[6][128], path[64];
	const char *argv[12];
	int n = 0, pfd[2];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	snprintf(a[0], sizeof(a[0]), "--order=%s", order[o->order]);
	snprintf(a[1], sizeof(a[1]), "--placement=%s", o->placement == RP_PLACE_EXACT ? "exact" : "kernel");
	snprintf(a[2], sizeof(a[2]), "--files=%s", o->files == RP_FILES_ORIGINAL ? "original" : "scratch");
	snprintf(a[3], sizeof(a[3]), "--scale=%u", o->scale);
	snprintf(a[4], sizeof(a[4]), "--max-memory=%llu", (unsigned long long)o->max_memory);
	snprintf(a[5], sizeof(a[5]), "--rewrite=%s", rules ? rules : "");
	argv[n++] = VMREPLAY_PLAIN;
	argv[n++] = "-q";
	for (int i = 0; i < 5; i++)
		argv[n++] = a[i];
	if (rules)
		argv[n++] = rules[0] ? a[5] : "--rewrite";
	argv[n++] = path;
	argv[n] = NULL;
	if (pipe(pfd) < 0)
		abort();
	pid_t pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		/* A timeout of the fuzzer kills it, and so the whole run. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		close(pfd[1]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	char err[4096];
	size_t len = 0;
	ssize_t k;
	while ((k = read(pfd[0], err + len, sizeof(err) - 1 - len)) > 0 || (k < 0 && errno == EINTR))
		if (k > 0)
			len += (size_t)k;
	err[len] = 0;
	close(pfd[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			abort();
	int bad = WIFSIGNALED(st) || (WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1) ||
		  (WEXITSTATUS(st) == 1 && (strncmp(err, "vmreplay: ", 10) ||
					    strstr(err, "killed by signal") || strstr(err, "failed (status")));
	if (bad) {
		fprintf(stderr, "vmreplay %s %s %s %s %s%s%s: ", a[0], a[1], a[2], a[3], a[4],
			rules ? " " : "", rules ? a[5] : "");
		if (WIFSIGNALED(st))
			fprintf(stderr, "killed by signal %d\n", WTERMSIG(st));
		else
			fprintf(stderr, "exit %d\n", WEXITSTATUS(st));
		fprintf(stderr, "%s", err);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	struct vmt_header h;
	int err = 0;
	vmt_header_from_host(&h);
	int fd = memfd_create("fuzz-replay", 0);
	if (fd < 0)
		abort();
	vmt_writer *w = vmt_writer_create(fd, &h, NULL, &err);
	if (!w)
		abort();
	struct rp_options o;
	rp_options_default(&o);
	unsigned opt = take(&in);
	o.order = (int)(opt % 3);
	o.placement = (opt >> 2) & 1 ? RP_PLACE_EXACT : RP_PLACE_KERNEL;
	o.files = (opt >> 3) & 1 ? RP_FILES_ORIGINAL : RP_FILES_SCRATCH;
	o.scale = (opt >> 4) & 1 ? 2 : 1;
	o.max_memory = 64ull << 20;

	/* The usual start: the root process, its first thread, a snapshot. */
	struct vmt_event ev;
	struct vmt_touch_run runs[4];
	struct vmt_map_entry ents[16];
	memset(&ev, 0, sizeof(ev));
	ev.ts_ns = 1000000;
	if (!(opt & 0x80)) {
		ev.kind = VMT_EV_PROCESS_START;
		ev.u.process_start.parent_proc = VMT_NONE;
		ev.u.process_start.os_pid = 1000;
		vmt_writer_append(w, &ev);
		memset(&ev.u, 0, sizeof(ev.u));
		ev.kind = VMT_EV_THREAD_START;
		ev.u.thread_start.parent_thread = VMT_NONE;
		ev.u.thread_start.os_tid = 1000;
		vmt_writer_append(w, &ev);
		ev.kind = VMT_EV_MAPS;
		ev.u.maps.count = sizeof(snap) / sizeof(snap[0]);
		ev.u.maps.entries = snap;
		vmt_writer_append(w, &ev);
	}
	for (int i = 0; i < MAX_EVENTS && in.n; i++) {
		memset(&ev, 0, sizeof(ev));
		ev.ts_ns = 1000000 + (uint64_t)(i + 1) * 10000;
		event(&in, &ev, runs, ents);
		vmt_writer_append(w, &ev); /* an invalid event is refused: fine */
	}
	if (vmt_writer_finish(w) < 0)
		abort();
	vmt_writer_free(w);
	const char *save = getenv("FUZZ_REPLAY_SAVE"); /* the trace, to look at */
	if (save) {
		size_t n = (size_t)lseek(fd, 0, SEEK_END);
		char *buf = malloc(n);
		FILE *f = fopen(save, "w");
		if (!buf || !f || pread(fd, buf, n, 0) != (ssize_t)n || fwrite(buf, 1, n, f) != n)
			abort();
		fclose(f);
		free(buf);
	}
	lseek(fd, 0, SEEK_SET);
	analyse(fd);

	char msg[512] = "";
	rp_trace *t = NULL;
	int rc;
	if (opt & 0x20) {
		/* vmreplay --rewrite: the default rule, or all of them. */
		char path[64];
		struct rp_rewrite_info info;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		rc = rp_load_rewritten(path, (opt & 0x40) ? REWRITE_ALL : NULL, &o, &t, &info, NULL, msg,
				       sizeof(msg));
	} else {
		rc = rp_trace_load_fd(fd, "fuzz", &o, &t, msg, sizeof(msg));
	}
	if (rc) {
		clear_error(rc, msg, "load");
		close(fd);
		return 0;
	}
	rp_trace_free(t);
	replay(fd, &o, (opt & 0x20) ? ((opt & 0x40) ? REWRITE_ALL : "") : NULL);
	close(fd);
	return 0;
}
