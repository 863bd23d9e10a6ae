/*
 * tasks.c - threads and processes of a recording: the tid table, dense
 * indices, start/exec/exit events, exit-time touch capture, and new tasks
 * that stop before their creator's PTRACE_EVENT_{FORK,VFORK,CLONE}.
 *
 * A "process" of the trace is an address space: a clone() without CLONE_VM
 * (or a vfork, which gets its own address space at exec) starts one; a
 * clone() with CLONE_VM is a thread of its creator's process even when it
 * has its own thread group.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/kcmp.h>
#include "recording_int.h"

/* ---- tid table (vmtutil.h's vmt_htab) ------------------------------------ */

struct vmr_task *vmr_task_find(struct vmr_rec *r, pid_t tid)
{
	uint64_t *v = vmt_htab_get(&r->tasks, (uint64_t)(uint32_t)tid, 0);
	return v ? (struct vmr_task *)(uintptr_t)*v : NULL;
}

struct vmr_task *vmr_task_of_pid(struct vmr_rec *r, pid_t pid)
{
	for (size_t i = 0; i < r->tasks.cap; i++) {
		struct vmr_task *t = vmr_task_slot(r, i);
		if (t && t->proc->pid == pid)
			return t;
	}
	return NULL;
}

static int tab_insert(struct vmr_rec *r, struct vmr_task *t)
{
	return vmt_htab_set(&r->tasks, (uint64_t)(uint32_t)t->tid, 0, (uint64_t)(uintptr_t)t);
}

static void tab_delete(struct vmr_rec *r, struct vmr_task *t)
{
	vmt_htab_del(&r->tasks, (uint64_t)(uint32_t)t->tid, 0);
}

struct vmr_proc *vmr_proc_new(struct vmr_rec *r, pid_t pid)
{
	struct vmr_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->index = r->next_proc++;
	p->pagemap_fd = -1;
	return p;
}

void vmr_proc_free(struct vmr_proc *p)
{
	if (p->pagemap_fd >= 0)
		close(p->pagemap_fd);
	free(p->shm);
	vmr_code_free(&p->code);
	free(p);
}

struct vmr_task *vmr_task_add(struct vmr_rec *r, pid_t tid, struct vmr_proc *p)
{
	struct vmr_task *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = tid;
	t->proc = p;
	if (tab_insert(r, t)) {
		free(t);
		return NULL;
	}
	t->thread = r->next_thread++;
	if (r->attach)
		t->flags |= T_SYSCALL_MODE;
	p->ntasks++;
	p->nlive++;
	return t;
}

void vmr_task_gone(struct vmr_rec *r, struct vmr_task *t)
{
	if (r->faults) {
		/* (the inproc backend drains them in its own time order) */
		if (!r->inproc)
			vmr_drain_faults(r, UINT64_MAX);
		vmr_faults_remove_task(r->faults, t->tid);
	}
	if (r->stacks)
		vmr_stacks_task_gone(r->stacks, t->tid);
}

void vmr_task_retid(struct vmr_rec *r, struct vmr_task *t, pid_t tid)
{
	tab_delete(r, t);
	t->tid = tid;
	/* (A slot was just freed: the insert cannot fail.) */
	tab_insert(r, t);
}

void vmr_task_remove(struct vmr_rec *r, struct vmr_task *t)
{
	tab_delete(r, t);
	free(t->path);
	free(t);
}

void vmr_free_tables(struct vmr_rec *r)
{
	/* Only reached with tasks left after an error; procs are shared, so
	 * free each once (when its last task goes). */
	for (size_t i = 0; i < r->tasks.cap; i++) {
		struct vmr_task *t = vmr_task_slot(r, i);
		if (!t)
			continue;
		if (--t->proc->ntasks == 0)
			vmr_proc_free(t->proc);
		free(t->path);
		free(t);
	}
	vmt_htab_free(&r->tasks);
	free(r->orph);
	r->orph = NULL;
	r->norph = r->orphcap = 0;
}

/* ---- resuming -------------------------------------------------------------- */

void vmr_resume(struct vmr_rec *r, struct vmr_task *t, int sig)
{
	int req = (t->flags & (T_IN_SC | T_SYSCALL_MODE)) ? PTRACE_SYSCALL
							   : PTRACE_CONT;
	(void)r;
	/* ESRCH: killed meanwhile (SIGKILL); its exit report follows. */
	ptrace(req, t->tid, 0, (long)sig);
}

/* ---- events -------------------------------------------------------------- */

static void ev_init(struct vmt_event *ev, uint32_t kind, struct vmr_task *t,
		   uint64_t ts)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->thread = t->thread;
	ev->proc = t->proc->index;
	ev->ts_ns = ts;
}

/* PROCESS_START (if how != VMT_NONE: t is the first task of a new process)
 * and THREAD_START of t; starts fault sampling of t. */
void vmr_start_events(struct vmr_rec *r, struct vmr_task *t,
		      uint32_t parent_thread, uint32_t parent_proc,
		      uint32_t how, uint64_t ts)
{
	struct vmt_event ev;

	if (how != VMT_NONE) {
		ev_init(&ev, VMT_EV_PROCESS_START, t, ts);
		ev.u.process_start.parent_proc = parent_proc;
		ev.u.process_start.os_pid = t->proc->pid;
		ev.u.process_start.how = how;
		vmr_emit(r, &ev);
	}
	ev_init(&ev, VMT_EV_THREAD_START, t, ts);
	ev.u.thread_start.parent_thread = parent_thread;
	ev.u.thread_start.os_tid = t->tid;
	vmr_emit(r, &ev);
	if (r->faults) {
		int err = vmr_faults_add_task(r->faults, t->tid, t->thread,
					      t->proc->index);
		if (err && err != -EEXIST && err != -ESRCH)
			vmr_notice(r, "cannot sample page faults of thread %d: %s",
				   (int)t->tid, strerror(-err));
	}
}

int vmr_maps_event(struct vmr_rec *r, struct vmr_task *t, uint64_t ts)
{
	int err = vmr_maps_read(&r->maps, t->tid);

	if (err)
		return err;
	return vmr_maps_emit(r, t, r->maps.e, r->maps.n, ts);
}

int vmr_maps_emit(struct vmr_rec *r, struct vmr_task *t, const struct vmt_map_entry *e0,
		  uint32_t n, uint64_t ts)
{
	struct vmt_event ev;
	struct vmr_proc *p = t->proc;

	ev_init(&ev, VMT_EV_MAPS, t, ts);
	ev.u.maps.count = n;
	ev.u.maps.entries = e0;
	vmr_code_reset(&p->code);
	for (uint32_t i = 0; i < n; i++) {
		const struct vmt_map_entry *e = &e0[i];
		if (r->stacks && (e->perms & VMT_PROT_X))
			vmr_code_add(&p->code, e->start, e->end); /* (lost on failure) */
		/* brk's current end is the end of [heap] (if any yet). */
		if (!strcmp(e->path, "[heap]"))
			p->brk_cur = e->end;
	}
	return vmr_emit(r, &ev);
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 0;
}

/* A COUNTERS event of t (its thread, or its process). */
static void counters_event(struct vmr_rec *r, struct vmr_task *t, const struct vmt_counters *c,
			   uint32_t scope, uint64_t ts)
{
	struct vmt_event ev;

	ev_init(&ev, VMT_EV_COUNTERS, t, ts);
	ev.u.counters = *c;
	ev.u.counters.scope = scope;
	if (ev.u.counters.own_flt > ev.u.counters.minflt) /* (read at other times) */
		ev.u.counters.own_flt = ev.u.counters.minflt;
	if (scope != VMT_CNT_PROCESS)
		ev.u.counters.flags &= ~VMT_CNT_SUM;
	vmr_emit(r, &ev);
}

void vmr_thread_exit(struct vmr_rec *r, struct vmr_task *t, int status, uint64_t ts)
{
	struct vmt_event ev;

	vmr_sc_abandon(r, t);
	if (t->flags & T_EXIT_DONE)
		return;
	t->flags |= T_EXIT_DONE;
	/* Its counters, and their share of its process's (a thread the
	 * recorder saw end without them leaves the process's incomplete). */
	if (t->have_cnt) {
		t->cnt.stops = t->stops;
		t->cnt.own_flt = t->own_flt;
		counters_event(r, t, &t->cnt, VMT_CNT_THREAD, ts);
		vmr_cnt_add(&t->proc->cnt_sum, &t->cnt);
	} else if (!(t->flags & T_PRESTART)) {
		t->proc->cnt_missing++;
	}
	ev_init(&ev, VMT_EV_THREAD_EXIT, t, ts);
	ev.u.thread_exit.status = exit_code(status);
	vmr_emit(r, &ev);
}

/* ---- creation ------------------------------------------------------------ */

/* Does new task b share a's address space? */
static int shares_mm(pid_t a, pid_t b)
{
	long k = syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0);
	pid_t ta, tb, pp;

	if (k >= 0)
		return k == 0;
	/* No kcmp (CONFIG_KCMP=n): a shared thread group implies it. */
	if (vmr_task_ids(a, &ta, &pp) || vmr_task_ids(b, &tb, &pp))
		return 0;
	return ta == tb;
}

struct vmr_proc *vmr_proc_fork(struct vmr_rec *r, struct vmr_proc *parent, pid_t pid)
{
	struct vmr_proc *p = vmr_proc_new(r, pid);

	if (!p)
		return NULL;
	/* A copy of the parent's memory: same brk, same attachments, same
	 * code. */
	p->brk_cur = parent->brk_cur;
	if (parent->nshm && (p->shm = malloc(parent->nshm * sizeof(*p->shm)))) {
		memcpy(p->shm, parent->shm, parent->nshm * sizeof(*p->shm));
		p->nshm = p->shmcap = parent->nshm;
	}
	vmr_code_copy(&p->code, &parent->code); /* (marked lost on failure) */
	return p;
}

/* Register new task tid created by `parent` (event: PTRACE_EVENT_*, or 0
 * when adopted without one).  Returns the task or NULL. */
static struct vmr_task *new_task(struct vmr_rec *r, struct vmr_task *parent,
				 pid_t tid, int event)
{
	struct vmr_proc *p;
	struct vmr_task *t;
	uint32_t how = VMT_NONE;
	int shared = shares_mm(parent->tid, tid);

	if (event == PTRACE_EVENT_VFORK || !shared) {
		p = vmr_proc_fork(r, parent->proc, tid);
		if (!p)
			return NULL;
		p->borrowed_mm = shared;
		how = event == PTRACE_EVENT_VFORK ? VMT_PROC_VFORK
		    : event == PTRACE_EVENT_CLONE ? VMT_PROC_CLONE
						  : VMT_PROC_FORK;
	} else {
		p = parent->proc;
	}
	t = vmr_task_add(r, tid, p);
	if (!t) {
		if (how != VMT_NONE)
			vmr_proc_free(p);
		return NULL;
	}
	vmr_start_events(r, t, parent->thread, parent->proc->index, how, vmt_now_ns());
	return t;
}

static int orphan_find(struct vmr_rec *r, pid_t tid)
{
	for (uint32_t i = 0; i < r->norph; i++)
		if (r->orph[i].tid == tid)
			return (int)i;
	return -1;
}

void vmr_on_clone(struct vmr_rec *r, struct vmr_task *parent, int event)
{
	unsigned long msg = 0;
	struct vmr_task *t;
	pid_t tid;
	int i;

	if (ptrace(PTRACE_GETEVENTMSG, parent->tid, 0, &msg) < 0 || !msg)
		return;
	tid = (pid_t)msg;
	if (vmr_task_find(r, tid))
		return; /* adopted already */
	t = new_task(r, parent, tid, event);
	i = orphan_find(r, tid);
	if (i >= 0) {
		/* It stopped first: its initial stop is waiting. */
		r->orph[i] = r->orph[--r->norph];
		if (t)
			vmr_resume(r, t, 0);
		else
			ptrace(PTRACE_DETACH, tid, 0, 0);
	}
}

void vmr_orphan_add(struct vmr_rec *r, pid_t tid, int status)
{
	if (orphan_find(r, tid) >= 0)
		return;
	if (vmt_grow(&r->orph, &r->orphcap, (size_t)r->norph + 1, sizeof(*r->orph))) {
		ptrace(PTRACE_DETACH, tid, 0, 0); /* cannot keep it */
		return;
	}
	r->orph[r->norph].tid = tid;
	r->orph[r->norph].status = status;
	r->norph++;
}

void vmr_orphan_drop(struct vmr_rec *r, pid_t tid)
{
	int i = orphan_find(r, tid);

	if (i >= 0)
		r->orph[i] = r->orph[--r->norph];
}

/*
 * Take in stopped new tasks whose creator's event will not come: the
 * creator (a task of process `dying`, or any when dying == 0) was killed
 * between creating them and reporting it.  Their thread group and parent
 * from /proc say which process they belong to.
 */
void vmr_orphans_adopt(struct vmr_rec *r, pid_t dying)
{
	for (uint32_t i = 0; i < r->norph;) {
		pid_t tid = r->orph[i].tid, tgid, ppid;
		struct vmr_task *creator = NULL, *t = NULL;

		if (vmr_task_ids(tid, &tgid, &ppid) == 0 &&
		    (!dying || tgid == dying || ppid == dying)) {
			creator = vmr_task_of_pid(r, tgid);
			if (!creator)
				creator = vmr_task_of_pid(r, ppid);
		} else if (dying) {
			i++;
			continue;
		}
		r->orph[i] = r->orph[--r->norph];
		if (creator)
			t = new_task(r, creator, tid, 0);
		if (t)
			vmr_resume(r, t, 0);
		else
			ptrace(PTRACE_DETACH, tid, 0, 0);
	}
}

/* ---- exec ----------------------------------------------------------------- */

/* After an exec by t: the other tasks of its process are gone, and what
 * was known of the old image is forgotten. */
static void exec_reset(struct vmr_rec *r, struct vmr_task *t)
{
	struct vmr_proc *p = t->proc;

	/* Every other task of the process is being killed by the exec. */
	for (size_t i = 0; i < r->tasks.cap; i++) {
		struct vmr_task *o = vmr_task_slot(r, i);
		if (o && o != t && o->proc == p && !(o->flags & T_EXITING)) {
			o->flags |= T_EXITING;
			p->nlive--;
		}
	}
	if (p->pagemap_fd >= 0)
		close(p->pagemap_fd);
	p->pagemap_fd = -1;
	p->brk_cur = 0;
	p->nshm = 0;
	vmr_code_reset(&p->code);
	p->borrowed_mm = 0;
	p->exit_scanned = 0;
	if (r->stacks)
		vmr_stacks_invalidate(r->stacks, p->pid);
}

void vmr_exec_start(struct vmr_rec *r, struct vmr_task *t, const char *path,
		    const struct vmt_counters *c, uint64_t ts)
{
	if (t->flags & T_PRESTART) {
		/* The launched command is running: the recording starts. */
		t->flags &= ~T_PRESTART;
		r->root_exec_seen = 1;
		vmr_start_events(r, t, VMT_NONE, VMT_NONE, VMT_PROC_ROOT, ts);
	} else {
		exec_reset(r, t);
	}
	if (c) {
		struct vmt_counters e = *c;
		e.stops = t->stops + t->proc->cnt_sum.stops;
		e.own_flt = t->own_flt + t->proc->cnt_sum.own_flt;
		counters_event(r, t, &e, VMT_CNT_EXEC, ts);
	}
	struct vmt_event ev;
	ev_init(&ev, VMT_EV_EXEC, t, ts);
	ev.u.exec.path = path;
	vmr_emit(r, &ev);
}

int vmr_cnt_read_group(pid_t pid, pid_t tid, struct vmt_counters *c)
{
	struct vmt_counters self;
	int e = vmr_cnt_read_task(pid, tid, c);

	if (!e)
		e = vmr_cnt_read_proc(pid, &self, NULL);
	if (e)
		return e;
	c->minflt = self.minflt;
	c->majflt = self.majflt;
	c->utime_ns = self.utime_ns;
	c->stime_ns = self.stime_ns;
	c->flags = VMT_CNT_TICKS;
	return 0;
}

void vmr_cnt_group_end(const struct vmr_proc *p, struct vmt_counters *c)
{
	c->nvcsw += p->cnt_sum.nvcsw;
	c->nivcsw += p->cnt_sum.nivcsw;
}

struct vmr_task *vmr_on_exec(struct vmr_rec *r, pid_t tid)
{
	unsigned long former = 0;
	struct vmr_task *t = vmr_task_find(r, tid);
	uint64_t ts = vmt_now_ns();

	if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &former) == 0 && former &&
	    (pid_t)former != tid) {
		/* A non-leader exec'd and took the leader's tid; the old
		 * leader is gone without a wait report. */
		struct vmr_task *ex = vmr_task_find(r, (pid_t)former);
		if (t && t != ex) {
			vmr_thread_exit(r, t, 0, ts);
			vmr_task_gone(r, t);
			if (!(t->flags & T_EXITING))
				t->proc->nlive--;
			t->proc->ntasks--;
			vmr_task_remove(r, t);
		}
		t = ex;
		if (t) {
			tab_delete(r, t);
			t->tid = tid;
			if (tab_insert(r, t)) { /* cannot happen: a slot was freed */
				free(t->path);
				free(t);
				return NULL;
			}
		}
	}
	if (!t)
		return NULL;
	/* The process's counters up to the exec (the exec waited for the
	 * other threads to go). */
	struct vmt_counters c;
	int have = vmr_cnt_read_group(t->proc->pid, tid, &c) == 0;
	if (have)
		vmr_cnt_group_end(t->proc, &c);
	vmr_exe_path(tid, r->exe, sizeof(r->exe));
	vmr_exec_start(r, t, r->exe, have ? &c : NULL, ts);
	vmr_maps_event(r, t, ts);
	return t;
}

/* ---- exits ---------------------------------------------------------------- */

void vmr_on_exit_event(struct vmr_rec *r, struct vmr_task *t)
{
	struct vmr_proc *p = t->proc;
	unsigned long status = 0;

	vmr_sc_abandon(r, t);
	if (!(t->flags & T_EXITING)) {
		t->flags |= T_EXITING;
		p->nlive--;
	}
	if (p->nlive == 0)
		vmr_faults_read_code(r->faults, p->pid);
	/* The last task of the process: its memory still exists until this
	 * task is resumed, so this is the moment to read it. */
	if (p->nlive == 0 && !p->exit_scanned && !p->borrowed_mm &&
	    !(t->flags & T_PRESTART) && r->touch == VMR_TOUCH_RESIDENT) {
		p->exit_scanned = 1;
		vmr_touch_exit(r, t);
	}
	if (r->faults)
		vmr_drain_faults(r, UINT64_MAX);
	/* Its counters, while it is stopped at its exit: it takes no fault
	 * of the program's after this (its memory goes). */
	if (!(t->flags & T_PRESTART) && vmr_cnt_read_task(p->pid, t->tid, &t->cnt) == 0)
		t->have_cnt = 1;
	struct vmt_counters ch;
	if (p->nlive == 0 && vmr_cnt_read_proc(p->pid, NULL, &ch) == 0)
		p->childless = !ch.minflt && !ch.majflt && !ch.utime_ns && !ch.stime_ns;
	/* THREAD_EXIT now rather than at the wait report: a thread joining
	 * this one may go on as soon as it leaves the stop, before the
	 * tracer reaps it, and its next events must come after this one. */
	if (!(t->flags & T_PRESTART) &&
	    ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &status) == 0)
		vmr_thread_exit(r, t, (int)status, vmt_now_ns());
	/* (Not at the exit of one of several threads: a new thread's first
	 * stop may come before its creator's clone event, and a live
	 * creator still reports it.  Adopted here, such a thread that ended
	 * before that report came back from it as a new process.) */
	if (r->norph && p->nlive == 0)
		vmr_orphans_adopt(r, p->pid);
}

int vmr_task_end(struct vmr_rec *r, struct vmr_task *t, int status, uint64_t ts)
{
	struct vmr_proc *p = t->proc;
	int prestart = t->flags & T_PRESTART;
	uint32_t thread = t->thread;

	if (!(t->flags & T_EXITING)) {
		t->flags |= T_EXITING;
		p->nlive--;
	}
	if (!prestart)
		vmr_thread_exit(r, t, status, ts);
	vmr_task_gone(r, t);
	p->last_status = status;
	if (t->tid == p->pid) {
		p->leader_status = status;
		p->have_leader_status = 1;
	}
	vmr_task_remove(r, t);
	if (--p->ntasks)
		return 0;
	int st = p->have_leader_status ? p->leader_status : p->last_status;
	if (!prestart) {
		struct vmt_event ev;
		memset(&ev, 0, sizeof(ev));
		/* The process's counters: the kernel's own for it (wait4)
		 * where the backend has them, else its threads' summed. */
		ev.kind = VMT_EV_COUNTERS;
		ev.thread = thread;
		ev.proc = p->index;
		ev.ts_ns = ts;
		if (p->have_final) {
			ev.u.counters = p->cnt_final;
			ev.u.counters.stops = p->cnt_sum.stops;
			ev.u.counters.own_flt = p->cnt_sum.own_flt;
		} else {
			ev.u.counters = p->cnt_sum;
			ev.u.counters.flags |= VMT_CNT_SUM;
		}
		ev.u.counters.scope = VMT_CNT_PROCESS;
		if (ev.u.counters.own_flt > ev.u.counters.minflt)
			ev.u.counters.own_flt = ev.u.counters.minflt;
		if (p->have_final || !p->cnt_missing)
			vmr_emit(r, &ev);
		memset(&ev, 0, sizeof(ev));
		ev.kind = VMT_EV_PROCESS_EXIT;
		ev.thread = thread; /* the last task to go */
		ev.proc = p->index;
		ev.ts_ns = ts;
		ev.u.process_exit.status = st;
		vmr_emit(r, &ev);
	}
	if (p->index == 0) {
		r->have_root_status = 1;
		r->root_status = exit_code(st);
	}
	vmr_proc_free(p);
	return 1;
}

void vmr_on_reaped(struct vmr_rec *r, struct vmr_task *t, int status, const struct rusage *ru)
{
	struct vmr_proc *p = t->proc;
	pid_t pid = p->pid;

	/* The last task of a process that waited for no child: wait4's
	 * rusage (its own and its children's) is its own, final count. */
	if (ru && t->proc->childless && t->proc->ntasks == 1 && !(t->flags & T_PRESTART)) {
		vmr_cnt_from_rusage(ru, &t->proc->cnt_final);
		t->proc->have_final = 1;
	}

	if (vmr_task_end(r, t, status, vmt_now_ns())) {
		if (r->norph)
			vmr_orphans_adopt(r, 0);
	} else if (r->norph && p->nlive == 0) {
		vmr_orphans_adopt(r, pid);
	}
}

void vmr_detached(struct vmr_rec *r, struct vmr_task *t)
{
	struct vmr_proc *p = t->proc;

	vmr_sc_abandon(r, t);
	vmr_task_gone(r, t);
	vmr_task_remove(r, t);
	if (--p->ntasks == 0)
		vmr_proc_free(p);
}
