/*
 * rt.h - the inproc runtime's own declarations (record/inproc/rt_*.c).
 *
 * The runtime runs inside the recorded program, linked at IP_BASE, with no
 * libc: its system calls go through rt_gate() (the one syscall
 * instruction the seccomp filter lets the recorded calls through from),
 * it keeps no libc state, and it is built with general registers only, so
 * that a patched call site needs to save no vector register.
 *
 * Per thread: a struct rt_thread, found through the GS base (glibc and
 * the other libcs of Linux/x86-64 leave GS alone; arch_prctl(ARCH_SET_GS)
 * from the program is refused).  Per image: struct rt_proc (a global).
 */
#ifndef VMREC_RT_H
#define VMREC_RT_H

#include <stddef.h>
#include <stdint.h>
#include "ipshm.h"

#define RT_HIDDEN __attribute__((visibility("hidden")))

/* ---- x86-64 system call numbers -------------------------------------- */
enum {
	NR_read = 0, NR_write = 1, NR_open = 2, NR_close = 3, NR_fstat = 5,
	NR_mmap = 9, NR_mprotect = 10, NR_munmap = 11, NR_brk = 12,
	NR_rt_sigaction = 13, NR_rt_sigprocmask = 14, NR_rt_sigreturn = 15,
	NR_ioctl = 16, NR_pread64 = 17, NR_pwrite64 = 18, NR_mremap = 25,
	NR_madvise = 28, NR_getpid = 39, NR_clone = 56, NR_fork = 57,
	NR_vfork = 58, NR_execve = 59, NR_exit = 60, NR_wait4 = 61, NR_kill = 62,
	NR_fcntl = 72, NR_readlink = 89, NR_getrusage = 98, NR_rt_sigsuspend = 130,
	NR_arch_prctl = 158, NR_gettid = 186, NR_futex = 202,
	NR_exit_group = 231, NR_tgkill = 234, NR_waitid = 247, NR_openat = 257,
	NR_faccessat = 269, NR_pselect6 = 270, NR_ppoll = 271,
	NR_epoll_pwait = 281, NR_execveat = 322, NR_clone3 = 435,
	NR_epoll_pwait2 = 441,
};

#define RT_EINTR 4
#define RT_ENOMEM 12
#define RT_EFAULT 14
#define RT_EEXIST 17
#define RT_EINVAL 22
#define RT_EPERM 1
#define RT_ENOSYS 38
#define RT_EAGAIN 11
#define RT_ETIMEDOUT 110

/* clone flags */
#define RT_CLONE_VM 0x100ull
#define RT_CLONE_VFORK 0x4000ull
#define RT_CLONE_THREAD 0x10000ull
#define RT_CLONE_SETTLS 0x80000ull

#define RT_SIGTRAP 5
#define RT_SIGSEGV 11
#define RT_SIGSYS 31
#define RT_SIGKILL 9
#define RT_SIGSTOP 19
#define RT_SIGBIT(s) (1ull << ((s)-1))

#define RT_SA_SIGINFO 0x4ul
#define RT_SA_ONSTACK 0x08000000ul
#define RT_SA_RESTORER 0x04000000ul
#define RT_SA_NODEFER 0x40000000ul
#define RT_SA_RESETHAND 0x80000000ul
#define RT_SIG_DFL ((void *)0)
#define RT_SIG_IGN ((void *)1)

#define RT_SYS_SECCOMP 1
#define RT_SS_DISABLE 2
#define RT_ARCH_SET_GS 0x1001

/* The kernel's struct sigaction (x86-64). */
struct rt_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* The kernel's siginfo, as far as SIGSYS needs it. */
struct rt_siginfo {
	int signo, err, code, pad;
	void *call_addr; /* SIGSYS: the address after the syscall instruction */
	int syscall;
	unsigned arch;
	char rest[128 - 32];
};

/* struct sigcontext (x86-64) */
struct rt_mcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate; /* -> struct _fpstate (xsave area), or 0 */
	uint64_t reserved1[8];
};

struct rt_stack {
	void *sp;
	int flags;
	int pad;
	size_t size;
};

/* The kernel's struct ucontext (x86-64) */
struct rt_ucontext {
	unsigned long flags;
	struct rt_ucontext *link;
	struct rt_stack stack;
	struct rt_mcontext mc;
	uint64_t sigmask;
};
_Static_assert(sizeof(struct rt_mcontext) == 256, "sigcontext");
_Static_assert(sizeof(struct rt_ucontext) == 304, "ucontext");

/* clone3's argument (the fields it reads) */
struct rt_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

struct rt_timespec {
	long sec, nsec;
};

/* ---- per thread, per image --------------------------------------------- */

#define RT_THREAD_MAGIC 0x6461657268747276ull
#define RT_MAX_THREADS 4096

struct rt_thread {
	struct rt_thread *self; /* %gs:0 */
	uint64_t magic;
	struct ip_slot *slot;	/* its ring, NULL when it has none */
	int32_t tid, pid;
	uint32_t depth;		/* runtime frames of this thread */
	uint32_t used;
	uint32_t vchild;	/* a vfork child: its parent frees the block */
	uint32_t pad;
	void *vfork_stack;	/* lazily: where a vfork parent waits */
	uint64_t vfork_scratch; /* a vfork child's block, freed by the parent */
};

#define RT_MAX_SITES 256

struct rt_proc {
	const struct ip_params *p;
	void *shm;
	uint32_t nthreads; /* live threads of this image's process */
	int32_t pid;
	long (*vclock)(int, struct rt_timespec *);
	struct rt_ksigaction user_sigsys; /* the program's SIGSYS action */
	int user_sigsys_set;
	/* patching */
	uint32_t nsites;
	uint64_t sites[RT_MAX_SITES]; /* patched (or refused) call sites */
	uint64_t stub_page, stub_used; /* the stub page in use (near the last site) */
	uint64_t own[64][2];	       /* ranges the runtime mapped (guarded) */
	uint32_t nown;
	int patch_off;		      /* patching failed once: do not retry */
	uint64_t scanned[16];	      /* objects whose symbols were patched */
	uint32_t nscanned;
};

extern struct rt_proc rt_p RT_HIDDEN;
extern struct ip_params rt_params RT_HIDDEN;

/* rt_entry.S */
long rt_gate(long nr, long a0, long a1, long a2, long a3, long a4, long a5) RT_HIDDEN;
extern char rt_gate_ip[] RT_HIDDEN;
void rt_restorer(void) RT_HIDDEN;
extern char rt_trap_ret[] RT_HIDDEN;
void rt_fast_entry(void) RT_HIDDEN;
/* A clone-family call from the second allowed instruction (rt_clone_ip).
 * c->sp: if set, the call (and the child, and a vfork parent after it) run
 * on that stack.  A child with c->resume set runs rt_child(c) on c->csp
 * and resumes from its own frame; a parent on c->sp runs
 * rt_vfork_parent(c, pid) there.  Otherwise both return the result. */
struct rt_cctx {
	uint64_t sp;	 /* 0: stay on the caller's stack */
	uint64_t resume; /* the child does not return here */
	uint64_t csp;	 /* where rt_child / rt_vfork_parent run */
};
long rt_clone_call(long nr, long a0, long a1, long a2, long a3, long a4,
		   struct rt_cctx *c) RT_HIDDEN;
extern char rt_clone_ip[] RT_HIDDEN;
void rt_vfork_parent(struct rt_cctx *c, long pid) __attribute__((noreturn)) RT_HIDDEN;
/* rt_sigreturn from the frame at uc (never returns). */
void rt_resume(struct rt_ucontext *uc) __attribute__((noreturn)) RT_HIDDEN;

static inline long rt_sys0(long nr) { return rt_gate(nr, 0, 0, 0, 0, 0, 0); }
static inline long rt_sys1(long nr, long a) { return rt_gate(nr, a, 0, 0, 0, 0, 0); }
static inline long rt_sys2(long nr, long a, long b) { return rt_gate(nr, a, b, 0, 0, 0, 0); }
static inline long rt_sys3(long nr, long a, long b, long c) { return rt_gate(nr, a, b, c, 0, 0, 0); }
static inline long rt_sys4(long nr, long a, long b, long c, long d)
{
	return rt_gate(nr, a, b, c, d, 0, 0);
}

static inline struct rt_thread *rt_me(void)
{
	struct rt_thread *t;
	__asm__ volatile("mov %%gs:0, %0" : "=r"(t));
	return t;
}

/* rt_lib.c */
void *memcpy(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t rt_strlen(const char *s) RT_HIDDEN;
int rt_strcmp(const char *a, const char *b) RT_HIDDEN;
/* Decimal of v into b (at least 21 bytes); returns its length. */
int rt_utoa(char *b, uint64_t v) RT_HIDDEN;
long rt_futex_wait(uint32_t *w, uint32_t val, long ns) RT_HIDDEN;
long rt_futex_wake(uint32_t *w) RT_HIDDEN;
/* mmap for the runtime's own use (IP_MAGIC_OFF), noted as guarded. */
long rt_own_map(uint64_t addr, uint64_t len, int prot, int flags) RT_HIDDEN;

/* One line of /proc/self/maps; path points into a buffer reused for the
 * next line. */
struct rt_map {
	uint64_t start, end, off, ino;
	char perms[5];
	const char *path;
};
/* Call fn for each line until it returns nonzero.  0 or -errno. */
int rt_maps_each(int (*fn)(void *ctx, const struct rt_map *m), void *ctx) RT_HIDDEN;

/* rt_main.c */
uint64_t rt_now(void) RT_HIDDEN;
/* The time of a record that is to take its place among other threads'
 * (a call's entry, a thread's exit): the ring is marked busy before the
 * clock is read, unless it already is (*mine then 0), so that vmrec's
 * horizon waits for the record.  rt_busy_end clears a mark this took,
 * once the record is committed.  (Inline: every recorded call takes it.) */
static inline uint64_t rt_busy_begin(struct ip_slot *s, int *mine)
{
	*mine = 0;
	if (s && __atomic_load_n(&s->busy, __ATOMIC_RELAXED) == 0) {
		__atomic_exchange_n(&s->busy, 1, __ATOMIC_SEQ_CST);
		*mine = 1;
	}
	uint64_t t = rt_now();
	if (*mine)
		__atomic_store_n(&s->busy, t, __ATOMIC_RELEASE);
	return t;
}

static inline void rt_busy_end(struct ip_slot *s, int mine)
{
	if (mine)
		__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}
/* The calls the recorder records, from the fast path or the SIGSYS
 * handler: performed (from the gate) and logged in the thread's ring. */
long rt_call(struct rt_thread *t, long nr, const uint64_t *a) RT_HIDDEN;
/* Append a record of len bytes (a multiple of 8; its header's word is
 * set here) to t's ring.  Returns 0, or -1 when it was dropped. */
int rt_put(struct rt_thread *t, uint32_t kind, void *rec, uint32_t len) RT_HIDDEN;
/* Map for writing the ring pages t's next record of len bytes goes to
 * (a count of its faults read for that record is then its last). */
void rt_put_ready(struct rt_thread *t, uint32_t len) RT_HIDDEN;
void rt_note(struct rt_thread *t, const char *text) RT_HIDDEN;
/* Ring the doorbell: vmrec is wanted now. */
void rt_kick(void) RT_HIDDEN;
/* A thread block for thread tid of process pid (claimed, with a ring
 * and its START record), or NULL. */
struct rt_thread *rt_thread_new(int32_t tid, int32_t pid, int32_t parent, uint32_t how) RT_HIDDEN;
void rt_thread_free(struct rt_thread *t) RT_HIDDEN;
/* Give t a fresh ring (a forked child: its parent's is not its). */
void rt_thread_ring(struct rt_thread *t, int32_t parent, uint32_t how) RT_HIDDEN;
void rt_set_gs(struct rt_thread *t) RT_HIDDEN;
/* Is [a, a+len) over a range the runtime owns? */
int rt_guarded(uint64_t a, uint64_t len) RT_HIDDEN;

/* rt_signal.c */
void rt_sigsys(int sig, struct rt_siginfo *si, struct rt_ucontext *uc) RT_HIDDEN;
long rt_install_sigsys(void) RT_HIDDEN;
/* rt_sigprocmask for the fast path: SIGSYS never blocked. */
long rt_sigmask_call(const uint64_t *a) RT_HIDDEN;

/* rt_task.c */
/* clone, clone3, fork, vfork from the SIGSYS handler: the result into uc
 * (and, for a child that starts elsewhere, its own resumption). */
void rt_clone(struct rt_thread *t, long nr, struct rt_ucontext *uc) RT_HIDDEN;
long rt_exec(struct rt_thread *t, long nr, const uint64_t *a, uint64_t mask) RT_HIDDEN;
/* wait4, waitid: the status of a child reaped, for its PROCESS_EXIT. */
long rt_wait(struct rt_thread *t, long nr, const uint64_t *a, uint64_t mask) RT_HIDDEN;
void rt_exit(struct rt_thread *t, long nr, const uint64_t *a) RT_HIDDEN;
/* The C part of a child that resumes from its own frame (rt_entry.S). */
void rt_child(struct rt_cctx *c) __attribute__((noreturn)) RT_HIDDEN;

/* rt_patch.c */
/* The syscall instruction before `after` trapped nr: make that site call
 * the runtime directly from now on, where it is safe. */
void rt_patch_site(uint64_t after, long nr) RT_HIDDEN;

/* rt_touch.c (--touch=resident) */
/* The present pages of [a, a+len) into TOUCH records before call nr. */
void rt_touch_before(struct rt_thread *t, long nr, const uint64_t *a) RT_HIDDEN;
void rt_touch_exit(struct rt_thread *t) RT_HIDDEN;
void rt_touch_brk(uint64_t v) RT_HIDDEN;

#endif /* VMREC_RT_H */
