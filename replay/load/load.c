/*
 * load.c - the trace's events, one at a time, into per-thread element
 * arrays (model.h), validated, with the ordering each element needs.
 * The whole load (reading, the checks and marks after the last event,
 * freeing): trace.c; the helpers every part uses: ldcore.c.
 *
 * Threads and processes: a root process's first thread starts with the
 * run; every other thread is started by an RK_SPAWN element in its
 * creator's array, every other process by an RK_FORK element, where the
 * recording saw them start.  Touches wait in the thread until its next
 * element.
 *
 * Ordering: order.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "load_int.h"

/* ---- threads and processes ---------------------------------------------- */

/* Room for recorded index rec in a map from recorded to local indexes;
 * new entries are RP_VOID. */
static int map_rec(struct loader *L, uint32_t **arr, size_t *cap, uint32_t rec)
{
	size_t old = *cap;
	if (vmt_grow(arr, cap, (size_t)rec + 1, sizeof(**arr)))
		return ld_fail(L, -ENOMEM, "out of memory");
	for (size_t i = old; i < *cap; i++)
		(*arr)[i] = RP_VOID;
	return 0;
}

static int new_proc(struct loader *L, uint32_t rec, uint32_t parent, uint32_t *out)
{
	rp_trace *t = L->t;
	int rc;
	if ((rc = map_rec(L, &L->proc_of_rec, &L->capproc_of_rec, rec)))
		return rc;
	if (t->nprocs >= 65536)
		return ld_fail(L, VMT_E_LIMIT, "more than 65536 processes");
	/* Loaded beside a run, a root process has missed its start. */
	if (parent == RP_VOID && L->done)
		return ld_fail(L, VMT_E_LIMIT, "process %u has no parent and starts after the "
			       "first --window of the trace", rec);
	if ((rc = ld_charge(L, LD_COST_PROC)) || (rc = ld_counts_room(L)) ||
	    (rc = ld_grow(L, &t->procs, &t->capprocs, t->nprocs + 1, sizeof(*t->procs))) ||
	    (rc = ld_grow(L, &L->lp, &L->caplp, t->nprocs + 1, sizeof(*L->lp))))
		return rc;
	uint32_t p = t->nprocs;
	struct rp_proc *pr = &t->procs[p];
	struct lproc *P = &L->lp[p];
	pr->rec = rec;
	pr->parent = parent;
	pr->first_thread = RP_VOID;
	pr->plan = RP_VOID;
	rpam_init(&P->map, 1);
	rpam_init(&P->last, 0);
	rpam_init(&P->touched, 0);
	P->plan = RP_VOID;
	P->brk_region = RP_VOID;
	P->global_thread = RP_VOID;
	P->vfork_parent = RP_VOID;
	if (parent != RP_VOID) {
		struct lproc *Q = &L->lp[parent];
		/* A fork copies the address space (and its accounting). */
		if (rpam_copy(&P->map, &Q->map) || rpam_copy(&P->touched, &Q->touched))
			return ld_fail(L, -ENOMEM, "out of memory");
		P->mapped = 0;
		if ((rc = ld_reserve(L, P, 0, RP_ADDR_LIMIT, 1)))
			return rc;
		P->touched_bytes = Q->touched_bytes;
		L->cur_touched += P->touched_bytes;
		P->brk_region = Q->brk_region;
		P->brk_cur = Q->brk_cur;
		P->have_snapshot = 1;
		P->pending_fork = 1;
		if ((rc = ld_check_memory(L)))
			return rc;
	}
	L->proc_of_rec[rec] = p;
	t->arena->proc_rec[p] = rec;
	t->nprocs++;
	*out = p;
	return 0;
}

static int new_thread(struct loader *L, uint32_t rec, uint32_t p, uint32_t *out)
{
	rp_trace *t = L->t;
	int rc;
	if ((rc = map_rec(L, &L->thread_of_rec, &L->capthread_of_rec, rec)))
		return rc;
	if (t->nthreads >= 65536)
		return ld_fail(L, VMT_E_LIMIT, "more than 65536 threads");
	if (t->thread_cap && t->nthreads >= t->thread_cap)
		return ld_fail(L, VMT_E_LIMIT, "more than %u threads in a streamed replay",
			       t->thread_cap);
	if ((rc = ld_charge(L, LD_COST_THREAD)) || (rc = ld_counts_room(L)) ||
	    (rc = ld_grow(L, &t->threads, &t->capthreads, t->nthreads + 1, sizeof(*t->threads))) ||
	    (rc = ld_grow(L, &L->lt, &L->caplt, t->nthreads + 1, sizeof(*L->lt))))
		return rc;
	uint32_t tid = t->nthreads;
	struct lproc *P = &L->lp[p];
	if (vmt_grow(&P->threads, &P->capthreads, (size_t)P->nthreads + 1, sizeof(*P->threads)))
		return ld_fail(L, -ENOMEM, "out of memory");
	L->lt[tid].in_proc = P->nthreads;
	P->threads[P->nthreads++] = tid;
	P->live++;
	t->threads[tid].proc = p;
	t->threads[tid].rec = rec;
	t->procs[p].nthreads++;
	L->thread_of_rec[rec] = tid;
	t->nthreads++;
	ld_stream_init(L, tid);
	*out = tid;
	return 0;
}

/* The first live thread of p, or RP_VOID. */
static uint32_t first_live(struct loader *L, uint32_t p)
{
	struct lproc *P = &L->lp[p];
	for (uint32_t i = 0; i < P->nthreads; i++)
		if (!L->t->threads[P->threads[i]].ended)
			return P->threads[i];
	return RP_VOID;
}

/* ---- elements ----------------------------------------------------------- */

/* Append element proto to thread tid (with its pending touches); rng:
 * recorded ranges it uses. */
static int append(struct loader *L, uint32_t tid, const struct rp_elem *proto, uint64_t ts,
		  const struct lrange *rng, int nrng, int global)
{
	rp_trace *t = L->t;
	struct rp_thread *th = &t->threads[tid];
	struct lthread *lt = &L->lt[tid];
	int rc;

	if (th->nelem >= (1u << 31))
		return ld_fail(L, VMT_E_LIMIT, "more than 2^31 elements in one thread");
	struct rp_elem e = *proto;
	e.event = L->event;
	e.ts = ts >= t->first_ts ? ts - t->first_ts : 0;
	if (lt->npt) {
		if ((rc = ld_grow(L, &t->touches, &t->captouches, (size_t)t->ntouches + lt->npt,
				  sizeof(*t->touches))) < 0)
			return rc;
		memcpy(&t->touches[t->ntouches], lt->pt, lt->npt * sizeof(*lt->pt));
		e.touch0 = t->ntouches;
		e.ntouch = lt->npt;
		t->ntouches += lt->npt;
	}
	e.dep0 = t->ndeps;
	uint32_t seq = th->nelem + 1;
	if ((rc = ld_order(L, tid, &e, seq, rng, nrng, global)) < 0)
		return rc;
	e.ndeps = t->ndeps - e.dep0;
	if ((rc = ld_store(L, tid, &e)) < 0)
		return rc;
	L->prev_thread = tid;
	L->prev_seq = seq;
	lt->npt = 0;
	lt->ntr = 0;
	th->nelem++;
	if (e.kind == RK_SYSCALL) {
		t->nops++;
		t->ops_used_mask |= 1u << e.op;
	} else if (e.kind == RK_SKIP) {
		t->skipped_ops++;
	}
	struct lproc *P = &L->lp[th->proc];
	if (P->map.n > P->max_segs) {
		P->max_segs = P->map.n;
		P->max_thread = tid;
		P->max_elem = th->nelem - 1;
	}
	return 0;
}

static int simple(struct loader *L, uint32_t tid, uint8_t kind, uint32_t arg, uint32_t region,
		  uint64_t ts, int global)
{
	struct rp_elem e;
	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.arg = arg;
	e.region = region;
	return append(L, tid, &e, ts, NULL, 0, global);
}

/* The element just appended to thread tid (a vfork child's exec, or the
 * end of its first thread) releases `parent`, the thread that made the
 * vfork: its next element waits for it.  (When a thread other than the
 * first execs, a recorder may report the first one's exit before the
 * exec: that exit releases it.) */
static void vfork_release(struct loader *L, uint32_t parent, uint32_t tid)
{
	L->lt[parent].vf_thread = tid;
	L->lt[parent].vf_seq = L->t->threads[tid].nelem;
}

int ld_end_thread(struct loader *L, uint32_t tid, uint64_t ts)
{
	struct rp_thread *th = &L->t->threads[tid];
	if (th->ended)
		return 0;
	int rc = simple(L, tid, RK_END, 0, 0, ts, 0);
	if (rc < 0)
		return rc;
	struct lproc *P = &L->lp[th->proc];
	if (P->vfork_parent != RP_VOID && L->t->procs[th->proc].first_thread == tid) {
		vfork_release(L, P->vfork_parent, tid);
		P->vfork_parent = RP_VOID;
	}
	th->ended = 1;
	L->lp[th->proc].live--;
	return 0;
}

/* ---- events ------------------------------------------------------------- */

/* Thread par of process p forks: the pages its other threads touched
 * until then (their touches wait for their next op) were there when the
 * fork copied the address space, and a write to one after it takes a
 * copy-on-write fault.  So their touches go before the fork, each in its
 * own thread (its faults stay its own), and the fork waits for them (it
 * is global). */
static int touches_before_fork(struct loader *L, uint32_t p, uint32_t par, uint64_t ts)
{
	struct lproc *P = &L->lp[p];
	for (uint32_t i = 0; i < P->nthreads; i++) {
		uint32_t u = P->threads[i];
		int rc;
		if (u != par && !L->t->threads[u].ended && L->lt[u].npt &&
		    (rc = simple(L, u, RK_TOUCH, 0, 0, ts, 0)) < 0)
			return rc;
	}
	return 0;
}

/* Create thread `rec` in process p, started by recorded thread `parent`
 * (VMT_NONE: unknown): a root's first thread starts with the run, a forked
 * process's first thread by an RK_FORK of the forking thread, any other
 * thread by an RK_SPAWN of its creator. */
static int start_thread(struct loader *L, uint32_t rec, uint32_t p, uint32_t parent, uint64_t ts,
			uint32_t *out)
{
	rp_trace *t = L->t;
	struct lproc *P = &L->lp[p];
	uint32_t par = parent < L->capthread_of_rec ? L->thread_of_rec[parent] : RP_VOID;
	int rc, first = P->nthreads == 0;
	uint32_t tid = RP_VOID;

	if (par != RP_VOID && t->threads[par].ended)
		par = RP_VOID;
	if (!first && P->live == 0)
		return ld_fail(L, VMT_E_CORRUPT, "thread %u starts in process %u after all its threads ended",
			       rec, t->procs[p].rec);
	if ((rc = new_thread(L, rec, p, &tid)))
		return rc;
	if (first) {
		t->procs[p].first_thread = tid;
		if (P->pending_fork) {
			uint32_t pp = t->procs[p].parent;
			if (par == RP_VOID || t->threads[par].proc != pp)
				par = first_live(L, pp);
			if (par == RP_VOID)
				return ld_fail(L, VMT_E_CORRUPT, "process %u forked by a process with no threads",
					       t->procs[p].rec);
			P->pending_fork = 0;
			if ((rc = touches_before_fork(L, pp, par, ts)) < 0)
				return rc;
			/* (global: a fork copies the whole address space, so
			 * it waits for what the other threads did before it,
			 * and what they do after waits for it; else a munmap
			 * recorded after the fork could run before it, and
			 * the child would unmap that range again, by then
			 * perhaps the replayer's own memory) */
			struct rp_elem e;
			memset(&e, 0, sizeof(e));
			e.kind = RK_FORK;
			e.arg = tid;
			e.region = p;
			e.aux = t->nregions;
			if ((rc = append(L, par, &e, ts, NULL, 0, 1)) < 0)
				return rc;
			if (P->vforked)
				P->vfork_parent = par;
		}
	} else {
		if (par == RP_VOID || t->threads[par].proc != p)
			par = first_live(L, p);
		if (par == RP_VOID || par == tid)
			return ld_fail(L, VMT_E_CORRUPT, "thread %u has no live creator", rec);
		if ((rc = simple(L, par, RK_SPAWN, tid, 0, ts, 0)) < 0)
			return rc;
	}
	*out = tid;
	return 0;
}

/* The local process of ev; a trace that starts without PROCESS_START gets
 * an implicit root. */
static int proc_of(struct loader *L, const struct vmt_event *ev, uint32_t *out)
{
	if (ev->proc < L->capproc_of_rec && L->proc_of_rec[ev->proc] != RP_VOID) {
		*out = L->proc_of_rec[ev->proc];
		if (L->lp[*out].exited)
			return ld_fail(L, VMT_E_CORRUPT, "event of process %u after its exit", ev->proc);
		return 0;
	}
	if (L->t->nprocs == 0)
		return new_proc(L, ev->proc, RP_VOID, out);
	return ld_fail(L, VMT_E_CORRUPT, "event of process %u, which never started", ev->proc);
}

/* The local thread of ev, creating it when the trace never announced it
 * (e.g. threads that existed before an attach). */
static int thread_of(struct loader *L, const struct vmt_event *ev, uint32_t *out)
{
	rp_trace *t = L->t;
	uint32_t p;
	int rc;
	if (ev->thread < L->capthread_of_rec && L->thread_of_rec[ev->thread] != RP_VOID) {
		*out = L->thread_of_rec[ev->thread];
		if (t->threads[*out].ended)
			return ld_fail(L, VMT_E_CORRUPT, "thread %u has an event after its exit", ev->thread);
		if (t->procs[t->threads[*out].proc].rec != ev->proc)
			return ld_fail(L, VMT_E_CORRUPT, "thread %u appears in process %u and %u",
				       ev->thread, t->procs[t->threads[*out].proc].rec, ev->proc);
		return 0;
	}
	if ((rc = proc_of(L, ev, &p)))
		return rc;
	return start_thread(L, ev->thread, p, VMT_NONE, ev->ts_ns, out);
}

static int ev_syscall(struct loader *L, const struct vmt_event *ev)
{
	uint32_t tid;
	int rc, nrng = 0, global = 0;
	struct lrange rng[LD_MAX_RANGES];
	struct rp_elem e;

	if ((rc = thread_of(L, ev, &tid)))
		return rc;
	ld_count_call(L, tid, ev);
	memset(&e, 0, sizeof(e));
	if ((rc = sim_syscall(L, tid, ev, &e, rng, &nrng, &global)) < 0)
		return rc;
	L->lt[tid].have_file = 0;
	return append(L, tid, &e, ev->ts_ns, rng, nrng, global);
}

static int ev_map_file(struct loader *L, const struct vmt_event *ev)
{
	uint32_t tid;
	int rc;
	if ((rc = thread_of(L, ev, &tid)))
		return rc;
	struct lthread *lt = &L->lt[tid];
	char *path = strdup(ev->u.file.path ? ev->u.file.path : "");
	if (!path)
		return ld_fail(L, -ENOMEM, "out of memory");
	free(lt->pathbuf);
	lt->pathbuf = path;
	memset(&lt->file, 0, sizeof(lt->file));
	lt->file.dev = ev->u.file.dev;
	lt->file.ino = ev->u.file.ino;
	lt->file.rec_size = ev->u.file.size < RP_ADDR_LIMIT ? ev->u.file.size : 0;
	lt->file.path = path;
	/* Devices (/dev/zero, a GPU, ...) are never mapped: anonymous memory
	 * stands in for them. */
	uint32_t fmt = ev->u.file.mode & S_IFMT;
	lt->file.zero = fmt && fmt != S_IFREG;
	lt->open_flags = ev->u.file.open_flags;
	lt->have_file = 1;
	return 0;
}

static int ev_process_start(struct loader *L, const struct vmt_event *ev)
{
	uint32_t p, parent = RP_VOID;
	int rc;
	if (ev->proc < L->capproc_of_rec && L->proc_of_rec[ev->proc] != RP_VOID)
		return ld_fail(L, VMT_E_CORRUPT, "process %u started twice", ev->proc);
	uint32_t pp = ev->u.process_start.parent_proc;
	if (pp != VMT_NONE) {
		if (pp >= L->capproc_of_rec || L->proc_of_rec[pp] == RP_VOID)
			return ld_fail(L, VMT_E_CORRUPT, "process %u has unknown parent %u", ev->proc, pp);
		parent = L->proc_of_rec[pp];
		if (L->lp[parent].exited)
			return ld_fail(L, VMT_E_CORRUPT, "process %u forked by exited process %u",
				       ev->proc, pp);
	}
	if ((rc = new_proc(L, ev->proc, parent, &p)))
		return rc;
	ld_count_process(L, p, ev);
	L->lp[p].vforked = parent != RP_VOID && ev->u.process_start.how == VMT_PROC_VFORK;
	return 0;
}

static int ev_thread_start(struct loader *L, const struct vmt_event *ev)
{
	uint32_t p, tid;
	int rc;
	if (ev->thread < L->capthread_of_rec && L->thread_of_rec[ev->thread] != RP_VOID)
		return ld_fail(L, VMT_E_CORRUPT, "thread %u started twice", ev->thread);
	if ((rc = proc_of(L, ev, &p)))
		return rc;
	return start_thread(L, ev->thread, p, ev->u.thread_start.parent_thread, ev->ts_ns, &tid);
}

static int ev_thread_exit(struct loader *L, const struct vmt_event *ev)
{
	if (ev->thread < L->capthread_of_rec && L->thread_of_rec[ev->thread] != RP_VOID) {
		uint32_t tid = L->thread_of_rec[ev->thread];
		/* Threads ended by an exec or a process exit may report later. */
		return L->t->threads[tid].ended ? 0 : ld_end_thread(L, tid, ev->ts_ns);
	}
	uint32_t tid;
	int rc = thread_of(L, ev, &tid);
	return rc ? rc : ld_end_thread(L, tid, ev->ts_ns);
}

static int ev_process_exit(struct loader *L, const struct vmt_event *ev)
{
	uint32_t p;
	int rc;
	if (ev->proc >= L->capproc_of_rec || L->proc_of_rec[ev->proc] == RP_VOID)
		return ld_fail(L, VMT_E_CORRUPT, "exit of process %u, which never started", ev->proc);
	p = L->proc_of_rec[ev->proc];
	struct lproc *P = &L->lp[p];
	if (P->exited)
		return 0;
	if (P->pending_fork)
		return ld_fail(L, VMT_E_CORRUPT, "process %u exits without any thread", ev->proc);
	for (uint32_t i = 0; i < P->nthreads; i++)
		if ((rc = ld_end_thread(L, P->threads[i], ev->ts_ns)))
			return rc;
	P->exited = 1;
	sim_proc_exit(L, p);
	return 0;
}

static int ev_exec(struct loader *L, const struct vmt_event *ev)
{
	uint32_t tid;
	int rc;
	if ((rc = thread_of(L, ev, &tid)))
		return rc;
	uint32_t p = L->t->threads[tid].proc;
	struct lproc *P = &L->lp[p];
	ld_count_process(L, p, ev);
	/* The exec that starts a launched program: nothing to replace yet. */
	if (L->t->threads[tid].nelem == 0 && P->plan == RP_VOID && P->map.n == 0 &&
	    L->t->procs[p].parent == RP_VOID)
		return 0;
	/* An exec releases a vfork's parent, whichever thread makes it. */
	uint32_t vparent = P->vfork_parent;
	P->vfork_parent = RP_VOID;
	/* exec ends every other thread of the process. */
	for (uint32_t i = 0; i < P->nthreads; i++)
		if (P->threads[i] != tid && (rc = ld_end_thread(L, P->threads[i], ev->ts_ns)))
			return rc;
	struct rp_elem e;
	memset(&e, 0, sizeof(e));
	e.kind = RK_EXEC;
	if ((rc = sim_clear(L, p, &e.piece0, &e.npieces)))
		return rc;
	int pl = sim_plan(L, p);
	if (pl < 0)
		return pl;
	e.arg = (uint32_t)pl;
	if ((rc = append(L, tid, &e, ev->ts_ns, NULL, 0, 1)) < 0)
		return rc;
	if (vparent != RP_VOID)
		vfork_release(L, vparent, tid);
	return 0;
}

static int ev_maps(struct loader *L, const struct vmt_event *ev)
{
	uint32_t p;
	int rc = proc_of(L, ev, &p);
	if (rc)
		return rc;
	if (L->lp[p].have_snapshot)
		return 0;
	uint32_t tid;
	if ((rc = thread_of(L, ev, &tid)) || (rc = sim_snapshot(L, p, &ev->u.maps)) ||
	    (rc = sim_exec_faults(L, p, tid)))
		return rc;
	if (L->t->procs[p].parent == RP_VOID && L->t->procs[p].plan == RP_VOID)
		L->t->procs[p].plan = L->lp[p].plan;
	return 0;
}

static int ev_touch(struct loader *L, const struct vmt_event *ev)
{
	uint32_t tid;
	int rc = thread_of(L, ev, &tid);
	return rc ? rc : sim_touch(L, tid, ev);
}

int ld_event(struct loader *L, const struct vmt_event *ev)
{
	switch (ev->kind) {
	case VMT_EV_SYSCALL: return ev_syscall(L, ev);
	case VMT_EV_MAP_FILE: return ev_map_file(L, ev);
	case VMT_EV_THREAD_START: return ev_thread_start(L, ev);
	case VMT_EV_THREAD_EXIT: return ev_thread_exit(L, ev);
	case VMT_EV_PROCESS_START: return ev_process_start(L, ev);
	case VMT_EV_EXEC: return ev_exec(L, ev);
	case VMT_EV_PROCESS_EXIT: return ev_process_exit(L, ev);
	case VMT_EV_MAPS: return ev_maps(L, ev);
	case VMT_EV_TOUCH:
	case VMT_EV_FAULT: return ev_touch(L, ev);
	case VMT_EV_LOST:
		L->t->lost_events += ev->u.lost.count;
		return 0;
	case VMT_EV_COUNTERS: return ld_counters(L, ev);
	default: /* stacks, symbols, strings: not needed to replay */
		return 0;
	}
}
