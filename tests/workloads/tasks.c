/*
 * tasks - the ways a program makes, replaces and ends tasks and handles
 * signals that an in-process recorder must follow: threads from raw
 * clone and clone3, vfork, posix_spawn, fork, exec with an empty
 * environment, a SIGSYS handler and a seccomp filter of its own, signals
 * arriving while calls are made, every signal blocked.  See --help and
 * tests/workloads/README.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "workload.h"

static const char usage_text[] =
"Usage: tasks --mode MODE [--log]\n"
"\n"
"Makes memory calls from tasks made in one of these ways (MODE):\n"
"  clone    two threads made with raw system calls, each on a stack of its\n"
"           own: clone (sharing its creator's TLS) and clone3 (with\n"
"           CLONE_SETTLS); each maps, writes and unmaps a page 3 times with\n"
"           raw syscalls and ends with a raw exit\n"
"  vfork    a vfork child that maps and unmaps a page, then execs this\n"
"           program (--exec-child), which does the same and exits 7; then\n"
"           a posix_spawn of the same\n"
"  fork     a forked child that maps and unmaps a page and exits 3, and one\n"
"           that kills itself with SIGKILL\n"
"  exec     this program exec'd with an empty environment (--exec-child)\n"
"  signals  a 500 us interval timer whose SIGALRM handler maps and unmaps\n"
"           5 pages, while the program maps and unmaps 3 pages 2000 times\n"
"           through syscall(2) (which always traps) and 2000 through\n"
"           glibc; prints how many of each were made\n"
"  sigsys   its own SIGSYS handler and seccomp filter: getppid traps (data\n"
"           42) and mincore fails with EPERM; 5 getppid, 1 raise(SIGSYS),\n"
"           1 mincore, 1 mmap and munmap; prints what its handler saw\n"
"  masks    every signal blocked (sigprocmask, then in a thread made with\n"
"           them blocked, then in a handler whose sa_mask is full), a map\n"
"           and unmap each time\n"
"Options: --log prints each of its own calls (see README.md); the last\n"
"line is always a summary (calls=, ops=, and what the mode adds).\n";

static struct mm_log lg;

/* A raw call, logged.  (syscall(2): its site is never patched.) */
static int64_t raw(struct mm_log *l, enum mm_op op, long nr, uint64_t a0, uint64_t a1, uint64_t a2,
		   uint64_t a3, uint64_t a4, uint64_t a5)
{
	int64_t r = res_int(syscall(nr, a0, a1, a2, a3, a4, a5));
	NOTE(l, op, r, a0, a1, a2, a3, a4, a5);
	return r;
}

static void page_round(struct mm_log *l, uint64_t pages)
{
	int64_t a = raw(l, OP_MMAP, SYS_mmap, 0, pages * 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	if (is_errno(a))
		return;
	*(volatile char *)(uintptr_t)a = 1;
	raw(l, OP_MUNMAP, SYS_munmap, (uint64_t)a, pages * 4096, 0, 0, 0, 0);
}

/* ---- clone ---------------------------------------------------------------- */

/* A raw system call without libc (the clone children share TLS, or have
 * none that libc knows). */
static long rsys(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

struct kid {
	struct mm_rec rec[8];
	int n;
	volatile int32_t ctid; /* cleared by the kernel at the child's exit */
};

static struct kid kids[2];

static void kid_round(struct kid *k)
{
	for (int i = 0; i < 3; i++) {
		long a = rsys(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		k->rec[k->n++] = (struct mm_rec){ OP_MMAP, a,
			{ 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0 } };
		if (a < 0 && a > -4096)
			continue;
		*(volatile char *)a = 1;
		long u = rsys(SYS_munmap, a, 4096, 0, 0, 0, 0);
		k->rec[k->n++] = (struct mm_rec){ OP_MUNMAP, u, { (uint64_t)a, 4096 } };
	}
}

/* The child's code: it has no libc (no TLS of its own). */
static __attribute__((noreturn, used)) void kid_main(struct kid *k)
{
	kid_round(k);
	for (;;)
		rsys(SYS_exit, 0, 0, 0, 0, 0, 0);
}

/* clone(flags, stack) with the child running kid_main(k) on that stack. */
static long raw_clone(unsigned long flags, void *stack_top, int32_t *ctid, struct kid *k)
{
	long ret;
	register long r10 __asm__("r10") = (long)ctid;
	register long r8 __asm__("r8") = 0;
	register long r12 __asm__("r12") = (long)k;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov %%r12, %%rdi\n\t"
			 "and $-16, %%rsp\n\t"
			 "call kid_main\n\t"
			 "1:"
			 : "=a"(ret)
			 : "a"(SYS_clone), "D"(flags), "S"(stack_top), "d"(0), "r"(r10), "r"(r8), "r"(r12)
			 : "rcx", "r11", "memory");
	return ret;
}

static long raw_clone3(struct clone_args *ca, struct kid *k)
{
	long ret;
	register long r12 __asm__("r12") = (long)k;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov %%r12, %%rdi\n\t"
			 "and $-16, %%rsp\n\t"
			 "call kid_main\n\t"
			 "1:"
			 : "=a"(ret)
			 : "a"(SYS_clone3), "D"(ca), "S"(sizeof(*ca)), "r"(r12)
			 : "rcx", "r11", "memory");
	return ret;
}

static void wait_clear(volatile int32_t *w)
{
	while (*w)
		syscall(SYS_futex, w, FUTEX_WAIT, *w, NULL, NULL, 0);
}

static void mode_clone(void)
{
	const unsigned long thr = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
				  CLONE_SYSVSEM | CLONE_CHILD_CLEARTID | CLONE_CHILD_SETTID;
	int64_t st = raw(&lg, OP_MMAP, SYS_mmap, 0, 2 * 65536, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	if (is_errno(st))
		die("mmap");
	char *stacks = (char *)(uintptr_t)st;
	static char tls[256] __attribute__((aligned(64)));
	*(void **)tls = tls; /* (a TLS block's first word points at itself) */
	kids[0].ctid = -1;
	if (raw_clone(thr, stacks + 65536, (int32_t *)&kids[0].ctid, &kids[0]) < 0)
		die("clone");
	wait_clear(&kids[0].ctid);
	kids[1].ctid = -1;
	struct clone_args ca = {
		.flags = thr | CLONE_SETTLS, .child_tid = (uint64_t)(uintptr_t)&kids[1].ctid,
		.stack = (uint64_t)(uintptr_t)(stacks + 65536), .stack_size = 65536,
		.tls = (uint64_t)(uintptr_t)tls,
	};
	if (raw_clone3(&ca, &kids[1]) < 0)
		die("clone3");
	wait_clear(&kids[1].ctid);
	raw(&lg, OP_MUNMAP, SYS_munmap, (uint64_t)st, 2 * 65536, 0, 0, 0, 0);
	for (int t = 0; t < 2; t++) {
		char prefix[32];
		snprintf(prefix, sizeof(prefix), "thread=%d ", t);
		if (lg.out)
			for (int i = 0; i < kids[t].n; i++)
				rec_print(stdout, prefix, &kids[t].rec[i]);
		struct mm_log kl = { 0 };
		for (int i = 0; i < kids[t].n; i++)
			mm_note(&kl, (enum mm_op)kids[t].rec[i].op, kids[t].rec[i].res, kids[t].rec[i].arg);
		lg.calls += kl.calls;
		lg.errors += kl.errors;
		for (int i = 0; i < OP__COUNT; i++)
			lg.per_op[i] += kl.per_op[i];
	}
}

/* ---- vfork, spawn, fork, exec ---------------------------------------------------- */

static char self[4096];

/* label: "" (exec'd by itself it is still the first process), or N for
 * the log prefix "proc=N ". */
static int exec_child(const char *label)
{
	char prefix[32] = "";
	if (*label)
		snprintf(prefix, sizeof(prefix), "proc=%s ", label);
	struct mm_log l = { .out = lg.out, .prefix = prefix };
	page_round(&l, 2);
	fflush(stdout);
	_exit(7);
}

static void mode_vfork(void)
{
	char *argv[] = { (char *)"tasks", (char *)"--exec-child=1", lg.out ? (char *)"--log" : NULL, NULL };
	int status;
	fflush(stdout);
	pid_t p = vfork();
	if (p == 0) {
		/* (the vfork child: raw calls, nothing of libc's state) */
		rsys(SYS_munmap, (long)rsys(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), 4096, 0, 0, 0, 0);
		execv(self, argv);
		_exit(127);
	}
	if (p < 0 || waitpid(p, &status, 0) != p)
		die("vfork");
	printf("vfork child status=%d\n", WEXITSTATUS(status));
	argv[1] = (char *)"--exec-child=2";
	if (posix_spawn(&p, self, NULL, NULL, argv, environ) || waitpid(p, &status, 0) != p)
		die("posix_spawn");
	printf("spawn child status=%d\n", WEXITSTATUS(status));
}

static void mode_fork(void)
{
	int status;
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		struct mm_log l = { .out = lg.out, .prefix = "proc=1 " };
		page_round(&l, 1);
		fflush(stdout);
		_exit(3);
	}
	if (p < 0 || waitpid(p, &status, 0) != p)
		die("fork");
	printf("fork child status=%d\n", WEXITSTATUS(status));
	p = fork();
	if (p == 0) {
		page_round(&(struct mm_log){ 0 }, 1);
		raise(SIGKILL);
		_exit(1);
	}
	if (p < 0 || waitpid(p, &status, 0) != p)
		die("fork");
	printf("fork child signal=%d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void mode_exec(void)
{
	char *argv[] = { (char *)"tasks", (char *)"--exec-child=", lg.out ? (char *)"--log" : NULL, NULL };
	char *envp[] = { NULL };
	fflush(stdout);
	execve(self, argv, envp);
	die("execve");
}

/* ---- signals ------------------------------------------------------------------- */

static volatile sig_atomic_t in_handler_calls;

static void on_alarm(int sig)
{
	(void)sig;
	int e = errno;
	void *p = mmap(NULL, 5 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED) {
		*(volatile char *)p = 1;
		munmap(p, 5 * 4096);
		in_handler_calls++;
	}
	errno = e;
}

static void mode_signals(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	setitimer(ITIMER_REAL, &it, NULL);
	struct mm_log quiet = { 0 };
	unsigned long glibc = 0;
	for (int i = 0; i < 2000; i++) {
		page_round(&quiet, 3);
		void *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			*(volatile char *)p = 1;
			munmap(p, 3 * 4096);
			glibc++;
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("signals raw=%lu glibc=%lu handler=%d\n", quiet.per_op[OP_MMAP], glibc,
	       (int)in_handler_calls);
}

/* ---- its own SIGSYS and filter ---------------------------------------------------------- */

static volatile int seen_trap, seen_other, seen_nr;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	if (si->si_code == 1 /* SYS_SECCOMP */ && si->si_errno == 42) {
		seen_trap++;
		seen_nr = si->si_syscall;
		((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = 4242;
	} else {
		seen_other++;
	}
}

static void mode_sigsys(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL))
		die("sigaction");
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | 42),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mincore, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fp = { sizeof(f) / sizeof(f[0]), f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp))
		die("seccomp");
	long r = 0;
	for (int i = 0; i < 5; i++)
		r = syscall(SYS_getppid);
	raise(SIGSYS);
	int64_t a = raw(&lg, OP_MMAP, SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, I2U(-1), 0);
	unsigned char vec[1];
	raw(&lg, OP_MINCORE, SYS_mincore, (uint64_t)a, 4096, P2U(vec), 0, 0, 0);
	raw(&lg, OP_MUNMAP, SYS_munmap, (uint64_t)a, 4096, 0, 0, 0, 0);
	printf("sigsys traps=%d nr=%d result=%ld other=%d\n", seen_trap, seen_nr, r, seen_other);
}

/* ---- every signal blocked ------------------------------------------------------------------ */

static void *blocked_thread(void *arg)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	page_round(arg, 1);
	return NULL;
}

static volatile int usr1_done;

static void on_usr1(int sig)
{
	(void)sig;
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED)
		munmap(p, 4096);
	usr1_done = 1;
}

static void mode_masks(void)
{
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	page_round(&lg, 1);
	sigprocmask(SIG_SETMASK, &old, NULL);
	/* a thread created with every signal blocked (glibc blocks them
	 * around clone), which blocks them again itself */
	struct mm_log tl = { 0 };
	pthread_t th;
	pthread_sigmask(SIG_BLOCK, &all, &old);
	thread_start(&th, NULL, blocked_thread, &tl);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_join(th, NULL);
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigfillset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	printf("masks thread_calls=%lu handler=%d\n", tl.calls, usr1_done);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "exec-child", optional_argument, NULL, 'C' },
		{ "log", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *mode = NULL;
	const char *child = NULL;
	int c;
	prog = "tasks";
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 'C': child = optarg ? optarg : "1"; break;
		case 'l': lg.out = stdout; break;
		case 'h': fputs(usage_text, stdout); return 0;
		default: try_help();
		}
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		die("readlink /proc/self/exe");
	self[n] = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (child)
		return exec_child(child);
	if (!mode)
		usage_error("--mode is required");
	if (!strcmp(mode, "clone"))
		mode_clone();
	else if (!strcmp(mode, "vfork"))
		mode_vfork();
	else if (!strcmp(mode, "fork"))
		mode_fork();
	else if (!strcmp(mode, "exec"))
		mode_exec();
	else if (!strcmp(mode, "signals"))
		mode_signals();
	else if (!strcmp(mode, "sigsys"))
		mode_sigsys();
	else if (!strcmp(mode, "masks"))
		mode_masks();
	else
		usage_error("--mode: '%s' is not clone, vfork, fork, exec, signals, sigsys or masks", mode);
	struct summary s = { .threads = 1, .procs = 1 };
	summary_add_calls(&s, &lg);
	char extra[64];
	snprintf(extra, sizeof(extra), " mode=%s", mode);
	summary_print(stdout, "", &s, extra);
	return 0;
}
