/*
 * counts.c - what the load keeps of the recorded run for the fidelity
 * section (report/fidelity.c): the kernel's own counters of each thread
 * and process (COUNTERS events), what the recorded calls waited for (the
 * waits of SYSCALL events), and by which kind of mapping the recorded
 * faults were (FAULT and TOUCH events, classified in simtouch.c).  Kept
 * by local thread and process index, in arrays that grow with them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "load_int.h"

int ld_counts_room(struct loader *L)
{
	rp_trace *t = L->t;
	int rc;
	if ((rc = ld_grow(L, &t->rec_threads, &t->caprec_threads, (size_t)t->nthreads + 1,
			  sizeof(*t->rec_threads))) < 0 ||
	    (rc = ld_grow(L, &t->rec_procs, &t->caprec_procs, (size_t)t->nprocs + 1,
			  sizeof(*t->rec_procs))) < 0)
		return rc;
	return 0;
}

static void take(struct rp_rec_counts *r, const struct vmt_counters *c)
{
	r->have = 1;
	r->flags = (uint8_t)c->flags;
	r->minflt = vmt_counters_minflt(c);
	r->majflt = c->majflt;
	r->nvcsw = c->nvcsw;
	r->nivcsw = c->nivcsw;
	r->utime_ns = c->utime_ns;
	r->stime_ns = c->stime_ns;
	r->stops = c->stops;
}

int ld_counters(struct loader *L, const struct vmt_event *ev)
{
	rp_trace *t = L->t;
	const struct vmt_counters *c = &ev->u.counters;
	/* (By recorded index, not through thread_of(): a process's counters
	 * come after its last thread's exit.) */
	uint32_t p = ev->proc < L->capproc_of_rec ? L->proc_of_rec[ev->proc] : RP_VOID;
	uint32_t tid = ev->thread < L->capthread_of_rec ? L->thread_of_rec[ev->thread] : RP_VOID;
	t->rec_counters++;
	switch (c->scope) {
	case VMT_CNT_THREAD:
		if (tid != RP_VOID)
			take(&t->rec_threads[tid], c);
		break;
	case VMT_CNT_PROCESS:
		if (p != RP_VOID)
			take(&t->rec_procs[p], c);
		break;
	case VMT_CNT_EXEC:
		/* (and for the exec's faults through page tables: simtouch.c) */
		if (p != RP_VOID) {
			L->lp[p].exec_minflt = vmt_counters_minflt(c);
			L->lp[p].exec_counted = 1;
		}
		/* The first exec of a root process starts the recording: what
		 * the process did before it (the recorder's launch) is in its
		 * counters at exit and in those of the thread that exec'd, and
		 * is no part of the replay. */
		if (p != RP_VOID && !t->rec_procs[p].exec_seen) {
			struct rp_rec_counts *r = &t->rec_procs[p];
			r->exec_seen = 1;
			if (t->procs[p].parent == RP_VOID && t->procs[p].first_thread == tid) {
				r->base_minflt = vmt_counters_minflt(c);
				r->base_majflt = c->majflt;
				r->base_nvcsw = c->nvcsw;
				r->base_nivcsw = c->nivcsw;
				r->base_stops = c->stops;
			}
		}
		break;
	}
	return 0;
}

void ld_count_call(struct loader *L, uint32_t tid, const struct vmt_event *ev)
{
	rp_trace *t = L->t;
	const struct vmt_syscall *sc = &ev->u.sc;
	struct rp_rec_counts *r = &t->rec_threads[tid];
	r->calls++;
	if (!r->first_ts)
		r->first_ts = ev->ts_ns;
	if (!(sc->flags & VMT_SC_NO_RESULT) && sc->exit_ns > r->last_ts)
		r->last_ts = sc->exit_ns;
	if (!sc->waits)
		return;
	r->calls_waits++;
	r->call_off_cpu_ns += sc->off_cpu_ns;
	r->call_vcsw += sc->vcsw;
	r->call_ivcsw += sc->ivcsw;
}

void ld_count_faults(struct loader *L, uint32_t tid, uint32_t fkind, uint64_t pages)
{
	rp_trace *t = L->t;
	t->rec_procs[t->threads[tid].proc].faults[fkind < RP_FK__COUNT ? fkind : RP_FK_OTHER] += pages;
}

void ld_count_process(struct loader *L, uint32_t p, const struct vmt_event *ev)
{
	struct rp_rec_counts *r = &L->t->rec_procs[p];
	if (ev->kind == VMT_EV_PROCESS_START)
		r->os_pid = ev->u.process_start.os_pid;
	else if (ev->kind == VMT_EV_EXEC && ev->u.exec.path)
		snprintf(r->path, sizeof(r->path), "%s", ev->u.exec.path);
}
