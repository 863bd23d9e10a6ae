/*
 * tracer.c - the recording loop: launch or attach, wait for stops,
 * dispatch them, stop cleanly on SIGINT/SIGTERM/SIGHUP, finish the trace.
 *
 * Launch mode: the seccomp filter makes only the traced ops stop
 * (PTRACE_EVENT_SECCOMP); the tracer then asks for the syscall-exit stop
 * with PTRACE_SYSCALL, and resumes with PTRACE_CONT after it, so every
 * other syscall runs at full speed.  Attach mode (-p) cannot add a filter
 * to a running process and stops at every syscall entry and exit instead.
 *
 * Timing: a 50 ms interval timer (SIGALRM, no SA_RESTART) interrupts the
 * wait so the writer can flush old events while the program runs without
 * traced calls.  Its handler and the stop-signal handlers only set flags.
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
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/ptrace.h>
#include "tracer.h"

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t tick_due;

static void on_stop_signal(int sig)
{
	if (!stop_signal)
		stop_signal = sig;
}

static void on_alarm(int sig)
{
	(void)sig;
	tick_due = 1;
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

struct saved_signals {
	struct sigaction stop[NSTOP], alrm;
	struct itimerval timer;
};

static void signals_install(struct saved_signals *sv)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 50000 }, { 0, 50000 } };

	stop_signal = 0;
	tick_due = 0;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: the wait must return EINTR */
	sa.sa_handler = on_stop_signal;
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &sa, &sv->stop[i]);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &sv->alrm);
	setitimer(ITIMER_REAL, &it, &sv->timer);
}

static void signals_restore(const struct saved_signals *sv)
{
	setitimer(ITIMER_REAL, &sv->timer, NULL);
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &sv->stop[i], NULL);
	sigaction(SIGALRM, &sv->alrm, NULL);
}

/* ---- helpers used by the other files ------------------------------------ */

/* ---- stops ---------------------------------------------------------------- */

static int syscall_info(pid_t tid, struct ptrace_syscall_info *info)
{
	long n = ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(*info), info);

	return n > 0 ? 0 : -1;
}

static void lost_event(struct vmr_rec *r, struct vmr_task *t)
{
	struct vmt_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = VMT_EV_LOST;
	ev.thread = t->thread;
	ev.proc = t->proc->index;
	ev.ts_ns = vmt_now_ns();
	ev.u.lost.count = 1;
	ev.u.lost.what = VMT_LOST_EVENTS;
	vmr_emit(r, &ev);
	r->lost++;
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
		lost_event(r, t); /* a 32-bit call the filter caught */
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

static void dispatch(struct vmr_rec *r, pid_t pid, int status)
{
	struct vmr_task *t = vmr_task_find(r, pid);
	int sig, event;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (t)
			vmr_on_reaped(r, t, status);
		else
			vmr_orphan_drop(r, pid);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (stop_signal && !r->attach)
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
		if (stop_signal && r->attach)
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
	for (uint32_t i = 0; i < r->tabcap; i++) {
		struct vmr_task *t = r->tab[i];
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
		for (uint32_t i = 0; i < r->tabcap; i++) {
			struct vmr_task *t = r->tab[i];
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

static int setup(struct vmr_rec *r, const struct vmr_opts *o, char *err,
		 size_t errlen)
{
	long ps = sysconf(_SC_PAGESIZE);
	int e;

	r->o = o;
	r->attach = o->attach_pid != 0;
	r->errfd = -1;
	r->page_size = ps > 0 ? (uint64_t)ps : 4096;
	while ((1ull << r->page_shift) < r->page_size)
		r->page_shift++;
	if ((e = vmr_sysmap_init(&r->sys))) {
		snprintf(err, errlen, "cannot resolve system call numbers with libseccomp");
		return e;
	}
	if ((e = vmr_pagemap_init(&r->pm))) {
		snprintf(err, errlen, "out of memory");
		return e;
	}
	if (o->stack_depth) {
		r->stacks = vmr_stacks_new(o->stack_depth, &e);
		if (!r->stacks) {
			snprintf(err, errlen, "cannot record stacks: %s", vmt_strerror(e));
			return e;
		}
	}
	if (o->touch == VMR_TOUCH_FAULTS) {
		const char *why = NULL;
		r->faults = vmr_faults_new(&e, &why);
		if (!r->faults) {
			snprintf(err, errlen, "--touch=faults: cannot sample page faults: %s",
				 vmt_strerror(e));
			return e;
		}
		if (why)
			vmr_notice(r, "%s", why);
	}
	return 0;
}

static void teardown(struct vmr_rec *r)
{
	vmr_stacks_free(r->stacks);
	vmr_faults_free(r->faults);
	vmr_free_tables(r);
	vmr_maps_free(&r->maps);
	vmr_pagemap_free(&r->pm);
	vmr_runs_free(&r->runs);
	free(r->present);
	if (r->errfd >= 0)
		close(r->errfd);
	vmt_writer_free(r->w);
}

/* The launched child died before exec: say why. */
static int launch_failed(struct vmr_rec *r, struct vmr_summary *sum,
			 char *err, size_t errlen)
{
	const char *cmd = r->o->cmd_argv[0];
	int stage = 0, e = 0;

	sum->exit_code = 127;
	if (vmr_launch_failure(r->errfd, &stage, &e) < 0) {
		snprintf(err, errlen, "cannot trace '%s': it died before exec", cmd);
		return -ECHILD;
	}
	if (stage == VMR_LAUNCH_FILTER) {
		snprintf(err, errlen, "cannot trace '%s': cannot load the seccomp filter: %s",
			 cmd, strerror(e));
		sum->exit_code = 1;
	} else if (e == ENOENT && !strchr(cmd, '/')) {
		snprintf(err, errlen, "cannot trace '%s': command not found", cmd);
	} else {
		snprintf(err, errlen, "cannot trace '%s': %s", cmd, strerror(e));
		if (e != ENOENT)
			sum->exit_code = 126;
	}
	return -e;
}

int vmr_record(const struct vmr_opts *o, int out_fd,
	       const struct vmt_header *h, vmr_notice_fn notice,
	       void *notice_ctx, struct vmr_summary *sum, char *err,
	       size_t errlen)
{
	struct vmr_rec rec, *r = &rec;
	struct saved_signals sv;
	struct vmt_writer_stats st;
	int e, stopping = 0;

	memset(r, 0, sizeof(*r));
	memset(sum, 0, sizeof(*sum));
	sum->exit_code = 1;
	err[0] = '\0';
	r->notice = notice;
	r->notice_ctx = notice_ctx;
	if ((e = setup(r, o, err, errlen)))
		goto out;
	r->w = vmt_writer_create(out_fd, h, NULL, &e);
	if (!r->w) {
		snprintf(err, errlen, "cannot write the trace: %s", vmt_strerror(e));
		goto out;
	}
	signals_install(&sv);
	e = r->attach ? attach_all(r, o->attach_pid, err, errlen) : launch(r, err, errlen);
	if (e) {
		signals_restore(&sv);
		goto out;
	}
	for (;;) {
		int status;
		pid_t pid;

		if (stop_signal && !stopping) {
			stopping = 1;
			begin_stop(r);
		}
		if (tick_due) {
			tick_due = 0;
			vmr_drain_faults(r, vmt_now_ns());
			e = vmt_writer_tick(r->w);
			if (e && !r->werr)
				r->werr = e;
		}
		if (r->ntasks == 0 && r->norph)
			vmr_orphans_adopt(r, 0);
		pid = waitpid(-1, &status, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: no tracee left */
		}
		dispatch(r, pid, status);
	}
	signals_restore(&sv);

	if (!r->root_exec_seen && !r->attach) {
		e = launch_failed(r, sum, err, errlen);
		goto out;
	}
	vmr_drain_faults(r, UINT64_MAX);
	if (r->stacks && (e = vmr_stacks_finish(r->stacks, r->w, vmt_now_ns())) && !r->werr)
		r->werr = e;
	if (r->faults)
		r->lost += vmr_faults_lost(r->faults);
	e = vmt_writer_finish(r->w);
	if (e && !r->werr)
		r->werr = e;
	vmt_writer_get_stats(r->w, &st);
	sum->events = st.events;
	sum->raw_bytes = st.raw_bytes;
	sum->file_bytes = st.file_bytes;
	sum->threads = r->next_thread;
	sum->procs = r->next_proc;
	sum->lost = r->lost;
	sum->stopped_by = stopping ? stop_signal : 0;
	if (stopping && !r->attach)
		sum->exit_code = 128 + stop_signal;
	else if (r->have_root_status)
		sum->exit_code = r->root_status;
	else
		sum->exit_code = 0; /* detached: the program runs on */
	e = 0;
	if (r->werr) {
		snprintf(err, errlen, "cannot write the trace: %s", vmt_strerror(r->werr));
		e = r->werr;
		sum->exit_code = 1;
	}
out:
	teardown(r);
	return e;
}
