/*
 * tracer.c - the ptrace backend: launch or attach, wait for stops,
 * dispatch them, stop cleanly on SIGINT/SIGTERM/SIGHUP.
 *
 * Launch mode: the seccomp filter makes only the traced ops stop
 * (PTRACE_EVENT_SECCOMP); the tracer then asks for the syscall-exit stop
 * with PTRACE_SYSCALL, and resumes with PTRACE_CONT after it, so every
 * other syscall runs at full speed.  Attach mode (-p) cannot add a filter
 * to a running process and stops at every syscall entry and exit instead.
 *
 * Timing: the 50 ms tick of record.c interrupts the wait so the writer can
 * flush old events while the program runs without traced calls.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/ptrace.h>
#include "recording_int.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

/* ---- stops ---------------------------------------------------------------- */

static int syscall_info(pid_t tid, struct ptrace_syscall_info *info)
{
	long n = ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(*info), info);

	return n > 0 ? 0 : -1;
}

static void entry(struct vmr_rec *r, struct vmr_task *t, uint32_t arch,
		  uint64_t nr, const __u64 *a)
{
	uint64_t args[VMT_MAX_ARGS];
	uint32_t op;

	if (t->flags & T_PRESTART)
		return; /* vmrec's own child before exec */
	op = vmr_sysmap_op(&r->sys, arch, nr);
	if (op) {
		for (int i = 0; i < VMT_MAX_ARGS; i++)
			args[i] = a[i];
		vmr_sc_entry(r, t, op, args, vmt_now_ns());
	}
	else if (arch != r->sys.arch && !(t->flags & T_SYSCALL_MODE))
		vmr_emit_lost(r, t, 1, vmt_now_ns()); /* a 32-bit call the filter caught */
}

static void seccomp_stop(struct vmr_rec *r, struct vmr_task *t)
{
	struct ptrace_syscall_info info;

	if (syscall_info(t->tid, &info) == 0 &&
	    info.op == PTRACE_SYSCALL_INFO_SECCOMP)
		entry(r, t, info.arch, info.seccomp.nr, info.seccomp.args);
	vmr_resume(r, t, 0);
}

static void syscall_stop(struct vmr_rec *r, struct vmr_task *t)
{
	struct ptrace_syscall_info info;

	if (syscall_info(t->tid, &info) == 0) {
		if (info.op == PTRACE_SYSCALL_INFO_EXIT) {
			if (t->flags & T_IN_SC)
				vmr_sc_exit(r, t, info.exit.rval, vmt_now_ns());
		} else if (info.op == PTRACE_SYSCALL_INFO_ENTRY &&
			   (t->flags & T_SYSCALL_MODE)) {
			entry(r, t, info.arch, info.entry.nr, info.entry.args);
		}
	}
	vmr_resume(r, t, 0);
}

static int is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* -p and SIGINT: let go of t at this stop, after finishing a traced call. */
static void detach_stop(struct vmr_rec *r, struct vmr_task *t, int status)
{
	int sig = WSTOPSIG(status), event = (unsigned)status >> 16, inject = 0;

	if (sig == (SIGTRAP | 0x80)) {
		struct ptrace_syscall_info info;
		int ok = syscall_info(t->tid, &info) == 0;
		if ((t->flags & T_IN_SC) && ok &&
		    info.op == PTRACE_SYSCALL_INFO_ENTRY) {
			/* Still before the call: wait for its exit. */
			vmr_resume(r, t, 0);
			return;
		}
		if ((t->flags & T_IN_SC) && ok && info.op == PTRACE_SYSCALL_INFO_EXIT)
			vmr_sc_exit(r, t, info.exit.rval, vmt_now_ns());
	} else if (event == PTRACE_EVENT_EXIT) {
		vmr_on_exit_event(r, t);
	} else if (event == 0) {
		inject = sig; /* a signal on its way: deliver it */
	}
	ptrace(PTRACE_DETACH, t->tid, 0, (long)inject);
	vmr_detached(r, t);
}

static void dispatch(struct vmr_rec *r, pid_t pid, int status, const struct rusage *ru)
{
	struct vmr_task *t = vmr_task_find(r, pid);
	int sig, event;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (t)
			vmr_on_reaped(r, t, status, ru);
		else
			vmr_orphan_drop(r, pid);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	/* Each stop is a voluntary context switch of the program's that
	 * the program alone would not make (COUNTERS stops). */
	if (t)
		t->stops++;
	if (vmr_stop_signal() && !r->attach)
		kill(pid, SIGKILL); /* also tasks that appeared after the stop */
	sig = WSTOPSIG(status);
	event = (unsigned)status >> 16;
	if (event == PTRACE_EVENT_EXEC) {
		t = vmr_on_exec(r, pid);
		if (t && (t->flags & T_DETACHING))
			detach_stop(r, t, status);
		else if (t)
			vmr_resume(r, t, 0);
		else
			ptrace(PTRACE_CONT, pid, 0, 0);
		return;
	}
	if (!t) {
		if (vmr_stop_signal() && r->attach)
			ptrace(PTRACE_DETACH, pid, 0, 0);
		else
			vmr_orphan_add(r, pid, status); /* creator's event pending */
		return;
	}
	if (t->flags & T_DETACHING) {
		detach_stop(r, t, status);
		return;
	}
	if (sig == (SIGTRAP | 0x80)) {
		syscall_stop(r, t);
		return;
	}
	switch (event) {
	case PTRACE_EVENT_SECCOMP:
		seccomp_stop(r, t);
		break;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		vmr_on_clone(r, t, event);
		vmr_resume(r, t, 0);
		break;
	case PTRACE_EVENT_EXIT:
		vmr_on_exit_event(r, t);
		vmr_resume(r, t, 0);
		break;
	case PTRACE_EVENT_STOP:
		/* Group-stop under PTRACE_SEIZE: stay stopped but let the
		 * kernel report SIGCONT (PTRACE_LISTEN).  Otherwise it is the
		 * first stop of a new task or a PTRACE_INTERRUPT. */
		if (is_stop_signal(sig))
			ptrace(PTRACE_LISTEN, t->tid, 0, 0);
		else
			vmr_resume(r, t, 0);
		break;
	case 0:
		vmr_resume(r, t, sig); /* signal-delivery-stop: deliver as is */
		break;
	default:
		vmr_resume(r, t, 0);
		break;
	}
}

/* SIGINT/SIGTERM/SIGHUP arrived.  Launch mode: end the program (a tracee
 * left behind would get ENOSYS from every traced call).  Attach mode:
 * interrupt every task and detach at its next stop. */
static void begin_stop(struct vmr_rec *r)
{
	for (size_t i = 0; i < r->tasks.cap; i++) {
		struct vmr_task *t = vmr_task_slot(r, i);
		if (!t)
			continue;
		if (r->attach) {
			t->flags |= T_DETACHING;
			ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
		} else {
			kill(t->tid, SIGKILL);
		}
	}
	for (uint32_t i = 0; i < r->norph; i++) {
		if (r->attach)
			ptrace(PTRACE_DETACH, r->orph[i].tid, 0, 0);
		else
			kill(r->orph[i].tid, SIGKILL);
	}
	if (r->attach)
		r->norph = 0;
}

/* ---- attach ----------------------------------------------------------------- */

#define ATTACH_OPTS (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | \
		     PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |     \
		     PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT)

static int traced_by_us(pid_t tid)
{
	char path[64], *buf = NULL, *q;
	size_t cap = 0;
	int ours = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if (vmr_read_file(path, &buf, &cap) > 0 && (q = strstr(buf, "\nTracerPid:")))
		ours = atoi(q + 11) == getpid();
	free(buf);
	return ours;
}

/* Seize every thread of pid, re-reading /proc/pid/task until a pass finds
 * no new thread (threads created meanwhile are auto-attached only once
 * their creator is traced). */
static int attach_all(struct vmr_rec *r, pid_t pid, char *err, size_t errlen)
{
	struct vmr_proc *p = NULL;
	char path[64];
	int added;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	do {
		DIR *d = opendir(path);
		struct dirent *de;
		if (!d) {
			int e = errno;
			snprintf(err, errlen, "cannot attach to %d: %s", (int)pid,
				 e == ENOENT ? "no such process" : strerror(e));
			return -e;
		}
		added = 0;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || vmr_task_find(r, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, ATTACH_OPTS) < 0) {
				int e = errno;
				if (e == ESRCH)
					continue; /* exited meanwhile */
				if (e == EPERM && p && traced_by_us(tid))
					continue; /* auto-attached: its creator's
						     clone event will bring it */
				closedir(d);
				snprintf(err, errlen, "cannot attach to %d: %s",
					 (int)pid, strerror(e));
				return -e;
			}
			if (!p && !(p = vmr_proc_new(r, pid))) {
				closedir(d);
				return -ENOMEM;
			}
			struct vmr_task *t = vmr_task_add(r, tid, p);
			if (!t) {
				closedir(d);
				return -ENOMEM;
			}
			/* A seized task runs on; stop it once so it can be
			 * resumed with PTRACE_SYSCALL. */
			ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			added = 1;
		}
		closedir(d);
	} while (added);
	if (!p) {
		snprintf(err, errlen, "cannot attach to %d: no such process", (int)pid);
		return -ESRCH;
	}
	/* Start events in thread order: the leader first. */
	uint64_t ts = vmt_now_ns();
	struct vmr_task *lead = vmr_task_find(r, pid);
	for (uint32_t th = 0; th < r->next_thread; th++)
		for (size_t i = 0; i < r->tasks.cap; i++) {
			struct vmr_task *t = vmr_task_slot(r, i);
			if (t && t->thread == th)
				vmr_start_events(r, t, VMT_NONE, VMT_NONE,
						 th == 0 ? VMT_PROC_ATTACH : VMT_NONE, ts);
		}
	if (lead)
		vmr_maps_event(r, lead, ts);
	vmr_notice(r, "attached to %d: no seccomp filter, tracing all syscalls (slower)",
		   (int)pid);
	return 0;
}

/* ---- the recording -------------------------------------------------------- */

#define LAUNCH_OPTS (ATTACH_OPTS | PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL)

static int launch(struct vmr_rec *r, char *err, size_t errlen)
{
	sigset_t mask;
	struct vmr_proc *p;
	struct vmr_task *t;
	pid_t pid;
	int e;

	if (r->o->same_cpu) {
		/* vmrec first, so that the child inherits the mask. */
		cpu_set_t one;
		int cpu = sched_getcpu();
		CPU_ZERO(&one);
		CPU_SET(cpu > 0 ? cpu : 0, &one);
		if (sched_setaffinity(0, sizeof(one), &one) < 0) {
			e = -errno;
			snprintf(err, errlen, "--same-cpu: cannot pin to CPU %d: %s",
				 cpu, strerror(-e));
			return e;
		}
	}
	sigprocmask(SIG_SETMASK, NULL, &mask);
	e = vmr_launch(r->o->cmd_argv, &r->sys, LAUNCH_OPTS, &mask, &pid, &r->errfd);
	if (e) {
		snprintf(err, errlen, "cannot trace '%s': %s", r->o->cmd_argv[0],
			 strerror(-e));
		return e;
	}
	p = vmr_proc_new(r, pid);
	t = p ? vmr_task_add(r, pid, p) : NULL;
	if (!t) {
		kill(pid, SIGKILL);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t->flags |= T_PRESTART;
	return 0;
}


/* The launched child died before exec: say why. */
static int launch_failed(struct vmr_rec *r, char *err, size_t errlen)
{
	return vmr_launch_explain(r->errfd, r->o->cmd_argv[0], &r->exit_code, err, errlen);
}

static int ptrace_probe(struct vmr_rec *r, char *why, size_t len)
{
	(void)r;
	(void)why;
	(void)len;
	return 0; /* ptrace and seccomp need no privilege for one's children */
}

static int ptrace_run(struct vmr_rec *r, char *err, size_t errlen)
{
	int e, stopping = 0;

	e = r->attach ? attach_all(r, r->o->attach_pid, err, errlen) : launch(r, err, errlen);
	if (e)
		return e;
	for (;;) {
		int status;
		pid_t pid;

		/* (a trace that cannot be written ends the recording now) */
		if ((vmr_stop_signal() || r->werr) && !stopping) {
			r->stop_werr = !vmr_stop_signal() && r->werr;
			stopping = 1;
			begin_stop(r);
		}
		if (vmr_tick_take())
			vmr_tick(r);
		if (r->tasks.n == 0 && r->norph)
			vmr_orphans_adopt(r, 0);
		struct rusage ru;
		pid = wait4(-1, &status, __WALL, &ru);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: no tracee left */
		}
		dispatch(r, pid, status, &ru);
	}
	if (stopping)
		r->stopped_by = vmr_stop_signal();
	if (!r->root_exec_seen && !r->attach)
		return launch_failed(r, err, errlen);
	return 0;
}

const struct vmr_backend vmr_backend_ptrace = {
	.name = "ptrace",
	.probe = ptrace_probe,
	.run = ptrace_run,
};
