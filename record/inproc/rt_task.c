/*
 * rt_task.c - the calls that make, replace and end tasks, trapped always
 * (they are rare, and each needs the runtime): clone, clone3, fork,
 * vfork, execve, execveat, exit, exit_group.
 *
 * A new task must get its own thread block and ring before it runs the
 * program's code.  A child that returns on the same stack (fork) returns
 * through the handler like its parent.  One that starts on a new stack
 * (a thread, posix_spawn's child) comes back at rt_clone_ip on that stack,
 * with none of the handler's frames: the parent writes it a copy of the
 * signal frame below its stack's top beforehand (with the result 0, the
 * new stack pointer, the program's signal mask), and the child sets
 * itself up and resumes from that copy with rt_sigreturn.  A vfork child
 * shares its parent's stack and runs on it until it execs, over the
 * parent's handler frames: so a vfork is made from a stack of the
 * runtime's, and both the child and, later, the parent resume from frame
 * copies kept there.
 *
 * An exec is announced to vmrec, which seizes the thread (ptrace) to stop
 * the new image at its start and put the runtime into it; a failed exec
 * is announced too, and vmrec lets the thread go again.
 */
#include "rt.h"

#define SYSBIT RT_SIGBIT(RT_SIGSYS)
#define VFORK_STACK (256u << 10)

struct child_ctx {
	struct rt_cctx c; /* first: rt_clone_call hands it to rt_child */
	struct rt_ucontext *uc;	 /* the child's frame */
	struct rt_ucontext *puc; /* a vfork parent's frame */
	struct rt_thread *parent;
	uint64_t flags, t0;
	long nr;
	int32_t parent_tid;
	int mine; /* the parent marked its ring busy */
};

/* Bytes of the xsave area a frame's fpstate points to. */
static uint64_t fp_size(const struct rt_ucontext *uc)
{
	const unsigned char *fp = (const void *)uc->mc.fpstate;
	uint32_t magic1, ext;
	if (!fp)
		return 0;
	memcpy(&magic1, fp + 464, 4);
	memcpy(&ext, fp + 468, 4);
	return magic1 == 0x46505853u /* FP_XSTATE_MAGIC1 */ && ext >= 512 && ext < 65536 ? ext : 512;
}

/* A copy of uc (and its fpstate) below *top, resuming with rax and rsp;
 * *top moves below it. */
static struct rt_ucontext *frame_copy(uint64_t *top, const struct rt_ucontext *uc, uint64_t rax,
				      uint64_t rsp, int no_altstack)
{
	uint64_t n = fp_size(uc), p = *top;
	uint64_t fp = (p - n) & ~63ull;
	if (n)
		memcpy((void *)fp, (const void *)uc->mc.fpstate, n);
	/* (rt_sigreturn checks that a whole rt_sigframe fits: the ucontext
	 * and a siginfo after it) */
	struct rt_ucontext *c = (void *)((fp - sizeof(*c) - 128) & ~15ull);
	memcpy(c, uc, sizeof(*c));
	c->mc.fpstate = n ? fp : 0;
	c->mc.rax = rax;
	c->mc.rsp = rsp;
	/* as after a real syscall instruction */
	c->mc.rcx = uc->mc.rip;
	c->mc.r11 = uc->mc.eflags;
	c->sigmask &= ~SYSBIT;
	if (no_altstack) {
		/* a thread does not share its creator's signal stack */
		c->stack.sp = 0;
		c->stack.flags = RT_SS_DISABLE;
		c->stack.size = 0;
	}
	*top = (uint64_t)c - 64;
	return c;
}

static void clone_record(struct rt_thread *t, long nr, uint64_t flags, long ret, uint64_t t0)
{
	struct ip_clone r = { .flags = flags, .ret = ret };
	r.h.aux = (uint32_t)nr;
	r.h.t = t0;
	r.t_exit = rt_now();
	rt_put(t, IPR_CLONE, &r, sizeof(r));
}

/* Threads created without a block of their own (none left) share this
 * one, which records nothing. */
static struct rt_thread orphan_block = { .self = &orphan_block, .magic = RT_THREAD_MAGIC, .used = 1 };

void rt_child(struct rt_cctx *c)
{
	struct child_ctx *x = (struct child_ctx *)c;
	int32_t tid = (int32_t)rt_sys0(NR_gettid), pid = (int32_t)rt_sys0(NR_getpid);
	if (!(x->flags & RT_CLONE_VM)) {
		/* a copy of the parent's memory: the block is this child's */
		struct rt_thread *t = x->parent;
		t->tid = tid;
		t->pid = pid;
		t->depth = 0;
		rt_p.pid = pid;
		rt_p.nthreads = 1;
		rt_thread_ring(t, x->parent_tid, IP_HOW_FORK);
	} else {
		int vf = (x->flags & RT_CLONE_VFORK) != 0;
		struct rt_thread *t = rt_thread_new(tid, pid, x->parent_tid, vf ? IP_HOW_VFORK : IP_HOW_THREAD);
		if (!t)
			t = &orphan_block;
		else if (vf) {
			t->vchild = 1;
			x->parent->vfork_scratch = (uint64_t)t;
		}
		rt_set_gs(t);
	}
	rt_resume(x->uc);
}

void rt_vfork_parent(struct rt_cctx *c, long pid)
{
	struct child_ctx *x = (struct child_ctx *)c;
	struct rt_thread *t = x->parent;
	if (t->vfork_scratch) {
		rt_thread_free((struct rt_thread *)t->vfork_scratch);
		t->vfork_scratch = 0;
	}
	clone_record(t, x->nr, x->flags, pid, x->t0);
	rt_busy_end(t->slot, x->mine);
	t->depth--;
	x->puc->mc.rax = (uint64_t)pid;
	rt_resume(x->puc);
}

static long safe_read(void *dst, uint64_t src, uint64_t n)
{
	struct {
		uint64_t base, len;
	} l = { (uint64_t)dst, n }, r = { src, n };
	long got = rt_gate(310 /* process_vm_readv */, rt_p.pid, (long)&l, 1, (long)&r, 1, 0);
	return got == (long)n ? 0 : -RT_EFAULT;
}

/* The clone flags and new stack of call nr (fork, vfork, clone or
 * clone3) from its arguments in mc: 0, or -RT_EINVAL / -RT_EFAULT for a
 * clone3 whose arguments cannot be read. */
static long clone_flags(long nr, const struct rt_mcontext *mc, uint64_t *flags, uint64_t *newsp)
{
	long a0 = (long)mc->rdi, a1 = (long)mc->rsi;

	*flags = 0;
	*newsp = 0;
	switch (nr) {
	case NR_fork:
		*flags = 17; /* SIGCHLD */
		return 0;
	case NR_vfork:
		*flags = RT_CLONE_VM | RT_CLONE_VFORK | 17;
		return 0;
	case NR_clone:
		*flags = (uint64_t)a0;
		*newsp = (uint64_t)a1;
		return 0;
	default: { /* clone3 */
		struct rt_clone_args ca;
		memset(&ca, 0, sizeof(ca));
		if (a1 < 64)
			return -RT_EINVAL;
		if (safe_read(&ca, (uint64_t)a0, sizeof(ca)))
			return -RT_EFAULT;
		*flags = ca.flags | (ca.exit_signal & 0xff);
		if (ca.stack)
			*newsp = ca.stack + ca.stack_size;
		return 0;
	}
	}
}

/* Where the child of a clone with its own stack (newsp), or of a vfork,
 * starts: a copy of the signal frame uc on that stack (a vfork: on the
 * runtime's own vfork stack, with a copy for the parent too) and the
 * context the child resumes from.  NULL for a fork, which resumes on its
 * copy of the parent's stack; *err set when the vfork stack cannot be
 * mapped. */
static struct child_ctx *child_context(struct rt_thread *t, struct rt_ucontext *uc, int vm,
				       int vf, uint64_t newsp, long *err)
{
	struct child_ctx *x = 0;
	*err = 0;
	if (newsp) {
		uint64_t top = (newsp - 256) & ~63ull;
		struct rt_ucontext *cu = frame_copy(&top, uc, 0, newsp, vm && !vf);
		x = (struct child_ctx *)((top - sizeof(*x)) & ~15ull);
		memset(x, 0, sizeof(*x));
		x->uc = cu;
		x->c.resume = 1;
		x->c.csp = ((uint64_t)x - 64) & ~15ull;
	} else if (vm) { /* vfork: from the runtime's stack */
		if (!t->vfork_stack) {
			long m = rt_own_map(0, VFORK_STACK, 3, 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */);
			if (m < 0 && m > -4096) {
				*err = m;
				return 0;
			}
			t->vfork_stack = (void *)m;
		}
		uint64_t top = (uint64_t)t->vfork_stack + VFORK_STACK - 64;
		struct rt_ucontext *pu = frame_copy(&top, uc, 0, uc->mc.rsp, 0);
		struct rt_ucontext *cu = frame_copy(&top, uc, 0, uc->mc.rsp, 0);
		x = (struct child_ctx *)((top - sizeof(*x)) & ~15ull);
		memset(x, 0, sizeof(*x));
		x->uc = cu;
		x->puc = pu;
		x->c.resume = 1;
		x->c.csp = ((uint64_t)x - 64) & ~15ull;
		x->c.sp = x->c.csp;
	}
	return x;
}

void rt_clone(struct rt_thread *t, long nr, struct rt_ucontext *uc)
{
	struct rt_mcontext *mc = &uc->mc;
	long a0 = (long)mc->rdi, a1 = (long)mc->rsi, a2 = (long)mc->rdx, a3 = (long)mc->r10,
	     a4 = (long)mc->r8;
	uint64_t flags, newsp;
	long e = clone_flags(nr, mc, &flags, &newsp);
	if (e) {
		mc->rax = (uint64_t)e;
		return;
	}
	int vm = (flags & RT_CLONE_VM) != 0, vf = (flags & RT_CLONE_VFORK) != 0;
	if (vm && !vf && !newsp) {
		/* two tasks on one stack, neither waiting: not followed */
		rt_note(t, "refused a clone with CLONE_VM but neither a stack nor CLONE_VFORK");
		mc->rax = (uint64_t)-RT_EINVAL;
		return;
	}

	struct ip_slot *s = t->slot;
	int mine = 0;
	t->depth++;
	uint64_t t0 = rt_busy_begin(s, &mine);

	struct rt_cctx plain = { 0, 0, 0 };
	struct rt_cctx *c = &plain;
	struct child_ctx *x = child_context(t, uc, vm, vf, newsp, &e);
	if (e) {
		mc->rax = (uint64_t)e;
		goto out;
	}
	if (x) {
		x->parent = t;
		x->flags = flags;
		x->t0 = t0;
		x->nr = nr;
		x->parent_tid = t->tid;
		x->mine = mine;
		c = &x->c;
	}
	int thread = vm && !vf;
	if (thread)
		__atomic_fetch_add(&rt_p.nthreads, 1, __ATOMIC_SEQ_CST);
	long ret = rt_clone_call(nr, a0, a1, a2, a3, a4, c);
	if (ret == 0) {
		/* a forked child, back on its copy of the parent's stack */
		int32_t parent_tid = t->tid;
		t->tid = (int32_t)rt_sys0(NR_gettid);
		t->pid = (int32_t)rt_sys0(NR_getpid);
		t->depth = 0;
		rt_p.pid = t->pid;
		rt_p.nthreads = 1;
		rt_thread_ring(t, parent_tid, IP_HOW_FORK);
		mc->rax = 0;
		return;
	}
	if (ret < 0 && thread)
		__atomic_fetch_sub(&rt_p.nthreads, 1, __ATOMIC_SEQ_CST);
	if (vf && t->vfork_scratch) { /* the child has exec'd or exited */
		rt_thread_free((struct rt_thread *)t->vfork_scratch);
		t->vfork_scratch = 0;
	}
	clone_record(t, nr, flags, ret, t0);
	mc->rax = (uint64_t)ret;
out:
	rt_busy_end(s, mine);
	t->depth--;
}

/* Tell vmrec (a request record, then the doorbell) and wait for its
 * answer. */
static uint32_t ask(struct rt_thread *t, uint32_t kind, uint32_t aux, long err)
{
	struct ip_slot *s = t->slot;
	struct ip_exit r = { .status = (int32_t)err };
	r.h.aux = aux;
	r.h.t = rt_now();
	__atomic_store_n(&s->reply, 0, __ATOMIC_SEQ_CST);
	rt_put(t, kind, &r, sizeof(r));
	rt_kick();
	uint32_t v;
	while (!(v = __atomic_load_n(&s->reply, __ATOMIC_ACQUIRE))) {
		if (__atomic_load_n(&((struct ip_shared *)rt_p.shm)->dead, __ATOMIC_RELAXED))
			rt_sys2(NR_kill, rt_p.pid, RT_SIGKILL);
		rt_futex_wait(&s->reply, 0, 100000000);
	}
	return v;
}

long rt_exec(struct rt_thread *t, long nr, const uint64_t *a, uint64_t mask)
{
	long dirfd = -100 /* AT_FDCWD */, path = (long)a[0], fl = 0;
	if (nr == NR_execveat) {
		dirfd = (long)a[0];
		path = (long)a[1];
		fl = (long)(a[4] & 0x1000); /* AT_EMPTY_PATH */
	}
	/* An exec that fails at once (execvp trying each directory of
	 * PATH) gives vmrec nothing to follow. */
	long acc = rt_gate(439 /* faccessat2 */, dirfd, path, 1 /* X_OK */, fl | 0x200 /* AT_EACCESS */, 0, 0);
	if (acc == -RT_ENOSYS)
		acc = rt_sys3(NR_faccessat, dirfd, path, 1);
	int follow = acc == 0;
	if (follow && !t->slot)
		return -RT_ENOMEM; /* (it could not be followed: its image would die) */
	if (follow && ask(t, IPR_EXEC, 0, 0) != 1)
		return -RT_EPERM; /* vmrec cannot trace it; it said why */
	/* The new image starts with the program's mask, not the handler's. */
	uint64_t m = mask & ~SYSBIT, cur = 0;
	rt_sys4(NR_rt_sigprocmask, 2, (long)&m, (long)&cur, 8);
	long ret = rt_gate(nr, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4], (long)a[5]);
	rt_sys4(NR_rt_sigprocmask, 2, (long)&cur, 0, 8);
	if (follow)
		ask(t, IPR_EXEC, 1, ret);
	return ret;
}

/* The kernel's counters of the calling thread (who: RUSAGE_THREAD) or of
 * its process (RUSAGE_SELF).  0 or -errno. */
static long usage_of(int who, struct ip_counters *c)
{
	struct {
		long ut_sec, ut_usec, st_sec, st_usec;
		long maxrss, ixrss, idrss, isrss, minflt, majflt, nswap, inblock, oublock;
		long msgsnd, msgrcv, nsignals, nvcsw, nivcsw;
	} ru;
	memset(&ru, 0, sizeof(ru));
	long e = rt_sys2(NR_getrusage, who, (long)&ru);
	if (e)
		return e;
	c->minflt = (uint64_t)ru.minflt;
	c->majflt = (uint64_t)ru.majflt;
	c->nvcsw = (uint64_t)ru.nvcsw;
	c->nivcsw = (uint64_t)ru.nivcsw;
	c->utime_ns = (uint64_t)ru.ut_sec * 1000000000u + (uint64_t)ru.ut_usec * 1000u;
	c->stime_ns = (uint64_t)ru.st_sec * 1000000000u + (uint64_t)ru.st_usec * 1000u;
	return 0;
}

void rt_exit(struct rt_thread *t, long nr, const uint64_t *a)
{
	int group = nr == NR_exit_group;
	uint32_t n = __atomic_load_n(&rt_p.nthreads, __ATOMIC_RELAXED);
	/* (a vfork child is a process of one thread; rt_p is its parent's) */
	int last = group || t->vchild || n == 1;
	if ((rt_params.flags & IP_F_RESIDENT) && !t->vchild && last)
		rt_touch_exit(t);
	/* exit_group ends the other threads without a line of the runtime
	 * run in them: vmrec reads their counters first.  And where vmrec
	 * reads the instructions of the faults it was sent (IP_F_CODE), it
	 * does so before the process's memory goes. */
	if (((group && n > 1) || (last && (rt_params.flags & IP_F_CODE))) && !t->vchild && t->slot)
		ask(t, IPR_ENDING, 0, 0);
	struct ip_exit x = { .status = (int32_t)(a[0] & 0xff) };
	x.h.aux = (uint32_t)group;
	/* The counters, as late as they can be read: after them, only the
	 * record's own write (its pages are mapped first) and the exit. */
	rt_put_ready(t, sizeof(x));
	if (usage_of(1 /* RUSAGE_THREAD */, &x.thread) == 0)
		x.have |= IPE_THREAD;
	if (last && usage_of(0 /* RUSAGE_SELF */, &x.proc) == 0)
		x.have |= IPE_PROCESS;
	/* (marked busy as a call is: an exit may be what another thread's
	 * later call waited for) */
	int mine;
	x.h.t = rt_busy_begin(t->slot, &mine);
	rt_put(t, IPR_EXIT, &x, sizeof(x));
	rt_busy_end(t->slot, mine);
	if (t->slot)
		__atomic_store_n(&t->slot->state, IP_SLOT_DONE, __ATOMIC_RELEASE);
	if (!group && !t->vchild && t != &orphan_block) {
		__atomic_fetch_sub(&rt_p.nthreads, 1, __ATOMIC_SEQ_CST);
		rt_thread_free(t);
	}
	for (;;)
		rt_gate(nr, (long)a[0], 0, 0, 0, 0, 0);
}

/* A wait for a child, made with the program's signal mask (the handler
 * blocks every other signal: a wait may last); the reaped child's status
 * into the ring, since vmrec cannot ask a process that is not its child
 * how it ended. */
long rt_wait(struct rt_thread *t, long nr, const uint64_t *a, uint64_t mask)
{
	uint64_t m = mask & ~SYSBIT, cur = 0;
	int32_t status = 0;
	struct {
		int signo, err, code, pad;
		int32_t pid, uid, status;
		char rest[128 - 28];
	} info;
	uint64_t b[6];
	for (int i = 0; i < 6; i++)
		b[i] = a[i];
	/* (our own result buffers, copied to the program's if it gave one) */
	if (nr == NR_wait4)
		b[1] = (uint64_t)&status;
	else
		b[2] = (uint64_t)&info;
	memset(&info, 0, sizeof(info));
	rt_sys4(NR_rt_sigprocmask, 2, (long)&m, (long)&cur, 8);
	long ret = rt_gate(nr, (long)b[0], (long)b[1], (long)b[2], (long)b[3], (long)b[4], (long)b[5]);
	rt_sys4(NR_rt_sigprocmask, 2, (long)&cur, 0, 8);
	if (ret < 0)
		return ret;
	struct {
		uint64_t base, len;
	} l, r;
	if (nr == NR_wait4 && a[1]) {
		l = (typeof(l)){ (uint64_t)&status, 4 };
		r = (typeof(r)){ a[1], 4 };
		if (rt_gate(311 /* process_vm_writev */, rt_p.pid, (long)&l, 1, (long)&r, 1, 0) != 4)
			return -RT_EFAULT;
	} else if (nr == NR_waitid && a[2]) {
		l = (typeof(l)){ (uint64_t)&info, sizeof(info) };
		r = (typeof(r)){ a[2], sizeof(info) };
		if (rt_gate(311, rt_p.pid, (long)&l, 1, (long)&r, 1, 0) != (long)sizeof(info))
			return -RT_EFAULT;
	}
	int32_t pid = nr == NR_wait4 ? (int32_t)ret : info.pid;
	if (nr == NR_waitid) /* CLD_EXITED, CLD_KILLED, CLD_DUMPED */
		status = info.code == 1 ? (info.status & 0xff) << 8
		       : info.code == 2 ? info.status : info.code == 3 ? info.status | 0x80 : -1;
	/* (exits only: not stops and continues, nor a WNOHANG with none) */
	if (pid > 0 && status >= 0 && ((status & 0x7f) == 0 || ((status & 0x7f) != 0x7f && (status & 0xff) != 0xff))) {
		struct ip_exit x = { .status = status };
		x.h.aux = (uint32_t)pid;
		x.h.t = rt_now();
		rt_put(t, IPR_REAP, &x, sizeof(x));
	}
	return ret;
}
