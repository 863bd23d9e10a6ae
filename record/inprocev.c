/*
 * inprocev.c - the inproc backend's rings become the trace's events.
 *
 * Draining.  Every pass reads the time, then each slot of the shared
 * file: its busy mark, then its committed records, which are copied into
 * the slot's queue and zeroed in the ring (so its thread may write there
 * again).  Exec requests are answered as they are copied.
 *
 * The order.  A thread's records are in its order; across threads the
 * trace is in time order (a record's key is its call's entry time).  A
 * record becomes an event only once it is complete before the horizon:
 * the time before which every call of every thread has been copied.  A
 * thread marks its ring busy before it reads the clock for a call and
 * clears the mark once the call's record is committed, so the horizon is
 * the pass's start, or the entry of a call in progress if earlier.  The
 * calls of two threads that overlap in time are in entry order, with one
 * correction: an mmap that returned a range another thread of its
 * process released in an overlapping munmap (or mremap, shmdt) comes
 * after that call, as it did in the kernel.
 *
 * Tasks.  A thread or process starts at its creator's CLONE record (in
 * time before any record of its own); its own ring's START record binds
 * the ring to it.  A process ends at its exit_group (or its last thread's
 * exit), or, killed by a signal, when vmrec sees it gone (its pidfd) and
 * has copied what its rings held.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "inproc_int.h"
#include "linux_abi.h"

#define CLONE_VM_ 0x100ull
#define CLONE_VFORK_ 0x4000ull

/* ---- draining ---------------------------------------------------------------- */

static void free_slot(struct inproc *ip, int i)
{
	struct ip_slot *s = ip_slot_at(ip->shm, (uint32_t)i);
	struct ipq *q = &ip->q[i];
	/* A thread killed while it wrote may have left bytes past the tail. */
	uint64_t resv = __atomic_load_n(&s->resv, __ATOMIC_ACQUIRE);
	if (resv != s->tail)
		memset(ip_ring_of(s), 0, IP_RING_SIZE);
	s->resv = s->tail = 0;
	s->busy = s->lost = 0;
	s->tid = s->pid = 0; /* (no process's until its next thread says) */
	s->waiting = s->kicked = s->reply = 0;
	/* (the bit first: no thread claims the slot before it is FREE, and
	 * the one that does then sets the bit again) */
	__atomic_fetch_and(&ip->hdr->used[i / 64], ~(1ull << (i % 64)), __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->state, IP_SLOT_FREE, __ATOMIC_RELEASE);
	q->active = q->ending = q->dead = q->copied = 0;
	q->t = NULL;
	q->tid = q->pid = 0;
	q->key = 0;
}

/* A record copied from slot i's ring. */
static void took(struct vmr_rec *r, struct inproc *ip, int i, const unsigned char *rec, uint32_t len)
{
	struct ipq *q = &ip->q[i];
	struct ip_rec h;
	memcpy(&h, rec, sizeof(h));
	uint64_t done = h.t;
	switch (IP_REC_KIND(h.word)) {
	case IPR_START: {
		struct ip_start st;
		if (len < sizeof(st))
			return;
		memcpy(&st, rec, sizeof(st));
		q->tid = st.tid;
		q->pid = st.pid;
		ip_proc(ip, st.pid);
		ip_cnt_prefault(st.pid, i);
		break;
	}
	case IPR_EXEC:
	case IPR_ENDING:
		ip_request(r, ip, i, &h);
		return;
	case IPR_REAP: {
		struct ip_exit x;
		struct ipp *p = len >= sizeof(x) ? ip_proc_find(ip, (pid_t)h.aux) : NULL;
		if (p && !p->have_status) {
			memcpy(&x, rec, sizeof(x));
			p->have_status = 1;
			p->status = x.status;
			p->reaped_at = x.h.t;
		}
		return;
	}
	case IPR_OWN: {
		struct ip_own o;
		struct ipp *p = len >= sizeof(o) ? ip_proc_find(ip, q->pid) : NULL;
		if (!p)
			return;
		memcpy(&o, rec, sizeof(o));
		if (!vmt_grow(&p->own, &p->owncap, p->nown + 1, sizeof(*p->own))) {
			p->own[p->nown][0] = o.start;
			p->own[p->nown++][1] = o.end;
		}
		return;
	}
	case IPR_CALL:
		if (len >= sizeof(struct ip_call))
			memcpy(&done, rec + offsetof(struct ip_call, t_exit), 8);
		break;
	case IPR_CLONE: {
		struct ip_clone c;
		if (len < sizeof(c))
			return;
		memcpy(&c, rec, sizeof(c));
		done = c.t_exit;
		/* a new process: its pidfd now, before its parent may reap it */
		if (c.ret > 0 && (!(c.flags & CLONE_VM_) || (c.flags & CLONE_VFORK_)))
			ip_proc(ip, (pid_t)c.ret);
		break;
	}
	default:
		break;
	}
	if (ip_queue(ip, i, rec, len, h.t, done) && !r->werr)
		r->werr = -ENOMEM;
}

static void lost(struct vmr_rec *r, struct inproc *ip, int qi, uint64_t n)
{
	struct {
		struct ip_rec h;
		uint64_t count;
	} l = { { 0, 0, vmt_now_ns() }, n };
	l.h.word = IP_REC_WORD(IPR_LOST, sizeof(l));
	ip_queue(ip, qi, &l, sizeof(l), l.h.t, l.h.t);
	(void)r;
}

/* Copy slot i's committed records; its busy mark first (see the top). */
static uint64_t drain_slot(struct vmr_rec *r, struct inproc *ip, int i, uint64_t now0, uint64_t h)
{
	struct ip_slot *s = ip_slot_at(ip->shm, (uint32_t)i);
	struct ipq *q = &ip->q[i];
	uint32_t state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (state == IP_SLOT_FREE)
		return h;
	if (!q->active) {
		/* (ending and dead stay: the ring's process may have been
		 * seen gone before its first record was copied) */
		q->active = 1;
		q->gen = s->gen;
		q->tid = q->pid = 0;
		q->t = NULL;
		q->key = 0;
		q->idle_at = now0;
	}
	/* Nothing can be written after what this drain copies: the thread
	 * made its ring DONE (the state is read before the records, which
	 * were all committed before it), or vmrec knew before this drain
	 * began that the thread can write no more.  Only then may the slot
	 * be freed: a ring freed earlier loses what was written after the
	 * last drain (a thread's last call, made while vmrec saw its
	 * process end). */
	if (state == IP_SLOT_DONE || q->dead)
		q->copied = 1;
	uint64_t b = __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE);
	if (!q->ending) {
		if (b == 0)
			q->idle_at = now0;
		else if (b == 1)
			h = h < q->idle_at ? h : q->idle_at;
		else
			h = h < b ? h : b;
	}
	unsigned char *ring = ip_ring_of(s);
	uint64_t tail = s->tail, moved = 0;
	for (;;) {
		uint64_t off = tail & (IP_RING_SIZE - 1);
		uint32_t w = __atomic_load_n((uint32_t *)(void *)(ring + off), __ATOMIC_ACQUIRE);
		if (!w)
			break;
		uint32_t len = IP_REC_LEN(w);
		if (len < sizeof(struct ip_rec) || off + len > IP_RING_SIZE) {
			/* cannot happen (the runtime writes whole records);
			 * never trust it: the rest of this ring is lost */
			lost(r, ip, i, 1);
			memset(ring, 0, IP_RING_SIZE);
			tail = __atomic_load_n(&s->resv, __ATOMIC_ACQUIRE);
			moved = 1;
			break;
		}
		if (IP_REC_KIND(w) != IPR_PAD)
			took(r, ip, i, ring + off, len);
		memset(ring + off, 0, len);
		tail += len;
		moved = 1;
	}
	if (moved) {
		__atomic_store_n(&s->tail, tail, __ATOMIC_RELEASE);
		__atomic_store_n(&s->kicked, 0, __ATOMIC_RELAXED);
		__atomic_fetch_add(&s->space, 1, __ATOMIC_RELEASE);
		if (__atomic_load_n(&s->waiting, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&s->waiting, 0, __ATOMIC_RELAXED);
			syscall(SYS_futex, &s->space, 1 /* FUTEX_WAKE */, 1 << 30, NULL, NULL, 0);
		}
	}
	uint64_t nl = __atomic_load_n(&s->lost, __ATOMIC_RELAXED);
	if (nl) {
		__atomic_fetch_sub(&s->lost, nl, __ATOMIC_RELAXED);
		lost(r, ip, i, nl);
	}
	if (state == IP_SLOT_DONE)
		q->ending = 1;
	if (q->copied && q->head == q->tail)
		free_slot(ip, i);
	return h;
}

uint64_t ip_pass(struct vmr_rec *r, struct inproc *ip)
{
	uint64_t now0 = vmt_now_ns(), h = now0;
	/* (no busy mark read before the clock: RDTSC is not ordered with
	 * later loads) */
	__builtin_ia32_lfence();
	for (uint32_t i = ip_next_used(ip->hdr, 0); i < IP_NSLOTS; i = ip_next_used(ip->hdr, i + 1))
		h = drain_slot(r, ip, (int)i, now0, h);
	uint64_t sl = __atomic_load_n(&ip->hdr->lost, __ATOMIC_RELAXED);
	if (sl > ip->shm_lost_told) {
		lost(r, ip, IP_VMREC_Q, sl - ip->shm_lost_told);
		ip->shm_lost_told = sl;
	}
	return h;
}

/* ---- events ---------------------------------------------------------------- */

static void end_queues_of(struct inproc *ip, struct vmr_task *t)
{
	for (int i = 0; i < (int)IP_NSLOTS; i++)
		if (ip->q[i].t == t) {
			ip->q[i].t = NULL;
			ip->q[i].ending = 1;
		}
}

/* End every task of process p (a group exit, a death, an exec's others):
 * THREAD_EXITs, then, with the last, PROCESS_EXIT.  keep: a task that
 * stays (the exec's).  Returns 1 if the process ended. */
static int end_tasks(struct vmr_rec *r, struct inproc *ip, struct vmr_proc *p,
		     struct vmr_task *keep, int status, uint64_t ts)
{
	pid_t tids[256];
	for (;;) {
		int n = 0;
		for (size_t i = 0; i < r->tasks.cap && n < 256; i++) {
			struct vmr_task *o = vmr_task_slot(r, i);
			if (o && o->proc == p && o != keep)
				tids[n++] = o->tid;
		}
		if (!n)
			return 0;
		for (int k = 0; k < n; k++) {
			struct vmr_task *o = vmr_task_find(r, tids[k]);
			if (!o)
				continue;
			end_queues_of(ip, o);
			if (vmr_task_end(r, o, status, ts))
				return 1; /* (p is freed) */
		}
	}
}

static void proc_ended(struct inproc *ip, pid_t pid, int status)
{
	struct ipp *p = ip_proc_find(ip, pid);
	if (p && !p->have_status) {
		p->have_status = 1;
		p->status = status;
	}
	if (p)
		p->dead = 1;
}

static void on_start(struct vmr_rec *r, struct inproc *ip, struct ipq *q, const struct ip_start *st,
		     uint64_t ts)
{
	struct vmr_task *t = vmr_task_find(r, st->tid);
	if (!t) {
		/* its creation was not seen: it joins its process, or starts one */
		struct vmr_task *lead = vmr_task_of_pid(r, st->pid);
		struct vmr_proc *p = lead ? lead->proc : vmr_proc_new(r, st->pid);
		if (!p || !(t = vmr_task_add(r, st->tid, p)))
			return;
		vmr_start_events(r, t, VMT_NONE, VMT_NONE, lead ? VMT_NONE : VMT_PROC_ATTACH, ts);
	}
	q->t = t;
	(void)ip;
}

static void on_clone(struct vmr_rec *r, struct inproc *ip, struct ipq *q, const struct ip_clone *c)
{
	struct vmr_task *parent = q->t, *t;
	struct vmr_proc *p;
	uint32_t how = VMT_NONE;
	pid_t tid = (pid_t)c->ret;

	if (!parent || c->ret <= 0 || vmr_task_find(r, tid))
		return;
	if ((c->flags & CLONE_VM_) && !(c->flags & CLONE_VFORK_)) {
		p = parent->proc; /* a thread (of its creator's address space) */
	} else {
		if (!(p = vmr_proc_fork(r, parent->proc, tid)))
			return;
		p->borrowed_mm = (c->flags & CLONE_VM_) != 0;
		how = (c->flags & CLONE_VFORK_) ? VMT_PROC_VFORK
		    : (c->flags & 0xff) == SIGCHLD ? VMT_PROC_FORK : VMT_PROC_CLONE;
		ip->live_procs++;
	}
	if (!(t = vmr_task_add(r, tid, p))) {
		if (how != VMT_NONE)
			vmr_proc_free(p);
		return;
	}
	vmr_start_events(r, t, parent->thread, parent->proc->index, how, c->h.t);
}

/* The file behind a shmat: the segment's size and mode (IPC_STAT). */
static void shm_file(struct vmr_task *t, int shmid, uint64_t shmflg)
{
	struct shmid_ds ds;
	char *path = vmr_task_path(t);
	if (!path)
		return;
	memset(&t->file, 0, sizeof(t->file));
	snprintf(path, PATH_MAX, "shm:%d", shmid);
	t->file.path = path;
	t->file.ino = (uint64_t)(uint32_t)shmid;
	t->file.open_flags = (shmflg & LX_SHM_RDONLY) ? O_RDONLY : O_RDWR;
	if (shmctl(shmid, IPC_STAT, &ds) == 0) {
		t->file.size = ds.shm_segsz;
		t->file.mode = ds.shm_perm.mode & 0777;
	}
	t->flags |= T_HAVE_FILE;
}

static void on_call(struct vmr_rec *r, struct ipq *q, const unsigned char *rec, uint32_t len)
{
	struct ip_call c;
	struct vmr_task *t = q->t;
	memcpy(&c, rec, sizeof(c));
	if (!t || (t->flags & T_PRESTART) || c.h.aux >= VMR_MAX_NR)
		return;
	struct vmt_syscall sc = { .op = r->sys.op_of_nr[c.h.aux], .result = c.ret,
				  .exit_ns = c.t_exit, .stack_id = VMT_NONE };
	if (!sc.op)
		return;
	memcpy(sc.args, c.args, sizeof(sc.args));
	t->flags &= ~T_HAVE_FILE;
	if ((c.flags & IPC_FILE) && len >= sizeof(c) + sizeof(struct ip_file)) {
		struct ip_file f;
		char *path = vmr_task_path(t);
		memcpy(&f, rec + sizeof(c), sizeof(f));
		if (path && f.pathlen && sizeof(c) + sizeof(f) + f.pathlen <= len) {
			memset(&t->file, 0, sizeof(t->file));
			snprintf(path, PATH_MAX, "%.*s", (int)f.pathlen, (const char *)rec + sizeof(c) + sizeof(f));
			t->file.path = path;
			t->file.dev = f.dev;
			t->file.ino = f.ino;
			t->file.size = f.size;
			t->file.mode = f.mode;
			t->file.open_flags = f.open_flags;
			t->flags |= T_HAVE_FILE;
		}
	} else if (sc.op == VMT_OP_SHMAT && !vmt_is_errno(c.ret)) {
		shm_file(t, (int)c.args[0], c.args[2]);
	}
	vmr_sc_record(r, t, &sc, c.h.t);
}

static void on_exit_rec(struct vmr_rec *r, struct inproc *ip, struct ipq *q, const struct ip_exit *x)
{
	struct vmr_task *t = q->t;
	int status = (x->status & 0xff) << 8;
	if (!t)
		return;
	pid_t pid = t->proc->pid;
	q->t = NULL;
	q->ending = 1;
	ip_cnt_exit(t, x);
	if (x->h.aux) { /* exit_group: every thread */
		end_tasks(r, ip, t->proc, NULL, status, x->h.t);
		proc_ended(ip, pid, status);
	} else if (vmr_task_end(r, t, status, x->h.t)) {
		proc_ended(ip, pid, status);
	}
}

static void on_touch(struct vmr_rec *r, struct ipq *q, const unsigned char *rec, uint32_t len)
{
	struct ip_touch h;
	struct vmr_task *t = q->t;
	memcpy(&h, rec, sizeof(h));
	uint32_t n = h.h.aux;
	if (!t || sizeof(h) + 8ull * n > len || !n)
		return;
	struct vmt_touch_run *runs = malloc(n * sizeof(*runs));
	if (!runs)
		return;
	uint64_t total = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t pr[2];
		memcpy(pr, rec + sizeof(h) + 8ull * i, 8);
		runs[i].pages = pr[0];
		runs[i].state = pr[1];
		total += pr[0];
	}
	struct vmt_event ev = { .kind = VMT_EV_TOUCH, .thread = t->thread, .proc = t->proc->index,
				.ts_ns = h.h.t };
	ev.u.touch.start = h.start;
	ev.u.touch.npages = total;
	ev.u.touch.reason = h.reason;
	ev.u.touch.nruns = n;
	ev.u.touch.runs = runs;
	vmr_emit(r, &ev);
	free(runs);
}

static void on_exec(struct vmr_rec *r, struct inproc *ip, const unsigned char *rec, uint32_t len)
{
	struct ipx_exec x;
	memcpy(&x, rec, sizeof(x));
	if (sizeof(x) + (uint64_t)x.pathlen + x.mapslen > len)
		return;
	const char *path = (const char *)rec + sizeof(x);
	const char *maps = path + x.pathlen;
	uint64_t ts = x.h.t;
	struct vmr_task *t = vmr_task_find(r, x.former);
	if (!t)
		t = vmr_task_find(r, x.tid);
	if (!t)
		return;
	if (x.former != x.tid) {
		/* a thread exec'd and took its leader's tid */
		struct vmr_task *lead = vmr_task_find(r, x.tid);
		if (lead && lead != t) {
			end_queues_of(ip, lead);
			vmr_task_end(r, lead, 0, ts);
		}
		vmr_task_retid(r, t, x.tid);
	}
	end_queues_of(ip, t); /* (its next ring is the new image's) */
	/* The other threads were killed by the exec: they end before it (no
	 * ring of theirs will say so). */
	if (!(t->flags & T_PRESTART))
		end_tasks(r, ip, t->proc, t, 0, ts);
	struct vmt_counters c = x.cnt;
	vmr_cnt_group_end(t->proc, &c);
	t->stops++; /* (its exec stop) */
	vmr_exec_start(r, t, path, x.have_cnt ? &c : NULL, ts);
	if (vmt_grow(&r->maps.text, &r->maps.cap, (size_t)x.mapslen + 1, 1) == 0) {
		memcpy(r->maps.text, maps, x.mapslen);
		r->maps.text[x.mapslen] = 0;
		r->maps.len = x.mapslen;
		if (vmr_maps_parse(&r->maps) == 0)
			vmr_maps_emit(r, t, r->maps.e, r->maps.n, ts);
	}
}

static void on_dead(struct vmr_rec *r, struct inproc *ip, const struct ipx_dead *d)
{
	struct vmr_task *t = vmr_task_of_pid(r, d->pid);
	if (t) {
		ip_cnt_dead(t->proc, vmr_task_find(r, d->pid), d);
		end_tasks(r, ip, t->proc, NULL, d->status, d->h.t);
	}
	proc_ended(ip, d->pid, d->status);
}

static void emit_one(struct vmr_rec *r, struct inproc *ip, int qi, const unsigned char *rec,
		     uint32_t len, uint64_t key)
{
	struct ipq *q = &ip->q[qi];
	struct ip_rec h;
	memcpy(&h, rec, sizeof(h));
	/* faults up to this point first */
	vmr_drain_faults(r, key);
	switch (IP_REC_KIND(h.word)) {
	case IPR_START:
		if (len >= sizeof(struct ip_start))
			on_start(r, ip, q, (const void *)rec, h.t);
		break;
	case IPR_CALL:
		if (len >= sizeof(struct ip_call))
			on_call(r, q, rec, len);
		break;
	case IPR_CLONE:
		if (len >= sizeof(struct ip_clone))
			on_clone(r, ip, q, (const void *)rec);
		break;
	case IPR_EXIT:
		if (len >= sizeof(struct ip_exit))
			on_exit_rec(r, ip, q, (const void *)rec);
		break;
	case IPR_TOUCH:
		if (len >= sizeof(struct ip_touch))
			on_touch(r, q, rec, len);
		break;
	case IPR_NOTE:
		vmr_notice(r, "process %d: %.*s", (int)q->pid, (int)(len - sizeof(h)),
			   (const char *)rec + sizeof(h));
		break;
	case IPR_LOST: {
		uint64_t n;
		memcpy(&n, rec + sizeof(h), 8);
		vmr_emit_lost(r, q->t, n, h.t);
		break;
	}
	case IPR_X_EXEC:
		if (len >= sizeof(struct ipx_exec))
			on_exec(r, ip, rec, len);
		break;
	case IPR_X_DEAD:
		if (len >= sizeof(struct ipx_dead))
			on_dead(r, ip, (const void *)rec);
		break;
	case IPR_X_CNT:
		if (len >= sizeof(struct ipx_cnt))
			ip_cnt_take(r, (const void *)rec);
		break;
	default:
		break;
	}
}

/* The range an mmap-like call record got, or 0. */
static int got_range(const struct vmr_rec *r, const unsigned char *rec, uint32_t len, uint64_t *a,
		     uint64_t *b)
{
	struct ip_call c;
	if (len < sizeof(c))
		return 0;
	memcpy(&c, rec, sizeof(c));
	if (IP_REC_KIND(c.h.word) != IPR_CALL || c.h.aux >= VMR_MAX_NR || vmt_is_errno(c.ret))
		return 0;
	uint32_t op = r->sys.op_of_nr[c.h.aux];
	uint64_t ps = r->page_size;
	if (op == VMT_OP_MMAP && !(c.args[3] & (LX_MAP_FIXED | LX_MAP_FIXED_NOREPLACE)))
		*a = (uint64_t)c.ret, *b = *a + ((c.args[1] + ps - 1) & ~(ps - 1));
	else if (op == VMT_OP_MREMAP && (uint64_t)c.ret != c.args[0])
		*a = (uint64_t)c.ret, *b = *a + ((c.args[2] + ps - 1) & ~(ps - 1));
	else
		return 0;
	return *b > *a;
}

/* Does the record release [a, b) (munmap, mremap's old range, shmdt)? */
static int frees(const struct vmr_rec *r, const unsigned char *rec, uint32_t len, uint64_t a,
		 uint64_t b)
{
	struct ip_call c;
	if (len < sizeof(c))
		return 0;
	memcpy(&c, rec, sizeof(c));
	if (IP_REC_KIND(c.h.word) != IPR_CALL || c.h.aux >= VMR_MAX_NR || vmt_is_errno(c.ret))
		return 0;
	uint32_t op = r->sys.op_of_nr[c.h.aux];
	uint64_t s = c.args[0], e;
	if (op == VMT_OP_MUNMAP)
		e = s + c.args[1];
	else if (op == VMT_OP_MREMAP && (uint64_t)c.ret != s)
		e = s + c.args[1];
	else if (op == VMT_OP_SHMDT)
		e = s + 1;
	else
		return 0;
	return s < b && e > a;
}

/* Is a record done at `done` complete before the horizon?  Strictly: the
 * clock (kvm-clock's, say) can return one value to two CPUs, so a call
 * that starts at the horizon's very time may not have been copied yet.
 * UINT64_MAX is the last pass's: everything. */
static int complete_before(uint64_t done, uint64_t horizon)
{
	return done < horizon || horizon == UINT64_MAX;
}

/* Can queue o's calls change the memory that queue q's calls see?  Not
 * when they are different processes, except that a vfork child before
 * its exec borrows its parent's. */
static int same_mm(const struct ipq *q, const struct ipq *o)
{
	return q->pid == o->pid || (q->t && q->t->proc->borrowed_mm) ||
	       (o->t && o->t->proc->borrowed_mm);
}

/* Does another queue still hold a call of the same memory that released
 * what head (of queue qi) got, made while head was in progress (times
 * may tie)?  Then head goes after it. */
static int held_back(const struct vmr_rec *r, struct inproc *ip, int qi, const struct ipq_hdr *hd)
{
	uint64_t a, b;
	if (!got_range(r, (const unsigned char *)(hd + 1), hd->len, &a, &b))
		return 0;
	for (size_t k = 0; k < ip->nact; k++) {
		int oi = ip->act[k];
		struct ipq *o = &ip->q[oi];
		if (oi == qi || !same_mm(&ip->q[qi], o))
			continue;
		for (size_t at = o->head; at < o->tail;) {
			const struct ipq_hdr *oh = (const void *)(o->buf + at);
			if (oh->key > hd->done)
				break;
			if (oh->key >= hd->key && frees(r, (const unsigned char *)(oh + 1), oh->len, a, b))
				return 1;
			at += sizeof(*oh) + ((oh->len + 7u) & ~7u);
		}
	}
	return 0;
}

static void pop_done(struct inproc *ip, int qi)
{
	struct ipq *q = &ip->q[qi];
	ip_q_pop(q);
	if (q->head == q->tail) {
		for (size_t k = 0; k < ip->nact; k++)
			if (ip->act[k] == qi) {
				ip->act[k] = ip->act[--ip->nact];
				break;
			}
		if (qi < (int)IP_NSLOTS && q->copied)
			free_slot(ip, qi);
	}
}

/* The queue whose head has the lowest key, of those not in skip[0 .. n);
 * -1 if none. */
static int lowest_head(struct inproc *ip, const int *skip, size_t n)
{
	int best = -1;
	uint64_t bk = 0;
	for (size_t k = 0; k < ip->nact; k++) {
		int qi = ip->act[k];
		struct ipq_hdr *h = ip_q_head(&ip->q[qi]);
		size_t i = 0;
		while (i < n && skip[i] != qi)
			i++;
		if (h && i == n && (best < 0 || h->key < bk)) {
			best = qi;
			bk = h->key;
		}
	}
	return best;
}

uint64_t ip_emit(struct vmr_rec *r, struct inproc *ip, uint64_t horizon)
{
	/* The heads go in key order, except one that another queue's
	 * release holds back: the others pass it, in key order, until that
	 * release is out.  (Pulling the releasing queue's records forward
	 * instead would put them before lower keys of third queues.) */
	int held[64];
	for (;;) {
		int lowest = lowest_head(ip, NULL, 0), qi = lowest;
		if (lowest < 0)
			return horizon;
		uint64_t low = ip_q_head(&ip->q[lowest])->key;
		size_t nheld = 0;
		while (qi >= 0) {
			struct ipq_hdr *h = ip_q_head(&ip->q[qi]);
			if (!complete_before(h->done, horizon))
				return low < horizon ? low : horizon;
			if (nheld == sizeof(held) / sizeof(held[0]) || !held_back(r, ip, qi, h))
				break;
			held[nheld++] = qi;
			qi = lowest_head(ip, held, nheld);
		}
		/* (every head held back: ties all round; key order decides) */
		if (qi < 0)
			qi = lowest;
		struct ipq_hdr *h = ip_q_head(&ip->q[qi]);
		emit_one(r, ip, qi, (const unsigned char *)(h + 1), h->len, h->key);
		pop_done(ip, qi);
	}
}

/* ---- fault samples ---------------------------------------------------------- */

int ip_fault_who(void *ctx, pid_t tid, uint64_t addr, uint32_t *thread, uint32_t *proc)
{
	struct vmr_rec *r = ctx;
	struct inproc *ip = r->inproc;
	struct vmr_task *t = vmr_task_find(r, tid);
	if (!t)
		return 1;
	if (t->flags & T_PRESTART)
		return -1; /* (the kernel building the first image: not recorded) */
	/* The runtime's own memory: its faults are counted in the thread's
	 * COUNTERS, as the recorder's own (a replay makes none of them). */
	if (addr >= IP_BASE && addr < IP_END)
		return t->own_flt++, -1;
	struct ipp *p = ip_proc_find(ip, t->proc->pid);
	for (size_t i = 0; p && i < p->nown; i++)
		if (addr >= p->own[i][0] && addr < p->own[i][1])
			return t->own_flt++, -1;
	*thread = t->thread;
	*proc = t->proc->index;
	return 0;
}

void ip_ev_free(struct inproc *ip)
{
	for (int i = 0; i <= (int)IP_NSLOTS; i++)
		free(ip->q[i].buf);
	free(ip->act);
	for (size_t i = 0; i < ip->nprocs; i++) {
		if (ip->procs[i].pidfd >= 0)
			close(ip->procs[i].pidfd);
		free(ip->procs[i].own);
	}
	free(ip->procs);
}
