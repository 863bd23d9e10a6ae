/*
 * rules_discard.c - rewrite rules that drop a call giving pages back when
 * a later call gives them back anyway:
 *
 *   discard-before-unmap
 *                  madvise(MADV_DONTNEED or MADV_FREE) or mprotect(PROT_NONE)
 *                  of private anonymous memory, followed by a munmap of all
 *                  of it by the same thread: the discard goes (V8 frees the
 *                  pages of an isolate with mprotect, madvise and munmap)
 *   free-before-dontneed
 *                  madvise(MADV_FREE) of private anonymous memory, followed
 *                  by a madvise(MADV_DONTNEED) of all of it (any thread)
 *                  that finds at least as many of its pages present as the
 *                  MADV_FREE did: reclaim took none, so the MADV_FREE goes
 *                  (jemalloc's decay, dirty -> muzzy -> clean)
 * Each is named after the lint finding it rewrites (formerly unmap-only
 * and dontneed-only, names still taken: rw_rule.alias).
 *
 * Each candidate is held back until its range shows what it was.  It
 * stays as recorded when anything else happens to the range first:
 * another call on any part of it (by any thread; for discard-before-unmap, a
 * further discard by the same thread joins the chain), a munmap
 * or MADV_DONTNEED of only part of it, a munmap by another thread, pages
 * used again after a MADV_DONTNEED (a touch or fault showing them
 * present: the program read the zeros it was promised), a MADV_DONTNEED
 * that finds fewer pages present than the MADV_FREE did or whose thread
 * has no touch information (traces recorded without resident touches), a
 * fork, exec or exit, a new snapshot, lost events, the end of the trace,
 * or too many events held.  An mprotect(PROT_NONE) that is not followed
 * by the munmap is a guard and stays.
 *
 * Touches that show pages present in a range an mprotect(PROT_NONE) closed
 * (pages the program had used before it) are not replayed from the
 * recording, whose range is PROT_NONE then; when that mprotect goes, they
 * go with it, so a replay of the rewritten trace does not fault in pages
 * the replay of the recording does not.
 *
 * The touches a recorder took right before a MADV_FREE (its pages then)
 * belong to the call's thread and are replayed before that thread's next
 * call: when a MADV_FREE goes because another thread's MADV_DONTNEED
 * freed its pages, its touches go with it (that MADV_DONTNEED's own
 * touches show the same pages, still present), so the pages are not
 * touched again after they were given back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "rewrite_int.h"
#include "touchlog_int.h"
#include "vmtutil.h"

/* Touch events held with one MADV_FREE (more: it is not dropped). */
#define DR_MAX_TOUCHES 8

struct dr_ent {
	uint64_t start, end, seq;
	uint32_t thread, kind; /* kind: VMT_OP_MPROTECT, or the advice */
	int64_t present;       /* pages present at the call, -1 unknown */
	uint32_t ntouch;
	uint64_t touch[DR_MAX_TOUCHES]; /* touches held with it */
};

struct dr_proc {
	struct dr_ent *e;
	size_t n, cap;
};

/* Touches of a thread held until its next call (free-before-dontneed). */
struct dr_tq {
	uint64_t seq[DR_MAX_TOUCHES];
	uint64_t start[DR_MAX_TOUCHES], end[DR_MAX_TOUCHES];
	uint32_t n, over;
};

struct dr {
	int fbd; /* 1: free-before-dontneed, 0: discard-before-unmap */
	struct dr_proc *p;
	size_t np; /* (p's capacity, for vmt_grow) */
	struct touchlog tl;
	struct dr_tq *tq;
	size_t ntq;
	uint64_t dropped_touches;
};

static void *dr_new(struct rw_stage *s, int fbd)
{
	struct dr *x = calloc(1, sizeof(*x));
	if (x) {
		x->fbd = fbd;
		tl_init(&x->tl, s->page_mask + 1);
	}
	return x;
}

static void *dun_create(struct rw_stage *s)
{
	return dr_new(s, 0);
}

static void *fbd_create(struct rw_stage *s)
{
	return dr_new(s, 1);
}

static void dr_destroy(void *st)
{
	struct dr *x = st;
	for (uint32_t i = 0; i < x->np; i++)
		free(x->p[i].e);
	free(x->p);
	free(x->tq);
	tl_free(&x->tl);
	free(x);
}

static struct dr_proc *proc_of(struct dr *x, uint32_t proc, int create)
{
	if (proc >= x->np && (!create || proc >= VMT_MAX_THREADS ||
			      vmt_grow(&x->p, &x->np, (size_t)proc + 1, sizeof(*x->p))))
		return NULL;
	return &x->p[proc];
}

/* Let the held touches of a thread go (as recorded). */
static int tq_release(struct rw_stage *s, struct dr_tq *q)
{
	int rc = 0;
	for (uint32_t i = 0; !rc && i < q->n; i++)
		rc = rw_release(s, q->seq[i], 0);
	q->n = q->over = 0;
	return rc;
}

static struct dr_tq *tq_of(struct dr *x, uint32_t thread)
{
	if (thread >= VMT_MAX_THREADS || vmt_grow(&x->tq, &x->ntq, (size_t)thread + 1, sizeof(*x->tq)))
		return NULL;
	return &x->tq[thread];
}

/* Entry i of P goes: dropped (its call left out), or as recorded. */
static int decide(struct rw_stage *s, struct dr_proc *P, size_t i, int drop, int drop_touches)
{
	struct dr *x = s->st;
	struct dr_ent e = P->e[i];
	P->e[i] = P->e[--P->n];
	int rc = 0;
	if (drop) {
		struct vmt_event *h = rw_held(s, e.seq);
		if (!h)
			return VMT_E_STATE;
		if ((rc = rw_applied(s, h)))
			return rc;
		rw_removed(s, 1);
	}
	for (uint32_t k = 0; !rc && k < e.ntouch; k++) {
		rc = rw_release(s, e.touch[k], drop && drop_touches);
		x->dropped_touches += drop && drop_touches;
	}
	return rc ? rc : rw_release(s, e.seq, drop);
}

/* Entries overlapping [a, b), except chains of thread `keep` (VMT_NONE:
 * none), stay as recorded. */
static int keep_range(struct rw_stage *s, struct dr_proc *P, uint64_t a, uint64_t b, uint32_t keep)
{
	int rc;
	for (size_t i = 0; P && i < P->n;) {
		if (P->e[i].start < b && a < P->e[i].end && P->e[i].thread != keep) {
			if ((rc = decide(s, P, i, 0, 0)))
				return rc;
		} else {
			i++;
		}
	}
	return 0;
}

/* VMT_OP_MPROTECT for mprotect(PROT_NONE), the advice for
 * madvise(MADV_DONTNEED/MADV_FREE), else 0. */
static uint32_t discard_kind(const struct vmt_syscall *sc)
{
	if (!rw_sc_ok(sc) || sc->result != 0)
		return 0;
	if (sc->op == VMT_OP_MPROTECT && sc->args[2] == LX_PROT_NONE)
		return VMT_OP_MPROTECT;
	if (sc->op == VMT_OP_MADVISE && (sc->args[2] == LX_MADV_DONTNEED || sc->args[2] == LX_MADV_FREE))
		return (uint32_t)sc->args[2];
	return 0;
}

#define DR_BAD (VAN_VMA_HUGETLB | VAN_VMA_SPECIAL | VAN_VMA_SYSV | VAN_VMA_LOCKED)

static int hold(struct rw_stage *s, struct dr_proc *P, struct dr_tq *q, const struct vmt_event *ev,
		uint64_t a, uint64_t b, uint32_t kind)
{
	struct dr *x = s->st;
	if (vmt_grow(&P->e, &P->cap, P->n + 1, sizeof(*P->e)))
		return -ENOMEM;
	struct dr_ent *e = &P->e[P->n];
	memset(e, 0, sizeof(*e));
	e->start = a;
	e->end = b;
	e->thread = ev->thread;
	e->kind = kind;
	e->present = x->fbd ? tl_present(&x->tl, ev->thread, a, b) : -1;
	/* The MADV_FREE's own touches wait with it (those within its range). */
	for (uint32_t k = 0; q && !q->over && k < q->n; k++)
		if (q->start[k] >= a && q->end[k] <= b)
			e->touch[e->ntouch++] = q->seq[k];
	if (q && e->ntouch) {
		uint32_t m = 0;
		for (uint32_t k = 0; k < q->n; k++)
			if (!(q->start[k] >= a && q->end[k] <= b)) {
				q->seq[m] = q->seq[k];
				q->start[m] = q->start[k];
				q->end[m++] = q->end[k];
			}
		q->n = m;
	}
	int rc = rw_hold(s, ev, &e->seq);
	if (!rc)
		P->n++;
	return rc;
}

static int dun_syscall(struct rw_stage *s, struct dr_proc *P, const struct vmt_event *ev,
		       uint64_t a, uint64_t b, uint32_t kind)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	int rc;
	if (sc->op == VMT_OP_MUNMAP && rw_sc_ok(sc)) {
		for (size_t i = 0; i < P->n;) {
			const struct dr_ent *e = &P->e[i];
			if (e->start < b && a < e->end) {
				int drop = e->thread == ev->thread && a <= e->start && e->end <= b;
				if ((rc = decide(s, P, i, drop, 1)))
					return rc;
			} else {
				i++;
			}
		}
		return rw_emit(s, ev);
	}
	if ((rc = keep_range(s, P, a, b, kind ? ev->thread : VMT_NONE)))
		return rc;
	if (kind && rw_model_range(s, ev->proc, a, b, UINT32_MAX, DR_BAD))
		return hold(s, P, NULL, ev, a, b, kind);
	return rw_emit(s, ev);
}

static int fbd_syscall(struct rw_stage *s, struct dr_proc *P, struct dr_tq *q,
		       const struct vmt_event *ev, uint64_t a, uint64_t b, uint32_t kind)
{
	struct dr *x = s->st;
	int rc;
	if (kind == LX_MADV_DONTNEED) {
		for (size_t i = 0; i < P->n;) {
			const struct dr_ent *e = &P->e[i];
			if (!(e->start < b && a < e->end)) {
				i++;
				continue;
			}
			int drop = a <= e->start && e->end <= b && e->present >= 0 &&
				   tl_present(&x->tl, ev->thread, e->start, e->end) >= e->present;
			if ((rc = decide(s, P, i, drop, e->thread != ev->thread)))
				return rc;
		}
	} else if ((rc = keep_range(s, P, a, b, VMT_NONE))) {
		return rc;
	}
	if (kind == LX_MADV_FREE &&
	    rw_model_range(s, ev->proc, a, b, UINT32_MAX, DR_BAD | VAN_VMA_LOCKONFAULT))
		return hold(s, P, q, ev, a, b, kind);
	return rw_emit(s, ev);
}

static int dr_syscall(struct rw_stage *s, struct dr *x, const struct vmt_event *ev)
{
	const struct vmt_syscall *sc = &ev->u.sc;
	struct dr_proc *P = proc_of(x, ev->proc, 1);
	struct dr_tq *q = x->fbd ? tq_of(x, ev->thread) : NULL;
	if (!P || (x->fbd && !q))
		return -ENOMEM;
	uint32_t kind = discard_kind(sc);
	uint64_t a = sc->args[0], b = rw_end(s, a, sc->args[1]);
	struct vmt_range rg[2];
	int rc, n = vmt_sc_ranges(sc, s->page_mask + 1, rg);
	if (n < 0 && (rc = keep_range(s, P, 0, UINT64_MAX, VMT_NONE)))
		return rc;
	if (!kind && sc->op != VMT_OP_MUNMAP) {
		for (int k = 0; k < n; k++)
			if ((rc = keep_range(s, P, rg[k].start, rg[k].end, VMT_NONE)))
				return rc;
		rc = rw_emit(s, ev);
	} else if (x->fbd) {
		rc = fbd_syscall(s, P, q, ev, a, b, sc->op == VMT_OP_MUNMAP ? 0 : kind);
	} else {
		rc = dun_syscall(s, P, ev, a, b, kind);
	}
	/* The thread's touches before this call are used. */
	if (!rc && q)
		rc = tq_release(s, q);
	tl_clear(&x->tl, ev->thread);
	return rc;
}

/* Pages present in [a, b): a MADV_DONTNEED waiting for its munmap had its
 * range used. */
static int dr_present(struct rw_stage *s, struct dr_proc *P, uint64_t a, uint64_t b)
{
	int rc;
	for (size_t i = 0; P && i < P->n;) {
		if (P->e[i].kind == LX_MADV_DONTNEED && P->e[i].start < b && a < P->e[i].end) {
			if ((rc = decide(s, P, i, 0, 0)))
				return rc;
		} else {
			i++;
		}
	}
	return 0;
}

/* A touch showing pages present in a range an mprotect(PROT_NONE) waiting
 * for its munmap closed: pages the program had used before (it cannot
 * touch them now).  A replay of the recording skips them (the range is
 * PROT_NONE); so that a replay of the rewritten trace does too, the touch
 * waits with the mprotect and goes with it.  One that reaches past the
 * range, or one too many, keeps the mprotect as recorded.  1 if ev was
 * held. */
static int dr_closed(struct rw_stage *s, struct dr_proc *P, const struct vmt_event *ev, int *held)
{
	const struct vmt_touch *t = &ev->u.touch;
	uint64_t a = t->start, b = rw_run_end(s, t->start, t->npages);
	int rc;
	*held = 0;
	for (size_t i = 0; P && i < P->n;) {
		struct dr_ent *e = &P->e[i];
		if (e->kind != VMT_OP_MPROTECT || !(e->start < b && a < e->end)) {
			i++;
			continue;
		}
		if (!*held && e->start <= a && b <= e->end && e->ntouch < DR_MAX_TOUCHES) {
			if ((rc = rw_hold(s, ev, &e->touch[e->ntouch])))
				return rc;
			e->ntouch++;
			*held = 1;
			i++;
		} else if ((rc = decide(s, P, i, 0, 0))) {
			return rc;
		}
	}
	return 0;
}

static int dr_touch(struct rw_stage *s, struct dr *x, struct dr_proc *P, const struct vmt_event *ev)
{
	const struct vmt_touch *t = &ev->u.touch;
	uint64_t at = t->start;
	int rc;
	if (!x->fbd) {
		int any = 0, held;
		for (uint32_t k = 0; k < t->nruns; k++) {
			uint64_t end = rw_run_end(s, at, t->runs[k].pages);
			if (t->runs[k].state != VMT_PAGE_ABSENT) {
				any = 1;
				if ((rc = dr_present(s, P, at, end)))
					return rc;
			}
			at = end;
		}
		if (any && (rc = dr_closed(s, P, ev, &held)))
			return rc;
		return any && held ? 0 : rw_emit(s, ev);
	}
	if ((rc = tl_add(&x->tl, ev)))
		return rc;
	struct dr_tq *q = t->reason == VMT_TOUCH_BEFORE_OP ? tq_of(x, ev->thread) : NULL;
	if (!q || q->over || q->n == DR_MAX_TOUCHES) {
		if (q)
			q->over = 1;
		return rw_emit(s, ev);
	}
	q->start[q->n] = t->start;
	q->end[q->n] = rw_run_end(s, t->start, t->npages);
	if ((rc = rw_hold(s, ev, &q->seq[q->n])))
		return rc;
	q->n++;
	return 0;
}

static int dr_forget(struct rw_stage *s, struct dr_proc *P)
{
	return keep_range(s, P, 0, UINT64_MAX, VMT_NONE);
}

static int dr_event(struct rw_stage *s, const struct vmt_event *ev)
{
	struct dr *x = s->st;
	struct dr_proc *P = proc_of(x, ev->proc, 0);
	int rc = 0;
	switch (ev->kind) {
	case VMT_EV_SYSCALL:
		return dr_syscall(s, x, ev);
	case VMT_EV_TOUCH:
		return dr_touch(s, x, P, ev);
	case VMT_EV_FAULT:
		if (!x->fbd && vmt_fault_touches(&ev->u.fault)) {
			uint64_t pg = ev->u.fault.addr & ~s->page_mask;
			rc = dr_present(s, P, pg, pg + s->page_mask + 1);
		}
		break;
	default:
		break;
	}
	/* A held discard stays as recorded across a fork as across a vfork:
	 * dropped later, the child would inherit (or, sharing the space,
	 * see) pages the recording had given back. */
	struct rw_stale st = rw_stale_of(ev);
	if (st.kind != RW_STALE_NONE) {
		if (st.proc == VMT_NONE)
			for (uint32_t p = 0; !rc && p < x->np; p++)
				rc = dr_forget(s, &x->p[p]);
		else
			rc = dr_forget(s, proc_of(x, st.proc, 0));
	}
	return rc ? rc : rw_emit(s, ev);
}

static int dr_overflow(struct rw_stage *s, uint64_t seq)
{
	struct dr *x = s->st;
	for (uint32_t p = 0; p < x->np; p++)
		for (size_t i = 0; i < x->p[p].n; i++) {
			const struct dr_ent *e = &x->p[p].e[i];
			int mine = e->seq == seq;
			for (uint32_t k = 0; k < e->ntouch; k++)
				mine |= e->touch[k] == seq;
			if (mine)
				return decide(s, &x->p[p], i, 0, 0);
		}
	for (size_t t = 0; t < x->ntq; t++)
		for (uint32_t k = 0; k < x->tq[t].n; k++)
			if (x->tq[t].seq[k] == seq)
				return tq_release(s, &x->tq[t]);
	return VMT_E_STATE;
}

static int dr_finish(struct rw_stage *s)
{
	struct dr *x = s->st;
	int rc = 0;
	for (uint32_t p = 0; !rc && p < x->np; p++)
		rc = dr_forget(s, &x->p[p]);
	for (size_t t = 0; !rc && t < x->ntq; t++)
		rc = tq_release(s, &x->tq[t]);
	if (x->dropped_touches)
		rw_detail(s, x->fbd ? "touches left out with a MADV_FREE freed by another thread"
				    : "touches of PROT_NONE ranges left out with their mprotect",
			  x->dropped_touches);
	return rc;
}

const struct rw_rule rw_rule_discard_before_unmap = {
	.name = "discard-before-unmap",
	.alias = "unmap-only",
	.summary = "madvise(MADV_DONTNEED/MADV_FREE) or mprotect(PROT_NONE) of a range that the "
		   "same thread unmaps next -> dropped",
	.needs_model = 1,
	.create = dun_create,
	.destroy = dr_destroy,
	.event = dr_event,
	.overflow = dr_overflow,
	.finish = dr_finish,
};

const struct rw_rule rw_rule_free_before_dontneed = {
	.name = "free-before-dontneed",
	.alias = "dontneed-only",
	.summary = "madvise(MADV_FREE) of pages a later MADV_DONTNEED gives back while all are "
		   "still present -> dropped",
	.needs_model = 1,
	.create = fbd_create,
	.destroy = dr_destroy,
	.event = dr_event,
	.overflow = dr_overflow,
	.finish = dr_finish,
};
