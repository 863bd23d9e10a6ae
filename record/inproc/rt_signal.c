/*
 * rt_signal.c - the inproc runtime's SIGSYS handler, and what keeps it
 * working: SIGSYS is never blocked (a trap while it is blocked kills the
 * process), and the program's own SIGSYS action is kept aside and called
 * for every SIGSYS that is not the recorder's.
 *
 * The handler runs with every other signal blocked, so that a recorded
 * call it makes is not interleaved with a signal handler's; SIGSYS itself
 * stays deliverable (SA_NODEFER): a filter of the program's own may trap a
 * call the handler makes, and that program's handler must then run.
 */
#include "rt.h"

#define SYSBIT RT_SIGBIT(RT_SIGSYS)
#define UNBLOCKABLE (RT_SIGBIT(RT_SIGKILL) | RT_SIGBIT(RT_SIGSTOP) | SYSBIT)
#define AUDIT_ARCH_X86_64 0xc000003eu

long rt_install_sigsys(void)
{
	struct rt_ksigaction sa = {
		.handler = (void *)rt_sigsys,
		.flags = RT_SA_SIGINFO | RT_SA_RESTORER | RT_SA_NODEFER,
		.restorer = (void *)rt_restorer,
		.mask = ~SYSBIT,
	};
	return rt_sys4(NR_rt_sigaction, RT_SIGSYS, (long)&sa, 0, 8);
}

/* Copy n bytes of the program's memory, which may not be there: 0 or
 * -EFAULT (process_vm_readv on ourselves, so a bad pointer is an error,
 * not a crash in the handler). */
static long safe_copy(void *dst, uint64_t src, uint64_t n, int to_program)
{
	struct {
		uint64_t base, len;
	} l = { (uint64_t)dst, n }, r = { src, n };
	if (to_program) {
		l.base = src;
		r.base = (uint64_t)dst;
	}
	long got = rt_gate(to_program ? 311 /* process_vm_writev */ : 310 /* process_vm_readv */,
			   rt_p.pid, (long)(to_program ? &r : &l), 1, (long)(to_program ? &l : &r), 1, 0);
	if (got == (long)n)
		return 0;
	return got < 0 ? got : -RT_EFAULT;
}

/* rt_sigprocmask made outside a signal handler (a patched site): the real
 * call, with SIGSYS taken out of the set. */
long rt_sigmask_call(const uint64_t *a)
{
	uint64_t set;
	if (a[1] && a[3] == 8) {
		long e = safe_copy(&set, a[1], 8, 0);
		if (e)
			return e;
		if (a[0] != 1 /* SIG_UNBLOCK */)
			set &= ~SYSBIT;
		return rt_sys4(NR_rt_sigprocmask, (long)a[0], (long)&set, (long)a[2], 8);
	}
	return rt_sys4(NR_rt_sigprocmask, (long)a[0], (long)a[1], (long)a[2], (long)a[3]);
}

/* The same from the handler: the mask to change is the one the handler's
 * return restores (the frame's), not the handler's own. */
static long emu_sigprocmask(struct rt_ucontext *uc, const uint64_t *a)
{
	uint64_t old = uc->sigmask, set, m = old;
	if (a[3] != 8)
		return -RT_EINVAL;
	if (a[1]) {
		long e = safe_copy(&set, a[1], 8, 0);
		if (e)
			return e;
		switch (a[0]) {
		case 0: m = old | set; break;	/* SIG_BLOCK */
		case 1: m = old & ~set; break;	/* SIG_UNBLOCK */
		case 2: m = set; break;		/* SIG_SETMASK */
		default: return -RT_EINVAL;
		}
	}
	if (a[2]) {
		long e = safe_copy(&old, a[2], 8, 1);
		if (e)
			return e;
	}
	uc->sigmask = m & ~UNBLOCKABLE;
	return 0;
}

/* rt_sigaction: SIGSYS stays the runtime's (the program's action is kept
 * to be called); no other handler blocks SIGSYS. */
static long emu_sigaction(const uint64_t *a)
{
	struct rt_ksigaction act, old;
	long sig = (long)a[0];
	if (a[3] != 8)
		return -RT_EINVAL;
	if (sig == RT_SIGSYS) {
		old = rt_p.user_sigsys;
		if (a[1]) {
			long e = safe_copy(&act, a[1], sizeof(act), 0);
			if (e)
				return e;
		}
		if (a[2]) {
			long e = safe_copy(&old, a[2], sizeof(old), 1);
			if (e)
				return e;
		}
		if (a[1]) {
			rt_p.user_sigsys = act;
			rt_p.user_sigsys_set = 1;
		}
		return 0;
	}
	if (!a[1])
		return rt_sys4(NR_rt_sigaction, sig, 0, (long)a[2], 8);
	long e = safe_copy(&act, a[1], sizeof(act), 0);
	if (e)
		return e;
	act.mask &= ~SYSBIT;
	return rt_sys4(NR_rt_sigaction, sig, (long)&act, (long)a[2], 8);
}

/* Calls that wait with a temporary mask: the same, SIGSYS out of it. */
static long masked_call(long nr, const uint64_t *a)
{
	uint64_t b[6], set;
	int at = nr == NR_rt_sigsuspend ? 0 : nr == NR_ppoll ? 3 : 4;
	for (int i = 0; i < 6; i++)
		b[i] = a[i];
	if (nr == NR_pselect6) {
		/* the sixth argument points at { const sigset_t *, size_t } */
		uint64_t pair[2];
		if (a[5]) {
			long e = safe_copy(pair, a[5], sizeof(pair), 0);
			if (e)
				return e;
			if (pair[0]) {
				if ((e = safe_copy(&set, pair[0], 8, 0)))
					return e;
				set &= ~SYSBIT;
				pair[0] = (uint64_t)&set;
			}
			b[5] = (uint64_t)pair;
		}
		return rt_gate(nr, (long)b[0], (long)b[1], (long)b[2], (long)b[3], (long)b[4], (long)b[5]);
	}
	if (b[at]) {
		long e = safe_copy(&set, b[at], 8, 0);
		if (e)
			return e;
		set &= ~SYSBIT;
		b[at] = (uint64_t)&set;
	}
	return rt_gate(nr, (long)b[0], (long)b[1], (long)b[2], (long)b[3], (long)b[4], (long)b[5]);
}

/* A SIGSYS that is not the recorder's: the program's own action. */
static void chain(int sig, struct rt_siginfo *si, struct rt_ucontext *uc)
{
	struct rt_ksigaction *u = &rt_p.user_sigsys;
	if (!rt_p.user_sigsys_set || u->handler == RT_SIG_DFL) {
		/* the default: the process dies of SIGSYS */
		struct rt_ksigaction dfl = { 0 };
		rt_sys4(NR_rt_sigaction, RT_SIGSYS, (long)&dfl, 0, 8);
		rt_sys3(NR_tgkill, rt_p.pid, rt_sys0(NR_gettid), RT_SIGSYS);
		return;
	}
	if (u->handler == RT_SIG_IGN)
		return;
	void *h = u->handler;
	if (u->flags & RT_SA_RESETHAND)
		u->handler = RT_SIG_DFL;
	if (u->flags & RT_SA_SIGINFO)
		((void (*)(int, void *, void *))h)(sig, si, uc);
	else
		((void (*)(int))h)(sig);
}

static int gs_noted;

void rt_sigsys(int sig, struct rt_siginfo *si, struct rt_ucontext *uc)
{
	if (si->code != RT_SYS_SECCOMP || si->err != IP_TRAP_DATA || si->arch != AUDIT_ARCH_X86_64) {
		chain(sig, si, uc);
		return;
	}
	struct rt_thread *t = rt_me();
	struct rt_mcontext *mc = &uc->mc;
	long nr = si->syscall;
	uint64_t a[6] = { mc->rdi, mc->rsi, mc->rdx, mc->r10, mc->r8, mc->r9 };
	long ret;

	switch (nr) {
	case NR_clone:
	case NR_clone3:
	case NR_fork:
	case NR_vfork:
		rt_clone(t, nr, uc);
		return;
	case NR_execve:
	case NR_execveat:
		ret = rt_exec(t, nr, a, uc->sigmask);
		break;
	case NR_exit:
	case NR_exit_group:
		rt_exit(t, nr, a);
		return;
	case NR_wait4:
	case NR_waitid:
		ret = rt_wait(t, nr, a, uc->sigmask);
		break;
	case NR_rt_sigaction:
		ret = emu_sigaction(a);
		break;
	case NR_rt_sigprocmask:
		ret = emu_sigprocmask(uc, a);
		rt_patch_site((uint64_t)si->call_addr, nr);
		break;
	case NR_arch_prctl:
		ret = -RT_EPERM; /* (the filter traps ARCH_SET_GS only) */
		if (!gs_noted++)
			rt_note(t, "refused arch_prctl(ARCH_SET_GS): the in-process recorder "
				   "keeps GS for itself");
		break;
	case NR_rt_sigsuspend:
	case NR_ppoll:
	case NR_pselect6:
	case NR_epoll_pwait:
	case NR_epoll_pwait2:
		ret = masked_call(nr, a);
		break;
	default:
		if (nr >= 0 && nr < IP_MAX_NR && rt_params.op_of_nr[nr]) {
			ret = rt_call(t, nr, a);
			rt_patch_site((uint64_t)si->call_addr, nr);
		} else {
			ret = rt_gate(nr, (long)a[0], (long)a[1], (long)a[2], (long)a[3], (long)a[4],
				      (long)a[5]);
		}
		break;
	}
	mc->rax = (uint64_t)ret;
}
