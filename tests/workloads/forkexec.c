/*
 * forkexec - process and thread life cycles around memory calls: threads
 * that exit early, a fork from a multi-threaded process, an exec in the
 * child, a chosen exit status or death by signal, and an optional sleep for
 * interrupting a recording.  See --help and tests/workloads/README.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h" /* logging, summary line, option helpers */

#define NTHREADS 3
#define STACK_SIZE (256 * 1024)

static const char usage_text[] =
"Usage: forkexec [--exec self|true|none] [--exit N] [--signal SIG] [--sleep-ms M]\n"
"                [--log]\n"
"\n"
"Not a seed scenario: it exercises what a recorder must follow around the\n"
"memory calls.  In order:\n"
"  1. the main thread mmaps the stacks of 3 threads (one mapping) and starts\n"
"     them; each thread mmaps a page, writes it and munmaps it; threads 0 and\n"
"     1 then exit at once (early), thread 2 waits with its page still mapped;\n"
"  2. the main thread joins threads 0 and 1, then forks while thread 2\n"
"     lives; the child mmaps a page, writes it, munmaps it and execs:\n"
"       self  this program again (/proc/self/exe --exec-child FD), which\n"
"             mmaps, writes and munmaps one page and exits 0 (default)\n"
"       true  /bin/true\n"
"       none  no exec: the child exits 0\n"
"     (the child's calls come back to the parent through a pipe);\n"
"  3. the main thread mmaps 2 pages, mprotects the first PROT_READ, munmaps\n"
"     both, then lets thread 2 munmap its page and exit, joins it, waits for\n"
"     the child and munmaps the stacks;\n"
"  4. it prints the log and the summary; with --sleep-ms it prints \"ready\",\n"
"     flushes stdout and sleeps; then it exits with --exit N or kills itself\n"
"     with --signal SIG (a recorder should then report 128+SIG).  If the\n"
"     child failed it exits 1 instead.\n"
"\n"
"Options:\n"
"  --exec WHAT     what the child execs: self, true or none (default self)\n"
"  --exit N        exit status (default 0, 0..255)\n"
"  --signal SIG    end by raise(SIG) (default disposition, no core dump) instead\n"
"                  of exit: a number or a name (TERM, SIGTERM, KILL, SEGV, ...)\n"
"                  whose default action ends the process\n"
"  --sleep-ms M    after the summary print \"ready\" and sleep M milliseconds\n"
"                  (for interrupting a recording); default 0: no sleep\n"
"  --log           print one line per memory call: the main thread's lines\n"
"                  unprefixed, thread i's prefixed \"thread=<i> \", the child's\n"
"                  (before and after its exec) prefixed \"proc=1 \"\n"
"  --help          this text\n"
"  (--exec-child FD is internal: the mode the self exec runs in)\n"
"\n"
"Output: with --log, lines \"op=NAME args=A,B,... result=R\" (addresses and\n"
"flag sets hex 0x.., lengths, fds, ints and offsets decimal, -errno negative\n"
"decimal; mmap's result hex), then always\n"
"  summary: calls= minflt= majflt= nvcsw= nivcsw= wall_ns= threads= procs=\n"
"           errors= exec= execs= child_status= ops=NAME:N,...\n"
"calls counts the calls of all threads and of the child, before and after\n"
"its exec (15 with --exec self, 13 otherwise; the exec'd program's own\n"
"startup calls are not counted).  minflt..nivcsw are getrusage(RUSAGE_SELF)\n"
"deltas plus getrusage(RUSAGE_CHILDREN) deltas (the child's whole life)\n"
"over steps 1-3, and wall_ns their time.  threads counts every thread of\n"
"both processes (main + 3 + the child's = 5), procs the processes (2).\n"
"Memory calls glibc makes on its own are not counted: its startup calls and\n"
"the brk(NULL), brk(+132 KiB) of malloc's first use, which every workload\n"
"makes at the start of main, so that a --help run makes exactly those (the\n"
"self exec makes them once more).\n";

enum exec_what { EXEC_SELF, EXEC_TRUE, EXEC_NONE };
static const char *const exec_names[] = { "self", "true", "none" };

static struct {
	enum exec_what exec;
	int exit_status, signal, log;
	unsigned long sleep_ms;
} opt = { EXEC_SELF, 0, 0, 0, 0 };

static size_t page_size;
static pthread_barrier_t gate; /* main <-> thread 2 */

struct worker {
	pthread_t tid;
	int index;
	char prefix[32];
	struct mm_rec recs[4];
	struct mm_log log;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mm_log *l = &w->log;
	char *p = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	NOTE(l, OP_MMAP, res_ptr(p), 0, page_size, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	if (p == MAP_FAILED)
		die("mmap in a thread");
	*(volatile char *)p = 1;
	if (w->index == NTHREADS - 1)
		pthread_barrier_wait(&gate); /* outlive the fork and main's work */
	int r = munmap(p, page_size);
	NOTE(l, OP_MUNMAP, res_int(r), P2U(p), page_size);
	if (r)
		die("munmap in a thread");
	return NULL;
}

/* mmap, write and munmap one page, sending both calls up the pipe fd.
 * Only async-signal-safe calls: it runs in a child of a threaded process. */
static int child_page(int fd)
{
	struct mm_rec rec[2] = { { .op = OP_MMAP }, { .op = OP_MUNMAP } };
	char *p = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok = p != MAP_FAILED;

	rec[0].res = res_ptr(p);
	rec[0].arg[1] = page_size;
	rec[0].arg[2] = PROT_READ | PROT_WRITE;
	rec[0].arg[3] = MAP_PRIVATE | MAP_ANONYMOUS;
	rec[0].arg[4] = I2U(-1);
	if (write(fd, &rec[0], sizeof rec[0]) != (ssize_t)sizeof rec[0] || !ok)
		return -1;
	*(volatile char *)p = 1;
	rec[1].res = res_int(munmap(p, page_size));
	rec[1].arg[0] = P2U(p);
	rec[1].arg[1] = page_size;
	if (write(fd, &rec[1], sizeof rec[1]) != (ssize_t)sizeof rec[1] || rec[1].res)
		return -1;
	return 0;
}

static int parse_signal(const char *s)
{
	static const struct { const char *name; int sig; } names[] = {
		{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
		{ "ILL", SIGILL }, { "TRAP", SIGTRAP }, { "ABRT", SIGABRT },
		{ "BUS", SIGBUS }, { "FPE", SIGFPE }, { "KILL", SIGKILL },
		{ "USR1", SIGUSR1 }, { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },
		{ "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
		{ "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ }, { "VTALRM", SIGVTALRM },
		{ "PROF", SIGPROF }, { "SYS", SIGSYS },
	};
	const char *name = strncmp(s, "SIG", 3) ? s : s + 3;
	int sig = 0;

	if (*s >= '0' && *s <= '9') {
		sig = (int)parse_num("--signal", s, 1, 64);
	} else {
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
			if (!strcmp(name, names[i].name))
				sig = names[i].sig;
		if (!sig)
			usage_error("--signal: unknown signal '%s'", s);
	}
	switch (sig) {
	case SIGCHLD: case SIGCONT: case SIGSTOP: case SIGTSTP: case SIGTTIN:
	case SIGTTOU: case SIGURG: case SIGWINCH:
		usage_error("--signal: signal %d does not end a process by default", sig);
	}
	return sig;
}

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "exec", required_argument, NULL, 'e' },
		{ "exit", required_argument, NULL, 'x' },
		{ "signal", required_argument, NULL, 's' },
		{ "sleep-ms", required_argument, NULL, 'S' },
		{ "exec-child", required_argument, NULL, 'C' },
		LOG_HELP_LONGOPTS,
	};
	int c;

	while ((c = next_opt(argc, argv, longopts, usage_text)) != -1) {
		switch (c) {
		case 'x': opt.exit_status = (int)parse_num("--exit", optarg, 0, 255); break;
		case 's': opt.signal = parse_signal(optarg); break;
		case 'S': opt.sleep_ms = parse_num("--sleep-ms", optarg, 0, 1UL << 32); break;
		case 'l': opt.log = 1; break;
		case 'e':
			if (!strcmp(optarg, "self"))
				opt.exec = EXEC_SELF;
			else if (!strcmp(optarg, "true"))
				opt.exec = EXEC_TRUE;
			else if (!strcmp(optarg, "none"))
				opt.exec = EXEC_NONE;
			else
				usage_error("--exec: '%s' is not self, true or none", optarg);
			break;
		case 'C':
			/* the self exec: one page, calls up the pipe, done */
			page_size = (size_t)sysconf(_SC_PAGESIZE);
			_exit(child_page((int)parse_num("--exec-child", optarg, 0, 1 << 20)) ? 1 : 0);
		}
	}
}

static pid_t start_child(int pipe_w)
{
	char fdarg[16];
	pid_t pid;

	snprintf(fdarg, sizeof fdarg, "%d", pipe_w);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid)
		return pid;
	if (child_page(pipe_w))
		_exit(1);
	switch (opt.exec) {
	case EXEC_SELF:
		execl("/proc/self/exe", "forkexec", "--exec-child", fdarg, (char *)NULL);
		break;
	case EXEC_TRUE:
		execl("/bin/true", "true", (char *)NULL);
		break;
	case EXEC_NONE:
		_exit(0);
	}
	_exit(127);
}

int main(int argc, char **argv)
{
	static struct worker workers[NTHREADS];
	static struct mm_rec main_recs[8];
	struct mm_log mainlog = { .rec = main_recs, .cap = 8 };
	struct mm_log childlog = { .prefix = "proc=1 " };
	struct mm_rec child_recs[4];
	struct summary sum = { 0 };
	struct mark s0, s1, c0, c1;
	pthread_attr_t attr;
	char *stacks, *p, extra[128];
	int pfd[2], status, r;
	pid_t pid;

	prog = "forkexec";
	libc_warmup();
	parse_args(argc, argv);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (pipe(pfd)) /* not close-on-exec: the self exec writes to it */
		die("pipe");
	fcntl(pfd[0], F_SETFD, FD_CLOEXEC);

	mark_now(&s0, RUSAGE_SELF);
	mark_now(&c0, RUSAGE_CHILDREN);

	/* 1. threads; 0 and 1 exit early */
	const int sfl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK;
	stacks = mmap(NULL, NTHREADS * STACK_SIZE, PROT_READ | PROT_WRITE, sfl, -1, 0);
	NOTE(&mainlog, OP_MMAP, res_ptr(stacks), 0, NTHREADS * STACK_SIZE,
	     PROT_READ | PROT_WRITE, (uint64_t)sfl, I2U(-1), 0);
	if (stacks == MAP_FAILED)
		die("mmap of the thread stacks");
	pthread_barrier_init(&gate, NULL, 2);
	pthread_attr_init(&attr);
	for (int i = 0; i < NTHREADS; i++) {
		struct worker *w = &workers[i];

		w->index = i;
		snprintf(w->prefix, sizeof w->prefix, "thread=%d ", i);
		w->log.prefix = w->prefix;
		w->log.rec = w->recs;
		w->log.cap = sizeof w->recs / sizeof w->recs[0];
		pthread_attr_setstack(&attr, stacks + (size_t)i * STACK_SIZE, STACK_SIZE);
		thread_start(&w->tid, &attr, worker_main, w);
	}
	pthread_attr_destroy(&attr);
	pthread_join(workers[0].tid, NULL);
	pthread_join(workers[1].tid, NULL);

	/* 2. fork while thread 2 lives */
	pid = start_child(pfd[1]);
	close(pfd[1]);

	/* 3. more work, then thread 2 ends */
	p = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	NOTE(&mainlog, OP_MMAP, res_ptr(p), 0, 2 * page_size, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	if (p == MAP_FAILED)
		die("mmap");
	memset(p, 1, 2 * page_size);
	r = mprotect(p, page_size, PROT_READ);
	NOTE(&mainlog, OP_MPROTECT, res_int(r), P2U(p), page_size, PROT_READ);
	if (r)
		die("mprotect");
	r = munmap(p, 2 * page_size);
	NOTE(&mainlog, OP_MUNMAP, res_int(r), P2U(p), 2 * page_size);
	if (r)
		die("munmap");
	pthread_barrier_wait(&gate);
	pthread_join(workers[2].tid, NULL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	r = munmap(stacks, NTHREADS * STACK_SIZE);
	NOTE(&mainlog, OP_MUNMAP, res_int(r), P2U(stacks), NTHREADS * STACK_SIZE);
	if (r)
		die("munmap of the thread stacks");
	mark_now(&s1, RUSAGE_SELF);
	mark_now(&c1, RUSAGE_CHILDREN);

	/* the child's calls (it has exited: the pipe holds them all) */
	childlog.rec = child_recs;
	childlog.cap = sizeof child_recs / sizeof child_recs[0];
	for (;;) {
		struct mm_rec rec;
		ssize_t n = read(pfd[0], &rec, sizeof rec);

		if (n == 0)
			break;
		if (n != (ssize_t)sizeof rec || rec.op >= OP__COUNT) {
			fprintf(stderr, "%s: bad record from the child\n", prog);
			return 1;
		}
		mm_note(&childlog, rec.op, rec.res, rec.arg);
	}
	close(pfd[0]);

	/* 4. report */
	if (opt.log) {
		mm_log_print(stdout, &mainlog);
		for (int i = 0; i < NTHREADS; i++)
			mm_log_print(stdout, &workers[i].log);
		mm_log_print(stdout, &childlog);
	}
	summary_add_calls(&sum, &mainlog);
	for (int i = 0; i < NTHREADS; i++)
		summary_add_calls(&sum, &workers[i].log);
	summary_add_calls(&sum, &childlog);
	summary_add_usage(&sum, &s0.ru, &s1.ru);
	summary_add_usage(&sum, &c0.ru, &c1.ru);
	sum.wall_ns = ns_between(&s0.ts, &s1.ts);
	sum.threads = 1 + NTHREADS + 1;
	sum.procs = 2;
	snprintf(extra, sizeof extra, " exec=%s execs=%d child_status=%d",
		 exec_names[opt.exec], opt.exec == EXEC_NONE ? 0 : 1, status);
	summary_print(stdout, "", &sum, extra);
	if (opt.sleep_ms) {
		struct timespec ts = { (time_t)(opt.sleep_ms / 1000),
				       (long)(opt.sleep_ms % 1000) * 1000000 };
		fputs("ready\n", stdout);
		fflush(stdout);
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	if (stdout_write_error())
		return 1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "%s: the child failed (wait status 0x%x)\n", prog, status);
		return 1;
	}
	if (opt.signal) {
		struct rlimit no_core = { 0, 0 };
		sigset_t set;

		setrlimit(RLIMIT_CORE, &no_core);
		signal(opt.signal, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, opt.signal);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(opt.signal);
		fprintf(stderr, "%s: still alive after signal %d\n", prog, opt.signal);
		return 1;
	}
	return opt.exit_status;
}
